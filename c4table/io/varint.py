"""LEB128 varints, the byte form of every sorted-key delta c4table writes (the ``.c4z`` key
stream, the build directory's key shards, the build's sorted runs): numba kernels that write
one value (:func:`put_varint`) and read one back (:func:`varint_at`), inlined into the codecs'
loops (the decoder as a call of its own, which LLVM inlines; numba's ``inline="always"`` of
its early returns makes the run codec's decoder 5x slower), and the delta helpers built on
them.

The bit trick: a uint64 goes out 7 bits a byte, lowest first; every byte but the last has its
high bit (0x80) set, saying "more follows". Sorted keys are mostly close together, so their
deltas take one byte each (below 128) and zstd squeezes the rest; a uint64 takes at most 10
bytes. A reader stops at the first byte below 128; a stream that ends inside a value, or a
value longer than 64 bits, is damage (:func:`varint_at` says so with position -1).

>>> v = np.array([0, 1, 127, 128, 300, 1 << 63], np.uint64)
>>> data = encode_values(v)
>>> data.hex(" ")[:29]                      # 0, 1, 127, then 128 as two bytes, 300 as two
'00 01 7f 80 01 ac 02 80 80 80'
>>> decode_values(data, v.shape[0]).tolist() == v.tolist()
True
>>> keys = np.array([5, 6, 200, 1 << 40], np.uint64)
>>> buf, back = np.empty(30, np.uint8), np.empty(4, np.uint64)
>>> m = encode_deltas(keys, buf)
>>> decode_deltas(buf[:m], np.uint64(5), back), back.tolist() == keys.tolist()
(0, True)
"""
from __future__ import annotations

import numpy as np
from numba import njit

MAX_BYTES = 10
"""The most bytes one uint64 takes (64 bits at 7 a byte)."""


@njit(cache=True, nogil=True, inline="always")
def put_varint(out, pos, x):
    """The LEB128 of ``x`` (uint64) into the uint8 array ``out`` at ``pos`` (room for
    :data:`MAX_BYTES` there); returns the position after it."""
    while x >= np.uint64(128):
        out[pos] = (x & np.uint64(127)) | np.uint64(128)
        x >>= np.uint64(7)
        pos += 1
    out[pos] = x
    return pos + 1


@njit(cache=True, nogil=True)
def varint_at(buf, pos, end):
    """The LEB128 value at ``buf[pos]`` (uint64) and the position after it, reading no byte at
    or past ``end``; position -1 if the value does not end before ``end`` or is longer than
    64 bits (damage)."""
    if pos < end and buf[pos] < 128:   # the usual case: one byte
        return np.uint64(buf[pos]), pos + 1
    x = np.uint64(0)
    shift = 0
    while True:
        if pos >= end or shift > 63:
            return x, -1
        b = buf[pos]
        pos += 1
        x |= np.uint64(b & 127) << np.uint64(shift)
        shift += 7
        if b < 128:
            return x, pos


@njit(cache=True, nogil=True)
def encode_deltas(keys, out):
    """The LEB128 of ``keys[i] - keys[i - 1]`` (i >= 1) into ``out`` (room for
    :data:`MAX_BYTES` a delta); their length, or -1 if the keys are not strictly increasing."""
    pos = 0
    for i in range(1, keys.shape[0]):
        if keys[i] <= keys[i - 1]:
            return -1
        pos = put_varint(out, pos, keys[i] - keys[i - 1])
    return pos


@njit(cache=True, nogil=True)
def decode_deltas(buf, first, keys):
    """Fill ``keys`` from ``first`` and the LEB128 deltas in ``buf``; 0 if ``buf`` holds
    exactly ``len(keys) - 1`` well-formed non-zero deltas, else -1 (damaged)."""
    n = keys.shape[0]
    m = buf.shape[0]
    if n == 0:
        return 0 if m == 0 else -1
    keys[0] = key = first
    pos = 0
    for i in range(1, n):
        x, pos = varint_at(buf, pos, m)
        if pos < 0 or x == 0:
            return -1
        key += x            # in a register: no read of keys[i - 1]
        keys[i] = key
    return 0 if pos == m else -1


@njit(cache=True, nogil=True)
def _put_all(values, out):
    pos = 0
    for i in range(values.shape[0]):
        pos = put_varint(out, pos, values[i])
    return pos


@njit(cache=True, nogil=True)
def _get_all(buf, values):
    pos = 0
    for i in range(values.shape[0]):
        values[i], pos = varint_at(buf, pos, buf.shape[0])
        if pos < 0:
            return -1
    return pos


def encode_values(values: np.ndarray) -> bytes:
    """The LEB128 bytes of every value of a uint64 array, one after another."""
    values = np.ascontiguousarray(values, np.uint64)
    out = np.empty(MAX_BYTES * values.shape[0], np.uint8)
    return out[: _put_all(values, out)].tobytes()


def decode_values(data: bytes, n: int) -> np.ndarray:
    """The ``n`` values of :func:`encode_values`; ValueError if ``data`` is not exactly them."""
    values = np.empty(n, np.uint64)
    if _get_all(np.frombuffer(data, np.uint8), values) != len(data):
        raise ValueError(f"not {n} LEB128 values")
    return values
