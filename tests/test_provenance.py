"""Provenance of the package's known tables (c4table/data/known_tables.json): every entry says
whether its figures are published (with the source) or were recorded from a c4table build
(with version and date); the published ones equal the copies of the published figures in
tests/data/published_tables.tsv; built tables have the sizes Cadot's scripts publish; and
c4table.table.known.record_build (tools/diag/record_known.py) never calls a build's figure published."""
import json
import re

import pytest

from c4table.errors import TableError
from c4table.table.known import c4table_version, dump_known, known_tables, provenance, record_build
from conftest import published_tables

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def test_every_entry_has_provenance():
    for board, e in known_tables().items():
        assert e["provenance"] in ("published", "built"), board
        if e["provenance"] == "published":
            assert e["source"] and e["cite"], board
        else:
            assert e["c4table_version"] and DATE.match(e["date"]), board
            assert "source" not in e, board          # a build is no source
        if "plies" in e:                             # per-ply counts always come from a build
            pp = e["plies_provenance"]
            assert pp["provenance"] == "built" and DATE.match(pp["date"]), board
            assert len(e["plies"]) == plies_of(board)


def plies_of(board: str) -> int:
    w, h = map(int, board.split("x"))
    return w * h + 1


@pytest.mark.parametrize("board", ["7x6", "6x5", "4x4"])
def test_published_entries_equal_the_published_figures(board):
    e, ref = known_tables()[board], published_tables()[board]
    assert e["provenance"] == "published"
    for field in ("entries", "bytes", "md5", "sha256"):
        if ref[field]:
            value = e[field]
            assert str(value) == ref[field], field
        elif field in ("md5", "sha256"):
            assert field not in e, f"{board} {field}: not published, so not in a published entry"


def test_published_sizes_of_built_tables():
    """Cadot's solver/connect4-script publishes the file sizes of smaller boards; our builds
    (recorded as built) have exactly those sizes."""
    known, published = known_tables(), published_tables()
    checked = [b for b, e in known.items() if published.get(b, {}).get("bytes")]
    assert {"4x5", "5x4", "4x6", "5x5", "6x4", "5x6", "6x5", "4x4"} <= set(checked)
    for b in checked:
        assert known[b]["bytes"] == int(published[b]["bytes"]), b


def test_provenance_label():
    assert provenance(known_tables()["6x5"]).startswith("published: Cadot")
    assert provenance(known_tables()["5x4"]).startswith("built by c4table ")


def test_record_known_marks_builds_built(built):
    known = json.loads(json.dumps(known_tables()))            # a copy
    d = built("4x4")
    record_build(d, None, known, force=False)
    e = known["4x4"]                                         # published hash: stays published
    assert e["provenance"] == "published" and e["source"] == known_tables()["4x4"]["source"]
    assert e["plies_provenance"]["provenance"] == "built"
    del known["4x4"]                                         # unknown board: recorded as built
    record_build(d, "test", known, force=False)
    e = known["4x4"]
    assert e["provenance"] == "built" and "source" not in e and e["note"] == "test"
    assert e["c4table_version"] == c4table_version() and DATE.match(e["date"])
    assert e["sha256"] == published_tables()["4x4"]["sha256"]
    assert json.loads(dump_known(known)) == known


def test_record_known_refuses_another_hash(built, tmp_path):
    known = json.loads(json.dumps(known_tables()))
    known["4x4"]["sha256"] = "0" * 64
    with pytest.raises(TableError, match="differs"):
        record_build(built("4x4"), None, known, force=False)



def test_record_known_of_a_c4z_build_without_a_raw_file(tmp_path):
    """A build --format c4z writes no raw table: its record takes the sha256 and md5 that
    verify printed, or none (never a hash of a file that is not there); the tree hash is the
    build's own."""
    import hashlib
    from c4table.c4z.writer import decompress_table
    from c4table.pipeline.stages.build import build_table
    build_table("4x4", tmp_path / "b", quiet=True, workers=1, table_format="c4z")
    assert not (tmp_path / "b" / "connect4_4x4.dat").exists()
    known = json.loads(json.dumps(known_tables()))
    del known["4x4"]
    record_build(tmp_path / "b", None, known)
    e = known["4x4"]
    assert e["provenance"] == "built" and "md5" not in e and "sha256" not in e
    assert e["sha256_tree"] == known_tables()["4x4"]["sha256_tree"]
    raw = tmp_path / "raw.dat"
    decompress_table(tmp_path / "b" / "connect4_4x4.c4z", raw)
    md5 = hashlib.md5(raw.read_bytes()).hexdigest()
    del known["4x4"]
    record_build(tmp_path / "b", None, known, md5=md5,
                 sha256=hashlib.sha256(raw.read_bytes()).hexdigest())
    assert known["4x4"]["md5"] == md5 and known["4x4"]["sha256"] == published_tables()["4x4"]["sha256"] and not (tmp_path / "b" / "connect4_4x4.dat").exists()
