#!/usr/bin/env python3
"""Compare two installations of c4table side by side: CPU and wall time of ``c4table build``.

    python -m tools.bench.bench_ab --old /path/to/old/venv/bin/python 5x4 4x6 5x5 [--repeat 3]

Runs ``c4table build BOARD --workers N --quiet`` (the console script beside each python) with
the old installation and with this one (``--new``, default: the running interpreter), alternately, ``--repeat`` times each,
in fresh temporary directories. Reports per run the wall time and the CPU time of the whole
process tree (user + sys of the build and its worker processes, from ``getrusage`` of the
waited child), the 1-minute load, the best of each, the ratio old / new and entries per
CPU-second; checks that both builds wrote the same bytes (sha256). CPU time is the figure to
compare on a shared machine (wall time grows with other people's load; CPU time much less).
An untimed ``build 4x4`` with each interpreter fills numba's cache first.
A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed_run(cmd: list[str], cwd: Path, system: list | None = None) -> tuple[float, float]:
    """Run ``cmd`` in ``cwd`` (its output dropped); return (wall s, CPU s of its process tree:
    user + sys of it and the children it waited for, from ``getrusage``); the system seconds
    are appended to ``system`` if given. Also used by ``tools/bench/scale_run.py``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if system is not None:
        system.append(after.ru_stime - before.ru_stime)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_build(python: str, board: str, workers: int, memory: str | None,
              system: list | None = None) -> tuple[float, float, str, int]:
    """One build: (wall s, CPU s of the process tree, sha256 of the table, entries); its
    system seconds appended to ``system`` if given."""
    out = Path(tempfile.mkdtemp(prefix="c4-ab-"))
    try:
        # the installation's console script (the CLI's module moved between versions)
        cmd = [str(Path(python).parent / "c4table"), "build", board, "--out", str(out), "--quiet",
               "--workers", str(workers), *(["--memory", memory] if memory else [])]
        # cwd: not a source tree, whose c4table/ would shadow the installation under test
        wall, cpu = timed_run(cmd, out, system)
        table = next(out.glob("*.dat"))
        h = hashlib.sha256()
        with open(table, "rb") as f:
            while b := f.read(1 << 24):
                h.update(b)
        return wall, cpu, h.hexdigest(), table.stat().st_size // _entry_size(table)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _entry_size(table: Path) -> int:
    from c4table.builddir.reader import BuildDir
    return BuildDir.load(table.parent).board.entry_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+")
    ap.add_argument("--old", required=True, help="python of the old installation")
    ap.add_argument("--new", default=sys.executable, help="python of the new one (default: this)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default=None)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    for py in (args.old, args.new):
        run_build(py, "4x4", args.workers, args.memory)   # numba cache, page cache
    ok = True
    for board in args.boards:
        res = {"old": [], "new": []}
        digests = set()
        for i in range(args.repeat):
            for name in ("old", "new"):
                load = os.getloadavg()[0]
                system = []
                wall, cpu, digest, entries = run_build(getattr(args, name), board, args.workers,
                                                       args.memory, system)
                digests.add(digest)
                res[name].append((wall, cpu))
                print(f"{board:>5} {name}  run {i + 1}: wall {wall:7.2f} s  CPU {cpu:7.2f} s (sys {system[0]:6.2f})  "
                      f"load {load:5.2f}  sha256 {digest[:16]}", flush=True)
        bo = min(c for _, c in res["old"]), min(w for w, _ in res["old"])
        bn = min(c for _, c in res["new"]), min(w for w, _ in res["new"])
        same = len(digests) == 1
        ok &= same
        print(f"{board:>5} best CPU old {bo[0]:.2f} s, new {bn[0]:.2f} s: {bo[0] / bn[0]:.2f}x "
              f"({entries / bo[0] / 1e6:.2f} -> {entries / bn[0] / 1e6:.2f} M entries per CPU-s); "
              f"best wall old {bo[1]:.2f} s, new {bn[1]:.2f} s: {bo[1] / bn[1]:.2f}x; "
              f"{entries:,} entries; bytes {'identical' if same else 'DIFFERENT'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
