"""The byte format of sorted runs (forward child keys, backward messages, shuffle pieces):
blocks of :data:`BLOCK` values, each its varint-coded differences (:mod:`c4table.io.varint`)
through zstd on its own.

Design notes: ``docs/modules.md`` (``c4table.pipeline.sort.runcodec``).

>>> v = np.arange(10**6, 10**6 + 3 * 70_000, 3, dtype=np.uint64)   # 70,000 values 3 apart
>>> blobs = encode_blocks(v)
>>> len(blobs), sum(len(b) for b in blobs) < 100   # two blocks, of a few dozen bytes each
(2, True)
>>> offsets = np.cumsum([0] + [len(b) for b in blobs])
>>> out = np.empty(v.shape[0], np.uint64)
>>> data = np.frombuffer(b"".join(blobs), np.uint8)
>>> decode_blocks(data, v[::BLOCK].copy(), offsets, 0, 2, v.shape[0], 0, out), bool((out == v).all())
(-1, True)
>>> decode_blocks(data[offsets[1]:], v[::BLOCK].copy(), offsets, 1, 2, v.shape[0], 0, out)   # alone
-1
"""
from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
import zstandard
from numba import njit

from c4table.io.varint import MAX_BYTES, put_varint, varint_at

BLOCK = 1 << 16   # values per independently decodable block (= extsort.FENCE)
LEVEL = 1         # zstd level of the blocks (measured: docs/measurements/2026-11-27-run-codecs.md)
MAGIC = 0xC4_52_55_4E_5A_56_00_03   # first word of a run's index: "C4 RUNZV v3"
OLD_MAGICS = {0xC4_52_55_4E_42_50_00_02: "v2, bit-packed"}   # formats this version cannot read
LOW_BITS = (0, 8)   # a run's values whole, or key << 8 | a byte (messages) kept apart
RAW_MAX = 12 + (MAX_BYTES + 1) * BLOCK   # a block's transformed bytes at most (varints, a byte each)
BLOB_MAX = RAW_MAX + (RAW_MAX >> 7) + 1024   # its zstd frame at most (zstd's bound, rounded up)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_local = threading.local()   # per thread: a (de)compressor and the transform's scratch bytes


class RunIndex(NamedTuple):
    """A run's index: its values, how they are split, the first value and byte offset of each
    block (``offsets`` has one more entry: the run's size)."""
    rows: int
    low_bits: int
    fences: np.ndarray
    offsets: np.ndarray


@njit(cache=True)
def _transform(v, s, e, low, out):
    """The bytes of block ``v[s:e]`` into ``out``; their count. The first value (8 bytes), then
    with ``low == 0`` the LEB128 differences; with ``low == 8`` the length of the key stream
    (4 bytes), the LEB128 differences of the keys ``v >> 8``, and the low bytes of values 1..
    on their own (a message's outcome byte does not widen its key's difference)."""
    x = v[s]
    for i in range(8):
        out[i] = np.uint8((x >> np.uint64(8 * i)) & np.uint64(0xFF))
    if low == 0:
        p = 8
        for j in range(s + 1, e):
            p = put_varint(out, p, v[j] - v[j - 1])
        return p
    p = 12
    for j in range(s + 1, e):
        p = put_varint(out, p, (v[j] >> np.uint64(8)) - (v[j - 1] >> np.uint64(8)))
    m = p - 12
    for i in range(4):
        out[8 + i] = np.uint8((m >> (8 * i)) & 0xFF)
    for j in range(s + 1, e):
        out[p] = np.uint8(v[j] & np.uint64(0xFF))
        p += 1
    return p


@njit(cache=True)
def _untransform(buf, n, low, first, top, out):
    """Values of a block from its bytes ``buf`` (``n`` values) into ``out``; True if the bytes
    add up exactly, the first value is ``first``, the values are sorted and none exceeds
    ``top`` (the next block's fence)."""
    m = buf.shape[0]
    if m < 8:
        return False
    x = np.uint64(0)
    for i in range(8):
        x |= np.uint64(buf[i]) << np.uint64(8 * i)
    if x != first or x > top:
        return False
    out[0] = x
    p = 8 if low == 0 else 12
    end = m
    q = 0
    if low != 0:
        if m < 12:
            return False
        kl = 0
        for i in range(4):
            kl |= np.int64(buf[8 + i]) << (8 * i)
        end = 12 + kl
        q = end
        if end + (n - 1) != m:
            return False
        x >>= np.uint64(8)
    for j in range(1, n):
        d, p = varint_at(buf, p, end)
        if p < 0:
            return False
        nxt = x + d
        if nxt < x:
            return False   # wrapped: not a sorted run
        x = nxt
        if low == 0:
            val = x
        else:
            if x >> np.uint64(56):
                return False
            val = (x << np.uint64(8)) | np.uint64(buf[q])
            q += 1
            if val < out[j - 1]:
                return False
        if val > top:
            return False
        out[j] = val
    return p == end


