"""The run format (:mod:`c4table.pipeline.sort.runcodec`): blocks of varint differences through
zstd round-trip any sorted uint64 values exactly (messages with their low byte apart), a
range read decodes only its blocks and returns exactly numpy's selection, damage is reported,
runs of raw uint64 written by older versions still read, and bit-packed runs fail clearly."""
from __future__ import annotations

import numpy as np
import pytest
import zstandard

from c4table.errors import CorruptDataError
from c4table.pipeline.sort import extsort
from c4table.pipeline.sort import runcodec
from c4table.io.counting import IOCounts, counting
from c4table.io.storage import Storage

B = runcodec.BLOCK


def _cases():
    rng = np.random.default_rng(7)
    yield "empty", np.empty(0, np.uint64)
    yield "one", np.array([12345], np.uint64)
    yield "one-block-exact", np.unique(rng.integers(0, 1 << 30, 3 * B, dtype=np.uint64))[:B]
    yield "dense", np.arange(3 * B + 65, dtype=np.uint64) * np.uint64(2)
    yield "repeats", np.sort(rng.integers(0, 1 << 12, 2 * B + 1, dtype=np.uint64))
    yield "wide", np.unique(rng.integers(0, 1 << 64, 2 * B + 3, dtype=np.uint64, endpoint=False))
    # clustered keys with huge gaps between clusters, and the extreme values
    parts = [np.uint64(c) + np.arange(0, 700, 7, dtype=np.uint64)
             for c in sorted(rng.integers(0, 1 << 62, 1500, dtype=np.uint64))]
    yield "clustered", np.unique(np.concatenate(parts + [np.array([0, 2**64 - 1], np.uint64)]))
    for n in (2, 63, 64, 65, 127, 129, B - 1, B + 1):
        yield f"n={n}", np.sort(rng.integers(0, 1 << 40, n, dtype=np.uint64))


def _encode(vals, low=0):
    blobs = runcodec.encode_blocks(vals, low)
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(x) for x in blobs], out=offsets[1:])
    return np.frombuffer(b"".join(blobs), np.uint8), offsets


def _messages(rng, n):
    """Sorted ``key << 8 | byte`` words, some keys repeated with other bytes, the bytes of few
    values (as outcomes are)."""
    keys = np.sort(rng.integers(0, 1 << 40, n, dtype=np.uint64))
    keys[1::7] = keys[0::7][: keys[1::7].shape[0]]
    return np.sort((keys << np.uint64(8)) | rng.integers(0, 4, n, dtype=np.uint64) * np.uint64(37))


