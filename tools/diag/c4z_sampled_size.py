"""The size ``c4table compress`` would write for a table, estimated from a systematic sample of
its blocks: every ``--every``-th stretch of ``--stretch`` blocks (on compress's block grid) is
read from the table (``.dat``, or ``.c4z`` of any grid, decoded), encoded by the block codec
compress would use, and the bytes scaled to the whole table by its entries (a ratio
estimate), with a standard error from successive differences of the stretches (the usual
variance estimate of a systematic sample whose units drift along the key order). For a table
too big to compress whole in the time at hand: 5% of 6x6 costs a twentieth of its
``compress``. ``--every 1`` encodes every block: its block bytes are those of the real file.

    python -m tools.diag.c4z_sampled_size TABLE.dat|TABLE.c4z [--every 20] [--stretch 1]
        [--codec rulekeys-frames-v5] [--level 19] [--block-entries 65536] [--frame-entries N]
        [--threads 2] [--json]

Prints the entries sampled, the estimated file bytes (blocks; plus the block index, the
sample's own compressed as the writer does and scaled per block, and at most
:data:`HEADER_BYTES` of header), the standard error of the blocks' bytes (none from a single
stretch), and bits per entry of the keys (each block's head included) and of the outcome
symbols where the codec keeps them apart (format 5's symbol frames; none if a sampled block
is stored as format 3), and for format 5 the CPU a symbol frame takes to decode (what a probe
decodes beside its run of keys). A codec with trained dictionaries (format 3) gets compress's own:
trained on the same evenly spread blocks of the table (``train_dicts_on``), and counted in
the file.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import xxhash
import zstandard

from c4table.c4z.blocks import rows_of, train_dicts_on
from c4table.c4z.blockwriter import check_grid
from c4table.c4z.format import (DEFAULT_BLOCK_ENTRIES, DEFAULT_CODEC, DEFAULT_LEVEL,
                                KEY_DICT_BYTES, SYM_DICT_BYTES)
from c4table.c4z.reader import open_c4z
from c4table.c4z.registry import get_codec, has_frames
from c4table.table.source import board_of_table

#: a file's header and trailer, at most (its JSON header is under 1 KB, the trailer 40 bytes)
HEADER_BYTES = 1024


@dataclass(frozen=True)
class SampledSize:
    """What :func:`estimate` found (bytes of the whole file, estimated, unless it says
    ``sampled``)."""

    board: str
    codec: str
    level: int
    block_entries: int
    entries: int
    sampled_entries: int
    sampled_blocks: int
    blocks: int
    sampled_bytes: int
    file_bytes: float
    stderr_bytes: float | None   # None: a single stretch sampled, no spread to measure
    key_bits: float | None
    symbol_bits: float | None
    encode_cpu_s: float
    frame_entries: int | None = None   # format 5's symbol frames, where not its default
    frame_decode_us: float | None = None   # format 5: CPU to decode one symbol frame (a probe's)


class RawRows:
    """Raw rows ``[a, b)`` of a table: a ``.dat`` read in place, or a ``.c4z`` of any block
    grid decoded (the blocks that cover the rows)."""

    def __init__(self, path: Path):
        self.path = path
        if path.suffix == ".c4z":
            self.z = open_c4z(path)
            self.board, self.entries = self.z.board, self.z.entries
            self.fd = None
        else:
            self.z = None
            self.board = board_of_table(path)
            self.fd = os.open(path, os.O_RDONLY)
            self.entries = os.fstat(self.fd).st_size // self.board.entry_size

    def rows(self, a: int, b: int) -> bytes:
        E = self.board.entry_size
        if self.z is None:
            return os.pread(self.fd, (b - a) * E, a * E)
        G = self.z.block_entries
        parts = []
        for i in range(a // G, (b - 1) // G + 1):
            keys, outs = self.z.decode_block(i, self.z.read_block(i, copy=True))
            lo, hi = max(a - i * G, 0), min(b - i * G, keys.shape[0])
            parts.append(bytes(rows_of(keys[lo:hi], outs[lo:hi], E)))
        return b"".join(parts)

    def close(self) -> None:
        if self.z is not None:
            self.z.close()
        if self.fd is not None:
            os.close(self.fd)


def sample_starts(nblocks: int, stretch: int, every: int) -> list[int]:
    """First blocks of the sampled stretches: every ``every``-th stretch of ``stretch`` blocks,
    starting at the middle one of the first ``every`` (``every`` 1: all of them; a table of
    fewer stretches: its middle one).

    >>> sample_starts(100, 4, 5)
    [8, 28, 48, 68, 88]
    >>> sample_starts(10, 4, 1)
    [0, 4, 8]
    >>> sample_starts(3, 1, 20)
    [1]
    """
    units = -(-nblocks // stretch)
    return [u * stretch for u in range(min(every // 2, units // 2), units, every)]


def estimate(path: Path, *, every: int = 20, stretch: int = 1, codec: str = DEFAULT_CODEC,
             level: int = DEFAULT_LEVEL, block_entries: int = DEFAULT_BLOCK_ENTRIES,
             threads: int | None = None, progress=None,
             frame_entries: int | None = None) -> SampledSize:
    """Encode the sampled stretches of the table ``path`` as ``compress`` would and scale
    (module docstring); ``frame_entries``: format 5's symbol frames of that many entries (a
    codec field compress keeps at its default but for ``--archive``)."""
    src = RawRows(path)
    try:
        cls = get_codec(codec)
        part = check_grid(level, block_entries, None)
        N, B = src.entries, block_entries
        E = src.board.entry_size
        kd, sd = getattr(cls, "uses_key_dict", True), getattr(cls, "uses_sym_dict", True)
        dicts = (None, None)
        if kd or sd:   # compress's own: trained on the same blocks of the table
            dicts = train_dicts_on(lambda off, n: src.rows(off // E, (off + n) // E), N * E,
                                   src.board, B, key_size=KEY_DICT_BYTES if kd else 0,
                                   sym_size=SYM_DICT_BYTES if sd else 0)
        cd = cls(src.board, part, level, 0, *dicts,
                 **({"frame_entries": frame_entries} if frame_entries else {}))
        nb = -(-N // B)
        starts = sample_starts(nb, stretch, every)

        def one(s: int) -> tuple[int, int, int | None, list, float, list]:
            raw = src.rows(s * B, min((s + stretch) * B, N))
            size = 0
            sym = 0
            index = []
            frames = []   # (frames, CPU s) decoding a block's symbol frames, format 5
            spent = 0.0
            for o in range(0, len(raw) // E, B):
                chunk = raw[o * E: (o + B) * E]
                t = time.thread_time()
                first, blk = cd.encode(chunk)
                spent += time.thread_time() - t
                size += len(blk)
                n = len(chunk) // E
                sb = cd.symbol_bytes(blk, n, first) if hasattr(cd, "symbol_bytes") else None
                sym = None if sb is None or sym is None else sym + sb
                index.append((first, len(blk), xxhash.xxh64_intdigest(blk)))
                if sb is not None and has_frames(cls):
                    fs = cd._parsed(blk, n, first).fstarts
                    t = time.thread_time()
                    for j in range(fs.shape[0] - 1):
                        cd._frame(blk[fs[j]: fs[j + 1]], j, n)
                    frames.append((fs.shape[0] - 1, time.thread_time() - t))
            return len(raw) // E, size, sym, index, spent, frames

        threads = threads or os.cpu_count() or 1
        ys, ns, syms, index, cpu, frames = [], [], [], [], 0.0, []
        t0 = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            for k, (n, y, sy, idx, c, fr) in enumerate(pool.map(one, starts)):
                ns.append(n)
                ys.append(y)
                syms.append(sy)
                index += idx
                cpu += c
                frames += fr
                if progress:
                    progress(k + 1, len(starts), time.perf_counter() - t0)
        n_s, y_s = np.array(ns, float), np.array(ys, float)
        R = y_s.sum() / n_s.sum()
        m = len(starts)
        e = y_s - R * n_s
        var_r = 0.0 if every == 1 else None
        if m > 1 and every > 1:
            fpc = 1 - m / -(-nb // stretch)
            var_r = fpc * m / (2 * (m - 1)) * float(np.sum(np.diff(e) ** 2)) / n_s.sum() ** 2
        # the index as the writer stores it (first keys, offsets, checksums; zstd 9), the
        # sample's own scaled per block
        first, lens, sums = (np.array(c, np.uint64) for c in zip(*index))
        offs = np.concatenate([[0], np.cumsum(lens)]).astype("<u8")
        comp = zstandard.ZstdCompressor(level=9).compress(
            np.concatenate([first, offs, sums]).astype("<u8").tobytes())
        per_block_index = len(comp) / len(index)
        file_bytes = R * N + per_block_index * nb + HEADER_BYTES + sum(len(d or b"") for d in dicts)
        sym_total = None if any(s is None for s in syms) else float(sum(syms))
        sampled = int(n_s.sum())
        return SampledSize(
            board=src.board.name, codec=codec, level=level, block_entries=B, entries=N,
            sampled_entries=sampled, sampled_blocks=len(index), blocks=nb,
            sampled_bytes=int(y_s.sum()), file_bytes=file_bytes,
            stderr_bytes=None if var_r is None else N * var_r ** 0.5,
            key_bits=None if sym_total is None else 8 * (y_s.sum() - sym_total) / sampled,
            symbol_bits=None if sym_total is None else 8 * sym_total / sampled,
            encode_cpu_s=cpu, frame_entries=frame_entries,
            frame_decode_us=1e6 * sum(c for _, c in frames) / sum(f for f, _ in frames)
            if frames else None)
    finally:
        src.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path, help="TABLE.dat or TABLE.c4z")
    ap.add_argument("--every", type=int, default=20, help="one stretch in this many (default 20)")
    ap.add_argument("--stretch", type=int, default=1,
                    help="blocks per stretch (default 1: on 6x5, one block in 20 gave a standard "
                         "error of 0.6%%, stretches of 16 blocks 2.4%%)")
    ap.add_argument("--codec", default=DEFAULT_CODEC)
    ap.add_argument("--level", type=int, default=DEFAULT_LEVEL)
    ap.add_argument("--block-entries", type=int, default=DEFAULT_BLOCK_ENTRIES)
    ap.add_argument("--frame-entries", type=int, default=None,
                    help="format 5's symbol frames of this many entries (default: the codec's)")
    ap.add_argument("--threads", type=int, default=None, help="default: all cores")
    ap.add_argument("--json", dest="as_json", action="store_true", help="one JSON object")
    a = ap.parse_args(argv)
    if a.every < 1 or a.stretch < 1:
        ap.error("--every and --stretch are at least 1")

    def progress(k, m, secs):
        if k == m or k % max(1, m // 20) == 0:
            print(f"  {k:,}/{m:,} stretches, {secs:.0f} s, ETA {secs * (m - k) / k:.0f} s",
                  file=sys.stderr, flush=True)
    r = estimate(a.table, every=a.every, stretch=a.stretch, codec=a.codec, level=a.level,
                 block_entries=a.block_entries, threads=a.threads, progress=progress,
                 frame_entries=a.frame_entries)
    if a.as_json:
        print(json.dumps(asdict(r)))
        return
    frames = f", {r.frame_entries:,}-entry symbol frames" if r.frame_entries else ""
    print(f"{r.board}: {r.codec}, level {r.level}, {r.block_entries:,}-entry blocks{frames}; sampled "
          f"{r.sampled_entries:,} of {r.entries:,} entries ({100 * r.sampled_entries / r.entries:.2f}%, "
          f"{r.sampled_blocks:,} of {r.blocks:,} blocks)")
    err = "no standard error (one stretch)" if r.stderr_bytes is None else \
        f"standard error {r.stderr_bytes:,.0f} ({100 * r.stderr_bytes / r.file_bytes:.3f}%)"
    print(f"estimated file: {r.file_bytes:,.0f} bytes, {err}; "
          f"{8 * r.file_bytes / r.entries:.4f} bits per entry")
    if r.key_bits is not None:
        print(f"keys {r.key_bits:.4f} bits per entry, outcome symbols {r.symbol_bits:.4f}")
    print(f"encode CPU {r.encode_cpu_s:.1f} s ({1e9 * r.encode_cpu_s / r.sampled_entries:.1f} ns per entry)")
    if r.frame_decode_us is not None:
        print(f"a symbol frame decodes in {r.frame_decode_us:.1f} us of CPU (what a probe decodes)")


if __name__ == "__main__":
    main()
