"""Geometry of 3D gravity boards (``XxYxH``): where each column stands, every winning line, and
the symmetries of the grid of columns. Our extension of Cadot's format (docs/FORMAT.md,
section 8).

Design notes: ``docs/modules.md`` (``c4table.game.grid3d``).

>>> from c4table.game.board import Board
>>> b = Board.grid3d(3, 3, 3, k=3)
>>> len(symmetries(b)), len(lines(b))
(8, 49)
>>> len(symmetries(Board.grid3d(3, 1, 4)))
2
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from c4table.game.board import Board

#: The 13 directions of a straight line in 3D (dx, dy, dz), one of each opposite pair.
DIRECTIONS = tuple(d for d in ((dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1)
                               for dz in (-1, 0, 1))
                   if d > (0, 0, 0))


def xy_of(board: Board, col: int) -> tuple[int, int]:
    """Grid position ``(x, y)`` of 0-based column ``col``.

    >>> xy_of(Board.grid3d(3, 2, 2), 4)
    (1, 1)
    """
    return col % board.grid[0], col // board.grid[0]


def col_of(board: Board, x: int, y: int) -> int:
    """0-based column index at grid position ``(x, y)``."""
    return y * board.grid[0] + x


@lru_cache(maxsize=64)
def lines(board: Board) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every line of ``k`` cells, each as ``(column, row)`` cells (row from the bottom)."""
    X, Y = board.grid
    H, k = board.height, board.k
    out = []
    for dx, dy, dz in DIRECTIONS:
        for x in range(X):
            for y in range(Y):
                for z in range(H):
                    cells = [(x + i * dx, y + i * dy, z + i * dz) for i in range(k)]
                    if all(0 <= a < X and 0 <= b < Y and 0 <= c < H for a, b, c in cells):
                        out.append(tuple((col_of(board, a, b), c) for a, b, c in cells))
    return tuple(out)


@lru_cache(maxsize=64)
def line_masks(board: Board) -> np.ndarray:
    """The lines of :func:`lines` as uint64 bit masks over the bitboard."""
    s = board.stride
    return np.array([sum(1 << (c * s + r) for c, r in line) for line in lines(board)],
                    dtype=np.uint64)


@lru_cache(maxsize=64)
def symmetries(board: Board) -> tuple[tuple[int, ...], ...]:
    """The distinct symmetry permutations of the columns, identity first.

    >>> symmetries(Board.grid3d(2, 1, 3))
    ((0, 1), (1, 0))
    """
    X, Y = board.grid
    maps = [lambda x, y: (x, y), lambda x, y: (X - 1 - x, y), lambda x, y: (x, Y - 1 - y),
            lambda x, y: (X - 1 - x, Y - 1 - y)]
    if X == Y:   # the transpositions and the quarter turns of the square
        maps += [lambda x, y: (y, x), lambda x, y: (Y - 1 - y, x), lambda x, y: (y, X - 1 - x),
                 lambda x, y: (Y - 1 - y, X - 1 - x)]
    out: list[tuple[int, ...]] = []
    for f in maps:
        perm = tuple(col_of(board, *f(*xy_of(board, i))) for i in range(board.width))
        if perm not in out:
            out.append(perm)
    return tuple(out)


@lru_cache(maxsize=64)
def symmetry_powers(board: Board) -> np.ndarray:
    """``pows[s, i] = B**perms[s][i]`` (uint64, shape ``(S, n)``): column ``i``'s weight in the
    reading of symmetry ``s``."""
    return np.array([[board.base**p for p in perm] for perm in symmetries(board)],
                    dtype=np.uint64)


def readings(board: Board, codes) -> list[int]:
    """Every symmetry's reading of column ``codes`` (identity first); the key is the least.

    >>> b = Board.grid3d(2, 2, 2, k=2)
    >>> readings(b, [1, 0, 0, 0])      # a chip in a corner: each corner once per diagonal
    [1, 7, 49, 343, 1, 7, 49, 343]
    """
    return [sum(c * board.base**p for c, p in zip(codes, perm)) for perm in symmetries(board)]


def image(board: Board, cols: list, perm: tuple[int, ...]) -> list:
    """The image of a position's columns (any per-column values) under permutation ``perm``."""
    out = [None] * len(cols)
    for i, c in enumerate(cols):
        out[perm[i]] = c
    return out


def run_through(board: Board, cols, col: int, row: int) -> list[tuple[int, int]]:
    """Cells (column, row) of the first run of ``k`` or more chips of one player through the
    chip at ``col``, ``row`` in any of the 13 directions, sorted; ``[]`` if none (the 3D case of
    :func:`c4table.game.rules.run_through`).

    >>> run_through(Board.grid3d(2, 2, 2, k=2), [[1], [], [], [1]], 3, 0)
    [(0, 0), (3, 0)]
    """
    X, Y = board.grid
    H, k = board.height, board.k
    player = cols[col][row]
    x0, y0 = xy_of(board, col)

    def mine(x: int, y: int, z: int) -> bool:
        if not (0 <= x < X and 0 <= y < Y and 0 <= z < H):
            return False
        c = cols[col_of(board, x, y)]
        return z < len(c) and c[z] == player

    for dx, dy, dz in DIRECTIONS:
        run = [(col, row)]
        for sign in (1, -1):
            x, y, z = x0 + sign * dx, y0 + sign * dy, row + sign * dz
            while mine(x, y, z):
                run.append((col_of(board, x, y), z))
                x, y, z = x + sign * dx, y + sign * dy, z + sign * dz
        if len(run) >= k:
            return sorted(run)
    return []
