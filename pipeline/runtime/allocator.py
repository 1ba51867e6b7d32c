"""How the build's processes get memory: large arrays reuse the memory of the task before.

Every task allocates arrays of hundreds of MB (a shard's keys, its children, the messages it
sends, the merge's words) and frees them when it ends. glibc serves blocks that large with a
fresh ``mmap`` and returns them to the system on free, so the next task's arrays fault every
page in again: the kernel zeroes each page, and on a virtual machine the host may have to back
it first. Measured on the 2-core development machine (a VM): filling a newly allocated 400 MB
array took 0.03-0.8 s of system time, a reused one none. :func:`tune` makes a process keep the
memory it frees (no ``mmap`` for large blocks, no trimming of the heap, one arena for all
threads) and makes Arrow, which decodes the shards, allocate through the same ``malloc``
(``pyarrow.system_memory_pool``) rather than its own pool, so parquet buffers reuse that memory
too. The single arena matters: Arrow decodes on its own threads, and glibc gives each thread
an arena of ``mmap``'ed heaps that it unmaps as soon as they are empty, so every shard read
faulted its buffers in afresh (5x6's backward pass, ``perf``: page faults under Arrow's
unpacking and ``memmove`` and ``munmap`` were most of its system time; with one arena its
system time fell from 6.4-7.2 to 3.9-5.3 s).

A process's resident memory then stays at the most its tasks held at once (each task is sized
from ``--memory``, :mod:`c4table.pipeline.sort.partition`), rather than falling between tasks. Only
glibc on Linux is tuned; elsewhere :func:`tune` does nothing. Set ``C4TABLE_MALLOC=default`` to
leave the allocators alone.

>>> tune() in (True, False)
True
"""
from __future__ import annotations

import ctypes
import os
import sys

import c4table.config as config

ENV = "C4TABLE_MALLOC"
_M_TRIM_THRESHOLD = -1   # glibc mallopt parameters (malloc.h)
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_done: dict[int, bool] = {}   # process id -> whether glibc was tuned


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

    >>> one_arena() in (True, False)
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
        ok = bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))
        one_arena()   # effective only if no second thread has allocated yet (see there)
    except (OSError, AttributeError):   # not glibc
        return False
    if ok:
        import pyarrow as pa  # only where pyarrow is already loaded
        pa.set_memory_pool(pa.system_memory_pool())
    return ok
