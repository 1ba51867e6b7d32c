"""The bit-packed run codec of run format v2 (delta + bit-packing per 64-value miniblock), kept
for :mod:`run_codecs`'s comparison with the codec of today
(:mod:`c4table.pipeline.sort.runcodec`); the build no longer writes or reads it.

>>> v = np.arange(10**6, 10**6 + 3000, 3, dtype=np.uint64)   # 1,000 values 3 apart: 2 bits each
>>> widths, offsets = plan(v)
>>> words = np.empty(int(offsets[-1]), np.uint64)
>>> encode_blocks(v, widths, offsets, 0, len(offsets) - 1, words)   # first, 2 of widths, 16 x 2
35
>>> out = np.empty(1000, np.uint64)
>>> decode_blocks(words, v[::BLOCK].copy(), offsets, 0, 1, 1000, out), bool((out == v).all())
(-1, True)
"""
from __future__ import annotations

import numpy as np
from numba import njit

BLOCK = 1 << 16   # values per independently decodable block (= extsort.FENCE)
MINI = 64         # differences per miniblock (one bit width each)
MAGIC = 0xC4_52_55_4E_42_50_00_02   # first word of a run's index: "C4 RUNBP v2"
_U1 = np.uint64(1)


@njit(cache=True, inline="always")
def _width(v):
    """Bits needed for ``v`` (0 for 0): a binary search over the bit length."""
    b = 0
    if v >> np.uint64(32):
        v >>= np.uint64(32)
        b += 32
    if v >> np.uint64(16):
        v >>= np.uint64(16)
        b += 16
    if v >> np.uint64(8):
        v >>= np.uint64(8)
        b += 8
    if v >> np.uint64(4):
        v >>= np.uint64(4)
        b += 4
    if v >> np.uint64(2):
        v >>= np.uint64(2)
        b += 2
    if v >> np.uint64(1):
        v >>= np.uint64(1)
        b += 1
    return b + np.int64(v)


@njit(cache=True, inline="always")
def _or_deltas(x, cnt):
    """OR of the ``cnt`` differences ``x[j + 1] - x[j]`` (called with the constant 64 for whole
    miniblocks, and on a slice indexed from 0, so that the loop is unrolled and vectorized:
    indices numba cannot prove non-negative cost a wraparound check each)."""
    acc = np.uint64(0)
    for j in range(cnt):
        acc |= x[j + 1] - x[j]
    return acc


@njit(cache=True)
def _plan(values, block, widths, offsets):
    """Bit width of every miniblock (into ``widths``) and word offset of every block (into
    ``offsets``, ``blocks + 1``)."""
    n = values.shape[0]
    nb = (n + block - 1) // block
    per = (block - 1 + 63) // 64   # miniblocks of a full block
    pos = 0
    for bi in range(nb):
        offsets[bi] = pos
        s = bi * block
        e = min(n, s + block)
        nm = (e - s - 1 + 63) // 64
        words = 1 + (nm + 7) // 8
        for m in range(nm):
            a = s + 1 + m * 64
            cnt = min(e - a, 64)
            x = values[a - 1: a + cnt]
            acc = _or_deltas(x, 64) if cnt == 64 else _or_deltas(x, cnt)
            b = _width(acc)
            widths[bi * per + m] = b
            words += b
        pos += words
    offsets[nb] = pos
    return pos


