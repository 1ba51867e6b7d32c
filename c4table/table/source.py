"""The entry-source protocol every table reader implements, and what they share.

A reader (:class:`~c4table.table.dat.DatTable` over a memory-mapped ``.dat``,
:class:`~c4table.c4z.table.C4zTable` over the blocks of a ``.c4z``, local or remote) gives the
raw access of :class:`Table` (``key_at``, ``outcome_byte``, ``probe_keys``, ``iter_entries``,
``entries_array``, ``close``) and inherits the probing built on it (``probe``, ``best_moves``,
``wdl``, ``wdl_many``, ``drawing``). :func:`c4table.open.open_table` chooses the reader. How a
table's board is found: ``docs/modules.md`` (``c4table.table.source``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from c4table.game.board import Board
from c4table.game.codec import decode_outcome
from c4table.errors import (IllegalPositionError, PositionNotFoundError, TableBoardError,
                            TableError)
from c4table.game.rules import Position
from c4table.table.probe import MoveProbe, Probe
from c4table.table.sums import check_plies
from c4table.builddir.reader import BuildDir
from c4table.table.check import known_of_size
from c4table.game.drawing import parse_drawing
from c4table.game.drawing import render


#: dtype of the chunks :meth:`Table.iter_entries` yields: the key as a number, the outcome byte.
ENTRY_DTYPE = np.dtype([("key", "<u8"), ("outcome", "u1")])


def board_of_table(path: Path, board: str | Board | None = None) -> Board:
    """The board a table file is for (see module docstring). A damaged ``manifest.json``
    beside the file is refused (:class:`~c4table.errors.CorruptDataError`)."""
    return board_from(path.name, BuildDir.beside(path) if board is None else None, board,
                      where=str(path))


def board_from(name: str, build=None, board: str | Board | None = None,
               where: str | None = None, size: int | None = None) -> Board:
    """The board of the table file ``name``: ``board`` if given, else the board of ``build``
    (the :class:`~c4table.builddir.BuildDir` beside the file, if any) when it describes that
    file, else the file name (``connect{K}_WxH.dat``), else its ``size`` in bytes when that is
    the size of exactly one known table (a renamed copy). ``where`` names the file in the error.

    >>> board_from("renamed.dat", size=322164)
    Board(width=4, height=4, k=4)
    """
    named = Board.of_table_name(name)
    if board is not None:
        if isinstance(board, str) and named is not None:
            return Board.parse(board, named.k)
        return Board.parse(board)
    if build is not None and build.describes(name):
        return build.board
    if named is not None:
        return named
    sized = known_of_size(size) if size is not None else []
    if len(sized) == 1:
        return Board.parse(sized[0])
    raise TableBoardError(f"{where or name}: cannot tell the board of this table; name it "
                     "connect4_WxH.dat (connectK_WxH.dat for K in a row) or give the board "
                     "(--board WxH)")




def keys_of_rows(rows: np.ndarray, key_bytes: int) -> np.ndarray:
    """The keys (uint64) of ``(n, entry_size)`` rows of table bytes: the big-endian first
    ``key_bytes`` of each row.

    >>> keys_of_rows(np.array([[0, 0, 5, 20], [1, 0, 0, 18]], np.uint8), 3).tolist()
    [5, 65536]
    """
    buf = np.zeros((rows.shape[0], 8), np.uint8)
    buf[:, 8 - key_bytes:] = rows[:, :key_bytes]
    return buf.view(">u8").ravel().astype(np.uint64)


def finish_probe(out: np.ndarray, q: np.ndarray, default, where, board) -> np.ndarray:
    """Raise for the first missing key (``default`` None) or fill missing keys with it."""
    miss = out < 0
    if default is None:
        if miss.any():
            k = int(q[np.flatnonzero(miss)[0]])
            raise PositionNotFoundError(f"{where}: key {k} is not in the table (incomplete table, "
                                        f"or not board {board}); {int(miss.sum())} key(s) missing")
        return out.astype(np.uint8)
    out[miss] = default
    return out


class Table:
    """A table of one board: the raw access each reader implements, and the probing it
    inherits. Attributes every reader sets: ``path``, ``board``, ``entries``, ``entry_size``,
    ``key_bytes``, ``root`` (a :class:`~c4table.game.root.Root` or ``None``), ``build`` (the
    checked :class:`~c4table.builddir.BuildDir` beside a local file, else ``None``).
    Open one with :func:`c4table.open_table`; use it as a context manager or call
    :meth:`close`."""

    path: Path
    board: Board
    entries: int
    entry_size: int
    key_bytes: int
    root = None
    build = None

    def __init__(self, *args, **kwargs):
        raise TypeError("Table is the interface every table reader implements: open a table with "
                        "c4table.open_table(path)")

    # ----------------------------------------------------------- raw access (each reader)
    def _ensure_open(self) -> None:
        """:class:`ClosedTableError` after :meth:`close`."""
        raise NotImplementedError

    def key_at(self, i: int) -> int:
        """Key of entry ``i`` (file order)."""
        raise NotImplementedError

    def outcome_byte(self, key: int) -> int:
        """Outcome byte stored for ``key``; :class:`PositionNotFoundError` if absent."""
        raise NotImplementedError

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        """Outcome bytes (uint8) of an array of keys, in one vectorised call. A missing key
        raises :class:`PositionNotFoundError`; with ``default``, missing keys get that value
        instead (int16 result)."""
        raise NotImplementedError

    def entries_array(self) -> np.ndarray:
        """The whole table as a numpy structured array, where the reader maps it."""
        raise NotImplementedError

    def iter_entries(self, chunk_entries: int = 1 << 20, start: int = 0,
                     stop: int | None = None) -> Iterator[np.ndarray]:
        """Entries ``start..stop`` in key order, as :data:`ENTRY_DTYPE` arrays of at most
        ``chunk_entries`` rows."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def wdl_many(self, positions) -> np.ndarray:
        """:meth:`wdl` of many positions (move strings, drawings or :class:`Position`) as an
        int8 array, with one vectorised probe (:meth:`probe_keys`)."""
        pos = [self.position(p) for p in positions]
        got = self.probe_keys(np.fromiter((p.key() for p in pos), np.uint64, len(pos)))
        check_plies(self.path, self.board, got, np.fromiter((p.ply for p in pos), np.int64, len(pos)))
        res = got >> 6
        mover = np.fromiter((1 if p.to_move == "A" else 2 for p in pos), np.uint8, len(pos))
        return np.where(res == 0, 0, np.where(res == mover, 1, -1)).astype(np.int8)

    # -------------------------------------------------------------- probing
    def position(self, moves: str | Position) -> Position:
        """The :class:`Position` of a move string, a drawing (a string of several lines, see
        :mod:`c4table.game.drawing`) or a :class:`Position` of this table's board."""
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
            return parse_drawing(moves, self.board)
        return Position.from_moves(self.board, moves)

    def probe(self, moves: str | Position) -> Probe:
        """Outcome and distance of a position (a move string such as ``"4453"`` or a
        :class:`~c4table.game.rules.Position`), and of each legal move."""
        pos = self.position(moves)
        res = decode_outcome(self._byte_of(pos))
        probe = Probe(pos.move_string(), pos.ply, pos.to_move, res.result, res.distance,
                      pos.is_terminal)
        probe._board = self.board          # for its picture in a notebook (not in its JSON)
        for c in pos.legal_moves():
            child = decode_outcome(self._byte_of(pos.child(c), pos.ply + 1))
            probe.moves.append(MoveProbe(c + 1, child.result, child.distance + 1))
        return probe

    def _byte_of(self, pos: Position, ply: int | None = None) -> int:
        """Outcome byte of ``pos`` (of ply ``ply``, if known), refused
        (:class:`~c4table.errors.TableDamaged`) if that ply cannot have it; in a rooted table,
        a missing key means ``pos`` is outside the root's subtree
        (:class:`~c4table.game.root.NotReachableError`)."""
        try:
            byte = self.outcome_byte(pos.key())
        except PositionNotFoundError:
            if self.root is None:
                raise
            raise self.root.not_reachable(pos, self.path) from None
        check_plies(self.path, self.board, [byte], [pos.ply if ply is None else ply],
                    f"position {pos.move_string()!r}" if ply is None else "")
        return byte

    def best_moves(self, moves: str | Position) -> list[MoveProbe]:
        """Optimal moves of a position: fastest win, else a draw, else the slowest loss.

        >>> from c4table import open_table
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
        pos = self.position(moves)
        marks = [m.column for m in self.probe(pos).best_moves()] if mark_best else []
        return render(pos, marks)

    def __enter__(self) -> "Table":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __len__(self) -> int:
        return self.entries
