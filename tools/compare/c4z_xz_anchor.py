"""Cadot's own xz command on our tables: the anchor of the 7x6 ``.c4z`` estimate.

Cadot compressed connect4_7x6.dat (15,861,962,650,191 bytes) into 350,251,723,872 bytes with
(his 7x6/README.txt, section 2.2)

    xz -k --delta=dist=7 --lzma2=dict=64MiB,lc=4,lp=0,pb=0,mf=bt3,mode=normal,nice=273,depth=0

This tool runs the same command (``dist`` = the board's entry size, 7 for 7x6) on a table,
whole or on ``--chunks`` evenly spread chunks of ``--chunk-bytes`` (whole entries) where the
whole file would take hours here, and prints compressed bytes, percent of raw and bytes per
entry, with CPU time and load. Its figure per board, beside the ``.c4z`` bytes per entry of the
same board, gives the ratio ``.c4z / xz`` that ``c4table plan`` applies to Cadot's 7x6 archive.

    python -m tools.compare.c4z_xz_anchor FILE.dat [--chunks 3 --chunk-bytes 100000000]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from c4table.table.source import board_of_table


def xz_cmd(entry_size: int) -> list[str]:
    """Cadot's xz options with the delta distance of this entry size, writing to stdout."""
    return ["xz", "-c", f"--delta=dist={entry_size}",
            "--lzma2=dict=64MiB,lc=4,lp=0,pb=0,mf=bt3,mode=normal,nice=273,depth=0"]


def xz_size(path: Path, entry_size: int, offset: int = 0, length: int | None = None) -> int:
    """Compressed bytes of ``length`` bytes of ``path`` from ``offset`` (all to the end)."""
    p = subprocess.Popen(xz_cmd(entry_size), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    import threading
    out = [0]

    def drain():
        while b := p.stdout.read(1 << 20):
            out[0] += len(b)
    t = threading.Thread(target=drain)
    t.start()
    with open(path, "rb") as f:
        f.seek(offset)
        left = length if length is not None else os.path.getsize(path) - offset
        while left > 0:
            b = f.read(min(left, 1 << 22))
            if not b:
                break
            p.stdin.write(b)
            left -= len(b)
    p.stdin.close()
    p.wait()
    t.join()
    if p.returncode:
        raise SystemExit(f"xz failed with status {p.returncode}")
    return out[0]


def c4z_size(path: Path, board, offs: list[int], n: int, block_entries: int) -> int:
    """``.c4z`` bytes of the same bytes: blocks encoded as ``compress`` encodes them (the
    table's own trained key dictionary, default level), plus 24 index bytes per block (the
    dictionary, stored once per table, is left out)."""
    from c4table import c4z
    kd = c4z.train_key_dict(path, board, block_entries)
    step = block_entries * board.entry_size
    total = 0
    with open(path, "rb") as f:
        for o in offs:
            for p in range(o, o + n, step):
                raw = os.pread(f.fileno(), min(step, o + n - p), p)
                total += len(c4z.encode_block(raw, board, c4z.DEFAULT_LEVEL, block_entries, kd)[1]) + 24
    return total


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", type=Path)
    ap.add_argument("--chunks", type=int, default=0, help="evenly spread chunks (0: whole file), each centred in its share of the file")
    ap.add_argument("--chunk-bytes", type=int, default=100_000_000)
    ap.add_argument("--block-entries", type=int, default=1 << 16)
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}; command: {' '.join(xz_cmd(0)).replace('dist=0', 'dist=ENTRY_BYTES')}")
    print("| table | entries | input bytes | xz bytes | of raw | xz bytes per entry | .c4z bytes per "
          "entry (same bytes) | .c4z / xz | how | xz cpu s | wall s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for t in a.tables:
        b = board_of_table(t, None)
        E = b.entry_size
        raw = t.stat().st_size
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        if a.chunks and raw > a.chunks * a.chunk_bytes:
            n = a.chunk_bytes // E * E
            offs = [int(x) // E * E for x in
                    [(i + 0.5) * raw / a.chunks - n / 2 for i in range(a.chunks)]]
            size = sum(xz_size(t, E, o, n) for o in offs)
            inp, how = n * len(offs), f"{len(offs)} chunks of {n:,} bytes, evenly spread"
        else:
            offs, n = [0], raw // E * E
            size, inp, how = xz_size(t, E), raw, "whole file"
        c4 = c4z_size(t, b, offs, n, a.block_entries)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
        print(f"| {t.name} | {raw // E:,} | {inp:,} | {size:,} | {100 * size / inp:.2f}% | "
              f"{size / (inp / E):.4f} | {c4 / (inp / E):.4f} | {c4 / size:.3f} | {how} | {cpu:.0f} | "
              f"{time.perf_counter() - t0:.0f} |", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
