"""The build manifest (``DIR/manifest.json``): which steps of a build are finished, with the
shards and counts each produced, and, once merged, the final table's size and hashes.

Design notes: ``docs/modules.md`` (``c4table.builddir.manifest``).
"""
from __future__ import annotations

import json
from concurrent.futures import Future
from dataclasses import replace
from pathlib import PurePosixPath

import xxhash

from c4table.game.board import Board
from c4table.errors import BoardError, BuildInputError, C4Error, CorruptDataError
from c4table.io.counting import IOCounts, active, counting
from c4table.builddir.tableformat import DAT, FORMATS
from c4table.builddir.records import PlyRecord, StepRecord, TableRecord
from c4table.builddir.shards import ShardInfo
from c4table.io.storage import Storage, open_storage
from c4table.io.files import background
from c4table.game.root import Root

# Format 2: shards of :mod:`~c4table.builddir.shards`. Format 1 (the same records; parquet
# shards, which this version does not read) still loads, so that its finished table keeps its
# checks; a build refuses to resume it and readers do not read its shards
# (:meth:`Manifest.shard_problem`).
FORMAT = "c4table-manifest/2"
OLD_FORMATS = {"c4table-manifest/1": "parquet shards"}
MANIFEST = "manifest.json"
# A stage saves its finished steps once they hold this many entries (:meth:`Manifest.checkpoint`),
# a few tenths of a second of one core's work (100-300 ns per entry and stage): each save makes
# the steps' shards durable (one batch of fsyncs) and then writes the manifest (two fsyncs, or
# one object written), which costs more than the steps of a small generation, so the small
# generations of a build are saved together (a 5x4 build saves once per stage; a large
# generation is saved on its own). A crash loses at most this much recorded work (the unsaved
# steps are redone on resume). Counted in entries, not seconds, so that the same build saves
# the same manifests wherever it runs.
CHECKPOINT_ENTRIES = 1 << 21


class NotJSONError(CorruptDataError):
    """A manifest file that is not JSON text (damaged, or not a manifest at all)."""


def _uncounted(fn, *args):
    """``fn(*args)`` with its requests counted apart (the caller counted them already)."""
    with counting(IOCounts()):
        return fn(*args)


def _storage(root) -> Storage:
    return root if isinstance(root, Storage) else open_storage(root)


STAGES = ("forward", "backward")


