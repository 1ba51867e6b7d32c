#!/usr/bin/env python3
"""Check the schedule model (pipeline/planning/schedule.py) against builds measured elsewhere: given a
build's board, workers, memory and measured CPU, predict its wall time, and print it beside
the measured wall time.

    python -m tools.diag.schedule_check                 # the 16-core figures below
    python -m tools.diag.schedule_check --row 5x5 2 4GiB 17.8 8.05   # board workers memory wall cpu

The machines measured are not this one, so their per-entry costs are this machine's calibrated
ones (``c4table plan --calibrate``, else the fast machine's) scaled to the row's measured CPU
(one factor for every stage; the split between the stages is this machine's). What is left to
predict is the schedule: waves, stragglers, the driver's steps and per-task work, the merge's
hash tail. The digests' rate on the other machine is unknown: each row is predicted twice,
hashing at this machine's rate and at that rate times the CPU factor. The disk is left out.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from c4table.pipeline.planning import calibrate
from c4table.pipeline.planning.plan import make_plan
from c4table.pipeline.planning.schedule import FAST_MACHINE
from c4table.units import parse_size

# A 16-core Intel Xeon VM with AVX-512 (numpy sort 44-61 M keys/s): `c4table build` wall time
# and CPU (user + sys of the process tree), measured there before this model was written.
SIXTEEN_CORES = [
    ("6x5", 16, "64GiB", 91.4, 812.0),
    ("6x5", 8, "4GiB", 133.8, 757.0),
    ("7x4", 16, "4GiB", 71.1, 648.0),
    ("5x5", 2, "4GiB", 10.4, 18.1),
    ("5x5", 8, "4GiB", 6.3, 24.2),
    ("5x5", 16, "4GiB", 6.1, 31.6),
]


def predict(board: str, workers: int, memory: str, cpu: float, costs, scale_hash: bool):
    p = make_plan(board, workers, parse_size(memory) // workers, costs=costs)
    k = cpu / p.schedule().cpu_s
    p.costs = replace(costs, forward_s=costs.forward_s * k, backward_s=costs.backward_s * k,
                      merge_s=costs.merge_s * k, disk_bytes_per_s=None,
                      hash_ns_per_byte=tuple(x * (k if scale_hash else 1.0)
                                             for x in costs.hash_ns_per_byte))
    return p.schedule(), k


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", nargs=5, action="append", metavar=("BOARD", "WORKERS", "MEMORY",
                                                                  "WALL", "CPU"))
    a = ap.parse_args(argv)
    rows = [(b, int(w), m, float(wall), float(cpu)) for b, w, m, wall, cpu in a.row] \
        if a.row else SIXTEEN_CORES
    costs = calibrate.cached() or FAST_MACHINE
    print(f"costs: {costs.machine} ({costs.source})")
    print("| board | workers | wall | CPU | efficiency | CPU factor | model wall (hash here / "
          "scaled) | model/real | bound | cores / waits / waves / driver s |\n|---|---:|---:|---:|---:|"
          "---:|---:|---:|---|---|")
    for board, w, mem, wall, cpu in rows:
        s1, k = predict(board, w, mem, cpu, costs, False)
        s2, _ = predict(board, w, mem, cpu, costs, True)
        p = s2.parts()
        print(f"| {board} | {w} | {wall:.1f} | {cpu:.1f} | {cpu / (w * wall):.0%} | {k:.2f} | "
              f"{s1.wall_s:.1f} / {s2.wall_s:.1f} | {s1.wall_s / wall:.2f} / {s2.wall_s / wall:.2f}"
              f" | {s2.bound()[0]} | {p['cores']:.1f} / {p['waits']:.1f} / {p['waves']:.1f} / "
              f"{p['driver']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
