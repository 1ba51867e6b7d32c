#!/usr/bin/env python3
"""What a bigger ``--memory`` costs: whole builds of one board at several budgets, each with
the allocator as shipped and, for comparison, with glibc's heap trimmed above a threshold
(``--trim``: the allocator's ``TRIM_THRESHOLD``, for instance 2147483647, the largest that
mallopt takes as a number; -1, never trim, is what the build uses).

    python -m tools.bench.memory_budget 6x5 --memory 4GiB 12GiB --trim -1 2147483647 [--format c4z]

Prints per build: wall, user and system CPU, minor page faults (of the command and the workers
it waited for, ``os.wait4``) and ns per entry; with the machine's CPU model, its ``np.sort``
rate (20 M random uint64, measured here before the builds) and the load average. Each build
runs in a fresh directory, deleted after. A benchmark, not a test: run it on an idle machine.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c4table.builddir.reader import BuildDir

CHILD = r"""
import sys
from c4table.pipeline.runtime import allocator
allocator.TRIM_THRESHOLD = int(sys.argv[1])
from c4table.cli.main import main
sys.argv = ["c4table", *sys.argv[2:]]
main()
"""


def sort_rate() -> float:
    """Million keys per second of ``np.sort`` on 20 M random uint64 (best of three)."""
    import numpy as np
    a = np.random.default_rng(1).integers(0, 2**63, 20_000_000, dtype=np.uint64)
    best = min(_timed(lambda: np.sort(a)) for _ in range(3))
    return len(a) / best / 1e6


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def one_build(board: str, memory: str, trim: int, fmt: str, workers: int, scratch: Path) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"budget-{board}-", dir=scratch))
    args = ["build", board, "--out", str(out), "--memory", memory, "--workers", str(workers),
            "--format", fmt, "-q"]
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(trim), *args], stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"build {board} --memory {memory} (trim {trim}) failed: status {status}")
    entries = BuildDir.load(out).table.entries
    shutil.rmtree(out, ignore_errors=True)
    cpu = ru.ru_utime + ru.ru_stime
    return {"board": board, "memory": memory, "trim": trim, "format": fmt, "wall_s": round(wall, 1),
            "user_s": round(ru.ru_utime, 1), "sys_s": round(ru.ru_stime, 1),
            "minflt": ru.ru_minflt, "entries": entries, "ns_per_entry": round(cpu / entries * 1e9, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("board")
    ap.add_argument("--memory", nargs="+", default=["4GiB", "12GiB"])
    ap.add_argument("--trim", nargs="+", type=int, default=[-1, 2**31 - 1],
                    help="glibc trim thresholds to compare (-1: never trim, as shipped)")
    ap.add_argument("--format", default="dat", choices=["dat", "c4z"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    a = ap.parse_args()
    print(f"# {cpu_model()}; np.sort {sort_rate():.0f} M keys/s; load {os.getloadavg()[0]:.2f}",
          flush=True)
    print("board memory trim format  wall_s  user_s  sys_s  minflt  ns/entry", flush=True)
    for _ in range(a.repeat):
        for memory in a.memory:
            for trim in a.trim:
                r = one_build(a.board, memory, trim, a.format, a.workers, a.scratch)
                print(f"{r['board']} {memory} {trim} {a.format}  {r['wall_s']}  {r['user_s']}  "
                      f"{r['sys_s']}  {r['minflt']:,}  {r['ns_per_entry']}  "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
