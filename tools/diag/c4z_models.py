"""What other codecs of a ``.c4z``'s two streams would reach, measured on the same evenly spread
blocks of a raw table: the key stream (deltas between sorted keys) and the outcome symbols
(:mod:`c4table.c4z.codec`), today's zstd frames beside context models, per ply and in total.

    python -m tools.diag.c4z_models FILE.dat [...] [--blocks 40] [--block-entries 65536]
        [--sizes 4096,16384,65536,262144] [--levels 3,19,22]

For each table it prints three tables (bits per entry, entries of the sampled blocks only):

- **Per ply**: the share of entries, the varint key bytes before zstd, today's zstd (level
  19) attributed to the ply (each block's key deltas and symbols of that ply taken out of the
  block in key order and compressed alone: the sum over plies is a little above the block's
  own frames, which see the plies mixed) and the code length of the symbols under adaptive
  models of growing context (below), each entry counted where it falls in key order.
- **Totals**: zstd as ``compress`` writes (level 19, the trained key dictionary), zstd at
  other levels, with a trained symbol dictionary, and with each block's symbols grouped by ply
  (a permutation the decoder can undo once it has the keys); then the adaptive context models:
  the exact code length an arithmetic (or rANS) coder reaches with counts that start from
  zero at each block and learn as they go (``-log2 p`` summed, ``p = (count + 1/32) /
  (total + K/32)``), so the model's cost is inside the figure; ``file`` rows keep the counts
  across blocks (a model trained once per file, whose tables a file would store beside its
  blocks, their size not counted).
- **Block sizes**: zstd frames of each size cut from the same regions (key dictionary trained
  per size), bytes per entry and the CPU microseconds to decode one frame pair: what a probe
  that decodes its whole block costs.

Symbol contexts: ``ply`` (the entry's ply), ``prev`` (the symbol before it in key order),
``prev2`` (the two before), ``ref`` (the symbol of the last entry of the block with the same
lowest key digit, i.e. the same column-0 contents in an earlier row of the key space: the
neighbour in the key's second dimension). Key contexts: ``d0`` (the previous key's lowest
digit) and ``pdelta`` (the previous delta, capped at 63); deltas of 255 or more are coded as
an escape plus their varint bytes at 8 bits each.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import zstandard
from numba import njit

from c4table import c4z
from c4table.c4z.codec import BlockCodec
from c4table.io.varint import encode_values
from c4table.table.source import board_of_table, keys_of_rows

ALPHA = 1.0 / 32


@njit(cache=True)
def _adaptive_bits(sym, ctx, n_ctx, K, starts, reset, out):
    """Code length (bits) of each ``sym[i]`` (< ``K``) under adaptive counts per context
    ``ctx[i]`` (< ``n_ctx``); counts reset at each index in ``starts`` if ``reset``."""
    counts = np.zeros((n_ctx, K), np.float64)
    tot = np.zeros(n_ctx, np.float64)
    b = 0
    for i in range(sym.shape[0]):
        if reset and b < starts.shape[0] and i == starts[b]:
            counts[:] = 0.0
            tot[:] = 0.0
            b += 1
        c = ctx[i]
        s = sym[i]
        p = (counts[c, s] + ALPHA) / (tot[c] + ALPHA * K)
        out[i] = -np.log2(p)
        counts[c, s] += 1.0
        tot[c] += 1.0


@njit(cache=True)
def _refs(sym, d0, starts, base):
    """The symbol of the last earlier entry of the block with the same lowest key digit (255:
    none yet)."""
    last = np.full(base, 255, np.int64)
    out = np.empty(sym.shape[0], np.int64)
    b = 0
    for i in range(sym.shape[0]):
        if b < starts.shape[0] and i == starts[b]:
            last[:] = 255
            b += 1
        out[i] = last[d0[i]]
        last[d0[i]] = sym[i]
    return out


def _varint_len(d: np.ndarray) -> np.ndarray:
    n = np.ones(d.shape[0], np.int64)
    x = d >> 7
    while (x > 0).any():
        n += x > 0
        x >>= 7
    return n


class Sample:
    """Evenly spread blocks of a table, decoded into the arrays every measure uses."""

    def __init__(self, dat: Path, n_blocks: int, B: int):
        self.dat, self.B = dat, B
        self.board = board = board_of_table(dat, None)
        E = board.entry_size
        raw = dat.stat().st_size
        self.entries = raw // E
        nb = raw // E // B
        pick = np.unique(np.linspace(0, max(nb - 1, 0), min(n_blocks, max(nb, 1))).astype(np.int64))
        codec = BlockCodec(board)
        ks, os_, kvs, sys_ = [], [], [], []
        with open(dat, "rb") as f:
            for i in pick:
                rows = np.frombuffer(os.pread(f.fileno(), B * E, int(i) * B * E),
                                     np.uint8).reshape(-1, E)
                keys = keys_of_rows(rows, E - 1)
                outs = np.ascontiguousarray(rows[:, E - 1])
                kv, sy = codec.encode(keys, outs)
                ks.append(keys)
                kvs.append(kv)
                sys_.append(sy)
        self.kvs, self.sys = kvs, sys_
        self.keys = np.concatenate(ks)
        self.n = self.keys.shape[0]
        self.starts = np.cumsum([0] + [k.shape[0] for k in ks])[:-1].astype(np.int64)
        self.sym = np.concatenate([np.frombuffer(s, np.uint8) for s in sys_]).astype(np.int64)
        self.ply = codec.plies(self.keys)
        self.d0 = (self.keys % np.uint64(board.base)).astype(np.int64)
        d = np.diff(self.keys).astype(np.int64)
        d = np.r_[0, d]
        d[self.starts] = 0                       # a block's first key is stored in its index
        self.delta = d
        self.vbytes = np.where(d > 0, _varint_len(d), 0)
        self.prev = np.r_[0, self.sym[:-1]]
        self.prev[self.starts] = 0
        self.prev2 = np.r_[0, self.prev[:-1]]
        self.prev2[self.starts] = 0
        self.ref = _refs(self.sym, self.d0, self.starts, board.base)
        self.pd0 = np.r_[0, self.d0[:-1]]
        self.pdelta = np.minimum(np.r_[0, d[:-1]], 63)


def _ctx(*parts) -> tuple[np.ndarray, int]:
    """One context index of several ``(values, radix)`` columns, renumbered densely."""
    j = np.zeros(parts[0][0].shape[0], np.int64)
    for v, m in parts:
        j = j * m + v
    u, inv = np.unique(j, return_inverse=True)
    return inv.astype(np.int64), u.shape[0]


def symbol_models(s: Sample) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Code lengths per entry of the symbols under each model: ``{name: (block, file)}``."""
    P = (s.ply, 64)
    models = {"ply": [P], "ply,prev": [P, (s.prev, 256)],
              "ply,prev,prev2": [P, (s.prev, 256), (s.prev2, 256)],
              "ply,ref": [P, (s.ref, 256)], "ply,prev,ref": [P, (s.prev, 256), (s.ref, 256)]}
    out = {}
    for name, parts in models.items():
        ctx, nc = _ctx(*parts)
        res = []
        for reset in (True, False):
            bits = np.empty(s.n, np.float64)
            _adaptive_bits(s.sym, ctx, nc, 128, s.starts, reset, bits)
            res.append(bits)
        out[name] = tuple(res)
    return out


