"""The block codec of shard files: a block of sorted uint64 keys as LEB128 varints of their
deltas (:mod:`c4table.io.varint`; the first key is kept in the file's block index), and a
block of outcome bytes as they are; each stream is one zstd frame with its content checksum (a damaged block is found
when it is read, even where the file's xxh64 is not checked). The ``.c4z`` codec's key
transform, applied to a generation's keys alone; measured against parquet's encodings in
``docs/measurements/2026-11-27-shard-codecs.md``.

>>> import numpy as np
>>> keys = np.array([5, 6, 200, 1 << 40], np.uint64)
>>> enc = encode_keys(keys)
>>> decode_keys(enc, 5, 4).tolist() == keys.tolist()
True
>>> decode_outcomes(encode_outcomes(np.array([1, 2, 3], np.uint8)), 3).tolist()
[1, 2, 3]
"""
from __future__ import annotations

import threading

import numpy as np
import zstandard

from c4table.errors import CorruptDataError
from c4table.io.varint import MAX_BYTES, decode_deltas, encode_deltas

# zstd levels, measured on the shards of 5x5 and 6x4 (docs/measurements/2026-11-27-shard-codecs.md):
# level 3 keeps 5x5's keys in 0.163 bytes per entry (level 1: 0.175) for 0.7 ns more per key
# to encode and less to decode; level 9 (0.125) costs 10 ns more per key, 2% of a build's CPU.
KEY_LEVEL = 3
OUTCOME_LEVEL = 3


_CTX = threading.local()   # zstd contexts are not thread-safe: one set per thread


def _compress(data, level: int) -> bytes:
    cs = getattr(_CTX, "c", None)
    if cs is None:
        cs = _CTX.c = {}
    c = cs.get(level)
    if c is None:
        c = cs[level] = zstandard.ZstdCompressor(level=level, write_checksum=True)
    return c.compress(data)


def _decompress(frame, size_hint: int) -> bytes:
    d = getattr(_CTX, "d", None)
    if d is None:
        d = _CTX.d = zstandard.ZstdDecompressor()
    try:
        return d.decompress(frame, max_output_size=size_hint)
    except zstandard.ZstdError as e:
        raise CorruptDataError(f"damaged block ({e})") from None


def encode_keys(keys: np.ndarray, level: int = KEY_LEVEL) -> bytes:
    """One zstd frame of the varint deltas of strictly increasing uint64 ``keys``."""
    keys = np.ascontiguousarray(keys, np.uint64)
    buf = np.empty(MAX_BYTES * max(keys.shape[0] - 1, 0), np.uint8)
    m = encode_deltas(keys, buf)
    if m < 0:
        raise ValueError("shard keys are not strictly increasing")
    return _compress(buf[:m], level)


def decode_keys(frame, first: int, n: int) -> np.ndarray:
    """The ``n`` keys of a frame of :func:`encode_keys` whose first key is ``first``;
    :class:`CorruptDataError` if the frame does not hold exactly ``n`` of them."""
    raw = np.frombuffer(_decompress(frame, MAX_BYTES * max(n - 1, 0)), np.uint8)
    keys = np.empty(n, np.uint64)
    if decode_deltas(raw, np.uint64(first), keys) < 0:
        raise CorruptDataError(f"damaged block (its keys are not {n} increasing varints)")
    return keys


def encode_outcomes(outcomes: np.ndarray, level: int = OUTCOME_LEVEL) -> bytes:
    """One zstd frame of the uint8 ``outcomes``."""
    return _compress(np.ascontiguousarray(outcomes, np.uint8), level)


def decode_outcomes(frame, n: int) -> np.ndarray:
    """The ``n`` outcome bytes of a frame of :func:`encode_outcomes`."""
    out = np.frombuffer(_decompress(frame, n), np.uint8)
    if out.shape[0] != n:
        raise CorruptDataError(f"damaged block ({out.shape[0]} outcomes, {n} expected)")
    return out
