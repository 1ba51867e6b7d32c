"""Benchmark of the streaming conversion ``c4table compress TABLE.dat.xz`` against ``xz -dc``
alone, in one run, and of the sizes the streaming profiles give.

Speed (``--xz FILE.xz``, or ``--dat FILE.dat``, packed first with Cadot's xz options): runs
``xz -dc FILE.xz > /dev/null`` and then ``c4table compress FILE.xz`` once per profile, each
in a child process, and prints wall time, CPU time (user+sys of the child and its children),
raw MB per CPU-second ("per core"), raw MB/s of wall time, peak memory (max RSS), peak disk
(the output's files, polled every 0.1 s) and the size as % of the raw table.

Sizes (``--sizes TABLE.dat ...``): every profile's block encoding of ``--sample-blocks`` blocks
spread evenly over each table (all blocks when it has fewer), without the trained
dictionaries, as % of raw; the level-19 column is the default profile's level.

    python -m tools.bench.bench_c4z_stream --dat tables/5x5/connect4_5x5.dat
    python -m tools.bench.bench_c4z_stream --sizes t55/connect4_5x5.dat t65/connect4_6x5.dat
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.bench.diskuse import PeakSampler

CADOT_XZ = "--lzma2=dict=64MiB,lc=4,lp=0,pb=0,mf=bt3,mode=normal,nice=273,depth=0"
PROFILES = {"L3": (3, 1 << 16), "L9": (9, 1 << 16), "L5-256k": (5, 1 << 18),
            "L9-256k": (9, 1 << 18)}     # L9-256k: the streaming profile (compress's default)


def pack(dat: Path, entry_size: int) -> Path:
    """``dat`` packed as Cadot packs his tables (``FILE.dat.xz`` beside it, kept)."""
    xz = dat.with_name(dat.name + ".xz")
    if not xz.exists():
        with open(xz.with_name(xz.name + ".tmp"), "wb") as f:
            subprocess.run(["xz", "-T1", "-c", f"--delta=dist={entry_size}", CADOT_XZ, str(dat)],
                           stdout=f, check=True)
        os.replace(xz.with_name(xz.name + ".tmp"), xz)
    return xz


def prefix_bytes(watch: Path) -> int:
    """Bytes of the files beside ``watch`` whose names start with its name (a file vanishing
    meanwhile counts nothing)."""
    total = 0
    for p in watch.parent.glob(watch.name + "*"):
        try:
            total += p.stat().st_size if p.is_file() else 0
        except OSError:
            pass
    return total


def measure(cmd, shell: bool = False, watch: Path | None = None) -> dict:
    """Wall, CPU (user+sys) and max RSS of ``cmd`` (a child process and its children), and
    the peak total size of the files whose names start with ``watch``."""
    disk = PeakSampler((lambda: prefix_bytes(watch)) if watch is not None else (lambda: 0), 0.1)
    with disk:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    err = p.stderr.read().decode()
    if status != 0:
        sys.exit(f"{cmd} failed: {err.strip()}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss * 1024,
            "disk": disk.peak}


def speed(xz: Path, raw_bytes: int, profiles: list[str], threads: int | None) -> None:
    c4table = [sys.executable, "-m", "c4table.cli.main"]
    print(f"# {xz}: {raw_bytes:,} raw bytes; load {os.getloadavg()[0]:.2f} at start; "
          f"{os.cpu_count()} cores")
    print(f"{'run':<22} {'wall s':>8} {'cpu s':>8} {'MB/cpu-s':>9} {'MB/s wall':>10} "
          f"{'peak RSS':>10} {'peak disk':>10} {'% raw':>7} {'x xz wall':>9}")
    base = measure(["xz", "-dc", str(xz)])
    rows = [("xz -dc alone", base, None)]
    with tempfile.TemporaryDirectory(dir=xz.parent) as d:
        for n, name in enumerate(profiles):
            level, block = PROFILES[name]
            out = Path(d) / f"{n}-{name}.c4z"
            cmd = [*c4table, "compress", str(xz), "-o", str(out), "-q", "--level", str(level),
                   "--block-entries", str(block)] + (["--threads", str(threads)] if threads else [])
            r = measure(cmd, watch=out)
            rows.append((f"compress {name}", r, out.stat().st_size))
    for name, r, size in rows:
        mb = raw_bytes / 1e6
        print(f"{name:<22} {r['wall']:>8.2f} {r['cpu']:>8.2f} {mb / r['cpu']:>9.1f} "
              f"{mb / r['wall']:>10.1f} {r['rss'] / 2**20:>8.0f}Mi {r['disk'] / 2**20:>8.1f}Mi "
              f"{'' if size is None else f'{100 * size / raw_bytes:.2f}':>7} "
              f"{r['wall'] / base['wall']:>9.2f}")
    print(f"# load {os.getloadavg()[0]:.2f} at the end")


def sizes(tables: list[Path], sample_blocks: int) -> None:
    import numpy as np
    from c4table.c4z.blocks import encode_block
    from c4table.table.source import board_of_table
    levels = sorted({lv for lv, _ in PROFILES.values()} | {19})
    blocks = sorted({b for _, b in PROFILES.values()})
    print(f"{'board':<6} {'block':>7} {'sampled':>12} " + " ".join(f"{'L' + str(lv):>7}" for lv in levels))
    for t in tables:
        b = board_of_table(t)
        E = b.entry_size
        n = t.stat().st_size // E
        for B in blocks:
            nb = n // B
            pick = np.unique(np.linspace(0, nb - 1, min(sample_blocks, nb)).astype(np.int64))
            raw_total, comp = 0, {lv: 0 for lv in levels}
            with open(t, "rb") as f:
                for i in pick:
                    raw = os.pread(f.fileno(), B * E, int(i) * B * E)
                    raw_total += len(raw)
                    for lv in levels:
                        comp[lv] += len(encode_block(raw, b, lv)[1])
            print(f"{b.name:<6} {B:>7} {raw_total / 1e6:>10.1f}MB " +
                  " ".join(f"{100 * comp[lv] / raw_total:>7.3f}" for lv in levels), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xz", type=Path)
    ap.add_argument("--dat", type=Path, help="a table to pack with Cadot's xz options first")
    ap.add_argument("--profiles", default="L3,L9,L9-256k", help=f"of {', '.join(PROFILES)}")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--sizes", type=Path, nargs="*")
    ap.add_argument("--sample-blocks", type=int, default=64)
    a = ap.parse_args()
    if a.dat or a.xz:
        if shutil.which("xz") is None:
            sys.exit("needs the xz command")
        if a.dat:
            from c4table.table.source import board_of_table
            xz = pack(a.dat, board_of_table(a.dat).entry_size)
            raw = a.dat.stat().st_size
        else:
            xz = a.xz
            raw = int(subprocess.run(["xz", "--robot", "--list", str(xz)], capture_output=True,
                                     text=True).stdout.split("totals")[1].split()[3])
        speed(xz, raw, a.profiles.split(","), a.threads)
    if a.sizes:
        sizes(a.sizes, a.sample_blocks)


if __name__ == "__main__":
    main()
