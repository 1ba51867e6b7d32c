"""The typed records of a build manifest: a ply's counts (:class:`PlyRecord`), a finished
step (:class:`StepRecord`, with its pre-merge :class:`Premerged`) and the finished table
(:class:`TableRecord`). :class:`~c4table.builddir.manifest.Manifest` hands these out and
takes them back; each reads and writes its own part of ``manifest.json`` (``from_json`` /
``to_json``), keeping fields it does not know, so a manifest is written back in the shape it
was read.

>>> rec = TableRecord.from_json({"file": "t.dat", "entries": 1, "bytes": 3, "sha256": "ab"})
>>> rec.format.name, rec.container, rec.to_json()["bytes"]
('dat', None, 3)
>>> PlyRecord.from_json({"ply": 2, "entries": 3, "positions": 5}).forward_counted
True
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from c4table.builddir import tableformat
from c4table.builddir.shards import ShardInfo
from c4table.builddir.tableformat import TableFormat
from c4table.io.treehash import FIELD as TREE

# The count fields of a ply's record, in the order a build writes them (docs/modules.md).
FORWARD_FIELDS = ("entries", "symmetric", "positions", "terminal_entries", "terminal")
BACKWARD_FIELDS = ("draws_entries", "draws", "a_wins_entries", "a_wins", "b_wins_entries", "b_wins")


@dataclass(frozen=True)
class PlyRecord:
    """The counts a build recorded for one ply (None: not counted yet). ``positions`` count
    mirror images apart (as Böck's tables do); ``*_entries`` count table entries."""

    ply: int
    entries: int | None = None
    symmetric: int | None = None
    positions: int | None = None
    terminal_entries: int | None = None
    terminal: int | None = None
    draws_entries: int | None = None
    draws: int | None = None
    a_wins_entries: int | None = None
    a_wins: int | None = None
    b_wins_entries: int | None = None
    b_wins: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def forward_counted(self) -> bool:
        """Whether the forward pass counted this ply (its entries are known)."""
        return self.entries is not None

    @property
    def solved(self) -> bool:
        """Whether the backward pass counted this ply's outcomes."""
        return None not in (self.a_wins, self.draws, self.b_wins)

    def count(self, name: str) -> int | None:
        """The count called ``name`` (a field of the record as ``manifest.json`` names it)."""
        if name in _PLY_FIELDS:
            return getattr(self, name)
        return self.extra.get(name)

    @classmethod
    def from_json(cls, d: dict) -> "PlyRecord":
        known = {k: v for k, v in d.items() if k in _PLY_FIELDS}
        return cls(**known, extra={k: v for k, v in d.items() if k not in _PLY_FIELDS})

    def to_json(self) -> dict:
        out = {"ply": self.ply}
        out.update((k, getattr(self, k)) for k in FORWARD_FIELDS + BACKWARD_FIELDS
                   if getattr(self, k) is not None)
        out.update(self.extra)
        return out


_PLY_FIELDS = frozenset(f.name for f in fields(PlyRecord)) - {"extra"}


@dataclass(frozen=True)
class Premerged:
    """The pieces a pre-merge cut a step's message runs into, for the key ``ranges`` of the
    generation that reads them (records of :mod:`c4table.pipeline.sort.extsort` runs)."""

    ranges: tuple[tuple[int, int], ...]
    pieces: list

    @classmethod
    def of(cls, ranges, pieces: list) -> "Premerged":
        """The pre-merge of ``pieces`` for the key ``ranges`` (``(start, stop)`` pairs)."""
        return cls(tuple(tuple(int(x) for x in r) for r in ranges), list(pieces))

    def matches(self, ranges) -> bool:
        """Whether these pieces were cut for ``ranges``."""
        return self.ranges == tuple(tuple(r) for r in ranges)

    @classmethod
    def from_json(cls, d: dict) -> "Premerged":
        return cls(tuple(tuple(r) for r in d.get("ranges", ())), list(d.get("pieces", [])))

    def to_json(self) -> dict:
        return {"ranges": [list(r) for r in self.ranges], "pieces": self.pieces}


@dataclass(frozen=True)
class StepRecord:
    """A finished step of a stage: its shards, and what the stage added to it: the keys its
    runs held (``run_keys``, forward), the message runs it sent (``messages``, backward) and
    their pre-merge (``premerged``). Message runs are the sort's run records, kept as it wrote
    them; ``mirrored_only``: they hold only the messages to parents reached through the mirror
    (a pulling backward pass's, :func:`c4table.pipeline.kernels.cpu.pull_resolve`), not one
    per parent. Change one with :meth:`Manifest.update_step` (steps are not changed in place)."""

    shards: tuple[ShardInfo, ...]
    run_keys: int | None = None
    messages: list | None = None
    premerged: Premerged | None = None
    mirrored_only: bool = False
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def rows(self) -> int:
        """The entries of the step's shards."""
        return sum(s.rows for s in self.shards)

    def nonempty(self) -> list[ShardInfo]:
        """The shards holding entries (an empty shard is recorded but never read)."""
        return [s for s in self.shards if s.rows]

    def replace(self, **changes) -> "StepRecord":
        """This record with ``changes`` (e.g. ``premerged=None``)."""
        return replace(self, **changes)

    @classmethod
    def from_json(cls, d: dict) -> "StepRecord":
        pm = d.get("premerged")
        return cls(tuple(ShardInfo.from_json(s) for s in d["shards"]), d.get("run_keys"),
                   d.get("messages"), Premerged.from_json(pm) if isinstance(pm, dict) else None,
                   d.get("mirrored_only") is True,
                   {k: v for k, v in d.items() if k not in _STEP_FIELDS})

    def to_json(self) -> dict:
        out: dict = {"shards": [s.to_json() for s in self.shards]}
        if self.run_keys is not None:
            out["run_keys"] = self.run_keys
        if self.messages is not None:
            out["messages"] = self.messages
            if self.mirrored_only:
                out["mirrored_only"] = True
        out.update(self.extra)
        if self.premerged is not None:
            out["premerged"] = self.premerged.to_json()
        return out


_STEP_FIELDS = frozenset({"shards", "run_keys", "messages", "premerged", "mirrored_only"})


@dataclass(frozen=True)
class FileRecord:
    """A file the manifest records with its size and hashes (a ``.c4z`` table's own file): its
    tree hash (:mod:`c4table.io.treehash`) and/or its sha256 (at least one)."""

    file: str
    bytes: int
    sha256: str | None = None
    sha256_tree: str | None = None

    @classmethod
    def from_json(cls, d: dict) -> "FileRecord":
        return cls(d["file"], d["bytes"], d.get("sha256"), d.get(TREE))

    def to_json(self) -> dict:
        return {"file": self.file, "bytes": self.bytes,
                **({TREE: self.sha256_tree} if self.sha256_tree else {}),
                **({"sha256": self.sha256} if self.sha256 else {})}


@dataclass(frozen=True)
class TableRecord:
    """A finished table: the raw table's file name, entries, bytes and hashes (of the raw
    bytes, whatever the file on disk holds: its tree hash ``sha256_tree``, the table's
    identity, :mod:`c4table.io.treehash`; its whole-file ``sha256`` and ``md5`` when the build
    computed them; at least one of the two sha256s), its format and, for a non-raw format, the
    record of the format's own file (``container``)."""

    file: str
    entries: int
    bytes: int
    sha256: str | None = None
    md5: str | None = None
    format: TableFormat = tableformat.DAT
    container: FileRecord | None = None
    sha256_tree: str | None = None

    def figures(self) -> dict:
        """The figures a table file is checked against: ``entries``, ``bytes``, ``sha256_tree``,
        ``sha256`` and ``md5`` (those recorded), as a known table of ``known_tables.json``
        names them."""
        return {"entries": self.entries, "bytes": self.bytes,
                **({TREE: self.sha256_tree} if self.sha256_tree else {}),
                **({"sha256": self.sha256} if self.sha256 else {}),
                **({"md5": self.md5} if self.md5 else {})}

    @property
    def identity(self) -> str:
        """What a report names the table by: ``sha256_tree HEX`` (``sha256 HEX`` for a
        record without a tree hash)."""
        return f"{TREE} {self.sha256_tree}" if self.sha256_tree else f"sha256 {self.sha256}"

    def describes(self, name: str) -> bool:
        """Whether this is the record of the table file called ``name`` (its raw file)."""
        return self.file == name

    @classmethod
    def of(cls, fmt: TableFormat, file: str, entries: int, hashes: dict,
           container: FileRecord | None = None) -> "TableRecord":
        """The record of a table of ``fmt`` just written: ``hashes`` of its raw bytes
        (``bytes`` and those computed of ``sha256_tree``, ``sha256``, ``md5``), ``container``:
        a non-raw format's file.

        >>> TableRecord.of(tableformat.C4Z, "t.dat", 1, {"bytes": 3, "sha256_tree": "ab"},
        ...                FileRecord("t.c4z", 2, "cd")).to_json()["c4z"]["file"]
        't.c4z'
        """
        return cls(file, entries, hashes["bytes"], hashes.get("sha256"), hashes.get("md5"), fmt,
                   None if fmt.raw else container, hashes.get(TREE))

    @classmethod
    def from_json(cls, d: dict) -> "TableRecord":
        """The record as ``manifest.json`` holds it; one without ``format`` is a raw table, as
        every build before ``.c4z`` builds wrote it."""
        fmt = tableformat.get(d.get("format", tableformat.DAT.name))
        box = None if fmt.raw else d.get(fmt.name)
        return cls(d["file"], d["entries"], d["bytes"], d.get("sha256"), d.get("md5"), fmt,
                   FileRecord.from_json(box) if box else None, d.get(TREE))

    def to_json(self) -> dict:
        out = {"file": self.file, "entries": self.entries, "bytes": self.bytes,
               **({TREE: self.sha256_tree} if self.sha256_tree else {}),
               **({"sha256": self.sha256} if self.sha256 else {}),
               **({"md5": self.md5} if self.md5 else {})}
        if not self.format.raw:
            out["format"] = self.format.name
            out[self.format.name] = self.container.to_json() if self.container else {}
        return out
