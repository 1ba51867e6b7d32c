"""How the build's processes get memory: large arrays reuse the memory of the task before,
and a task's one array of varying size lives outside malloc's heap (:func:`buffer`).

Design notes: ``docs/modules.md`` (``c4table.pipeline.runtime.allocator``); what the settings
change in glibc is checked in ``tests/test_allocator.py``.

>>> tune()   # glibc's malloc on Linux, unless C4TABLE_MALLOC=default
True
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys
import threading

import numpy as np

import c4table.config as config

ENV = "C4TABLE_MALLOC"
_M_TRIM_THRESHOLD = -1   # glibc mallopt parameters (malloc.h)
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
# -1: never trim (mallopt's int becomes glibc's size_t SIZE_MAX). A finite threshold such as
# 2**31 - 1 (the largest int) trims the heap whenever a task frees more than about 2 GiB at its
# top, and the next task faults all of it in again.
TRIM_THRESHOLD = -1
_done: dict[int, bool] = {}   # process id -> whether glibc was tuned
GROW = 1.125                  # a kept buffer too small is mapped anew this much larger
_kept = threading.local()     # this thread's kept mapping (``.map``) and the bytes tasks took
_keeping = [False]            # whether this process keeps buffers between tasks (keep_buffers)


def tune() -> bool:
    """Tune this process's allocators (once per process: a forked child inherits the
    settings and sets them again). Returns whether glibc's malloc was tuned."""
    pid = os.getpid()
    if pid not in _done:
        _done[pid] = _tune()
    return _done[pid]


def one_arena() -> bool:
    """Make every thread of this process allocate from glibc's main arena (``M_ARENA_MAX`` 1),
    whose freed memory :func:`tune` keeps: Arrow decodes shards on its own threads, and glibc
    would give each of them an arena of ``mmap``'ed heaps that it unmaps as soon as they are
    empty. glibc fixes its arena limit when a second thread first allocates (importing
    pyarrow does), so the command line calls this before importing anything else
    (``c4table/cli/main.py``); forked workers inherit it. Returns whether glibc took it.

    >>> one_arena()   # glibc on Linux, unless C4TABLE_MALLOC=default
    True
    """
    if config.get(ENV) == "default" or not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, 1))
    except (OSError, AttributeError):   # not glibc
        return False


def _tune() -> bool:
    if config.get(ENV) == "default" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        one_arena()   # effective only if no second thread has allocated yet (see there)
    except (OSError, AttributeError):   # not glibc
        return False
    if ok:
        import pyarrow as pa  # only where pyarrow is already loaded
        pa.set_memory_pool(pa.system_memory_pool())
    return ok


def keep_buffers(on: bool = True) -> None:
    """Let this process keep :func:`buffer`'s mapping between tasks: a local worker process
    (its memory ends with it) and the driver running tasks itself (which calls
    :func:`release` when its executor closes). Elsewhere (a dask worker lives on after the
    build) each buffer is a fresh mapping, unmapped when its array is freed."""
    _keeping[0] = on


def buffer(n: int, dtype) -> np.ndarray:
    """An uninitialised array of ``n`` elements in an anonymous ``mmap`` of this thread, kept
    and reused by the next call (grown by :data:`GROW` when too small) where
    :func:`keep_buffers` is on. For a task's one large array whose size varies from task to
    task (the merge's words of a key range): on the heap :func:`tune` keeps, a freed array
    followed by anything still alive leaves a hole a larger one does not fit, so a process
    running tasks of growing size holds the sum of two of them (the 7x5 merge: 10.1 GB
    resident for tasks of 5.4). The array must be dropped before the thread's next call.

    >>> a = buffer(1000, np.uint64)
    >>> a.shape, a.dtype.name, taken() >= 8000
    ((1000,), 'uint64', True)
    """
    dtype = np.dtype(dtype)
    size = max(1, n * dtype.itemsize)
    _kept.taken = getattr(_kept, "taken", 0) + size
    if not _keeping[0]:
        return np.ndarray(n, dtype, buffer=mmap.mmap(-1, size))
    have = getattr(_kept, "map", None)
    if have is None or len(have) < size:
        grown = max(size, int(len(have) * GROW) if have is not None else 0)
        release()
        step = 2 << 20
        _kept.map = mmap.mmap(-1, -(-grown // step) * step)
    return np.ndarray(n, dtype, buffer=_kept.map)


def taken(reset: bool = False) -> int:
    """Bytes of :func:`buffer` arrays handed out in this thread since the last reset (a task's
    counts add them: tracemalloc does not see a mapping)."""
    t = getattr(_kept, "taken", 0)
    if reset:
        _kept.taken = 0
    return t


def release() -> None:
    """Unmap this thread's kept buffer (an array still viewing it keeps it mapped until it is
    freed)."""
    have = getattr(_kept, "map", None)
    _kept.map = None
    if have is not None:
        try:
            have.close()
        except BufferError:   # still viewed: unmapped when the last view goes
            pass
