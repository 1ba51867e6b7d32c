"""Labels for machine learning against independent evidence: Pons' scores against bitbully (an
independent 7x6 solver) on every position and move of rooted 7x6 tables and against a
plain Pons negamax written here on the oracle's rules; export's per-move columns against
lookup --json; the observation planes against PettingZoo's and OpenSpiel's own; the Hugging
Face layout through ``datasets``; ``c4table label`` on text, parquet and .c4z inputs."""
from __future__ import annotations

import functools
import json
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from c4table.analysis.export import export_positions
from c4table.analysis.label import label_file
from c4table.open import open_table
from c4table.pipeline.stages.build import build_table
from conftest import run_cli
from c4table.testing.oracle import A, B, play, winners
from test_rooted import random_live_moves

ROOTS = [(3, 28), (2, 32)]        # (seed, ply) of random live 7x6 roots: 4,929 and 428 entries


@pytest.fixture(scope="module")
def rooted(tmp_path_factory):
    """Rooted 7x6 tables of :data:`ROOTS` (built in about a second each)."""
    out = []
    for seed, ply in ROOTS:
        moves = random_live_moves(random.Random(seed), 7, 6, ply)
        out.append(build_table("7x6", tmp_path_factory.mktemp(f"root{seed}"), quiet=True, workers=1,
                               root=moves))
    return out


def _per_move(path, tmp_path, **kw):
    out = tmp_path / "pm.parquet"
    export_positions(path, out, per_move=True, **kw)
    return pq.read_table(out).to_pylist()


# ------------------------------------------------------------------ Pons' scores vs bitbully
def test_scores_equal_bitbully_on_every_position_and_move_of_rooted_tables(rooted, tmp_path):
    bitbully = pytest.importorskip("bitbully")
    solver = bitbully.BitBully(None)
    checked = moves_checked = 0
    for path in rooted:
        for row in _per_move(path, tmp_path):
            if row["terminal"]:
                continue
            board = bitbully.Board.from_moves([int(c) - 1 for c in row["moves"]])
            theirs = solver.score_all_moves(board)
            ours = {c: s for c, s in enumerate(row["move_scores"]) if row["legal_mask"][c]}
            assert ours == theirs, row["moves"]
            assert row["score"] == max(theirs.values()) == solver.mtdf(board), row["moves"]
            checked += 1
            moves_checked += len(ours)
    assert checked > 2500 and moves_checked > 7000


# ------------------------------------------------------------------ Pons' negamax, small board
def _pons_negamax(w: int, h: int):
    """Pons' recurrence written plainly on the oracle's rules: a move that makes k in a row
    scores (W*H + 1 - ply) // 2; a full board 0; else the best of minus the children."""
    cells = w * h

    @functools.lru_cache(maxsize=None)
    def score(pos) -> int:
        ply = sum(len(c) for c in pos)
        if ply == cells:
            return 0
        chip = A if ply % 2 == 0 else B
        best = -cells
        for c in range(w):
            if len(pos[c]) < h:
                child = play(pos, c, chip)
                s = (cells + 1 - ply) // 2 if winners(child, h, 4) else -score(child)
                best = max(best, s)
        return best

    return score


