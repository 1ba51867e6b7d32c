"""Reading build directories: the one reader of ``manifest.json`` and the shards it lists, for
every command that is not the build itself (``export``, ``stats``, ``verify``, ``crosscheck``
and the table reader). The build writes them through :mod:`c4table.builddir.manifest`; this
module reads them back through the same code and trusts nothing it has not checked:

Design notes: ``docs/modules.md`` (``c4table.builddir.reader``).

>>> bd = BuildDir.load("tables/5x4")
>>> bd.board, bd.table.file, len(bd.plies)
(Board(width=5, height=4, k=4), 'connect4_5x4.dat', 21)

A ``.dat`` build keeps its shards in ``DIR/work`` (unless built with ``--clean``); a
generation's entries read as one ``pyarrow.Table``:

>>> g = open_build_dir("tables/5x4").generation(8)          # the backward shards of ply 8
>>> g.column_names, g.num_rows == bd.plies[8].entries
(['key', 'outcome'], True)
>>> bd.generation(8, stage="forward").num_rows
10076
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, NamedTuple

import numpy as np

from c4table.game.board import Board
from c4table.game.root import Root
from c4table.errors import BuildInputError, C4Error
from c4table.builddir.manifest import MANIFEST, Manifest
from c4table.builddir.records import PlyRecord, TableRecord
from c4table.builddir.shards import ShardInfo, read_shard, stored_xxh64
from c4table.io.storage import Storage, is_url, open_storage

if TYPE_CHECKING:
    import pyarrow as pa

STAGES = ("forward", "backward")


def open_build_dir(path: str | os.PathLike | Storage) -> "BuildDir":
    """The checked build directory ``path`` (:meth:`BuildDir.load`): its manifest's records,
    and the shards it keeps as Arrow tables (:meth:`BuildDir.generation`,
    :meth:`BuildDir.shard_tables`)."""
    return BuildDir.load(path)


class PlyCounts(NamedTuple):
    """What a build recorded for one ply, in positions (mirror images counted apart, as in
    Böck's tables); a field is None where the build has not counted it (``positions`` and
    ``terminal`` after the forward step, ``a_wins``/``draws``/``b_wins`` after the backward
    one)."""

    ply: int
    positions: int | None = None
    terminal: int | None = None
    a_wins: int | None = None
    draws: int | None = None
    b_wins: int | None = None

    @property
    def solved(self) -> bool:
        """Whether the backward pass counted this ply's outcomes."""
        return None not in (self.a_wins, self.draws, self.b_wins)


