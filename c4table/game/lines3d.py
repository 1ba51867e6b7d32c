"""The readers' kernels of 3D gravity boards (``XxYxH``, :mod:`c4table.game.grid3d`): the
kernels of :mod:`c4table.game.lines` with lines given as bit masks (13 directions) and keys
canonical under the grid's symmetries instead of the mirror; the build's 3D kernels
(:mod:`c4table.pipeline.kernels.cpu3d`) share them.

Design notes: ``docs/modules.md`` (``c4table.game.lines3d``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from c4table.game.board import Board
from c4table.game.grid3d import line_masks, symmetry_powers


@lru_cache(maxsize=16)
def board_tables(board: Board) -> tuple:
    """The arrays and scalars every 3D kernel takes, in order."""
    return (board.width, board.stride, board.k, board.base, board.cells,
            board.child_code, board.col_bits_a, board.col_bits_b, symmetry_powers(board),
            line_masks(board))


@njit(cache=True, inline="always")
def _has_line(bb, masks):
    for j in range(masks.shape[0]):
        if bb & masks[j] == masks[j]:
            return True
    return False


@njit(cache=True, inline="always")
def _decode(key, n, base, codes, bits_a, bits_b, pows, stride, reads):
    """Fill ``codes`` from ``key`` and ``reads`` with every symmetry's reading; return the
    (A, B) bitboards."""
    bb_a = np.uint64(0)
    bb_b = np.uint64(0)
    ub = np.uint64(base)
    for s in range(pows.shape[0]):
        reads[s] = np.uint64(0)
    for c in range(n):
        d = key % ub
        key = key // ub
        codes[c] = d
        bb_a |= bits_a[d] << np.uint64(c * stride)
        bb_b |= bits_b[d] << np.uint64(c * stride)
        for s in range(pows.shape[0]):
            reads[s] += d * pows[s, c]
    return bb_a, bb_b


@njit(cache=True, inline="always")
def _images(reads):
    """Number of distinct readings: the number of distinct images of the position."""
    m = 0
    for s in range(reads.shape[0]):
        new = True
        for t in range(s):
            if reads[t] == reads[s]:
                new = False
                break
        if new:
            m += 1
    return m


@njit(cache=True, inline="always")
def _is_terminal(ply, cells, bb_a, bb_b, masks):
    """0 = game goes on, 1 = last mover made k in a row, 2 = full board without a line."""
    last = bb_a if ply % 2 == 1 else bb_b
    if ply > 0 and _has_line(last, masks):
        return 1
    if ply == cells:
        return 2
    return 0


@njit(cache=True)
def classify(keys, n, stride, k, base, cells, bits_a, bits_b, pows, masks, col_height,
             codes, plies, terminal, images):
    """For each key: its column ``codes`` (canonical image), ``plies``, ``terminal`` and
    ``images`` (how many distinct positions the entry stands for)."""
    row = np.empty(n, np.int64)
    reads = np.empty(pows.shape[0], np.uint64)
    for i in range(keys.shape[0]):
        bb_a, bb_b = _decode(keys[i], n, base, row, bits_a, bits_b, pows, stride, reads)
        ply = 0
        for c in range(n):
            codes[i, c] = row[c]
            ply += col_height[row[c]]
        plies[i] = ply
        terminal[i] = _is_terminal(ply, cells, bb_a, bb_b, masks) != 0
        images[i] = _images(reads)


@njit(cache=True)
def has_lines(bbs, masks, out):
    """``out[i]``: bitboard ``bbs[i]`` holds one of the line ``masks``."""
    for i in range(bbs.shape[0]):
        out[i] = _has_line(bbs[i], masks)
