"""Build a board too large for one sitting (6x6, 7x5) as ``--format c4z`` and keep the evidence
across stops: each call starts or resumes ``c4table build`` in DIR, samples the disk the
build directory holds (total and per file kind) every ``--every`` seconds, and appends each
sample and each call's CPU (user+sys of the build and its workers) to ``DIR.log.jsonl``
beside the directory. ``--report`` prints what the log holds: peak disk in bytes per entry and
per kind, CPU and wall summed over the calls, bytes written and read (``DIR/stats.json``: summed
over every call that worked on a stage; a file of format 1 held only each stage's last call),
and the finished table's record.

    .venv/bin/python -m tools.bench.big_build 6x6 /work/build-6x6 --workers 2 --memory 16GiB
    .venv/bin/python -m tools.bench.big_build 6x6 /work/build-6x6 --report
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from c4table.builddir.reader import BuildDir
from tools.bench.diskuse import KINDS, DiskSampler


def tree_times(pid: int) -> tuple[float, float]:
    """``(user, sys)`` CPU seconds of process ``pid`` and all its live descendants, with what
    each already reaped of its own children: a run killed at a stop keeps its CPU in the
    samples."""
    parent, times = {}, {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            f = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d.name)] = int(f[1])
        times[int(d.name)] = (int(f[11]) + int(f[13]), int(f[12]) + int(f[14]))   # utime+cutime, stime+cstime
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo.extend(c for c, pp in parent.items() if pp == p and c not in tree)
    tck = os.sysconf("SC_CLK_TCK")
    return (sum(times.get(p, (0, 0))[0] for p in tree) / tck,
            sum(times.get(p, (0, 0))[1] for p in tree) / tck)


def tree_cpu(pid: int) -> float:
    """User + sys CPU seconds of ``pid``'s process tree (:func:`tree_times`)."""
    return sum(tree_times(pid))


def run(args, log: Path) -> int:
    cmd = [str(Path(sys.executable).parent / "c4table"), "build", args.board, "--format", "c4z",
           "--out", str(args.dir), "--workers", str(args.workers), "--memory", args.memory]
    t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = None

    def record(sample: dict) -> None:
        sample["started"] = round(t0)
        if proc is not None:
            sample["cpu_s"] = round(tree_cpu(proc.pid), 1)
        f.write(json.dumps(sample) + "\n")
        f.flush()

    with log.open("a") as f, DiskSampler(args.dir, args.every, record):
        proc = subprocess.Popen(cmd)
        try:
            rc = proc.wait()
        except KeyboardInterrupt:   # pass a stop on to the build, which keeps what it finished
            proc.send_signal(signal.SIGINT)
            rc = proc.wait()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    with log.open("a") as f:
        f.write(json.dumps({"run": {"start": round(t0), "wall_s": round(time.time() - t0, 1),
                                        "cpu_s": round(cpu, 1), "rc": rc, "cmd": cmd[1:]}}) + "\n")
    return rc


def report(args, log: Path) -> None:
    samples, runs = [], []
    for line in log.read_text().splitlines():
        d = json.loads(line)
        (runs.append(d["run"]) if "run" in d else samples.append(d))
    # a run killed at a stop wrote no record: its CPU is the most its samples saw
    ended = {r["start"] for r in runs}
    for start in sorted({s["started"] for s in samples if "started" in s} - ended):
        seen = [s for s in samples if s.get("started") == start and "cpu_s" in s]
        if seen:
            runs.append({"start": start, "wall_s": seen[-1]["t"] - start,
                         "cpu_s": max(s["cpu_s"] for s in seen), "rc": None})
    table = BuildDir.load(args.dir).table if (args.dir / "manifest.json").exists() else None
    entries = table.entries if table is not None else None
    peak = max(samples, key=lambda s: s["bytes"]) if samples else None
    out = {"board": args.board, "runs": len(runs),
           "wall_s": round(sum(s["wall_s"] for s in runs)),
           "cpu_s": round(sum(s["cpu_s"] for s in runs)),
           "finished": bool(table), "entries": entries,
           "peak_disk_bytes": peak and peak["bytes"],
           "peak_kinds_bytes": {k: max(s["kinds"][k] for s in samples) for k in KINDS} if samples else {},
           "raw_files_seen": max((s["raw_files"] for s in samples), default=0),
           "samples": len(samples)}
    if entries and peak:
        out["peak_bytes_per_entry"] = round(peak["bytes"] / entries, 3)
        out["peak_kinds_bytes_per_entry"] = {k: round(v / entries, 3)
                                             for k, v in out["peak_kinds_bytes"].items()}
    stats = args.dir / "stats.json"
    if stats.exists():
        st = json.loads(stats.read_text())["stages"]
        out["bytes_written"] = sum(v["bytes_written"] for v in st.values())
        out["bytes_read"] = sum(v["bytes_read"] for v in st.values())
        out["stages_peak_stored_bytes"] = {k: v.get("peak_stored_bytes") for k, v in st.items()}
        out["stages_runs"] = {k: v.get("runs", 1) for k, v in st.items()}   # runs summed per stage
    out["table"] = table.to_json() if table is not None else None
    print(json.dumps(out, indent=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("board")
    ap.add_argument("dir", type=Path, help="the build directory (kept between stops)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="8GiB")
    ap.add_argument("--every", type=float, default=5.0, help="disk sampling period (s)")
    ap.add_argument("--report", action="store_true", help="print what the log holds; build nothing")
    args = ap.parse_args(argv)
    log = args.dir.with_name(args.dir.name + ".log.jsonl")
    if args.report:
        if not log.exists():
            ap.error(f"no log at {log}")
        report(args, log)
        return 0
    if shutil.disk_usage(args.dir.parent).free < 1 << 30:
        ap.error(f"less than 1 GiB free under {args.dir.parent}")
    return run(args, log)


if __name__ == "__main__":
    sys.exit(main())
