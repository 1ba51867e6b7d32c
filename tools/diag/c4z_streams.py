"""Where the bytes of a ``.c4z`` go: key frames and outcome-symbol frames measured apart, per
board, on evenly spread blocks encoded as ``compress`` encodes them, with the features that
explain them (key density, gaps, symbol entropy), and zstd parameter variants of both frames
(sizes and decode time side by side in one run).

    python -m tools.diag.c4z_streams FILE.dat [...] [--blocks 60] [--block-entries 65536]
        [--level 19] [--variants default,btultra2,...]
    python -m tools.diag.c4z_streams FILE.dat --compare-blocks 65536,262144,1048576 --blocks 8
    python -m tools.diag.c4z_streams --wdl BUILD_DIR [...]    # per-ply outcome statistics, and 7x6's

``--wdl`` prints, per build directory (its manifest) and for 7x6 (Böck's Table 2, shipped in
the package), the won/drawn/lost entropy given the ply (bits per position), the share of draws
and of finished games: what the outcome symbols of a board hold, known for 7x6 without its table.

Per board it prints one row per variant: key bytes per entry, symbol bytes per entry, total
(plus the index, 24 bytes per block, and the dictionary spread over the table), the CPU
microseconds to decode one block's key frame and symbol frame, and once per board: entries,
key space ``B**w``, density, mean key gap, the share of deltas of two or more varint bytes, and
the order-0 entropy of the symbols given the ply (bits per entry). Variants:

- ``default``: what ``compress`` writes (zstd level, trained key dictionary).
- ``btultra2``, ``tl<N>``, ``ml<N>``, ``sl<N>``, ``wl<N>``: zstd compression parameters on top
  of the level (strategy, targetLength, minMatch, searchLog, windowLog), combinable with ``+``
  (``btultra2+tl999+ml3``); ``nodict``: no key dictionary; ``dict<KB>``: a dictionary of that
  many KB; ``symdict``: a trained dictionary for the symbol frames too; ``hybrid``: the
  symbol map with "the last mover has won (distance 0)" as symbol 1 and "the player to move
  wins in 1" as 33 at every ply (the default map has them swapped at even plies);
  ``mover``: every win relative to the player to move (1 + d//2: the player who moved last
  wins, 33 + d//2: the player to move wins).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import zstandard

from c4table import c4z
from c4table.c4z.codec import BlockCodec
from c4table.table.source import board_of_table, keys_of_rows


def pick_blocks(raw: int, E: int, B: int, n: int) -> np.ndarray:
    """Up to ``n`` evenly spread whole blocks of ``B`` entries (one: the middle one)."""
    nb = raw // E // B
    if n == 1:
        return np.array([nb // 2], np.int64), nb
    return np.unique(np.linspace(0, nb - 1, min(n, nb)).astype(np.int64)), nb


def read_block(f, E: int, B: int, i: int) -> np.ndarray:
    return np.frombuffer(os.pread(f.fileno(), B * E, int(i) * B * E), np.uint8).reshape(-1, E)


# variant spec prefixes -> zstd parameter names (e.g. "tl64+ml4": target_length 64, min_match 4)
PARAMS = {"tl": "target_length", "ml": "min_match", "sl": "search_log", "wl": "window_log",
          "cl": "chain_log", "hl": "hash_log"}


def params(level: int, spec: str):
    """zstd compression parameters of a variant spec (None: the plain level)."""
    kw = {}
    for part in spec.split("+"):
        if part == "btultra2":
            kw["strategy"] = zstandard.STRATEGY_BTULTRA2
        elif part[:2] in PARAMS and part[2:].isdigit():
            kw[PARAMS[part[:2]]] = int(part[2:])
    if not kw:
        return None
    return zstandard.ZstdCompressionParameters.from_level(level, write_checksum=1, **kw)


def cctx(level: int, spec: str, zdict: bytes | None):
    p = params(level, spec)
    d = zstandard.ZstdCompressionDict(zdict) if zdict else None
    if p is None:
        return zstandard.ZstdCompressor(level=level, write_checksum=True, dict_data=d)
    return zstandard.ZstdCompressor(compression_params=p, dict_data=d)


def symbol_map(cells: int, kind: str) -> np.ndarray:
    """``fwd[p, byte]`` of a symbol-map variant (see the module docstring)."""
    from c4table.c4z.codec import symbol_tables
    fwd, _ = symbol_tables(cells)
    fwd = fwd.copy()
    for p in range(cells + 1):
        if kind == "hybrid" and p % 2 == 0:
            a, b = fwd[p, 0x80 | 0], fwd[p, 0x40 | 1]      # B wins in 0, A wins in 1
            fwd[p, 0x80 | 0], fwd[p, 0x40 | 1] = b, a
        elif kind == "mover" and p % 2 == 0:               # at even plies swap A and B
            for d in range(64):
                fwd[p, 0x40 | d], fwd[p, 0x80 | d] = fwd[p, 0x80 | d], fwd[p, 0x40 | d]
    return fwd


def sym_entropy(plies: np.ndarray, syms: np.ndarray) -> float:
    """Order-0 entropy of the symbols given the ply, bits per entry."""
    joint = plies.astype(np.int64) * 256 + syms
    _, c = np.unique(joint, return_counts=True)
    _, cp = np.unique(plies, return_counts=True)
    n = plies.shape[0]
    return float((-(c * np.log2(c / n)).sum() + (cp * np.log2(cp / n)).sum()) / n)


def bench(dat: Path, n_blocks: int, B: int, level: int, variants: list[str], out) -> None:
    board = board_of_table(dat, None)
    E = board.entry_size
    raw = dat.stat().st_size
    entries = raw // E
    codec = BlockCodec(board)
    pick, nb = pick_blocks(raw, E, B, n_blocks)
    streams, raws = [], []
    gaps, multi, ent = [], 0, 0.0
    with open(dat, "rb") as f:
        for i in pick:
            rows = read_block(f, E, B, i)
            keys = keys_of_rows(rows, E - 1)
            outs = np.ascontiguousarray(rows[:, E - 1])
            kv, sy = codec.encode(keys, outs)
            streams.append((kv, sy))
            raws.append((codec.plies(keys), outs))
            d = np.diff(keys)
            gaps.append(float(d.mean()))
            multi += int((d >= 128).sum())
            ent += sym_entropy(codec.plies(keys), np.frombuffer(sy, np.uint8)) * keys.shape[0]
    n = sum(len(s) for _, s in streams)
    space = board.base ** board.width
    print(f"\n### {dat.name}: {entries:,} entries, key space {space:,} (density {entries / space:.4f}, "
          f"mean gap {space / entries:.1f}); {len(pick)} of {nb:,} blocks of {B:,}: mean gap in "
          f"blocks {np.mean(gaps):.1f}, deltas of 2+ varint bytes {multi / n:.4f}, "
          f"H(symbol | ply) {ent / n:.3f} bits per entry", file=out, flush=True)
    print("| variant | keys B/entry | symbols B/entry | total B/entry (+index, dict) | "
          "decode us/block keys | symbols | cpu s |\n|---|---:|---:|---:|---:|---:|---:|",
          file=out, flush=True)
    for v in variants:
        c0 = time.process_time()
        parts = set(v.split("+"))
        kd = None
        if "nodict" not in parts:
            size = next((int(p[4:]) * 1024 for p in parts if p.startswith("dict")), c4z.KEY_DICT_BYTES)
            kd = c4z.train_key_dict(dat, board, B, size=size)
        sd = None
        if "symdict" in parts:
            samp = [s for _, s in streams[:: max(1, len(streams) // 40)]]
            try:
                sd = zstandard.train_dictionary(min(c4z.KEY_DICT_BYTES, raw // 500), samp, k=2048, d=8,
                                                level=19, threads=1).as_bytes()
            except zstandard.ZstdError:
                sd = None
        ck, cs = cctx(level, v, kd), cctx(level, v, sd)
        kind = next((p for p in parts if p in ("hybrid", "mover")), None)
        cur = streams
        if kind:
            fwd = symbol_map(board.cells, kind)
            cur = [(kv, fwd[pl, o].tobytes()) for (kv, _), (pl, o) in zip(streams, raws)]
        dk = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(kd) if kd else None)
        ds = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(sd) if sd else None)
        kb = sb = 0
        tk = ts = 0.0
        for kv, sy in cur:
            fk, fs = ck.compress(kv), cs.compress(sy)
            kb += len(fk)
            sb += len(fs)
            t0 = time.thread_time()
            for _ in range(3):
                dk.decompress(fk)
            t1 = time.thread_time()
            for _ in range(3):
                ds.decompress(fs)
            tk += t1 - t0
            ts += time.thread_time() - t1
        extra = (24 * nb + len(kd or b"") + len(sd or b"")) / entries
        print(f"| {v} | {kb / n:.4f} | {sb / n:.4f} | {(kb + sb) / n + extra:.4f} | "
              f"{tk / 3 / len(streams) * 1e6:.0f} | {ts / 3 / len(streams) * 1e6:.0f} | "
              f"{time.process_time() - c0:.0f} |", file=out, flush=True)


def compare_blocks(dat: Path, n_regions: int, sizes: list[int], level: int, out) -> None:
    """Block sizes compared on the same data: ``n_regions`` evenly spread regions of the
    largest size, each cut into blocks of every size and encoded as ``compress`` does (the
    key dictionary trained for that block size); bytes per entry with index and dictionary."""
    board = board_of_table(dat, None)
    E = board.entry_size
    raw = dat.stat().st_size
    entries = raw // E
    big = max(sizes)
    pick, nreg = pick_blocks(raw, E, big, n_regions)
    print(f"\n### {dat.name}: {entries:,} entries; the same {len(pick)} regions of {big:,} entries "
          f"(of {nreg:,}) cut into blocks of each size\n| block entries | keys B/entry | symbols "
          f"B/entry | total B/entry (+index, dict) | decode us per block (cpu), keys + symbols | "
          f"cpu s |\n|---:|---:|---:|---:|---:|---:|", file=out, flush=True)
    codec = BlockCodec(board)
    for B in sizes:
        c0 = time.process_time()
        kd = c4z.train_key_dict(dat, board, B)
        ck, cs = cctx(level, "", kd), cctx(level, "", None)
        dk = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(kd) if kd else None)
        ds = zstandard.ZstdDecompressor()
        kb = sb = n = 0
        td = 0.0
        with open(dat, "rb") as f:
            for i in pick:
                rows = read_block(f, E, big, i)
                for o in range(0, rows.shape[0], B):
                    r = rows[o: o + B]
                    keys = keys_of_rows(r, E - 1)
                    kv, sy = codec.encode(keys, np.ascontiguousarray(r[:, E - 1]))
                    fk, fs = ck.compress(kv), cs.compress(sy)
                    kb, sb, n = kb + len(fk), sb + len(fs), n + keys.shape[0]
                    t0 = time.thread_time()
                    dk.decompress(fk)
                    ds.decompress(fs)
                    td += time.thread_time() - t0
        nb = -(-entries // B)
        extra = (24 * nb + len(kd or b"")) / entries
        print(f"| {B:,} | {kb / n:.4f} | {sb / n:.4f} | {(kb + sb) / n + extra:.4f} | "
              f"{td / (n / B) * 1e6:.0f} | {time.process_time() - c0:.0f} |", file=out, flush=True)


def wdl_summary(name: str, rows, out) -> None:
    """rows: (ply, won, drawn, lost, positions, finished) per ply."""
    import math

    def h(ws):
        n = sum(ws)
        return -sum(w / n * math.log2(w / n) for w in ws if w)
    n = sum(r[4] for r in rows)
    print(f"| {name} | {n:,} | {sum(r[4] * h(r[1:4]) for r in rows if r[4]) / n:.3f} | "
          f"{sum(r[2] for r in rows) / n:.3f} | {sum(r[5] for r in rows) / n:.3f} |", file=out)


def wdl(dirs: list[Path], out) -> None:
    import csv
    from importlib import resources
    from c4table.analysis.stats import ply_stats
    print("| board | positions | H(won/drawn/lost given ply), bits | draws | finished |\n"
          "|---|---:|---:|---:|---:|", file=out)
    for d in dirs:
        s = ply_stats(d)
        wdl_summary(d.name, [(p.ply, p.won, p.drawn, p.lost, p.positions, p.finished) for p in s], out)
    text = resources.files("c4table").joinpath("data/wdl_by_ply_7x6.tsv").read_text()
    rows = [tuple(int(x) for x in r) for r in csv.reader(
        (ln for ln in text.splitlines() if ln and not ln.startswith(("#", "ply"))), delimiter="\t")]
    wdl_summary("7x6 (Böck, Table 2)", rows, out)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", type=Path)
    ap.add_argument("--wdl", nargs="+", type=Path, metavar="BUILD_DIR", default=None)
    ap.add_argument("--blocks", type=int, default=60)
    ap.add_argument("--block-entries", type=int, default=c4z.DEFAULT_BLOCK_ENTRIES)
    ap.add_argument("--level", type=int, default=c4z.DEFAULT_LEVEL)
    ap.add_argument("--variants", default="default")
    ap.add_argument("--compare-blocks", default="", metavar="SIZES",
                    help="e.g. 65536,262144,1048576: block sizes on the same regions (--blocks regions)")
    a = ap.parse_args(argv)
    c4z.tune_malloc()
    if a.wdl:
        wdl(a.wdl, sys.stdout)
        return
    print(f"load average at start: {os.getloadavg()}, cores {os.cpu_count()}; "
          f"zstd level {a.level}, blocks of {a.block_entries:,}")
    for t in a.tables:
        if a.compare_blocks:
            compare_blocks(t, a.blocks, [int(x) for x in a.compare_blocks.split(",")], a.level,
                           sys.stdout)
            continue
        bench(t, a.blocks, a.block_entries, a.level, a.variants.split(","), sys.stdout)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
