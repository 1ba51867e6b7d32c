"""Reading a table file: binary search over its memory-mapped, sorted fixed-size entries.

A table never gets loaded into memory: :class:`Table` maps the file and compares big-endian key
bytes, so Cadot's 14.4 TiB ``connect4_7x6.dat`` answers as fast as a small one (about 41 probes
of 7 bytes per lookup).

>>> t = open_table("tables/5x4/connect4_5x4.dat")
>>> p = t.probe("3344")
>>> p.outcome, p.distance, [m.column for m in p.best_moves()]
('A', 3, [2])

The board of a table is taken from, in order: the ``board`` argument, the ``manifest.json``
beside the file, the file name ``connect{K}_WxH.dat`` (Cadot's ``connect${CONNECT_Q}_WxH.dat``:
``connect3_5x4.dat`` is 5x4 with three in a row to win; or ``connect{K}_WxH_root-MOVES.dat``). A
``board`` given as ``"WxH"`` takes the connect length from the file name, ``"WxHkK"`` names it. A
rooted table (:mod:`c4table.root`) knows its root (:attr:`Table.root`) and answers a position
outside its subtree with :class:`~c4table.root.NotReachableError`. Opening checks the file
against what is known of it (:mod:`c4table.tablecheck`): its size against the manifest beside it
or the known table of its board, its first and last keys; a truncated or renamed table is
refused there, not after a few answers.
"""
from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from c4table.board import TABLE_NAME, Board
from c4table.codec import decode_outcome
from c4table.errors import (ClosedTableError, IllegalPositionError, MissingTableError,
                            PositionNotFoundError, TableError)
from c4table.rules import Position

_NAME = TABLE_NAME  # groups: connect length, width, height

#: dtype of the chunks :meth:`Table.iter_entries` yields: the key as a number, the outcome byte.
ENTRY_DTYPE = np.dtype([("key", "<u8"), ("outcome", "u1")])


@dataclass
class MoveProbe:
    """One legal move: 1-based ``column``; the outcome if it is played, and ``distance`` in
    plies from the position before the move (the move itself counts as one ply)."""

    column: int
    outcome: str
    distance: int


@dataclass
class Probe:
    """What the table says about a position: ``outcome`` (``"A"``, ``"B"`` or ``"draw"``) and
    ``distance`` (plies to that result under optimal play), plus each legal move."""

    position: str
    ply: int
    to_move: str
    outcome: str
    distance: int
    terminal: bool
    moves: list[MoveProbe] = field(default_factory=list)

    def best_moves(self) -> list[MoveProbe]:
        """Optimal moves: the fastest win, else a draw, else the slowest loss."""
        if not self.moves:
            return []
        ranked = sorted(self.moves, key=lambda m: move_rank(m, self.to_move))
        best = move_rank(ranked[0], self.to_move)
        return [m for m in ranked if move_rank(m, self.to_move) == best]

    def to_json(self) -> dict:
        """The fields as a plain dict, moves as dicts (``asdict`` without its deep copies, which
        cost the server more than the probe itself)."""
        d = dict(self.__dict__)
        d["moves"] = [dict(m.__dict__) for m in self.moves]
        return d


def move_rank(m: MoveProbe, mover: str) -> tuple:
    """Sort key of a move for the side to move: win (fewest plies) < draw < loss (most plies)."""
    if m.outcome == mover:
        return (0, m.distance)
    if m.outcome == "draw":
        return (1, 0)
    return (2, -m.distance)


def board_of_table(path: Path, board: str | Board | None = None) -> Board:
    """The board a table file is for (see module docstring). A damaged ``manifest.json``
    beside the file is refused (:class:`~c4table.errors.CorruptDataError`)."""
    from c4table.builddir import BuildDir
    return board_from(path.name, BuildDir.beside(path) if board is None else None, board,
                      where=str(path))


def board_from(name: str, build=None, board: str | Board | None = None,
               where: str | None = None) -> Board:
    """The board of the table file ``name``: ``board`` if given, else the board of ``build``
    (the :class:`~c4table.builddir.BuildDir` beside the file, if any) when it describes that
    file, else the file name (``connect{K}_WxH.dat``). ``where`` names the file in the error."""
    named = Board.of_table_name(name)
    if board is not None:
        if isinstance(board, str) and named is not None:
            return Board.parse(board, named.k)
        return Board.parse(board)
    if build is not None and build.describes(name):
        return build.board
    if named is not None:
        return named
    raise TableError(f"{where or name}: cannot tell the board of this table; name it "
                     "connect4_WxH.dat (connectK_WxH.dat for K in a row) or give the board "
                     "(--board WxH)")