def key_models(s: Sample) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Code lengths per entry of the key deltas (an escape at 255 plus its varint bytes)."""
    sym = np.minimum(s.delta, 255)
    extra = np.where(s.delta >= 255, 8.0 * s.vbytes, 0.0)
    models = {"order 0": [(np.zeros(s.n, np.int64), 1)], "d0": [(s.pd0, 256)],
              "d0,pdelta": [(s.pd0, 256), (s.pdelta, 64)],
              "d0,pdelta,ply": [(s.pd0, 256), (s.pdelta, 64), (np.r_[0, s.ply[:-1]], 64)]}
    out = {}
    for name, parts in models.items():
        ctx, nc = _ctx(*parts)
        res = []
        for reset in (True, False):
            bits = np.empty(s.n, np.float64)
            _adaptive_bits(sym, ctx, nc, 256, s.starts, reset, bits)
            bits += extra
            bits[s.starts] = 0.0
            res.append(bits)
        out[name] = tuple(res)
    return out


def _zstd_bytes(streams: list[bytes], level: int, zdict: bytes | None = None) -> int:
    d = zstandard.ZstdCompressionDict(zdict) if zdict else None
    c = zstandard.ZstdCompressor(level=level, dict_data=d)
    return sum(len(c.compress(x)) for x in streams)


def _grouped(s: Sample) -> list[bytes]:
    """Each block's symbols grouped by ply (stable within a ply)."""
    out = []
    ends = list(s.starts[1:]) + [s.n]
    for a, b in zip(s.starts, ends):
        o = np.argsort(s.ply[a:b], kind="stable")
        out.append(s.sym[a:b][o].astype(np.uint8).tobytes())
    return out


def per_ply(s: Sample, sm: dict, out) -> None:
    """Per ply: share, varint bytes, today's zstd attributed to the ply (module docstring) and
    the adaptive models' code lengths."""
    ends = list(s.starts[1:]) + [s.n]
    z = zstandard.ZstdCompressor(level=19)
    print("\n| ply | share of entries | varint key bytes | zstd 19 keys | zstd 19 symbols | " +
          " | ".join(f"adaptive: {k}" for k in sm) + " |\n|---:|---:|---:|---:|---:|" +
          "---:|" * len(sm), file=out)
    for p in np.unique(s.ply):
        m = s.ply == p
        k = int(m.sum())
        kb = sb = 0
        for a, b in zip(s.starts, ends):
            mm = m[a:b].copy()
            mm[0] = False                       # a block's first key is in the index
            if mm.any():
                kb += len(z.compress(encode_values(s.delta[a:b][mm].astype(np.uint64))))
            if m[a:b].any():
                sb += len(z.compress(s.sym[a:b][m[a:b]].astype(np.uint8).tobytes()))
        print(f"| {p} | {k / s.n:.4f} | {s.vbytes[m].mean():.3f} | {8 * kb / k:.3f} | "
              f"{8 * sb / k:.3f} | " + " | ".join(f"{v[0][m].mean():.3f}" for v in sm.values()) +
              " |", file=out, flush=True)