def plan(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(miniblock widths, block word offsets) of sorted ``values``."""
    n = values.shape[0]
    nb = -(-n // BLOCK)
    per = (BLOCK - 1 + MINI - 1) // MINI
    widths = np.zeros(max(1, nb * per), np.uint8)
    offsets = np.zeros(nb + 1, np.int64)
    _plan(values, BLOCK, widths, offsets)
    return widths, offsets


@njit(cache=True, inline="always")
def _pack(x, cnt, b, out):
    """Bit-pack the ``cnt`` differences ``x[j + 1] - x[j]`` at width ``b`` into ``out``."""
    reg = np.uint64(0)   # bits not yet stored, filled from the bottom
    fill = 0
    w = 0
    for j in range(cnt):
        d = x[j + 1] - x[j]
        reg |= d << np.uint64(fill)
        fill += b
        if fill >= 64:
            out[w] = reg
            w += 1
            fill -= 64
            reg = d >> np.uint64(b - fill) if fill > 0 else np.uint64(0)
    if fill > 0:
        out[w] = reg
        w += 1
    for i in range(w, out.shape[0]):   # a short last miniblock: zeros, not stale memory
        out[i] = 0


@njit(cache=True)
def _encode(values, block, widths, offsets, b0, b1, out):
    n = values.shape[0]
    per = (block - 1 + 63) // 64
    base = offsets[b0]
    for bi in range(b0, b1):
        s = bi * block
        e = min(n, s + block)
        nm = (e - s - 1 + 63) // 64
        p = offsets[bi] - base
        for i in range(p + 1, p + 1 + (nm + 7) // 8):
            out[i] = 0
        out[p] = values[s]
        for m in range(nm):   # the widths, 8 a word
            out[p + 1 + (m >> 3)] |= np.uint64(widths[bi * per + m]) << np.uint64(8 * (m & 7))
        q = p + 1 + (nm + 7) // 8
        for m in range(nm):
            b = np.int64(widths[bi * per + m])
            if b == 0:
                continue
            a = s + 1 + m * 64
            cnt = min(e - a, 64)
            x = values[a - 1: a + cnt]
            o = out[q: q + b]
            if cnt == 64:
                _pack(x, 64, b, o)
            else:
                _pack(x, cnt, b, o)
            q += b
    return offsets[b1] - base


def encode_blocks(values: np.ndarray, widths: np.ndarray, offsets: np.ndarray, b0: int, b1: int,
                  out: np.ndarray) -> int:
    """Encode blocks ``b0 .. b1 - 1`` of ``values`` (widths and offsets from :func:`plan`) into
    the uint64 array ``out`` from its start; return the words written."""
    return int(_encode(values, BLOCK, widths, offsets, b0, b1, out))


@njit(cache=True, inline="always")
def _unpack(ws, cnt, b, acc, o):
    """Add up ``cnt`` differences of width ``b`` (``0 < b <= 64``) from the words ``ws`` onto
    ``acc``, writing the values to ``o``; return (the last value, whether no sum wrapped)."""
    mask = np.uint64(0xFFFFFFFFFFFFFFFF) if b == 64 else (np.uint64(1) << np.uint64(b)) - np.uint64(1)
    ub = np.uint64(b)
    reg = ws[0]   # unread bits, at the bottom
    avail = 64
    w = 1
    ok = True
    for j in range(cnt):
        if avail >= b:
            d = reg & mask
            reg = reg >> ub if b < 64 else np.uint64(0)
            avail -= b
        else:
            nw = ws[w]
            w += 1
            d = (reg | (nw << np.uint64(avail))) & mask
            reg = nw >> np.uint64(b - avail) if b - avail < 64 else np.uint64(0)
            avail += 64 - b
        nxt = acc + d
        ok &= nxt >= acc   # no wrap: a sorted run
        acc = nxt
        o[j] = acc
    return acc, ok


@njit(cache=True)
def _decode(words, fences, offsets, block, b0, b1, rows, out):
    """Decode blocks b0..b1-1 (``words`` starts at block b0) into ``out``; -1 if they are
    sound, else the index of the first damaged block."""
    base = offsets[b0]
    k = 0
    for bi in range(b0, b1):
        s = bi * block
        e = min(rows, s + block)
        nm = (e - s - 1 + 63) // 64
        p = offsets[bi] - base
        end = offsets[bi + 1] - base
        if end > words.shape[0] or p + 1 + (nm + 7) // 8 > end:
            return bi
        acc = words[p]
        if acc != fences[bi]:
            return bi
        out[k] = acc
        k += 1
        q = p + 1 + (nm + 7) // 8
        for m in range(nm):
            b = np.int64((words[p + 1 + (m >> 3)] >> np.uint64(8 * (m & 7))) & np.uint64(0xFF))
            cnt = min(e - (s + 1 + m * 64), 64)
            if b == 0:
                for j in range(cnt):
                    out[k + j] = acc
            else:
                if b > 64 or q + b > end:
                    return bi
                ws = words[q: q + b]
                o = out[k: k + cnt]
                if cnt == 64:
                    acc, ok = _unpack(ws, 64, b, acc, o)
                else:
                    acc, ok = _unpack(ws, cnt, b, acc, o)
                if not ok:
                    return bi
            k += cnt
            q += b
        if q != end:
            return bi
        if bi + 1 < fences.shape[0] and acc > fences[bi + 1]:
            return bi
    return -1


def decode_blocks(words: np.ndarray, fences: np.ndarray, offsets: np.ndarray, b0: int, b1: int,
                  rows: int, out: np.ndarray) -> int:
    """Decode blocks ``b0 .. b1 - 1`` of a run of ``rows`` values from ``words`` (the run's
    words from ``offsets[b0]`` on) into ``out`` (room for their values); return -1 if every
    block matched its fence and length and was sorted, else the first damaged block."""
    return int(_decode(words, fences, offsets, BLOCK, b0, b1, rows, out))


def warm() -> None:
    """Load the compiled codec (numba's cache) in this process."""
    v = np.zeros(0, np.uint64)
    widths, offsets = plan(v)
    encode_blocks(v, widths, offsets, 0, 0, v)
    decode_blocks(v, v, offsets, 0, 0, 0, v)


if __name__ == "__main__":
    import argparse
    import doctest
    argparse.ArgumentParser(description="The bit-packed run codec of run format v2, imported by "
                            "run_codecs.py beside it; run alone, it checks its example "
                            "(doctest).").parse_args()
    raise SystemExit(doctest.testmod().failed)