@pytest.mark.parametrize("low", runcodec.LOW_BITS)
@pytest.mark.parametrize("name,vals", list(_cases()), ids=[c[0] for c in _cases()])
def test_round_trip_and_partial_blocks(name, vals, low):
    if low:   # key << 8 | byte: keys of at most 56 bits
        vals = vals >> np.uint64(low) if name in ("wide", "clustered") else vals
    data, offsets = _encode(vals, low)
    nb = offsets.shape[0] - 1
    assert nb == -(-vals.shape[0] // B)
    fences = vals[::B].copy()
    out = np.empty(vals.shape[0], np.uint64)
    assert runcodec.decode_blocks(data, fences, offsets, 0, nb, vals.shape[0], low, out) == -1
    assert np.array_equal(out, vals)
    if nb >= 2:   # any window of blocks decodes alone
        got = np.empty(vals.shape[0], np.uint64)
        k = runcodec.decode_blocks(data[offsets[1]:], fences, offsets, 1, nb, vals.shape[0], low, got)
        assert k == -1 and np.array_equal(got[: vals.shape[0] - B], vals[B:])


def test_messages_keep_their_byte_apart_and_round_trip():
    """Messages (``key << 8 | byte``, keys repeating) round-trip with the byte kept apart, in
    fewer bytes than coded whole."""
    vals = _messages(np.random.default_rng(9), 3 * B + 17)
    data, offsets = _encode(vals, 8)
    out = np.empty_like(vals)
    assert runcodec.decode_blocks(data, vals[::B].copy(), offsets, 0, 4, vals.shape[0], 8, out) == -1
    assert np.array_equal(out, vals)
    assert data.shape[0] < _encode(vals, 0)[0].shape[0]
    with pytest.raises(ValueError):
        runcodec.encode_blocks(vals, 4)


def test_damage_is_reported():
    rng = np.random.default_rng(3)
    vals = np.unique(rng.integers(0, 1 << 40, 3 * B, dtype=np.uint64))
    data, offsets = _encode(vals)
    fences, out = vals[::B].copy(), np.empty(vals.shape[0], np.uint64)
    n = vals.shape[0]
    bad = fences.copy()
    bad[1] ^= np.uint64(1)                     # block 1's first value: not its fence
    assert runcodec.decode_blocks(data, bad, offsets, 0, 3, n, 0, out) == 1
    bad = data.copy()
    bad[offsets[2] + 40] ^= 0x55               # block 2's zstd frame
    assert runcodec.decode_blocks(bad, fences, offsets, 0, 3, n, 0, out) == 2
    assert runcodec.decode_blocks(data[:-1], fences, offsets, 0, 3, n, 0, out) == 2
    assert runcodec.decode_blocks(data, fences, offsets, 0, 3, n - 5, 0, out) == 2   # length
    assert runcodec.decode_blocks(data, fences, offsets, 0, 3, n, 8, out) == 0   # not split so
    # a block whose bytes add up but whose values are not sorted: one key, its bytes 9, 3, 1
    first = (5 << 8) | 9
    raw = np.frombuffer(np.array([first], "<u8").tobytes() + bytes([2, 0, 0, 0, 0, 0, 3, 1]), np.uint8)
    for tail, want in ((raw, 0), (np.concatenate([raw[:14], [9, 9]]).astype(np.uint8), -1)):
        blob = np.frombuffer(zstandard.ZstdCompressor().compress(tail.tobytes()), np.uint8)
        assert runcodec.decode_blocks(blob, np.array([first], np.uint64), np.array([0, blob.shape[0]]),
                                      0, 1, 3, 8, np.empty(3, np.uint64)) == want
    assert runcodec.parse_index(b"\0" * 32) is None   # raw fences of an older run
    index = runcodec.index_bytes(n, 0, fences, offsets)
    assert runcodec.parse_index(index).rows == n
    with pytest.raises(ValueError):
        runcodec.parse_index(index[:-8])
    old = np.frombuffer(index, "<u8").copy()
    old[0] = np.uint64(0xC4_52_55_4E_42_50_00_02)   # the bit-packed format before this one
    with pytest.raises(ValueError, match="older format"):
        runcodec.parse_index(old.tobytes())


def test_runs_of_an_older_format_read_as_damaged_and_are_not_current(tmp_path):
    """A run whose index is of the bit-packed format before this one fails to read with a clear
    error, and is not current (a resumed backward pass sends its messages again)."""
    st = Storage(tmp_path)
    vals = np.arange(0, 3 * B, dtype=np.uint64) * np.uint64(3)
    rec = extsort.run_record("r.u64", vals, extsort.write_run(st, "r.u64", vals))
    assert extsort.run_is_current(st, "r.u64")
    index = np.frombuffer((tmp_path / "r.u64.fences").read_bytes(), dtype="<u8").copy()
    index[0] = np.uint64(0xC4_52_55_4E_42_50_00_02)
    (tmp_path / "r.u64.fences").write_bytes(index.tobytes())
    assert not extsort.run_is_current(st, "r.u64")
    with pytest.raises(CorruptDataError, match="older format"):
        extsort.merge_range(st, [dict(rec, xxh64="other")], 0, 1 << 64)


def test_runs_are_smaller_and_read_by_range(tmp_path):
    """A run of clustered keys takes a fraction of 8 bytes per value; a range read returns
    numpy's selection, reading only the blocks around it; a damaged run fails clearly."""
    st = Storage(tmp_path)
    rng = np.random.default_rng(11)
    vals = np.unique(rng.integers(0, 1 << 36, 5 * B, dtype=np.uint64))
    digest = extsort.write_run(st, "r.u64", vals)
    assert st.size("r.u64") < 4 * vals.shape[0]
    rec = extsort.run_record("r.u64", vals, digest)
    extsort.run_index(st, rec)   # the index is read once and cached: count the run's bytes only
    for lo, hi in [(0, 1 << 64), (int(vals[B + 5]), int(vals[B + 6])), (int(vals[3 * B]), int(vals[3 * B]) + 1),
                   (int(vals[-1]) + 1, 1 << 64), (int(vals[100]), int(vals[4 * B + 9]))]:
        c = IOCounts()
        with counting(c):
            got = extsort.merge_range(st, [rec], lo, hi)
        assert np.array_equal(got, vals[(vals >= np.uint64(lo)) & (vals < np.uint64(min(hi, 2**64 - 1)))]
                              if hi < 1 << 64 else vals[vals >= np.uint64(lo)])
        assert c.bytes_read <= st.size("r.u64")
    c = IOCounts()
    with counting(c):
        extsort.merge_range(st, [rec], int(vals[2 * B + 3]), int(vals[2 * B + 4]))
    assert c.bytes_read < st.size("r.u64") / 2   # two blocks of five at most
    data = bytearray((tmp_path / "r.u64").read_bytes())
    data[len(data) // 2: len(data) // 2 + 8] = b"\xff" * 8
    (tmp_path / "r.u64").write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match="damaged"):
        extsort.merge_range(st, ["r.u64"], 0, 1 << 64)


def test_an_index_with_an_impossible_block_is_damaged(tmp_path):
    """A run read by its record (no size check) whose index claims a block larger than any
    block can be fails as a damaged index, before any buffer is sized from it."""
    st = Storage(tmp_path)
    vals = np.arange(0, 3 * B, dtype=np.uint64) * np.uint64(3)
    rec = extsort.run_record("r.u64", vals, extsort.write_run(st, "r.u64", vals))
    index = np.frombuffer((tmp_path / "r.u64.fences").read_bytes(), dtype="<u8").copy()
    index[-1] += np.uint64(1 << 40)   # the last block's end: offsets still increase
    (tmp_path / "r.u64.fences").write_bytes(index.tobytes())
    with pytest.raises(CorruptDataError, match="damaged run index"):
        extsort.merge_range(st, [rec], 0, 1 << 64)


def test_raw_runs_of_older_versions_still_read(tmp_path):
    """A run written as raw uint64 with raw fences (before this format) reads as before."""
    st = Storage(tmp_path)
    vals = np.unique(np.random.default_rng(5).integers(0, 1 << 40, 2 * B + 9, dtype=np.uint64))
    st.write_atomic("old.u64.fences", vals[::B].tobytes(), durable=False)
    st.write_atomic("old.u64", vals.tobytes(), durable=False)
    rec = {"file": "old.u64", "rows": int(vals.shape[0]), "xxh64": "x"}
    lo, hi = int(vals[7]), int(vals[B + 70])
    want = vals[(vals >= np.uint64(lo)) & (vals < np.uint64(hi))]
    assert np.array_equal(extsort.merge_range(st, ["old.u64"], lo, hi), want)
    assert np.array_equal(extsort.merge_range(st, [rec], lo, hi), want)


@pytest.mark.slow
def test_threads_write_and_read_runs_at_once(tmp_path):
    """Tasks in threads of one process (a dask worker with several threads) each have their
    own scratch buffer: runs written and read at the same time stay exact."""
    from concurrent.futures import ThreadPoolExecutor
    st = Storage(tmp_path)

    def job(i):
        vals = np.unique(np.random.default_rng(i).integers(0, 1 << 44, 8 * B, dtype=np.uint64))
        rec = extsort.run_record(f"t{i}.u64", vals, extsort.write_run(st, f"t{i}.u64", vals))
        return np.array_equal(extsort.merge_range(st, [rec], 0, 1 << 64), vals)

    with ThreadPoolExecutor(4) as ex:
        assert all(ex.map(job, range(6)))


def test_shuffle_pieces_of_messages_keep_the_byte_apart(tmp_path):
    """A pre-merge of message runs (written with ``low_bits=8``) writes its pieces so too, and
    they hold exactly the merged values."""
    from c4table.pipeline.sort import shuffle
    st = Storage(tmp_path)
    rng = np.random.default_rng(4)
    parts = [_messages(rng, 2 * B + 11 * i) for i in range(3)]
    recs = [extsort.run_record(f"m{i}.u64", p, extsort.write_run(st, f"m{i}.u64", p, low_bits=8))
            for i, p in enumerate(parts)]
    pieces = shuffle.premerge_task(str(tmp_path), recs, [0, 1 << 40, 1 << 64], "pre", False, 10**9)
    assert pieces and all(extsort.run_low_bits(st, p) == 8 for p in pieces)
    got = np.concatenate([extsort.read_range_parts(st, [p], 0, 1 << 64)[0] for p in pieces])
    assert np.array_equal(got, np.sort(np.concatenate(parts)))
