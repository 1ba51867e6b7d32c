#!/usr/bin/env python3
"""Fault soak: kill a real ``c4table build`` with SIGKILL to its whole process group (driver and
worker processes) at random points of the forward pass, the backward pass and the merge,
resume it, and check that the finished table is byte-identical to a clean build. Repeats N
times and prints how many runs ended byte-identical.

    python -m tools.diag.fault_soak --board 5x4 --runs 20           # ~10 s a run on 2 cores
    python -m tools.diag.fault_soak --board 4x6 --runs 5 --seed 7 --kills 3

Each run kills the build 1..--kills times. A kill point is either a stage target (wait until the
manifest shows a given number of finished forward or backward steps, or the start of the merge,
then wait a random fraction of a second) or a plain random delay from the start. After the last
kill the same command runs to completion. Exit status 0 if every run ended identical.

The kill machinery (start, kill, wait for a stage) lives in ``c4table.testing.faults``, shared with
``tests/test_faults.py``.
"""
from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from c4table.io.hashes import sha256_of as sha256_file
from c4table.testing.faults import build_cmd, cells_of, clean_build, finish, kill_once


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--board", default="5x4")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--kills", type=int, default=2, help="at most this many kills per run")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default=None, help="--memory of the builds (small = many shards)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="c4soak-"))
    base.mkdir(parents=True, exist_ok=True)
    cells = cells_of(args.board)
    print(f"fault soak: board {args.board}, {args.runs} runs, up to {args.kills} kill(s) each, "
          f"workers {args.workers}, seed {seed}, in {base}", flush=True)
    t0 = time.time()
    ref = clean_build(args.board, base / "clean", args.workers, args.memory)
    print(f"clean build: sha256 {ref} ({time.time() - t0:.1f}s)", flush=True)
    identical = real_kills = 0
    for run in range(1, args.runs + 1):
        out = base / f"run{run:03d}"
        shutil.rmtree(out, ignore_errors=True)
        cmd = build_cmd(args.board, out, args.workers, args.memory)
        log = base / f"run{run:03d}.log"
        kills = []
        for _ in range(rng.randint(1, args.kills)):
            desc = kill_once(cmd, out, rng, cells, log=log)
            real_kills += desc.startswith("killed")
            kills.append(desc)
        code = finish(cmd, log)
        table = out / f"connect4_{args.board}.dat"
        digest = sha256_file(table) if code == 0 and table.exists() else None
        same = digest == ref
        identical += same
        verdict = "identical" if same else f"DIFFERENT (exit {code}, sha256 {digest})"
        print(f"run {run}/{args.runs}: " + "; ".join(kills) + f"; resumed -> {verdict}", flush=True)
        if same:
            shutil.rmtree(out, ignore_errors=True)
            log.unlink(missing_ok=True)
    print(f"{identical}/{args.runs} runs ended byte-identical to the clean build "
          f"({real_kills} kills hit a running build; {time.time() - t0:.0f}s)", flush=True)
    if not args.dir and identical == args.runs:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if identical == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
