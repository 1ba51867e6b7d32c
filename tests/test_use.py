"""Using the tables: drawings (parse, render, impossible ones), lookup --board and best, play
driven through stdin, stats against the manifest (and a PNG), parquet export read back and
checked against lookup; the Python API behind them."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import c4table
from c4table.game.board import Board
from c4table.game.drawing import parse_drawing, render
from c4table.errors import IllegalPositionError
from c4table.analysis.export import export_positions
from c4table.game.rules import Position
from c4table.analysis.stats import ply_stats
from c4table.table.probe import move_rank
from c4table.open import open_table
from conftest import random_positions, run_cli

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


run = run_cli


@pytest.fixture(scope="module")
def manifest54(d54):
    return json.loads((d54 / "manifest.json").read_text())


# ------------------------------------------------------------------------ drawings
def test_drawing_roundtrip_and_reconstructed_moves():
    b = Board.parse("5x4")
    for p in random_positions(b, 300):
        q = parse_drawing(render(p, marks=[1]), b)
        assert q.cols == p.cols and q.ply == p.ply and (q.winner is None) == (p.winner is None)
        assert Position.from_moves(b, q.move_string()).cols == p.cols


def test_drawing_accepts_x_o_spaces_and_infers_board():
    p = parse_drawing("# a comment\n| . . . . |\n| . . . . |\n| . o . . |\n| x x . . |\n")
    assert p.board == Board(4, 4) and p.ply == 3 and p.cols[1] == [1, 2]


@pytest.mark.parametrize("text, words", [
    (".....\n..A..\n.....\n..B..", "floating chip"),
    (".....\n.....\n.....\nAA...", "chip counts"),
    ("AB...\nAB...\nAB...\nAB...", "both A and B"),
    (".....\n.B...\n.B..B\nAAAAB", "A has 4 in a row but B moved last"),
    ("A....\nA....\nB....\nB....", "cannot arise"),           # B's chips under A's: no order
    ("....\n....\n....\n....", "drawing is 4 columns"),
    (".....\n.....\n.....\n..Z..", "bad character"),
])
def test_impossible_drawings(text, words):
    with pytest.raises(IllegalPositionError, match=words):
        parse_drawing(text, Board.parse("5x4"))


def test_line_must_end_with_last_move():
    # A moved last and has two separate lines: no single last chip ends both
    with pytest.raises(IllegalPositionError, match="cannot arise.*every 4-in-a-row"):
        parse_drawing(".........\n.........\nBBB..BBB.\nAAAABAAAA", Board(9, 4))


def test_bad_drawing_cli_one_line_exit_2(t54):
    code, out, err = run("lookup", "--table", str(t54), "--drawing", "-", stdin=".....\n..A..\n.....\n..B..\n")
    assert code == 2 and err.count("\n") == 1 and "floating chip" in err and "Traceback" not in err


# --------------------------------------------------------------------- lookup/best
def test_lookup_draw_flag_draws_and_marks_best(t54):
    code, out, err = run("lookup", "--table", str(t54), "3344", "--draw")
    assert code == 0, err
    lines = out.splitlines()
    assert "A wins in 3" in lines[0]
    pic = [x.strip() for x in lines[6:]]
    assert pic[:4] == [". . . . .", ". . . . .", ". . B B .", ". . A A ."]
    assert pic[4] == "1 2 3 4 5" and pic[5] == "*"  # column 2, the only best move
    code, out2, _ = run("lookup", "--table", str(t54), "--draw", "3344")
    assert code == 0 and out2 == out


@pytest.mark.parametrize("command", ["lookup", "best"])
def test_board_option_means_the_same_in_lookup_and_best(t54, tmp_path, command):
    """Issue 12 item 8: --board always takes the table's board (WxH); --draw draws."""
    other = tmp_path / "renamed.dat"
    other.symlink_to(t54)
    code, out, err = run(command, "--table", str(other), "--board", "5x4", "3344")
    assert code == 0 and out.startswith("3344  board 5x4"), err
    code, out, err = run(command, "--table", str(t54), "3344", "--board")
    assert code == 2 and err.startswith("c4table: error:") and "--board" in err
    code, out, err = run(command, "--table", str(t54), "--board", "5y4", "3344")
    assert code == 2 and "--draw" in err and err.count("\n") == 1


def test_lookup_and_best_accept_drawings(t54):
    drawing = ".....\n.....\n..B..\n.AAB.\n"
    with open_table(t54) as t:
        via_moves = t.probe(parse_drawing(drawing, t.board).move_string())
        assert t.probe(drawing).moves == via_moves.moves
    code, out, err = run("best", "--json", "--table", str(t54), "--drawing", "-", stdin=drawing)
    assert code == 0, err
    obj = json.loads(out)
    assert [m["column"] for m in obj["best"]] == [m.column for m in via_moves.best_moves()]
    assert obj["position"] == via_moves.position


