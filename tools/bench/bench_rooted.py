#!/usr/bin/env python3
"""Benchmark rooted builds (``c4table build WxH --root MOVES``) from random positions: entries,
build wall time, peak memory (PSS of the process tree) and disk (peak temporary and final).

    python -m tools.bench.bench_rooted 7x6 --plies 20 22 24 28 --per-ply 3 [--seed 1] [--workers 2]
                                 [--memory 4GiB] [--timeout 900] [--keep DIR]

Roots are random legal positions: uniformly random legal moves from the empty board with a
seeded RNG, drawn again whenever someone has won on the way (so no one has won at the root).
``--quiet`` plays only moves after which neither side has a winning move (fewer threats, larger
subtrees); ``--rank N`` plans N random roots per build (``c4table plan --root``, 6 probe plies)
and builds the one with the largest estimate.
Each build runs the real CLI in a subprocess (killed after ``--timeout`` seconds, reported as
such). Prints one line per root and the machine's load (``uptime``) before and after; a
benchmark, not a test.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c4table.builddir.reader import BuildDir
from c4table.errors import C4Error
from c4table.game.board import Board
from c4table.game.rules import Position
from tools.bench.bench_build import BuildSampler


def random_root(rng: random.Random, board: Board, ply: int) -> str:
    """A move string of ``ply`` random legal moves after which no one has won."""
    while True:
        pos = Position(board)
        for _ in range(ply):
            pos.play(rng.choice(pos.legal_moves()))
            if pos.winner is not None:
                break
        else:
            return pos.move_string()


def _threat(pos: Position) -> bool:
    """Either side has a move that wins at once."""
    for mover in (pos.ply, pos.ply + 1):
        q = pos.copy()
        q.ply = mover   # the side whose chip drops is decided by the ply's parity
        if any(q.child(c).winner is not None for c in q.legal_moves()):
            return True
    return False


def quiet_root(rng: random.Random, board: Board, ply: int) -> str:
    """A move string of ``ply`` random moves, each leaving neither side a winning move."""
    while True:
        pos = Position(board)
        for _ in range(ply):
            safe = [c for c in pos.legal_moves() if not _threat(pos.child(c))]
            if not safe:
                break
            pos.play(rng.choice(safe))
        else:
            return pos.move_string()


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def bench_root(board: Board, moves: str, workers: int, memory: str, timeout: float,
               keep: Path | None) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"rooted_{board}_{len(moves)}_", dir=keep))
    cmd = [sys.executable, "-m", "c4table.cli.main", "build", board.name, "--root", moves,
           "--out", str(root), "--workers", str(workers), "--memory", memory, "-q"]
    sampler = BuildSampler(root, period=0.2)
    sampler.start()
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        status = "ok" if p.returncode == 0 else f"exit {p.returncode}: {p.stderr.strip()[:200]}"
    except subprocess.TimeoutExpired:
        status = f"not finished in {timeout:.0f} s"
    wall = time.perf_counter() - t
    sampler.stop()
    out = {"ply": len(moves), "root": moves, "status": status, "seconds": round(wall, 1),
           "peak_pss_mib": round(sampler.peak_pss / 2**20), "peak_disk_mib": round(sampler.peak_disk / 2**20, 1)}
    try:
        t = BuildDir.load(root).table
        if t is not None:
            out["entries"] = t.entries
            out["final_mib"] = round(t.bytes / 2**20, 2)
    except (OSError, ValueError, C4Error):
        pass
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("--plies", type=int, nargs="+", required=True)
    ap.add_argument("--per-ply", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--json", action="store_true", help="one JSON object per root")
    ap.add_argument("--quiet", action="store_true", help="quiet roots (see above)")
    ap.add_argument("--rank", type=int, default=0, help="build the largest planned of N roots")
    ap.add_argument("--plan", action="store_true",
                    help="also print `c4table plan --root`'s estimate (entries, wall time) first")
    args = ap.parse_args()
    board = Board.parse(args.board)
    rng = random.Random(args.seed)
    print(f"# load before: {load()}", flush=True)
    for ply in args.plies:
        for _ in range(args.per_ply):
            pick = quiet_root if args.quiet else random_root
            moves = pick(rng, board, ply)
            if args.rank:
                from c4table.pipeline.planning.plan import plan_rooted
                ranked = []
                for _ in range(args.rank):
                    m = pick(rng, board, ply)
                    ranked.append((plan_rooted(board, m, args.workers, 2**31, probe_plies=6).entries, m))
                moves = max(ranked)[1]
            est = ""
            if args.plan:
                from c4table.pipeline.planning.plan import plan_rooted
                t = time.perf_counter()
                p = plan_rooted(board, moves, args.workers, 2**31)
                est = (f"  plan: {p.entries:,} entries, {p.wall_seconds:.0f} s "
                       f"(planned in {time.perf_counter() - t:.1f} s)")
            r = bench_root(board, moves, args.workers, args.memory, args.timeout, args.keep)
            r["plan"] = est.strip()
            if args.json:
                print(json.dumps(r), flush=True)
            else:
                print(f"ply {r['ply']:>2}  {r['root']:<{board.cells}}  entries {r.get('entries', 0):>13,}  "
                      f"{r['seconds']:8.1f} s  peak PSS {r['peak_pss_mib']:6,} MiB  "
                      f"disk peak {r['peak_disk_mib']:9,.1f} MiB  final {r.get('final_mib', 0):9,.2f} MiB  "
                      f"{r['status']}{est}", flush=True)
    print(f"# load after: {load()}", flush=True)


if __name__ == "__main__":
    main()
