"""The build manifest (``DIR/manifest.json``): which steps of a build are finished, with the
shards and counts each produced, and, once merged, the final table's size and hashes.

Design notes: ``docs/modules.md`` (``c4table.builddir.manifest``).
"""
from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import PurePosixPath

import xxhash

from c4table.game.board import Board
from c4table.errors import BoardError, BuildInputError, C4Error, CorruptDataError
from c4table.io.counting import IOCounts, active, counting
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


def _uncounted(fn, *args):
    """``fn(*args)`` with its requests counted apart (the caller counted them already)."""
    with counting(IOCounts()):
        return fn(*args)


def _storage(root) -> Storage:
    return root if isinstance(root, Storage) else open_storage(root)


class Manifest:
    """In-memory manifest of one build directory (a path, a URI or a
    :class:`~c4table.io.storage.Storage`); :meth:`save` writes it atomically."""

    def __init__(self, root, data: dict):
        self.store = _storage(root)
        self.data = data
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
            raise CorruptDataError(f"{path}: manifest is not valid JSON ({e})") from None
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
        fmt = self.data.get("format")
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
                raise BuildInputError(f"{store.display()}: holds a build of board {m.data['board']}, "
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
        data = dict(self.data)
        data.pop("xxh64", None)
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
        return board_of(self.data)

    def origin(self):
        """The :class:`c4table.game.root.Root` of a rooted build, or None for a full build."""
        rec = self.data.get("root")
        if rec is None:
            return None
        return Root.from_json(self.board, rec)

    def root_record(self) -> dict | None:
        """The ``"root"`` record of a rooted build as stored (moves, ply, key), or None for a
        full build: what a ``.c4z`` header copies."""
        return self.data.get("root")

    def step(self, stage: str, ply: int) -> dict | None:
        """The record of a finished step (``shards`` and what its stage added: ``run_keys``,
        ``messages``, ``premerged``), or None if the step is not finished."""
        return self.data["steps"][stage].get(str(ply))

    def finished_plies(self, stage: str) -> list[int]:
        """The plies whose ``stage`` step is finished, in increasing order."""
        return sorted(int(p) for p in self.data["steps"][stage])

    def resuming(self) -> bool:
        """True if any step is recorded (a run continues a build)."""
        st = self.data["steps"]
        return bool(st["forward"]) or bool(st["backward"])

    def shards(self, stage: str, ply: int) -> list[ShardInfo] | None:
        """Shards of a finished step, or None if the step is not finished."""
        step = self.step(stage, ply)
        if step is None:
            return None
        return [ShardInfo.from_json(s) for s in step["shards"]]

    def finish_step(self, stage: str, ply: int, shards: list[ShardInfo], **extra) -> None:
        """Record a finished step and its shards (made durable when the manifest is saved)."""
        self.data["steps"][stage][str(ply)] = {"shards": [s.to_json() for s in shards], **extra}
        self._unsynced.update(s.file for s in shards)

    def forget_step(self, stage: str, ply: int) -> None:
        for s in self.data["steps"][stage].pop(str(ply), {}).get("shards", []):
            self._unsynced.discard(s["file"])

    @property
    def plies(self) -> list[dict]:
        """The per-ply count records, ply 0 first (fields in docs/modules.md)."""
        return self.data["plies"]

    def ply_counts(self, ply: int) -> dict:
        """The counts recorded for ``ply`` (empty if none yet); read them, do not change them."""
        plies = self.data["plies"]
        return plies[ply] if ply < len(plies) else {}

    def entries(self, ply: int) -> int:
        """Table entries of generation ``ply`` (its forward step must be recorded)."""
        return self.data["plies"][ply]["entries"]

    def total(self, field: str, plies=None) -> int:
        """The sum of a count over ``plies`` (default: every recorded ply)."""
        recs = self.data["plies"] if plies is None else [self.data["plies"][p] for p in plies]
        return sum(r[field] for r in recs)

    def ply_record(self, ply: int) -> dict:
        """The record of ``ply`` to fill in, created (with the plies below it) if missing."""
        plies = self.data["plies"]
        while len(plies) <= ply:
            plies.append({"ply": len(plies)})
        return plies[ply]

    def set_forward_counts(self, ply: int, entries: int, symmetric: int, terminal: int,
                           terminal_symmetric: int) -> None:
        rec = self.ply_record(ply)
        rec.update(entries=entries, symmetric=symmetric, positions=2 * entries - symmetric,
                   terminal_entries=terminal, terminal=2 * terminal - terminal_symmetric)
        if "grid" in self.data:   # 3D: the kernels count 2 - images per entry, not a count
            del rec["symmetric"]

    def set_backward_counts(self, ply: int, stats) -> None:
        """``stats``: [draws, draws symmetric, A wins, A sym, B wins, B sym] in entries."""
        rec = self.ply_record(ply)
        for i, name in enumerate(("draws", "a_wins", "b_wins")):
            n, s = int(stats[2 * i]), int(stats[2 * i + 1])
            rec[name + "_entries"] = n
            rec[name] = 2 * n - s

    @property
    def table(self) -> dict | None:
        """The finished table's record (file, entries, bytes, sha256, md5), or None."""
        return self.data.get("table")

    def record_table(self, table: dict, totals: dict) -> None:
        """Record the finished table (saved by the next :meth:`save`) and the board's totals."""
        self.data["table"] = table
        self.data["totals"] = totals


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
        if not isinstance(table, dict) or not all(k in table for k in ("file", "entries", "bytes", "sha256")):
            return "'table' record is incomplete"
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
