"""A build: one board, one build directory, a memory budget and an executor; runs the stages.

Design notes: ``docs/modules.md`` (``c4table.pipeline.stages.build``).

>>> from c4table.pipeline.stages.build import build_table
>>> path = build_table("4x4", "tables/4x4", quiet=True)   # finished already: nothing to redo
>>> path.name
'connect4_4x4.dat'
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from c4table.wording import count
from c4table.game.board import Board
from c4table.budget import DEFAULT_MEMORY, MemoryBudget
from c4table.errors import BoardError, BuildInputError, C4Error
from c4table.game.root import Root
from c4table.pipeline.runtime import allocator
from c4table.pipeline.stages import backward
from c4table.pipeline.runtime import counters
from c4table.pipeline.stages import forward
from c4table.pipeline.stages.ledger import RunLedger
from c4table.pipeline.stages import merge
from c4table.pipeline.stages import merge_c4z
from c4table.pipeline.runtime import resources
from c4table.pipeline.sort import runcodec
from c4table.pipeline.sort import shuffle
from c4table.pipeline.runtime.execution import Executor, default_workers, machine_name, make_executor
from c4table.pipeline.kernels.cpu import key_bits
from c4table.pipeline.kernels.kernelset import KernelSet, compiled, warm
from c4table.builddir.manifest import Manifest
from c4table.builddir import tableformat
from c4table.builddir.tableformat import TableFormat
from c4table.progress import Progress
from c4table.io.storage import Storage, open_storage
from c4table.io import options as io_options
from c4table.io.options import IOOptions
import c4table.config as config
from c4table.io.recycle import settle_deletes
from c4table.table.sums import SUFFIX as SUMS_SUFFIX



@dataclass
class Build:
    """State shared by the stages of one build."""

    board: Board
    root: Path | str    # a local directory, or the URI of a remote one (see ``store``)
    budget: MemoryBudget   # shared by the workers
    executor: Executor
    quiet: bool = False
    origin: Root | None = None   # the root position of a rooted build (None: the empty board)
    device: str = "cpu"          # where the tasks' kernels run (:attr:`kernels`)
    table_format: TableFormat = tableformat.DAT   # what the merge writes (MERGE_DRIVERS)
    io: IOOptions = field(default_factory=IOOptions.from_config)   # direct I/O, recycle bin
    table_md5: bool = field(default_factory=lambda: config.get("C4TABLE_TABLE_MD5"))
    table_sha256: bool = field(default_factory=lambda: config.get("C4TABLE_TABLE_SHA256"))
    # the .c4z block codec by name (build --codec; None: C4TABLE_C4Z_CODEC when the merge starts)
    c4z_codec: str | None = None
    manifest: Manifest = field(init=False)
    store: Storage = field(init=False)                  # where the files live
    verified: set = field(init=False, default_factory=set)  # what this process has checked
    ledger: RunLedger = field(init=False)   # this run's counts, times and shuffles (stats.json)
    # a shuffle past this many ranged reads (tasks x runs) is made two-level (pipeline/sort/shuffle.py)
    shuffle_max_reads: int = field(default_factory=lambda: shuffle.max_reads_default())
    _io_before: IOOptions | None = field(init=False, default=None)  # put back by close()
    # the directories opening the build created (deepest first): removed by close() if empty
    made: list = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.board.check_buildable()   # a 3D board too large for 64-bit bitboards
        if key_bits(self.board) > 56:
            raise BuildInputError(f"board {self.board}: keys need {key_bits(self.board)} bits; "
                                  "the pipeline packs key and outcome in 64 bits, so at most 56")
        self.budget.check(self.executor.workers)
        self.executor.prepare(self._warm_kernels)   # before the workers fork
        self.executor.prepare(runcodec.warm)   # the runs' codec, likewise
        self.store = open_storage(self.root, self.io)
        if self.store.local:
            self.root = self.store.root
            self.root.mkdir(parents=True, exist_ok=True)
            resources.lock_build_dir(self.root)
        else:
            self.root = self.store.uri
        self._io_before = io_options.use(self.io)   # the workers, forked later, open with them
        try:
            self.manifest = Manifest.open_or_create(self.store, self.board, self.origin)
            self.origin = self.manifest.origin()   # a resumed rooted build keeps its root
            n = resources.remove_scratch(self.store)
        except BaseException:
            self._unlock()
            io_options.use(self._io_before)
            raise
        if n:
            self.note("build", f"removed {count(n, 'scratch file')} left by an interrupted run")
        self.ledger = RunLedger(self.store, self.executor, self.board.name, self._stats_settings)

    def _warm_kernels(self) -> None:
        """Load the kernels (:func:`warm`), saying so when they must be compiled first (the
        first build after install sits on ply 0 meanwhile: seconds to tens of seconds, with
        the machine), and how long that took."""
        if compiled(self.board) is not False:
            warm(self.board)
            return
        self.note("build", "compiling the kernels (first run after install only)...")
        t0 = time.perf_counter()
        warm(self.board)
        self.note("build", f"compiled the kernels in {time.perf_counter() - t0:.1f}s (kept in "
                           "numba's cache for the next runs)")

    def close(self) -> None:
        """Shut the executor down and give the directory lock back (idempotent); remove the
        directories opening the build made if nothing was written in them."""
        if self.executor is None:
            return
        try:
            try:
                self.manifest.flush()   # finished steps a failed stage left unsaved
            except Exception:           # e.g. the disk is full: the stage's error says so
                pass
            self.executor.close()
            try:
                self.store.empty_recycle_bin()   # spent scratch files kept for reuse
            except OSError:
                pass
            settle_deletes()   # the spent directories delete_tree set aside
        finally:
            self.executor = None
            self._unlock()
            io_options.use(self._io_before)
            _remove_empty(self.made)   # a run that failed before writing anything

    def keeps_spent(self) -> bool:
        """Whether spent scratch files go to the recycle bin (:meth:`Storage.recycle_tree
        <c4table.io.storage.Storage.recycle_tree>`): for a ``.dat`` build with disk to spare
        (free space for at least the raw table so far, which its merge will need). A
        ``--format c4z`` build, or one short of disk, deletes them at once: nothing is kept
        past its last reader."""
        if not self.table_format.keeps_spent:
            return False
        if not self.store.local:
            return True   # recycle_tree deletes there anyway
        entries = sum(p.entries or 0 for p in self.manifest.plies)
        return resources.free_bytes(self.root) >= entries * self.board.entry_size

    def spent(self, rel: str) -> None:
        """The scratch directory ``rel`` (a step's runs or messages) has no later reader:
        recycled if :meth:`keeps_spent`, else deleted."""
        if self.keeps_spent():
            self.store.recycle_tree(rel)
        else:
            self.store.empty_recycle_bin()
            self.store.delete_tree(rel)

    def run_stage(self, stage: str, fn, *args):
        """Run ``fn(*args)`` (a stage's driver) counted under ``stage`` (:meth:`RunLedger.run_stage
        <c4table.pipeline.stages.ledger.RunLedger.run_stage>`)."""
        return self.ledger.run_stage(stage, fn, *args)

    def _stats_settings(self) -> dict:
        """The settings ``stats.json`` records beside the counts (read when it is saved)."""
        return {"machine": machine_name(), "memory": self.budget.bytes, "task_memory": self.task_memory,
                "storage": "local" if self.store.local else "remote",
                "shuffle_max_reads": self.shuffle_max_reads}

    def _unlock(self) -> None:
        if self.store.local:
            resources.unlock_build_dir(self.root)

    def __enter__(self) -> "Build":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def note(self, stage: str, text: str) -> None:
        self.progress(stage).note(text)

    @property
    def kernels(self) -> KernelSet:
        """The kernels the tasks call, on the device chosen when the build opened."""
        return KernelSet.of(self.board, self.device)

    @property
    def first_ply(self) -> int:
        """The first generation: the root's ply (0 for a full build)."""
        return self.origin.ply if self.origin is not None else 0

    @property
    def table_name(self) -> str:
        """The table's file name: ``connect4_WxH.dat``, or ``connect4_WxH_root-MOVES.dat``."""
        return self.origin.table_filename if self.origin is not None else self.board.table_filename

    @property
    def resuming(self) -> bool:
        """True if the manifest records any finished step (this run continues a build)."""
        return self.manifest.resuming()

    def complete(self) -> bool:
        """True if the manifest records the table and the file matches its size and sha256
        (hashed once per process). A recorded table whose file is missing is not complete (the
        merge finishes it); one whose file differs is an error naming the file."""
        rec = self.manifest.table
        return MERGE_DRIVERS[rec.format if rec is not None else self.table_format].complete(self, rec)

    @property
    def task_memory(self) -> int:
        """Bytes one task may hold: the budget shared by the workers."""
        return self.budget.per_task(self.executor.workers)

    def shuffler(self) -> shuffle.Shuffle:
        """What a shuffle of this build needs (:func:`shuffle.two_level
        <c4table.pipeline.sort.shuffle.two_level>`): where the runs are, the executor, the
        task memory and the read threshold."""
        return shuffle.Shuffle(self.store.uri, self.executor, self.task_memory, self.shuffle_max_reads)

    def progress(self, stage: str, total: int | None = None) -> Progress:
        return Progress(stage, quiet=self.quiet, total=total)


@dataclass(frozen=True)
class BuildSettings:
    """What one build is asked for, read and checked once when it opens (:meth:`parse`)."""

    board: Board
    out: str | Path                # a local directory or a pyarrow.fs URI
    budget: MemoryBudget           # memory shared by the workers
    workers: int | None = None     # None: every core
    scheduler: str | None = None   # a dask scheduler ('local' or an address); None: local processes
    quiet: bool = False
    restart: bool = False          # discard a partial build first
    origin: Root | None = None     # a rooted build's root
    device: str = "cpu"            # where the tasks' kernels run (``gpu``: pipeline/kernels/gpu)
    table_format: TableFormat = tableformat.DAT   # what the merge writes
    c4z_codec: str | None = None   # with table_format c4z: its block codec by name (None: the setting)
    # the settings of the environment, read here (when the build opens), not where they are used
    io: IOOptions = field(default_factory=IOOptions.from_config)   # C4TABLE_DIRECT_IO, C4TABLE_RECYCLE
    table_md5: bool = field(default_factory=lambda: config.get("C4TABLE_TABLE_MD5"))
    table_sha256: bool = field(default_factory=lambda: config.get("C4TABLE_TABLE_SHA256"))

    @classmethod
    def parse(cls, board: str | Board, out: str | Path,
              memory: "str | int | MemoryBudget" = DEFAULT_MEMORY,
              workers: int | None = None, scheduler: str | None = None, quiet: bool = False,
              restart: bool = False, root: str | Root | None = None,
              device: str = "cpu",
              table_format: "str | TableFormat" = tableformat.DAT,
              c4z_codec: str | None = None) -> "BuildSettings":
        """The settings of :func:`open_build`'s arguments (``root``: a move string, drawing or
        :class:`~c4table.game.root.Root`; ``memory``: a size or a
        :class:`~c4table.budget.MemoryBudget`; ``c4z_codec``: the block codec of a ``c4z``
        table by name, :class:`BuildInputError` with another format)."""
        table_format = tableformat.get(table_format)
        if c4z_codec is not None and table_format is not tableformat.C4Z:
            raise BuildInputError(f"--codec {c4z_codec}: a block codec is for --format c4z "
                                  f"(this build writes a .{table_format})")
        board = Board.parse(board)
        if root is not None and not board.supports("root"):
            raise BoardError(f"board {board}: rooted builds (--root) are for 2D boards")
        if root is not None and not isinstance(root, Root):
            root = Root.parse(board, root)
        if device != "cpu":
            from c4table.pipeline.kernels.gpu import device as gpu
            gpu.check(device)
        return cls(board, out, MemoryBudget.parse(memory), workers, scheduler, quiet, restart, root, device,
                   table_format, c4z_codec)


def open_build(board: str | Board, out: str | Path,
               memory: "str | int | MemoryBudget" = DEFAULT_MEMORY,
               workers: int | None = None, scheduler: str | None = None, quiet: bool = False,
               restart: bool = False, root: str | Root | None = None,
               table_format: "str | TableFormat" = tableformat.DAT,
               c4z_codec: str | None = None) -> Build:
    """Prepare a build of ``board`` in directory ``out`` (resuming what is there); ``root``
    (a move string, drawing or :class:`~c4table.game.root.Root`) makes it a rooted build. Without
    ``root``, a directory holding a rooted build resumes that build. ``table_format``
    (a name or :class:`~c4table.builddir.tableformat.TableFormat`): ``"c4z"`` writes the table
    straight into a ``.c4z`` (no raw ``.dat``), in blocks of the codec named ``c4z_codec``
    (default: ``C4TABLE_C4Z_CODEC``)."""
    return open_with(BuildSettings.parse(board, out, memory, workers, scheduler, quiet, restart, root,
                                         table_format=table_format, c4z_codec=c4z_codec))


def open_with(s: BuildSettings) -> Build:
    """:func:`open_build` of settings read already."""
    if s.table_format is tableformat.C4Z:
        merge_c4z.check_settings(s.c4z_codec)   # a bad one stops the build now, not at its merge
    try:
        store = open_storage(s.out, s.io)
    except ValueError as e:
        raise BuildInputError(str(e)) from None
    if not store.local:
        if not s.table_format.remote:
            raise BuildInputError(f"{s.out}: --format {s.table_format} writes into a local build directory")
        return _open_locked(store, s)
    root = store.root
    if root.exists() and not root.is_dir():
        raise BuildInputError(f"{root}: exists and is not a directory (give another --out)")
    made = [d for d in (root, *root.parents) if not d.exists()]   # what mkdir creates
    root.mkdir(parents=True, exist_ok=True)
    try:
        resources.lock_build_dir(root)
        try:
            b = _open_locked(store, s)
        finally:
            resources.unlock_build_dir(root)   # the Build holds its own count until closed
    except BaseException:
        _remove_empty(made)   # a build that failed to start leaves no directory it made
        raise
    b.made = made
    return b


def _remove_empty(made: list[Path]) -> None:
    """Remove the directories of ``made`` (deepest first) that this run created and that are
    still empty; a directory that was there before, or holds anything, stays."""
    for d in made:
        try:
            d.rmdir()
        except OSError:   # not empty (or gone): nor are the ones above it
            return


#: The files beside a table ``NAME`` that belong to it: the table itself, its block sums, and
#: the temporary files of a merge (``.tmp``), of a ``--format c4z`` merge (``.tmp.idx``, its
#: state ``.tmp.state``) and of ``--compress`` (``.part``, ``.part.idx``, ``.part.json``); each
#: written atomically may have its own ``.tmp`` left by an interrupted run.
TABLE_FILES = ("", ".tmp", ".tmp.idx", ".tmp.state", ".tmp.state.tmp", SUMS_SUFFIX,
               SUMS_SUFFIX + ".tmp", ".part", ".part.idx", ".part.json", ".part.json.tmp")


def _discard(store: Storage, board: Board, origin: Root | None) -> None:
    """``--restart``: delete the partial (or finished) build in ``store``: its manifest and
    counts, its shards, and every file of its table (:data:`TABLE_FILES`, for the ``.dat``
    and the ``.c4z`` of the board's, the root's and the manifest's table names). Other files
    in the directory stay."""
    store.delete_tree("work")
    names = {board.table_filename} | ({origin.table_filename} if origin is not None else set())
    try:
        old = Manifest.load(store).table if store.exists("manifest.json") else None
    except C4Error:
        old = None
    if old is not None and "/" not in old.file:
        names.add(old.file)
    names |= {f.file_name(n) for n in names for f in tableformat.FORMATS.values()}   # --compress too
    for name in ("manifest.json", "manifest.json.tmp", counters.STATS, counters.STATS + ".tmp",
                 *(n + x for n in sorted(names) for x in TABLE_FILES)):
        store.delete(name)


def _open_locked(store, s: BuildSettings) -> Build:
    board, origin = s.board, s.origin
    if s.restart:
        _discard(store, board, origin)
    allocator.tune()   # before the workers fork: they inherit it (pipeline/runtime/allocator.py)
    # The AWS SDK behind pyarrow's S3 is not fork-safe: remote builds start workers fresh.
    executor = make_executor(s.workers or default_workers(), s.scheduler,
                             start_method="fork" if store.local else "spawn")
    try:
        b = Build(board, store.root if store.local else store.uri, s.budget, executor, s.quiet,
                  origin, s.device, s.table_format, s.io, s.table_md5, s.table_sha256,
                  s.c4z_codec)
    except BaseException:
        executor.close()
        raise
    return b


def build_table(board: str | Board, out: str | Path,
                memory: "str | int | MemoryBudget" = DEFAULT_MEMORY,
                workers: int | None = None, scheduler: str | None = None, quiet: bool = True,
                restart: bool = False, keep_work: bool = True,
                root: str | Root | None = None,
                table_format: "str | TableFormat" = tableformat.DAT,
                c4z_codec: str | None = None) -> Path | str:
    """Build (or finish building) the table of ``board`` in ``out`` (a directory or a
    ``pyarrow.fs`` URI such as ``s3://bucket/prefix``); return the table's path (or URI).
    ``root`` (a move string or drawing) builds the rooted table of every position reachable
    from it (:mod:`c4table.game.root`). ``table_format="c4z"`` writes the table straight into
    a ``.c4z`` (block codec ``c4z_codec`` by name; default ``C4TABLE_C4Z_CODEC``). Quiet
    unless ``quiet=False`` (the command line shows progress)."""
    return run_build(open_build(board, out, memory, workers, scheduler, quiet, restart, root,
                                table_format, c4z_codec), keep_work)


# The merge stage of each table format: a module with ``run(build)`` (write the table, or
# find it written; return its path) and ``complete(build, rec)`` (whether the table the
# manifest records as ``rec`` is there and intact).
MERGE_DRIVERS = {tableformat.DAT: merge, tableformat.C4Z: merge_c4z}


def merge_of(b: Build):
    """The merge stage's driver for the build: that of the format of a table already written,
    else of the build's format (:data:`MERGE_DRIVERS`)."""
    rec = b.manifest.table
    return MERGE_DRIVERS[rec.format if rec is not None else b.table_format].run


def run_build(b: Build, keep_work: bool = True) -> Path:
    """Run forward, backward and merge on an opened build (each resumes where it stopped), then
    close it; ``keep_work=False`` (or a ``--format c4z`` build) deletes ``DIR/work`` once the
    table is written."""
    try:
        b.run_stage("forward", forward.run, b)
        b.run_stage("backward", backward.run, b)
        path = b.run_stage("merge", merge_of(b), b)
    finally:
        b.close()
    if not keep_work or not b.table_format.keeps_work:   # nothing kept past its last reader
        b.store.delete_tree("work")
        settle_deletes()
    return path
