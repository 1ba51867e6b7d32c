"""Killing builds at random points and checking that reruns resume: what the fault tests
(``tests/test_faults.py``) and ``tools/diag/fault_soak.py`` share. Builds run as
``python -m c4table.cli.main build`` in their own process group, so a kill takes the driver
and its workers together."""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from c4table.builddir.manifest import Manifest
from c4table.errors import C4Error
from c4table.io.hashes import sha256_of as sha256_file

ROOT = Path(__file__).resolve().parents[2]   # the builds' working directory (a checkout's root)


def build_cmd(board: str, out: Path, workers: int = 2, memory: str | None = None,
              extra: tuple = ()) -> list[str]:
    cmd = [sys.executable, "-m", "c4table.cli.main", "build", board, "--out", str(out), "-q",
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


def read_manifest(out: Path) -> Manifest | None:
    """The checked manifest of the build directory ``out``, or None if it has none (or a
    damaged one)."""
    try:
        return Manifest.load(Path(out))
    except C4Error:
        return None


def stage_of(m: Manifest | None) -> tuple[int, int, bool]:
    """(finished forward steps, finished backward steps, table recorded)."""
    if m is None:
        return 0, 0, False
    return len(m.finished_plies("forward")), len(m.finished_plies("backward")), m.table is not None


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
