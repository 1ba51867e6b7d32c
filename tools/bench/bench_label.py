"""Labelling speed of ``c4table label`` on one core: positions per second with per-move values.

Draws ``--positions`` entries of a table at random (with replacement), writes one move string
reaching each to a text file (:func:`c4table.analysis.export.move_orders`' un-playing), reads the table
once so it is warm in the page cache, then times

* the labelling alone (:class:`c4table.analysis.label.Labeller` on the parsed chunks), and
* the whole command (:func:`c4table.analysis.label.label_file`: read, label, write parquet),

each ``--repeat`` times, printing the best. pyarrow is held to one thread, numba runs on one.

    .venv/bin/python -m tools.bench.bench_label tables/7x6_root-66362117563257723363/connect4_7x6_root-66362117563257723363.dat
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table")
    ap.add_argument("--positions", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--planes", default=None, choices=["pettingzoo", "openspiel"])
    a = ap.parse_args(argv)
    import pyarrow as pa
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    from c4table.analysis.export import decode_entries, move_orders
    from c4table.analysis.label import Labeller, label_file, text_chunks
    from c4table.open import open_table
    t = open_table(a.table)
    Path(a.table).read_bytes()                         # warm: the file in the page cache
    rng = np.random.default_rng(a.seed)
    idx = np.sort(rng.integers(0, t.entries, a.positions))
    ent = t.entries_array()
    K = t.board.key_bytes
    raw = np.zeros((idx.shape[0], 8), np.uint8)
    raw[:, 8 - K:] = np.frombuffer(ent[idx]["key"].tobytes(), np.uint8).reshape(-1, K)
    keys = raw.view(">u8").ravel().astype(np.uint64)
    codes, plies, _, _ = decode_entries(t.board, keys)
    lines = move_orders(t.board, codes, plies)
    perm = rng.permutation(len(lines))                 # input in no particular order
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "positions.txt"
        src.write_text("\n".join(lines[i] for i in perm) + "\n")
        chunks = list(text_chunks(src))
        lab = Labeller(t, a.planes)
        lab.label(*chunks[0][:2], lambda i: chunks[0][2][i].as_py())   # compile / load kernels
        best_core = best_cmd = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            for cols, offs, strings in chunks:
                lab.label(cols, offs, lambda i, s=strings: s[i].as_py())
            best_core = min(best_core, time.perf_counter() - t0)
            t0 = time.perf_counter()
            rep = label_file(t, src, Path(d) / "out.parquet", planes=a.planes)
            best_cmd = min(best_cmd, time.perf_counter() - t0)
        assert rep.errors == 0, rep
    n = a.positions
    print(f"machine  {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores (one used), python {sys.version.split()[0]}")
    print(f"table    {a.table}: {t.board}, {t.entries:,} entries")
    print(f"labels   {n:,} positions, per-move values{', planes ' + a.planes if a.planes else ''}")
    print(f"label    {n / best_core:,.0f} positions/s (labelling alone, best of {a.repeat})")
    print(f"command  {n / best_cmd:,.0f} positions/s (read text, label, write parquet)")


if __name__ == "__main__":
    main()
