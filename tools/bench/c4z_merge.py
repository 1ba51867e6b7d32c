"""The final merge alone, side by side per format: stage a build once (forward and backward
passes, in ``--stage DIR``, kept for later runs), then merge a fresh copy of it per variant,
round by round, and print each merge's CPU (user+sys of ``c4table merge`` and its workers;
the system share and the minor page faults apart),
the table's size and raw sha256, and the least CPU per variant. The merge is the only stage
where a ``.c4z`` build differs from a ``.dat`` one, so this compares their CPU without the
noise of the passes before it (on the shared machine a whole 6x5 build's CPU varies by 10%).

    .venv/bin/python -m tools.bench.c4z_merge 6x5 --stage /tmp/s6x5 --rounds 3 dat 5m0 4m6

Each variant is ``dat`` or a c4z level spec as in ``c4z_build.py`` (``LEVEL[mMINMATCH][@CODE]``:
``@CODE`` runs that merge with another checkout's code first on ``PYTHONPATH``).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from c4table.builddir.reader import BuildDir
from tools.bench.c4z_build import profile_env


def stage(board: str, out: Path, workers: int, memory: str) -> None:
    """Run the forward and backward passes of ``board`` into ``out`` (a ``.dat`` build's)."""
    from c4table.pipeline.stages import backward, forward
    from c4table.pipeline.stages.build import open_build
    b = open_build(board, out, memory=memory, workers=workers, quiet=True)
    try:
        forward.run(b)
        backward.run(b)
    finally:
        b.close()


def merge_once(board: str, staged: Path, run: Path, variant: str, workers: int,
               memory: str) -> dict:
    """Merge a fresh copy of ``staged`` in ``run`` as ``variant``; CPU, wall, size, sha256."""
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(staged, run)
    env = dict(os.environ)
    cmd = [str(Path(sys.executable).with_name("c4table")), "merge", board, "--out", str(run),
           "--workers", str(workers), "--memory", memory, "-q"]
    if variant != "dat":
        env.update(profile_env(variant))
        cmd += ["--format", "c4z"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr}")
    t = BuildDir.load(run).table
    shutil.rmtree(run, ignore_errors=True)
    return {"cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
            "sys_s": after.ru_stime - before.ru_stime, "minflt": after.ru_minflt - before.ru_minflt,
            "wall_s": wall, "raw_bytes": t.bytes, "sha256": t.sha256,
            "table_bytes": t.container.bytes if t.container is not None else t.bytes}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("variants", nargs="+", help="dat, or LEVEL[mMINMATCH][@CODE] for a c4z merge")
    ap.add_argument("--stage", type=Path, required=True, help="the staged build (made if missing)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    a = ap.parse_args(argv)
    if not (a.stage / "manifest.json").exists():
        stage(a.board, a.stage, a.workers, a.memory)
    runs = {v: [] for v in a.variants}
    for rnd in range(a.rounds):
        for v in a.variants:
            r = merge_once(a.board, a.stage, a.stage.with_name(a.stage.name + "-run"), v,
                           a.workers, a.memory)
            runs[v].append(r)
            print(f"round {rnd + 1}: {v:<20} cpu {r['cpu_s']:7.2f}s (sys {r['sys_s']:5.2f}s, {r['minflt']:,} minor faults)  wall {r['wall_s']:7.2f}s  "
                  f"load {os.getloadavg()[0]:.1f}  table {r['table_bytes']:,} "
                  f"({100 * r['table_bytes'] / r['raw_bytes']:.3f}% of raw)  sha256 "
                  f"{r['sha256'][:16]}", flush=True)
    least = {v: min(r["cpu_s"] for r in rs) for v, rs in runs.items()}
    print("least CPU: " + ", ".join(f"{v} {c:.2f}s" for v, c in least.items()))
    if "dat" in least:
        print("beyond the .dat merge: " + ", ".join(
            f"{v} {c - least['dat']:+.2f}s" for v, c in least.items() if v != "dat"))
    print(f"all sha256 equal: {len({r['sha256'] for rs in runs.values() for r in rs}) == 1}")


if __name__ == "__main__":
    main()
