"""Compare what ``c4table plan`` predicts for a build with what the build measured.

    python -m tools.diag.plan_vs_measured DIR [DIR ...]     # build directories with stats.json
    python -m tools.diag.plan_vs_measured --build 5x5 --format c4z --workers 2 [--memory 12GiB] DIR   # build, then compare

A directory built by ``tools/bench/big_build.py`` has its disk samples in ``DIR.log.jsonl``
beside it: their largest is the peak compared.

With ``--build BOARD``: runs ``c4table build BOARD --out DIR`` (its ``--format`` and
``--workers``) first, sampling the directory's bytes every ``--sample-every`` seconds (default
1: at every 50 ms the sampler alone took 30% of a core of the 2-core machine beside 7x5's
thousands of files): the peak sampled is compared with the plan's peak disk. A ``.c4z``
merge's part files and container are counted by the build (``stats.json`` with
``c4z_counted``); for older stats, which did not see them, the tool
adds the container's size to the merge's bytes written twice (as part files and as the
container), read once (the parts) and to its peak stored.

For each directory: the plan of its board for the workers and task memory the run used
(``stats.json``), its I/O prediction (:func:`c4table.pipeline.planning.iomodel.predict_io`) and the
counts the run measured (the same counters on every executor and storage), field by field,
with the ratio predicted / measured; ``--markdown`` prints README tables.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from c4table.pipeline.runtime.counters import load_stats
from c4table.pipeline.planning.iomodel import FIELDS, STAGES, predict_io
from c4table.pipeline.planning.plan import make_plan
from c4table.io.storage import open_storage
from c4table.units import format_size
from tools.bench.diskuse import DiskSampler


def fmt(field: str, v: int) -> str:
    return format_size(v) if "bytes" in field or "memory" in field else f"{v:,}"


def build_sampled(board: str, out: str, workers: int, fmt: str, every: float = 1.0,
                  memory: str | None = None) -> dict:
    """Run ``c4table build`` into ``out``, sampling its bytes (the files' lengths); returns the
    peak sampled and the CPU (user + sys of the build's process tree) and wall seconds."""
    t0, c0 = time.perf_counter(), os.times()
    with DiskSampler(Path(out), every, allocated=False) as disk:
        subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", board, "--out", out,
                        "--workers", str(workers), "--format", fmt, "-q",
                        *(["--memory", memory] if memory else [])], check=True)
        c1 = os.times()
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return {"peak_sampled": disk.peak, "cpu_s": cpu, "wall_s": time.perf_counter() - t0}


def compare(where: str, peak_sampled: int | None = None) -> list[tuple]:
    st = load_stats(open_storage(where))
    workers, task_memory = st["workers"], st["task_memory"]
    plan = make_plan(st["board"], workers, task_memory)
    c4z = sorted(Path(where).glob("*.c4z"))
    if c4z:
        plan.table_format = "c4z"
    if c4z and not st.get("c4z_counted"):   # stats of format 1: the .c4z merge's files uncounted
        size = c4z[0].stat().st_size
        mg = st["stages"]["merge"]
        mg["bytes_written"] += 2 * size
        mg["bytes_read"] += size
        # the merge's counted peak and the finished container: what the disk held at the end
        # (a sampled peak, when there is one, replaces it below)
        mg["peak_stored_bytes"] += size
    storage = st.get("storage") or ("remote" if "dask" in st["executor"] else "local")
    # the run's two-level threshold (stats without one predate the pre-merge: all direct)
    io = predict_io(plan, workers, task_memory, remote=storage == "remote",
                    max_reads=st.get("shuffle_max_reads") or 1 << 62)
    rows = []
    for stage in STAGES:
        meas = st["stages"].get(stage)
        if meas is None:
            continue
        for f in FIELDS:
            p, m = io.stages[stage][f], meas.get(f, 0)
            rows.append((st["board"], stage, f, p, m, p / m if m else float("nan")))
    totals = {f: (sum(io.stages[s][f] for s in STAGES),
                  sum(st["stages"].get(s, {}).get(f, 0) for s in STAGES))
              for f in ("bytes_written", "bytes_read")}
    counted = max(st["stages"].get(s, {}).get("peak_stored_bytes", 0) for s in STAGES)
    totals["peak_stored_bytes"] = (max(io.stages[s]["peak_stored_bytes"] for s in STAGES),
                                   peak_sampled or counted)
    for f, (p, m) in totals.items():
        rows.append((st["board"], "build", f, p, m, p / m if m else float("nan")))
    return rows


def logged_peak(where: str) -> int | None:
    """The largest disk sample of ``big_build.py``'s log beside ``where``, if there is one."""
    log = Path(str(where).rstrip("/") + ".log.jsonl")
    if not log.exists():
        return None
    peaks = [json.loads(line).get("bytes", 0) for line in log.read_text().splitlines()
             if line.startswith('{"t"')]
    return max(peaks, default=None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--build", metavar="BOARD", help="build BOARD into the (one) DIR first")
    ap.add_argument("--format", default="c4z", choices=("c4z", "dat"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", help="the build's --memory (default: the build's default)")
    ap.add_argument("--sample-every", type=float, default=1.0, metavar="S",
                    help="seconds between two samples of the directory's bytes (default 1)")
    a = ap.parse_args(argv)
    bad = 0
    sampled = None
    if a.build:
        r = build_sampled(a.build, a.dirs[0], a.workers, a.format, every=a.sample_every,
                          memory=a.memory)
        sampled = r["peak_sampled"]
        print(f"built {a.build} in {r['wall_s']:.1f} s, {r['cpu_s']:.1f} CPU-s; peak sampled "
              f"{format_size(sampled)}", file=sys.stderr)
    if a.markdown:
        print("| board | stage | figure | plan | measured | plan/measured |\n|---|---|---|---:|---:|---:|")
    for d in a.dirs:
        peak = sampled if d == a.dirs[0] and sampled else logged_peak(d)
        for board, stage, f, p, m, r in compare(d, peak):
            off = not (1 - a.tolerance <= r <= 1 + a.tolerance)
            bad += off
            if a.markdown:
                print(f"| {board} | {stage} | {f} | {fmt(f, p)} | {fmt(f, m)} | {r:.2f}{' **' if off else ''} |")
            else:
                print(f"{board:5} {stage:8} {f:18} plan {fmt(f, p):>12}  measured {fmt(f, m):>12}  "
                      f"{r:5.2f}{'  OUTSIDE' if off else ''}")
    print(f"{bad} figure(s) outside +-{a.tolerance:.0%}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
