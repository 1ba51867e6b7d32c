"""The table format object: chosen once when a build opens, asked everywhere else; the public
``build_table`` reaches every format, and each writes Cadot's bytes."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import c4table
from c4table.builddir import tableformat
from c4table.builddir.reader import BuildDir
from c4table.builddir.records import FileRecord, TableRecord
from c4table.builddir.tableformat import C4Z, DAT
from c4table.c4z.writer import decompress_table
from c4table.errors import BuildError
from c4table.io.hashes import sha256_of
from conftest import published_tables

REPO = Path(__file__).resolve().parents[1]


def test_every_format_is_found_by_its_name_and_unknown_names_are_refused():
    assert set(tableformat.NAMES) == {"dat", "c4z"}
    for name, f in tableformat.FORMATS.items():
        assert tableformat.get(name) is f and tableformat.get(f) is f and str(f) == name
        assert f.file_name("connect4_6x5.dat") == "connect4_6x5" + f.suffix
    with pytest.raises(BuildError, match="table format 'zip'"):
        tableformat.get("zip")
    with pytest.raises(BuildError):
        c4table.build_table("4x4", "unused", table_format="zip")


def test_a_record_names_its_format_and_an_old_record_is_raw():
    old = {"file": "connect4_4x4.dat", "entries": 2, "bytes": 6, "sha256": "x"}
    assert TableRecord.from_json(old).format is DAT and TableRecord.from_json(old).container is None
    rec = TableRecord.of(C4Z, "connect4_4x4.dat", 2, {"sha256": "x", "md5": "y", "bytes": 6},
                         FileRecord("connect4_4x4.c4z", 5, "z"))
    js = rec.to_json()
    assert js["format"] == "c4z" and js["c4z"] == {"file": "connect4_4x4.c4z", "bytes": 5, "sha256": "z"}
    assert TableRecord.from_json(js) == rec
    assert TableRecord.of(DAT, "connect4_4x4.dat", 2, {"sha256": "x", "bytes": 6}).to_json() == old


@pytest.mark.parametrize("fmt", tableformat.NAMES)
def test_public_build_table_writes_each_format_with_the_published_4x4_bytes(tmp_path, fmt):
    """``c4table.build_table(..., table_format=)``: the file has the format's suffix, the raw
    bytes (decompressed where the format compresses) are the published 4x4 table's, and the
    manifest records the format."""
    f = tableformat.get(fmt)
    path = Path(c4table.build_table("4x4", tmp_path / fmt, workers=1, table_format=fmt))
    assert path.name == "connect4_4x4" + f.suffix
    raw = path
    if not f.raw:
        raw = tmp_path / "raw.dat"
        decompress_table(path, raw)
        assert not (tmp_path / fmt / "connect4_4x4.dat").exists()
        assert not (tmp_path / fmt / "work").exists()   # nothing kept past its last reader
    assert sha256_of(raw) == published_tables()["4x4"]["sha256"]
    assert BuildDir.load(tmp_path / fmt).table.format is f
    # on disk: a raw table's record names no format (as before .c4z builds), a .c4z's does
    rec = json.loads((tmp_path / fmt / "manifest.json").read_text())["table"]
    assert rec.get("format") == (None if f.raw else fmt)


def test_format_names_are_compared_only_in_the_format_object():
    """No module of the package tells formats apart by comparing their names: it asks the
    format object (the container's own header check aside)."""
    out = subprocess.run(
        ["grep", "-rnE", r'(==|!=) *"(c4z|dat)"|"(c4z|dat)" *(==|!=)|in \([^)]*"(c4z|dat)"',
         "c4table", "pipeline", "--include=*.py"], cwd=REPO, capture_output=True, text=True).stdout
    lines = [ln for ln in out.splitlines() if not ln.startswith("c4table/builddir/tableformat.py")]
    assert all(ln.startswith("c4table/c4z/reader.py") for ln in lines), lines
    assert len(lines) <= 2, lines
