"""Build a board once per format (``.dat``, then ``--format c4z`` at each given level), side
by side in one run, and print for each: wall time, CPU (user+sys of the build and its
workers), the peak disk of the build directory (sampled every ``--every`` seconds in a
thread while the build runs), the table's size as a share of the raw size, and whether any
raw table file appeared during a c4z build. Also, from the finished ``.dat`` build, the
bytes per entry of each kind of intermediate file it keeps (key shards, outcome shards) and
the peak bytes per entry of each kind of scratch file (child runs, backward messages),
sampled as they come and go.

    .venv/bin/python tools/bench/c4z_build.py 5x5 --workers 2 --levels 3 9
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from diskuse import KINDS, DiskSampler  # noqa: E402


def run_build(board: str, out: Path, workers: int, memory: str, fmt: str, level: int | None,
              every: float) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ)
    if level is not None:
        env["C4TABLE_C4Z_LEVEL"] = str(level)
    cmd = [str(Path(sys.executable).with_name("c4table")), "build", board, "--out", str(out),
           "--workers", str(workers), "--memory", memory, "-q", "--format", fmt]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with DiskSampler(out, every) as disk:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr}")
    m = json.loads((out / "manifest.json").read_text())
    t = m["table"]
    entries = t["entries"]
    size = t["c4z"]["bytes"] if t.get("format") == "c4z" else t["bytes"]
    work = {k: sum(f.stat().st_size for f in (out / d).rglob("*") if f.is_file())
            for k, d in (("key shards", "work/forward"), ("outcome shards", "work/backward"))}
    return {"format": fmt if level is None else f"{fmt} (level {level})", "entries": entries,
            "wall_s": wall, "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "peak_disk": disk.peak, "peak_kind": disk.peak_kind, "table_bytes": size,
            "raw_bytes": t["bytes"], "raw_seen": sorted(disk.raw_seen), "sha256": t["sha256"],
            "kept": work, "stage_seconds": m.get("stage_seconds")}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--levels", type=int, nargs="*", default=[3])
    ap.add_argument("--every", type=float, default=0.2, help="disk sampling period (s)")
    ap.add_argument("--dir", default="/tmp/c4z-bench")
    ap.add_argument("--json", dest="as_json", help="also write the results to this file")
    ap.add_argument("--no-dat", action="store_true",
                    help="only the c4z builds (when a .dat run goes on in another process)")
    a = ap.parse_args(argv)
    root = Path(a.dir)
    runs = ([] if a.no_dat else [("dat", None)]) + [("c4z", lv) for lv in a.levels]
    res = []
    for fmt, lv in runs:
        out = root / f"{a.board}-{fmt}{lv or ''}"
        r = run_build(a.board, out, a.workers, a.memory, fmt, lv, a.every)
        res.append(r)
        shutil.rmtree(out, ignore_errors=True)
        print(f"{r['format']:<16} wall {r['wall_s']:7.1f}s  cpu {r['cpu_s']:7.1f}s  "
              f"peak disk {r['peak_disk'] / 2**20:9.1f} MiB ({r['peak_disk'] / r['entries']:.2f} B/entry)  "
              f"table {r['table_bytes']:,} ({100 * r['table_bytes'] / r['raw_bytes']:.2f}% of raw)  "
              f"raw files seen: {len(r['raw_seen']) if fmt == 'c4z' else '-'}", flush=True)
    base = res[0]
    if a.as_json:
        Path(a.as_json).write_text(json.dumps(res, indent=1))
    if a.no_dat:
        return
    print("\nCPU against the .dat build: " + ", ".join(
        f"{r['format']} {r['cpu_s'] / base['cpu_s']:.3f}x" for r in res[1:]))
    print(f"all sha256 equal: {len({r['sha256'] for r in res}) == 1} ({base['sha256']})")
    n = base["entries"]
    print(f"\nbytes per entry of each file kind ({a.board}, .dat build, {n:,} entries):")
    for k in KINDS:
        kept = base["kept"].get(k)
        print(f"  {k:<24} peak {base['peak_kind'][k] / n:6.3f}" +
              (f"   kept at the end {kept / n:6.3f}" if kept is not None else ""))


if __name__ == "__main__":
    main()
