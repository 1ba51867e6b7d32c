"""The backward pass: win/draw/loss of every position, ply by ply (Böck, section 2.2).

Design notes: ``docs/modules.md`` (``c4table.bdd.solve``).

    >>> s = solve("4x4")
    >>> p = s.plies[0]
    >>> (p.won, p.drawn, p.lost), s.total
    ((0, 1, 0), 161029)
"""
from __future__ import annotations

import time

from c4table.bdd.count import Progress, forward, make_run
from c4table.bdd.engine import DEFAULT_NODES
from c4table.bdd.results import BddSolution, PlyResult
from c4table.game.board import Board


def solve(board_spec: str | Board, encoding: str = "compressed", *,
          nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
          cache: int | None = None, partitioned: bool = False, terminal: str = "union",
          progress: Progress | None = None,
          backward_progress: Progress | None = None) -> BddSolution:
    """Forward pass, then backward classification of every ply of ``board_spec``.

    Arguments as :func:`~c4table.bdd.count.count_positions`; ``backward_progress`` is called
    per ply of the backward pass with ``(ply, won + drawn + lost, nodes of the three sets,
    elapsed)``. Every ply's ``won + drawn + lost == positions`` (checked).

    >>> [(p.won, p.drawn, p.lost) for p in solve("1x4").plies]
    [(0, 1, 0), (0, 1, 0), (0, 1, 0), (0, 1, 0), (0, 1, 0)]
    """
    t0, c0 = time.perf_counter(), time.process_time()
    enc = make_run(board_spec, encoding, nodes=nodes, threads=threads, flavour=flavour,
                   cache=cache)
    with enc.engine.guard():
        return _solve(enc, t0, c0, partitioned, terminal, progress, backward_progress)


def _solve(enc, t0, c0, partitioned, terminal, progress, backward_progress) -> BddSolution:
    eng, mgr = enc.engine, enc.mgr
    retry = eng.retry
    nonterms, terms, plies = [], [], []
    for ply, states, nonterm, term in forward(enc, partitioned, terminal):
        res = PlyResult(ply, enc.count(states), enc.count(term), states.node_count())
        plies.append(res)
        nonterms.append(nonterm)
        terms.append(term)
        if progress:
            progress(ply, res.positions, res.nodes, time.perf_counter() - t0)

    last = enc.board.cells
    win, draw, lost = mgr.false(), nonterms[last], terms[last]
    _record(enc, plies[last], win, draw, lost)
    if backward_progress:
        backward_progress(last, plies[last].positions, _nodes(win, draw, lost),
                          time.perf_counter() - t0)
    for ply in range(last - 1, -1, -1):
        nt, te = nonterms[ply], terms[ply]
        pre_lost = enc.preimage(lost, ply)
        win = retry(lambda: pre_lost & nt)
        del pre_lost
        rest = retry(lambda: win.imp_strict(nt))             # nt ∧ ¬win
        pre_draw = enc.preimage(draw, ply)
        draw = retry(lambda: pre_draw & rest)
        del pre_draw
        lost = retry(lambda: draw.imp_strict(rest) | te)     # (rest ∧ ¬draw) ∨ terminal
        del rest
        nonterms[ply] = terms[ply] = nonterms[ply + 1] = terms[ply + 1] = None
        _record(enc, plies[ply], win, draw, lost)
        eng.collect()
        if backward_progress:
            backward_progress(ply, plies[ply].positions, _nodes(win, draw, lost),
                              time.perf_counter() - t0)
    return BddSolution(enc.board.name, enc.name, plies, eng.peak_nodes,
                       time.perf_counter() - t0, time.process_time() - c0,
                       stats={"peak_live_nodes": eng.peak_live, "gc_runs": eng.gc_runs,
                              "flavour": eng.flavour, "threads": eng.threads})


def _nodes(*fs) -> int:
    return sum(f.node_count() for f in fs)


def _record(enc, res: PlyResult, win, draw, lost) -> None:
    """Store the counts of one ply in ``res``, turned to the first player's view."""
    w, d, l = enc.count(win), enc.count(draw), enc.count(lost)
    if w + d + l != res.positions:
        raise AssertionError(f"ply {res.ply}: win {w} + draw {d} + loss {l} != {res.positions}")
    if res.ply % 2 == 0:   # first player to move
        res.won, res.drawn, res.lost = w, d, l
    else:                  # second player to move: its loss is the first player's win
        res.won, res.drawn, res.lost = l, d, w