def totals(s: Sample, sm: dict, km: dict, levels: list[int], out) -> None:
    n = s.n
    kd, sd = c4z.train_dicts(s.dat, s.board, s.B)
    print("\n| variant | keys bits/entry | symbols bits/entry | total |\n|---|---:|---:|---:|",
          file=out)

    def row(name, kb, sb):
        print(f"| {name} | {kb:.4f} | {sb:.4f} | {kb + sb:.4f} |", file=out, flush=True)
    row("zstd 19 + trained dictionaries (compress today)",
        8 * _zstd_bytes(s.kvs, 19, kd) / n, 8 * _zstd_bytes(s.sys, 19, sd) / n)
    for lv in levels:
        row(f"zstd {lv}, no dictionary", 8 * _zstd_bytes(s.kvs, lv) / n,
            8 * _zstd_bytes(s.sys, lv) / n)
    row("zstd 19, symbols grouped by ply", 8 * _zstd_bytes(s.kvs, 19, kd) / n,
        8 * _zstd_bytes(_grouped(s), 19) / n)
    kbest = min(km.items(), key=lambda kv: kv[1][0].sum())
    for name, (blk, fil) in sm.items():
        row(f"adaptive, per block: symbols | {name}; keys | {kbest[0]}", kbest[1][0].sum() / n,
            blk.sum() / n)
        row(f"adaptive, per file: symbols | {name}; keys | {kbest[0]}", kbest[1][1].sum() / n,
            fil.sum() / n)
    for name, (blk, fil) in km.items():
        row(f"keys alone | {name} (per block / per file {fil.sum() / n:.4f})", blk.sum() / n, 0.0)


def block_sizes(dat: Path, n_regions: int, sizes: list[int], out) -> None:
    big = max(sizes)
    s = Sample(dat, n_regions, big)
    codec = BlockCodec(s.board)
    print("\n| block entries | keys bits/entry | symbols bits/entry | total (+index 24 B/block) | "
          "decode us per block (cpu) |\n|---:|---:|---:|---:|---:|", file=out)
    for B in sizes:
        kd, sd = c4z.train_dicts(dat, s.board, B)
        ck = zstandard.ZstdCompressor(level=19, dict_data=zstandard.ZstdCompressionDict(kd) if kd else None)
        cs = zstandard.ZstdCompressor(level=19, dict_data=zstandard.ZstdCompressionDict(sd) if sd else None)
        dk = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(kd) if kd else None)
        ds = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(sd) if sd else None)
        kb = sb = nb = 0
        td = 0.0
        for a in s.starts:
            for o in range(0, big, B):
                keys = s.keys[a + o: a + o + B]
                kv, _ = codec.encode(keys, np.zeros(keys.shape[0], np.uint8))
                sy = s.sym[a + o: a + o + B].astype(np.uint8).tobytes()
                fk, fs = ck.compress(kv), cs.compress(sy)
                kb, sb, nb = kb + len(fk), sb + len(fs), nb + 1
                t0 = time.thread_time()
                dk.decompress(fk)
                ds.decompress(fs)
                td += time.thread_time() - t0
        print(f"| {B:,} | {8 * kb / s.n:.4f} | {8 * sb / s.n:.4f} | "
              f"{8 * (kb + sb + 24 * nb) / s.n:.4f} | {td / nb * 1e6:.0f} |", file=out, flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", type=Path)
    ap.add_argument("--blocks", type=int, default=40)
    ap.add_argument("--block-entries", type=int, default=c4z.DEFAULT_BLOCK_ENTRIES)
    ap.add_argument("--sizes", default="4096,16384,65536,262144")
    ap.add_argument("--levels", default="3,19,22")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: ply,totals,sizes")
    a = ap.parse_args(argv)
    c4z.tune_malloc()
    skip = set(a.skip.split(","))
    print(f"load average at start: {os.getloadavg()}, cores {os.cpu_count()}")
    for t in a.tables:
        t0 = time.time()
        s = Sample(t, a.blocks, a.block_entries)
        print(f"\n### {t.name}: {s.entries:,} entries; {len(s.starts)} blocks of {a.block_entries:,} "
              f"({s.n:,} entries) sampled", flush=True)
        sm = symbol_models(s)
        km = key_models(s)
        if "ply" not in skip:
            per_ply(s, sm, sys.stdout)
        if "totals" not in skip:
            totals(s, sm, km, [int(x) for x in a.levels.split(",")], sys.stdout)
        if "sizes" not in skip:
            block_sizes(t, max(1, a.blocks // 4), [int(x) for x in a.sizes.split(",")], sys.stdout)
        print(f"\n({time.time() - t0:.0f} s)", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
