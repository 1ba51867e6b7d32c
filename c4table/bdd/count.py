"""The forward pass: all positions of each ply as one BDD per ply (Böck, section 2.2).

``states_0`` is the empty board; ``states_{i+1} = image(states_i ∧ ¬terminal)``: terminal
positions (the last mover has k in a row) are counted in their ply and never expanded. The
terminal lines are subtracted one at a time (:meth:`Encoding.split_terminal`).

:func:`forward` is the generator both passes share; :func:`count_positions` is the public
counting entry point.

Example::

    >>> r = count_positions("4x4")
    >>> r.total, r.plies[7].positions, r.plies[7].terminal
    (161029, 2760, 48)
"""
from __future__ import annotations

import time
from typing import Callable, Iterator

from c4table.bdd.encoding import Encoding, make_encoding
from c4table.bdd.engine import DEFAULT_NODES, Engine
from c4table.bdd.results import BddCounts, PlyResult
from c4table.board import Board

Progress = Callable[[int, int, int, float], None]
"""Progress callback: ``(ply, positions, nodes, elapsed seconds)``."""


def forward(enc: Encoding, partitioned: bool = False) -> Iterator[tuple[int, object, object, object]]:
    """Yield ``(ply, states, nonterminal, terminal)`` for ply ``0 .. w*h``; ``states`` of ply
    ``i`` are encoded on side ``i % 2``. Garbage is collected after each ply."""
    last = enc.board.cells
    states = enc.initial()
    for ply in range(last + 1):
        nonterm, terminal = enc.split_terminal(states, ply)
        yield ply, states, nonterm, terminal
        if ply < last:
            states = enc.image(nonterm, ply, partitioned)
        del nonterm, terminal
        enc.engine.collect()


def count_positions(board_spec: str | Board, encoding: str = "compressed", *,
                    nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
                    partitioned: bool = False, cache: int | None = None,
                    progress: Progress | None = None) -> BddCounts:
    """Count the positions of every ply of ``board_spec`` (mirror images counted separately).

    ``encoding``: ``"compressed"`` or ``"plain"``; ``nodes``: oxidd node capacity (raises
    :class:`~c4table.bdd.engine.BddCapacityError` when exhausted); ``threads``: oxidd worker
    threads; ``flavour``: ``"bdd"`` or ``"bcdd"``; ``partitioned``: one image per column
    instead of one relation.

    >>> [p.positions for p in count_positions("2x2").plies]
    [1, 2, 4, 5, 6]
    """
    board = Board.parse(board_spec)
    t0, c0 = time.perf_counter(), time.process_time()
    engine = Engine(nodes, threads, flavour, cache)
    enc = make_encoding(board, engine, encoding)
    plies = []
    for ply, states, nonterm, terminal in forward(enc, partitioned):
        res = PlyResult(ply, enc.count(states), enc.count(terminal), states.node_count())
        plies.append(res)
        if progress:
            progress(ply, res.positions, res.nodes, time.perf_counter() - t0)
    return BddCounts(board.name, encoding, plies, engine.peak_nodes,
                     time.perf_counter() - t0, time.process_time() - c0)
