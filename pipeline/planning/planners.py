"""Which plan each board variant gets: :data:`PLANNERS` maps a variant's name
(:data:`c4table.game.board.VARIANTS`) to the function that plans a full build of its boards
(:func:`plan_board`): the 2D plan of :mod:`.plan` (published counts and profiles), the 3D plan
of :mod:`.plan3d` (enumerated plies).

>>> plan_board("2x2x3k3", workers=1, memory_per_worker=2**30).board.name
'2x2x3k3'
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from c4table.errors import BoardError
from c4table.game.board import Board
from c4table.pipeline.planning.plan import Plan, make_plan
from c4table.pipeline.planning.plan3d import make_plan3d


def _plan2d(board: Board, workers: int, memory_per_worker: int, from_dir: str | Path | None,
            shuffle_max_reads: int | None) -> Plan:
    return make_plan(board, workers, memory_per_worker, from_dir, shuffle_max_reads)


def _plan3d(board: Board, workers: int, memory_per_worker: int, from_dir: str | Path | None,
            shuffle_max_reads: int | None) -> Plan:
    return make_plan3d(board, workers, memory_per_worker, from_dir)


#: Variant name -> ``planner(board, workers, memory_per_worker, from_dir, shuffle_max_reads)``.
PLANNERS: dict[str, Callable[..., Plan]] = {"2d": _plan2d, "3d": _plan3d}


def plan_board(board: str | Board, workers: int, memory_per_worker: int,
               from_dir: str | Path | None = None, shuffle_max_reads: int | None = None) -> Plan:
    """The plan of a full build of ``board``, by its variant's planner."""
    board = Board.parse(board)
    try:
        planner = PLANNERS[board.variant]
    except KeyError:
        raise BoardError(f"board {board}: no plan for {board.variant} boards") from None
    return planner(board, workers, memory_per_worker, from_dir, shuffle_max_reads)
