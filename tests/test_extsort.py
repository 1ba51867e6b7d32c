"""The build's sorting and encoding shortcuts against the plain numpy operations they replace:
merging sorted runs (instead of sorting their concatenation) and big-endian table entries in
one numba pass (instead of ``astype('>u8')`` and slicing). Shard files: ``test_shards.py``."""
from __future__ import annotations

import numpy as np
import pytest

from c4table.pipeline.sort import extsort
from c4table.pipeline.sort.extsort import sorted_chunks
from c4table.pipeline.stages.merge import entries_to_bytes
from c4table.io.storage import open_storage


@pytest.mark.parametrize("n_parts", [0, 1, 2, 3, 7])
def test_merge_sorted_equals_sorting_the_concatenation(n_parts):
    rng = np.random.default_rng(n_parts)
    for trial in range(20):
        # small value ranges make values shared between parts; some parts are empty
        top = int(rng.choice([10, 1000, 1 << 50]))
        parts = [np.unique(rng.integers(0, top, size=int(rng.integers(0, 300)), dtype=np.uint64))
                 for _ in range(n_parts)]
        both = np.concatenate(parts) if parts else np.empty(0, np.uint64)
        got_unique = extsort.merge_sorted(list(parts), unique=True)
        got_all = extsort.merge_sorted(list(parts), unique=False)
        assert np.array_equal(got_unique, np.unique(both)), (n_parts, trial)
        assert np.array_equal(got_all, np.sort(both)), (n_parts, trial)


@pytest.mark.parametrize("chunk", [3, 64, 1 << 14])
def test_merging_many_runs_in_pieces_equals_sorting_them(chunk, monkeypatch):
    """More runs than :data:`extsort.PAIRWISE_RUNS` are merged in cache-sized pieces: with
    values shared between runs, values repeated inside a run (pre-merged messages keep every
    copy), empty runs, and more values than a piece."""
    monkeypatch.setattr(extsort, "SORT_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for trial in range(8):
        top = int(rng.choice([50, 5000, 1 << 50]))
        n_parts = int(rng.integers(4, 12))
        parts = [np.sort(rng.integers(0, top, size=int(rng.integers(0, 6000)), dtype=np.uint64))
                 for _ in range(n_parts)]
        both = np.concatenate(parts)
        assert np.array_equal(extsort.merge_sorted(list(parts), unique=False), np.sort(both))
        distinct = [np.unique(p) for p in parts]
        assert np.array_equal(extsort.merge_sorted(distinct, unique=True), np.unique(both))


def test_merge_range_of_runs_equals_unique_of_their_values(tmp_path):
    st = open_storage(tmp_path)
    rng = np.random.default_rng(3)
    runs = []
    for i in range(3):
        vals = np.unique(rng.integers(0, 1 << 20, size=2 * extsort.FENCE + 17 * i, dtype=np.uint64))
        extsort.write_run(st, f"r{i}.u64", vals)
        runs.append(vals)
    every = np.unique(np.concatenate(runs))
    for lo, hi in [(0, 1 << 64), (1000, 500_000), (int(every[7]), int(every[7]) + 1)]:
        want = every[(every >= np.uint64(lo)) & ((every < np.uint64(hi)) if hi < 1 << 64 else True)]
        assert np.array_equal(extsort.merge_range(st, ["r0.u64", "r1.u64", "r2.u64"], lo, hi), want)


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 16])
def test_sorted_chunks_of_disjoint_runs_equal_sorting_them_together(chunk):
    """The merge's cut of sorted runs (disjoint values: generations) into cache-sized sorted
    pieces, concatenated, is the sort of all their values; pieces stay near their size."""
    rng = np.random.default_rng(chunk)
    for trial in range(10):
        top = int(rng.choice([3000, 1 << 40]))
        every = np.unique(rng.integers(0, top, size=int(rng.integers(0, 2000)), dtype=np.uint64))
        owner = rng.integers(0, int(rng.integers(1, 30)), size=every.shape[0])
        runs = [every[owner == r] for r in range(owner.max() + 1 if every.shape[0] else 0)]
        words = np.concatenate(runs) if runs else np.empty(0, np.uint64)
        ends = np.cumsum([r.shape[0] for r in runs], dtype=np.int64)
        starts = ends - np.array([r.shape[0] for r in runs], np.int64)
        pieces = [p.copy() for p in sorted_chunks(words, starts, ends, chunk=chunk)]
        got = np.concatenate(pieces) if pieces else np.empty(0, np.uint64)
        assert np.array_equal(got, every), (chunk, trial)
        bound = chunk + (len(runs) + 2) * max(1, chunk // 16)
        assert all(p.shape[0] <= bound for p in pieces[:-1]), (chunk, trial)


@pytest.mark.parametrize("entry_size", [3, 4, 5, 6, 7, 8])   # 4-7: constant-size branches
def test_entries_to_bytes_equals_big_endian_low_bytes(entry_size):
    rng = np.random.default_rng(entry_size)
    words = rng.integers(0, 1 << (8 * entry_size - 1), size=1000, dtype=np.uint64)
    want = words.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - entry_size:]
    assert np.array_equal(entries_to_bytes(words, entry_size), want)
    assert entries_to_bytes(words[:0], entry_size).shape == (0, entry_size)


def test_dedup_sorted_and_keep_best_against_numpy():
    """The branch-free compactions: ``dedup_sorted`` equals ``np.unique`` of sorted values,
    ``keep_best`` keeps the last (largest) message of each key's run (``np.unique`` of the
    keys with ``return_index`` on the reversed array), on empty, single, all-equal, distinct
    and repeated inputs."""
    from c4table.pipeline.kernels.cpu import dedup_sorted, keep_best
    rng = np.random.default_rng(11)
    cases = [np.empty(0, np.uint64), np.array([7], np.uint64), np.full(5, 3, np.uint64),
             np.arange(10, dtype=np.uint64), np.sort(rng.integers(0, 50, 1000, dtype=np.uint64)),
             np.sort(rng.integers(0, 1 << 60, 1000, dtype=np.uint64))]
    for x in cases:
        y = x.copy()
        m = dedup_sorted(y)
        assert np.array_equal(y[:m], np.unique(x))
        z = x.copy()
        m = keep_best(z)
        k = x >> np.uint64(8)
        last = x.shape[0] - 1 - np.unique(k[::-1], return_index=True)[1]
        assert np.array_equal(z[:m], x[np.sort(last)])
