"""Quiet positions: the selection of John Tromp's 8-ply Connect-4 data set, on any board and ply.

Design notes: ``docs/modules.md`` (``c4table.analysis.quiet``).

>>> import numpy as np
>>> from c4table.game.board import Board
>>> b = Board(4, 4, 3)
>>> codes = np.array([[b.code_of[(1, 2, 0, 0)], b.code_of[(1, 0, 0, 0)], 0, 0],   # A can play a3
...                   [b.code_of[(1, 0, 0, 0)], 0, 0, b.code_of[(2, 0, 0, 0)]]])
>>> quiet_mask(b, codes).tolist()
[False, True]
"""
from __future__ import annotations

import numpy as np

from c4table.game.board import Board
from c4table.analysis.decode import bitboards, has_line, plies_of_codes


def immediate_wins(board: Board, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether A, and whether B, could complete ``k`` in a row by dropping one chip now
    (whoever is to move), for each row of column codes ``codes`` (``(n, w)``)."""
    a, b = bitboards(board, codes)
    a_wins = np.zeros(codes.shape[0], bool)
    b_wins = np.zeros(codes.shape[0], bool)
    heights = board.col_height
    for c in range(board.width):
        hc = heights[codes[:, c]]
        open_ = hc < board.height
        cell = np.where(open_, np.uint64(1) << (np.uint64(c * board.stride) + hc.astype(np.uint64)),
                        np.uint64(0))
        a_wins |= open_ & has_line(board, a | cell)
        b_wins |= open_ & has_line(board, b | cell)
    return a_wins, b_wins


def quiet_mask(board: Board, codes: np.ndarray, ply: np.ndarray | None = None) -> np.ndarray:
    """True for the quiet positions among ``codes`` (see docs/modules.md)."""
    a, b = bitboards(board, codes)
    if ply is None:
        ply = plies_of_codes(board, codes)
    over = has_line(board, a) | has_line(board, b) | (ply == board.cells)
    a_wins, b_wins = immediate_wins(board, codes)
    return ~(over | a_wins | b_wins)
