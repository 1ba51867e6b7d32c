"""Tests of BDD mode (c4table.bdd, c4table.cli.bdd) against independent evidence:

* Table 1 of Böck's paper (``c4table/data/bock_table1.tsv``, read by conftest) for small boards;
* the independent brute-force oracle (c4table/testing/oracle.py: every position of small boards, per
  ply, with mirror images; terminal positions; won/drawn/lost by plain minimax);
* the CLI's JSON shape, exit statuses and the crosscheck contract.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from c4table.testing import oracle
from c4table.bdd import count_positions, solve
from c4table.game.board import Board
from c4table.cli.bdd import bdd, crosscheck
from c4table.builddir.manifest import Manifest
from conftest import published_totals, run_cli


# --------------------------------------------------------------------------- brute force
@lru_cache(maxsize=None)
def brute(w: int, h: int, k: int = 4) -> list[dict]:
    """Per ply: positions, terminal (the last mover has k in a row: Böck's meaning, without
    the full-board draws) and won/drawn/lost from the first player's view, from the
    independent brute-force oracle (c4table/testing/oracle.py: every position, plain minimax)."""
    return [{"ply": r["ply"], "positions": r["positions"], "terminal": r["line_terminal"],
             "won": r["a_wins"], "drawn": r["draws"], "lost": r["b_wins"]}
            for r in oracle.oracle_ply_counts(w, h, k)]


def table1() -> dict[str, int]:
    return {f"{w}x{h}": n for (w, h), n in published_totals().items()}


def project(plies, fields=("ply", "positions", "terminal", "won", "drawn", "lost")):
    return [{f: (p[f] if isinstance(p, dict) else getattr(p, f)) for f in fields} for p in plies]


# ------------------------------------------------------------------------- the library
@pytest.mark.parametrize("board", ["1x1", "1x6", "2x1", "2x3", "3x3", "4x2", "3x4", "4x4",
                                   "6x2", "5x3", "5x4", "4x5"])
def test_totals_match_bock_table1(board):
    assert count_positions(board).total == table1()[board]


@pytest.mark.parametrize("board", ["2x3", "4x4"])
def test_plain_encoding_totals_match_table1(board):
    assert count_positions(board, "plain").total == table1()[board]


@pytest.mark.slow
@pytest.mark.parametrize("board", ["3x3", "4x3", "3x4", "4x4", "5x3"])
@pytest.mark.parametrize("encoding", ["compressed", "plain"])
def test_solve_matches_brute_force(board, encoding):
    w, h = map(int, board.split("x"))
    assert project(solve(board, encoding).plies) == project(brute(w, h))


def test_count_matches_brute_force_per_ply():
    fields = ("ply", "positions", "terminal")
    assert project(count_positions("4x3").plies, fields) == project(brute(4, 3), fields)


@pytest.mark.parametrize("variant", [dict(flavour="bcdd"), dict(terminal="lines"),
                                     dict(partitioned=True), dict(threads=2),
                                     dict(encoding="plain", flavour="bcdd", terminal="lines")])
@pytest.mark.slow
def test_engine_variants_agree(variant):
    assert project(solve("4x4", **variant).plies) == project(brute(4, 4))


def test_small_node_capacity_collects_garbage_and_stays_exact():
    s = solve("4x4", nodes=64_000)       # needs several collections (and retries) to finish
    assert s.stats["gc_runs"] > 0
    assert project(s.plies) == project(brute(4, 4))


def test_encodings_agree_on_5x4():
    fields = ("ply", "positions", "terminal", "nodes")
    a, b = count_positions("5x4"), count_positions("5x4", "plain")
    assert project(a.plies, fields[:3]) == project(b.plies, fields[:3])
    assert a.total == b.total == table1()["5x4"]


@pytest.mark.slow
def test_solution_is_consistent_with_counts():
    s = solve("4x5")
    c = count_positions("4x5")
    assert project(s.plies, ("ply", "positions", "terminal")) == \
        project(c.plies, ("ply", "positions", "terminal"))
    assert s.total == table1()["4x5"]
    for p in s.plies:
        assert p.won + p.drawn + p.lost == p.positions
        if p.ply % 2:      # terminal positions at odd plies are first-player wins
            assert p.won >= p.terminal
        else:
            assert p.lost >= p.terminal


# ------------------------------------------------------------------------------ the CLI
def test_cli_count_json_shape():
    r = CliRunner().invoke(bdd, ["count", "4x4", "--json", "-q"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output)
    assert list(obj) == ["board", "total", "plies"]
    assert obj["board"] == "4x4" and obj["total"] == 161029
    assert [p["ply"] for p in obj["plies"]] == list(range(17))
    assert obj["plies"][0] == {"ply": 0, "positions": 1, "won_games": 0,
                               "nodes": obj["plies"][0]["nodes"]}
    assert all(set(p) == {"ply", "positions", "won_games", "nodes"} for p in obj["plies"])


def test_cli_solve_json_shape_and_values():
    r = CliRunner().invoke(bdd, ["solve", "4x3", "--json", "--encoding", "plain", "-q"])
    assert r.exit_code == 0, r.output
    obj = json.loads(r.output)
    assert list(obj) == ["board", "total", "plies"]
    assert all(list(p) == ["ply", "positions", "won_games", "nodes", "won", "drawn", "lost"]
               for p in obj["plies"])
    for p in obj["plies"]:
        p["terminal"] = p.pop("won_games")
    assert project(obj["plies"]) == project(brute(4, 3))
    assert obj["total"] == sum(p["positions"] for p in brute(4, 3))


def test_cli_human_output_and_progress():
    r = CliRunner().invoke(bdd, ["solve", "3x3"])
    assert r.exit_code == 0
    assert "total 869 positions" in r.stdout and "elapsed" in r.stdout
    assert "forward  ply   9" in r.stderr and "backward ply   0" in r.stderr


@pytest.mark.parametrize("spec", ["7by6", "0x4", "4x0", "9x9", "x", "3x-4", "", "7x6x2"])
@pytest.mark.parametrize("sub", ["count", "solve"])
def test_cli_bad_board_exits_2(sub, spec):
    r = CliRunner().invoke(bdd, [sub, spec, "-q"])
    assert r.exit_code == 2
    assert isinstance(r.exception, SystemExit)            # no traceback
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("c4table: error:")


def test_cli_usage_errors_exit_2():
    assert CliRunner().invoke(bdd, ["count"]).exit_code == 2          # no board
    assert CliRunner().invoke(bdd, ["count", "-3x4"]).exit_code == 2  # looks like an option


def test_cli_node_capacity_exhausted_exits_1():
    r = CliRunner().invoke(bdd, ["count", "5x4", "--bdd-nodes", "4096", "-q"])
    assert r.exit_code == 1
    assert "--bdd-nodes" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_cli_bad_node_option_exits_2():
    assert CliRunner().invoke(bdd, ["count", "4x4", "--bdd-nodes", "lots"]).exit_code == 2


# ----------------------------------------------------------------------- crosscheck
def write_manifest(tmp_path: Path, w: int, h: int, wdl: bool = True, tweak=None) -> Path:
    """A manifest in the explicit pipeline's shape, from the brute-force enumeration."""
    plies = []
    for row in brute(w, h):
        p = {"ply": row["ply"], "positions": row["positions"], "terminal": row["terminal"]}
        if wdl:
            p.update(a_wins=row["won"], draws=row["drawn"], b_wins=row["lost"])
        plies.append(p)
    for (ply, field), value in (tweak or {}).items():
        plies[ply][field] = value
    d = tmp_path / f"{w}x{h}"
    d.mkdir()
    m = Manifest.open_or_create(d, Board(w, h))   # a real manifest, with its own checksum
    for p in plies:
        m.set_counts(p.pop("ply"), **p)
    m.save()
    return d


