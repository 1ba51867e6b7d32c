"""LEB128 varints (``c4table.io.varint``), checked against a plain Python LEB128 written here
from its definition: the same bytes for values of every width, round trips, and damage (a
stream ending inside a value, a value wider than 64 bits, a zero or missing delta) reported,
never read as a value."""
import random

import numpy as np
import pytest

from c4table.io.varint import MAX_BYTES, decode_deltas, decode_values, encode_deltas, encode_values


def leb128(x: int) -> bytes:
    out = bytearray()
    while True:
        low, x = x & 0x7F, x >> 7
        out.append(low | (0x80 if x else 0))
        if not x:
            return bytes(out)


def random_values(rng: random.Random, n: int) -> list[int]:
    return [rng.getrandbits(rng.choice([1, 7, 8, 14, 15, 21, 35, 56, 63, 64])) for _ in range(n)]


def test_same_bytes_as_the_definition_and_round_trip():
    rng = random.Random(11)
    vals = random_values(rng, 5000) + [0, 127, 128, 16383, 16384, (1 << 64) - 1]
    data = encode_values(np.array(vals, np.uint64))
    assert data == b"".join(leb128(v) for v in vals)
    assert max(len(leb128(v)) for v in vals) == MAX_BYTES
    assert decode_values(data, len(vals)).tolist() == vals


def test_deltas_round_trip_and_refuse_unsorted_keys():
    rng = random.Random(12)
    keys = np.array(sorted(set(random_values(rng, 3000))), np.uint64)
    buf = np.empty(MAX_BYTES * keys.shape[0], np.uint8)
    m = encode_deltas(keys, buf)
    assert bytes(buf[:m]) == b"".join(leb128(int(b) - int(a)) for a, b in zip(keys, keys[1:]))
    back = np.empty_like(keys)
    assert decode_deltas(buf[:m], keys[0], back) == 0 and np.array_equal(back, keys)
    assert encode_deltas(keys[::-1].copy(), buf) == -1
    assert encode_deltas(np.array([3, 3], np.uint64), buf) == -1


@pytest.mark.parametrize("damage", ["cut", "long", "zero", "extra", "short"])
def test_damaged_streams_are_reported(damage):
    keys = np.array([5, 6, 200, 1 << 40], np.uint64)
    good = b"".join(leb128(d) for d in (1, 194, (1 << 40) - 200))
    data = {"cut": good[:-1],                       # ends inside the last delta
            "long": good[:2] + b"\x80" * 10 + b"\x01",   # 11 bytes: wider than 64 bits
            "zero": good[:1] + b"\x00" + good[1:],  # a zero delta (and one delta too many)
            "extra": good + b"\x01",                # a byte past the last delta
            "short": good[:3]}[damage]              # a delta missing
    back = np.empty_like(keys)
    assert decode_deltas(np.frombuffer(data, np.uint8), keys[0], back) == -1
    if damage != "zero":   # as plain values: four of them, one a zero
        with pytest.raises(ValueError):
            decode_values(data, 3)
