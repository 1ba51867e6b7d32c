"""Connect-k (``--connect K``): tables for K in a row, against independent evidence.

* the brute-force oracle (c4table/testing/oracle.py, no code shared with c4table) entry by entry on the
  boards of up to 16 cells for K = 3 and 5;
* Sidney Cadot's column counts (the table in his ``number_of_possible_columns.h``) and the
  sha256 of tables his own generator wrote (``tools/compare/cadot_compare.py``; tests/data);
* BDD mode (its own rules and encoding) per ply on 5x4, 4x5, 5x5 (K = 3) and 5x4 (K = 5);
* the TLA+ model of the small engine's write-up (4x4, K = 3), enumerated here state by state;
* the published K = 4 game values of small boards (John Tromp, Christophe Steininger);
* the quiet-position selection: 67,557 positions at ply 8 of 7x6 (John Tromp's 8-ply set).
"""
from __future__ import annotations

import hashlib
import json
import shutil
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from c4table.game.board import Board
from c4table.errors import BoardError
from c4table.pipeline.stages.build import build_table
from conftest import run_cli
from c4table.testing.oracle import oracle_bytes, oracle_ply_counts

DATA = json.loads((Path(__file__).parent / "data" / "connectk_sources.json").read_text())

# ----------------------------------------------------------------- boards of up to 16 cells
# Oracle time on the development machine (pure Python, ~100 us per position) decides the tier:
# FAST runs in both tiers (make check too); SLOW (a few seconds each) and FULL (10-25 s each on
# a loaded machine) are marked slow: make test and CI run them, make check does not. Boards the oracle cannot enumerate in time (8x2, and 13x1 ..
# 16x1, millions of positions) are compared with BDD mode instead (BDD_ONLY).
ALL_SMALL = {k: sorted((w, h) for w in range(1, 17) for h in range(1, 17)
                       if w * h <= 16 and max(w, h) >= k) for k in (3, 5)}
SLOW = {(4, 4, 3), (6, 2, 3), (10, 1, 3), (1, 16, 3), (1, 16, 5), (3, 5, 5), (2, 8, 5),
        (1, 13, 3), (1, 14, 3), (1, 15, 3), (1, 13, 5), (1, 14, 5), (1, 15, 5),
        (10, 1, 5), (11, 1, 5)}
FULL = {(5, 3, 3), (7, 2, 3), (11, 1, 3), (12, 1, 3), (5, 3, 5), (7, 2, 5), (12, 1, 5)}
BDD_ONLY = {(w, h, k) for k in (3, 5) for (w, h) in [(8, 2), (13, 1), (14, 1), (15, 1), (16, 1)]}


def _oracle_params():
    out = []
    for k, boards in ALL_SMALL.items():
        for w, h in boards:
            spec = (w, h, k)
            if spec in BDD_ONLY:
                continue
            marks = [pytest.mark.slow] if spec in SLOW | FULL else []
            out.append(pytest.param(w, h, k, marks=marks, id=f"{w}x{h}k{k}"))
    return out


def test_tiers_cover_every_small_board():
    listed = {(w, h, k) for k, boards in ALL_SMALL.items() for w, h in boards}
    assert SLOW | FULL | BDD_ONLY <= listed
    assert len(listed) == 46 + 34   # K = 3: 46 boards, K = 5: 34 boards (K <= max(w, h))


@pytest.mark.parametrize("w,h,k", _oracle_params())
def test_every_entry_equals_oracle(tmp_path, w, h, k):
    path = build_table(Board(w, h, k), tmp_path, quiet=True, workers=1)
    assert path.name == f"connect{k}_{w}x{h}.dat"
    assert path.read_bytes() == oracle_bytes(w, h, k)


@pytest.mark.slow
@pytest.mark.parametrize("w,h,k", sorted(BDD_ONLY), ids=lambda v: str(v))
def test_boards_beyond_the_oracle_agree_with_bdd(tmp_path, w, h, k):
    from c4table.bdd import solve
    from c4table.bdd.crosscheck import compare
    from c4table.builddir.reader import BuildDir
    board = Board(w, h, k)
    build_table(board, tmp_path, quiet=True, workers=1)
    res = compare(solve(board), BuildDir.load(tmp_path).ply_counts())
    assert res.ok and res.compared > 0, [str(d) for d in res.diffs]