def test_crosscheck_equal_exits_0(tmp_path):
    d = write_manifest(tmp_path, 4, 4)
    r = CliRunner().invoke(crosscheck, [str(d), "-q"])
    assert r.exit_code == 0, r.output
    assert "OK" in r.stdout and "MISMATCH" not in r.stdout
    r = CliRunner().invoke(crosscheck, [str(d / "manifest.json"), "-q", "--encoding", "plain"])
    assert r.exit_code == 0, r.output


def test_crosscheck_mismatch_exits_1(tmp_path):
    good = brute(4, 3)[7]
    d = write_manifest(tmp_path, 4, 3, tweak={(7, "a_wins"): good["won"] + 1,
                                              (5, "positions"): 1})
    r = CliRunner().invoke(crosscheck, [str(d), "-q"])
    assert r.exit_code == 1
    assert f"ply 7: won: bdd {good['won']}, table {good['won'] + 1}" in r.stdout
    assert f"ply 5: positions: bdd {brute(4, 3)[5]['positions']}, table 1" in r.stdout
    assert r.stdout.strip().splitlines()[-1].startswith("crosscheck 4x3: MISMATCH")


def test_crosscheck_without_wdl_compares_counts_only(tmp_path):
    d = write_manifest(tmp_path, 4, 3, wdl=False)
    r = CliRunner().invoke(crosscheck, [str(d), "-q"])
    assert r.exit_code == 0, r.output
    assert "positions and won_games only" in r.stdout


def test_crosscheck_accepts_full_board_draws_counted_as_terminal(tmp_path):
    last = brute(4, 3)[12]
    d = write_manifest(tmp_path, 4, 3, tweak={(12, "terminal"): last["positions"]})
    r = CliRunner().invoke(crosscheck, [str(d), "-q"])
    assert r.exit_code == 0, r.output
    assert "full-board draws" in r.stdout


@pytest.mark.slow
def test_crosscheck_missing_manifest_exits_2_damaged_exits_1(tmp_path):
    assert CliRunner().invoke(crosscheck, [str(tmp_path / "nope")]).exit_code == 2
    m = tmp_path / "manifest.json"
    for text in ("{not json", json.dumps({"board": "7by6", "plies": []}), "[]"):
        m.write_text(text)
        code, out, err = run_cli("crosscheck", str(tmp_path), "-q")
        assert code == 1 and out == "" and err.count("\n") == 1 and str(m) in err, err
