"""What checking a ``.dat``'s blocks against its sums costs its readers: cold probe, warm probe and
``label`` throughput of two installations of c4table (e.g. a checkout without the block sums and
one with them), run side by side: each round runs every measurement once per installation, in
a random order of the installations, each in a fresh process.

* **cold**: the table opened afresh and its file (and sidecar) dropped from the page cache
  (``posix_fadvise(DONTNEED)``) before each single ``outcome_byte`` probe: wall and thread CPU.
* **fresh**: the same with the file in the page cache (a new process asking one position: every
  block its search touches is checked), wall and thread CPU.
* **warm**: single ``outcome_byte`` probes of random keys in one open table, the file in the
  page cache: thread CPU per probe (p50 and mean; the first probes check the blocks they touch).
* **label**: :class:`~c4table.analysis.label.Labeller` over ``--positions`` move strings of
  random entries, on a freshly opened table (so every block it touches is checked once),
  kernels compiled beforehand: positions per CPU second.

    python -m tools.bench.bench_dat_sums TABLE.dat --install base=/tmp/base --install new=
        [--rounds 5] [--probes 2000] [--cold 50] [--positions 1000000]

An installation is ``NAME=DIR``: its ``c4table`` package is imported from DIR (empty: the one
this Python imports). Prints the medians over the rounds and their ratios to the first
installation, with the load average (the machine may be shared: CPU time is what load distorts
least).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def drop_cache(path: Path) -> None:
    if not path.exists():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def sample_keys(t, n: int, rng) -> np.ndarray:
    idx = np.sort(rng.integers(0, t.entries, n))
    raw = np.zeros((n, 8), np.uint8)
    K = t.board.key_bytes
    raw[:, 8 - K:] = np.frombuffer(t.entries_array()[idx]["key"].tobytes(), np.uint8).reshape(-1, K)
    return rng.permutation(raw.view(">u8").ravel().astype(np.uint64))


def measure(table: str, what: str, n: int, seed: int) -> dict:
    """One measurement in this process (the installation it imports)."""
    from c4table.open import open_table
    path = Path(table)
    rng = np.random.default_rng(seed)
    with open_table(path) as t:
        keys = sample_keys(t, n, rng)
        t.outcome_byte(int(keys[0]))           # kernels compiled or loaded
    if what in ("cold", "fresh"):
        wall, cpu = [], []
        if what == "fresh":
            path.read_bytes()
        for k in keys:
            if what == "cold":
                drop_cache(path)
                drop_cache(path.with_name(path.name + ".sums"))
            with open_table(path) as t:
                c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
                t.outcome_byte(int(k))
                wall.append(time.perf_counter_ns() - t0)
                cpu.append(time.thread_time_ns() - c0)
        return {"wall_us": float(np.median(wall)) / 1e3, "cpu_us": float(np.median(cpu)) / 1e3}
    if what == "warm":
        path.read_bytes()
        cpu = []
        with open_table(path) as t:
            for k in keys:
                c0 = time.thread_time_ns()
                t.outcome_byte(int(k))
                cpu.append(time.thread_time_ns() - c0)
        a = np.array(cpu) / 1e3
        return {"p50_us": float(np.median(a)), "mean_us": float(a.mean())}
    if what == "label":
        from c4table.analysis.export import decode_entries, move_orders
        from c4table.analysis.label import Labeller, text_chunks
        import tempfile
        path.read_bytes()
        with open_table(path) as t:
            codes, plies, _, _ = decode_entries(t.board, keys)
            lines = move_orders(t.board, codes, plies)
            with tempfile.TemporaryDirectory() as d:
                src = Path(d) / "positions.txt"
                src.write_text("\n".join(lines) + "\n")
                chunks = list(text_chunks(src))
            lab = Labeller(t)
            lab.label(*chunks[0][:2], lambda i: chunks[0][2][i].as_py())   # compile / load
            lab.close()
        with open_table(path) as t:         # fresh: its blocks are checked as they are touched
            lab = Labeller(t)
            c0 = time.process_time()
            for cols, off, strings in chunks:
                lab.label(cols, off, lambda i, s=strings: s[i].as_py())
            secs = time.process_time() - c0
            lab.close()
        return {"positions_per_cpu_s": len(lines) / secs}
    raise SystemExit(f"unknown measurement {what}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("--install", action="append", default=[], help="NAME=DIR (empty DIR: this one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--probes", type=int, default=2000)
    ap.add_argument("--cold", type=int, default=50)
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--only", default="cold,fresh,warm,label")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    if a.worker:
        n = {"cold": a.cold, "fresh": a.cold, "warm": a.probes, "label": a.positions}[a.worker]
        print(json.dumps(measure(a.table, a.worker, n, a.seed)))
        return
    installs = [tuple(s.split("=", 1)) for s in a.install] or [("this", "")]
    print(f"load average at start: {os.getloadavg()}", flush=True)
    res: dict = {}
    rng = random.Random(a.seed)
    for r in range(a.rounds):
        for what in a.only.split(","):
            order = list(installs)
            rng.shuffle(order)
            for name, d in order:
                env = dict(os.environ, PYTHONPATH=d) if d else dict(os.environ)
                p = subprocess.run([sys.executable, __file__, a.table, "--worker", what,
                                    "--probes", str(a.probes), "--cold", str(a.cold),
                                    "--positions", str(a.positions), "--seed", str(a.seed + r)],
                                   env=env, capture_output=True, text=True, cwd="/")
                if p.returncode:
                    raise SystemExit(f"{name} {what}: {p.stderr.strip().splitlines()[-1:]}")
                out = json.loads(p.stdout.strip().splitlines()[-1])
                for k, v in out.items():
                    res.setdefault((what, k), {}).setdefault(name, []).append(v)
    first = installs[0][0]
    for (what, k), by in res.items():
        base = float(np.median(by[first]))
        cells = [f"{name} {np.median(v):,.1f}" + ("" if name == first else
                 f" ({np.median(v) / base:.2f}x)") for name, v in by.items()]
        print(f"{what} {k}: " + ", ".join(cells) + f"  (median of {len(by[first])})")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
