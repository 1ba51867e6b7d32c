"""Board geometry shared by every board variant: width, height, connect length, Cadot's column
codes and the bitboard layout; the registry of variants (:func:`find_variant`) and the
variant-independent ways of naming a board (:meth:`Board.parse`, :meth:`Board.of_table_name`,
:meth:`Board.from_json`).

A variant is :class:`Board` (the 2D board, ``"2d"``) or a subclass of it that overrides what
differs (its size and name, recorded fields, key readings, lines, cell names, readers' kernels,
what it supports): the 3D gravity board (:mod:`c4table.game.board3d`, registered when
:mod:`c4table.game` is imported). The factories (:meth:`Board.parse`, :meth:`Board.from_json`,
:meth:`Board.from_spec`, :meth:`Board.grid3d`) choose the variant. The connect length ``k``
is a field of every variant.

Design notes: ``docs/modules.md`` (``c4table.game.board``).

    >>> b = Board.parse("7x6")
    >>> b.base, b.key_bytes, b.entry_size, b.variant
    (111, 6, 7, '2d')
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from c4table.errors import BoardError, IllegalPositionError
from c4table.wording import quote

EMPTY, A, B = 0, 1, 2
LETTERS = "abcdefghijklmnopqrstuvwxyz"
_SPEC = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*(?:[xX]\s*(\d+)\s*)?(?:[kK]\s*(\d+))?\s*$")
#: Table file names, as Cadot's script writes them: ``connect{K}_{W}x{H}.dat`` (groups: K, W, H),
#: or a rooted table; a 3D board's ``connect{K}_{X}x{Y}x{H}.dat`` (groups: K, X, Y, H).
TABLE_NAME = re.compile(r"connect(\d+)_(\d+)x(\d+)(?:x(\d+))?(?:_root-\w+)?\.dat$")

#: What a variant may support beyond building, looking up and exporting positions
#: (:attr:`Board.features`; asked with :meth:`Board.supports`).
FEATURES = {
    "drawing": "positions read from and shown as a drawing of rows (parse_drawing, the SVG "
               "picture, serve's web board)",
    "mirror": "an entry stands for a position and its left-right mirror image (export --mirror)",
    "per_move": "vectorised child keys of whole arrays of positions (fast probes, per-move labels "
                "of a table: export --per-move, --hf)",
    "planes": "observation planes of the RL libraries (a W x H grid)",
    "bdd": "the BDD engine's encodings",
    "root": "rooted builds (--root)",
}

#: The registered variants by name (:func:`register_variant`), in registration order.
VARIANTS: dict[str, type["Board"]] = {}


def register_variant(cls: type["Board"]) -> type["Board"]:
    """Class decorator: register a :class:`Board` subclass under its :attr:`Board.variant`."""
    unknown = set(cls.features) - set(FEATURES)
    if unknown:
        raise ValueError(f"variant {cls.variant}: unknown features {sorted(unknown)}")
    VARIANTS[cls.variant] = cls
    return cls


def find_variant(name: str) -> type["Board"]:
    """The variant class registered as ``name``.

    >>> find_variant("3d").__name__
    'Board3D'
    """
    try:
        return VARIANTS[name]
    except KeyError:
        raise BoardError(f"unknown board variant {name!r}: one of {', '.join(VARIANTS)}") from None


def _variant_of_dims(n: int) -> type["Board"]:
    for cls in VARIANTS.values():
        if cls.ndims == n:
            return cls
    raise BoardError(f"no board variant has {n} dimensions")


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
    """A ``width`` x ``height`` board where ``k`` in a row wins: the 2D variant (``"2d"``), and
    the base class of the others, which override what differs (:class:`Board3D
    <c4table.game.board3d.Board3D>`: ``grid = (X, Y)`` places its ``width = X*Y`` columns).
    Every variant has ``width`` columns of ``height`` cells, so column codes, keys, moves and
    bitboard columns are shared.

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

    #: The variant's name in :data:`VARIANTS`.
    variant: ClassVar[str] = "2d"
    #: How many numbers its size has (``WxH``: 2, ``XxYxH``: 3).
    ndims: ClassVar[int] = 2
    #: What it supports of :data:`FEATURES`.
    features: ClassVar[frozenset[str]] = frozenset(FEATURES)
    #: Whether it is the 3D gravity board.
    is_3d: ClassVar[bool] = False
    #: How many fields its :attr:`spec` has (how :meth:`from_spec` tells the variant).
    spec_len: ClassVar[int] = 3
    #: The keys :meth:`json_fields` writes (how :meth:`from_json` tells the variant).
    json_keys: ClassVar[tuple[str, ...]] = ()
    #: The directions of a line in (column, row) steps: horizontal, vertical, the diagonals.
    DIRECTIONS: ClassVar[tuple] = ((1, 0), (0, 1), (1, 1), (1, -1))

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        """Raise :class:`BoardError` unless the fields make a board of the variant."""
        if self.grid is not None:
            raise BoardError(f"a 2D board has no grid (got {self.grid!r}): a 3D board is "
                             "Board.grid3d(X, Y, H, k) or Board.parse('XxYxH')")
        if not (isinstance(self.width, int) and isinstance(self.height, int)):
            raise BoardError("board width and height must be integers")
        if self.width < 1 or self.height < 1:
            raise BoardError(f"board {self.width}x{self.height}: width and height must be at least 1")
        if self.width * (self.height + 1) > 64:
            raise BoardError(
                f"board {self.width}x{self.height}: bitboard needs w*(h+1) = "
                f"{self.width * (self.height + 1)} bits, more than 64")
        self._check_k(self.width, self.height)

    def _check_k(self, *extents: int) -> None:
        """Check the connect length against the board's extents (at most the longest, or 4)."""
        if not isinstance(self.k, int) or self.k < 2:
            raise BoardError(f"connect length k={self.k} must be an integer of at least 2")
        if self.k > max(*extents, 4):
            raise BoardError(
                f"connect length {self.k} does not fit board {'x'.join(map(str, extents))}: no "
                f"line of {self.k} cells; at most {max(extents)}")

    def check_buildable(self) -> None:
        """Raise :class:`BoardError` unless the build's 64-bit bitboards hold the board (a 2D
        board is refused beyond them when it is made)."""

    # ---------------------------------------------- what each variant says
    @classmethod
    def from_dims(cls, dims: Sequence[int], k: int = 4) -> "Board":
        """The board of size ``dims`` (:attr:`ndims` numbers, as in its :attr:`dims`)."""
        w, h = dims
        return cls(w, h, k)

    @classmethod
    def example(cls) -> "Board":
        """A small board of the variant (for tests and docs)."""
        return cls(5, 4)

    @classmethod
    def _from_json(cls, fields: Mapping[str, Any]) -> "Board":
        return cls(fields["width"], fields["height"], fields.get("k", 4))

    @property
    def dims(self) -> str:
        """``WxH``, or ``XxYxH`` for a 3D board (the name without the connect length)."""
        return f"{self.width}x{self.height}"

    @property
    def spec(self) -> tuple:
        """``(width, height, k)`` (plus ``grid`` for a 3D board): what a task needs to rebuild
        this board elsewhere, as :meth:`from_spec`."""
        return (self.width, self.height, self.k)

    def json_fields(self) -> dict:
        """The fields a table header or manifest records beside width, height and k."""
        return {}

    def readings(self, codes: Sequence[int]) -> Sequence[int]:
        """Every symmetry's reading of column ``codes`` as a base-B number, the identity first
        (the key, :meth:`key_of_codes`, is the least): on a 2D board ``(v1, v2)``, the board
        read left-to-right and right-to-left.

        >>> Board(5, 4, 3).readings([1, 0, 0, 0, 0])
        (1, 531441)
        """
        base = self.base
        v1 = v2 = 0
        for code in reversed(codes):  # Horner: column w-1 is the most significant digit of v1
            v1 = v1 * base + code
        for code in codes:
            v2 = v2 * base + code
        return v1, v2

    def run_through(self, cols: Sequence[Sequence[int]], col: int, row: int) -> list[tuple[int, int]]:
        """Cells (0-based column, row) of the first run of ``k`` or more chips of one player
        through the chip at ``col``, ``row`` of ``cols`` (each column's chips, bottom first),
        sorted; ``[]`` if there is none (on a 2D board, in the four :attr:`DIRECTIONS`)."""
        w, h, k = self.width, self.height, self.k
        player = cols[col][row]

        def mine(c: int, r: int) -> bool:
            return 0 <= c < w and 0 <= r < min(h, len(cols[c])) and cols[c][r] == player

        for dc, dr in self.DIRECTIONS:
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

    def cell_name(self, col: int, row: int) -> str:
        """The name of a cell (0-based column, row from the bottom), as export names it: on a
        2D board ``{column letter}{row number}``, ``a1`` the bottom left cell.

        >>> Board(5, 4).cell_name(1, 0)
        'b1'
        """
        return f"{LETTERS[col]}{row + 1}"

    def decode_keys(self, keys: np.ndarray, images: bool = False) -> tuple:
        """``(codes, plies, terminal, symmetric)`` of uint64 ``keys``, by the variant's readers'
        kernels (:mod:`c4table.game.lines` on a 2D board); ``images``: the number of distinct
        images of each entry in place of ``symmetric``."""
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
        """Whether each bitboard of ``bb`` holds ``k`` chips in a row."""
        from c4table.game import lines
        out = np.empty(bb.shape[0], np.bool_)
        lines.has_lines(np.ascontiguousarray(bb, dtype=np.uint64), self.stride, self.k, out)
        return out

    # ----------------------------------------------------------- shared rules
    def supports(self, feature: str) -> bool:
        """Whether the variant offers ``feature`` (a name of :data:`FEATURES`).

        >>> Board(5, 4).supports("drawing"), Board.grid3d(2, 2, 2).supports("drawing")
        (True, False)
        """
        if feature not in FEATURES:
            raise ValueError(f"unknown feature {feature!r}: one of {', '.join(FEATURES)}")
        return feature in self.features

    def key_of_codes(self, codes: Sequence[int]) -> int:
        """The table key of a position given its column codes: its least reading."""
        return min(self.readings(codes))

    def columns_of_moves(self, moves: str) -> list[int]:
        """The 0-based columns of a move string (1-based column digits).

        >>> Board(5, 4).columns_of_moves("153")
        [0, 4, 2]
        """
        moves = moves.strip()
        if self.width > 9 and moves:
            raise IllegalPositionError(
                f"board {self} has more than 9 columns: single-digit move strings cannot name them")
        cols = []
        for i, ch in enumerate(moves):
            if not ("1" <= ch <= "9") or int(ch) > self.width:
                raise IllegalPositionError(
                    f"bad move {quote(ch)} (character {i + 1} of {quote(moves)}): columns are "
                    f"1..{self.width}")
            cols.append(int(ch) - 1)
        return cols

    def move_string(self, cols: Sequence[int]) -> str:
        """The move string of 0-based columns (the inverse of :meth:`columns_of_moves`)."""
        return "".join(str(c + 1) for c in cols)

    @classmethod
    def grid3d(cls, x: int, y: int, height: int, k: int = 4) -> "Board":
        """The 3D gravity board of an ``x`` by ``y`` grid of columns of ``height`` cells.

        >>> b = Board.grid3d(2, 3, 2, k=3)
        >>> b.width, b.cells, b.table_filename
        (6, 12, 'connect3_2x3x2.dat')
        """
        return _variant_of_dims(3).from_dims((x, y, height), k)

    @classmethod
    def from_spec(cls, spec: Sequence) -> "Board":
        """The board of a :attr:`spec` (the variant its length names).

        >>> b = Board.grid3d(2, 3, 2)
        >>> Board.from_spec(b.spec) == b, Board.from_spec((5, 4, 3))
        (True, Board(width=5, height=4, k=3))
        """
        for variant in VARIANTS.values():
            if variant.spec_len == len(spec):
                return variant(*spec)
        raise BoardError(f"no board variant has a spec of {len(spec)} fields")

    def __repr__(self) -> str:
        return f"Board(width={self.width}, height={self.height}, k={self.k})"

    # ----------------------------------------------------------------- naming
    @classmethod
    def parse(cls, spec: str | "Board", k: int = 4) -> "Board":
        """Parse ``"WxH"`` (width x height, e.g. ``"7x6"``) into a :class:`Board` where ``k`` in
        a row wins; ``"WxHkK"`` (the form of :attr:`name`, e.g. ``"5x4k3"``) names ``k`` too;
        ``"XxYxH"`` a 3D board.

        >>> Board.parse("5x4", k=3) == Board.parse("5x4k3") == Board(5, 4, 3)
        True
        """
        if isinstance(spec, Board):
            return spec
        m = _SPEC.match(str(spec))
        if not m:
            raise BoardError(f"bad board {quote(spec)}: expected WIDTHxHEIGHT such as 7x6, 5x4k3 (K in a "
                             "row) or 2x2x4 (3D)")
        if m.group(4) is not None:
            named = int(m.group(4))
            if k not in (4, named):
                raise BoardError(f"board {quote(spec)} names connect length {named}, not {k}")
            k = named
        dims = tuple(int(g) for g in m.group(1, 2, 3) if g is not None)
        return _variant_of_dims(len(dims)).from_dims(dims, k)

    @classmethod
    def of_table_name(cls, name: str) -> "Board | None":
        """The board a table file name ``connect{K}_{W}x{H}.dat`` names, or None.

        >>> Board.of_table_name("tables/connect3_5x4.dat")
        Board(width=5, height=4, k=3)
        """
        m = TABLE_NAME.search(str(name))
        if not m:
            return None
        dims = tuple(int(g) for g in m.group(2, 3, 4) if g is not None)
        return _variant_of_dims(len(dims)).from_dims(dims, int(m.group(1)))

    @classmethod
    def from_json(cls, fields: Mapping[str, Any]) -> "Board":
        """The board a table header or manifest records (``width``, ``height``, ``k`` and the
        variant's :meth:`json_fields`); :class:`ValueError`, :class:`KeyError` or
        :class:`TypeError` when they are damaged.

        >>> b = Board.grid3d(2, 3, 2)
        >>> Board.from_json({"width": b.width, "height": b.height, "k": b.k, **b.json_fields()}) == b
        True
        """
        variant = max(VARIANTS.values(), key=lambda v: len(set(v.json_keys) & set(fields)))
        return variant._from_json(fields)

    @property
    def name(self) -> str:
        return self.dims + ("" if self.k == 4 else f"k{self.k}")

    def __str__(self) -> str:
        return self.name

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


register_variant(Board)