class Table:
    """A memory-mapped table file for one board. Use as a context manager or call :meth:`close`.

    Entries come from one of two sources: the memory-mapped ``.dat`` (this class) or the blocks
    of a ``.c4z`` file, local or remote (``s3://``, ``https://``): ``Table("t.c4z")`` returns a
    :class:`c4table.c4z.C4zTable`, which overrides the raw-access methods below."""

    def __new__(cls, path=None, board=None):
        if cls is Table and path is not None:
            from c4table.c4z import C4zTable, is_c4z
            if is_c4z(path):
                cls = C4zTable
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike, board: str | Board | None = None):
        from c4table.builddir import BuildDir
        from c4table.tablecheck import check_size, check_keys
        self._mm = None
        self.path = Path(path)
        if not self.path.is_file():
            raise MissingTableError(f"{self.path}: no such table file")
        build = BuildDir.beside(self.path)
        #: the checked build directory of this table (:class:`~c4table.builddir.BuildDir`),
        #: when the manifest beside the file describes it; else ``None``
        self.build = build if build is not None and build.describes(self.path.name) else None
        self.board = board_from(self.path.name, build, board, where=str(self.path))
        from c4table.root import root_of
        self.root = root_of(self.board, self.path.name, build.data if build is not None else None)
        self.entry_size = self.board.entry_size
        self.key_bytes = self.board.key_bytes
        size = self.path.stat().st_size
        check_size(self.path, self.board, size, build, rooted=self.root is not None)
        self.entries = size // self.entry_size
        self._file = open(self.path, "rb")
        self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            check_keys(self.path, self.board, self.key_at(0), self.key_at(self.entries - 1), build,
                       first_key=self.root.key if self.root is not None else 0)
        except Exception:
            self.close()
            raise

    # ----------------------------------------------------------- raw access
    def _mapped(self) -> mmap.mmap:
        if self._mm is None:
            raise ClosedTableError(f"{self.path}: the table is closed (open it again with open_table)")
        return self._mm

    def _ensure_open(self) -> None:
        """:class:`ClosedTableError` after :meth:`close`."""
        self._mapped()

    def key_at(self, i: int) -> int:
        """Key of entry ``i`` (file order)."""
        mm = self._mapped()
        o = i * self.entry_size
        return int.from_bytes(mm[o: o + self.key_bytes], "big")

    def outcome_byte(self, key: int) -> int:
        """Outcome byte stored for ``key``; :class:`PositionNotFoundError` if absent."""
        mm = self._mapped()
        lo, hi = 0, self.entries
        while lo < hi:
            mid = (lo + hi) // 2
            k = self.key_at(mid)
            if k < key:
                lo = mid + 1
            elif k > key:
                hi = mid
            else:
                return mm[mid * self.entry_size + self.key_bytes]
        raise PositionNotFoundError(
            f"{self.path}: key {key} is not in the table (incomplete table, or not board {self.board})")

    def entries_array(self) -> np.ndarray:
        """The whole file as a numpy structured array (fields ``key`` as raw big-endian bytes
        ``V{K}`` and ``outcome`` uint8), memory-mapped, not loaded."""
        dt = np.dtype([("key", f"V{self.key_bytes}"), ("outcome", "u1")])
        return np.frombuffer(self._mapped(), dtype=dt)

    def iter_entries(self, chunk_entries: int = 1 << 20, start: int = 0,
                     stop: int | None = None) -> Iterator[np.ndarray]:
        """Entries ``start..stop`` in file (key) order, as numpy structured arrays of at most
        ``chunk_entries`` rows with fields ``key`` (uint64) and ``outcome`` (uint8 byte).

        >>> with open_table("tables/5x4/connect4_5x4.dat") as t:
        ...     first = next(t.iter_entries(4))
        >>> int(first["key"][0]), int(first["outcome"][0])
        (0, 20)
        """
        mm = self._mapped()
        stop = self.entries if stop is None else min(stop, self.entries)
        E, K = self.entry_size, self.key_bytes
        for lo in range(max(start, 0), stop, chunk_entries):
            hi = min(lo + chunk_entries, stop)
            rows = np.frombuffer(mm, np.uint8, count=(hi - lo) * E, offset=lo * E).reshape(-1, E)
            buf = np.zeros((hi - lo, 8), np.uint8)
            buf[:, 8 - K:] = rows[:, :K]
            out = np.empty(hi - lo, ENTRY_DTYPE)
            out["key"] = buf.view(">u8").ravel()
            out["outcome"] = rows[:, K]
            yield out

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        """Outcome bytes (uint8) of an array of keys, in one vectorised call. A missing key
        raises :class:`PositionNotFoundError`; with ``default``, missing keys get that value
        instead (int16 result).

        >>> with open_table("tables/5x4/connect4_5x4.dat") as t:
        ...     t.probe_keys(np.array([0, 5, 1], np.uint64))
        array([ 20,  18, 147], dtype=uint8)
        """
        from c4table.c4z import _finish_probe
        from c4table.fastprobe import NOT_FOUND, search
        q = np.asarray(keys, dtype=np.uint64).ravel()
        order = np.argsort(q) if q.size > 1 and not (q[1:] >= q[:-1]).all() else None
        found = np.empty(q.shape[0], np.int64)   # sorted queries: neighbouring searches share pages
        search(np.frombuffer(self._mapped(), np.uint8), self.entries, self.entry_size, self.key_bytes,
               q if order is None else q[order], found)
        found[found == NOT_FOUND] = -1
        out = found.astype(np.int16)
        if order is not None:
            out[order] = out.copy()
        return _finish_probe(out, q, default, self.path, self.board)

    def wdl_many(self, positions) -> np.ndarray:
        """:meth:`wdl` of many positions (move strings, drawings or :class:`Position`) as an
        int8 array, with one vectorised probe (:meth:`probe_keys`)."""
        pos = [self.position(p) for p in positions]
        res = self.probe_keys(np.fromiter((p.key() for p in pos), np.uint64, len(pos))) >> 6
        mover = np.fromiter((1 if p.to_move == "A" else 2 for p in pos), np.uint8, len(pos))
        return np.where(res == 0, 0, np.where(res == mover, 1, -1)).astype(np.int8)

    # -------------------------------------------------------------- probing
    def position(self, moves: str | Position) -> Position:
        """The :class:`Position` of a move string, a drawing (a string of several lines, see
        :mod:`c4table.drawing`) or a :class:`Position` of this table's board."""
        self._ensure_open()
        if isinstance(moves, Position):
            if moves.board != self.board:
                raise TableError(f"position is for board {moves.board}, table for {self.board}")
            return moves
        if not isinstance(moves, str):
            raise IllegalPositionError(
                f"a position is a move string such as \"3344\", a drawing or a Position, not "
                f"{type(moves).__name__} {str(moves)[:40]!r}")
        if "\n" in moves.strip():
            from c4table.drawing import parse_drawing
            return parse_drawing(moves, self.board)
        return Position.from_moves(self.board, moves)

    def probe(self, moves: str | Position) -> Probe:
        """Outcome and distance of a position (a move string such as ``"4453"`` or a
        :class:`~c4table.rules.Position`), and of each legal move."""
        pos = self.position(moves)
        res = decode_outcome(self._byte_of(pos))
        probe = Probe(pos.move_string(), pos.ply, pos.to_move, res.result, res.distance,
                      pos.is_terminal)
        for c in pos.legal_moves():
            child = decode_outcome(self._byte_of(pos.child(c)))
            probe.moves.append(MoveProbe(c + 1, child.result, child.distance + 1))
        return probe

    def _byte_of(self, pos: Position) -> int:
        """Outcome byte of ``pos``; in a rooted table, a missing key means ``pos`` is outside the
        root's subtree (:class:`~c4table.root.NotReachableError`)."""
        try:
            return self.outcome_byte(pos.key())
        except PositionNotFoundError:
            if self.root is None:
                raise
            raise self.root.not_reachable(pos, self.path) from None

    def best_moves(self, moves: str | Position) -> list[MoveProbe]:
        """Optimal moves of a position: fastest win, else a draw, else the slowest loss.

        >>> t = open_table("tables/5x4/connect4_5x4.dat")
        >>> [m.column for m in t.best_moves("3344")]
        [2]
        """
        return self.probe(moves).best_moves()

    def wdl(self, moves: str | Position) -> int:
        """``1`` if the side to move wins, ``0`` draw, ``-1`` loss (like python-chess'
        ``probe_wdl``); a finished game counts from the side to move too (a loss or a draw)."""
        pos = self.position(moves)
        res = decode_outcome(self._byte_of(pos)).result
        return 0 if res == "draw" else (1 if res == pos.to_move else -1)

    def drawing(self, moves: str | Position, mark_best: bool = True) -> str:
        """The position drawn top row first (``.``/``A``/``B``, column numbers), with a ``*``
        under each best move when ``mark_best``."""
        from c4table.drawing import render
        pos = self.position(moves)
        marks = [m.column for m in self.probe(pos).best_moves()] if mark_best else []
        return render(pos, marks)

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._file.close()
            self._mm = None

    def __enter__(self) -> "Table":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.entries

    def __repr__(self) -> str:
        root = f", root={self.root.moves!r}" if self.root is not None else ""
        return f"Table({str(self.path)!r}, board={self.board}, entries={self.entries}{root})"


def open_table(path: str | os.PathLike, board: str | Board | None = None) -> Table:
    """Open a table file for lookups (see :class:`Table`): a ``.dat`` path, or a ``.c4z`` path
    or URI (``s3://bucket/t.c4z``, ``https://host/t.c4z``)."""
    return Table(path, board)
