"""Self-checks of the independent oracle (c4table/testing/oracle.py) against published figures only."""

from __future__ import annotations

import hashlib

import pytest

from c4table.testing import oracle
from conftest import cadot_column_table, published_tables, published_totals


@pytest.mark.slow
def test_4x4_file_matches_published():
    data = oracle.oracle_bytes(4, 4)
    assert oracle.key_bytes(4, 4) == 3
    ref = published_tables()["4x4"]
    assert len(data) == int(ref["bytes"]) == 322_164
    assert len(data) // 4 == int(ref["entries"])
    assert hashlib.sha256(data).hexdigest() == ref["sha256"]


def test_h6_column_list_matches_cadot_readme():
    rows = cadot_column_table()
    assert len(rows) == 111
    assert [r[0] for r in rows] == list(range(111))
    # internal consistency of the README table itself
    for _, value, ternary, top_to_bottom in rows:
        assert int(ternary, 3) == value
        assert top_to_bottom == ternary.replace("0", ".").replace("1", "A").replace("2", "B")
    assert list(oracle.column_values(6)) == [r[1] for r in rows]


def test_column_counts_and_nesting():
    expected = {1: 3, 2: 7, 3: 15, 4: 31, 5: 59, 6: 111, 7: 207}
    for h, n in expected.items():
        assert len(oracle.column_values(h)) == n
    for h in range(1, 7):
        assert list(oracle.column_values(h + 1)[: len(oracle.column_values(h))]) == list(
            oracle.column_values(h)
        )


@pytest.mark.slow
@pytest.mark.parametrize("w,h", [(3, 3), (4, 3), (3, 4), (4, 4)])
def test_totals_with_mirror_images_match_bock(w, h):
    rows = oracle.oracle_ply_counts(w, h)
    total = sum(r["positions"] for r in rows)
    assert total == published_totals()[(w, h)]
    entries = sum(r["entries"] for r in rows)
    assert entries == len(oracle.oracle_table(w, h))
    for r in rows:
        assert r["a_wins"] + r["draws"] + r["b_wins"] == r["positions"]
        assert r["entries"] <= r["positions"] <= 2 * r["entries"]
        assert r["terminal"] <= r["positions"]


def test_key_examples_4x4():
    assert oracle.oracle_key(4, 4, "") == 0
    table = oracle.oracle_table(4, 4)
    assert next(iter(sorted(table))) == 0
    # mirror images share a key
    assert oracle.oracle_key(4, 4, "1") == oracle.oracle_key(4, 4, "4")
    assert oracle.oracle_key(4, 4, "12") == oracle.oracle_key(4, 4, "43")
    # one A chip in the edge column: code 1 in the last digit read right-to-left -> key 1
    assert oracle.oracle_key(4, 4, "1") == 1
    # A stacks four in column 1 (moves 1212121): A wins, terminal, d = 0
    key = oracle.oracle_key(4, 4, "1212121")
    assert table[key] == 0x40
    for moves in ("", "1", "12", "1212121"):
        assert oracle.oracle_key(4, 4, moves) in table
