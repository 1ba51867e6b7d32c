"""A ``.c4z`` seen as a table (:class:`C4zTable`): the entry-source protocol of
:class:`c4table.table.source.Table` over the blocks of a :class:`~c4table.c4z.reader.C4zFile`."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from c4table.game.board import Board
from c4table.errors import (ClosedTableError, TableError)
from c4table.game.root import root_of
from c4table.c4z.reader import C4zFile, open_c4z
from c4table.table.source import ENTRY_DTYPE, Table


class NotMappedError(TableError, NotImplementedError):
    """Raw memory-mapped access asked of a table that has none (a ``.c4z``)."""


class C4zTable(Table):
    """A :class:`~c4table.table.source.Table` whose entries come from a ``.c4z`` (local or
    remote): ``open_table("t.c4z")`` and ``open_table("s3://b/t.c4z")`` give one. Probes decode one block
    each (cached); :meth:`iter_entries` streams the blocks."""

    def __init__(self, path, board: str | Board | None = None):
        self.uri = str(path)
        self.path = Path(self.uri)
        self._z = open_c4z(self.uri)
        self.board = self._z.board
        if board is not None and Board.parse(board) != self.board:
            self._z.close()
            raise TableError(f"{self.uri}: the table is for board {self.board}, not {Board.parse(board)}")
        self.entry_size = self.board.entry_size
        self.key_bytes = self.board.key_bytes
        self.entries = self._z.entries
        self._mm = None
        self._file = None
        self.build = None   # no build directory is read for a .c4z: its header says what it is
        h = self._z.header
        self.root = root_of(self.board, h.get("file", ""),
                            {"root": h["root"]} if isinstance(h.get("root"), dict) else None)

    @property
    def c4z(self) -> C4zFile:
        if self._z is None:
            raise ClosedTableError(f"{self.uri}: the table is closed (open it again with open_table)")
        return self._z

    def _ensure_open(self) -> None:
        self.c4z

    def key_at(self, i: int) -> int:
        b, j = divmod(i, self.c4z.block_entries)
        return int(self.c4z.block(b)[0][j])

    def outcome_byte(self, key: int) -> int:
        return self.c4z.outcome_byte(key)

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        return self.c4z.probe_keys(keys, default)

    def entries_array(self) -> np.ndarray:
        raise NotMappedError(f"{self.uri}: a .c4z table is not memory-mapped; use iter_entries() "
                             "or `c4table decompress`")

    def iter_entries(self, chunk_entries: int = 1 << 20, start: int = 0,
                     stop: int | None = None) -> Iterator[np.ndarray]:
        stop = self.entries if stop is None else min(stop, self.entries)
        start = max(start, 0)
        if start >= stop:
            return
        B = self.c4z.block_entries
        pend: list[np.ndarray] = []
        have = 0
        for i, keys, outs in self.c4z.iter_blocks(start // B, -(-stop // B)):
            lo, hi = max(start - i * B, 0), min(stop - i * B, keys.shape[0])
            a = np.empty(hi - lo, ENTRY_DTYPE)
            a["key"], a["outcome"] = keys[lo:hi], outs[lo:hi]
            pend.append(a)
            have += a.shape[0]
            while have >= chunk_entries:
                allp = np.concatenate(pend)
                yield allp[:chunk_entries]
                pend, have = [allp[chunk_entries:]], have - chunk_entries
        if have:
            yield np.concatenate(pend)

    def close(self) -> None:
        if self._z is not None:
            self._z.close()
            self._z = None

    def __repr__(self) -> str:
        return f"C4zTable({self.uri!r}, board={self.board}, entries={self.entries})"
