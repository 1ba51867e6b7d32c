"""Shard files (:mod:`c4table.builddir.shards`): keys and outcomes read back exactly, whole and
block by block, against the arrays written; a backward shard of outcomes only takes its keys
from its forward shard and must have its blocks; damaged files, parquet shards of an older
build and manifests of that format are refused with one line naming the file."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from c4table.builddir import shards
from c4table.builddir.manifest import FORMAT, Manifest
from c4table.builddir.shardcodec import decode_keys, encode_keys
from c4table.builddir.shards import (ROW_GROUP, ShardInfo, file_xxh64, open_row_groups, read_row_groups,
                                     read_shard, verify_shard_task, write_outcomes, write_shard)
from c4table.errors import BuildError, CorruptDataError
from c4table.io.storage import open_storage


def _keys(seed: int, n: int, top: int = 1 << 50) -> np.ndarray:
    return np.unique(np.random.default_rng(seed).integers(0, top, size=n, dtype=np.uint64))


@pytest.mark.parametrize("tail", [shards.TAIL, 100])   # an index past the end's first read
def test_keys_and_outcomes_read_back_whole_and_by_block(tmp_path, monkeypatch, tail):
    monkeypatch.setattr(shards, "TAIL", tail)
    st = open_storage(tmp_path)
    keys = _keys(5, 300_000)
    keys[-1] = np.uint64((1 << 64) - 1)     # the widest delta a key can have
    outs = np.random.default_rng(5).integers(0, 256, size=keys.shape[0], dtype=np.uint8)
    info = write_shard(st, "b.shard", keys, outs)
    assert (info.rows, info.first, info.last) == (keys.shape[0], int(keys[0]), (1 << 64) - 1)
    assert info.xxh64 == file_xxh64(tmp_path / "b.shard")
    k2, o2 = read_shard(st, info, with_outcome=True)
    assert np.array_equal(k2, keys) and np.array_equal(o2, outs) and o2.dtype == np.uint8
    assert np.array_equal(read_shard(st, info), keys)
    sh, groups = open_row_groups(st, info)
    assert [g.rows for g in groups] == [ROW_GROUP, ROW_GROUP, keys.shape[0] - 2 * ROW_GROUP]
    assert [(g.first, g.last) for g in groups] == [(int(keys[i]), int(keys[min(i + ROW_GROUP, keys.shape[0]) - 1]))
                                                   for i in range(0, keys.shape[0], ROW_GROUP)]
    for picks in ([1, 2], [0], [0, 2]):
        k3, o3 = read_row_groups(sh, picks)
        rows = np.concatenate([np.arange(i * ROW_GROUP, min((i + 1) * ROW_GROUP, keys.shape[0])) for i in picks])
        assert np.array_equal(k3, keys[rows]) and np.array_equal(o3, outs[rows])
        # decoded in place into slices of bigger buffers, their other rows untouched
        kb, ob = np.zeros(rows.shape[0] + 3, np.uint64), np.zeros(rows.shape[0] + 3, np.uint8)
        k4, o4 = read_row_groups(sh, picks, (kb[2:-1], ob[2:-1]))
        assert np.shares_memory(k4, kb) and np.shares_memory(o4, ob)
        assert np.array_equal(kb[2:-1], keys[rows]) and np.array_equal(ob[2:-1], outs[rows])
        assert not kb[[0, 1, -1]].any() and not ob[[0, 1, -1]].any()
    with pytest.raises(ValueError):
        read_row_groups(sh, [2, 1])
    with pytest.raises(ValueError, match="rows"):   # a buffer of the wrong size or type
        read_row_groups(sh, [0], (np.empty(ROW_GROUP - 1, np.uint64), np.empty(ROW_GROUP, np.uint8)))
    with pytest.raises(ValueError, match="rows"):
        read_row_groups(sh, [0], (np.empty(ROW_GROUP, np.int64), np.empty(ROW_GROUP, np.uint8)))


def test_an_empty_shard_and_unsorted_keys(tmp_path):
    st = open_storage(tmp_path)
    info = write_shard(st, "e.shard", np.empty(0, np.uint64))
    assert (info.rows, info.first, info.last) == (0, -1, -1)
    assert read_shard(st, info).shape == (0,) and open_row_groups(st, info)[1] == []
    for bad in ([3, 3], [5, 4]):
        with pytest.raises(ValueError):
            write_shard(st, "u.shard", np.array(bad, np.uint64))
    assert not (tmp_path / "u.shard").exists()


def test_keys_codec_round_trip_and_damage():
    keys = _keys(1, 5000, 1 << 30)
    frame = encode_keys(keys)
    assert np.array_equal(decode_keys(frame, int(keys[0]), keys.shape[0]), keys)
    for first, n in ((int(keys[0]), keys.shape[0] - 1), (int(keys[0]), keys.shape[0] + 1)):
        with pytest.raises(CorruptDataError):
            decode_keys(frame, first, n)
    with pytest.raises(CorruptDataError):
        decode_keys(frame[:-3], int(keys[0]), keys.shape[0])


def test_outcome_only_backward_shard_reads_keys_from_its_forward_shard(tmp_path):
    st = open_storage(tmp_path)
    keys = _keys(6, 2 * ROW_GROUP + 1000, 1 << 40)
    outs = np.random.default_rng(6).integers(0, 256, size=keys.shape[0], dtype=np.uint8)
    fwd = write_shard(st, "work/f.shard", keys)
    bwd = write_outcomes(st, "work/b.shard", outs, fwd)
    assert (bwd.keys, bwd.keys_xxh64, bwd.first, bwd.last, bwd.rows) == \
        (fwd.file, fwd.xxh64, int(keys[0]), int(keys[-1]), keys.shape[0])
    assert ShardInfo.from_json(bwd.to_json()) == bwd and "keys" not in fwd.to_json()
    with pytest.raises(CorruptDataError, match="b.shard.*holds no keys"):   # outcomes only
        read_shard(st, ShardInfo(bwd.file, bwd.rows, bwd.xxh64, bwd.first, bwd.last))
    k2, o2 = read_shard(st, bwd, with_outcome=True)
    assert np.array_equal(k2, keys) and np.array_equal(o2, outs)
    assert np.array_equal(read_shard(st, bwd), keys)
    shard, groups = open_row_groups(st, bwd)
    assert len(groups) == 3 and groups[1].first == int(keys[ROW_GROUP])
    k3, o3 = read_row_groups(shard, [1, 2])
    assert np.array_equal(k3, keys[ROW_GROUP:]) and np.array_equal(o3, outs[ROW_GROUP:])
    assert verify_shard_task(str(tmp_path), bwd.to_json()) == keys.shape[0]
    # the forward shard is part of the backward shard: damage to it is found by either read
    good = (tmp_path / "work/f.shard").read_bytes()
    (tmp_path / "work/f.shard").write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    with pytest.raises(CorruptDataError, match="f.shard"):
        read_shard(st, bwd, with_outcome=True)
    with pytest.raises(CorruptDataError, match="f.shard"):
        verify_shard_task(str(tmp_path), bwd.to_json())
    with pytest.raises(CorruptDataError, match="f.shard.*unreadable"):   # unchecked: the codec finds it
        read_shard(st, fwd, check=False)
    with pytest.raises(ValueError):
        write_outcomes(st, "work/c.shard", np.zeros(3, np.uint8), fwd)


def test_outcomes_cut_into_other_blocks_than_their_keys_are_refused(tmp_path):
    st = open_storage(tmp_path)
    keys = np.arange(ROW_GROUP + 10, dtype=np.uint64)
    fwd = write_shard(st, "work/f.shard", keys)
    data = shards._encode_file(None, np.zeros(keys.shape[0], np.uint8), [1000, keys.shape[0] - 1000],
                               keys[[0, 1000]], keys[[999, -1]])
    (tmp_path / "work/b.shard").write_bytes(data)
    bwd = ShardInfo("work/b.shard", keys.shape[0], file_xxh64(tmp_path / "work/b.shard"), 0,
                    int(keys[-1]), fwd.file, fwd.xxh64)
    with pytest.raises(CorruptDataError, match="blocks do not match"):
        open_row_groups(st, bwd)


@pytest.mark.parametrize("damage", ["truncate", "footer", "index", "empty", "parquet"])
def test_damaged_and_older_shards_are_refused_naming_the_file(tmp_path, damage):
    st = open_storage(tmp_path)
    keys = _keys(8, ROW_GROUP + 77)
    info = write_shard(st, "work/s.shard", keys, np.zeros(keys.shape[0], np.uint8))
    p = tmp_path / "work/s.shard"
    data = p.read_bytes()
    if damage == "truncate":
        data = data[:-10]
    elif damage == "footer":
        data = data[:-1] + b"X"
    elif damage == "index":   # block 1's offset moved
        at = len(data) - shards.FOOTER.size - shards.INDEX.itemsize
        data = data[:at] + bytes([data[at] ^ 4]) + data[at + 1:]
    elif damage == "empty":
        data = b""
    else:   # the shard an older build wrote
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"key": pa.array(keys.view(np.int64))}), sink)
        data = sink.getvalue().to_pybytes()
    p.write_bytes(data)
    info = ShardInfo(info.file, info.rows, file_xxh64(p), info.first, info.last)
    with pytest.raises(CorruptDataError, match="s.shard: unreadable shard"):
        read_shard(st, info, with_outcome=True)
    with pytest.raises(CorruptDataError, match="s.shard: unreadable shard"):
        open_row_groups(st, info)


def test_a_build_directory_of_the_parquet_format_keeps_its_table_but_not_its_shards(d54, tmp_path):
    """A finished build of manifest format 1 (parquet shards) still loads, so its table keeps
    its checks; its shards are not read (export scans the table) and a build refuses to resume
    it, in one line naming the format."""
    import shutil

    from c4table.analysis.export import export_positions
    from c4table.builddir.manifest import checksum
    from c4table.builddir.reader import BuildDir
    from c4table.pipeline.stages.build import build_table
    d = tmp_path / "old"
    shutil.copytree(d54, d, ignore=shutil.ignore_patterns(".lock"))
    data = json.loads((d / "manifest.json").read_text())
    data.pop("xxh64")
    data["format"] = "c4table-manifest/1"
    data["xxh64"] = checksum(data)
    (d / "manifest.json").write_text(json.dumps(data))
    bd = BuildDir.load(d)
    assert bd.table.file == "connect4_5x4.dat" and not bd.has_backward_files(8)
    with pytest.raises(BuildError, match="c4table-manifest/1"):
        next(iter(bd.read_backward(8)))
    old = export_positions(d / "connect4_5x4.dat", tmp_path / "old.parquet", ply=8)
    new = export_positions(d54 / "connect4_5x4.dat", tmp_path / "new.parquet", ply=8)
    assert (old.source, new.source) == ("table", "shards") and old.rows == new.rows == 10076
    assert pq.read_table(tmp_path / "old.parquet").equals(pq.read_table(tmp_path / "new.parquet"))
    with pytest.raises(BuildError) as e:
        build_table("5x4", d, quiet=True, workers=1)
    msg = str(e.value)
    assert "\n" not in msg and "c4table-manifest/1" in msg and FORMAT in msg and "--restart" in msg