class BuildDir:
    """A build directory whose manifest has been loaded and checked (see docs/modules.md)."""

    def __init__(self, manifest: Manifest, name: str = MANIFEST):
        self.manifest = manifest
        self.store: Storage = manifest.store
        self.name = name

    # ------------------------------------------------------------ opening
    @classmethod
    def load(cls, path: str | os.PathLike | Storage) -> "BuildDir":
        """The build directory ``path`` (a directory, a URI, a :class:`Storage`, or the manifest
        file itself). :class:`BuildInputError` if there is no manifest, :class:`CorruptDataError` if
        it is damaged."""
        if isinstance(path, Storage):
            return cls(Manifest.load(path, require_checksum=True))
        s = str(path)
        if not is_url(s):
            p = Path(path)
            if p.is_file():
                return cls(Manifest.load(p.parent, p.name, require_checksum=True), p.name)
            if not p.exists() and p.suffix:
                raise BuildInputError(f"{p}: no such manifest")
        return cls(Manifest.load(s, require_checksum=True))

    @classmethod
    def beside(cls, table: str | os.PathLike, store: Storage | None = None) -> "BuildDir | None":
        """The build directory holding the table file ``table`` (a local path, or a name in
        ``store``), or ``None`` if there is no ``manifest.json`` beside it. A manifest that is
        there but damaged is refused (it may be this table's)."""
        if store is None:
            store = open_storage(Path(table).absolute().parent)
        if not store.exists(MANIFEST):
            return None
        return cls(Manifest.load(store, require_checksum=True))

    # ------------------------------------------------------------ queries
    @property
    def path(self) -> str:
        """The manifest file, as messages name it."""
        return self.store.display(self.name)

    @property
    def board(self) -> Board:
        return self.manifest.board

    @property
    def plies(self) -> list[PlyRecord]:
        """Per-ply records (see :mod:`c4table.builddir.records`)."""
        return self.manifest.plies

    @property
    def table(self) -> TableRecord | None:
        """The finished table's record (file, entries, bytes, sha256, md5), or ``None``."""
        return self.manifest.table

    def ply_counts(self) -> list[PlyCounts]:
        """The counts of every ply the build recorded, ply 0 first.

        >>> BuildDir.load("tables/5x4").ply_counts()[4]
        PlyCounts(ply=4, positions=345, terminal=0, a_wins=44, draws=231, b_wins=70)
        """
        return [PlyCounts(r.ply, *(getattr(r, f) for f in PlyCounts._fields[1:]))
                for r in self.manifest.plies]

    @property
    def root_moves(self) -> str | None:
        """The moves from the empty board to the root of a rooted build, or None for a
        build of the whole board."""
        root = self.manifest.root_record()
        return None if not isinstance(root, dict) else str(root.get("moves") or "")

    def describes(self, table_name: str) -> bool:
        """Whether this build is the one of the table file called ``table_name``: its table
        record names that file, or its board's default file name is that name."""
        t = self.table
        return (t is not None and t.describes(table_name)) or \
            self.board.table_filename == table_name

    def root_of(self, table_name: str, board: Board | None = None) -> Root | None:
        """The root of the table file ``table_name`` (read as a table of ``board``, default
        this build's): this build's root if it describes that file (or has no table yet),
        else the one its name says; None for a full table."""
        board = board or self.board
        t, rec = self.table, self.manifest.root_record()
        if rec is not None and (t is None or t.describes(table_name)):
            try:
                return Root.from_json(board, rec)
            except (ValueError, KeyError, TypeError, C4Error):
                pass
        return Root.from_filename(board, table_name)

    def table_path(self) -> Path | None:
        """The local table file of a finished build, if it is there."""
        if self.table is None or not self.store.local:
            return None
        p = Path(self.store.root) / self.table.file
        return p if p.is_file() else None

    def backward_shards(self, ply: int) -> list[ShardInfo] | None:
        """The shards of the finished backward step of ``ply``, or ``None``."""
        return self.manifest.shards("backward", ply)

    def key_bounds(self) -> tuple[int, int] | None:
        """Smallest and largest key of the whole table as the backward shards record them, when
        every ply's backward step is recorded (else ``None``)."""
        m = self.manifest
        plies = m.finished_plies("backward")
        if len(plies) != self.board.cells + 1:
            return None
        infos = [i for ply in plies for i in m.shards("backward", ply)]
        firsts = [i.first for i in infos if i.rows]
        lasts = [i.last for i in infos if i.rows]
        return (min(firsts), max(lasts)) if firsts else None

    # ------------------------------------------------------------ shards
    def has_backward_files(self, ply: int) -> bool:
        """Whether the finished backward step of ``ply`` still has all its shard files."""
        if self.manifest.shard_problem():
            return False
        infos = self.backward_shards(ply)
        return infos is not None and all(self.store.exists(i.file) for i in infos)

    def read_backward(self, ply: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(keys uint64, outcome bytes uint8)`` of each backward shard of ``ply``, in key
        order; each shard's xxh64 and row count are checked before it is yielded. A build
        directory of an older shard format is refused (:class:`BuildInputError`, one line)."""
        if self.manifest.shard_problem():
            raise BuildInputError(self.manifest.shard_problem())
        for info in self.backward_shards(ply) or []:
            keys, outs = read_shard(self.store, info, with_outcome=True)
            yield keys, np.asarray(outs, np.uint8)

    def generation(self, ply: int, stage: str = "backward") -> "pa.Table":
        """The entries of generation ``ply`` as one ``pyarrow.Table`` in key order, from the
        shards of its ``stage`` step: ``key`` (uint64) for ``"forward"``; ``key`` and
        ``outcome`` (the outcome byte of the table, :func:`c4table.decode_outcome` splits it)
        for ``"backward"``. Each shard is checked (xxh64, rows) before its rows are used.
        :class:`BuildInputError` (one line) if the step is not finished or the build kept no
        shards (``--clean``, ``--format c4z``)."""
        import pyarrow as pa
        from c4table.builddir.arrow import empty, shard_table
        tables = [shard_table(self.store, i, stage) for i in self._kept_shards(stage, ply)]
        return pa.concat_tables(tables) if tables else empty(stage)

    def shard_tables(self, stage: str = "backward", ply: int | None = None) -> Iterator["pa.Table"]:
        """Each non-empty shard of ``stage`` (of generation ``ply``, or of every finished
        generation, ply 0 first) as a ``pyarrow.Table`` (columns as :meth:`generation`), one
        shard in memory at a time."""
        from c4table.builddir.arrow import shard_table
        plies = [ply] if ply is not None else self._finished(stage)
        for p in plies:
            for info in self._kept_shards(stage, p):
                yield shard_table(self.store, info, stage)

    def _finished(self, stage: str) -> list[int]:
        if stage not in STAGES:
            raise BuildInputError(f"stage {stage!r}: give {' or '.join(STAGES)}")
        return self.manifest.finished_plies(stage)

    def _kept_shards(self, stage: str, ply: int) -> list[ShardInfo]:
        """The non-empty shards of the finished ``stage`` step of ``ply``, refused in one line
        when this version cannot read them or the build did not keep them."""
        self._finished(stage)
        if self.manifest.shard_problem():
            raise BuildInputError(self.manifest.shard_problem())
        infos = self.manifest.shards(stage, ply)
        if infos is None:
            raise BuildInputError(f"{self.path}: the {stage} step of ply {ply} is not finished")
        infos = [i for i in infos if i.rows]
        if infos and not self._has_work():
            raise BuildInputError(f"{self.store.display('work')}: this build kept no shards "
                                  "(built with --clean or --format c4z); rebuild it without "
                                  "--clean to read its generations")
        return infos

    def _has_work(self) -> bool:
        store = self.store
        return (Path(store.root) / "work").exists() if store.local else bool(store.list_files("work"))

    def shard_problems(self, limit: int = 10, steps=None) -> list[str]:
        """Shards listed in the manifest that are missing or whose xxh64 differs (at most
        ``limit``); none for a build cleaned with ``--clean`` (no ``work/`` left). ``steps``:
        only these ``(stage, ply)`` steps (default: every finished step)."""
        store = self.store
        if not self._has_work():
            return []
        if steps is None:
            steps = [(stage, ply) for stage in ("forward", "backward")
                     for ply in self.manifest.finished_plies(stage)]
        out = []
        for stage, ply in steps:
            for info in self.manifest.shards(stage, ply) or []:
                f = store.display(info.file)
                if not store.exists(info.file):
                    out.append(f"{f}: shard listed in the manifest is missing")
                else:
                    digest = stored_xxh64(store, info.file)
                    if digest != info.xxh64:
                        out.append(f"{f}: checksum {digest} does not match manifest "
                                   f"{info.xxh64} (damaged shard)")
                if len(out) >= limit:
                    return out
        return out
