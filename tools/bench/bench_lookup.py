"""Benchmark of .dat and .c4z tables: sizes and ratios (against xz -9 and zstd -19 of the same
file, in the same run), compression and decompression speed, single-probe latency (p50/p99,
warm page cache, and cold after posix_fadvise(DONTNEED)), and batched probes per second.

    python -m tools.bench.bench_lookup tables/5x5/connect4_5x5.dat [more.dat ...]
        [--configs 65536:19,65536:19:32768,65536:9] [--no-external] [--probes 2000]
        [--batch 1000000] [--sample-external BYTES] [--sample-blocks N]

Each config is ``block_entries:zstd_level[:part_entries]`` (default part: 9/16 of the block;
``65536:19:65536`` is one part per block, the layout of format 2). ``--sample-external`` runs xz -9 and zstd -19 on the first BYTES of a big file
only (reported as such) where the whole file would take hours. Output: one markdown table per file plus the load
average, so that figures measured on a shared machine can be judged. Times are wall clock;
CPU seconds are given beside the compression figures (``cpu``), which is what a loaded
machine distorts least.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from c4table import c4z
from c4table.c4z.writer import compress_table, decompress_table
from c4table.io.hashes import sha256_of
from c4table.open import open_table


def external(cmd: list[str], path: Path) -> tuple[int, float]:
    """Compressed size and wall seconds of ``cmd < path``."""
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        p = subprocess.Popen(cmd, stdin=f, stdout=subprocess.PIPE)
        n = 0
        while b := p.stdout.read(1 << 20):
            n += len(b)
        p.wait()
    return n, time.perf_counter() - t0


def drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def sample_keys(dat: Path, n: int, rng) -> np.ndarray:
    with open_table(dat) as t:
        idx = np.sort(rng.integers(0, len(t), n))
        buf = np.frombuffer(t._mm, np.uint8).reshape(-1, t.entry_size)[idx, : t.key_bytes]
        k = np.zeros((n, 8), np.uint8)
        k[:, 8 - t.key_bytes:] = buf
        keys = k.view(">u8").ravel().astype(np.uint64)
    return rng.permutation(keys)


def latencies(path: Path, keys: np.ndarray, cold: bool, clear_lru: bool
              ) -> tuple[float, float, float, float]:
    """p50, p99 in microseconds of single outcome_byte probes (wall clock), the p50 of their
    CPU time (what a loaded machine distorts least) and their mean (wall): a .c4z probe
    decodes the first part of a block or all of it, so its times have two modes."""
    out, cpu = [], []
    t = open_table(path)
    try:
        for k in keys:
            if cold:
                t.close()
                drop_cache(path)
                t = open_table(path)
            if clear_lru and hasattr(t, "c4z"):
                t.c4z.clear_cache()   # no decoded block or stream of an earlier probe
            c0, t0 = time.thread_time(), time.perf_counter()
            t.outcome_byte(int(k))
            out.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
    finally:
        t.close()
    a = np.array(out) * 1e6
    return (float(np.percentile(a, 50)), float(np.percentile(a, 99)), float(np.median(cpu) * 1e6),
            float(a.mean()))


def warm(path: Path) -> None:
    """Read the file once, so that the page cache holds it (after a cold-probe test)."""
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


def batched(path: Path, keys: np.ndarray, want: np.ndarray) -> float:
    warm(path)
    with open_table(path) as t:
        t.probe_keys(keys[:1000])               # numba compile/cache load, index
        if hasattr(t, "c4z"):
            t.c4z.clear_cache()
        c0, t0 = time.process_time(), time.perf_counter()
        got = t.probe_keys(keys)
        secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert (got == want).all(), "batched probe disagrees"
    return keys.shape[0] / secs, keys.shape[0] / cpu


def bench_file(dat: Path, configs, ext: bool, n_probes: int, n_batch: int, out,
               sample: int = 0) -> None:
    rng = np.random.default_rng(1)
    raw = dat.stat().st_size
    rows = []
    print(f"\n### {dat.name}: {raw:,} bytes", file=out, flush=True)
    if ext:
        src, what = dat, "whole file"
        if sample and raw > sample:
            src = Path(tempfile.mkdtemp(prefix="bench-", dir=dat.parent)) / "head.dat"
            with open(dat, "rb") as f, open(src, "wb") as g:
                g.write(f.read(sample))
            what = f"first {sample:,} bytes"
        for name, cmd in (("xz -9", ["xz", "-9", "-T2", "-c"]), ("zstd -19", ["zstd", "-19", "-T2", "-c"])):
            size, secs = external(cmd, src)
            part = src.stat().st_size
            rows.append(f"| {name} ({what}) | {size:,} | {100 * size / part:.2f}% | "
                        f"{part / secs / 1e6:.1f} MB/s | | | | | |")
            print(rows[-1], file=out, flush=True)
        if src != dat:
            src.unlink()
            src.parent.rmdir()
    keys = sample_keys(dat, max(n_probes, n_batch), rng)
    probe_keys = keys[:n_probes]
    with open_table(dat) as t:
        want = t.probe_keys(keys[:n_batch])
    p50, p99, pc, pm = latencies(dat, probe_keys, False, False)
    c50, c99, _, _ = latencies(dat, probe_keys[: max(50, n_probes // 10)], True, False)
    rate, crate = batched(dat, keys[:n_batch], want)
    rows.append(f"| .dat (raw) | {raw:,} | 100% | | | {p50:.1f} / {p99:.1f} (cpu {pc:.1f}) | "
                f"{c50:.0f} / {c99:.0f} | | {rate / 1e6:.2f} M/s (cpu {crate / 1e6:.2f} M/s) |")
    print(rows[-1], file=out, flush=True)
    with tempfile.TemporaryDirectory(dir=dat.parent) as tmp:
        for B, level, S in configs:
            z = Path(tmp) / f"b{B}_l{level}_s{S}.c4z"
            c0, t0 = time.process_time(), time.perf_counter()
            compress_table(dat, z, block_entries=B, level=level, quiet=True,
                           part_entries=S or None)
            csecs, ccpu = time.perf_counter() - t0, time.process_time() - c0
            size = z.stat().st_size
            back = Path(tmp) / "back.dat"
            c0, t0 = time.process_time(), time.perf_counter()
            decompress_table(z, back, quiet=True)
            dsecs, dcpu = time.perf_counter() - t0, time.process_time() - c0
            c0, t0 = time.process_time(), time.perf_counter()
            with c4z.open_c4z(z) as f:   # decoding alone: the blocks back to raw bytes, no hashing
                for _ in f.iter_blocks(raw=True):
                    pass
            psecs, pcpu = time.perf_counter() - t0, time.process_time() - c0
            same = sha256_of(back) == sha256_of(dat)
            back.unlink()
            p50, p99, pc, pm = latencies(z, probe_keys, False, True)
            l50, _, _, _ = latencies(z, probe_keys, False, False)
            c50, c99, _, _ = latencies(z, probe_keys[: max(50, n_probes // 10)], True, True)
            rate, crate = batched(z, keys[:n_batch], want)
            sym = f", parts of {S:,}" if S else ""
            rows.append(f"| .c4z {B:,}-entry blocks, zstd {level}{sym} | {size:,} | {100 * size / raw:.2f}% | "
                        f"{raw / csecs / 1e6:.1f} MB/s (cpu {ccpu:.1f} s) | "
                        f"{raw / dsecs / 1e6:.0f} MB/s (cpu {dcpu:.1f} s; decode only {raw / psecs / 1e6:.0f} "
                        f"MB/s, cpu {pcpu:.1f} s){'' if same else ' MISMATCH'} | "
                        f"{p50:.0f} / {p99:.0f} (cpu {pc:.0f}; mean {pm:.0f}) | {c50:.0f} / {c99:.0f} | {l50:.1f} | "
                        f"{rate / 1e6:.2f} M/s (cpu {crate / 1e6:.2f} M/s) |")
            print(rows[-1], file=out, flush=True)


def sampled_size(dat: Path, configs, n_blocks: int, out) -> None:
    """Estimated .c4z size of a table too big to compress whole here: the key dictionary
    ``compress`` would train, plus ``n_blocks`` blocks spread evenly over the file, encoded as
    ``compress`` encodes them, scaled to the whole block count, plus the index."""
    from c4table.table.source import board_of_table
    b = board_of_table(dat, None)
    raw = dat.stat().st_size
    E = b.entry_size
    for B, level, S in configs:
        c0 = time.process_time()
        kd, sd = c4z.train_dicts(dat, b, B)
        nb = -(-raw // E // B)
        pick = np.linspace(0, nb - 2, min(n_blocks, nb - 1)).astype(np.int64)
        total = 0
        with open(dat, "rb") as f:
            for i in pick:
                rawb = os.pread(f.fileno(), B * E, int(i) * B * E)
                total += len(c4z.encode_block(rawb, b, level, S or None, kd, sd)[1])
        est = total / len(pick) * nb + len(kd or b"") + len(sd or b"") + 24 * nb
        print(f"| .c4z {B:,}-entry blocks, zstd {level} (estimate from {len(pick)} of {nb:,} "
              f"blocks) | {est:,.0f} | {100 * est / raw:.2f}% | {est / (raw / E):.4f} bytes per "
              f"entry | cpu {time.process_time() - c0:.0f} s | | | | |", file=out, flush=True)


HEADER = ("| file | bytes | of raw | compress | decompress | probe p50 / p99 us, warm | "
          "cold (fadvise) | warm, LRU as is | batched probes |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", type=Path)
    ap.add_argument("--configs", default="65536:19,65536:19:65536")
    ap.add_argument("--sample-external", type=int, default=0, metavar="BYTES")
    ap.add_argument("--sample-blocks", type=int, default=0, metavar="N",
                    help="only estimate the .c4z size from N blocks (for tables too big here)")
    ap.add_argument("--no-external", action="store_true", help="skip xz -9 and zstd -19")
    ap.add_argument("--probes", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=1_000_000)
    a = ap.parse_args(argv)
    configs = [tuple(int(x) for x in (c.split(":") + ["0"])[:3]) for c in a.configs.split(",")]
    out = sys.stdout
    print(f"load average at start: {os.getloadavg()}, cores {os.cpu_count()}", file=out)
    print(HEADER, file=out)
    for t in a.tables:
        if a.sample_blocks:
            print(f"\n### {t.name}: {t.stat().st_size:,} bytes", file=out, flush=True)
            sampled_size(t, configs, a.sample_blocks, out)
            continue
        bench_file(t, configs, not a.no_external, a.probes, a.batch, out, a.sample_external)
    print(f"load average at end: {os.getloadavg()}", file=out)


if __name__ == "__main__":
    main()
