"""Compare what ``c4table plan`` predicts for a build with what the build measured.

    python tools/diag/plan_vs_measured.py DIR [DIR ...]     # build directories with stats.json

For each directory: the plan of its board for the workers and task memory the run used
(``stats.json``), its I/O prediction (:func:`c4table.pipeline.planning.iomodel.predict_io`) and the
counts the run measured (the same counters on every executor and storage), field by field,
with the ratio predicted / measured; ``--markdown`` prints README tables.
"""
from __future__ import annotations

import argparse
import sys

from c4table.pipeline.runtime.counters import load_stats
from c4table.pipeline.planning.iomodel import FIELDS, STAGES, predict_io
from c4table.pipeline.planning.plan import make_plan
from c4table.io.storage import open_storage
from c4table.units import format_size


def fmt(field: str, v: int) -> str:
    return format_size(v) if "bytes" in field or "memory" in field else f"{v:,}"


def compare(where: str) -> list[tuple]:
    st = load_stats(open_storage(where))
    workers, task_memory = st["workers"], st["task_memory"]
    plan = make_plan(st["board"], workers, task_memory)
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
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--tolerance", type=float, default=0.25)
    a = ap.parse_args(argv)
    bad = 0
    if a.markdown:
        print("| board | stage | figure | plan | measured | plan/measured |\n|---|---|---|---:|---:|---:|")
    for d in a.dirs:
        for board, stage, f, p, m, r in compare(d):
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
