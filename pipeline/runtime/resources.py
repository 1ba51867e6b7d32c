"""Disk and process resources of a build: the free-disk check made before each step, turning
a full disk (ENOSPC, also when raised in a worker process) into one clear :class:`BuildError`,
the build-directory lock, and the removal of scratch files an interrupted run left behind.

Design notes: ``docs/modules.md`` (``c4table.pipeline.runtime.resources``).

>>> format_need(3 << 20, 1 << 20)
'needs about 3.0 MiB (3,145,728 bytes), 1.0 MiB (1,048,576 bytes) free'
"""
from __future__ import annotations

import errno
import fcntl
import math
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import c4table.config as config
from c4table.errors import BuildError, BuildInputError
from c4table.units import format_size
from c4table.builddir.manifest import Manifest
from c4table.io.storage import Storage, open_storage

SKIP_ENV = "C4TABLE_SKIP_DISK_CHECK"
MARGIN_BYTES = 1 << 20        # added to every estimate (file system slack, manifest, headers)
MARGIN_FRACTION = 0.10        # and this share of the estimate
MESSAGES_PER_ENTRY = 4.0      # backward messages a position sends, kept (measured up to ~3.5)
# Runs are varint differences through zstd (pipeline/sort/runcodec.py): 0.37-0.40 bytes per
# message and 0.17-0.20 per child key measured on 5x5 and 6x4 (more where keys lie farther
# apart). Before the first step has sent anything the check allows about five times that;
# later, 1.5 times what the step before sent per position (backward_need). A write the disk refuses anyway is still
# caught (disk_full_guard) and the step resumes.
MESSAGE_BYTES = 2             # bytes per message allowed before any step has sent
MESSAGE_GROWTH = 1.5          # what a step may send per position over the step before it
                              # (measured 0.65-0.71 bytes a position on 7x5's plies 31-29)
RUN_BYTES_PER_KEY = 1         # bytes per run key allowed
LOCK_NAME = ".lock"
WHOLE_SCRATCH = ("runs", "merge", "cache", "recycle")   # trees no finished step ever refers to
_DISK_FULL = {errno.ENOSPC, errno.EDQUOT}
_DISK_FULL_TEXT = ("No space left on device", "Disk quota exceeded")
_TOO_LARGE_TEXT = "File too large"


class DiskFullError(BuildError):
    """Not enough disk for the next step (estimated), or a write refused: ENOSPC/EDQUOT (a full
    disk, a quota) or EFBIG (the file size limit, ``ulimit -f``)."""


# ------------------------------------------------------------------ free disk
def free_bytes(path: Path) -> int:
    """Bytes available to this user on the file system holding ``path``."""
    return shutil.disk_usage(path).free


def format_need(need: int, free: int) -> str:
    return f"needs about {format_size(need)} ({need:,} bytes), {format_size(free)} ({free:,} bytes) free"


def with_margin(n: float) -> int:
    return int(math.ceil(n * (1 + MARGIN_FRACTION))) + MARGIN_BYTES


def check_free(root, need: int, what: str) -> None:
    """Raise :class:`DiskFullError` if the file system of ``root`` (a path or a local
    :class:`~c4table.io.storage.Storage`; object stores are not checked) has less than ``need``
    bytes free."""
    if config.get(SKIP_ENV):
        return
    store = None
    if isinstance(root, Storage):
        if not root.local:
            return
        store, root = root, root.root
    free = free_bytes(root)
    if free < need and store is not None and store.empty_recycle_bin():
        free = free_bytes(root)   # the bin's spent files (Storage.recycle_tree) count as free
    if free < need:
        raise DiskFullError(f"not enough free disk in {root} for {what}: {format_need(need, free)}; "
                            "finished steps are kept, free space and rerun to resume")


def _files_bytes(store: Storage, infos) -> int:
    total = 0
    for s in infos:
        try:
            total += store.size(s.file)
        except OSError:
            pass
    return total


