#!/usr/bin/env python3
"""Where a build's CPU goes, per function: run ``c4table build`` with the pipeline's functions
and numba kernels wrapped in timers, and print each one's exclusive CPU (``thread_time``: user
+ system of the calling thread, its wrapped callees' time taken out), summed over the driver
and every worker process.

    python -m tools.bench.profile_build 6x4 --workers 2 [--memory 4GiB] [--format c4z]

The wrappers keep each function's name and module, so the pool's workers (forked from this
process) run them and pickle them by reference; each process writes its sums to a temporary
directory after every task, and the driver adds them up at the end. Time in unwrapped code is
charged to the nearest wrapped caller (a kernel called through ``kernelset.for_board`` to the
task that called it). The wrappers cost about a microsecond a call: compare shares, not
totals, with an unwrapped build. A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import collections
import functools
import importlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from c4table.pipeline.runtime.allocator import one_arena  # noqa: E402

one_arena()   # as the command line does, before numpy and pyarrow load

MODULES = ["c4table.pipeline.stages.forward", "c4table.pipeline.stages.backward", "c4table.pipeline.sort.extsort",
           "c4table.pipeline.stages.merge", "c4table.builddir.shards", "c4table.builddir.shardcodec",
           "c4table.pipeline.sort.runcodec",
           "c4table.pipeline.sort.shuffle", "c4table.pipeline.stages.merge_c4z",
           "c4table.c4z.blocks", "c4table.c4z.codec", "c4table.c4z.assemble",
           "c4table.pipeline.stages.pull", "c4table.pipeline.kernels.cpu"]
PYTHON_FUNCTIONS = {
    "write_shard", "write_outcomes", "read_shard", "write_run", "read_range_window",
    "merge_window", "sort_unique", "write_messages", "read_messages", "merge_range",
    "sorted_chunks", "_expand", "annotate_task", "merge_task", "expand_task", "range_task",
    "_read_stream", "open_row_groups", "read_row_groups", "choose_splitters", "two_level",
    "hash_ranges", "_merge_pairwise", "encode_keys", "decode_keys", "encode_outcomes",
    "decode_outcomes", "range_blocks_task", "encode_entries", "decode_block_bytes",
    "encode_words", "rows_of", "decode_block_rows", "gather_range", "assemble", "hash_stored", "zstd_frame", "annotate"}

_sums: dict = collections.defaultdict(lambda: [0, 0.0])   # name -> [calls, exclusive CPU s]
_stack: list = []
_out: Path | None = None


def _dump() -> None:
    (_out / f"{os.getpid()}.json").write_text(json.dumps(dict(_sums)))


def _wrap(name: str, fn):
    @functools.wraps(fn)
    def timed(*args, **kw):
        t = time.thread_time()
        _stack.append(0.0)
        try:
            return fn(*args, **kw)
        finally:
            dt = time.thread_time() - t
            inner = _stack.pop()
            s = _sums[name]
            s[0] += 1
            s[1] += dt - inner
            if _stack:
                _stack[-1] += dt
            else:
                _dump()
    return timed


def _install() -> None:
    from numba.core.registry import CPUDispatcher
    import pyarrow.parquet as pq
    mods = [importlib.import_module(m) for m in MODULES]
    # a kernel another kernel calls is left alone: numba compiles the caller with it as a
    # global, which must be the kernel, not the wrapper
    called = {name for mod in mods for v in vars(mod).values() if isinstance(v, CPUDispatcher)
              for name in v.py_func.__code__.co_names}
    for m, mod in zip(MODULES, mods):
        for n, v in list(vars(mod).items()):
            if isinstance(v, CPUDispatcher) and n not in called or (
                    callable(v) and n in PYTHON_FUNCTIONS
                    and getattr(v, "__module__", "").startswith("c4table")):
                setattr(mod, n, _wrap(f"{m.rsplit('.', 1)[-1]}.{n}", v))
    pq.write_table = _wrap("pyarrow.parquet.write_table", pq.write_table)


def main() -> int:
    global _out
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--format", default="dat", choices=["dat", "c4z"])
    a = ap.parse_args()
    _out = Path(tempfile.mkdtemp(prefix="c4-profile-"))
    out_dir = Path(tempfile.mkdtemp(prefix="c4-profile-build-"))
    _install()
    from c4table.cli.main import main as cli
    t0 = time.perf_counter()
    try:
        cli(["build", a.board, "--out", str(out_dir), "--workers", str(a.workers),
             "--memory", a.memory, "--quiet", "--format", a.format])
    except SystemExit as e:
        if e.code:
            raise
    finally:
        wall = time.perf_counter() - t0
        _dump()
        total = collections.defaultdict(lambda: [0, 0.0])
        for f in _out.glob("*.json"):
            for k, (calls, cpu) in json.loads(f.read_text()).items():
                total[k][0] += calls
                total[k][1] += cpu
        shutil.rmtree(_out, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    user, sys_ = me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime
    cpu = user + sys_
    print(f"{a.board} on {a.workers} workers: wall {wall:.2f} s, CPU {cpu:.2f} s "
          f"(user {user:.2f}, system {sys_:.2f}), load {os.getloadavg()[0]:.1f}")
    print(f"{'exclusive CPU s':>15} {'share':>6} {'calls':>7}  function")
    for k, (calls, s) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        if s >= 0.005 * cpu:
            print(f"{s:15.2f} {100 * s / cpu:5.1f}% {calls:7d}  {k}")
    rest = cpu - sum(s for _, s in total.values())
    print(f"{rest:15.2f} {100 * rest / cpu:5.1f}%          (outside the wrapped functions: "
          "start-up, the driver, the pool)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
