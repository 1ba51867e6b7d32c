"""Single-probe latency of several .c4z files of one table, side by side in one process: the
same random keys, each probed in every file in a random order of the files (the file probed
later for a key runs with warmer code paths, so a fixed order favours the last file), no
decoded block or stream of an earlier probe kept (``clear_cache()`` before each probe).
Reports p25 / p50 / p90 / mean in thread CPU microseconds, what a loaded machine distorts
least, with the load average.

    python -m tools.bench.bench_probe_ab TABLE.dat A.c4z B.c4z [...] [--probes 3000] [--seed 1]
    python -m tools.bench.bench_probe_ab TABLE.dat A.c4z B.c4z --batch 20000 [--rounds 3] [--cold]

``--batch N``: instead, ``probe_keys`` of N random keys per file, warm (one call per file
first), decoded blocks dropped before each call, the files in a new random order each round;
reports the best of ``--rounds`` per file in microseconds per key, wall and process CPU.
``--cold``: each file's pages dropped from the page cache (``posix_fadvise(DONTNEED)``)
before each of its calls, so that every block is read from the disk again.
``--http``: the files are read over HTTP, each ``Range`` request answered by a loopback
server in this process (a thread that ``pread``s the file), as a table on a web server is
read: every block a probe needs is one request.

Make the files to compare with ``compress_table`` (e.g. ``part_entries=65536`` for one part
per block, the layout of format 2). The answers are checked against the .dat.
"""
from __future__ import annotations

import argparse
import http.server
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from c4table.open import open_table
from tools.bench.bench_lookup import drop_cache, sample_keys


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dat", type=Path)
    ap.add_argument("c4z", nargs="+", type=Path)
    ap.add_argument("--probes", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=0, metavar="N")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--http", action="store_true")
    a = ap.parse_args(argv)
    with served(a.c4z if a.http else []) as urls:
        a.where = {z: urls.get(z, z) for z in a.c4z}
        if a.batch:
            batch(a)
        else:
            single(a)


class _Ranges(http.server.BaseHTTPRequestHandler):
    """Answers ``Range: bytes=a-b`` and ``bytes=-n`` requests for the files of ``paths`` (by
    index: ``/0``, ``/1``, ...) with ``pread``."""
    paths: list = []
    protocol_version = "HTTP/1.0"

    def log_message(self, *a):
        pass

    def do_GET(self):
        try:
            path = self.paths[int(self.path.strip("/").split("/")[0])]
        except (ValueError, IndexError):
            self.send_error(404)
            return
        size = path.stat().st_size
        a, b = self.headers.get("Range", "bytes=0-").split("=")[1].split("-")
        lo, hi = (size - int(b), size - 1) if a == "" else (int(a), min(int(b or size - 1), size - 1))
        lo = max(lo, 0)
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.pread(fd, hi - lo + 1, lo)
        finally:
            os.close(fd)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {lo}-{hi}/{size}")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def served(paths: list[Path]):
    """``{path: its URL}`` on a loopback range server while the block runs (none for none)."""
    if not paths:
        yield {}
        return
    handler = type("Ranges", (_Ranges,), {"paths": list(paths)})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        yield {p: f"http://127.0.0.1:{port}/{i}/{p.name}" for i, p in enumerate(paths)}
    finally:
        server.shutdown()
        server.server_close()


def single(a) -> None:
    """Single probes, each file in a random order per key (module docstring)."""
    rng = np.random.default_rng(a.seed)
    keys = sample_keys(a.dat, a.probes, rng)
    with open_table(a.dat) as t:
        want = t.probe_keys(keys)
    tabs = [(z, open_table(a.where[z])) for z in a.c4z]
    times: dict = {z: [] for z in a.c4z}
    print(f"load average at start: {os.getloadavg()}")
    for _, t in tabs:
        t.outcome_byte(int(keys[0]))   # numba kernels and the index loaded
    order = list(tabs)
    for k, w in zip(keys, want):
        rng.shuffle(order)
        for z, t in order:
            t.c4z.clear_cache()
            c0 = time.thread_time_ns()
            got = t.outcome_byte(int(k))
            times[z].append(time.thread_time_ns() - c0)
            if got != w:
                raise SystemExit(f"{z}: key {int(k)} answers {got}, the .dat {w}")
    for z, t in tabs:
        t.close()
        v = np.array(times[z]) / 1e3
        p25, p50, p90 = np.percentile(v, [25, 50, 90])
        print(f"{z.name}: p25 {p25:.0f}  p50 {p50:.0f}  p90 {p90:.0f}  mean {v.mean():.0f} us "
              f"(thread CPU, {len(v)} probes)")
    print(f"load average at end: {os.getloadavg()}")


def batch(a) -> None:
    """``--batch``: warm ``probe_keys`` of the same random keys in every file, best of
    ``--rounds`` (module docstring)."""
    rng = np.random.default_rng(a.seed)
    keys = sample_keys(a.dat, a.batch, rng)
    with open_table(a.dat) as t:
        want = t.probe_keys(keys)
    tabs = [(z, open_table(a.where[z])) for z in a.c4z]
    print(f"load average at start: {os.getloadavg()}")
    best: dict = {z: (float("inf"), float("inf")) for z in a.c4z}
    for _, t in tabs:
        t.probe_keys(keys[: 200])          # kernels compiled, index loaded
    order = list(tabs)
    for _ in range(a.rounds):
        rng.shuffle(order)
        for z, t in order:
            t.c4z.clear_cache()
            if a.cold:
                drop_cache(z)
            w0, c0 = time.perf_counter(), time.process_time()
            got = t.probe_keys(keys)
            w, c = time.perf_counter() - w0, time.process_time() - c0
            if not np.array_equal(got, want):
                raise SystemExit(f"{z}: probe_keys differs from the .dat")
            best[z] = (min(best[z][0], w), min(best[z][1], c))
    for z, t in tabs:
        t.close()
        w, c = best[z]
        print(f"{z.name}: best of {a.rounds}{' cold' if a.cold else ''}{' over HTTP' if a.http else ''}: "
              f"{w / len(keys) * 1e6:.1f} us per key wall, "
              f"{c / len(keys) * 1e6:.1f} us CPU ({len(keys):,} keys)")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
