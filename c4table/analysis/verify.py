"""Verifying a table file: one streaming read that hashes it (sha256, md5) and checks its
structure (whole entries, keys strictly increasing from the first, keys below ``B**w``, valid
outcome bytes), then compares it with every reference it can find: the manifest beside it
(and, in a build directory, the shards it lists), the known tables (``data/known_tables.json``)
and a hash given by the user. Which references apply when: ``docs/modules.md``
(``c4table.analysis.verify``).

>>> r = verify_table("tables/4x4/connect4_4x4.dat", quiet=True)
>>> r.ok, r.verdict()
(True, 'OK connect4_4x4.dat: 80,541 entries, ...sha256_tree matches known table 4x4 (published: ...)...')
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from c4table.builddir.reader import BuildDir
from c4table.c4z.format import is_c4z
from c4table.c4z.reader import RawStream, open_c4z
from c4table.errors import BuildError, MissingTableError, TableError
from c4table.game.board import Board
from c4table.game.root import root_of
from c4table.io.hashes import Hashes, sha256_of  # noqa
from c4table.io.treehash import FIELD
from c4table.io.storage import is_url, open_storage
from c4table.progress import Meter
from c4table.table.check import known_of_size
from c4table.table.known import known_tables, provenance  # noqa
from c4table.table.source import board_from, keys_of_rows
from c4table.table.sums import BlockSums, SumsProblem, SumsWriter, open_check

CHUNK_ENTRIES = 1 << 20


@dataclass
class VerifyReport:
    """Result of :func:`verify_table`: hashes, structural problems and comparisons."""

    path: Path
    board: Board
    entries: int = 0
    bytes: int = 0
    sha256: str = ""      # computed when asked or a reference has no tree hash ("": not)
    md5: str = ""
    sha256_tree: str = ""
    problems: list[str] = field(default_factory=list)   # anything wrong
    matched: list[str] = field(default_factory=list)    # references that agree
    sums: str = ""   # the block sums beside a .dat: "match", "absent", "written" or a problem

    @property
    def ok(self) -> bool:
        return not self.problems

    def verdict(self) -> str:
        name = self.path.name
        if self.problems:
            more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
            return f"MISMATCH {name}: {self.problems[0]}{more}"
        refs = "; ".join(self.matched) if self.matched else \
            "structure valid, but no reference hash is known for this board (give --sha256)"
        return f"OK {name}: {self.entries:,} entries, {refs}"


def verify_table(path: str | Path, board: str | Board | None = None, sha256: str | None = None,
                 quiet: bool = False, stream=None, shards: bool = True,
                 write_sums: bool = False, file_hashes: bool = False) -> VerifyReport:
    """Hash and check a table file (a path, or a ``pyarrow.fs`` URI such as
    ``s3://bucket/c4/connect4_6x4.dat``; a ``.c4z`` also over ``https://``); see the module
    docstring. ``shards=False`` skips the build directory's shards. A ``.dat``'s block sums
    (:mod:`c4table.table.sums`) are computed in the same pass and compared with its sidecar;
    ``write_sums`` writes the sidecar when the table passes every other check. Both happen
    block by block as the table streams past (:class:`_Sidecar`): memory for the sums does not
    grow with the table. The table's tree hash (``sha256_tree``) is computed always, its
    pieces on threads as the table streams past; its whole-file sha256 and md5 with
    ``file_hashes``, or when ``sha256`` is given or a reference records a sha256 but no tree
    hash (Cadot's 7x6, a manifest or ``.c4z`` header of an older build)."""
    if is_c4z(path):   # a .c4z: its decompressed bytes are checked like a .dat's
        return _verify_c4z(path, board, sha256, quiet, stream, shards, file_hashes)
    store, name = _locate(path)
    path = Path(path) if store.local else _Remote(store.display(name))
    if not store.exists(name):
        raise MissingTableError(f"{path}: no such table file")
    build, build_problem = _build_beside(store, name)
    # a renamed file: a known table of its size says which board to try
    size = store.size(name)
    b = board_from(name, build, board, where=str(path), size=size)
    with _Sidecar(store, name, size, b.entry_size, write_sums) as sums:
        return _verify_stream(path, b, store, name, None, build, build_problem, sha256, quiet,
                              stream, shards, sums, file_hashes)


def _build_beside(store, name: str):
    """``(build, problem)``: the checked :class:`~c4table.builddir.BuildDir` beside table
    ``name`` of ``store`` (None if there is none), or None and the one-line reason a damaged
    manifest there was refused (reported; the table itself is still verified)."""
    try:
        return BuildDir.beside(name, store), None
    except BuildError as e:
        return None, str(e)


def _verify_c4z(path, board, sha256, quiet, stream, shards, file_hashes) -> VerifyReport:
    """:func:`verify_table` of a ``.c4z`` (path or URI): the stream of its blocks, decoded,
    and its header's hashes (those of the original file) against the computed ones; the
    build directory beside it, if any, as for the ``.dat`` it was made from."""
    s = str(path)
    with open_c4z(s) as z:
        b = z.board
        if board is not None and Board.parse(board) != b:
            raise TableError(f"{s}: the table is for board {b}, not {Board.parse(board)}")
        store = name = build = build_problem = None
        if not s.startswith(("http://", "https://")):   # a web server has no build beside it
            store, _ = _locate(s)
            name = z.header["file"]
            build, build_problem = _build_beside(store, name)
        shown = _Remote(s) if is_url(s) else Path(s)
        return _verify_stream(shown, b, store, name, z, build, build_problem, sha256, quiet,
                              stream, shards, None, file_hashes)


def _verify_stream(path, b: Board, store, name, z, build, build_problem, sha256, quiet, stream,
                   shards, sums: "_Sidecar | None" = None,
                   file_hashes: bool = False) -> VerifyReport:
    """The streaming checks of :func:`verify_table` over the ``.dat`` ``name`` of ``store``
    (``z`` None; ``sums``: its block sums) or the decoded blocks of the open ``.c4z`` ``z``,
    then the comparisons with the checked ``build`` beside it, the known tables and
    ``sha256``."""
    rep = VerifyReport(path, b)
    origin = (build.root_of(name, b) if build is not None else root_of(b, name, None)) \
        if name else None
    first_key = origin.key if origin is not None else 0
    E, K = b.entry_size, b.key_bytes
    size = z.header["raw_bytes"] if z is not None else sums.table_bytes
    rep.bytes = size
    if size == 0:
        rep.problems.append("empty file")
    if size % E:
        rep.problems.append(f"size {size:,} is not a multiple of the {E}-byte entry (truncated?)")
    rep.entries = size // E
    stream = stream or sys.stderr
    mine = build if build is not None and build.describes(name) else None
    refs = [z.header if z is not None else None, mine.table.figures()
            if mine is not None and mine.table is not None else None,
            known_tables().get(b.name) if origin is None else None]
    whole = file_hashes or bool(sha256) or any(
        r and "sha256" in r and FIELD not in r for r in refs)
    hashes = Hashes(md5=whole, sha256=whole,   # a .c4z checks its own blocks
                    sums=sums.blocks if sums is not None else None)
    prev = -1
    limit = b.key_limit
    seen = 0
    meter = Meter("verify", size, "bytes", quiet, stream)
    first_problem = {"order": None, "range": None, "outcome": None}
    with RawStream(z) if z is not None else store.open_input_stream(name) as f:
        while True:
            chunk = f.read(CHUNK_ENTRIES * E)
            if not chunk:
                break
            hashes.update(chunk)
            n = len(chunk) // E
            if n:
                rows = np.frombuffer(chunk, np.uint8, count=n * E).reshape(n, E)
                keys = keys_of_rows(rows, K)
                outs = rows[:, K]
                if seen == 0 and int(keys[0]) != first_key:
                    what = f"the root {origin}'s key" if origin is not None else "the empty board"
                    rep.problems.append(f"first key is {int(keys[0])}, not {first_key} ({what})")
                if first_problem["order"] is None:
                    bad = np.flatnonzero(keys[1:] <= keys[:-1])
                    if int(keys[0]) <= prev and seen:
                        first_problem["order"] = seen
                    elif bad.size:
                        first_problem["order"] = seen + int(bad[0]) + 1
                if first_problem["range"] is None and int(keys.max()) >= limit:
                    first_problem["range"] = seen + int(np.flatnonzero(keys >= np.uint64(limit))[0])
                if first_problem["outcome"] is None:
                    badout = np.flatnonzero(((outs & 0xC0) == 0xC0) | ((outs & 0x3F) > b.cells))
                    if badout.size:
                        first_problem["outcome"] = seen + int(badout[0])
                prev = int(keys[-1])
                seen += n
            meter.update(seen * E)
    if first_problem["order"] is not None:
        rep.problems.append(f"entry {first_problem['order']:,}: key not greater than the previous one "
                            "(unsorted or duplicate)")
    if first_problem["range"] is not None:
        rep.problems.append(f"entry {first_problem['range']:,}: key out of range for board {b}")
    if first_problem["outcome"] is not None:
        rep.problems.append(f"entry {first_problem['outcome']:,}: invalid outcome byte")
    digests = hashes.result()
    rep.sha256, rep.md5, rep.sha256_tree = (digests.get(k, "") for k in ("sha256", "md5", FIELD))
    if z is not None:
        diffs = [f"{k} {digests[k]} != {z.header[k]}" for k in (FIELD, "sha256", "md5")
                 if k in digests and z.header.get(k, digests[k]) != digests[k]]
        # (a build's .c4z: no md5, and a sha256 only when asked)
        if diffs:
            rep.problems.append("the .c4z header records other hashes: " + ", ".join(diffs))
    if build_problem:
        rep.problems.append(build_problem)
    _compare(rep, mine, b, sha256, rooted=origin is not None)
    if shards and mine is not None:
        rep.problems.extend(mine.shard_problems())
    if sums is not None:
        sums.conclude(rep)
    return rep


class _Sidecar:
    """The block sums of a ``.dat`` as :func:`verify_table` streams it (:attr:`blocks`, fed with
    its bytes): checked against its sidecar and, with ``write``, written to a new one, block by
    block; :meth:`conclude` says how they compare (or writes the sidecar). Leaving the ``with``
    block closes the sidecar and drops an unwritten new one."""

    def __init__(self, store, name: str, table_bytes: int, entry_size: int, write: bool):
        self.table_bytes = table_bytes
        self.problem: str | None = None          # found on opening it: "absent" or the reason
        try:
            self.check = open_check(store, name, table_bytes, entry_size, stop=False)
        except SumsProblem as e:
            self.check, self.problem = None, e.reason
        if self.check is None and self.problem is None:
            self.problem = "absent"
        self.writer = SumsWriter(store, name) if write else None
        sinks = [s.take for s in (self.check, self.writer) if s is not None]
        self.blocks = BlockSums(entry_size, sink=sinks[0] if len(sinks) == 1 else
                                lambda batch: [take(batch) for take in sinks]) if sinks else None

    def conclude(self, rep: VerifyReport) -> None:
        """Compare the sidecar with the sums just computed (a disagreement is a problem), or
        write the new one when the table passed every other check and the old one does not
        match it."""
        if self.blocks is not None:
            self.blocks.finish()
        problem = self.check.finish() if self.check is not None else self.problem
        if self.writer is not None and not rep.problems:
            if problem is not None:
                self.writer.commit(self.blocks)
                rep.sums = "written"
            else:
                rep.sums = "match"
            return
        rep.sums = "match" if problem is None else problem
        if problem not in (None, "absent"):
            rep.problems.append(f"block sums: {problem}")

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        if self.check is not None:
            self.check.close()
        if self.writer is not None:
            self.writer.abort()


class _Remote(str):
    """A table's URI, with the ``name`` a report shows."""

    @property
    def name(self) -> str:
        return self.rpartition("/")[2]


def _locate(path):
    """The storage of a table's directory and the table's file name (path or URI)."""
    s = str(path)
    if is_url(s):
        d, _, name = s.rstrip("/").rpartition("/")
        return open_storage(d), name
    p = Path(path).absolute()
    return open_storage(p.parent), p.name


def _compare(rep: VerifyReport, build, b: Board, sha256: str | None, rooted: bool = False) -> None:
    """Compare the report with the given hash, the checked manifest ``build`` of the file (or
    ``None``) and the known tables (not for a rooted table: they are full ones), by board and
    by size and hash (a renamed known table is named). Each reference is compared on every
    hash both it and the report have (:func:`verify_table` computes what each needs)."""
    def check(label: str, ref: dict) -> None:
        diffs, same = [], []
        for fld, mine in (("entries", rep.entries), ("bytes", rep.bytes), (FIELD, rep.sha256_tree),
                          ("sha256", rep.sha256), ("md5", rep.md5)):
            if fld in ref and mine != "":
                (same if ref[fld] == mine else diffs).append(f"{fld} {mine} != {ref[fld]}")
        hashed = [f for f in (FIELD, "sha256", "md5") if f in ref and getattr(rep, f)]
        if diffs:
            rep.problems.append(f"{label}: " + ", ".join(diffs))
        elif not hashed:
            rep.problems.append(f"{label}: records no hash that was computed")
        else:
            rep.matched.append(f"{' and '.join(h for h in hashed if h != 'md5')} "
                               f"{'matches' if len(hashed) == 1 else 'match'} {label}")

    if sha256:
        check("the given --sha256", {"sha256": sha256.strip().lower()})
    plies = None
    if build is not None and build.table is not None:
        check("manifest.json", build.table.figures())
        plies = build.plies
    ref = known_tables().get(b.name) if not rooted else None
    if ref:
        published = ref.get("provenance") != "built"
        tree = ""
        if FIELD in ref and "tree_provenance" in ref and rep.sha256_tree and not rep.sha256:
            # matched by the tree hash alone: say where that hash comes from, not the file's
            tree = f"; its {FIELD} {provenance(ref['tree_provenance'])}"
            if published:
                tree += " from the file of that sha256"
        if not published:   # a regression check, not a second opinion
            check(f"known table {b.name} (our own earlier build, {provenance(ref)}{tree}; no "
                  "published hash to compare with: this shows only that c4table still builds "
                  "the same file)", ref)
        else:
            check(f"known table {b.name} ({provenance(ref)}{tree})", ref)
        if plies is not None and "plies" in ref:
            _compare_plies(rep, build.path, plies, ref)
    for other in known_of_size(rep.bytes, rep.sha256 or None, rep.sha256_tree or None):
        if other != b.name:
            rep.problems.append(f"this file is known table {other} (size and hash match), read "
                                f"as board {b.name}: renamed? give --board {other}")


def _compare_plies(rep: VerifyReport, manifest: str, plies: list, ref: dict) -> None:
    """Per-ply counts of the manifest against those recorded for the known table."""
    fields = ref["ply_fields"]
    if len(plies) != len(ref["plies"]):
        rep.problems.append(f"{manifest}: {len(plies)} plies, the known table has {len(ref['plies'])}")
        return
    for rec, known in zip(plies, ref["plies"]):
        for fld, value in zip(fields, known):
            if rec.count(fld) != value:
                rep.problems.append(f"{manifest}: ply {rec.ply} {fld} {rec.count(fld)} != "
                                    f"known {value}")
                return
    rep.matched.append("per-ply counts match the known table")
