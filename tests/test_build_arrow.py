"""The shards of a build that keeps them, read as Arrow tables through the public API: the
backward generations together are the table's entries (checked against the .dat's bytes,
parsed here with numpy alone), the forward generations hold the manifest's counts, and a
build without shards, an unfinished step or a damaged shard is refused in one line."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

import c4table
from c4table.errors import BuildInputError, CorruptDataError


def _entries_of_dat(path, key_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, outcome bytes) of a raw table: big-endian keys of ``key_bytes``, one byte after."""
    raw = np.frombuffer(path.read_bytes(), np.uint8).reshape(-1, key_bytes + 1)
    keys = np.zeros(raw.shape[0], np.uint64)
    for i in range(key_bytes):
        keys = (keys << np.uint64(8)) | raw[:, i].astype(np.uint64)
    return keys, raw[:, key_bytes].copy()


@pytest.fixture(scope="module", params=["4x4", "5x4"])
def built(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("arrow") / request.param
    path = c4table.build_table(request.param, d, workers=1)   # keep_work=True: work/ stays
    return d, path


def test_backward_generations_together_are_the_table(built):
    d, path = built
    bd = c4table.open_build_dir(d)
    gens = [bd.generation(ply) for ply in range(bd.board.cells + 1)]
    assert all(g.schema.names == ["key", "outcome"] for g in gens)
    assert gens[0].schema.field("key").type == pa.uint64()
    assert gens[0].schema.field("outcome").type == pa.uint8()
    allg = pa.concat_tables(gens)
    keys = allg["key"].to_numpy()
    outs = allg["outcome"].to_numpy()
    order = np.argsort(keys, kind="stable")
    want_keys, want_outs = _entries_of_dat(path, bd.board.key_bytes)
    assert np.array_equal(keys[order], want_keys)
    assert np.array_equal(outs[order], want_outs)
    # each generation is in key order, as the shards hold it
    assert all(np.all(np.diff(g["key"].to_numpy().astype(np.int64)) > 0) for g in gens if g.num_rows > 1)


def test_forward_generations_hold_the_manifests_counts(built):
    d, _ = built
    bd = c4table.open_build_dir(d)
    plies = json.loads((d / "manifest.json").read_text())["plies"]   # the file itself
    for ply, rec in enumerate(plies):
        fwd = bd.generation(ply, stage="forward")
        assert fwd.schema.names == ["key"] and fwd.num_rows == rec["entries"]
        assert fwd["key"].equals(bd.generation(ply)["key"])   # the same keys, annotated


def test_shard_tables_yield_every_shard_once(built):
    d, path = built
    bd = c4table.open_build_dir(d)
    per_shard = list(bd.shard_tables())
    assert sum(t.num_rows for t in per_shard) == bd.table.entries == path.stat().st_size // bd.board.entry_size
    assert sum(t.num_rows for t in bd.shard_tables("forward")) == bd.table.entries
    ply = bd.board.cells // 2
    assert pa.concat_tables(list(bd.shard_tables("backward", ply))).equals(bd.generation(ply))


def test_a_build_without_its_shards_or_steps_is_refused_in_one_line(tmp_path):
    c4table.build_table("4x4", tmp_path / "clean", workers=1, keep_work=False)
    bd = c4table.open_build_dir(tmp_path / "clean")
    with pytest.raises(BuildInputError, match="kept no shards") as e:
        bd.generation(5)
    assert "\n" not in str(e.value)
    with pytest.raises(BuildInputError, match="give forward or backward"):
        bd.generation(5, stage="sideways")
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import open_build
    with open_build("4x4", tmp_path / "part", workers=1, quiet=True) as b:
        forward.run(b, max_ply=4)
    part = c4table.open_build_dir(tmp_path / "part")
    assert part.generation(4, stage="forward").num_rows == part.plies[4].entries
    with pytest.raises(BuildInputError, match="backward step of ply 4 is not finished"):
        part.generation(4)
    with pytest.raises(BuildInputError, match="forward step of ply 9 is not finished"):
        part.generation(9, stage="forward")


def test_a_damaged_shard_never_answers(built, tmp_path):
    import shutil
    d, _ = built
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    bd = c4table.open_build_dir(copy)
    ply = bd.board.cells // 2
    info = bd.manifest.shards("backward", ply)[0]
    f = copy / info.file
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match="checksum"):
        bd.generation(ply)
