"""The 2D board variant (``WxH``, Cadot's boards; any connect length ``k``): its size and
name, its lines through a cell (four directions), its key (the least of the left-right
readings), its drawing, cell names and readers' kernels (:mod:`c4table.game.lines`).

Design notes: ``docs/modules.md`` (``c4table.game.board``).

>>> b = Board2D.from_dims((5, 4), k=3)
>>> b.name, b.readings([1, 0, 0, 0, 0]), b.cell_name(1, 0)
('5x4k3', (1, 531441), 'b1')
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from c4table.errors import BoardError
from c4table.game.board import Board, register_variant
from c4table.game import drawing

#: The directions of a line in (column, row) steps: horizontal, vertical, the two diagonals.
DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1))
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@register_variant
class Board2D(Board):
    """A ``width`` x ``height`` board where ``k`` in a row wins (``Board(width, height, k)``)."""

    variant = "2d"
    ndims = 2
    features = frozenset({"drawing", "mirror", "per_move", "planes", "bdd", "root"})

    @classmethod
    def takes(cls, grid: Any) -> bool:
        return grid is None

    @classmethod
    def from_dims(cls, dims: Sequence[int], k: int = 4) -> "Board2D":
        w, h = dims
        return cls(w, h, k)

    @classmethod
    def example(cls) -> "Board2D":
        return cls(5, 4)

    @classmethod
    def _from_json(cls, fields: Mapping[str, Any]) -> "Board2D":
        return cls(fields["width"], fields["height"], fields.get("k", 4))

    def _check(self) -> None:
        if not (isinstance(self.width, int) and isinstance(self.height, int)):
            raise BoardError("board width and height must be integers")
        if self.width < 1 or self.height < 1:
            raise BoardError(f"board {self.width}x{self.height}: width and height must be at least 1")
        if self.width * (self.height + 1) > 64:
            raise BoardError(
                f"board {self.width}x{self.height}: bitboard needs w*(h+1) = "
                f"{self.width * (self.height + 1)} bits, more than 64")
        self._check_k(self.width, self.height)

    @property
    def dims(self) -> str:
        return f"{self.width}x{self.height}"

    @property
    def spec(self) -> tuple:
        return (self.width, self.height, self.k)

    def json_fields(self) -> dict:
        return {}

    def readings(self, codes: Sequence[int]) -> tuple[int, int]:
        """``(v1, v2)``: the board read left-to-right and right-to-left as base-B numbers."""
        base = self.base
        v1 = v2 = 0
        for code in reversed(codes):  # Horner: column w-1 is the most significant digit of v1
            v1 = v1 * base + code
        for code in codes:
            v2 = v2 * base + code
        return v1, v2

    def run_through(self, cols: Sequence[Sequence[int]], col: int, row: int) -> list[tuple[int, int]]:
        w, h, k = self.width, self.height, self.k
        player = cols[col][row]

        def mine(c: int, r: int) -> bool:
            return 0 <= c < w and 0 <= r < min(h, len(cols[c])) and cols[c][r] == player

        for dc, dr in DIRECTIONS:
            run = [(col, row)]
            for sign in (1, -1):
                c, r = col + sign * dc, row + sign * dr
                while mine(c, r):
                    run.append((c, r))
                    c += sign * dc
                    r += sign * dr
            if len(run) >= k:
                return sorted(run)
        return []

    def render(self, pos, marks=(), numbers: bool = True, last: bool = False, line=(),
               margin: bool = False) -> str:
        return drawing.render_rows(pos, marks, numbers, last, line, margin)

    def cell_name(self, col: int, row: int) -> str:
        """``{column letter}{row number}`` (``a1`` the bottom left cell)."""
        return f"{LETTERS[col]}{row + 1}"

    def decode_keys(self, keys: np.ndarray, images: bool = False) -> tuple:
        from c4table.game import lines   # numba: loaded by the readers that decode
        n = keys.shape[0]
        codes = np.empty((n, self.width), np.int64)
        plies = np.empty(n, np.int64)
        term = np.empty(n, np.bool_)
        sym = np.empty(n, np.bool_)
        lines.classify(keys, self.width, self.stride, self.k, self.base, self.cells,
                       self.col_bits_a, self.col_bits_b, self.powers, self.col_height,
                       codes, plies, term, sym)
        return codes, plies, term, (np.where(sym, 1, 2) if images else sym)

    def has_lines(self, bb: np.ndarray) -> np.ndarray:
        from c4table.game import lines
        out = np.empty(bb.shape[0], np.bool_)
        lines.has_lines(np.ascontiguousarray(bb, dtype=np.uint64), self.stride, self.k, out)
        return out
