"""The forward pass: all positions of each ply as one BDD per ply (Böck, section 2.2).

Design notes: ``docs/modules.md`` (``c4table.bdd.count``).

    >>> r = count_positions("4x4")
    >>> r.total, r.plies[7].positions, r.plies[7].terminal
    (161029, 2512, 60)
"""
from __future__ import annotations

import time
from typing import Callable, Iterator

from c4table.bdd.encoding import Encoding, make_encoding
from c4table.bdd.engine import DEFAULT_NODES, Engine
from c4table.bdd.results import BddCounts, PlyResult
from c4table.game.board import Board

Progress = Callable[[int, int, int, float], None]
"""Progress callback: ``(ply, positions, nodes, elapsed seconds)``."""


def forward(enc: Encoding, partitioned: bool = False, terminal: str = "union",
            max_ply: int | None = None) -> Iterator[tuple[int, object, object, object]]:
    """Yield ``(ply, states, nonterminal, terminal)`` for ply ``0 .. w*h``; the sets of ply
    ``i`` are encoded on side ``i % 2``. ``partitioned``: one image per column instead of one
    relation; ``terminal``: ``"union"`` or ``"lines"`` (see :meth:`Encoding.split_terminal`).
    Garbage is collected between plies when it has piled up. ``max_ply``: stop after that ply
    (a partial build is compared only as far as it goes)."""
    last = enc.board.cells if max_ply is None else min(max_ply, enc.board.cells)
    states = enc.initial()
    for ply in range(last + 1):
        nonterm, term = enc.split_terminal(states, ply, terminal)
        yield ply, states, nonterm, term
        if ply < last:
            states = enc.image(nonterm, ply, partitioned)
        del nonterm, term
        enc.engine.collect()


def make_run(board_spec: str | Board, encoding: str = "compressed", *,
             nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
             cache: int | None = None) -> Encoding:
    """A fresh oxidd manager with the variables of ``board_spec`` declared in ``encoding``."""
    board = Board.parse(board_spec)
    engine = Engine(nodes, threads, flavour, cache)
    with engine.guard():
        return make_encoding(board, engine, encoding)


def count_positions(board_spec: str | Board, encoding: str = "compressed", *,
                    nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
                    cache: int | None = None, partitioned: bool = False,
                    terminal: str = "union", progress: Progress | None = None,
                    max_ply: int | None = None) -> BddCounts:
    """Count the positions of every ply of ``board_spec`` (mirror images counted separately).

    ``encoding``: ``"compressed"`` or ``"plain"``; ``nodes``: oxidd node capacity (raises
    :class:`~c4table.bdd.engine.BddCapacityError` when exhausted); ``threads``: oxidd worker
    threads; ``flavour``: ``"bdd"`` or ``"bcdd"`` (complement edges); ``cache``: apply-cache
    entries; ``partitioned``/``terminal``/``max_ply``: see :func:`forward`.

    >>> [p.positions for p in count_positions("2x2").plies]
    [1, 2, 4, 6, 5]
    """
    t0, c0 = time.perf_counter(), time.process_time()
    enc = make_run(board_spec, encoding, nodes=nodes, threads=threads, flavour=flavour,
                   cache=cache)
    plies = []
    with enc.engine.guard():
        for ply, states, _nonterm, term in forward(enc, partitioned, terminal, max_ply):
            res = PlyResult(ply, enc.count(states), enc.count(term), states.node_count())
            plies.append(res)
            if progress:
                progress(ply, res.positions, res.nodes, time.perf_counter() - t0)
    eng = enc.engine
    return BddCounts(enc.board.name, encoding, plies, eng.peak_nodes,
                     time.perf_counter() - t0, time.process_time() - c0,
                     stats={"peak_live_nodes": eng.peak_live, "gc_runs": eng.gc_runs,
                            "flavour": flavour, "threads": threads})
