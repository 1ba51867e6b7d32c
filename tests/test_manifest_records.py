"""The manifest's typed records: a real build's manifest read and written back is the same
file, byte for byte (old build directories resume); records keep fields they do not know;
steps change only through the manifest, and the change is saved."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import c4table
from c4table.builddir.manifest import MANIFEST, Manifest, NotJSONError
from c4table.builddir.reader import BuildDir
from c4table.builddir.records import PlyRecord, Premerged, StepRecord, TableRecord


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("b") / "4x4"
    c4table.build_table("4x4", d, workers=1)
    return d


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_manifest_read_and_saved_again_is_the_same_file(built, tmp_path):
    d = _copy(built, tmp_path / "d")
    before = (d / MANIFEST).read_bytes()
    m = Manifest.load(d, require_checksum=True)
    m.save()
    assert (d / MANIFEST).read_bytes() == before


def test_every_record_of_a_real_manifest_round_trips(built):
    data = json.loads((built / MANIFEST).read_text())
    for rec in data["plies"]:
        assert PlyRecord.from_json(rec).to_json() == rec
    for stage in ("forward", "backward"):
        for rec in data["steps"][stage].values():
            assert StepRecord.from_json(rec).to_json() == rec
    assert TableRecord.from_json(data["table"]).to_json() == data["table"]
    # and the typed view agrees with the file
    bd = BuildDir.load(built)
    assert bd.table.sha256_tree == data["table"]["sha256_tree"] and bd.table.entries == data["table"]["entries"]
    assert [p.entries for p in bd.plies] == [r["entries"] for r in data["plies"]]
    assert sum(p.entries for p in bd.plies) == bd.table.entries
    assert bd.manifest.total("a_wins") == data["totals"]["a_wins"]


def test_fields_a_record_does_not_know_are_kept(built, tmp_path):
    d = _copy(built, tmp_path / "d")
    m = Manifest.load(d)
    data = json.loads((d / MANIFEST).read_text())
    data.pop("xxh64")
    data["plies"][3]["later_count"] = 7
    data["steps"]["backward"]["3"]["later_field"] = {"x": [1]}
    m2 = Manifest(m.store, data)
    m2.save()
    again = json.loads((d / MANIFEST).read_text())
    assert again["plies"][3]["later_count"] == 7
    assert again["steps"]["backward"]["3"]["later_field"] == {"x": [1]}
    assert Manifest.load(d, require_checksum=True).ply_counts(3).count("later_count") == 7


def test_a_step_changes_through_the_manifest_and_the_change_is_saved(built, tmp_path):
    d = _copy(built, tmp_path / "d")
    m = Manifest.load(d)
    step = m.step("backward", 5)
    runs = [{"file": "work/messages/4/run-00000.u64", "rows": 3, "xxh64": "0" * 16}]
    pm = Premerged.of([(0, 256), (256, 512)], runs)
    new = m.update_step("backward", 5, messages=runs, premerged=pm)
    assert new.shards == step.shards and m.step("backward", 5) == new
    m.flush()
    back = Manifest.load(d, require_checksum=True).step("backward", 5)
    assert back.messages == runs and back.premerged == pm and back.premerged.matches([[0, 256], [256, 512]])
    assert not back.premerged.matches([(0, 512)])
    m.update_step("backward", 5, premerged=None)
    m.flush()
    assert Manifest.load(d).step("backward", 5).premerged is None
    with pytest.raises(KeyError):
        m.update_step("forward", 99, run_keys=1)


def test_a_manifest_that_is_not_json_is_refused_as_damaged(tmp_path):
    (tmp_path / MANIFEST).write_text("{not json")
    with pytest.raises(NotJSONError, match="not valid JSON"):
        BuildDir.load(tmp_path)


def test_a_table_record_of_an_unknown_format_is_a_damaged_manifest(built, tmp_path):
    d = _copy(built, tmp_path / "d")
    data = json.loads((d / MANIFEST).read_text())
    data.pop("xxh64")
    data["table"]["format"] = "zip"
    (d / MANIFEST).write_text(json.dumps(data))
    with pytest.raises(c4table.errors.CorruptDataError, match="unknown format"):
        Manifest.load(d)
