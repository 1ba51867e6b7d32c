#!/usr/bin/env python3
"""Build boards at several worker counts and print one table: wall time, CPU of the process
tree, CPU per entry, parallel efficiency, and beside them what ``c4table plan`` predicts
(with this machine's calibrated costs where ``plan --calibrate`` cached them) and whether
the table's tree hash (and sha256, where the build recorded one) is the known one.

    python -m tools.bench.scale_run 5x5 6x5 7x4 --workers 2 8 16 [--memory 64GiB] [--markdown]
    python -m tools.bench.scale_run 4x4 5x4 --workers 1 2            # a quick try

Each build is ``python -m c4table.cli.main build BOARD --workers N --memory M --quiet`` in a
fresh temporary directory (``--tmp``); its CPU is user + system of the build and its worker
processes (``getrusage`` of the waited child). The 1-minute load is printed with each row:
on a shared machine wall time grows with other people's load, CPU time much less.
Efficiency is CPU / (workers x wall). The plan predicts a machine to itself; where the load
average ``L`` of the run exceeded the cores ``C``, each runnable process got about ``C / L``
of a core, so the row also gives the plan's wall time times ``L / C`` ("plan wall at load").
A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from c4table.builddir.reader import BuildDir
from c4table.io.treehash import FIELD
from tools.bench.bench_ab import timed_run


def build(python: str, board: str, workers: int, memory: str, tmp: str | None) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"scale_{board}_{workers}_", dir=tmp))
    try:
        cmd = [python, "-m", "c4table.cli.main", "build", board, "--out", str(out), "--quiet",
               "--workers", str(workers), "--memory", memory]
        load0 = os.getloadavg()[0]
        wall, cpu = timed_run(cmd, out)
        t = BuildDir.load(out).table
        return {"board": board, "workers": workers, "memory": memory, "wall_s": wall, "cpu_s": cpu,
                "entries": t.entries, FIELD: t.sha256_tree, "sha256": t.sha256,
                "load": (load0 + os.getloadavg()[0]) / 2}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def predict(python: str, board: str, workers: int, memory: str) -> dict:
    """``c4table plan`` for the build's workers and their share of its memory."""
    from c4table.units import parse_size
    per = parse_size(memory) // workers
    cmd = [python, "-m", "c4table.cli.main", "plan", board, "--workers", str(workers),
           "--memory-per-worker", str(per), "--json"]
    d = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return {"plan_wall_s": d["wall_seconds"], "plan_cpu_s": d["core_seconds"],
            "bound": d["schedule"]["bound"], "costs": d["costs"]["machine"]}


def known_match(board: str, row: dict) -> bool | None:
    """Whether the build's hashes equal the known table's (each one both have); None if
    they have none in common."""
    from c4table.table.known import known_tables
    ref = known_tables().get(board) or {}
    pairs = [(ref[k], row[k]) for k in (FIELD, "sha256") if ref.get(k) and row.get(k)]
    return None if not pairs else all(a == b for a, b in pairs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 8, 16])
    ap.add_argument("--memory", default="4GiB", help="each build's --memory (shared by its workers)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--tmp", default=None, help="where the builds go (default: the temp dir)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    a = ap.parse_args(argv)
    rows = []
    head = ("board", "workers", "wall s", "CPU s", "ns/entry", "efficiency", "plan wall",
            "plan CPU", "wall plan/real", "CPU plan/real", "plan wall at load", "its ratio",
            "plan bound", "load", "hash")
    cores = os.cpu_count() or 1
    print(("| " + " | ".join(head) + " |\n|" + "---|" * len(head)) if a.markdown
          else "  ".join(head), flush=True)
    for board in a.boards:
        for w in a.workers:
            r = build(a.python, board, w, a.memory, a.tmp)
            r.update(predict(a.python, board, w, a.memory))
            r["sha_ok"] = known_match(board, r)
            rows.append(r)
            cells = (board, str(w), f"{r['wall_s']:.1f}", f"{r['cpu_s']:.1f}",
                     f"{r['cpu_s'] / r['entries'] * 1e9:.0f}",
                     f"{r['cpu_s'] / (w * r['wall_s']):.0%}", f"{r['plan_wall_s']:.0f}",
                     f"{r['plan_cpu_s']:.0f}", f"{r['plan_wall_s'] / r['wall_s']:.2f}",
                     f"{r['plan_cpu_s'] / r['cpu_s']:.2f}",
                     f"{r['plan_wall_s'] * max(1.0, r['load'] / cores):.0f}",
                     f"{r['plan_wall_s'] * max(1.0, r['load'] / cores) / r['wall_s']:.2f}",
                     r["bound"], f"{r['load']:.1f}",
                     {True: "known", False: "DIFFERS", None: "(none known)"}[r["sha_ok"]])
            print(("| " + " | ".join(cells) + " |") if a.markdown else "  ".join(cells), flush=True)
    if rows:
        print(f"plan costs: {rows[0]['costs']}; machine: {os.cpu_count()} CPUs; "
              f"load now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if any(r["sha_ok"] is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
