"""Re-encode the key shards and outcome shards of a finished build directory with candidate
codecs, and print, for each, the bytes per table entry and the encode and decode CPU time per
entry (one thread: ``time.thread_time``, so a loaded machine slows it little).

Key candidates: parquet (PLAIN, DELTA_BINARY_PACKED, BYTE_STREAM_SPLIT; no compression or
zstd at some levels; row groups of today's shards), the ``.c4z`` key transform (LEB128 varints
of the deltas) with zstd per block, and byte-split deltas (the deltas' bytes, column by column,
only as many columns as the widest delta needs) with zstd per block. Outcome candidates:
parquet ``binary(1)`` with zstd (the format the build used before its own), zstd per block at
some levels, and keys and outcomes in one zstd frame per block (against the sum of the two
apart). Blocks hold ``--block`` entries (the shards' row groups).

    .venv/bin/python -m tools.bench.shard_codecs /tmp/keys-5x5
    .venv/bin/python -m tools.bench.shard_codecs /tmp/keys-5x5 --keys-only --max-shards 4
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from c4table.builddir.reader import BuildDir
from c4table.builddir.shards import ShardInfo
from c4table.io.varint import decode_deltas, encode_deltas


def _col(table: pa.Table, name: str, dtype) -> np.ndarray:
    parts = [np.frombuffer(c.buffers()[1], dtype, count=len(c), offset=c.offset * np.dtype(dtype).itemsize)
             for c in table.column(name).chunks]
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def load_shards(root: Path, max_shards: int | None):
    """``(keys, outcomes)`` pairs of the build's backward shards (outcomes may be None when
    a step has no backward record), and the table's entries."""
    m = BuildDir.load(root).manifest   # also an older build directory's (parquet shards)
    pairs = []
    for ply in m.finished_plies("forward"):
        back = {s.keys: s for s in m.shards("backward", ply) or []}
        for s in m.step("forward", ply).nonempty():
            keys = _read(root, s, "key")
            b = back.get(s.file)
            outs = _read(root, b, "outcome") if b is not None else None
            pairs.append((keys, outs))
    pairs.sort(key=lambda p: -p[0].shape[0])
    if max_shards:
        pairs = pairs[:max_shards]
    entries = m.table.entries if m.table is not None else sum(k.shape[0] for k, _ in pairs)
    return pairs, entries


def _read(root: Path, info: ShardInfo, col: str) -> np.ndarray:
    if info.file.endswith(".parquet"):
        t = pq.ParquetFile(root / info.file).read(columns=[col], use_threads=False)
        return _col(t, col, np.uint64 if col == "key" else np.uint8).copy()
    from c4table.builddir.shards import read_shard
    from c4table.io.storage import open_storage
    got = read_shard(open_storage(root), info, with_outcome=col == "outcome")
    return got[1] if col == "outcome" else got


def blocks(a: np.ndarray, size: int):
    return [a[i: i + size] for i in range(0, a.shape[0], size)]


# ---------------------------------------------------------------- candidates
def parquet_codec(encoding: str | None, compression: str, level: int | None, col: str, group: int):
    typ = pa.int64() if col == "key" else pa.binary(1)

    def enc(a):
        arr = pa.Array.from_buffers(typ, a.shape[0], [None, pa.py_buffer(a)])
        t = pa.table({col: arr}, schema=pa.schema([pa.field(col, typ, nullable=False)]))
        sink = pa.BufferOutputStream()
        kw = dict(column_encoding={col: encoding}) if encoding else {}
        pq.write_table(t, sink, compression=compression, compression_level=level,
                       use_dictionary=False, write_statistics=[col] if col == "key" else False,
                       row_group_size=group, **kw)
        return [sink.getvalue()]

    def dec(parts, a):
        t = pq.ParquetFile(pa.BufferReader(parts[0])).read(use_threads=False)
        return _col(t, col, a.dtype)
    return enc, dec


def varint_codec(level: int, group: int):
    c, d = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()

    def enc(a):
        out = []
        for b in blocks(a, group):
            buf = np.empty(10 * b.shape[0], np.uint8)
            m = encode_deltas(b, buf)
            out.append(c.compress(buf[:m]))
        return out

    def dec(parts, a):
        res = np.empty(a.shape[0], np.uint64)
        for i, p in enumerate(parts):
            lo = i * group
            n = min(group, a.shape[0] - lo)
            raw = np.frombuffer(d.decompress(p), np.uint8)
            decode_deltas(raw, a[lo], res[lo: lo + n])   # first key from the block index
        return res
    return enc, dec


