"""The 3D gravity board variant (``XxYxH``: an ``X`` by ``Y`` grid of columns of height ``H``;
our extension of Cadot's format, docs/FORMAT.md section 8): its size and name, and, from
:mod:`c4table.game.grid3d` and :mod:`c4table.game.lines3d`, its 13 directions of lines, its key
(the least reading over the grid's symmetries) and its readers' kernels.

Design notes: ``docs/modules.md`` (``c4table.game.grid3d``).

>>> b = Board3D.from_dims((2, 2, 2), k=2)
>>> b.name, b.spec, b.cell_name(3, 1)
('2x2x2k2', (4, 2, 2, (2, 2)), 'b2z2')
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from c4table.errors import BoardError
from c4table.game import grid3d
from c4table.game.board import LETTERS, Board, register_variant


@register_variant
class Board3D(Board):
    """The 3D board ``Board(X*Y, height, k, (X, Y))`` (``width`` is the number of columns)."""

    variant = "3d"
    ndims = 3
    is_3d = True
    spec_len = 4
    features = frozenset()
    json_keys = ("grid",)

    @classmethod
    def from_dims(cls, dims: Sequence[int], k: int = 4) -> "Board3D":
        x, y, height = dims
        if not all(isinstance(v, int) for v in (x, y)):
            raise BoardError("a 3D board's grid and height must be integers")
        return cls(x * y, height, k, (x, y))

    @classmethod
    def example(cls) -> "Board3D":
        return cls.from_dims((2, 2, 3), k=3)

    @classmethod
    def _from_json(cls, fields: Mapping[str, Any]) -> "Board3D":
        grid = fields["grid"]
        return cls(fields["width"], fields["height"], fields.get("k", 4),
                   tuple(grid) if isinstance(grid, list) else grid)

    def _check(self) -> None:
        if self.grid is None:
            raise BoardError("a 3D board needs its grid (X, Y)")
        g = tuple(self.grid)
        if len(g) != 2 or not all(isinstance(v, int) for v in (*g, self.height)):
            raise BoardError("a 3D board's grid and height must be integers")
        object.__setattr__(self, "grid", g)
        x, y = g
        if min(x, y, self.height) < 1:
            raise BoardError(f"board {self.name}: every dimension must be at least 1")
        if self.width != x * y:
            raise BoardError(f"board {self.name}: width must be the number of columns {x * y}")
        self._check_k(x, y, self.height)

    def check_buildable(self) -> None:
        """A 3D board is accepted at any size (to be planned, or probed in plain Python), but
        its build needs ``X*Y*(H+1) <= 64``.

        >>> Board.parse("4x4x4").check_buildable()
        Traceback (most recent call last):
        ...
        c4table.errors.BoardError: board 4x4x4: its bitboard needs X*Y*(H+1) = 80 bits, more than the 64 the build handles (c4table plan 4x4x4 estimates it)
        """
        if self.width * (self.height + 1) > 64:
            raise BoardError(
                f"board {self.name}: its bitboard needs X*Y*(H+1) = "
                f"{self.width * (self.height + 1)} bits, more than the 64 the build handles "
                f"(c4table plan {self.dims}{'' if self.k == 4 else f' --connect {self.k}'} "
                "estimates it)")

    def __repr__(self) -> str:
        return f"Board(width={self.width}, height={self.height}, k={self.k}, grid={self.grid})"

    @property
    def dims(self) -> str:
        return f"{self.grid[0]}x{self.grid[1]}x{self.height}"

    @property
    def spec(self) -> tuple:
        return (self.width, self.height, self.k, self.grid)

    def json_fields(self) -> dict:
        return {"grid": list(self.grid)}

    def readings(self, codes: Sequence[int]) -> list[int]:
        return grid3d.readings(self, codes)

    def run_through(self, cols: Sequence[Sequence[int]], col: int, row: int) -> list[tuple[int, int]]:
        return grid3d.run_through(self, cols, col, row)

    def cell_name(self, col: int, row: int) -> str:
        """``{x letter}{y number}z{layer}`` (1-based column ``y*X + x + 1``)."""
        X = self.grid[0]
        return f"{LETTERS[col % X]}{col // X + 1}z{row + 1}"

    def decode_keys(self, keys: np.ndarray, images: bool = False) -> tuple:
        from c4table.game import lines3d   # numba: loaded by the readers that decode
        n = keys.shape[0]
        codes = np.empty((n, self.width), np.int64)
        plies = np.empty(n, np.int64)
        term = np.empty(n, np.bool_)
        imgs = np.empty(n, np.int64)
        t = lines3d.board_tables(self)
        lines3d.classify(keys, *t[:5], *t[6:], self.col_height, codes, plies, term, imgs)
        return codes, plies, term, (imgs if images else imgs == 1)

    def has_lines(self, bb: np.ndarray) -> np.ndarray:
        from c4table.game import lines3d
        out = np.empty(bb.shape[0], np.bool_)
        lines3d.has_lines(np.ascontiguousarray(bb, dtype=np.uint64), grid3d.line_masks(self), out)
        return out
