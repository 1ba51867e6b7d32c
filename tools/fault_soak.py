#!/usr/bin/env python3
"""Fault soak: kill a real ``c4table build`` with SIGKILL to its whole process group (driver and
worker processes) at random points of the forward pass, the backward pass and the merge,
resume it, and check that the finished table is byte-identical to a clean build. Repeats N
times and prints how many runs ended byte-identical.

    python tools/fault_soak.py --board 5x4 --runs 20           # ~10 s a run on 2 cores
    python tools/fault_soak.py --board 4x6 --runs 5 --seed 7 --kills 3

Each run kills the build 1..--kills times. A kill point is either a stage target (wait until the
manifest shows a given number of finished forward or backward steps, or the start of the merge,
then wait a random fraction of a second) or a plain random delay from the start. After the last
kill the same command runs to completion. Exit status 0 if every run ended identical.

The helpers (:func:`start_build`, :func:`kill_group`, :func:`wait_for_stage`, ...) are also used
by ``tests/test_faults.py``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c4table.verify import sha256_of as sha256_file

ROOT = Path(__file__).resolve().parents[1]


def build_cmd(board: str, out: Path, workers: int = 2, memory: str | None = None,
              extra: tuple = ()) -> list[str]:
    cmd = [sys.executable, "-m", "c4table.cli", "build", board, "--out", str(out), "-q",
           "--workers", str(workers)]
    if memory:
        cmd += ["--memory", memory]
    return cmd + list(extra)


def start_build(cmd: list[str], log: Path | None = None, env: dict | None = None) -> subprocess.Popen:
    """Start ``cmd`` in a new session (its own process group), stderr to ``log``."""
    err = open(log, "ab") if log else subprocess.DEVNULL
    try:
        return subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=err,
                                cwd=ROOT, env=env)
    finally:
        if log:
            err.close()


def kill_group(p: subprocess.Popen) -> bool:
    """SIGKILL the process group of ``p``; True if it was still running (a real kill)."""
    alive = p.poll() is None
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    # Workers of the group die with it; give the kernel a moment to reap them so their
    # build-directory lock and open files are gone before the resume.
    deadline = time.time() + 5
    while time.time() < deadline:
        try:
            os.killpg(p.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    return alive and p.returncode == -signal.SIGKILL


def read_manifest(out: Path) -> dict | None:
    try:
        return json.loads((Path(out) / "manifest.json").read_text())
    except (FileNotFoundError, ValueError):
        return None


def stage_of(m: dict | None) -> tuple[int, int, bool]:
    """(finished forward steps, finished backward steps, table recorded)."""
    if not m:
        return 0, 0, False
    st = m.get("steps", {})
    return len(st.get("forward", {})), len(st.get("backward", {})), bool(m.get("table"))


def wait_for_stage(p: subprocess.Popen, out: Path, stage: str, count: int,
                   timeout: float = 120) -> bool:
    """Wait until the manifest shows ``count`` finished ``stage`` steps (``forward``,
    ``backward``; ``merge`` = every backward step done). False if the process ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if p.poll() is not None:
            return False
        f, b, _ = stage_of(read_manifest(out))
        if (stage == "forward" and f >= count) or (stage == "backward" and b >= count) or \
                (stage == "merge" and b >= count):
            return True
        time.sleep(0.005)
    return False


def cells_of(board: str) -> int:
    w, h = (int(x) for x in board.lower().split("x"))
    return w * h


def kill_once(cmd: list[str], out: Path, rng: random.Random, cells: int, target: str | None = None,
              log: Path | None = None, max_delay: float = 8.0) -> str:
    """Start the build, kill it at a random point (of ``target`` stage if given); describe it.
    ``max_delay`` bounds the delay of the ``time`` target (seconds after start), and a tenth
    of it the delay after the merge starts. Below its default of 8 it also shrinks, in
    proportion, the range of steps a forward or backward kill waits for and the delay after
    them: a retry with a smaller one hits a build that finished before the first kill."""
    target = target or rng.choice(["forward", "backward", "merge", "time"])
    scale = min(1.0, max_delay / 8.0)
    p = start_build(cmd, log)
    if target in ("forward", "backward"):
        n = rng.randint(1, max(1, round(cells * scale)))
        reached = wait_for_stage(p, out, target, n)
        delay = rng.uniform(0, 0.3 * scale)
        what = f"{target} after {n} step(s) + {delay:.2f}s"
    elif target == "merge":
        reached = wait_for_stage(p, out, "merge", cells + 1)
        delay = rng.uniform(0, min(0.8, max_delay / 10))   # a 5x4 merge takes ~0.15 s now
        what = f"merge + {delay:.2f}s"
    else:
        reached = True
        delay = rng.uniform(0.3, max(0.4, max_delay))
        what = f"{delay:.2f}s after start"
    if reached:
        time.sleep(delay)
    killed = kill_group(p)
    f, b, t = stage_of(read_manifest(out))
    state = f"manifest: {f} forward, {b} backward{', table' if t else ''}"
    return f"{'killed' if killed else 'finished before the kill'} at {what} ({state})"


def finish(cmd: list[str], log: Path | None = None, timeout: float = 600) -> int:
    p = start_build(cmd, log)
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        return -1


def clean_build(board: str, out: Path, workers: int, memory: str | None = None) -> str:
    shutil.rmtree(out, ignore_errors=True)
    code = finish(build_cmd(board, out, workers, memory))
    if code != 0:
        raise SystemExit(f"clean build of {board} failed (exit {code})")
    return sha256_file(out / f"connect4_{board}.dat")


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
