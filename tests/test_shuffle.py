"""The shuffle's requests: fences read once per process (cached by run record), and the
two-level shuffle (:mod:`c4table.pipeline.shuffle`) that keeps a shuffle's ranged reads under
a bound, with tables byte-identical to the known ones."""
from __future__ import annotations

import numpy as np

from c4table.pipeline import extsort
from c4table.pipeline.counters import IOCounts, counting
from c4table.pipeline.storage import Storage


def _values(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.unique(rng.integers(0, 1 << 40, size=n, dtype=np.uint64))


def test_fences_are_read_once_per_run_record_and_never_stale(tmp_path):
    """By path, every read of a slice costs a size query and a fence GET; by record, the
    second read of the same run costs neither, and the slices are the same. A run written
    again under the same name (new xxh64) is read with its new fences."""
    st = Storage(tmp_path)
    vals = _values(1, 3 * extsort.FENCE + 77)
    digest = extsort.write_run(st, "r.u64", vals)
    rec = extsort.run_record("r.u64", vals, digest)
    lo, hi = int(vals[1000]), int(vals[2 * extsort.FENCE + 5])
    want = vals[(vals >= np.uint64(lo)) & (vals < np.uint64(hi))]
    by_path, first, second = IOCounts(), IOCounts(), IOCounts()
    with counting(by_path):
        assert np.array_equal(extsort.read_range(st, ["r.u64"], lo, hi), want)
    with counting(first):
        assert np.array_equal(extsort.read_range(st, [rec], lo, hi), want)
    with counting(second):
        assert np.array_equal(extsort.read_range(st, [rec], lo, hi), want)
    assert (by_path.head_requests, by_path.get_requests, by_path.ranged_reads) == (1, 1, 1)
    assert (first.head_requests, first.get_requests, first.ranged_reads) == (0, 1, 1)
    assert (second.head_requests, second.get_requests, second.ranged_reads) == (0, 0, 1)
    assert by_path.bytes_read - second.bytes_read == (-(-vals.shape[0] // extsort.FENCE)) * 8
    other = _values(2, 2 * extsort.FENCE + 5)
    rec2 = extsort.run_record("r.u64", other, extsort.write_run(st, "r.u64", other))
    assert rec2["xxh64"] != rec["xxh64"]
    want2 = other[(other >= np.uint64(lo)) & (other < np.uint64(hi))]
    assert np.array_equal(extsort.read_range(st, [rec2], lo, hi), want2)