@pytest.mark.parametrize("w,h,k", [(3, 4, 3), (4, 3, 3), (2, 6, 5), (6, 1, 5)])
def test_per_ply_counts_equal_oracle(tmp_path, w, h, k):
    build_table(Board(w, h, k), tmp_path, quiet=True, workers=1)
    plies = json.loads((tmp_path / "manifest.json").read_text())["plies"]
    ref = oracle_ply_counts(w, h, k)
    assert len(plies) == len(ref)
    for mine, theirs in zip(plies, ref):
        for field in ("positions", "entries", "terminal", "a_wins", "draws", "b_wins"):
            assert mine[field] == theirs[field], (mine["ply"], field)


# ------------------------------------------------------------------------ Cadot's format
def test_column_counts_equal_cadots_table():
    """N(q, n) from the table printed in Cadot's number_of_possible_columns.h, and his recurrence
    (N = 2^(n+1) - 1 for n <= q, else the sum of N(q, n-q+1 .. n-1) + q + 2) beyond it."""
    table = DATA["cadot_column_counts"]
    for n, row in table["rows"].items():
        for q, count in zip(table["q"], row):
            w = max(q, 1)
            if w * (int(n) + 1) <= 64 and int(n) >= 1:
                assert Board(w, int(n), q).base == count, (q, n)

    @lru_cache(maxsize=None)
    def cadot(q, n):
        return (2 << n) - 1 if n <= q else sum(cadot(q, a) for a in range(n - q + 1, n)) + q + 2

    for q in range(2, 8):
        for n in range(max(1, q - 3), min(64 // q, 15)):   # 2**15 stacks: fast enough
            assert Board(q, n, q).base == cadot(q, n), (q, n)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


CADOT = {t["file"]: t for t in DATA["cadot_generator"]["tables"]}


@pytest.fixture(scope="module")
def built_k(tmp_path_factory):
    """``built_k("5x4", 3)`` -> build directory, built once per module."""
    cache: dict = {}

    def get(spec: str, k: int) -> Path:
        if (spec, k) not in cache:
            d = tmp_path_factory.mktemp(f"k{k}_{spec}")
            build_table(Board.parse(spec, k), d, quiet=True, workers=2)
            cache[spec, k] = d
        return cache[spec, k]
    return get


@pytest.mark.parametrize("spec,k", [("4x4", 3), ("4x5", 3), ("5x4", 3), ("3x5", 5), ("5x4", 5),
                                    pytest.param("5x5", 3, marks=pytest.mark.slow)])
def test_bytes_equal_cadots_generator(built_k, spec, k):
    name = f"connect{k}_{spec}.dat"
    path = built_k(spec, k) / name
    assert path.stat().st_size == CADOT[name]["bytes"]
    assert _sha(path) == CADOT[name]["sha256"]


# ------------------------------------------------------------------------------ BDD mode
@pytest.mark.parametrize("spec,k", [("5x4", 3), ("4x5", 3), ("5x4", 5),
                                    pytest.param("5x5", 3, marks=pytest.mark.slow)])
@pytest.mark.slow
def test_bdd_agrees_with_table(built_k, spec, k):
    """Positions, terminal and won/drawn/lost per ply; through the CLI with --connect."""
    from c4table.cli.bdd import crosscheck
    d = built_k(spec, k)
    r = CliRunner().invoke(crosscheck, [str(d), "--connect", str(k), "--quiet"])
    assert r.exit_code == 0, r.output
    assert f"crosscheck {spec}k{k}: OK" in r.output and "won/drawn/lost" in r.output


def test_bdd_count_takes_connect():
    from c4table.cli.bdd import bdd
    r = CliRunner().invoke(bdd, ["solve", "4x3", "--connect", "3", "--json", "--quiet"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    ref = oracle_ply_counts(4, 3, 3)
    assert [p["positions"] for p in got["plies"]] == [p["positions"] for p in ref]
    assert [(p["won"], p["drawn"], p["lost"]) for p in got["plies"]] == \
        [(p["a_wins"], p["draws"], p["b_wins"]) for p in ref]


def test_crosscheck_refuses_another_connect(built_k):
    from c4table.cli.bdd import crosscheck
    r = CliRunner().invoke(crosscheck, [str(built_k("4x4", 3)), "--connect", "4", "--quiet"])
    assert r.exit_code == 2 and "connect length 3" in r.output


# ----------------------------------------------------------------- the TLA+ model (4x4, K=3)
def tla_states(width: int = 4, height: int = 4, length: int = 3) -> dict:
    """Every reachable state ``(board, player, winner)`` of the write-up's TLA+ module Connect4,
    enumerated as its Init and Next say: either player may start, ``Move(col)`` fills the lowest
    empty cell (row ``BoardHeight`` is the bottom), switches the player and sets ``winner`` when
    a line of ``WinningLength`` exists; no move once there is a winner. Returns state -> its
    successors. ``board`` is a tuple of rows (row 1 first), cells "empty", "red", "yellow"."""
    players = ("red", "yellow")

    lines = [[(r + i * dr, c + i * dc) for i in range(length)]
             for r in range(height) for c in range(width)
             for dr, dc in ((0, 1), (1, 0), (1, 1), (-1, 1))]
    lines = [ln for ln in lines if all(0 <= rr < height and 0 <= cc < width for rr, cc in ln)]
    through = {(r, c): [ln for ln in lines if (r, c) in ln]
               for r in range(height) for c in range(width)}

    def has_line(b, p, cell):
        """A line of ``p`` through ``cell``: before the move nobody had one (winner "none"), so
        any line on the new board contains the chip just placed, which is ``p``'s."""
        return any(all(b[rr][cc] == p for rr, cc in ln) for ln in through[cell])

    empty = tuple(("empty",) * width for _ in range(height))
    todo = [(empty, p, "none") for p in players]
    graph: dict = {}
    while todo:
        s = todo.pop()
        if s in graph:
            continue
        board, player, winner = s
        succ = []
        if winner == "none":
            for col in range(width):
                rows = [r for r in range(height) if board[r][col] == "empty" and
                        (r == height - 1 or board[r + 1][col] != "empty")]
                if not rows:
                    continue
                r = rows[0]
                nb = tuple(tuple(player if (rr, cc) == (r, col) else board[rr][cc]
                                 for cc in range(width)) for rr in range(height))
                won = player if has_line(nb, player, (r, col)) else "none"
                succ.append((nb, "yellow" if player == "red" else "red", won))
        graph[s] = succ
        todo.extend(succ)
    return graph


def tla_value(graph: dict, start) -> tuple[str, int]:
    """Minimax over the enumerated states: ("first"/"second"/"draw", plies to it)."""

    @lru_cache(maxsize=None)
    def value(s):  # (score for the player to move: 1 win, 0 draw, -1 loss; plies)
        if s[2] != "none":
            return (-1, 0)         # the player who just moved won
        if not graph[s]:
            return (0, 0)          # full board
        best = None
        for t in graph[s]:
            sc, d = value(t)
            cand = (-sc, d + 1)
            key = (cand[0], -cand[1] if cand[0] == 1 else cand[1])
            if best is None or key > best[0]:
                best = (key, cand)
        return best[1]

    sc, d = value(start)
    return ({1: "first", 0: "draw", -1: "second"}[sc], d)


@pytest.mark.slow
def test_tla_model_states_and_value(built_k):
    graph = tla_states()
    d = built_k("4x4", 3)
    man = json.loads((d / "manifest.json").read_text())
    positions = sum(p["positions"] for p in man["plies"])
    # the model lets either colour start: each of our positions is two states of the model
    assert len(graph) == 2 * positions
    empty = next(s for s in graph if s[1] == "red" and all(c == "empty" for row in s[0] for c in row))
    outcome, distance = tla_value(graph, empty)
    from c4table.open import open_table
    with open_table(d / "connect3_4x4.dat") as t:
        p = t.probe("")
    assert (outcome, distance) == ({"A": "first", "B": "second", "draw": "draw"}[p.outcome], p.distance)


# -------------------------------------------------------------- published K = 4 game values
@pytest.mark.parametrize("row", [
    pytest.param(r, id=r["board"],
                 marks=[pytest.mark.slow] if r["board"] in ("6x4", "5x5", "4x6") else [])
    for r in DATA["known_values_k4"]["boards"] if r["board"] in ("4x4", "5x4", "4x5", "4x6", "6x4", "5x5")])
@pytest.mark.slow
def test_known_game_values(built, row):
    from c4table.open import open_table
    d = built(row["board"])
    with open_table(d / f"connect4_{row['board']}.dat") as t:
        p = t.probe("")
    assert (p.outcome, p.distance) == (row["outcome"], row["distance"])


# --------------------------------------------------------------------------- CLI, readers
@pytest.mark.slow
def test_cli_build_names_table_and_readers_take_k(tmp_path):
    from c4table.cli.main import cli
    r = CliRunner().invoke(cli, ["build", "--connect", "3", "4x3", "--out", str(tmp_path / "b"),
                                 "--quiet", "--workers", "1"])
    assert r.exit_code == 0, r.output
    table = tmp_path / "b" / "connect3_4x3.dat"
    assert table.read_bytes() == oracle_bytes(4, 3, 3)
    man = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert man["k"] == 3 and man["table"]["file"] == "connect3_4x3.dat"
    # no manifest beside it: K comes from the file name; --board WxH takes it too
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(table, alone / table.name)
    for extra in ([], ["--board", "4x3"]):
        r = CliRunner().invoke(cli, ["lookup", "--json", "--table", str(alone / table.name),
                                     *extra, "", "2233"])
        assert r.exit_code == 0, r.output
        rows = [json.loads(line) for line in r.stdout.splitlines()]   # stderr: the unchecked-table warning
        assert rows[1]["terminal"] is False and rows[1]["ply"] == 4
    code, out, err = run_cli("lookup", "--table", str(alone / table.name), "21324")
    assert code == 0, err
    assert "A has won" in out   # 3 in a row on the bottom row ends a K=3 game


def test_connect_too_long_for_board_is_one_line():
    code, out, err = run_cli("build", "4x4", "--connect", "5", "--out", "/nonexistent/x")
    assert code == 2
    assert err.startswith("c4table: error:") and "connect length 5 does not fit" in err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(BoardError):
        Board(4, 4, 5)


def test_board_names_round_trip():
    b = Board.parse("5x4", 3)
    assert b.name == "5x4k3" and Board.parse(b.name) == b and b.table_filename == "connect3_5x4.dat"
    assert Board.of_table_name("x/connect5_6x4.dat") == Board(6, 4, 5)
    assert Board.parse("7x6").table_filename == "connect4_7x6.dat"
    with pytest.raises(BoardError):
        Board.parse("5x4k3", 5)


@pytest.mark.slow
def test_forward_and_plan_take_connect(tmp_path):
    from c4table.cli.main import cli
    d = tmp_path / "fwd"
    r = CliRunner().invoke(cli, ["plan", "7x5", "--connect", "3"])   # nothing published
    assert r.exit_code == 1 and "forward 7x5 --connect 3" in str(r.exception)
    r = CliRunner().invoke(cli, ["plan", "4x3", "--connect", "3", "--json"])   # small: enumerated
    assert r.exit_code == 0, r.output
    assert [p["positions"] for p in json.loads(r.output)["plies"]] == \
        [p["positions"] for p in oracle_ply_counts(4, 3, 3)]
    for max_ply in (["--max-ply", "6"], []):
        r = CliRunner().invoke(cli, ["forward", "4x3", "--connect", "3", *max_ply, "--out",
                                     str(d), "--quiet", "--workers", "1"])
        assert r.exit_code == 0, r.output
        last = 6 if max_ply else 12
        ref = oracle_ply_counts(4, 3, 3)
        assert f": forward pass to ply {last}: {sum(p['positions'] for p in ref[:last + 1]):,} " \
            "positions" in r.output
    r = CliRunner().invoke(cli, ["plan", "4x3", "--connect", "3", "--from", str(d), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert got["board"] == "4x3k3"


# --------------------------------------------------------------------- quiet positions
def _plain_quiet(cells: np.ndarray, w: int, h: int, k: int) -> bool:
    """Plain statement of the selection for one position (cells[c][r], r = 0 bottom)."""
    def line(grid, p):
        for c in range(w):
            for r in range(h):
                for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                    if all(0 <= c + i * dc < w and 0 <= r + i * dr < h and
                           grid[c + i * dc][r + i * dr] == p for i in range(k)):
                        return True
        return False
    grid = [list(col) for col in cells]
    if line(grid, 1) or line(grid, 2) or all(grid[c][h - 1] for c in range(w)):
        return False
    for c in range(w):
        if grid[c][h - 1]:
            continue
        r = next(r for r in range(h) if grid[c][r] == 0)
        for p in (1, 2):
            grid[c][r] = p
            won = line(grid, p)
            grid[c][r] = 0
            if won:
                return False
    return True


@pytest.mark.slow
def test_export_quiet_positions_selects_what_the_rule_says(built_k, tmp_path):
    import pyarrow.parquet as pq
    from c4table.cli.export import export
    table = built_k("5x4", 3) / "connect3_5x4.dat"
    out_all, out_q = tmp_path / "all.parquet", tmp_path / "quiet.parquet"
    for out, extra in ((out_all, []), (out_q, ["--quiet-positions"])):
        r = CliRunner().invoke(export, ["--table", str(table), "--ply", "6", "--out", str(out),
                                        "--quiet", *extra])
        assert r.exit_code == 0, r.output
    b = Board(5, 4, 3)
    names = [f"{chr(97 + c)}{r + 1}" for c in range(b.width) for r in range(b.height)]
    every = pq.read_table(out_all).to_pandas()
    chosen = pq.read_table(out_q).to_pandas()
    cells = every[names].to_numpy().reshape(-1, b.width, b.height)
    expect = {key for key, cl in zip(every["key"], cells) if _plain_quiet(cl, 5, 4, 3)}
    assert 0 < len(expect) < len(every)
    assert set(chosen["key"]) == expect and len(chosen) == len(expect)


def test_tromp_8ply_selection_count(tmp_path):
    """The forward pass to ply 8 of 7x6 (seconds) and the selection export applies."""
    from c4table.analysis.decode import decode_keys
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import open_build
    from c4table.builddir.shards import read_shard
    from c4table.analysis.quiet import quiet_mask
    ref = DATA["tromp_8ply"]
    b = open_build(ref["board"], tmp_path, workers=1, quiet=True)
    try:
        forward.run(b, max_ply=ref["ply"])
        n = 0
        for s in b.manifest.shards("forward", ref["ply"]):
            keys = read_shard(b.store, s)
            n += int(quiet_mask(b.board, decode_keys(b.board, keys)).sum())
    finally:
        b.close()
    assert n == ref["positions"] == 67_557


def test_serve_answers_a_connect3_table_like_lookup(built_k):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient
    from c4table.analysis.pons import add_scores
    from c4table.serve.app import create_app
    from c4table.open import open_table
    from c4table.table.probe import with_winning_cells
    path = built_k("4x4", 3) / "connect3_4x4.dat"
    with TestClient(create_app([str(path)], cache_size=0)) as client, open_table(path) as t:
        for moves in ("", "23", "2132", "12121"):
            got = client.get("/api/4x4k3", params={"moves": moves}).json()
            probe = t.probe(moves)
            want = with_winning_cells(add_scores({"board": "4x4k3", **probe.to_json()},
                                                 t.board.cells), t, probe)
            assert got == want, moves   # lookup --json's object, Pons' scores (and a won
            #                             game's winning_cells) added
