"""The device rates that ``plan --device gpu`` assumes, measured on the machine it runs on.

``pipeline/planning/gpuplan.py`` names each rate of a one-GPU build (GPU sort, host <-> device
copies, disk) with its source; this measures them, one line of JSON per rate:

- CuPy's sort of random uint64 keys (CUB's radix sort), keys per second, at 2^26 and 2^28 keys;
- host -> device and device -> host copies of 1 GiB from pageable and from pinned host memory;
- the disk: 4 GiB written and read back with O_DIRECT (``dd``), in the directory given.

Run on a GPU machine::

    python -m tools.bench.gpu_rates --disk /tmp --json rates.json

Every figure is the median of 5 timed repeats after one warm-up, synchronised with the device.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time


def _median_s(fn, repeats: int = 5) -> float:
    import cupy as cp
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sort_rates() -> list[dict]:
    import cupy as cp
    rows = []
    for log2 in (26, 28):
        n = 1 << log2
        keys = cp.random.randint(0, 2**63 - 1, size=n, dtype=cp.int64).view(cp.uint64)
        s = _median_s(lambda: cp.sort(keys))
        rows.append({"rate": "gpu sort", "keys": n, "seconds": s, "keys_per_s": n / s})
        del keys
    return rows


def copy_rates(nbytes: int = 1 << 30) -> list[dict]:
    import cupy as cp
    import numpy as np
    rows = []
    dev = cp.empty(nbytes, dtype=cp.uint8)
    pageable = np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8)
    mem = cp.cuda.alloc_pinned_memory(nbytes)
    pinned = np.frombuffer(mem, dtype=np.uint8, count=nbytes)
    pinned[:] = pageable
    for kind, host in (("pageable", pageable), ("pinned", pinned)):
        s = _median_s(lambda: dev.set(host))
        rows.append({"rate": f"host->device {kind}", "bytes": nbytes, "seconds": s,
                     "bytes_per_s": nbytes / s})
        s = _median_s(lambda: dev.get(out=host))
        rows.append({"rate": f"device->host {kind}", "bytes": nbytes, "seconds": s,
                     "bytes_per_s": nbytes / s})
    return rows


def disk_rates(where: str, gib: int = 4) -> list[dict]:
    path = os.path.join(where, "gpu_rates.tmp")
    rows = []
    try:
        for what, args in (("disk write O_DIRECT", [f"of={path}", "if=/dev/zero", "oflag=direct"]),
                           ("disk read O_DIRECT", [f"if={path}", "of=/dev/null", "iflag=direct"])):
            t0 = time.perf_counter()
            subprocess.run(["dd", "bs=16M", f"count={gib * 64}", *args, "status=none"], check=True)
            s = time.perf_counter() - t0
            rows.append({"rate": what, "bytes": gib << 30, "seconds": s,
                         "bytes_per_s": (gib << 30) / s})
    finally:
        if os.path.exists(path):
            os.remove(path)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--disk", default=None, help="a directory on the disk to measure (skipped "
                    "if not given)")
    ap.add_argument("--json", default=None, help="write all rows to this file as well")
    a = ap.parse_args(argv)
    rows = []
    for part in (sort_rates, copy_rates) + ((lambda: disk_rates(a.disk)),) * bool(a.disk):
        for r in part():
            print(json.dumps(r), flush=True)
            rows.append(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
