"""I/O and memory counters of a build: what each stage wrote, read and held, as measured.

Design notes: ``docs/modules.md`` (``c4table.pipeline.runtime.counters``).

>>> c = IOCounts()
>>> with counting(c):
...     active().add_write(100)
>>> c.bytes_written, c.objects_written
(100, 1)
"""
from __future__ import annotations

import json
import os
import resource
import time
import tracemalloc
from dataclasses import asdict, fields

from c4table.pipeline.runtime import allocator

from c4table.builddir.manifest import checksum
from c4table.errors import BuildInputError, CorruptDataError
from c4table.io.counting import IOCounts, active, counting, driver_counts, uncounted  # noqa: F401
from c4table.units import format_size

STATS = "stats.json"
# 2: each stage's counts are summed over every run that worked on it (``runs``), and a
# ``--format c4z`` merge counts its part files and container (``c4z_counted``)
STATS_FORMAT = "c4table-stats/2"
STATS_FORMAT_1 = "c4table-stats/1"   # read still: the last run's counts per stage


def _status_kib(field: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    """Reset this process's resident-set high-water mark (Linux); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


_warm_pid = 0   # the process that has run a counted task before (a forked worker is not warm)
_driver_pid = 0   # the process whose StageCounts count its own CPU (tasks run there included)
_reported = (0, 0)   # a worker process's CPU its tasks have reported so far (cpu_us, sys_us)
_reported_pid = 0    # the process _reported is of (a forked worker starts from zero)


def cpu_us() -> tuple[int, int]:
    """(user + system, system) CPU of this process so far, in microseconds."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return int((r.ru_utime + r.ru_stime) * 1e6), int(r.ru_stime * 1e6)


def _tracked() -> int:
    """Bytes traced now by tracemalloc (numpy reports its array buffers to it), its peak
    reset. Tracing starts (one frame) at a process's first task and is never stopped:
    ``tracemalloc.stop()`` while another thread allocates crashes CPython 3.11 (seen: Arrow's
    I/O threads), so it stays on in a process that has run a counted task."""
    if not tracemalloc.is_tracing():
        tracemalloc.start(1)
    tracemalloc.reset_peak()
    return tracemalloc.get_traced_memory()[0]


def run_counted(fn, *args):
    """Run ``fn(*args)`` under fresh counts; return ``(result, counts)``. The counts include
    the task's peak memory: the peak of the bytes numpy arrays and Python objects held during the
    task (``tracemalloc``) above what the process held at its start. A process's first task (it
    loads the kernels) is not traced; its rise of the resident set is ``first_task_memory``.
    Why these measures: ``docs/modules.md`` (``c4table.pipeline.runtime.counters``).

    >>> import numpy as np
    >>> _, c = run_counted(lambda: np.ones(1 << 20).sum())
    >>> _, c = run_counted(lambda: np.ones(1 << 20).sum())
    >>> 8 << 20 <= c.peak_task_memory < 9 << 20
    True
    """
    return _run(fn, args, traced=True)


def run_counted_here(fn, *args, memory: bool = True):
    """:func:`run_counted` for a task run in the driver's own process (one worker, no pool):
    never traced (tracemalloc, once started, would slow everything else the process does). With
    ``memory`` the task memory is the rise of the resident set; without it none is reported
    (``docs/modules.md``, ``c4table.pipeline.runtime.counters``).

    >>> r, c = run_counted_here(len, "abc")
    >>> r, c.tasks, c.ranged_reads
    (3, 1, 0)
    """
    return _run(fn, args, traced=False, memory=memory)


def _run(fn, args, traced: bool, memory: bool = True):
    global _warm_pid
    allocator.tune()   # large arrays reuse the memory of the task before (once per process)
    warm = _warm_pid == os.getpid()
    c = IOCounts(tasks=1)
    here = os.getpid() == _driver_pid   # the driver's own CPU counts this task's
    allocator.taken(reset=True)
    kept = allocator.kept()   # buffers of tasks before: resident already
    if traced and warm:
        before = _tracked()
        with counting(c):
            result = fn(*args)
        c.peak_task_memory = c.task_memory_sum = (max(0, tracemalloc.get_traced_memory()[1] - before)
                                                  + allocator.taken())   # mappings: not traced
    else:   # not traced: loading the kernels under tracemalloc would double its time
        can = _reset_peak()
        before = _status_kib("VmRSS:")
        with counting(c):
            result = fn(*args)
        if can and memory:
            rise = max(0, _status_kib("VmHWM:") - before) * 1024
            rise += allocator.reused(kept)   # the pages of kept buffers were resident before
            if warm:
                c.peak_task_memory = c.task_memory_sum = rise
            else:
                c.first_task_memory = rise
        _warm_pid = os.getpid()
    allocator.release_unused()   # a buffer of another kind of task (the stage before)
    if not here:
        _report_cpu(c)
    return result, c


def _report_cpu(c: IOCounts) -> None:
    """Give ``c`` the CPU this worker process has used since its last task reported (since it
    started, for its first: loading the kernels and waiting count too)."""
    global _reported, _reported_pid
    if _reported_pid != os.getpid():   # a fresh process: its usage started at zero
        _reported, _reported_pid = (0, 0), os.getpid()
    now = cpu_us()
    c.cpu_us, c.sys_us = now[0] - _reported[0], now[1] - _reported[1]
    _reported = now


class StageCounts:
    """Counts per stage of one build run, and the stored-bytes ledger (see docs/modules.md)."""

    def __init__(self):
        global _driver_pid
        _driver_pid = os.getpid()
        self.stages: dict[str, IOCounts] = {}
        self.stored = 0
        self.peak_stored: dict[str, int] = {}
        self._mark = IOCounts(**asdict(driver_counts()))
        self._clock = (time.perf_counter(), *cpu_us())
        self.stage = "setup"

    def _take_driver(self) -> None:
        """Move what the driver did since the last call into the current stage: its requests,
        its process's CPU and the wall time."""
        now = IOCounts(**asdict(driver_counts()))
        delta = IOCounts()
        for f in fields(IOCounts):
            setattr(delta, f.name, getattr(now, f.name) - getattr(self._mark, f.name))
        delta.peak_task_memory = 0
        self._mark = now
        clock = (time.perf_counter(), *cpu_us())
        delta.wall_us = int((clock[0] - self._clock[0]) * 1e6)
        delta.cpu_us, delta.sys_us = clock[1] - self._clock[1], clock[2] - self._clock[2]
        self._clock = clock
        self.add(delta)

    def add(self, c: IOCounts) -> None:
        self.stages.setdefault(self.stage, IOCounts()).merge(c)
        self.stored += c.bytes_written - c.bytes_deleted
        self.peak_stored[self.stage] = max(self.peak_stored.get(self.stage, 0), self.stored)

    def sample(self) -> None:
        self._take_driver()

    def rebase(self, stored: int) -> None:
        """Start the stored-bytes ledger from ``stored`` (what the build directory holds
        when this run starts), dropping what the driver's setup moved it by."""
        self._take_driver()
        self.stored = stored

    def set_stage(self, stage: str) -> None:
        self._take_driver()
        self.stage = stage

    def to_json(self) -> dict:
        self._take_driver()
        out = {}
        for name, c in self.stages.items():
            out[name] = {**c.to_json(), "peak_stored_bytes": self.peak_stored.get(name, 0)}
        return out


def add_run(earlier: dict | None, mine: dict) -> dict:
    """The counts of a stage over the runs of ``earlier`` (totals as :func:`load_stats` gives
    them, or None) and this run's ``mine`` (:meth:`StageCounts.to_json`): every count summed,
    the peaks (task memory, stored bytes) the larger, ``runs`` one more.

    >>> a = {**IOCounts(bytes_written=5, tasks=2, peak_task_memory=9).to_json(), "peak_stored_bytes": 7}
    >>> t = add_run(add_run(None, a), {**a, "peak_stored_bytes": 3})
    >>> t["bytes_written"], t["tasks"], t["peak_task_memory"], t["peak_stored_bytes"], t["runs"]
    (10, 4, 9, 7, 2)
    """
    c = IOCounts.from_json(mine)
    if earlier is not None:
        c.merge(IOCounts.from_json(earlier))
    before = earlier or {}
    return {**c.to_json(),
            "peak_stored_bytes": max(before.get("peak_stored_bytes", 0), mine.get("peak_stored_bytes", 0)),
            "runs": before.get("runs", 0) + 1}


def save_stats(store, board: str, workers: int, executor: str, stages: dict, extra: dict | None = None) -> None:
    """Write ``DIR/stats.json`` (per stage, the counts summed over the runs that worked on it:
    :func:`add_run`), checksummed like the manifest so that :func:`load_stats` can refuse a
    damaged one."""
    data = {"format": STATS_FORMAT, "board": board, "workers": workers, "executor": executor,
            "stages": stages, **(extra or {})}
    data["xxh64"] = checksum(data)
    store.write_atomic(STATS, (json.dumps(data, indent=1) + "\n").encode(), durable=False)


def load_stats(store) -> dict:
    """The checked ``stats.json`` of a build directory (a :class:`Storage`). One of format 1
    (the counts of the last run of each stage) reads as one run per stage that did not
    count a ``.c4z`` merge's files (``runs`` 1, ``c4z_counted`` false)."""
    where = store.display(STATS)
    try:
        data = json.loads(store.read_bytes(STATS).decode())
    except FileNotFoundError:
        raise BuildInputError(f"{where}: no stats (build it with this version of c4table)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptDataError(f"{where}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or data.get("format") not in (STATS_FORMAT, STATS_FORMAT_1):
        raise CorruptDataError(f"{where}: not a c4table stats file")
    if data.get("xxh64") != checksum(data) or not isinstance(data.get("stages"), dict):
        raise CorruptDataError(f"{where}: checksum does not match (damaged or edited by hand)")
    if data["format"] == STATS_FORMAT_1:
        data["stages"] = {k: {**v, "runs": 1} for k, v in data["stages"].items()}
        data["c4z_counted"] = False
    return data


STAGE_ORDER = ("setup", "forward", "backward", "merge")


def _secs(counts: dict, key: str) -> str:
    """A time of the counts in seconds ("-" where a build of an older version did not count it)."""
    return f"{counts[key] / 1e6:,.1f}s" if key in counts else "-"


def format_stats(stages: dict) -> list[str]:
    """Lines of a table of the per-stage counts (as :meth:`StageCounts.to_json` gives them)."""
    rows = [("stage", "written", "objects", "read", "GETs", "ranged", "HEAD/LIST", "peak stored",
             "tasks", "task mem", "CPU", "sys", "wall")]
    names = [s for s in STAGE_ORDER if s in stages] + [s for s in stages if s not in STAGE_ORDER]
    for name in names:
        c = stages[name]
        rows.append((name, format_size(c["bytes_written"]), f"{c['objects_written']:,}",
                     format_size(c["bytes_read"]), f"{c['get_requests']:,}", f"{c['ranged_reads']:,}",
                     f"{c['head_requests'] + c['list_requests']:,}",
                     format_size(c["peak_stored_bytes"]), f"{c['tasks']:,}",
                     format_size(c["peak_task_memory"]), _secs(c, "cpu_us"), _secs(c, "sys_us"),
                     _secs(c, "wall_us")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths)))
            for r in rows]
