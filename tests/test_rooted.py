"""Rooted tables (``build --root MOVES``) against independent evidence: byte-identity with the
full build from the empty board, every entry equal to the full table's for 5x5 and 6x4 roots,
and on 7x6 every entry (roots at plies 32+) or sampled entries (roots at plies 26..30) equal
to the independent minimax of c4table/testing/oracle.py; plus the readers and bad roots."""
import json
import random

import numpy as np
import pytest

from c4table.game.board import Board
from c4table.errors import IllegalPositionError
from c4table.pipeline.stages.build import build_table
from c4table.game.root import NotReachableError, Root
from c4table.open import open_table
from c4table.analysis.verify import verify_table
from conftest import run_cli
from c4table.testing.oracle import (A, B, key_bytes, oracle_position, play, position_key,
                    position_of_key, subtree_table, winners)


def random_live_moves(rng: random.Random, w: int, h: int, ply: int) -> str:
    """Random legal moves (oracle rules) after which no one has won; drawn again otherwise."""
    while True:
        pos, moves = tuple(() for _ in range(w)), ""
        for i in range(ply):
            c = rng.choice([c for c in range(w) if len(pos[c]) < h])
            pos = play(pos, c, A if i % 2 == 0 else B)
            moves += str(c + 1)
            if winners(pos, h, 4):
                break
        else:
            return moves


