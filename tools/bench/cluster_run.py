"""Build boards on a real dask cluster on loopback and print what each stage read, wrote and
held: a ``dask scheduler`` process, N separate ``dask worker`` processes (``--nworkers 1
--nthreads 1 --memory-limit``) and a moto S3 server (``c4table.testing.cluster``).

    python -m tools.bench.cluster_run 5x5 6x4 --workers 4 --memory 256MiB --save /tmp/runs

Each board is built onto ``s3://c4table-cluster/BOARD``, its table's sha256 compared with the
known table (``c4table/data/known_tables.json``), and its counts (``stats.json``) printed and,
with ``--save DIR``, copied with the manifest to ``DIR/BOARD/`` for
``tools/diag/plan_vs_measured.py``. Wall and CPU time of the driver are printed beside the load.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from c4table.testing.cluster import BUCKET, Cluster


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--memory", default="256MiB", help="the build's --memory (whole cluster)")
    ap.add_argument("--memory-limit", default="2GiB", help="each dask worker's --memory-limit")
    ap.add_argument("--save", default=None, help="copy stats.json and manifest.json here")
    a = ap.parse_args(argv)
    from c4table.pipeline.stages.build import build_table
    from c4table.pipeline.runtime.counters import STATS, format_stats
    from c4table.table.known import known_tables
    cl = Cluster(a.workers, a.memory_limit).start()
    try:
        for board in a.boards:
            uri = f"s3://{BUCKET}/{board}"
            load0 = open("/proc/loadavg").read().split()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            build_table(board, uri, scheduler=cl.client, quiet=True, memory=a.memory)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            data = cl.s3_bytes(f"{board}/connect4_{board}.dat")
            digest = hashlib.sha256(data).hexdigest()
            known = known_tables().get(board, {}).get("sha256")
            verdict = "identical to the known table" if digest == known else \
                ("NO KNOWN TABLE" if known is None else "DIFFERS FROM THE KNOWN TABLE")
            stats = json.loads(cl.s3_bytes(f"{board}/{STATS}"))
            load1 = open("/proc/loadavg").read().split()[0]
            print(f"{board} on {a.workers} dask workers, --memory {a.memory}, s3://: {len(data):,} bytes, "
                  f"sha256 {digest} ({verdict}); driver wall {wall:.1f}s, driver CPU {cpu:.1f}s, "
                  f"load {load0} -> {load1}")
            for line in format_stats(stats["stages"]):
                print("  " + line)
            if a.save:
                d = Path(a.save) / board
                d.mkdir(parents=True, exist_ok=True)
                (d / STATS).write_bytes(cl.s3_bytes(f"{board}/{STATS}"))
                (d / "manifest.json").write_bytes(cl.s3_bytes(f"{board}/manifest.json"))
            cl.fs.delete_dir(f"{BUCKET}/{board}")
            if digest != known:
                return 1
    finally:
        cl.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
