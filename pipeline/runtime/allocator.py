"""How the build's processes get memory: large arrays reuse the memory of the task before.

Design notes: ``docs/modules.md`` (``c4table.pipeline.runtime.allocator``); what the settings
change in glibc is checked in ``tests/test_allocator.py``.

>>> tune()   # glibc's malloc on Linux, unless C4TABLE_MALLOC=default
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
# -1: never trim (mallopt's int becomes glibc's size_t SIZE_MAX). A finite threshold such as
# 2**31 - 1 (the largest int) trims the heap whenever a task frees more than about 2 GiB at its
# top, and the next task faults all of it in again.
TRIM_THRESHOLD = -1
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
