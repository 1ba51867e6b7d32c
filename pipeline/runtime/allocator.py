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
_kept = threading.local()     # this thread's kept mappings by name (``.maps``), sizes taken (``.took``)


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


def buffer(n: int, dtype, name: str) -> np.ndarray:
    """An uninitialised array of ``n`` elements in this thread's anonymous ``mmap`` called
    ``name``, kept and reused by the next call of that name (mapped anew :data:`GROW` larger
    when too small; untouched pages take no memory), with transparent huge pages asked for as
    numpy asks for its large arrays. For a task's large array whose size varies from task to
    task: on the heap :func:`tune` keeps, a freed array followed by anything still alive
    leaves a hole a larger one does not fit, so a process running tasks of growing size holds
    the sum of two of them (a 7x5 merge worker: 10.1 GB resident for tasks of 5.4). A new
    mapping is made after the heap's free memory is given back (:func:`trim`). The array
    must be dropped before the thread's next call of the same name.

    >>> a = buffer(1000, np.uint64, "doctest")
    >>> a.shape, a.dtype.name, taken() >= 8000
    ((1000,), 'uint64', True)
    """
    dtype = np.dtype(dtype)
    size = max(1, n * dtype.itemsize)
    took = _took()
    took[name] = max(took.get(name, 0), size)
    maps = _maps()
    have = maps.get(name)
    if have is None or len(have) < size:
        grown = max(size, int(len(have) * GROW) if have is not None else 0)
        release(name)
        trim()
        step = 2 << 20
        # private: Python maps shared by default, and a worker forked from a process holding
        # a buffer would write into its parent's pages and its siblings'
        have = maps[name] = mmap.mmap(-1, -(-grown // step) * step, flags=mmap.MAP_PRIVATE)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            have.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(have, dtype, count=n)   # a view the mapping knows of (release)


def trim() -> bool:
    """Give the free memory of glibc's heap back to the kernel (``malloc_trim``), which :func:`tune`
    otherwise keeps: before a buffer is mapped, so that its pages are the ones just freed."""
    if not _done.get(os.getpid()):
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _mine(attr: str) -> dict:
    """This thread's dict ``attr`` of :data:`_kept` (made on first use)."""
    d = getattr(_kept, attr, None)
    if d is None:
        d = {}
        setattr(_kept, attr, d)
    return d


def _maps() -> dict:
    return _mine("maps")


def _took() -> dict:
    return _mine("took")


def taken(reset: bool = False) -> int:
    """Bytes of :func:`buffer` arrays in this thread since the last reset, the largest of each
    name (a task's counts add them: tracemalloc does not see a mapping)."""
    t = sum(_took().values())
    if reset:
        _kept.took = {}
    return t


def release(name: str | None = None) -> None:
    """Unmap this thread's kept buffer ``name`` (all of them: None). An array still viewing
    one keeps it mapped until the array is freed.

    >>> a = buffer(10, np.uint8, "doctest release")
    >>> a[:] = 7
    >>> release("doctest release")
    >>> int(a.sum())
    70
    """
    maps = _maps()
    for key in [name] if name is not None else list(maps):
        have = maps.pop(key, None)
        if have is not None:
            try:
                have.close()
            except BufferError:   # still viewed: unmapped when the last view goes
                pass


def reused(before: dict[str, int]) -> int:
    """Bytes of this task's :func:`buffer` arrays that lay in buffers already mapped
    (``before``: :func:`kept` at its start), whose pages a rise of the resident set misses."""
    return sum(min(before.get(k, 0), v) for k, v in _took().items())


def kept() -> dict[str, int]:
    """This thread's kept buffers: bytes mapped, by name."""
    return {k: len(v) for k, v in _maps().items()}


def release_unused() -> None:
    """Unmap this thread's kept buffers that no :func:`buffer` call asked for since the last
    :func:`taken` reset (the task that just ended): a buffer serves the tasks of one kind, and
    the next stage's tasks need their own memory, not the last stage's pages as well."""
    took = _took()
    for name in [k for k in _maps() if k not in took]:
        release(name)