def forward_need(m: Manifest, store: Storage, ply: int, and_next: bool = False,
                 runs_written: int | None = None) -> int:
    """Bytes that expanding generation ``ply`` into ``ply + 1`` will write at its peak: the runs
    (:data:`RUN_BYTES_PER_KEY` a key: runs are compressed) and generation ``ply + 1``'s shards. Both are
    generation ``ply``'s figures times its growth over generation ``ply - 1``. With ``and_next``,
    also the runs of generation ``ply + 2``, which the tasks writing ``ply + 1``'s shards spill at
    the same time (:func:`c4table.pipeline.stages.forward.merge_task`): ``ply + 1``'s runs times the
    growth again. ``runs_written`` is the size of ``ply + 1``'s runs when they are already on disk
    (the previous step's merge tasks spilled them): they are not counted again, and ``ply + 2``'s
    runs are estimated from their real size rather than that allowance."""
    cur = m.shards("forward", ply) or []
    rows = sum(s.rows for s in cur)
    prev = m.shards("forward", ply - 1) if ply > 0 else None
    prev_rows = sum(s.rows for s in prev) if prev else 0
    growth = rows / prev_rows if prev_rows else float(m.board.width)
    next_rows = rows * growth
    step = m.step("forward", ply)
    run_keys = step.run_keys if step is not None else None
    dup = run_keys / rows if rows and run_keys else 1.5
    shards = _files_bytes(store, cur) * growth
    if runs_written is not None:
        return with_margin((runs_written * growth if and_next else 0) + shards)
    runs = next_rows * max(dup, 1.0) * RUN_BYTES_PER_KEY
    return with_margin(runs * (1 + growth if and_next else 1) + shards)


def backward_need(m: Manifest, store: Storage, ply: int) -> int:
    """Bytes that annotating generation ``ply`` will write: its backward shards (its forward
    shards' size times the backward/forward size ratio of the generation annotated before it)
    and its messages to generation ``ply - 1``, plus a copy of the message runs it reads (a
    pre-merge may write one; the runs are deleted after the step). The messages are priced at
    what the step before sent per position (:func:`sent_bytes`, measured on disk) times
    :data:`MESSAGE_GROWTH`; before any step has sent, at :data:`MESSAGES_PER_ENTRY` times
    :data:`MESSAGE_BYTES`."""
    fwd = m.shards("forward", ply) or []
    rows = sum(s.rows for s in fwd)
    ratio = 1.5
    nxt_f, nxt_b = m.shards("forward", ply + 1), m.shards("backward", ply + 1)
    if nxt_f and nxt_b:
        fb = _files_bytes(store, nxt_f)
        if fb:
            ratio = max(1.0, _files_bytes(store, nxt_b) / fb)
    incoming = sent_bytes(m, store, ply + 1)   # the runs this step reads
    senders = sum(s.rows for s in nxt_f or [])
    if incoming is None or not senders:
        incoming, per_entry = 0, MESSAGES_PER_ENTRY * MESSAGE_BYTES
    else:
        per_entry = incoming / senders * MESSAGE_GROWTH
    sent = rows * per_entry if ply > 0 else 0
    return with_margin(_files_bytes(store, fwd) * ratio + sent + incoming)


def sent_bytes(m: Manifest, store: Storage, ply: int) -> int | None:
    """Bytes of the message runs that annotating generation ``ply`` sent, as they lie on disk
    now (None: no finished step of ``ply`` with runs still there)."""
    step = m.step("backward", ply)
    runs = step.messages if step is not None else None
    if not runs:
        return None
    total = 0
    for r in runs:
        try:
            total += store.size(r["file"])
        except OSError:
            return None   # gone already (a resumed build that passed them): not measured
    return total


def merge_need(m: Manifest, plies: list[int]) -> int:
    """Bytes of the table file (its parts are deleted as they are appended, so the parts and
    the file together peak at about one table)."""
    return with_margin(m.total("entries", plies) * m.board.entry_size)


# ------------------------------------------------------------------ ENOSPC
def is_disk_full(exc: BaseException) -> bool:
    """True for ENOSPC/EDQUOT, also when a library (pyarrow) dropped the errno but kept the text,
    and when it is the cause of another exception (e.g. re-raised from a worker process)."""
    return write_refused(exc) == "disk full"


