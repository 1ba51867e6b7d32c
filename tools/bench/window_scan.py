"""What the pulling backward pass's window scan (``cpu.column_windows``) costs per key of a
generation, each forward shard of a build whose ``work/`` is kept (a ``.dat`` build) scanned
whole, then 20 random slices of it (as ``pull.annotate`` cuts a shard); ``--save`` writes
every window found (``lo`` then ``hi`` per column, one row per scan) to an ``.npy`` file, so
that two checkouts can be compared window for window. A benchmark, not a test.

    python -m tools.bench.window_scan BUILD_DIR PLY [PLY ...] [--save OUT.npy]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="a build directory whose work/ holds the forward shards")
    ap.add_argument("plies", type=int, nargs="+")
    ap.add_argument("--save", help="write the windows found to this .npy file")
    a = ap.parse_args(argv)

    from c4table.builddir.reader import BuildDir
    from c4table.builddir.shards import read_shard
    from c4table.io.storage import open_storage
    from c4table.pipeline.kernels import cpu

    bd = BuildDir.load(a.dir)
    store = open_storage(a.dir)
    tabs, w = cpu.board_tables(bd.board), bd.board.width
    lo, hi = np.empty(w, np.uint64), np.empty(w, np.uint64)
    found, rng = [], np.random.default_rng(5)
    for ply in a.plies:
        shards = [s for s in bd.manifest.shards("forward", ply) if s.rows]
        spent, keys_n, empty = 0.0, 0, 0
        for s in shards:
            keys = read_shard(store, s)
            cpu.column_windows(keys[:10], ply, *tabs, lo, hi)     # compiled before the clock
            t = time.thread_time()
            cpu.column_windows(keys, ply, *tabs, lo, hi)
            spent += time.thread_time() - t
            keys_n += keys.shape[0]
            empty += int(np.sum(lo > hi))
            found.append(np.concatenate([lo, hi]))
            for _ in range(20):
                i0 = int(rng.integers(0, keys.shape[0]))
                i1 = int(rng.integers(i0, keys.shape[0] + 1))
                cpu.column_windows(keys[i0:i1], ply, *tabs, lo, hi)
                found.append(np.concatenate([lo, hi]))
        print(f"ply {ply}: {len(shards)} shards, {keys_n:,} keys, {spent / max(1, keys_n) * 1e9:.1f} "
              f"ns per key, {empty} of {len(shards) * w} shard columns without a child")
    if a.save:
        np.save(a.save, np.array(found))


if __name__ == "__main__":
    main()