class Manifest:
    """In-memory manifest of one build directory (a path, a URI or a
    :class:`~c4table.io.storage.Storage`); :meth:`save` writes it atomically. It hands out
    typed records (:mod:`~c4table.builddir.records`) and takes changes through its methods;
    ``data`` (a checked manifest's JSON object) never leaves it."""

    def __init__(self, root, data: dict):
        self.store = _storage(root)
        self._head = data   # the fields of the header (and the order of every field)
        self._plies = [PlyRecord.from_json(r) for r in data["plies"]]
        # stage -> ply -> (record, its JSON): a step read is written back as it was read
        self._steps: dict[str, dict[int, tuple[StepRecord, dict]]] = {
            stage: {int(p): (StepRecord.from_json(rec), rec) for p, rec in data["steps"][stage].items()}
            for stage in STAGES}
        self._table = TableRecord.from_json(data["table"]) if data.get("table") else None
        self._unsaved = 0       # entries of the steps recorded since the last save
        self._dirty = False
        self._unsynced: set[str] = set()   # files of the steps recorded since the last save
        self._pending: list[tuple[Future, set[str]]] = []   # background saves, their files

    # ----------------------------------------------------------- creating
    @classmethod
    def load(cls, root, name: str = MANIFEST, require_checksum: bool = False) -> "Manifest":
        """Read and check the manifest ``name`` of ``root``: :class:`BuildInputError` if it is
        missing, :class:`CorruptDataError` (one line naming the file) if it is not valid JSON,
        not a manifest object, fails its own checksum (or has none, with
        ``require_checksum``) or has a broken layout."""
        store = _storage(root)
        path = store.display(name)
        try:
            data = json.loads(store.read_bytes(name).decode())
        except FileNotFoundError:
            raise BuildInputError(f"{path}: no manifest (has this directory been built?)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise NotJSONError(f"{path}: manifest is not valid JSON ({e})") from None
        if not isinstance(data, dict):
            raise CorruptDataError(f"{path}: not a manifest (a JSON object is expected, found "
                                   f"{type(data).__name__})")
        if data.get("format") != FORMAT and data.get("format") not in OLD_FORMATS:
            raise CorruptDataError(f"{path}: unknown manifest format {data.get('format')!r}")
        recorded = data.pop("xxh64", None)
        if recorded is None and require_checksum:
            raise CorruptDataError(f"{path}: the manifest has no checksum (\"xxh64\"): damaged "
                                   "or edited by hand")
        if recorded is not None and recorded != checksum(data):
            raise CorruptDataError(f"{path}: contents do not match the manifest's own checksum "
                                   "(damaged or edited by hand); rerun with --restart to start over")
        problem = structure_problem(data)
        if problem:
            raise CorruptDataError(f"{path}: damaged manifest: {problem}; rerun with --restart to "
                                   "start over")
        return cls(store, data)

    def shard_problem(self) -> str | None:
        """Why this version cannot read the build's shards (a manifest of an older format, one
        line naming it), or ``None``."""
        fmt = self._head.get("format")
        if fmt == FORMAT:
            return None
        return (f"{self.store.display(MANIFEST)}: a build directory of manifest format {fmt} "
                f"({OLD_FORMATS.get(fmt, 'unknown shards')}, an older c4table), whose shards this "
                f"version ({FORMAT}) does not read")

    @classmethod
    def open_or_create(cls, root, board: Board, origin=None) -> "Manifest":
        """Load the manifest of ``root`` (checking it is for ``board`` and, if ``origin`` (a
        :class:`c4table.game.root.Root`) is given, for that root) or start a new one."""
        store = _storage(root)
        if store.exists(MANIFEST):
            m = cls.load(store)
            if m.shard_problem():
                raise BuildInputError(f"{m.shard_problem()}; rerun with --restart to rebuild it")
            if m.board != board:
                raise BuildInputError(f"{store.display()}: holds a build of board {m.board.name}, "
                                      f"not {board} (use another --out or --restart)")
            mine = m.origin()
            if origin is not None and (mine is None or mine.key != origin.key):
                held = f"a build rooted at {mine}" if mine is not None else "a full build"
                raise BuildInputError(f"{store.display()}: holds {held}, not one rooted at {origin} "
                                      "(use another --out or --restart)")
            return m
        data = {"format": FORMAT, "board": board.name, "width": board.width, "height": board.height,
                "k": board.k, **board.json_fields(),
                "key_bytes": board.key_bytes, "entry_size": board.entry_size,
                **({"root": origin.to_json()} if origin is not None else {}),
                "plies": [], "steps": {"forward": {}, "backward": {}}}
        return cls(store, data)

    def save(self) -> None:
        """Write the manifest atomically and durably, after making durable the shard files
        of the steps recorded since the last save (:meth:`Storage.sync`: tasks write shards
        without fsync, so a saved manifest never records a file a crash could lose). Waits
        for the saves :meth:`checkpoint` started first, and raises their error if any."""
        self.wait()
        self._write(*self._snapshot())

    def _snapshot(self) -> tuple[bytes, set[str]]:
        """The manifest's text as of now and the files to make durable before it."""
        data = dict(self._head)
        data.pop("xxh64", None)
        data["plies"] = [r.to_json() for r in self._plies]
        data["steps"] = {stage: {str(p): js for p, (_, js) in self._steps[stage].items()}
                         for stage in STAGES}
        if self._table is not None:
            data["table"] = self._table.to_json()
        data["xxh64"] = checksum(data)
        files, self._unsynced = self._unsynced, set()
        self._unsaved = 0
        self._dirty = False
        return (json.dumps(data, indent=1) + "\n").encode(), files

    def _write(self, body: bytes, files: set[str]) -> None:
        self.store.sync(files)
        self.store.write_atomic(MANIFEST, body)

    def checkpoint(self, entries: int) -> None:
        """Record a finished step of ``entries`` entries: save once the unsaved steps hold
        :data:`CHECKPOINT_ENTRIES`, else only note them (:meth:`flush` saves them). The save
        runs in a background thread (one per process, saves in order) while the build goes on:
        its fsyncs wait for the disk, not the workers. Until it is written the previous
        manifest stands, so a crash redoes the steps it records, as for the steps not yet
        saved. Its error, if any, is raised by the next checkpoint, save or flush. Counted
        (one object written) here, so that a stage's counts do not depend on timing."""
        self._unsaved += entries
        self._dirty = True
        if self._unsaved >= CHECKPOINT_ENTRIES:
            self.save_soon()

    def save_soon(self) -> None:
        """Save the manifest as it is now in the background thread (as :meth:`checkpoint`
        does once enough entries are unsaved): the caller goes on while the shards are made
        durable and the manifest written. E.g. the first generation's record, saved while the
        driver loads the compiled kernels. Its error, if any, is raised by the next
        checkpoint, save or flush."""
        self._raise_failed()
        body, files = self._snapshot()
        active().add_write(len(body))
        self._pending.append((background("manifest").submit(_uncounted, self._write, body, files), files))

    def _raise_failed(self) -> None:
        """Raise the error of a finished background save, if one failed."""
        if any(f.done() and f.exception() is not None for f, _ in self._pending):
            self.wait()

    def wait(self) -> None:
        """Wait for the background saves, in order; raise the first error one of them met
        (its steps and files are then due again: the next save writes them). Interrupted
        while waiting, the saves not finished stay pending (never two writers at once)."""
        while self._pending:
            f, files = self._pending[0]
            try:
                f.result()
            finally:
                if f.done():
                    self._pending.pop(0)
                    if f.exception() is not None:
                        self._unsynced |= files
                        self._dirty = True

    def flush(self) -> None:
        """Save the steps :meth:`checkpoint` has not saved yet, if any (waiting for the
        background saves either way)."""
        if self._dirty:
            self.save()
        else:
            self.wait()

    # ------------------------------------------------------------ queries
    @property
    def board(self) -> Board:
        return board_of(self._head)

    def origin(self):
        """The :class:`c4table.game.root.Root` of a rooted build, or None for a full build."""
        rec = self._head.get("root")
        if rec is None:
            return None
        return Root.from_json(self.board, rec)

    def root_record(self) -> dict | None:
        """The ``"root"`` record of a rooted build as stored (moves, ply, key), or None for a
        full build: what a ``.c4z`` header copies, byte for byte."""
        rec = self._head.get("root")
        return dict(rec) if isinstance(rec, dict) else None

    def step(self, stage: str, ply: int) -> StepRecord | None:
        """The record of a finished step, or None if the step is not finished."""
        got = self._steps[stage].get(ply)
        return None if got is None else got[0]

    def finished_plies(self, stage: str) -> list[int]:
        """The plies whose ``stage`` step is finished, in increasing order."""
        return sorted(self._steps[stage])

    def resuming(self) -> bool:
        """True if any step is recorded (a run continues a build)."""
        return any(self._steps[stage] for stage in STAGES)

    def shards(self, stage: str, ply: int) -> list[ShardInfo] | None:
        """Shards of a finished step, or None if the step is not finished."""
        step = self.step(stage, ply)
        return None if step is None else list(step.shards)

    # ------------------------------------------------------------ changes
    def finish_step(self, stage: str, ply: int, shards: list[ShardInfo], *,
                    run_keys: int | None = None, messages: list | None = None,
                    mirrored_only: bool = False) -> None:
        """Record a finished step and its shards (made durable when the manifest is saved),
        with what its stage adds: the keys of its runs (forward), the message runs it sent
        and whether they are the mirrored ones only (backward, :class:`StepRecord`)."""
        self._put(stage, ply, StepRecord(tuple(shards), run_keys, messages, None, mirrored_only))
        self._unsynced.update(s.file for s in shards)

    def update_step(self, stage: str, ply: int, **changes) -> StepRecord:
        """Change fields of a finished step (:class:`StepRecord`'s, e.g. ``messages`` sent
        again, ``premerged=None``); saved by the next :meth:`save`. Returns the new record."""
        rec = self.step(stage, ply)
        if rec is None:
            raise KeyError(f"no finished {stage} step of ply {ply}")
        rec = rec.replace(**changes)
        self._put(stage, ply, rec)
        self._dirty = True
        return rec

    def _put(self, stage: str, ply: int, rec: StepRecord) -> None:
        self._steps[stage][ply] = (rec, rec.to_json())

    def forget_step(self, stage: str, ply: int) -> None:
        rec = self._steps[stage].pop(ply, None)
        for s in rec[0].shards if rec is not None else ():
            self._unsynced.discard(s.file)

    @property
    def plies(self) -> list[PlyRecord]:
        """The per-ply count records, ply 0 first (fields in docs/modules.md)."""
        return list(self._plies)

    def ply_counts(self, ply: int) -> PlyRecord:
        """The counts recorded for ``ply`` (none counted yet: a record of ``None`` counts)."""
        return self._plies[ply] if ply < len(self._plies) else PlyRecord(ply)

    def entries(self, ply: int) -> int:
        """Table entries of generation ``ply`` (its forward step must be recorded)."""
        return self._plies[ply].entries

    def total(self, field: str, plies=None) -> int:
        """The sum of a count over ``plies`` (default: every recorded ply)."""
        recs = self._plies if plies is None else [self._plies[p] for p in plies]
        return sum(r.count(field) for r in recs)

    def set_counts(self, ply: int, **counts) -> None:
        """Record counts of ``ply`` by name (fields of :class:`PlyRecord`); the stages record
        theirs with :meth:`set_forward_counts` and :meth:`set_backward_counts`."""
        while len(self._plies) <= ply:
            self._plies.append(PlyRecord(len(self._plies)))
        self._plies[ply] = replace(self._plies[ply], **counts)

    def set_forward_counts(self, ply: int, entries: int, symmetric: int, terminal: int,
                           terminal_symmetric: int) -> None:
        self.set_counts(ply, entries=entries, positions=2 * entries - symmetric,
                         terminal_entries=terminal, terminal=2 * terminal - terminal_symmetric,
                         # 3D: the kernels count 2 - images per entry, not a count
                         symmetric=None if "grid" in self._head else symmetric)

    def set_backward_counts(self, ply: int, stats) -> None:
        """``stats``: [draws, draws symmetric, A wins, A sym, B wins, B sym] in entries."""
        counts = {}
        for i, name in enumerate(("draws", "a_wins", "b_wins")):
            n, s = int(stats[2 * i]), int(stats[2 * i + 1])
            counts[name + "_entries"] = n
            counts[name] = 2 * n - s
        self.set_counts(ply, **counts)

    @property
    def table(self) -> TableRecord | None:
        """The finished table's record, or None."""
        return self._table

    def record_table(self, table: TableRecord) -> None:
        """Record the finished table and the board's totals (saved by the next :meth:`save`)."""
        self._table = table
        keys = ("entries", "positions", "terminal", "a_wins", "draws", "b_wins")
        self._head["table"] = None   # its place in the file: before the totals
        self._head["totals"] = {k: sum(p.count(k) or 0 for p in self._plies) for k in keys}


def checksum(data: dict) -> str:
    """xxh64 of the canonical JSON of ``data`` (without its own ``xxh64`` field)."""
    body = {k: v for k, v in data.items() if k != "xxh64"}
    return xxhash.xxh64(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def board_of(data: dict) -> Board:
    """The board a manifest's fields name (:meth:`Board.from_json`: ``grid`` too for a 3D board)."""
    return Board.from_json(data)


def structure_problem(data: dict) -> str | None:
    """What is wrong with the layout of a loaded manifest, or None."""
    try:
        board = board_of(data)
    except KeyError as e:
        return f"no {e.args[0]!r} field"
    except (BoardError, TypeError):
        return "bad board fields"
    if data.get("board") != board.name:
        return f"board {data.get('board')!r} does not agree with width/height {board.name}"
    if data.get("entry_size") not in (None, board.entry_size):
        return f"entry_size {data.get('entry_size')!r} is not {board.entry_size} for board {board}"
    if "root" in data:
        try:
            Root.from_json(board, data["root"])
        except (ValueError, KeyError, TypeError, C4Error) as e:
            return f"bad 'root' record ({e})"
    plies = data.get("plies")
    if not isinstance(plies, list) or len(plies) > board.cells + 1:
        return "'plies' is not a list of at most one record per ply"
    for i, rec in enumerate(plies):
        if not isinstance(rec, dict) or rec.get("ply") != i:
            return f"plies[{i}] is not the record of ply {i}"
        for k, v in rec.items():
            if not _is_int(v) or v < 0:
                return f"plies[{i}].{k} is not a count"
    steps = data.get("steps")
    if not isinstance(steps, dict) or not all(isinstance(steps.get(s), dict)
                                              for s in ("forward", "backward")):
        return "'steps' has no forward/backward records"
    for stage in ("forward", "backward"):
        for ply, step in steps[stage].items():
            if not ply.isdigit() or int(ply) > board.cells:
                return f"steps.{stage} has a step for ply {ply!r}"
            if not isinstance(step, dict) or not isinstance(step.get("shards"), list):
                return f"steps.{stage}.{ply} has no shard list"
            for s in step["shards"]:
                bad = _shard_problem(s)
                if bad:
                    return f"steps.{stage}.{ply}: {bad}"
        if stage == "backward":
            for ply in steps[stage]:
                if ply not in steps["forward"]:
                    return f"steps.backward.{ply} exists but steps.forward.{ply} does not"
    table = data.get("table")
    if table is not None:
        if not isinstance(table, dict) or not all(k in table for k in ("file", "entries", "bytes")) \
                or not ("sha256" in table or "sha256_tree" in table):
            return "'table' record is incomplete"
        if not isinstance(table["file"], str) or table.get("format", DAT.name) not in FORMATS:
            return "'table' record names no file or an unknown format"
        box = table.get(table.get("format", DAT.name))
        if table.get("format", DAT.name) != DAT.name and box and (
                not isinstance(box, dict) or not all(k in box for k in ("file", "bytes"))
                or not ("sha256" in box or "sha256_tree" in box)):
            return f"'table' record of its {table['format']} file is incomplete"
        if not (_is_int(table["bytes"]) and _is_int(table["entries"])) or \
                table["bytes"] != table["entries"] * board.entry_size:
            return "'table' bytes is not entries x entry size"
    return None


def _shard_problem(s) -> str | None:
    if not isinstance(s, dict):
        return "a shard record is not an object"
    try:
        info = ShardInfo.from_json(s)
    except KeyError as e:
        return f"a shard record has no {e.args[0]!r}"
    if not isinstance(info.file, str) or not info.file.startswith("work/"):
        return f"shard path {info.file!r} is not under work/"
    pp = PurePosixPath(info.file)
    if pp.is_absolute() or ".." in pp.parts:
        return f"shard path {info.file!r} leaves the build directory"
    if not (_is_int(info.rows) and info.rows >= 0 and _is_int(info.first) and _is_int(info.last)):
        return f"shard {info.file}: rows/first/last are not integers"
    if not isinstance(info.xxh64, str) or len(info.xxh64) != 16:
        return f"shard {info.file}: bad checksum field"
    return None