def write_refused(exc: BaseException) -> str | None:
    """Why the system refused a write that ``exc`` reports (or caused, e.g. re-raised from a
    worker process): ``"disk full"`` (ENOSPC, EDQUOT, a :class:`DiskFullError`), ``"file size
    limit reached"`` (EFBIG: ``ulimit -f``), else None. Also when a library (pyarrow) dropped
    the errno but kept the text.

    >>> write_refused(OSError(errno.EFBIG, "File too large")), write_refused(OSError(errno.ENOSPC, "x"))
    ('file size limit reached', 'disk full')
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFullError):
            return "disk full"
        if isinstance(exc, OSError):
            if exc.errno in _DISK_FULL or any(t in str(exc) for t in _DISK_FULL_TEXT):
                return "disk full"
            if exc.errno == errno.EFBIG or _TOO_LARGE_TEXT in str(exc):
                return "file size limit reached"
        exc = exc.__cause__ or exc.__context__
    return None


def refused_remedy(reason: str) -> str:
    """What to do before rerunning, for a :func:`write_refused` reason."""
    return "free space" if reason == "disk full" else "raise the file size limit (ulimit -f)"


@contextmanager
def disk_full_guard(root, what: str, finished: str = ""):
    """Turn a full disk (or the file size limit reached) while doing ``what`` into one
    :class:`DiskFullError` line that names the directory and the file and says what is kept;
    ``finished`` describes the finished steps."""
    try:
        yield
    except DiskFullError:
        raise
    except OSError as e:
        reason = write_refused(e)
        if reason is None:
            raise
        detail = e.strerror or str(e)
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        kept = f"finished steps are kept ({finished})" if finished else "finished steps are kept"
        raise DiskFullError(f"{reason} in {root} while writing {what}: {detail}{where}; {kept}, "
                            f"{refused_remedy(reason)} and rerun the same command to resume") from None


# --------------------------------------------------------------- lock, scratch
_LOCKS: dict[str, list] = {}   # resolved root -> [fd, holders in this process, lock path]


def lock_build_dir(root: Path) -> None:
    """Take an exclusive POSIX lock on ``root/.lock`` so that two processes never build in one
    directory at once; :func:`unlock_build_dir` gives it back and removes the file, so a
    finished build leaves no ``.lock`` behind. POSIX record locks are not inherited by the
    worker processes and vanish when this process dies (even by SIGKILL, which leaves a stale
    but harmless file); within one process the lock is counted, so nested builds of one
    directory are fine. A lock taken on a file that its holder has meanwhile removed is
    dropped and taken again on the new file."""
    key = str(Path(root).resolve())
    if key in _LOCKS:
        _LOCKS[key][1] += 1
        return
    path = Path(root) / LOCK_NAME
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):
                raise BuildInputError(f"{root}: another c4table process is building in this directory "
                                      f"(it holds {path}); wait for it to finish or use another --out") from None
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)        # the holder removed that file as we locked it: lock the new one
    _LOCKS[key] = [fd, 1, path]


def unlock_build_dir(root: Path) -> None:
    key = str(Path(root).resolve())
    held = _LOCKS.get(key)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _LOCKS[key]
        try:
            os.unlink(held[2])   # still holding the lock: nobody else has this file locked
        except OSError:
            pass
        os.close(held[0])   # closing the descriptor releases the lock


def scratch_files(root) -> list[str]:
    """Files an interrupted run may have left that no finished step refers to, relative to the
    build directory (a path or :class:`~c4table.io.storage.Storage`): temporary files (``*.tmp``,
    ``*.tmp.npy``) under ``work/{forward,backward,messages}``, forward runs (``work/runs``),
    merge parts (``work/merge``), an older version's ``work/cache``, the recycle bin of spent
    scratch files (``work/recycle``, :meth:`~c4table.io.storage.Storage.recycle_tree`)
    and the manifest's temporary file. The table's own ``.tmp`` is not listed: the merge decides whether it is
    the finished table (:func:`c4table.pipeline.stages.merge.run`)."""
    store = root if isinstance(root, Storage) else open_storage(root)
    out: list[str] = []
    for sub in ("forward", "backward", "messages", *WHOLE_SCRATCH):   # only what the pipeline writes
        for rel in store.list_files(f"work/{sub}"):
            if sub in WHOLE_SCRATCH or rel.endswith(".tmp") or rel.endswith(".tmp.npy"):
                out.append(rel)
    if store.exists("manifest.json.tmp"):
        out.append("manifest.json.tmp")
    return out


def remove_scratch(root) -> int:
    """Delete :func:`scratch_files` (and the ``work/runs``, ``work/merge``, ``work/cache``,
    ``work/recycle`` trees); return how many files."""
    store = root if isinstance(root, Storage) else open_storage(root)
    items = scratch_files(store)
    for rel in items:
        store.delete(rel)
    for sub in WHOLE_SCRATCH:
        store.delete_tree(f"work/{sub}")
    return len(items)
