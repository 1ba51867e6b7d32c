"""The RL adapters of c4table.analysis.rl against the real libraries: whole games played through
PettingZoo's ``connect_four_v3``, OpenSpiel's ``connect_four``, a Kaggle ConnectX observation
and the Gymnasium environment, each move equal to ``c4table best``'s choice (the optimal move
nearest the centre) for the position the library itself reached."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from c4table.analysis.rl import ConnectFourEnv, PerfectAgent
from c4table.pipeline.stages.build import build_table
from conftest import run_cli
from test_rooted import random_live_moves


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A rooted 7x6 table (ply 28: 4,929 entries): the games start at its root."""
    moves = random_live_moves(random.Random(3), 7, 6, 28)
    return build_table("7x6", tmp_path_factory.mktemp("rl"), quiet=True, workers=1, root=moves)


def _best(table, moves: str) -> int:
    """``c4table best --json``: the optimal move nearest the centre, 0-based."""
    rc, out, err = run_cli("best", "--table", str(table), "--json", moves)
    assert rc == 0, err
    cols = [m["column"] for m in json.loads(out)["best"]]
    return min(cols, key=lambda c: (abs(c - 4), c)) - 1


@pytest.mark.slow
def test_pettingzoo_game_agrees_with_best(table):
    pz = pytest.importorskip("pettingzoo.classic")
    agent = PerfectAgent(table)
    env = pz.connect_four_v3.env()
    env.reset()
    moves = agent.table.root.moves
    for ch in moves:
        env.step(int(ch) - 1)
    played = 0
    for name in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        if term or trunc:
            break
        a = agent.act(obs)
        assert a == _best(table, moves), moves
        vals = agent.action_values(obs)
        assert np.array_equal(np.isfinite(vals), obs["action_mask"].astype(bool))
        env.step(a)
        moves += str(a + 1)
        played += 1
    assert played >= 1 and agent.table.probe(moves).terminal


def test_openspiel_game_agrees_with_best(table):
    pyspiel = pytest.importorskip("pyspiel")
    agent = PerfectAgent(table)
    state = pyspiel.load_game("connect_four").new_initial_state()
    for ch in agent.table.root.moves:
        state.apply_action(int(ch) - 1)
    while not state.is_terminal():
        moves = "".join(str(a + 1) for a in state.history())
        a = agent.act(state)
        assert a == _best(table, moves) and a in state.legal_actions()
        state.apply_action(a)
    probe = agent.table.probe("".join(str(a + 1) for a in state.history()))
    want = {"A": [1.0, -1.0], "B": [-1.0, 1.0], "draw": [0.0, 0.0]}[probe.outcome]
    assert list(state.returns()) == want


def test_kaggle_agent_and_numpy_board(table):
    agent = PerfectAgent(table)
    kaggle = agent.kaggle_agent()
    moves = agent.table.root.moves
    while not agent.table.probe(moves).terminal:
        pos = agent.table.position(moves)
        grid = np.zeros((6, 7), np.int64)           # ConnectX: row 0 the top, marks 1 and 2
        for c in range(7):
            for r in range(6):
                grid[5 - r, c] = pos.cell(c, r)
        obs = {"board": grid.ravel().tolist(), "mark": 1 if pos.to_move == "A" else 2}
        a = kaggle(obs, {"rows": 6, "columns": 7, "inarow": 4})
        assert a == _best(table, moves) == agent.act(grid) == agent.act(moves)
        moves += str(a + 1)


def test_gymnasium_env_against_a_perfect_opponent(table):
    gym = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env
    for side in ("A", "B"):
        env = ConnectFourEnv(table, side=side)
        obs, info = env.reset()
        assert env.observation_space.contains(obs) and info["action_mask"].shape == (7,)
        agent = PerfectAgent(table)
        done = False
        reward = 0.0
        while not done:
            a = agent.act(obs)
            assert a == _best(table, info["moves"])
            assert info["action_mask"][a] == 1
            obs, reward, done, trunc, info = env.step(a)
        probe = agent.table.probe(info["moves"])
        assert reward == (0.0 if probe.outcome == "draw" else (1.0 if probe.outcome == side else -1.0))
        # both perfect: the result is the root's value
        root = agent.table.probe(agent.table.root.moves)
        assert probe.outcome == root.outcome
    env = ConnectFourEnv(table, opponent=PerfectAgent(table, temperature=2.0, epsilon=0.5, seed=1))
    obs, info = env.reset(seed=0)
    full = [c for c in range(7) if not info["action_mask"][c]]
    if full:
        _, r, done, _, info2 = env.step(full[0])
        assert done and r == -1.0 and info2["illegal"]
    check_env(ConnectFourEnv(table), skip_render_check=True)


def test_gymnasium_env_failed_reset_keeps_the_previous_state(table):
    """A reset to a start that is no position of the table raises, and the env goes on from
    where it was: step() and render() work as before."""
    pytest.importorskip("gymnasium")
    from c4table.errors import C4Error
    env = ConnectFourEnv(table)
    obs, info = env.reset()
    before, picture = env.moves, env.render()
    for bad in ["9", "1111111", "x"]:
        with pytest.raises(C4Error):
            env.reset(options={"start": bad})
        assert env.moves == before and env.render() == picture
    a = int(np.flatnonzero(info["action_mask"])[0])
    obs2, reward, done, trunc, info2 = env.step(a)
    assert info2["moves"].startswith(before + str(a + 1)) and not info2.get("illegal")
