"""What ``c4table.pipeline.runtime.allocator`` changes in glibc's malloc, seen from glibc itself
in a fresh process (``mallinfo2`` and ``malloc_stats``): tuned, a 64 MiB block comes from the
heap instead of its own ``mmap`` and stays there once freed (the next task reuses it), and a
second thread allocates from the main arena instead of an arena of its own, and ``trim()``
gives it back;
``C4TABLE_MALLOC=default`` leaves all three as glibc does them and ``tune()`` says False. A task
larger than 2 GiB reuses the pages of the one before: the memory budget never costs system
time."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
                                reason="the settings are glibc's (Linux)")

PROBE = r"""
import ctypes, json, threading
from c4table.pipeline.runtime import allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
tuned = allocator.tune()
before = libc.mallinfo2()
block = libc.malloc(64 << 20)
during = libc.mallinfo2()
libc.free(block)
after = libc.mallinfo2()
trimmed = allocator.trim()
given = libc.mallinfo2()
t = threading.Thread(target=lambda: libc.free(libc.malloc(1 << 20)))
t.start()
t.join()
print(json.dumps({"tuned": tuned, "mmapped": during.hblks - before.hblks,
                  "heap_grew": during.arena - before.arena, "kept": after.arena - before.arena,
                  "trimmed": trimmed, "given_back": after.arena - given.arena}),
      flush=True)
libc.malloc_stats()   # to stderr: one "Arena N:" section per arena
"""


def probe(setting: str | None) -> tuple[dict, int]:
    """The probe's figures in a fresh process under ``C4TABLE_MALLOC=setting`` (unset: None),
    and the number of arenas glibc reports."""
    env = {k: v for k, v in os.environ.items() if k != "C4TABLE_MALLOC"}
    env["OPENBLAS_NUM_THREADS"] = "1"   # as the command line sets it: no thread before tune()
    if setting is not None:
        env["C4TABLE_MALLOC"] = setting
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    arenas = sum(line.startswith("Arena ") for line in run.stderr.splitlines())
    return json.loads(run.stdout), arenas


def test_tuned_malloc_keeps_large_blocks_on_the_heap_in_one_arena():
    got, arenas = probe(None)
    assert got["tuned"] is True
    assert got["mmapped"] == 0 and got["heap_grew"] >= 64 << 20   # M_MMAP_MAX 0
    assert got["kept"] >= 64 << 20                                 # M_TRIM_THRESHOLD: not given back
    assert arenas == 1                                             # M_ARENA_MAX 1
    assert got["trimmed"] is True and got["given_back"] >= 64 << 20   # until trim() asks for it


def test_default_setting_leaves_glibc_as_it_is():
    got, arenas = probe("default")
    assert got["tuned"] is False
    assert got["mmapped"] == 1 and got["kept"] < 64 << 20          # its own mmap, unmapped at free
    assert got["trimmed"] is False                                 # nothing kept to give back
    assert arenas == 2                                             # the thread got an arena of its own


REUSE_PROBE = r"""
import resource, sys
import numpy as np
from c4table.pipeline.runtime import allocator
tuned = allocator.tune()
faults = []
for _ in range(2):   # a task that frees 3 GiB, then the next task of the same size
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.empty((3 << 30) // 8, np.uint64)
    a[::512] = 1     # touch every 4 KiB page
    del a
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(tuned, *faults)
"""


@pytest.mark.parametrize("setting, reused", [("tuned", True), ("default", False)])
def test_a_task_larger_than_2_gib_reuses_the_pages_of_the_one_before(setting, reused):
    """Tuned, the second task faults no page in (glibc never trims the heap: a finite trim
    threshold, at most 2 GiB as mallopt takes an int, would give the pages back after every
    task larger than that); with ``C4TABLE_MALLOC=default`` the same program faults all of
    them in again, which shows the probe measures what it says."""
    out = subprocess.run([sys.executable, "-c", REUSE_PROBE], capture_output=True, text=True, check=True,
                         env={**os.environ, "C4TABLE_MALLOC": setting}).stdout.split()
    tuned, first, second = out[0] == "True", int(out[1]), int(out[2])
    if setting == "tuned" and not tuned:
        pytest.skip("not glibc")
    assert first > 0
    if reused:
        assert second <= first // 10, (first, second)
    else:
        assert second >= first // 2, (first, second)


GROWTH_PROBE = r"""
import sys
import numpy as np
from c4table.pipeline.runtime import allocator

def resident_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

tuned = allocator.tune()
alive = []
for mib in (200, 220, 240):   # tasks of growing size, each leaving a small object alive
    if sys.argv[1] == "heap":
        a = np.empty(mib << 17, np.uint64)
    else:
        a = allocator.buffer(mib << 17, np.uint64, "words")
    a[:] = 1
    alive.append([0] * 100_000)
    del a
print(tuned, resident_mib())
"""


@pytest.mark.parametrize("where", ["buffer", "heap"])
def test_tasks_of_growing_size_hold_one_buffer_not_the_sum_of_two(where):
    """A task's array of varying size (the merge's words) from ``allocator.buffer`` leaves the
    process holding about the largest one; on the tuned heap the same program holds the sum
    of two, since a freed array with a live object above it is a hole the next, larger one
    does not fit (a 7x5 merge worker reached 10.1 GB resident for tasks of 5.4)."""
    out = subprocess.run([sys.executable, "-c", GROWTH_PROBE, where], capture_output=True,
                         text=True, check=True, timeout=120).stdout.split()
    if out[0] != "True":
        pytest.skip("not glibc")
    resident = int(out[1])
    if where == "buffer":
        assert resident < 240 * 1.3 + 60, resident
    else:
        assert resident > 200 + 220, resident


FORK_PROBE = r"""
import os
import numpy as np
from c4table.pipeline.runtime import allocator

a = allocator.buffer(4096, np.uint8, "words")
a[:] = 1
del a
pid = os.fork()
if pid == 0:   # a worker forked from a process that holds the buffer: its task fills it
    b = allocator.buffer(4096, np.uint8, "words")
    b[:] = 2
    os._exit(0)
os.waitpid(pid, 0)
print(int(allocator.buffer(4096, np.uint8, "words").min()))
"""


def test_a_forked_worker_writes_its_own_copy_of_a_kept_buffer():
    """A kept buffer is a private mapping: a worker forked from the process holding it (the
    driver, which runs a stage's lone task itself) fills its own copy, not its parent's (and
    so its siblings') pages, as a shared mapping would."""
    out = subprocess.run([sys.executable, "-c", FORK_PROBE], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["1"]