def _tools():
    t = getattr(_local, "tools", None)
    if t is None:
        t = _local.tools = (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor(),
                            np.empty(RAW_MAX, np.uint8))
    return t


def encode_blocks(values: np.ndarray, low_bits: int = 0) -> list[bytes]:
    """The blocks of sorted uint64 ``values`` (a uint64 array), each a zstd frame of its own;
    ``low_bits`` (:data:`LOW_BITS`): 8 for ``key << 8 | byte`` values (messages)."""
    if low_bits not in LOW_BITS:
        raise ValueError(f"low_bits {low_bits} is not one of {LOW_BITS}")
    comp, _, buf = _tools()
    n = values.shape[0]
    return [comp.compress(buf[:_transform(values, s, min(n, s + BLOCK), low_bits, buf)])
            for s in range(0, n, BLOCK)]


def decode_blocks(data: np.ndarray, fences: np.ndarray, offsets: np.ndarray, b0: int, b1: int,
                  rows: int, low_bits: int, out: np.ndarray) -> int:
    """Decode blocks ``b0 .. b1 - 1`` of a run of ``rows`` values from ``data`` (the run's bytes
    from ``offsets[b0]`` on, uint8) into ``out`` (room for their values); return -1 if every
    block matched its fence and length and was sorted, else the first damaged block."""
    _, dec, _ = _tools()
    base = int(offsets[b0])
    k = 0
    for bi in range(b0, b1):
        s, e = int(offsets[bi]) - base, int(offsets[bi + 1]) - base
        n = min(rows, (bi + 1) * BLOCK) - bi * BLOCK
        if e > data.shape[0] or n <= 0:
            return bi
        blob = data[s:e]
        try:
            size = zstandard.frame_content_size(blob)
            if not 8 <= size <= RAW_MAX:
                return bi
            raw = np.frombuffer(dec.decompress(blob), np.uint8)
        except zstandard.ZstdError:
            return bi
        top = fences[bi + 1] if bi + 1 < fences.shape[0] else _ALL
        if raw.shape[0] != size or not _untransform(raw, n, low_bits, fences[bi], top, out[k:k + n]):
            return bi
        k += n
    return -1


def index_bytes(rows: int, low_bits: int, fences: np.ndarray, offsets: np.ndarray) -> bytes:
    """The index file of a run: magic, rows, blocks, low bits, fences, byte offsets (uint64)."""
    head = np.array([MAGIC, rows, fences.shape[0], low_bits], np.uint64)
    return np.concatenate([head, fences.astype(np.uint64), offsets.astype(np.uint64)]).astype("<u8").tobytes()


def parse_index(data: bytes) -> RunIndex | None:
    """The index written by :func:`index_bytes`, or None if ``data`` is not one (the raw fences
    of a run of raw values, written by an older version). Raises ValueError for an index that
    does not add up, or one of a format this version cannot read (:data:`OLD_MAGICS`)."""
    w = np.frombuffer(data, dtype="<u8")
    if w.shape[0] >= 3 and int(w[0]) in OLD_MAGICS:
        raise ValueError(f"a run of an older format ({OLD_MAGICS[int(w[0])]}): runs are scratch, "
                         "the step that wrote it must run again")
    if w.shape[0] < 4 or int(w[0]) != MAGIC:
        return None
    rows, nb, low = int(w[1]), int(w[2]), int(w[3])
    if nb != -(-rows // BLOCK) or w.shape[0] != 4 + 2 * nb + 1 or low not in LOW_BITS:
        raise ValueError(f"index of {rows} values with {nb} blocks, low bits {low} and "
                         f"{w.shape[0]} words")
    offsets = w[4 + nb:].astype(np.int64)
    sizes = np.diff(offsets)
    if offsets[0] != 0 or np.any(sizes <= 0):
        raise ValueError("block offsets out of order")
    if np.any(sizes > BLOB_MAX):   # damage (and would make a reader allocate for it)
        raise ValueError("a block longer than any block can be")
    return RunIndex(rows, low, w[4:4 + nb], offsets)


def warm() -> None:
    """Load the compiled codec (numba's cache) in this process."""
    for low in LOW_BITS:
        v = np.arange(0, 3 * 256, 3, dtype=np.uint64)
        blobs = encode_blocks(v, low)
        data = np.frombuffer(b"".join(blobs), np.uint8)
        decode_blocks(data, v[:1].copy(), np.array([0, data.shape[0]]), 0, 1, v.shape[0], low,
                      np.empty_like(v))