def test_best_ranks_fastest_win_draw_slowest_loss(t54):
    with open_table(t54) as t:
        for p in random_positions(t.board, 150, seed=3):
            probe = t.probe(p)
            best = probe.best_moves()
            if probe.terminal:
                assert best == []
                continue
            ranks = sorted(move_rank(m, probe.to_move) for m in probe.moves)
            assert {move_rank(m, probe.to_move) for m in best} == {ranks[0]}
            wins = [m.distance for m in probe.moves if m.outcome == probe.to_move]
            if wins:
                assert best[0].distance == min(wins)
            elif not any(m.outcome == "draw" for m in probe.moves):
                assert best[0].distance == max(m.distance for m in probe.moves)
            # the position's value is its best move's
            assert (best[0].outcome, best[0].distance) == (probe.outcome, probe.distance)
            assert t.wdl(p) == (0 if probe.outcome == "draw" else 1 if probe.outcome == probe.to_move else -1)


def test_best_cli_text_and_errors(t54):
    code, out, err = run("best", "--table", str(t54), "3344", "")
    assert code == 0, err
    assert out.splitlines()[0] == \
        "3344  board 5x4, ply 4, A to move: A wins in 3 plies; best: 2 (A wins in 3 plies)"
    assert "best: 2, 3, 4 (draw in 20 plies)" in out.splitlines()[1]
    code, _, err = run("best", "--table", str(t54), "66")
    assert code == 2 and err.count("\n") == 1


# ----------------------------------------------------------------------------- play
def test_play_through_stdin_against_perfect_play(t54):
    moves = "h\n9\n" + "1\n2\n3\n4\n5\n" * 12   # hint, a bad column, then whatever is legal
    code, out, err = run("play", "--table", str(t54), "--side", "B", stdin=moves)
    assert code == 0, err
    assert "Game over:" in out and "Traceback" not in err
    assert "type a column 1-5" in out and "*best" in out
    comp = [x for x in out.splitlines() if "(computer) plays" in x]
    mine = [x for x in out.splitlines() if "(you) plays" in x]
    assert comp and mine and all(" in " in x or x.endswith("has won") for x in comp + mine)
    assert " in 0 pl" not in out
    # the empty 5x4 board is a draw: perfect play as A never loses to arbitrary moves
    assert "Game over: B wins" not in out
    # every computer move is optimal: replay the game and check it with the table
    b = Board.parse("5x4")
    seq = [int(x.split("plays ")[1].split(":")[0]) for x in out.splitlines() if " plays " in x]
    with open_table(t54) as t:
        pos = Position(b)
        for col in seq:
            if pos.to_move == "A":
                assert col in [m.column for m in t.probe(pos).best_moves()]
            pos = pos.child(col - 1)
        assert pos.is_terminal


def test_play_quit_undo_and_eof(t54):
    code, out, _ = run("play", "--table", str(t54), "--side", "A", stdin="3\nu\nu\nq\n")
    assert code == 0 and "undone." in out and "nothing to undo." in out and "bye." in out
    code, out, _ = run("play", "--table", str(t54), "--side", "A", stdin="")
    assert code == 0 and "end of input" in out


# ---------------------------------------------------------------------------- stats
def test_stats_equal_manifest_and_scan(d54, t54, manifest54):
    code, out, err = run("stats", str(d54))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split("\t") == ["ply", "won_by_A", "drawn", "lost_by_A", "positions", "entries", "finished"]
    rows = [list(map(int, x.split("\t"))) for x in lines[1:]]
    for row, rec in zip(rows, manifest54["plies"], strict=True):
        assert row == [rec["ply"], rec["a_wins"], rec["draws"], rec["b_wins"], rec["positions"],
                       rec["entries"], rec["terminal"]]
    assert sum(r[4] for r in rows) == 3_945_711  # Böck's Table 1 for 5x4
    assert ply_stats(t54, scan=True) == ply_stats(d54)


def test_stats_won_column_counts_the_first_players_wins(d54, t54):
    """``won_by_A`` / ``lost_by_A`` count positions A wins / loses, whoever is to move: at plies 1
    and 2 (B and A to move), the outcomes lookup gives every position, mirror images counted."""
    code, out, _ = run("stats", str(d54))
    rows = {int(x.split("\t")[0]): x.split("\t") for x in out.splitlines()[1:]}
    for ply in (1, 2):
        games = [str(a) + (str(b) if ply == 2 else "") for a in range(1, 6) for b in range(1, 6)]
        games = sorted(set(games))
        code, out, _ = run("lookup", "--json", "--table", str(t54), *games)
        outcomes = [json.loads(x)["outcome"] for x in out.splitlines()]
        assert code == 0 and len(outcomes) == 5 ** ply
        assert [int(v) for v in rows[ply][1:4]] == [outcomes.count("A"), outcomes.count("draw"),
                                                    outcomes.count("B")], ply