@pytest.mark.slow
def test_scores_equal_a_plain_pons_negamax_on_4x4(built, tmp_path):
    path = built("4x4") / "connect4_4x4.dat"
    score = _pons_negamax(4, 4)
    rng = random.Random(7)
    lines = []
    for _ in range(400):
        pos, moves = tuple(() for _ in range(4)), ""
        for i in range(rng.randint(0, 15)):
            c = rng.choice([c for c in range(4) if len(pos[c]) < 4])
            pos = play(pos, c, A if i % 2 == 0 else B)
            moves += str(c + 1)
            if winners(pos, 4, 4):
                break
        lines.append(moves)
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    label_file(path, tmp_path / "in.txt", tmp_path / "out.parquet")
    rows = pq.read_table(tmp_path / "out.parquet").to_pylist()
    for moves, row in zip(lines, rows):
        pos = tuple(() for _ in range(4))
        for i, ch in enumerate(moves):
            pos = play(pos, int(ch) - 1, A if i % 2 == 0 else B)
        ply = len(moves)
        if winners(pos, 4, 4):   # finished: the side to move lost at n = ply
            assert row["terminal"] and row["score"] == -((16 + 2 - ply) // 2)
            continue
        if ply == 16:
            assert row["score"] == 0
            continue
        assert row["score"] == score(pos), moves
        chip = A if ply % 2 == 0 else B
        for c in range(4):
            if len(pos[c]) == 4:
                assert not row["legal_mask"][c] and row["move_scores"][c] == -1000
                continue
            child = play(pos, c, chip)
            want = (16 + 1 - ply) // 2 if winners(child, 4, 4) else -score(child)
            assert row["move_scores"][c] == want, (moves, c)


# ------------------------------------------------------------------ lookup --json, serve
@pytest.mark.slow
def test_lookup_json_only_adds_score_keys(built):
    t = str(built("5x4") / "connect4_5x4.dat")
    rc, out, err = run_cli("lookup", "--table", t, "--json", "3344", "1212121", "", "9")
    assert rc == 2
    lines = out.splitlines()
    from c4table.table.probe import error_json, lookup_json
    with open_table(t) as table:
        for text, line in zip(["3344", "1212121", ""], lines):
            old = json.dumps({"board": "5x4", **lookup_json(table.probe(text))})
            new = json.loads(line)
            import re
            # byte for byte, less the scores (and a won game's winning_cells, added after them)
            plain = re.sub(r', "winning_cells": \[[\[\]\d, ]*\]', "", line)
            assert re.sub(r', "score": -?\d+', "", plain) == old
            assert line.count('"score"') == len(new["moves"]) + 1
            assert [k for k in new if k != "winning_cells"][-1] == "score"
    assert json.loads(lines[3]) == error_json("9", json.loads(lines[3])["error"], "5x4")
    rc, text, _ = run_cli("lookup", "--table", t, "--scores", "3344")
    assert rc == 0 and "score 7" in text.splitlines()[0] and "(score -1)" in text


def test_serve_scores_and_solve_match_lookup(built):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient
    from c4table.serve.app import create_app
    t = str(built("5x4") / "connect4_5x4.dat")
    c = TestClient(create_app([t]))
    _, out, _ = run_cli("lookup", "--table", t, "--json", "3344")
    ref = json.loads(out)
    assert c.get("/api/5x4", params={"moves": "3344"}).json() == ref
    assert c.post("/api/5x4/batch", json=["3344"]).json() == [ref]
    solve = c.get("/solve", params={"pos": "3344"}).json()
    assert solve == {"pos": "3344", "score": [m["score"] for m in ref["moves"]]}
    full = c.get("/solve", params={"pos": "3333", "board": "5x4"}).json()
    assert full["score"][2] == 100 and len(full["score"]) == 5
    main = c.get("/api/5x4/mainline", params={"moves": "3344"}).json()
    assert main["score"] == ref["score"] and main["mainline"][0]["score"] == ref["score"]
    assert c.get("/solve", params={"pos": "9"}).status_code == 400


# ------------------------------------------------------------------ export --per-move
def test_export_per_move_agrees_with_lookup(built, tmp_path):
    t = str(built("5x4") / "connect4_5x4.dat")
    rows = _per_move(t, tmp_path, ply=9, mirror=True)
    with open_table(t) as table:
        from c4table.analysis.pons import move_score, probe_score
        for row in rows[::50]:
            p = table.probe(row["moves"])
            assert row["score"] == probe_score(p, 20)
            want = [-1000] * 5
            for m in p.moves:
                want[m.column - 1] = move_score(p, m, 20)
            assert row["move_scores"] == want
            assert [i + 1 for i, b in enumerate(row["best_mask"]) if b] == \
                sorted(m.column for m in p.best_moves())
    for row in rows:
        legal = [s for s, ok in zip(row["move_scores"], row["legal_mask"]) if ok]
        if not row["terminal"]:
            assert row["score"] == max(legal)
            assert row["value"] == (row["score"] > 0) - (row["score"] < 0)
        else:
            assert not legal


# ------------------------------------------------------------------ planes vs the libraries
def _random_games(n, seed):
    rng = random.Random(seed)
    for _ in range(n):
        yield [rng.randrange(7) for _ in range(42)]


@pytest.mark.slow
def test_planes_equal_pettingzoo_and_openspiel(rooted, tmp_path):
    pz = pytest.importorskip("pettingzoo.classic")
    pyspiel = pytest.importorskip("pyspiel")
    path = rooted[0]
    with open_table(path) as t:
        root = t.root.moves
    rng = random.Random(5)
    lines, pz_obs, os_obs = [], [], []
    game = pyspiel.load_game("connect_four")
    for _ in range(6):
        env = pz.connect_four_v3.env()
        env.reset()
        state = game.new_initial_state()
        moves = ""
        for ch in root:
            env.step(int(ch) - 1)
            state.apply_action(int(ch) - 1)
            moves += ch
        while True:
            obs, _, term, trunc, _ = env.last()
            if term or trunc or state.is_terminal():
                break
            lines.append(moves)
            pz_obs.append(obs["observation"])
            os_obs.append(np.array(state.observation_tensor(state.current_player()))
                          .reshape(game.observation_tensor_shape()))
            a = rng.choice(np.flatnonzero(obs["action_mask"]).tolist())
            env.step(a)
            state.apply_action(a)
            moves += str(a + 1)
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    for planes, want in (("pettingzoo", pz_obs), ("openspiel", os_obs)):
        label_file(path, tmp_path / "in.txt", tmp_path / f"{planes}.parquet", planes=planes)
        got = pq.read_table(tmp_path / f"{planes}.parquet").column("obs").to_pylist()
        for g, w_ in zip(got, want):
            assert np.array_equal(np.array(g, np.uint8), w_.astype(np.uint8))
    # export's planes (canonical orientation, and mirrored rows) give the same as label's
    out = tmp_path / "e.parquet"
    export_positions(path, out, mirror=True, planes="pettingzoo", per_move=True)
    rows = pq.read_table(out).to_pylist()[:300]
    (tmp_path / "e.txt").write_text("\n".join(r["moves"] for r in rows) + "\n")
    label_file(path, tmp_path / "e.txt", tmp_path / "el.parquet", planes="pettingzoo")
    for r, l in zip(rows, pq.read_table(tmp_path / "el.parquet").to_pylist()):
        for k in ("obs", "move_scores", "move_distance", "best_mask", "score"):
            assert r[k] == l[k], (r["moves"], k)


# ------------------------------------------------------------------ c4table label
@pytest.mark.slow
def test_label_command_text_parquet_c4z_and_bad_rows(built, tmp_path):
    d = built("5x4")
    t = str(d / "connect4_5x4.dat")
    lines = ["3344", "", "9", "12121213", "1212121", "33333", "2 "]
    (tmp_path / "in.txt").write_text("\r\n".join(lines) + "\r\n")
    rc, out, err = run_cli("label", "--table", t, str(tmp_path / "in.txt"), "--out",
                           str(tmp_path / "a.parquet"))
    assert rc == 2 and "3 of 7 positions could not be labelled" in err, err   # as lookup
    rows = pq.read_table(tmp_path / "a.parquet").to_pylist()
    assert [r["moves"] for r in rows] == lines
    assert [r["error"] is not None for r in rows] == [False, False, True, True, False, True, False]
    assert "after the game ended" in rows[3]["error"] and rows[2]["score"] is None
    with open_table(t) as table:
        for r in rows:
            if r["error"] is None:
                p = table.probe(r["moves"])
                assert (r["outcome"], r["distance"], r["terminal"]) == (p.outcome, p.distance, p.terminal)
    # a parquet column, and a .c4z of the same table: the same labels
    pq.write_table(pa.table({"pos": lines, "x": list(range(len(lines)))}), tmp_path / "in.parquet")
    from c4table.c4z import compress_table
    c4z = compress_table(t, tmp_path / "t.c4z", quiet=True)
    rc, _, err = run_cli("label", "--table", str(getattr(c4z, "path", c4z)), str(tmp_path / "in.parquet"),
                         "--column", "pos", "--out", str(tmp_path / "b.parquet"))
    assert rc == 2, err
    assert pq.read_table(tmp_path / "b.parquet").drop(["moves"]).equals(
        pq.read_table(tmp_path / "a.parquet").drop(["moves"]))
    # nulls and a large_string column
    pq.write_table(pa.table({"m": pa.array(["3344", None, ""], pa.large_string())}), tmp_path / "n.parquet")
    label_file(t, tmp_path / "n.parquet", tmp_path / "n_out.parquet", column="m")
    got = pq.read_table(tmp_path / "n_out.parquet").to_pylist()
    assert [r["moves"] for r in got] == ["3344", None, ""]
    assert got[1]["error"] == "no move string (a null)" and got[0]["score"] == 7 and got[2]["error"] is None
    rc, _, err = run_cli("label", "--table", t, str(tmp_path / "in.parquet"), "--column", "nope",
                         "--out", str(tmp_path / "c.parquet"))
    assert rc == 2 and "nope" in err


def test_label_on_a_rooted_table_reports_positions_outside_it(rooted, tmp_path):
    path = rooted[1]
    with open_table(path) as t:
        root = t.root.moves
    (tmp_path / "in.txt").write_text(f"{root}\n44\n{root[:-1]}\n")
    label_file(path, tmp_path / "in.txt", tmp_path / "o.parquet")
    rows = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert rows[0]["error"] is None and "not reachable" in rows[1]["error"]
    assert rows[2]["error"] is not None


# ------------------------------------------------------------------ Hugging Face layout
@pytest.mark.slow
def test_hf_layout_loads_with_datasets(built, tmp_path):
    datasets = pytest.importorskip("datasets")
    t = str(built("5x4") / "connect4_5x4.dat")
    out = tmp_path / "hf"
    rc, _, err = run_cli("export", "--table", t, "--hf", str(out), "--ply", "10", "--mirror",
                         "--split", "test=0.2", "--rows-per-shard", "4000", "--planes", "pettingzoo", "-q")
    assert rc == 0, err
    files = sorted(p.name for p in (out / "data").iterdir())
    n_train = sum(f.startswith("train-") for f in files)
    assert n_train >= 2 and all(f.endswith(f"-of-{n_train:05d}.parquet") for f in files if f.startswith("train"))
    ds = datasets.load_dataset(str(out))
    assert set(ds) == {"train", "test"}
    n = len(ds["train"]) + len(ds["test"])
    assert n == pq.read_table(_export(t, tmp_path, ply=10, mirror=True)).num_rows
    assert 0.1 < len(ds["test"]) / n < 0.3
    tr = ds["train"].with_format("numpy")[:64]
    assert tr["obs"].shape == (64, 4, 5, 2) and tr["move_scores"].shape == (64, 5)
    # a position and its mirror image share a split
    train_keys = set(ds["train"]["key"])
    assert not train_keys & set(ds["test"]["key"])
    # --decisive and --sample
    out2 = tmp_path / "hf2"
    rc, _, err = run_cli("export", "--table", t, "--hf", str(out2), "--decisive", "--sample", "500",
                         "--seed", "4", "-q")
    assert rc == 0, err
    d2 = datasets.load_dataset(str(out2))["train"]
    assert len(d2) == 500
    for r in d2.select(range(50)):
        s = {np.sign(x) for x, ok in zip(r["move_scores"], r["legal_mask"]) if ok}
        assert len(s) >= 2


def _export(t, tmp_path, **kw):
    out = tmp_path / "plain.parquet"
    export_positions(t, out, **kw)
    return out


# ------------------------------------------------------------------ notebooks
def test_probe_draws_itself(built):
    import xml.etree.ElementTree as ET
    with open_table(built("5x4") / "connect4_5x4.dat") as t:
        p = t.probe("3344")
        svg = p._repr_svg_()
    root = ET.fromstring(svg)
    circles = [e for e in root.iter() if e.tag.endswith("circle")]
    assert len(circles) == 20
    assert sum(c.get("fill") != "#ffffff" for c in circles) == 4
    titles = [e.text for e in root.iter() if e.tag.endswith("title")]
    assert "column 2: win in 3" in titles and "column 1: loss in 16" in titles
    assert "_board" not in p.to_json()
