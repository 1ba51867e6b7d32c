"""The run format (:mod:`c4table.pipeline.sort.runcodec`): delta + bit-packed blocks round-trip any
sorted uint64 values exactly, a range read decodes only its blocks and returns exactly
numpy's selection, damage is reported, and runs of raw uint64 written by older versions
still read."""
from __future__ import annotations

import numpy as np
import pytest

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


@pytest.mark.parametrize("name,vals", list(_cases()), ids=[c[0] for c in _cases()])
def test_round_trip_and_partial_blocks(name, vals):
    widths, offsets = runcodec.plan(vals)
    nb = offsets.shape[0] - 1
    words = np.empty(int(offsets[-1]), np.uint64)
    assert runcodec.encode_blocks(vals, widths, offsets, 0, nb, words) == words.shape[0]
    fences = vals[::B].copy()
    out = np.empty(vals.shape[0], np.uint64)
    assert runcodec.decode_blocks(words, fences, offsets, 0, nb, vals.shape[0], out) == -1
    assert np.array_equal(out, vals)
    # blocks encoded in pieces are the same words; any window of blocks decodes alone
    again = np.empty_like(words)
    for b in range(nb):
        runcodec.encode_blocks(vals, widths, offsets, b, b + 1, again[offsets[b]:offsets[b + 1]])
    assert np.array_equal(again, words)
    if nb >= 2:
        got = np.empty(vals.shape[0], np.uint64)
        k = runcodec.decode_blocks(words[offsets[1]:], fences, offsets, 1, nb, vals.shape[0], got)
        assert k == -1 and np.array_equal(got[: vals.shape[0] - B], vals[B:])


def test_damage_is_reported():
    rng = np.random.default_rng(3)
    vals = np.unique(rng.integers(0, 1 << 40, 3 * B, dtype=np.uint64))
    widths, offsets = runcodec.plan(vals)
    words = np.empty(int(offsets[-1]), np.uint64)
    runcodec.encode_blocks(vals, widths, offsets, 0, 3, words)
    fences, out = vals[::B].copy(), np.empty(vals.shape[0], np.uint64)
    bad = words.copy()
    bad[offsets[1]] ^= np.uint64(1)            # block 1's first value: not its fence
    assert runcodec.decode_blocks(bad, fences, offsets, 0, 3, vals.shape[0], out) == 1
    bad = words.copy()
    bad[offsets[2] + 1] ^= np.uint64(0x01)     # a width of block 2: its length no longer adds up
    assert runcodec.decode_blocks(bad, fences, offsets, 0, 3, vals.shape[0], out) == 2
    assert runcodec.decode_blocks(words[:-1], fences, offsets, 0, 3, vals.shape[0], out) == 2
    assert runcodec.parse_index(b"\0" * 24) is None   # raw fences of an older run
    with pytest.raises(ValueError):
        runcodec.parse_index(runcodec.index_bytes(vals.shape[0], fences, offsets)[:-8])


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
