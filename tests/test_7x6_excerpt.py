"""The 7x6 file: lookup, best, verify, stats and export on a synthetic excerpt of Cadot's
``connect4_7x6.dat`` (7-byte entries, 6-byte big-endian keys).

The excerpt holds the empty board (key 0, with a placeholder outcome byte: the file must start
there) and the complete subtree below a late position of a real-looking game (ply 30, 12 empty
cells). Keys and outcome bytes of the subtree are computed by the independent oracle
(c4table/testing/oracle.py, its memoised minimax of a subtree) under FORMAT.md's rules, and the column codes
are checked against the 111-row table printed in Cadot's README, so the keys are exactly those
of the published file.
"""
from __future__ import annotations

import hashlib
import json

import pyarrow.parquet as pq
import pytest

from c4table.table.sums import BlockSums

from c4table.testing import oracle
from c4table.game.board import Board, column_value
from c4table.errors import TableError
from c4table.builddir.manifest import Manifest
from c4table.builddir.records import TableRecord
from c4table.builddir.tableformat import DAT
from c4table.game.rules import Position
from c4table.open import open_table
from conftest import cadot_column_table, run_cli as run

GAME = "164322464443433371372222555716"  # ply 30, nobody has four, a draw in 12: 2,381 entries
W, H, K = 7, 6, 4
EMPTY_BOARD_BYTE = 0x40 | 41  # placeholder for key 0 (not asserted anywhere)


@pytest.fixture(scope="module")
def excerpt(tmp_path_factory):
    entries = oracle.solve_subtree(oracle.position_of_moves(W, GAME), W, H, K)
    entries[0] = (EMPTY_BOARD_BYTE, 0)
    d = tmp_path_factory.mktemp("t7x6")
    path = d / "connect4_7x6.dat"
    with open(path, "wb") as f:
        for key in sorted(entries):
            f.write(key.to_bytes(6, "big") + bytes([entries[key][0]]))
    # An excerpt is not Cadot's table: opened bare, it is refused as a truncated 7x6 table.
    # A manifest beside it records what it is (its size and hash), so it opens.
    with pytest.raises(TableError, match="known table 7x6"):
        open_table(path)
    data = path.read_bytes()
    m = Manifest.open_or_create(d, Board.parse("7x6"))
    m.record_table(TableRecord.of(DAT, path.name, len(entries),
                                  {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}))
    m.save()
    sums = BlockSums(7)   # its block checksums, as a build writes them
    sums.update(data)
    sums.write(path)
    return path, entries


def test_column_codes_match_cadots_readme():
    rows = cadot_column_table()
    assert len(rows) == 111
    b = Board.parse("7x6")
    assert [column_value(c) for c in b.columns] == [r[1] for r in rows]
    assert (b.base, b.key_bytes, b.entry_size) == (111, 6, 7)


def test_excerpt_shape(excerpt):
    path, entries = excerpt
    assert path.stat().st_size == 7 * len(entries) and len(entries) > 100
    with open_table(path) as t:
        assert t.entry_size == 7 and len(t) == len(entries)
        chunk = next(t.iter_entries(10))
        assert chunk.dtype.names == ("key", "outcome") and int(chunk["key"][0]) == 0
        keys = [int(k) for c in t.iter_entries(64) for k in c["key"]]
    assert keys == sorted(entries)


def test_lookup_and_best_agree_with_oracle(excerpt):
    path, entries = excerpt
    pos = Position.from_moves(Board.parse("7x6"), GAME)
    byte, _ = entries[pos.key()]
    code, out, err = run("lookup", "--json", "--table", str(path), GAME)
    assert code == 0, err
    obj = json.loads(out)
    assert (obj["ply"], obj["to_move"], obj["outcome"], obj["distance"]) == (30, "A", "draw", 12)
    assert obj["distance"] == byte & 0x3F
    assert obj["outcome"] == {0x00: "draw", 0x40: "A", 0x80: "B"}[byte & 0xC0]
    for m in obj["moves"]:  # every child answered from the excerpt, as the oracle says
        child = pos.child(m["column"] - 1)
        cb = entries[child.key()][0]
        assert m["distance"] == (cb & 0x3F) + 1
    code, out, err = run("best", "--json", "--table", str(path), GAME)
    assert code == 0, err
    best = json.loads(out)["best"]
    with open_table(path) as t:
        assert [m["column"] for m in best] == [m.column for m in t.best_moves(GAME)]
        assert best and all(m["outcome"] == obj["outcome"] for m in best)
        # the same position given as a drawing
        drawing = t.drawing(GAME, mark_best=False)
    code, out2, err = run("lookup", "--json", "--table", str(path), "--drawing", "-", stdin=drawing)
    assert code == 0, err
    obj2 = json.loads(out2)
    assert (obj2["outcome"], obj2["distance"], obj2["moves"]) == (obj["outcome"], obj["distance"], obj["moves"])
    assert Position.from_moves(Board.parse("7x6"), obj2["position"]).key() == pos.key()


def test_position_outside_excerpt_is_one_line_error(excerpt):
    path, _ = excerpt
    code, _, err = run("lookup", "--table", str(path), "4")
    assert code == 1 and err.count("\n") == 1 and "not in the table" in err


def test_verify_structure_ok_but_not_the_published_file(excerpt):
    path, _ = excerpt
    code, out, _ = run("verify", "-q", str(path))
    problems = [line for line in out.splitlines() if line.startswith("problem")]
    assert code == 1 and out.splitlines()[-1].startswith("MISMATCH")
    # the only complaint: it is not Cadot's published file (entries, bytes, hashes differ)
    assert len(problems) == 1 and "known table 7x6" in problems[0]
    assert "bytes" in problems[0] and "sha256" in problems[0]


@pytest.mark.slow
def test_stats_scan_and_export_on_excerpt(excerpt, tmp_path):
    path, entries = excerpt
    code, out, err = run("stats", str(path), "-q")
    assert code == 0, err
    rows = [line.split("\t") for line in out.splitlines()[1:]]
    per_ply = {int(r[0]): int(r[5]) for r in rows}
    for ply in range(43):
        assert per_ply[ply] == sum(1 for _, p in entries.values() if p == ply)
    out_file = tmp_path / "p33.parquet"
    code, out, err = run("export", "--table", str(path), "--ply", "33", "--out", str(out_file), "-q")
    assert code == 0, err
    t = pq.read_table(out_file).to_pylist()
    assert len(t) == per_ply[33]
    b = Board.parse("7x6")
    for row in t:
        p = Position.from_moves(b, row["moves"])
        assert p.key() == row["key"] and row["ply"] == 33
        assert entries[row["key"]][0] & 0x3F == row["distance"]