def bytesplit_codec(level: int, group: int):
    c, d = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()

    def enc(a):
        out = []
        for b in blocks(a, group):
            dl = np.diff(b)
            w = max(1, (int(dl.max()).bit_length() + 7) // 8) if dl.shape[0] else 1
            cols = dl.view(np.uint8).reshape(-1, 8)[:, :w].T.copy()
            out.append(bytes([w]) + c.compress(cols))
        return out

    def dec(parts, a):
        res = np.empty(a.shape[0], np.uint64)
        for i, p in enumerate(parts):
            lo = i * group
            n = min(group, a.shape[0] - lo)
            w = p[0]
            cols = np.frombuffer(d.decompress(p[1:]), np.uint8).reshape(w, n - 1)
            wide = np.zeros((n - 1, 8), np.uint8)
            wide[:, :w] = cols.T
            res[lo] = a[lo]
            np.cumsum(wide.view(np.uint64).ravel(), out=res[lo + 1: lo + n])
            res[lo + 1: lo + n] += a[lo]
        return res
    return enc, dec


def zstd_codec(level: int, group: int):
    c, d = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()

    def enc(a):
        return [c.compress(b) for b in blocks(a, group)]

    def dec(parts, a):
        return np.concatenate([np.frombuffer(d.decompress(p), np.uint8) for p in parts])
    return enc, dec


def together_codec(level: int, group: int):
    """Keys' varint deltas and the outcome bytes in one zstd frame per block."""
    c, d = zstandard.ZstdCompressor(level=level), zstandard.ZstdDecompressor()

    def enc(pair):
        keys, outs = pair
        res = []
        for i in range(0, keys.shape[0], group):
            k, o = keys[i: i + group], outs[i: i + group]
            buf = np.empty(10 * k.shape[0], np.uint8)
            m = encode_deltas(k, buf)
            res.append(c.compress(buf[:m].tobytes() + o.tobytes()))
        return res

    def dec(parts, pair):
        keys, _ = pair
        rk, ro = np.empty(keys.shape[0], np.uint64), np.empty(keys.shape[0], np.uint8)
        for i, p in enumerate(parts):
            lo = i * group
            n = min(group, keys.shape[0] - lo)
            raw = np.frombuffer(d.decompress(p), np.uint8)
            ro[lo: lo + n] = raw[raw.shape[0] - n:]
            decode_deltas(raw[: raw.shape[0] - n], keys[lo], rk[lo: lo + n])
        return rk, ro
    return enc, dec


def measure(name, codec, items, entries, check):
    enc, dec = codec
    dec(enc(items[-1]), items[-1])   # warm up (numba compiles, zstd contexts)
    size = t_enc = t_dec = 0
    for a in items:
        t0 = time.thread_time_ns()
        parts = enc(a)
        t1 = time.thread_time_ns()
        got = dec(parts, a)
        t2 = time.thread_time_ns()
        t_enc += t1 - t0
        t_dec += t2 - t1
        size += sum(len(p) for p in parts)
        if not check(got, a):
            raise SystemExit(f"{name}: round trip differs")
    n = sum(a[0].shape[0] if isinstance(a, tuple) else a.shape[0] for a in items)
    return dict(codec=name, bytes=size, per_entry=size / entries, enc_ns=t_enc / n, dec_ns=t_dec / n)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", type=Path, help="a finished build directory (its manifest and work/)")
    ap.add_argument("--block", type=int, default=1 << 17, help="entries per block / row group")
    ap.add_argument("--max-shards", type=int, default=None, help="only the N largest shards")
    ap.add_argument("--keys-only", action="store_true", help="skip the outcome candidates")
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    a = ap.parse_args(argv)
    pairs, entries = load_shards(a.build_dir, a.max_shards)
    g = a.block
    keys = [k for k, _ in pairs]
    same = lambda x, y: np.array_equal(x, y)   # noqa: E731
    key_cands = [("parquet DELTA_BINARY_PACKED, none (before)", parquet_codec("DELTA_BINARY_PACKED", "none", None, "key", g))]
    for lv in (1, 3):
        key_cands.append((f"parquet DELTA_BINARY_PACKED, zstd {lv}", parquet_codec("DELTA_BINARY_PACKED", "zstd", lv, "key", g)))
    for lv in (1, 3, 9):
        key_cands.append((f"parquet PLAIN, zstd {lv}", parquet_codec("PLAIN", "zstd", lv, "key", g)))
    for lv in (1, 3):
        key_cands.append((f"parquet BYTE_STREAM_SPLIT, zstd {lv}", parquet_codec("BYTE_STREAM_SPLIT", "zstd", lv, "key", g)))
    for lv in (1, 3, 9):
        key_cands.append((f"varint deltas, zstd {lv}", varint_codec(lv, g)))
    for lv in (1, 3):
        key_cands.append((f"byte-split deltas, zstd {lv}", bytesplit_codec(lv, g)))
    rows = [("keys", measure(n, c, keys, entries, same)) for n, c in key_cands]
    if not a.keys_only:
        with_out = [(k, o) for k, o in pairs if o is not None]
        outs = [o for _, o in with_out]
        out_cands = [("parquet binary(1), zstd 1 (before)", parquet_codec(None, "zstd", 1, "outcome", g))]
        for lv in (1, 3, 9, 19):
            out_cands.append((f"zstd {lv}", zstd_codec(lv, g)))
        rows += [("outcomes", measure(n, c, outs, entries, same)) for n, c in out_cands]
        both = lambda x, y: np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1])   # noqa: E731
        for lv in (1, 3):
            rows.append(("keys+outcomes", measure(f"varint deltas + outcomes, one zstd {lv} frame",
                                                  together_codec(lv, g), with_out, entries, both)))
    if a.json:
        for kind, r in rows:
            print(json.dumps(dict(kind=kind, **r)))
        return 0
    print(f"{a.build_dir}: {entries:,} table entries, {len(pairs)} shards, blocks of {g:,}")
    print("| kind | codec | bytes | bytes/entry | encode ns/entry | decode ns/entry |")
    print("|---|---|---:|---:|---:|---:|")
    for kind, r in rows:
        print(f"| {kind} | {r['codec']} | {r['bytes']:,} | {r['per_entry']:.3f} | {r['enc_ns']:.1f} | {r['dec_ns']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
