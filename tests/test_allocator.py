"""The build's processes keep the memory they free (pipeline/runtime/allocator.py): a task's
arrays reuse the pages of the task before instead of faulting fresh ones in, however large the
task (the memory budget must never cost system time)."""
from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = r"""
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is tuned on Linux")
@pytest.mark.parametrize("setting, reused", [("tuned", True), ("default", False)])
def test_a_task_larger_than_2_gib_reuses_the_pages_of_the_one_before(setting, reused):
    """Tuned, the second task faults no page in (glibc never trims the heap: a finite trim
    threshold, at most 2 GiB as mallopt takes an int, would give the pages back after every
    task larger than that); with ``C4TABLE_MALLOC=default`` the same program faults all of
    them in again, which shows the probe measures what it says."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "C4TABLE_MALLOC": setting}).stdout.split()
    tuned, first, second = out[0] == "True", int(out[1]), int(out[2])
    if setting == "tuned" and not tuned:
        pytest.skip("not glibc")
    assert first > 0
    if reused:
        assert second <= first // 10, (first, second)
    else:
        assert second >= first // 2, (first, second)
