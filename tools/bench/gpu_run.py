"""The GPU build measured against the CPU build on the same machine, in one run.

Builds each board (default 5x5, 6x5, 7x4) with ``--device gpu`` (one worker, then 16 host
processes sharing the card) and with
``--workers N`` CPU workers (default 16), checks every table's sha256 against
``c4table/data/known_tables.json`` (6x5's is Sidney Cadot's published one), and prints one
table: wall time, the GPU's time per stage part (kernels, sorts, host <-> device copies),
host CPU time, peak GPU memory (CuPy's pool), disk traffic (the build's stats.json), and the
one-GPU plan's prediction (:mod:`c4table.pipeline.planning.gpuplan`) beside the measurement.

On a GPU machine::

    python -m tools.bench.gpu_run                      # 5x5, 6x5, 7x4; GPU and 16 CPU workers
    python -m tools.bench.gpu_run --boards 6x5 --json  # one board, one JSON object at the end

Without a GPU, numba-cuda's simulator runs the GPU path of tiny boards (slowly)::

    NUMBA_ENABLE_CUDASIM=1 python -m tools.bench.gpu_run --boards 4x4 --workers 2 --gpu-workers 1,2

Exit status 1 if a table's sha256 differs from the known one or the two builds differ.
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

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("forward kernel", "forward sort", "forward copy",
         "backward kernel", "backward sort", "backward copy")


def child(board: str, out: str, memory: str, workers: str, result: str, fmt: str = "dat") -> None:
    """Run ``c4table build BOARD --device gpu --workers N`` in this process; write the GPU's
    times and memory pool's size to ``result`` (JSON; with one worker the tasks run in this
    process, so these are the build's; with more, the workers' are not collected)."""
    from c4table.cli.main import main
    from c4table.pipeline.kernels.gpu import device
    code = 0
    try:
        main(["build", board, "--out", out, "-q", "--device", "gpu", "--memory", memory,
              "--workers", workers, "--format", fmt])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    Path(result).write_text(json.dumps({"code": code, "timings": device.timings,
                                        "gpu_pool_bytes": device.peak_memory()}))


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _disk(out: Path) -> tuple[int, int]:
    st = json.loads((out / "stats.json").read_text())["stages"]
    return (sum(s.get("bytes_written", 0) for s in st.values()),
            sum(s.get("bytes_read", 0) for s in st.values()))


def _sha(out: Path, board: str, fmt: str) -> str:
    """The raw table's sha256: hashed from the ``.dat``, or for a ``.c4z`` the one its build
    recorded (with ``C4TABLE_TABLE_SHA256``: the build hashes the raw entries as they pass;
    ``c4table verify`` checks it), else hashed from its decoded entries (after the timing)."""
    if fmt == "c4z":
        import hashlib
        from c4table.c4z.reader import RawStream, open_c4z
        with open_c4z(out / f"connect4_{board}.c4z") as z:
            if z.header.get("sha256"):
                return z.header["sha256"]
            h = hashlib.sha256()
            with RawStream(z) as raw:
                while b := raw.read(1 << 24):
                    h.update(b)
            return h.hexdigest()
    from c4table.io.hashes import sha256_of
    return sha256_of(out / f"connect4_{board}.dat")


def run_one(board: str, device: str, workers: int, memory: str, work: Path,
            fmt: str = "dat") -> dict:
    out = work / f"{board}-{device}{workers}"
    shutil.rmtree(out, ignore_errors=True)
    cpu0, t0 = _children_cpu(), time.perf_counter()
    if device == "gpu":
        res = work / f"{board}-gpu{workers}.json"
        cmd = [sys.executable, __file__, "--child", board, str(out), memory, str(workers), str(res),
               fmt]
    else:
        cmd = [sys.executable, "-m", "c4table.cli.main", "build", board, "--out", str(out), "-q",
               "--workers", str(workers), "--memory", memory, "--format", fmt]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    row = {"board": board, "device": device, "workers": workers, "format": fmt,
           "wall_s": round(wall, 2), "host_cpu_s": round(_children_cpu() - cpu0, 2)}
    if device == "gpu":
        got = json.loads(res.read_text()) if res.exists() else {"code": p.returncode}
        row["code"] = got["code"] or p.returncode
        row["gpu_s"] = {k: round(v, 3) for k, v in got.get("timings", {}).items()}
        row["gpu_pool_bytes"] = got.get("gpu_pool_bytes")
    else:
        row["code"] = p.returncode
    if row["code"] != 0:
        row["error"] = (p.stderr.strip().splitlines() or ["?"])[-1]
        return row
    row["disk_written"], row["disk_read"] = _disk(out)
    row["peak_stored"] = max(s.get("peak_stored_bytes", 0) for s in
                             json.loads((out / "stats.json").read_text())["stages"].values())
    row["sha256"] = _sha(out, board, fmt)
    shutil.rmtree(out, ignore_errors=True)   # the lent machine's disk holds one build at a time
    return row


def predicted(board: str) -> dict:
    from c4table.pipeline.planning.gpuplan import make_gpu_plan
    try:
        p = make_gpu_plan(board)
    except Exception as e:   # a board the plan has no figures for
        return {"error": str(e)}
    return {k: round(v, 2) for k, v in p.seconds.items()} | {"bound": p.bound}


def _gb(n) -> str:
    return "-" if n is None else f"{n / 1e9:.2f}"


def table(rows: list[dict], known: dict) -> str:
    head = (f"{'board':<6}{'device':<10}{'wall s':>8}{'host CPU s':>11}{'GPU kern s':>11}"
            f"{'GPU sort s':>11}{'copy s':>8}{'GPU GB':>8}{'disk w GB':>10}{'disk r GB':>10}"
            f"{'peak GB':>9}  sha256")
    lines = [head]
    for r in rows:
        g = r.get("gpu_s", {})
        kern = sum(v for k, v in g.items() if k.endswith("kernel"))
        sort = sum(v for k, v in g.items() if k.endswith("sort"))
        copy = sum(v for k, v in g.items() if k.endswith("copy"))
        dev = f"{r['device']}{r['workers']}" + ("" if r.get("format", "dat") == "dat" else " c4z")
        sha = r.get("sha256")
        ok = "ERROR " + r.get("error", "") if sha is None else \
            ("ok (known)" if sha == known.get(r["board"]) else
             "DIFFERS from known" if known.get(r["board"]) else sha[:16] + "…")
        gpu_cols = (f"{kern:>11.2f}{sort:>11.2f}{copy:>8.2f}{_gb(r.get('gpu_pool_bytes')):>8}"
                    if r["device"] == "gpu" and r["workers"] == 1 else f"{'-':>11}{'-':>11}{'-':>8}{'-':>8}")
        lines.append(f"{r['board']:<6}{dev:<10}{r['wall_s']:>8.2f}{r['host_cpu_s']:>11.2f}"
                     f"{gpu_cols}{_gb(r.get('disk_written')):>10}{_gb(r.get('disk_read')):>10}"
                     f"{_gb(r.get('peak_stored')):>9}  {ok}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default="5x5,6x5,7x4")
    ap.add_argument("--workers", type=int, default=16, help="CPU workers of the CPU builds")
    ap.add_argument("--gpu-workers", default="1,16",
                    help="host processes sharing the GPU, one GPU build each (the GPU time per "
                         "part is collected with 1)")
    ap.add_argument("--memory", default="48GiB", help="host memory budget of every build")
    ap.add_argument("--work", default=None, help="where the builds go (default: a temp dir)")
    ap.add_argument("--no-cpu", action="store_true", help="GPU builds only")
    ap.add_argument("--format", default="dat", help="dat, c4z, or both: dat,c4z (each build "
                    "runs once per format)")
    ap.add_argument("--json", action="store_true", help="the rows as one JSON object at the end")
    ap.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        child(*a.child)
        return 0
    import tempfile
    known_all = json.loads((ROOT / "c4table" / "data" / "known_tables.json").read_text())
    work = Path(a.work or tempfile.mkdtemp(prefix="gpu_run-"))
    work.mkdir(parents=True, exist_ok=True)
    boards = [b for b in a.boards.split(",") if b]
    known = {b: known_all.get(b, {}).get("sha256") for b in boards}
    rows, bad = [], False
    for b in boards:
        print(f"{b}: predicted on one H100 (plan --device gpu): {predicted(b)}", flush=True)
        pair = []
        runs = [("gpu", int(n)) for n in a.gpu_workers.split(",") if n]
        jobs = [(fmt, dev, n) for fmt in a.format.split(",")
                for dev, n in runs + ([] if a.no_cpu else [("cpu", a.workers)])]
        for fmt, dev, n in jobs:
            r = run_one(b, dev, n, a.memory, work, fmt)
            print(json.dumps(r), flush=True)
            rows.append(r)
            pair.append(r.get("sha256"))
            bad |= r.get("sha256") is None or (known[b] is not None and r["sha256"] != known[b])
        bad |= len(set(pair)) > 1
    print(table(rows, known))
    if a.json:
        print(json.dumps({"rows": rows, "known": known}))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
