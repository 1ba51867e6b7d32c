#!/usr/bin/env python3
"""Benchmark: reproduce the position counts of Table 1 of Böck's paper with BDD mode.

For each board (default: every board of Table 1 with at most 10^10 positions) it runs the BDD
forward pass (or, with ``--mode solve``, forward and backward pass) in a fresh subprocess, so
that peak RSS and CPU time belong to that board alone, and prints: board, our count, the
paper's count, OK/MISMATCH, wall time, CPU time, peak RSS, peak BDD nodes (stored nodes sampled
between operations) and, for context, Böck's time and node figure from the paper. It is a
benchmark, not a test; the exit status is 1 if any count differs or a run fails.

Examples::

    python -m tools.compare.bdd_table1                          # all boards <= 1e10 positions
    python -m tools.compare.bdd_table1 --boards 5x5,6x4,7x4 --mode solve
    python -m tools.compare.bdd_table1 --max-positions 1e8 --encoding plain
"""
from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "c4table" / "data" / "bock_table1.tsv"   # Böck's Table 1, source in its first line


def read_table1(path: Path) -> list[dict]:
    with path.open() as f:
        rows = csv.DictReader((line for line in f if not line.startswith("#")), delimiter="\t")
        return [{"board": f"{r['width']}x{r['height']}", "positions": int(r["positions"]),
                 "bock_time": r["bock_time"], "bock_nodes": int(r["bock_nodes_alloc"])}
                for r in rows]


def worker(args) -> None:
    """Run one board in this process and print one JSON line with the figures."""
    from c4table.bdd import count_positions, solve

    fn = solve if args.mode == "solve" else count_positions
    r = fn(args.worker, args.encoding, nodes=args.bdd_nodes, threads=args.threads,
           flavour=args.engine, terminal=args.terminal)
    print(json.dumps({"board": r.board, "total": r.total, "wall": r.wall, "cpu": r.cpu,
                      "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "peak_nodes": r.peak_nodes,
                      "peak_live": r.stats.get("peak_live_nodes", 0)}))


def fmt_time(s: float) -> str:
    return f"{s:8.1f}s" if s < 3600 else f"{s / 3600:7.2f}h"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--boards", help="comma-separated boards, e.g. 5x5,6x4 (default: all of "
                                     "Table 1 with at most --max-positions positions)")
    ap.add_argument("--max-positions", type=float, default=1e10,
                    help="largest board total to include (default 1e10)")
    ap.add_argument("--mode", choices=["count", "solve"], default="count")
    ap.add_argument("--encoding", choices=["compressed", "plain"], default="compressed")
    ap.add_argument("--engine", choices=["bdd", "bcdd"], default="bdd")
    ap.add_argument("--terminal", choices=["union", "lines"], default="union")
    ap.add_argument("--bdd-nodes", type=int, default=1 << 28,
                    help="oxidd node capacity per run (default 2^28)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None, help="seconds per board")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help=f"Table 1 as TSV (default {REFERENCE})")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0

    table = {r["board"]: r for r in read_table1(args.reference)}
    if args.boards:
        boards = [b.strip() for b in args.boards.split(",") if b.strip()]
        unknown = [b for b in boards if b not in table]
        if unknown:
            ap.error(f"not in Table 1: {', '.join(unknown)}")
    else:
        boards = [b for b, r in table.items() if r["positions"] <= args.max_positions]
        boards.sort(key=lambda b: table[b]["positions"])

    head = (f"{'board':>6} {'our count':>16} {'paper':>16} {'check':>8} {'wall':>9} "
            f"{'cpu':>9} {'peak RSS':>10} {'peak nodes':>12} {'paper time':>11} "
            f"{'paper nodes':>12}")
    print(f"# BDD {args.mode}, {args.encoding} encoding, oxidd {args.engine}, "
          f"{args.threads} thread(s), terminal={args.terminal}", flush=True)
    print(head, flush=True)
    bad = 0
    t_all = time.perf_counter()
    for b in boards:
        ref = table[b]
        cmd = [sys.executable, __file__, "--worker", b, "--mode", args.mode,
               "--encoding", args.encoding, "--engine", args.engine, "--terminal", args.terminal,
               "--bdd-nodes", str(args.bdd_nodes), "--threads", str(args.threads)]
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            out = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None
            why = None if out else (p.stderr.strip().splitlines() or ["failed"])[-1]
        except subprocess.TimeoutExpired:
            out, why = None, f"timeout after {args.timeout:.0f}s"
        if out is None:
            bad += 1
            print(f"{b:>6} {'-':>16} {ref['positions']:>16,} {'FAILED':>8} "
                  f"{fmt_time(time.perf_counter() - t0):>9}  {why}", flush=True)
            continue
        ok = out["total"] == ref["positions"]
        bad += not ok
        print(f"{b:>6} {out['total']:>16,} {ref['positions']:>16,} "
              f"{'OK' if ok else 'MISMATCH':>8} {fmt_time(out['wall']):>9} "
              f"{fmt_time(out['cpu']):>9} {out['rss_mib']:>7.0f}MiB {out['peak_nodes']:>12,} "
              f"{ref['bock_time']:>11} {ref['bock_nodes']:>12,}", flush=True)
    print(f"# {len(boards)} boards, {bad} failed or mismatched, "
          f"{time.perf_counter() - t_all:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
