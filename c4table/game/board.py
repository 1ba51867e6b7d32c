"""Board geometry: width, height, connect length, Cadot's column codes and the bitboard layout.

Design notes: ``docs/modules.md`` (``c4table.game.board``).

    >>> b = Board.parse("7x6")
    >>> b.base, b.key_bytes, b.entry_size
    (111, 6, 7)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from c4table.errors import BoardError

EMPTY, A, B = 0, 1, 2
_SPEC = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*(?:[xX]\s*(\d+)\s*)?(?:[kK]\s*(\d+))?\s*$")
#: Table file names, as Cadot's script writes them: ``connect{K}_{W}x{H}.dat`` (groups: K, W, H),
#: or a rooted table; a 3D board's ``connect{K}_{X}x{Y}x{H}.dat`` (groups: K, X, Y, H).
TABLE_NAME = re.compile(r"connect(\d+)_(\d+)x(\d+)(?:x(\d+))?(?:_root-\w+)?\.dat$")


def _valid_columns(h: int, k: int) -> list[tuple[int, ...]]:
    """All valid columns of height ``h`` as tuples of cell digits, bottom first (unsorted).

    Grown chip by chip from the empty column: a chip may go on top unless the column is full
    or its topmost ``k`` chips are equal (that line ended the game), so every valid column is
    reached once and nothing else is visited."""
    cols = []
    stack: list[tuple[int, ...]] = [()]
    while stack:
        chips = stack.pop()
        cols.append(chips + (EMPTY,) * (h - len(chips)))
        n = len(chips)
        if n < h and not (n >= k and len(set(chips[n - k:])) == 1):
            stack.extend((chips + (A,), chips + (B,)))
    return cols


def column_value(cells: tuple[int, ...]) -> int:
    """Base-3 value of a column given bottom-first cell digits."""
    return sum(d * 3**i for i, d in enumerate(cells))


@dataclass(frozen=True)
class Board:
    """A ``width`` x ``height`` board where ``k`` in a row wins; with ``grid = (X, Y)``, the 3D
    board of an ``X`` by ``Y`` grid of columns of height ``height`` (``width`` is then ``X*Y``,
    the number of columns: see :meth:`grid3d`).

    >>> Board(4, 4).base
    31
    >>> Board.grid3d(3, 3, 3, k=3).name
    '3x3x3k3'
    """

    width: int
    height: int
    k: int = 4
    grid: tuple[int, int] | None = None
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.grid is not None:
            self._check_grid()
            return
        if not (isinstance(self.width, int) and isinstance(self.height, int)):
            raise BoardError("board width and height must be integers")
        if self.width < 1 or self.height < 1:
            raise BoardError(f"board {self.width}x{self.height}: width and height must be at least 1")
        if self.width * (self.height + 1) > 64:
            raise BoardError(
                f"board {self.width}x{self.height}: bitboard needs w*(h+1) = "
                f"{self.width * (self.height + 1)} bits, more than 64")
        if not isinstance(self.k, int) or self.k < 2:
            raise BoardError(f"connect length k={self.k} must be an integer of at least 2")
        if self.k > max(self.width, self.height, 4):
            raise BoardError(
                f"connect length {self.k} does not fit board {self.width}x{self.height}: no line "
                f"of {self.k} cells; at most {max(self.width, self.height)}")

    def _check_grid(self) -> None:
        g = tuple(self.grid)
        if len(g) != 2 or not all(isinstance(v, int) for v in (*g, self.height)):
            raise BoardError("a 3D board's grid and height must be integers")
        object.__setattr__(self, "grid", g)
        x, y = g
        if min(x, y, self.height) < 1:
            raise BoardError(f"board {self.name}: every dimension must be at least 1")
        if self.width != x * y:
            raise BoardError(f"board {self.name}: width must be the number of columns {x * y}")
        if not isinstance(self.k, int) or self.k < 2:
            raise BoardError(f"connect length k={self.k} must be an integer of at least 2")
        if self.k > max(x, y, self.height, 4):
            raise BoardError(
                f"connect length {self.k} does not fit board {x}x{y}x{self.height}: no line of "
                f"{self.k} cells; at most {max(x, y, self.height)}")

    def check_buildable(self) -> None:
        """Raise :class:`BoardError` unless the build's 64-bit bitboards hold the board: a 3D
        board is accepted at any size (to be planned, or probed in plain Python), but its build
        needs ``X*Y*(H+1) <= 64`` (a 2D board is refused beyond that when it is made).

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

    @classmethod
    def grid3d(cls, x: int, y: int, height: int, k: int = 4) -> "Board":
        """The 3D gravity board of an ``x`` by ``y`` grid of columns of ``height`` cells.

        >>> b = Board.grid3d(2, 3, 2, k=3)
        >>> b.width, b.cells, b.table_filename
        (6, 12, 'connect3_2x3x2.dat')
        """
        if not all(isinstance(v, int) for v in (x, y)):
            raise BoardError("a 3D board's grid and height must be integers")
        return cls(x * y, height, k, (x, y))

    def __repr__(self) -> str:
        grid = "" if self.grid is None else f", grid={self.grid}"
        return f"Board(width={self.width}, height={self.height}, k={self.k}{grid})"

    @property
    def is_3d(self) -> bool:
        """True for a 3D gravity board (``XxYxH``)."""
        return self.grid is not None

    # ----------------------------------------------------------------- naming
    @classmethod
    def parse(cls, spec: str | "Board", k: int = 4) -> "Board":
        """Parse ``"WxH"`` (width x height, e.g. ``"7x6"``) into a :class:`Board` where ``k`` in
        a row wins; ``"WxHkK"`` (the form of :attr:`name`, e.g. ``"5x4k3"``) names ``k`` too.

        >>> Board.parse("5x4", k=3) == Board.parse("5x4k3") == Board(5, 4, 3)
        True
        """
        if isinstance(spec, Board):
            return spec
        m = _SPEC.match(str(spec))
        if not m:
            raise BoardError(f"bad board {spec!r}: expected WIDTHxHEIGHT such as 7x6, 5x4k3 (K in a "
                             "row) or 2x2x4 (3D)")
        if m.group(4) is not None:
            named = int(m.group(4))
            if k not in (4, named):
                raise BoardError(f"board {spec!r} names connect length {named}, not {k}")
            k = named
        if m.group(3) is not None:   # XxYxH: a 3D board
            return cls.grid3d(int(m.group(1)), int(m.group(2)), int(m.group(3)), k)
        return cls(int(m.group(1)), int(m.group(2)), k)

    @classmethod
    def of_table_name(cls, name: str) -> "Board | None":
        """The board a table file name ``connect{K}_{W}x{H}.dat`` names, or None.

        >>> Board.of_table_name("tables/connect3_5x4.dat")
        Board(width=5, height=4, k=3)
        """
        m = TABLE_NAME.search(str(name))
        if m and m.group(4) is not None:
            return cls.grid3d(int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(1)))
        return cls(int(m.group(2)), int(m.group(3)), int(m.group(1))) if m else None

    @property
    def name(self) -> str:
        return self.dims + ("" if self.k == 4 else f"k{self.k}")

    @property
    def dims(self) -> str:
        """``WxH``, or ``XxYxH`` for a 3D board (the name without the connect length)."""
        if self.grid is not None:
            return f"{self.grid[0]}x{self.grid[1]}x{self.height}"
        return f"{self.width}x{self.height}"

    def __str__(self) -> str:
        return self.name

    @property
    def spec(self) -> tuple[int, int, int]:
        """``(width, height, k)`` (plus ``grid`` for a 3D board): what a task needs to rebuild
        this board elsewhere, as ``Board(*spec)``."""
        if self.grid is not None:
            return (self.width, self.height, self.k, self.grid)
        return (self.width, self.height, self.k)

    @property
    def cells(self) -> int:
        return self.width * self.height

    @property
    def table_filename(self) -> str:
        """``connect{K}_{W}x{H}.dat``, the name Cadot's script gives the table
        (``connect${CONNECT_Q}_${H_SIZE}x${V_SIZE}.dat``)."""
        return f"connect{self.k}_{self.dims}.dat"

    # ----------------------------------------------------------- column codes
    @cached_property
    def columns(self) -> list[tuple[int, ...]]:
        """Valid columns in code order (index = code), as bottom-first cell digits."""
        cols = _valid_columns(self.height, self.k)
        cols.sort(key=column_value)
        return cols

    @cached_property
    def code_of(self) -> dict[tuple[int, ...], int]:
        """Map bottom-first cell digits (padded to ``height``) to the column code."""
        return {c: i for i, c in enumerate(self.columns)}

    @property
    def base(self) -> int:
        """``B``: the number of valid columns, the radix of the position key."""
        return len(self.columns)

    @cached_property
    def key_bytes(self) -> int:
        """``K``: bytes of a big-endian key, smallest with ``256**K >= B**w``."""
        limit = self.base**self.width
        kb = 1
        while 256**kb < limit:
            kb += 1
        return kb

    @property
    def entry_size(self) -> int:
        return self.key_bytes + 1

    @property
    def key_limit(self) -> int:
        """Exclusive upper bound of keys: ``B**w``."""
        return self.base**self.width

    # --------------------------------------------------------- numeric tables
    # These arrays feed the numba kernels of the pipeline; each is indexed by column code.
    @cached_property
    def col_height(self) -> np.ndarray:
        """Number of chips in each column code."""
        return np.array([sum(1 for d in c if d) for c in self.columns], dtype=np.int64)

    @cached_property
    def col_bits_a(self) -> np.ndarray:
        """Bits (bottom = bit 0) of A's chips in each column code."""
        return np.array([sum(1 << i for i, d in enumerate(c) if d == A) for c in self.columns],
                        dtype=np.uint64)

    @cached_property
    def col_bits_b(self) -> np.ndarray:
        """Bits (bottom = bit 0) of B's chips in each column code."""
        return np.array([sum(1 << i for i, d in enumerate(c) if d == B) for c in self.columns],
                        dtype=np.uint64)

    @cached_property
    def child_code(self) -> np.ndarray:
        """``child_code[code, p]``: code after player ``p`` (0 = A, 1 = B) drops a chip; -1 if the
        column is full or the new column is not valid (a chip on a finished vertical line)."""
        out = np.full((self.base, 2), -1, dtype=np.int64)
        for i, c in enumerate(self.columns):
            n = sum(1 for d in c if d)
            if n == self.height:
                continue
            for p in (0, 1):
                new = list(c)
                new[n] = A if p == 0 else B
                out[i, p] = self.code_of.get(tuple(new), -1)
        return out

    @cached_property
    def parent_code(self) -> np.ndarray:
        """``parent_code[code]``: the code left when the top chip is taken back (the un-move);
        -1 for the empty column. The inverse of :attr:`child_code`: every valid non-empty
        column is ``child_code[parent, owner]`` of exactly one ``(parent, owner)`` (removing a
        top chip never makes a column invalid)."""
        return self._unmove[0]

    @cached_property
    def top_owner(self) -> np.ndarray:
        """``top_owner[code]``: who owns the top chip (0 = A, 1 = B); -1 for the empty column."""
        return self._unmove[1]

    @cached_property
    def _unmove(self) -> tuple[np.ndarray, np.ndarray]:
        parent = np.full(self.base, -1, np.int64)
        owner = np.full(self.base, -1, np.int64)
        for code in range(self.base):
            for p in (0, 1):
                nc = self.child_code[code, p]
                if nc >= 0:
                    parent[nc] = code
                    owner[nc] = p
        return parent, owner

    @cached_property
    def powers(self) -> np.ndarray:
        """``B**c`` for each column index, as uint64 (requires ``B**w <= 2**64``)."""
        return np.array([self.base**c for c in range(self.width)], dtype=np.uint64)

    @property
    def stride(self) -> int:
        """Bits per column in the bitboard: ``h + 1`` (one sentinel bit)."""
        return self.height + 1
