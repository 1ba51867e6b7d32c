"""The build's sorting and encoding shortcuts against the plain numpy operations they replace:
merging sorted runs (instead of sorting their concatenation), big-endian table entries in one
numba pass (instead of ``astype('>u8')`` and slicing), and shards written and read through
arrow buffers (the outcome column as one byte per entry; shards written by earlier versions,
with a uint8 outcome column, still read the same), and backward shards of outcomes only that
take their keys from the forward shard."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from c4table.errors import CorruptDataError
from c4table.pipeline.sort import extsort
from c4table.pipeline.sort.extsort import sorted_chunks
from c4table.pipeline.stages.merge import entries_to_bytes
from c4table.builddir.shards import (ROW_GROUP, ShardInfo, open_row_groups, read_row_groups, read_shard,
                                     verify_shard_task, write_outcomes, write_shard)
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


def test_backward_shard_round_trip_and_older_uint8_shards(tmp_path):
    st = open_storage(tmp_path)
    rng = np.random.default_rng(5)
    keys = np.unique(rng.integers(0, 1 << 50, size=300_000, dtype=np.uint64))
    outs = rng.integers(0, 256, size=keys.shape[0], dtype=np.uint8)
    info = write_shard(st, "b.parquet", keys, outs)
    k2, o2 = read_shard(st, info, with_outcome=True)
    assert np.array_equal(k2, keys) and np.array_equal(o2, outs) and o2.dtype == np.uint8
    pf, groups = open_row_groups(st, info)
    assert sum(g.rows for g in groups) == keys.shape[0] and len(groups) > 1
    k3, o3 = read_row_groups(pf, [g.index for g in groups[1:3]])
    start = groups[0].rows
    assert np.array_equal(k3, keys[start:start + k3.shape[0]])
    assert np.array_equal(o3, outs[start:start + k3.shape[0]])
    # a shard as earlier versions wrote it: outcome as parquet's uint8 (INT32 physical)
    old = pa.table({"key": pa.array(keys.view(np.int64)), "outcome": pa.array(outs, pa.uint8())})
    pq.write_table(old, tmp_path / "old.parquet", compression="zstd",
                   column_encoding={"key": "DELTA_BINARY_PACKED"}, use_dictionary=False)
    from c4table.builddir.shards import file_xxh64
    old_info = ShardInfo("old.parquet", int(keys.shape[0]), file_xxh64(tmp_path / "old.parquet"),
                         int(keys[0]), int(keys[-1]))
    k4, o4 = read_shard(st, old_info, with_outcome=True)
    assert np.array_equal(k4, keys) and np.array_equal(o4, outs)


def test_a_shard_with_a_wrong_column_type_is_corrupt_data(tmp_path):
    st = open_storage(tmp_path)
    bad = pa.table({"key": pa.array(np.arange(5, dtype=np.int32))})   # 32-bit keys: not ours
    pq.write_table(bad, tmp_path / "bad.parquet")
    from c4table.builddir.shards import file_xxh64
    info = ShardInfo("bad.parquet", 5, file_xxh64(tmp_path / "bad.parquet"), 0, 4)
    with pytest.raises(CorruptDataError, match="bad.parquet"):
        read_shard(st, info)


def test_outcome_only_backward_shard_reads_keys_from_its_forward_shard(tmp_path):
    st = open_storage(tmp_path)
    rng = np.random.default_rng(6)
    keys = np.unique(rng.integers(0, 1 << 40, size=2 * ROW_GROUP + 1000, dtype=np.uint64))
    outs = rng.integers(0, 256, size=keys.shape[0], dtype=np.uint8)
    fwd = write_shard(st, "work/f.parquet", keys)
    bwd = write_outcomes(st, "work/b.parquet", outs, fwd)
    assert (bwd.keys, bwd.keys_xxh64, bwd.first, bwd.last, bwd.rows) == \
        (fwd.file, fwd.xxh64, int(keys[0]), int(keys[-1]), keys.shape[0])
    assert ShardInfo.from_json(bwd.to_json()) == bwd and "keys" not in fwd.to_json()
    assert pq.ParquetFile(tmp_path / "work/b.parquet").schema_arrow.names == ["outcome"]
    k2, o2 = read_shard(st, bwd, with_outcome=True)
    assert np.array_equal(k2, keys) and np.array_equal(o2, outs)
    assert np.array_equal(read_shard(st, bwd), keys)
    shard, groups = open_row_groups(st, bwd)
    assert len(groups) == 3 and groups[1].first == int(keys[ROW_GROUP])
    k3, o3 = read_row_groups(shard, [1, 2])
    assert np.array_equal(k3, keys[ROW_GROUP:]) and np.array_equal(o3, outs[ROW_GROUP:])
    assert verify_shard_task(str(tmp_path), bwd.to_json()) == keys.shape[0]
    # the forward shard is part of the backward shard: damage to it is found by either read
    (tmp_path / "work/f.parquet").write_bytes(b"PAR1" + bytes(100) + b"PAR1")
    with pytest.raises(CorruptDataError, match="f.parquet"):
        read_shard(st, bwd, with_outcome=True)
    with pytest.raises(CorruptDataError, match="f.parquet"):
        verify_shard_task(str(tmp_path), bwd.to_json())


def test_outcomes_cut_into_other_row_groups_than_their_keys_are_refused(tmp_path):
    st = open_storage(tmp_path)
    keys = np.arange(ROW_GROUP + 10, dtype=np.uint64)
    fwd = write_shard(st, "work/f.parquet", keys)
    pq.write_table(pa.table({"outcome": pa.array(np.zeros(keys.shape[0], np.uint8))}),
                   tmp_path / "work/b.parquet", row_group_size=1000)
    from c4table.builddir.shards import file_xxh64
    bwd = ShardInfo("work/b.parquet", keys.shape[0], file_xxh64(tmp_path / "work/b.parquet"), 0,
                    int(keys[-1]), fwd.file, fwd.xxh64)
    with pytest.raises(CorruptDataError, match="row groups"):
        open_row_groups(st, bwd)
    with pytest.raises(ValueError):
        write_outcomes(st, "work/c.parquet", np.zeros(3, np.uint8), fwd)


def test_shards_are_written_non_nullable_and_nullable_ones_of_older_builds_read_the_same(tmp_path):
    """Shards declare their fields non-nullable (no definition levels to encode and decode);
    a forward shard and an outcomes-only backward shard as earlier versions wrote them
    (nullable fields, the same encodings) read the same, whole and by row group."""
    st = open_storage(tmp_path)
    rng = np.random.default_rng(7)
    keys = np.unique(rng.integers(0, 1 << 40, size=2 * ROW_GROUP + 500, dtype=np.uint64))
    outs = rng.integers(0, 256, size=keys.shape[0], dtype=np.uint8)
    fwd = write_shard(st, "new/f.parquet", keys)
    bwd = write_outcomes(st, "new/b.parquet", outs, fwd)
    for f in ("new/f.parquet", "new/b.parquet"):
        pf = pq.ParquetFile(tmp_path / f)
        assert [fl.nullable for fl in pf.schema_arrow] == [False]
        assert pf.metadata.row_group(0).column(0).statistics is None or f.endswith("f.parquet")
    from c4table.builddir.shards import _arrow, file_xxh64
    (tmp_path / "old").mkdir()
    pq.write_table(pa.table({"key": _arrow(keys.view(np.int64), pa.int64())}), tmp_path / "old/f.parquet",
                   compression="none", use_dictionary=False, column_encoding={"key": "DELTA_BINARY_PACKED"},
                   write_statistics=["key"], row_group_size=ROW_GROUP)
    pq.write_table(pa.table({"outcome": _arrow(outs, pa.binary(1))}), tmp_path / "old/b.parquet",
                   compression="zstd", compression_level=1, use_dictionary=False, write_statistics=False,
                   row_group_size=ROW_GROUP)
    assert pq.ParquetFile(tmp_path / "old/f.parquet").schema_arrow.field("key").nullable
    ofwd = ShardInfo("old/f.parquet", fwd.rows, file_xxh64(tmp_path / "old/f.parquet"), fwd.first, fwd.last)
    obwd = ShardInfo("old/b.parquet", bwd.rows, file_xxh64(tmp_path / "old/b.parquet"), bwd.first, bwd.last,
                     ofwd.file, ofwd.xxh64)
    for b in (bwd, obwd):
        k, o = read_shard(st, b, with_outcome=True)
        assert np.array_equal(k, keys) and np.array_equal(o, outs)
        shard, groups = open_row_groups(st, b)
        assert [g.first for g in groups] == [int(keys[i]) for i in range(0, keys.shape[0], ROW_GROUP)]
        k2, o2 = read_row_groups(shard, [1, 2])
        assert np.array_equal(k2, keys[ROW_GROUP:]) and np.array_equal(o2, outs[ROW_GROUP:])
    # a backward shard written now beside an older forward shard (a build resumed across versions)
    mixed = write_outcomes(st, "new/b2.parquet", outs, ofwd)
    k3, o3 = read_shard(st, mixed, with_outcome=True)
    assert np.array_equal(k3, keys) and np.array_equal(o3, outs)


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
