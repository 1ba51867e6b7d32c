#!/usr/bin/env python3
"""Benchmark full builds: per stage (forward, backward, merge) wall time, entries/s, CPU time
of the process tree (core-seconds per entry: what ``COSTS`` in ``pipeline/planning/plan.py`` holds), peak RSS of
the whole process tree, peak temporary disk, plus a baseline measured in the same run
(numpy-sorting as many random uint64 as the table has entries) so figures compare across
machines as ratios.

    python -m tools.bench.bench_build 5x4 5x5 6x4 [--workers 2] [--memory 4GiB] [--keep DIR]

Prints one table row per board and stage; a benchmark, not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

# Set the process up as the command line does (c4table/cli/main.py) before numpy and pyarrow load:
# one BLAS thread, one malloc arena (pipeline/runtime/allocator.py), so the stages measured here run as
# `c4table build` runs them. (Older checkouts measured side by side may lack one_arena.)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    from c4table.pipeline.runtime.allocator import one_arena
except ImportError:
    pass
else:
    one_arena()

import numpy as np  # noqa: E402
from tools.bench.diskuse import DiskSampler, PeakSampler  # noqa: E402

try:
    import psutil
except ImportError:
    sys.exit("bench_build: measuring memory needs psutil, the [bench] extra: pip install 'c4table[bench]'")

# c4table comes from the checkout's editable install (make install-test): the source tree
# alone has no c4table.pipeline (pyproject maps the pipeline/ folder to it).
from c4table.pipeline.stages import backward  # noqa: E402
from c4table.pipeline.stages import forward
from c4table.pipeline.stages import merge
from c4table.pipeline.stages.build import open_build  # noqa: E402


def rss_anon(pid: int) -> int:
    """Private anonymous resident bytes of a process (``RssAnon``: heap and numpy buffers, not
    file pages the kernel can drop)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeMemory:
    """The probe of a :class:`PeakSampler` reading the memory of this process and its children:
    their PSS (what it returns). RSS sums count pages shared by several processes once per
    process; PSS divides each shared page among its users, so its sum is the tree's real
    footprint; anonymous RSS leaves out file pages (page cache) altogether. Keeps the peak RSS,
    and the peaks of PSS and anonymous RSS per stage (``stage`` is set by the caller)."""

    def __init__(self):
        self.me = psutil.Process()
        self.peak_rss = 0
        self.stage = "start"
        self.stage_pss: dict[str, int] = {}
        self.stage_anon: dict[str, int] = {}

    def __call__(self) -> int:
        rss = pss = anon = 0
        for p in [self.me, *self.me.children(recursive=True)]:
            try:
                info = p.memory_full_info()
                rss += info.rss
                pss += info.pss
                anon += rss_anon(p.pid)
            except psutil.Error:
                pass
        self.peak_rss = max(self.peak_rss, rss)
        st = self.stage
        self.stage_pss[st] = max(self.stage_pss.get(st, 0), pss)
        self.stage_anon[st] = max(self.stage_anon.get(st, 0), anon)
        return pss


class BuildSampler:
    """A build's memory (:class:`TreeMemory`) and the bytes of its directory ``root`` (the
    files' lengths), each sampled every ``period`` seconds by a thread of its own."""

    def __init__(self, root: Path, period: float = 0.05):
        self.memory = TreeMemory()
        self.threads = (PeakSampler(self.memory, period), DiskSampler(root, period, allocated=False))

    def start(self) -> None:
        for s in self.threads:
            s.start()

    def stop(self) -> None:
        for s in self.threads:
            s.stop()

    @property
    def stage(self) -> str:
        return self.memory.stage

    @stage.setter
    def stage(self, name: str) -> None:
        self.memory.stage = name

    @property
    def peak_rss(self) -> int:
        return self.memory.peak_rss

    @property
    def peak_pss(self) -> int:
        return self.threads[0].peak

    @property
    def peak_disk(self) -> int:
        return self.threads[1].peak

    @property
    def stage_pss(self) -> dict[str, int]:
        return self.memory.stage_pss

    @property
    def stage_anon(self) -> dict[str, int]:
        return self.memory.stage_anon


def tree_cpu(sampler: BuildSampler | None = None) -> float:
    """User + system CPU seconds of this process and its live children (the pool's workers
    live through all stages, so differences between stages are per-stage CPU), without the
    ``sampler``'s threads' own (reading every process's smaps costs CPU too)."""
    me = psutil.Process()
    total = 0.0
    if sampler is not None:
        ids = {s.native_id for s in sampler.threads}
        for th in me.threads():
            if th.id in ids:
                total -= th.user_time + th.system_time
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def baseline_sort_seconds(n: int) -> float:
    """Time to sort ``n`` random uint64 in place with numpy (one core)."""
    x = np.random.default_rng(1).integers(0, 2**63, size=n, dtype=np.uint64)
    t = time.perf_counter()
    x.sort()
    return time.perf_counter() - t


def bench(board: str, workers: int | None, memory: str, keep: Path | None) -> None:
    root = Path(tempfile.mkdtemp(prefix=f"bench_{board}_", dir=keep))
    sampler = BuildSampler(root)
    sampler.start()
    b = open_build(board, root, memory=memory, workers=workers, quiet=True)
    n_workers = b.executor.workers
    times, cpus = {}, {}
    try:
        for name, stage in (("forward", forward.run), ("backward", backward.run), ("merge", merge.run)):
            sampler.stage = name
            t, c = time.perf_counter(), tree_cpu(sampler)
            stage(b)
            times[name] = time.perf_counter() - t
            cpus[name] = tree_cpu(sampler) - c
    finally:
        b.close()
        sampler.stop()
    table = b.manifest.table
    entries = table.entries
    total = sum(times.values())
    base = baseline_sort_seconds(entries)
    mib = 2**20
    cpus["total"] = sum(cpus.values())
    for name, t in [*times.items(), ("total", total)]:
        mem = (f"   peak PSS {sampler.stage_pss.get(name, 0) / mib:7,.0f} MiB, anonymous "
               f"{sampler.stage_anon.get(name, 0) / mib:7,.0f} MiB") if name in times else ""
        cpu = cpus[name]
        print(f"{board:>5} {name:>8} {t:9.2f} s {entries / t / 1e6:9.2f} M entries/s  CPU {cpu:8.2f} s "
              f"{cpu / entries * 1e9:6.0f} ns/entry{mem}")
    print(f"{board:>5}  load {' '.join(f'{x:.2f}' for x in os.getloadavg())}  entries {entries:,}  peak RSS {sampler.peak_rss / 2**20:,.0f} MiB  "
          f"peak PSS {sampler.peak_pss / 2**20:,.0f} MiB  "
          f"temp disk peak {sampler.peak_disk / 2**20:,.0f} MiB  final {table['bytes'] / 2**20:,.1f} MiB  "
          f"workers {n_workers}")
    print(f"{board:>5}  baseline: numpy sort of {entries:,} uint64 {base:.2f} s; "
          f"build / baseline = {total / base:.1f}x")
    print(f"{board:>5}  sha256 {table['sha256']}")
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--keep", type=Path, default=None, help="build under this directory and keep it")
    args = ap.parse_args()
    print(f"{'board':>5} {'stage':>8} {'wall':>11} {'rate':>20}")
    for board in args.boards:
        bench(board, args.workers, args.memory, args.keep)


if __name__ == "__main__":
    main()
