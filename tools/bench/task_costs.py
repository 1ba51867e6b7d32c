#!/usr/bin/env python3
"""Where a build's CPU goes task by task: CPU (user, system) and wall time of every task, per
kind of task, each worker's first task apart, and the workers' CPU outside their tasks; with
``--untraced`` the tasks run without the per-task memory tracing (``tracemalloc``) that
``c4table.pipeline.runtime.counters.run_counted`` does, to price it.

    python -m tools.bench.task_costs 5x5 --workers 8 [--untraced] [--memory 4GiB]

Each task of the worker processes is timed in the worker (``os.times`` around it); tasks a
stage runs in the driver (lists of one task) are not listed. A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from c4table.pipeline.runtime.allocator import one_arena  # noqa: E402

one_arena()

from c4table.pipeline.runtime import counters  # noqa: E402

from c4table.pipeline.runtime import execution
from c4table.pipeline.stages.build import open_build, run_build  # noqa: E402

TRACED = True


def timed(fn, *args):
    """:func:`counters.run_counted`, timed, its time appended to the log (in the worker)."""
    t0, w0 = os.times(), time.perf_counter()
    result = counters._run(fn, args, traced=TRACED)
    t1 = os.times()
    with open(os.environ["TASK_COSTS_LOG"], "a") as f:
        f.write(f"{os.getpid()} {fn.__name__} {t1.user - t0.user} {t1.system - t0.system} "
                f"{time.perf_counter() - w0}\n")
    return result


def main(argv=None) -> int:
    global TRACED
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--untraced", action="store_true")
    a = ap.parse_args(argv)
    TRACED = not a.untraced
    d = tempfile.mkdtemp(prefix="task_costs_")
    log = os.path.join(d, "tasks.log")
    os.environ["TASK_COSTS_LOG"] = log
    execution.run_counted = timed   # the pool's workers are forked: they inherit it
    try:
        t = time.perf_counter()
        run_build(open_build(a.board, os.path.join(d, "b"), memory=a.memory, workers=a.workers,
                             quiet=True), keep_work=False)
        wall = time.perf_counter() - t
        rows = [ln.split() for ln in open(log)] if os.path.exists(log) else []
    finally:
        shutil.rmtree(d, ignore_errors=True)
    seen: dict = collections.defaultdict(int)
    kinds: dict = collections.defaultdict(lambda: {"first": [0, 0.0, 0.0, 0.0], "later": [0, 0.0, 0.0, 0.0]})
    for pid, name, user, system, w in rows:
        k = kinds[name]["first" if seen[pid, name] == 0 else "later"]
        seen[pid, name] += 1
        k[0] += 1
        k[1] += float(user)
        k[2] += float(system)
        k[3] += float(w)
    print(f"{a.board} on {a.workers} workers, {'untraced' if a.untraced else 'traced'}: wall "
          f"{wall:.2f} s, load {os.getloadavg()[0]:.1f}")
    print("task kind      which   tasks   user s   sys s   wall s   CPU ms/task")
    for name, k in kinds.items():
        for which, (n, u, s, w) in k.items():
            if n:
                print(f"{name:14} {which:6} {n:6} {u:8.2f} {s:7.2f} {w:8.2f} {1e3 * (u + s) / n:12.1f}")
    tasks = sum(float(r[2]) + float(r[3]) for r in rows)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    print(f"tasks {len(rows)}: CPU {tasks:.2f} s; worker processes in all {ch.ru_utime + ch.ru_stime:.2f}"
          f" s; the driver {me.ru_utime + me.ru_stime:.2f} s (its imports included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