def entries(path, w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, outcome bytes) of a table file, read here with numpy alone."""
    K = key_bytes(w, h)
    rows = np.fromfile(path, np.uint8).reshape(-1, K + 1)
    buf = np.zeros((rows.shape[0], 8), np.uint8)
    buf[:, 8 - K:] = rows[:, :K]
    return buf.view(">u8").ravel().astype(np.uint64), rows[:, K].copy()


def as_dict(path, w: int, h: int) -> dict[int, int]:
    keys, outs = entries(path, w, h)
    return dict(zip(keys.tolist(), outs.tolist()))


# ------------------------------------------------------------------ the empty root
@pytest.mark.slow
@pytest.mark.parametrize("spec", ["4x4", "5x4", "4x5"])
def test_root_at_the_empty_board_is_byte_identical_to_the_full_build(built, tmp_path, spec):
    full = built(spec) / f"connect4_{spec}.dat"
    path = build_table(spec, tmp_path, quiet=True, workers=2, root="")
    assert path.name == f"connect4_{spec}_root-empty.dat"
    assert path.read_bytes() == full.read_bytes()
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["root"] == {"moves": "", "ply": 0, "key": 0}


# ------------------------------------------------------------------ small boards: exact key sets
@pytest.mark.parametrize("spec,moves", [("4x4", "3344"), ("4x4", "1231"), ("4x4", "23"),
                                        ("5x4", "3324151"), ("3x4", "")])
def test_rooted_table_is_the_oracles_subtree(tmp_path, spec, moves):
    w, h = map(int, spec.split("x"))
    path = build_table(spec, tmp_path, quiet=True, workers=1, root=moves)
    assert as_dict(path, w, h) == subtree_table(w, h, oracle_position(w, h, moves))


# ------------------------------------------------------------------ 5x5, 6x4: against the full table
ROOT_PLIES = (4, 7, 9, 12)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["5x5", "6x4"])
def test_rooted_entries_equal_the_full_tables(built, tmp_path, spec):
    w, h = map(int, spec.split("x"))
    full_keys, full_outs = entries(built(spec) / f"connect4_{spec}.dat", w, h)
    rng = random.Random(f"rooted {spec}")
    for ply in ROOT_PLIES:
        moves = random_live_moves(rng, w, h, ply)
        out = tmp_path / f"r{ply}"
        path = build_table(spec, out, quiet=True, workers=2, root=moves)
        keys, outs = entries(path, w, h)
        assert keys[0] == position_key(oracle_position(w, h, moves), h)   # the root first
        assert np.all(keys[1:] > keys[:-1])
        at = np.searchsorted(full_keys, keys)
        assert np.all(at < full_keys.shape[0])
        assert np.array_equal(full_keys[at], keys), f"{spec} root {moves}: keys not in the full table"
        assert np.array_equal(full_outs[at], outs), f"{spec} root {moves}: outcome bytes differ"
        assert verify_table(path, quiet=True).ok


# ------------------------------------------------------------------ 7x6: the oracle
@pytest.mark.parametrize("ply,seed", [(32, 1), (32, 2), (33, 3), (34, 4), (36, 5), (37, 0), (38, 6)])
def test_7x6_every_entry_equals_the_oracle(tmp_path, ply, seed):
    """(37, 0): every game from that root ends by ply 39, so generations 39-42 are empty."""
    moves = random_live_moves(random.Random(seed), 7, 6, ply)
    path = build_table("7x6", tmp_path, quiet=True, workers=1, root=moves)
    assert as_dict(path, 7, 6) == subtree_table(7, 6, oracle_position(7, 6, moves))


@pytest.mark.parametrize("ply,seed", [(26, 11), (27, 12), (28, 13), (29, 14), (30, 15)])
def test_7x6_sampled_entries_equal_the_oracle(tmp_path, ply, seed):
    rng = random.Random(seed)
    moves = random_live_moves(rng, 7, 6, ply)
    path = build_table("7x6", tmp_path, quiet=True, workers=1, root=moves)
    keys, outs = entries(path, 7, 6)
    assert keys[0] == position_key(oracle_position(7, 6, moves), 6)
    picks = sorted(rng.sample(range(keys.shape[0]), min(25, keys.shape[0])))
    for i in picks:
        key = int(keys[i])
        pos = position_of_key(7, 6, key)
        assert position_key(pos, 6) == key
        assert subtree_table(7, 6, pos)[key] == outs[i], f"root {moves}, entry {i} (key {key})"


# ------------------------------------------------------------------ readers and bad input
@pytest.fixture(scope="module")
def rooted_5x4(tmp_path_factory):
    d = tmp_path_factory.mktemp("rooted_5x4")
    return build_table("5x4", d, quiet=True, workers=1, root="3344")


def test_reader_learns_the_root_and_refuses_other_positions(rooted_5x4, built):
    full = built("5x4") / "connect4_5x4.dat"
    with open_table(rooted_5x4) as t, open_table(full) as f:
        assert t.root.moves == "3344" and t.root.ply == 4 and f.root is None
        for moves in ("3344", "33445", "3344512", "4433"):   # 4433 is 3344's position
            assert t.probe(moves) == f.probe(moves)
        for moves in ("", "334", "3345", "1111"):
            with pytest.raises(NotReachableError, match="not reachable from the root 3344"):
                t.probe(moves)


def test_reader_learns_the_root_from_the_file_name(rooted_5x4, tmp_path):
    alone = tmp_path / rooted_5x4.name     # no manifest beside it
    alone.write_bytes(rooted_5x4.read_bytes())
    with open_table(alone) as t:
        assert t.board.name == "5x4" and t.root.moves == "3344"
        with pytest.raises(NotReachableError):
            t.wdl("12")


@pytest.mark.slow
def test_cli_on_a_rooted_table(rooted_5x4):
    T = str(rooted_5x4)
    code, out, err = run_cli("lookup", "--table", T, "33445")
    assert code == 0 and out.startswith("33445  board 5x4, ply 5")
    code, out, err = run_cli("best", "--table", T, "12")
    assert code == 2 and err.count("\n") == 1 and "not reachable from the root 3344 (ply 4)" in out
    code, out, err = run_cli("lookup", "--json", "--table", T, "-", stdin="33445\n12\n")
    assert code == 2
    lines = [json.loads(x) for x in out.splitlines()]
    assert lines[0]["ply"] == 5 and "not reachable" in lines[1]["error"]
    code, out, err = run_cli("play", "--table", T, "--side", "A", stdin="q\n")
    assert code == 0 and "ply 4, A to move" in out
    code, out, err = run_cli("verify", T, "-q")
    assert code == 0 and "sha256_tree matches manifest.json" in out and "known table" not in out
    code, out, err = run_cli("stats", T)
    rows = [r.split("\t") for r in out.splitlines()[1:]]
    assert rows[0][0] == "4" and rows[-1][0] == "20"
    code, scan, err = run_cli("stats", T, "--scan")
    assert scan == out
    from c4table.cli.bdd import crosscheck
    from click.testing import CliRunner
    res = CliRunner().invoke(crosscheck, [str(rooted_5x4.parent)])
    assert res.exit_code == 2 and "compares full builds only" in res.output


@pytest.mark.parametrize("root,why", [("1212121", "finished game"), ("11111", "column 1 is full"),
                                      ("3x4", "neither a move string")])
def test_bad_roots_are_one_line_exit_2(tmp_path, root, why):
    code, out, err = run_cli("build", "5x4", "--root", root, "--out", str(tmp_path / "b"))
    assert code == 2 and why in err and err.count("\n") == 1, err
    assert not (tmp_path / "b").exists()


@pytest.mark.slow
def test_root_from_a_drawing_and_resume_keeps_the_root(tmp_path):
    drawing = tmp_path / "root.txt"
    drawing.write_text(".....\n.....\n..B..\n.AAB.\n")
    out = tmp_path / "b"
    code, stdout, err = run_cli("forward", "5x4", "--root", str(drawing), "--out", str(out), "-q")
    assert code == 0, err
    m = json.loads((out / "manifest.json").read_text())
    assert m["root"]["ply"] == 4 and m["plies"][3]["entries"] == 0 and m["plies"][4]["entries"] == 1
    # backward and merge without --root continue the rooted build (in-process CLI)
    from click.testing import CliRunner
    from c4table.cli.main import cli
    for stage in ("backward", "merge"):
        res = CliRunner().invoke(cli, [stage, "5x4", "--out", str(out), "-q", "--workers", "1"])
        assert res.exit_code == 0, res.output
    assert f"connect4_5x4_root-{m['root']['moves']}.dat" in res.output
    # another root in the same directory is refused
    code, stdout, err = run_cli("build", "5x4", "--root", "3344", "--out", str(out))
    assert code != 0 and "rooted at" in err


def test_root_parsing():
    r = Root.parse("7x6", "4453")
    assert (r.ply, r.table_filename) == (4, "connect4_7x6_root-4453.dat")
    with pytest.raises(IllegalPositionError, match="finished game"):
        Root.parse("4x4", "1212121")


def test_plan_root_counts_the_forward_run_exactly(tmp_path):
    """With enough probe plies to reach the last generation, the plan's entries are the
    rooted table's; with fewer, the counted plies are exact and the rest estimated."""
    moves = random_live_moves(random.Random(21), 7, 6, 30)
    path = build_table("7x6", tmp_path, quiet=True, workers=1, root=moves)
    m = json.loads((tmp_path / "manifest.json").read_text())
    code, out, err = run_cli("plan", "7x6", "--root", moves, "--probe-plies", "12", "--json")
    assert code == 0, err
    p = json.loads(out)
    assert p["entries"] == m["table"]["entries"] == path.stat().st_size // 7
    from c4table.pipeline.planning.plan import plan_rooted
    plies = plan_rooted(Board(7, 6), moves, 2, 2**30, probe_plies=3).plies
    assert [x.entries for x in plies[30:34]] == [r["entries"] for r in m["plies"][30:34]]
    assert all(x.source.startswith("estimated") for x in plies[34:])
    assert all(x.entries == 0 for x in plies[:30])


@pytest.mark.slow
def test_rooted_build_resumes_and_ignores_budget_and_workers(tmp_path):
    """A rooted build stopped after part of its forward pass resumes to the same bytes, and
    a small memory budget (many shards and ranges) with 2 workers changes nothing."""
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import open_build, run_build
    ref = build_table("5x4", tmp_path / "ref", quiet=True, workers=1, root="3")
    b = open_build("5x4", tmp_path / "part", quiet=True, workers=1, root="3")
    with b:
        forward.run(b, max_ply=9)
    b = open_build("5x4", tmp_path / "part", quiet=True, workers=2, memory="4MiB")   # no root
    assert b.origin.moves == "3"
    path = run_build(b)
    assert path.read_bytes() == ref.read_bytes()
    small = build_table("5x4", tmp_path / "small", quiet=True, workers=2, memory="4MiB", root="3")
    assert small.read_bytes() == ref.read_bytes()
    m = json.loads((tmp_path / "small" / "manifest.json").read_text())
    assert max(len(s["shards"]) for s in m["steps"]["backward"].values()) > 1
