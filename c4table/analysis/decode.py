"""Table entries decoded in bulk: the column codes, ply, game-over flag and symmetry of each key
of a chunk (:func:`decode_entries`), cells and bitboards of column codes, and the line test;
what export, stats and the quiet-position filter ask of a chunk of entries, with the build's
rules (:mod:`c4table.game.lines`)."""
from __future__ import annotations

import numpy as np

from c4table.game import lines
from c4table.game.board import Board


def decode_entries(board: Board, keys: np.ndarray, images: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(codes (n, w), plies, terminal, symmetric)`` of each key, in one pass of the board
    variant's kernel (:meth:`Board.decode_keys`; :func:`c4table.game.lines.classify` on a 2D
    board): column codes of the canonical orientation, chips on the board, game over (a line
    or a full board), own mirror image.
    With ``images``, the last array is instead how many distinct positions each entry stands
    for (1 or 2; on a 3D board up to 8: :mod:`c4table.game.grid3d`).

    >>> codes, plies, term, sym = decode_entries(Board(4, 4), np.array([0, 31], np.uint64))
    >>> codes.tolist(), plies.tolist(), term.tolist(), sym.tolist()
    ([[0, 0, 0, 0], [0, 1, 0, 0]], [0, 1], [False, False], [True, False])
    >>> decode_entries(Board.grid3d(2, 2, 2), np.array([0, 1], np.uint64), images=True)[3].tolist()
    [1, 4]
    """
    return board.decode_keys(np.ascontiguousarray(keys, dtype=np.uint64), images)


def decode_keys(board: Board, keys: np.ndarray) -> np.ndarray:
    """Column codes ``(n, w)`` of the canonical orientation of each key (inverse of ``v1``).

    >>> decode_keys(Board(4, 4), np.array([0, 31], np.uint64)).tolist()
    [[0, 0, 0, 0], [0, 1, 0, 0]]
    """
    return decode_entries(board, keys)[0]


def plies_of_codes(board: Board, codes: np.ndarray) -> np.ndarray:
    """Chips on the board (the ply) of each row of column codes.

    >>> plies_of_codes(Board(4, 4), np.array([[0, 1, 2, 0]])).tolist()
    [2]
    """
    return board.col_height[codes].sum(axis=1)


def _column_cells(board: Board) -> np.ndarray:
    arr = board._cache.get("column_cells")
    if arr is None:
        arr = board._cache["column_cells"] = np.array(board.columns, np.uint8).reshape(board.base, board.height)
    return arr


def cells_of_codes(board: Board, codes: np.ndarray) -> np.ndarray:
    """Cells ``(n, w, h)`` (bottom first; 0 empty, 1 A, 2 B) of each row of column codes.

    >>> cells_of_codes(Board(4, 4), np.array([[1, 2, 0, 0]]))[0, :2].tolist()
    [[1, 0, 0, 0], [2, 0, 0, 0]]
    """
    return _column_cells(board)[codes]


def bitboards(board: Board, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bitboards (uint64, Pons' layout of :mod:`c4table.game.board`) of A's and B's chips."""
    a = np.empty(codes.shape[0], np.uint64)
    b = np.empty(codes.shape[0], np.uint64)
    lines.bitboards_of(np.ascontiguousarray(codes, dtype=np.int64), board.col_bits_a, board.col_bits_b,
                 board.stride, a, b)
    return a, b


def has_line(board: Board, bb: np.ndarray) -> np.ndarray:
    """Whether each bitboard holds ``k`` chips in a row (the build's line test, as the board's
    variant does it: :meth:`Board.has_lines`)."""
    return board.has_lines(bb)
