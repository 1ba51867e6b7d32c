#!/usr/bin/env python3
"""CPU per stage of a serial build (``--workers 1``: every task in this process), in seconds and
in ns per table entry: forward, backward, merge, and the rest (opening and closing the build;
the imports before it are not counted).

    python -m tools.bench.stage_cpu 6x4 [--out DIR] [--repeat 2]

CPU is user + sys of this process (``getrusage``) around each stage's driver
(``Build.run_stage``). Run it with another installation's python to compare two versions
stage by stage (the installation's own c4table is imported): alternate them in one session
on one machine, and prefer the best of a few runs on a loaded machine. A benchmark, not a
test.
"""
from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path


def cpu_seconds() -> float:
    """User + sys CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed_build(board: str, out: Path) -> tuple[dict, int, float]:
    """Build ``board`` serially in ``out``; return (CPU seconds per stage, entries, total CPU)."""
    from c4table.pipeline.stages import build as build_mod   # the running installation's

    start = cpu_seconds()
    per_stage: dict[str, float] = {}
    original = build_mod.Build.run_stage

    def run_stage(self, stage, fn, *args):
        t = cpu_seconds()
        try:
            return original(self, stage, fn, *args)
        finally:
            per_stage[stage] = per_stage.get(stage, 0.0) + cpu_seconds() - t

    build_mod.Build.run_stage = run_stage
    try:
        b = build_mod.open_build(board, out, workers=1, quiet=True)
        build_mod.run_build(b)
        entries = b.manifest.total("entries", range(b.board.cells + 1))
    finally:
        build_mod.Build.run_stage = original
    return per_stage, entries, cpu_seconds() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("board")
    ap.add_argument("--out", type=Path, default=None, help="build directory (default: a temporary one)")
    ap.add_argument("--repeat", type=int, default=1, help="builds, each in a fresh directory")
    args = ap.parse_args()
    for i in range(args.repeat):
        base = args.out or Path(tempfile.mkdtemp(prefix="stage-cpu-"))
        out = base / f"run-{i}"
        t = time.perf_counter()
        try:
            stages, entries, total = timed_build(args.board, out)
        finally:
            shutil.rmtree(out, ignore_errors=True)
            if args.out is None:
                shutil.rmtree(base, ignore_errors=True)
        wall = time.perf_counter() - t
        rest = total - sum(stages.values())
        cols = "  ".join(f"{k} {v:6.2f} s {v / entries * 1e9:5.0f} ns" for k, v in
                         [*stages.items(), ("rest", rest)])
        print(f"{args.board} run {i + 1}: CPU {total:6.2f} s ({total / entries * 1e9:.0f} ns/entry, "
              f"wall {wall:.1f} s): {cols}", flush=True)


if __name__ == "__main__":
    main()