def test_stats_markdown_and_png(d54, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "wdl.png"
    code, out, err = run("stats", str(d54), "--format", "markdown", "--png", str(png))
    assert code == 0, err
    assert out.splitlines()[0].startswith("| ply | won_by_A | drawn | lost_by_A |") and out.splitlines()[-1].startswith("| total | ")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    import matplotlib.image
    img = matplotlib.image.imread(png)
    assert img.shape[0] > 100 and img.shape[1] > 100


def test_stats_missing_path(tmp_path):
    code, _, err = run("stats", str(tmp_path / "nope"))
    assert code == 2 and err.count("\n") == 1


# --------------------------------------------------------------------------- export
def test_export_ply_read_back_and_checked_against_lookup(t54, manifest54, tmp_path):
    out = tmp_path / "ply8.parquet"
    code, msg, err = run("export", "--table", str(t54), "--ply", "8", "--out", str(out))
    assert code == 0, err
    table = pq.read_table(out)
    b = Board.parse("5x4")
    cells = [f"{c}{r}" for c in "abcde" for r in range(1, 5)]
    assert table.column_names == cells + ["ply", "moves", "outcome", "distance", "terminal", "key"]
    rows = table.to_pylist()
    assert len(rows) == manifest54["plies"][8]["entries"]
    assert sum(r["terminal"] for r in rows) == manifest54["plies"][8]["terminal_entries"]
    with open_table(t54) as t:
        for r in rows[::7]:
            p = Position.from_moves(b, r["moves"])
            assert p.key() == r["key"] and p.ply == r["ply"] == 8 and p.is_terminal == r["terminal"]
            assert [r[f"{'abcde'[c]}{h + 1}"] for c in range(5) for h in range(4)] == \
                   [p.cell(c, h) for c in range(5) for h in range(4)]
            probe = t.probe(r["moves"])
            assert (probe.outcome, probe.distance) == (r["outcome"], r["distance"])


def test_export_mirror_nonterminal_and_sources_agree(t54, manifest54, tmp_path):
    rec = manifest54["plies"][11]
    a = export_positions(t54, tmp_path / "a.parquet", 11, mirror=True)
    assert a.rows == rec["positions"] and a.source == "shards"
    t = pq.read_table(tmp_path / "a.parquet").to_pylist()
    b = Board.parse("5x4")
    for r in t[::11]:
        p = Position.from_moves(b, r["moves"])
        assert p.key() == r["key"]
        first = [p.cell(c, 0) for c in range(5)]
        assert first == [r[f"{x}1"] for x in "abcde"]
    assert sum(r["mirrored"] for r in t) == rec["entries"] - rec["symmetric"]
    n = export_positions(t54, tmp_path / "n.parquet", 11, nonterminal=True, source="table")
    assert n.rows == rec["entries"] - rec["terminal_entries"] and n.source == "table"
    s = export_positions(t54, tmp_path / "s.parquet", 11, nonterminal=True, source="shards")
    assert s.rows == n.rows and s.source == "shards"
    # same rows either way (move strings may differ: any order reaching the position will do)
    cols = [c for c in pq.read_table(tmp_path / "n.parquet").column_names if c != "moves"]
    assert pq.read_table(tmp_path / "n.parquet", columns=cols).equals(
        pq.read_table(tmp_path / "s.parquet", columns=cols))


def test_export_all_plies_readable_by_pandas_polars_duckdb(built, tmp_path):
    t44 = built("4x4") / "connect4_4x4.dat"
    out = tmp_path / "all44.parquet"
    code, msg, err = run("export", "--table", str(t44), "--out", str(out), "-q")
    assert code == 0, err
    assert pq.ParquetFile(out).metadata.num_rows == 80_541
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(out)
    assert len(df) == 80_541 and df["key"].is_unique and set(df["outcome"]) == {"A", "B", "draw"}
    assert (df["ply"] == df["moves"].str.len()).all()
    pl = pytest.importorskip("polars")
    assert pl.read_parquet(out).filter(pl.col("ply") == 0)["distance"].to_list() == [16]
    duckdb = pytest.importorskip("duckdb")
    n = duckdb.sql(f"select count(*) from '{out}' where terminal").fetchall()[0][0]
    assert n == sum(p["terminal_entries"] for p in json.loads((t44.parent / "manifest.json").read_text())["plies"])


def test_export_bad_ply(t54, tmp_path):
    code, _, err = run("export", "--table", str(t54), "--ply", "21", "--out", str(tmp_path / "x.parquet"))
    assert code == 2 and err.count("\n") == 1


# ----------------------------------------------------------------------- Python API
def test_python_api(t54):
    with c4table.open_table(t54) as t:
        assert sum(len(c) for c in t.iter_entries(100_000)) == len(t)
        assert t.probe("3344").best_moves()[0].column == 2
        assert t.best_moves(".....\n.....\n..BB.\n..AA.")[0].column == 2
        assert "*" in t.drawing("3344")
    with pytest.raises(c4table.MissingTableError):
        c4table.open_table(t54.parent / "connect4_9x1.dat")
