"""Reading a table file: binary search over its memory-mapped, sorted fixed-size entries.

A table never gets loaded into memory: :class:`DatTable` maps the file and compares big-endian key
bytes, so Cadot's 14.4 TiB ``connect4_7x6.dat`` answers as fast as a small one (about 41 probes
of 7 bytes per lookup). Opening checks the file (:mod:`c4table.table.check`); every answer goes
through the checked search of :mod:`c4table.table.search`. How the board is found, and the
checks: ``docs/modules.md`` (``c4table.table.dat``).

>>> t = DatTable("tables/5x4/connect4_5x4.dat")
>>> p = t.probe("3344")
>>> p.outcome, p.distance, [m.column for m in p.best_moves()]
('A', 3, [2])
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Iterator

import numpy as np

from c4table.game.board import Board
from c4table.errors import (ClosedTableError, MissingTableError,
                            PositionNotFoundError, TableDamaged)
from c4table.table.source import ENTRY_DTYPE, Table, board_from, keys_of_rows
from c4table.builddir.reader import BuildDir
from c4table.table.check import check_size, check_keys
from c4table.game.root import root_of
from c4table.table.source import finish_probe
from c4table.table.search import NOT_FOUND, search
from c4table.table.sums import Guard


class DatTable(Table):
    """A memory-mapped ``.dat`` table file of one board (:func:`c4table.open_table` opens one
    for a ``.dat`` path; a ``.c4z`` is read by :class:`~c4table.c4z.table.C4zTable`). Use as a
    context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike, board: str | Board | None = None):
        self._mm = self._data = None
        self.path = Path(path)
        if not self.path.is_file():
            raise MissingTableError(f"{self.path}: no such table file")
        build = BuildDir.beside(self.path)
        #: the checked build directory of this table (:class:`~c4table.builddir.BuildDir`),
        #: when the manifest beside the file describes it; else ``None``
        self.build = build if build is not None and build.describes(self.path.name) else None
        self.board = board_from(self.path.name, build, board, where=str(self.path),
                                size=self.path.stat().st_size)
        self.root = build.root_of(self.path.name, self.board) if build is not None else \
            root_of(self.board, self.path.name, None)
        self.entry_size = self.board.entry_size
        self.key_bytes = self.board.key_bytes
        size = self.path.stat().st_size
        check_size(self.path, self.board, size, build, rooted=self.root is not None)
        self.entries = size // self.entry_size
        self._file = open(self.path, "rb")
        self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            #: the block sums and the blocks checked so far (:class:`~c4table.table.sums.Guard`)
            self.guard = Guard(self.path, self.board, size)
            self._data = np.frombuffer(self._mm, np.uint8)
            for i in (0, self.entries - 1):   # the keys check_keys reads: checked first
                self.guard.check_entries(self._data, i, i + 1)
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
        """Key of entry ``i`` (file order), read as it is: unchecked (its block is not checked
        against its sum; the searches check what they read)."""
        mm = self._mapped()
        o = i * self.entry_size
        return int.from_bytes(mm[o: o + self.key_bytes], "big")

    def outcome_byte(self, key: int) -> int:
        """Outcome byte stored for ``key``; :class:`PositionNotFoundError` if absent,
        :class:`~c4table.errors.TableDamaged` if a block it reads is damaged."""
        self._mapped()
        out = np.empty(1, np.int64)
        if 0 <= key < 0xFFFFFFFFFFFFFFFF:
            search(self._data, self.entries, self.entry_size, self.key_bytes,
                   np.array([key], np.uint64), out, *self.guard.args())
            self.guard.raise_found(self._data)
            if out[0] != NOT_FOUND:
                return int(out[0])
        raise PositionNotFoundError(
            f"{self.path}: key {key} is not in the table (incomplete table, or not board {self.board})")

    def entries_array(self) -> np.ndarray:
        """The whole file as a numpy structured array (fields ``key`` as raw big-endian bytes
        ``V{K}`` and ``outcome`` uint8), memory-mapped, not loaded. Its entries are
        **unchecked**: search them with the kernels of :mod:`c4table.table.search` and
        :attr:`guard`, or check a range with ``guard.check_entries``."""
        dt = np.dtype([("key", f"V{self.key_bytes}"), ("outcome", "u1")])
        return np.frombuffer(self._mapped(), dtype=dt)

    def iter_entries(self, chunk_entries: int = 1 << 20, start: int = 0,
                     stop: int | None = None) -> Iterator[np.ndarray]:
        """Entries ``start..stop`` in file (key) order, as numpy structured arrays of at most
        ``chunk_entries`` rows with fields ``key`` (uint64) and ``outcome`` (uint8 byte); the
        blocks of each chunk are checked against their sums first, and an outcome byte of the
        unused class ``0xC0`` is refused (:class:`~c4table.errors.TableDamaged`).

        >>> with DatTable("tables/5x4/connect4_5x4.dat") as t:
        ...     first = next(t.iter_entries(4))
        >>> int(first["key"][0]), int(first["outcome"][0])
        (0, 20)
        """
        mm = self._mapped()
        stop = self.entries if stop is None else min(stop, self.entries)
        E, K = self.entry_size, self.key_bytes
        for lo in range(max(start, 0), stop, chunk_entries):
            hi = min(lo + chunk_entries, stop)
            self.guard.check_entries(self._data, lo, hi)
            rows = np.frombuffer(mm, np.uint8, count=(hi - lo) * E, offset=lo * E).reshape(-1, E)
            if (rows[:, K] >= 0xC0).any():
                i = lo + int(np.flatnonzero(rows[:, K] >= 0xC0)[0])
                byte = int(rows[i - lo, K])
                del rows, mm       # no view of the map kept alive by the traceback
                raise TableDamaged(f"{self.path}: entry {i:,} has outcome byte 0x{byte:02x}, which "
                                   "no table holds: the table is damaged")
            out = np.empty(hi - lo, ENTRY_DTYPE)
            out["key"] = keys_of_rows(rows, K)
            out["outcome"] = rows[:, K]
            yield out

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        """Outcome bytes (uint8) of an array of keys, in one vectorised call. A missing key
        raises :class:`PositionNotFoundError`; with ``default``, missing keys get that value
        instead (int16 result).

        >>> with DatTable("tables/5x4/connect4_5x4.dat") as t:
        ...     t.probe_keys(np.array([0, 5, 1], np.uint64))
        array([ 20,  18, 147], dtype=uint8)
        """
        q = np.asarray(keys, dtype=np.uint64).ravel()
        order = np.argsort(q) if q.size > 1 and not (q[1:] >= q[:-1]).all() else None
        found = np.empty(q.shape[0], np.int64)   # sorted queries: neighbouring searches share pages
        self._mapped()
        search(self._data, self.entries, self.entry_size, self.key_bytes,
               q if order is None else q[order], found, *self.guard.args())
        self.guard.raise_found(self._data)
        found[found == NOT_FOUND] = -1
        out = found.astype(np.int16)
        if order is not None:
            out[order] = out.copy()
        return finish_probe(out, q, default, self.path, self.board)

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._mm is not None:
            self._data = None
            try:
                self._mm.close()
            except BufferError:   # a view still lives (a traceback's frame): unmapped when it goes
                pass
            self._file.close()
            self._mm = None

    def __repr__(self) -> str:
        root = f", root={self.root.moves!r}" if self.root is not None else ""
        return f"Table({str(self.path)!r}, board={self.board}, entries={self.entries}{root})"
