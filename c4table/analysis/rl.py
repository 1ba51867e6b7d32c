"""Reinforcement-learning adapters (extra ``[rl]``): a perfect (or tempered) agent for the
usual Connect-4 environments, and a Gymnasium environment with a perfect opponent.

Design notes: ``docs/modules.md`` (``c4table.analysis.rl``).

>>> agent = PerfectAgent("tables/5x4/connect4_5x4.dat")
>>> agent.act("3344"), agent.action_values("3344").tolist()
(1, [-1.0, 7.0, -1.0, -1.0, -1.0])
"""
from __future__ import annotations

import numpy as np

from c4table.analysis.label import observation_planes
from c4table.analysis.play import choose_move
from c4table.analysis.pons import move_score
from c4table.errors import IllegalPositionError, MissingExtraError
from c4table.game.drawing import parse_drawing, render
from c4table.game.rules import Position
from c4table.open import open_table
from c4table.table.source import Table

try:                                   # the environment base class, when gymnasium is installed
    import gymnasium as _gym
    _EnvBase = _gym.Env
except ImportError:                    # pragma: no cover - the [rl] extra is not installed
    _gym = None
    _EnvBase = object


def _grid_drawing(grid: np.ndarray) -> str:
    """A drawing (top row first, ``.``/``A``/``B``) of a (H, W) board with 0/1/2, row 0 the top."""
    chars = np.array([".", "A", "B"])
    return "\n".join("".join(chars[row]) for row in np.asarray(grid, np.int64)) + "\n"


class PerfectAgent:
    """Perfect play from a table. ``temperature`` 0 plays an optimal move (nearest the centre
    among equals, as ``c4table play`` does); above 0 it samples a move with probability
    proportional to ``exp(score / temperature)``. ``epsilon``: the chance of a uniformly random
    legal move instead. ``seed``: the random generator's seed."""

    def __init__(self, table, temperature: float = 0.0, epsilon: float = 0.0, seed: int | None = None):
        self.table = table if isinstance(table, Table) else open_table(table)
        self.board = self.table.board
        self.temperature = float(temperature)
        self.epsilon = float(epsilon)
        self.rng = np.random.default_rng(seed)

    # ---------------------------------------------------------------- positions
    def position(self, x):
        """The :class:`~c4table.game.rules.Position` of any input docs/modules.md lists."""
        if isinstance(x, Position):
            return x
        if isinstance(x, str):
            return self.table.position(x)
        if hasattr(x, "history") and callable(x.history):             # OpenSpiel state
            return self.table.position("".join(str(a + 1) for a in x.history()))
        board = x.get("board") if isinstance(x, dict) else getattr(x, "board", None)
        if board is not None and not isinstance(x, np.ndarray):          # Kaggle ConnectX
            g = np.asarray(board, np.int64).reshape(self.board.height, self.board.width)
            return self._from_grid(g)
        if isinstance(x, dict) and "observation" in x:                   # PettingZoo dict
            x = x["observation"]
        arr = np.asarray(x)
        if arr.ndim == 3 and arr.shape[-1] == 2:                         # PettingZoo planes
            mine, theirs = arr[..., 0].astype(bool), arr[..., 1].astype(bool)
            a_to_move = mine.sum() == theirs.sum()
            g = np.zeros(arr.shape[:2], np.int64)
            g[mine] = 1 if a_to_move else 2
            g[theirs] = 2 if a_to_move else 1
            return self._from_grid(g)
        if arr.ndim == 2:
            return self._from_grid(arr)
        raise IllegalPositionError(f"cannot read a position from {type(x).__name__}")

    def _from_grid(self, g: np.ndarray):
        if g.shape != (self.board.height, self.board.width):
            raise IllegalPositionError(f"board of shape {g.shape}: the table's board {self.board} "
                                       f"is ({self.board.height}, {self.board.width})")
        return parse_drawing(_grid_drawing(g), self.board)

    # ------------------------------------------------------------------- values
    def action_values(self, x) -> np.ndarray:
        """Pons' score of each column (length W, float), ``-inf`` where it cannot be played."""
        probe = self.table.probe(self.position(x))
        out = np.full(self.board.width, -np.inf)
        for m in probe.moves:
            out[m.column - 1] = move_score(probe, m, self.board.cells)
        return out

    def act(self, x) -> int:
        """The 0-based column to play."""
        probe = self.table.probe(self.position(x))
        if not probe.moves:
            raise IllegalPositionError("the game is over: no move to choose")
        legal = [m.column - 1 for m in probe.moves]
        if self.epsilon > 0 and self.rng.random() < self.epsilon:
            return int(self.rng.choice(legal))
        if self.temperature <= 0:
            return choose_move(probe, self.board.width).column - 1
        s = np.array([move_score(probe, m, self.board.cells) for m in probe.moves], np.float64)
        p = np.exp((s - s.max()) / self.temperature)
        return int(legal[self.rng.choice(len(legal), p=p / p.sum())])

    def kaggle_agent(self):
        """A Kaggle ConnectX agent: ``agent(observation, configuration) -> column``."""
        def agent(observation, configuration=None):
            return self.act(observation)
        return agent

    def __call__(self, x) -> int:
        return self.act(x)


class ConnectFourEnv(_EnvBase):
    """A Gymnasium environment: the agent plays ``side`` (``"A"`` moves first) against
    ``opponent`` (a :class:`PerfectAgent` of the same table by default; give one with a
    temperature or epsilon for a weaker one). Observations are PettingZoo's planes (H, W, 2),
    uint8, row 0 the top, plane 0 the agent's chips; actions 0-based columns; ``info``
    holds ``action_mask`` (uint8, length W) and ``moves`` (the move string so far). Reward +1
    win, -1 loss (or an illegal move, which ends the episode with ``info["illegal"]``), 0 draw.
    ``reset(options={"start": MOVES})`` starts from a position (default: the table's root)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, table, side: str = "A", opponent: PerfectAgent | None = None,
                 render_mode: str | None = None):
        if _gym is None:
            raise MissingExtraError("ConnectFourEnv needs gymnasium: pip install 'c4table[rl]'")
        from gymnasium import spaces
        self.agent_table = PerfectAgent(table)
        self.table = self.agent_table.table
        b = self.table.board
        self.board = b
        self.side = side.upper()
        self.opponent = opponent or self.agent_table
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 1, (b.height, b.width, 2), np.uint8)
        self.action_space = spaces.Discrete(b.width)
        self.moves = ""

    def _obs(self) -> np.ndarray:
        pos = self.table.position(self.moves)
        grid = np.array([[pos.cell(c, r) for r in range(self.board.height)] for c in range(self.board.width)],
                        np.uint8)[None]
        # the planes of the agent: the side to move's layout when it is the agent's turn
        ply = np.array([pos.ply if pos.to_move == self.side else pos.ply + 1])
        return observation_planes(grid, ply, "pettingzoo")[0]

    def _info(self, **extra) -> dict:
        pos = self.table.position(self.moves)
        mask = np.zeros(self.board.width, np.uint8)
        if not pos.is_terminal:
            mask[pos.legal_moves()] = 1
        return {"action_mask": mask, "moves": self.moves, **extra}

    def _result(self, moves: str | None = None) -> float | None:
        probe = self.table.probe(self.moves if moves is None else moves)
        if not probe.terminal:
            return None
        return 0.0 if probe.outcome == "draw" else (1.0 if probe.outcome == self.side else -1.0)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        start = (options or {}).get("start")
        if start is None:
            start = self.table.root.moves if getattr(self.table, "root", None) is not None else ""
        # a start that is no position of the table raises here, the env left as it was
        over = self._result(start) is not None
        super().reset(seed=seed)
        moves = start
        if not over and self.table.position(moves).to_move != self.side:
            moves += str(self.opponent.act(moves) + 1)
        self.moves = moves
        return self._obs(), self._info()

    def step(self, action):
        pos = self.table.position(self.moves)
        a = int(action)
        if not 0 <= a < self.board.width or a not in pos.legal_moves():
            return self._obs(), -1.0, True, False, self._info(illegal=True)
        self.moves += str(a + 1)
        r = self._result()
        if r is None:
            self.moves += str(self.opponent.act(self.moves) + 1)
            r = self._result()
        done = r is not None
        return self._obs(), (r or 0.0), done, False, self._info()

    def render(self):
        return render(self.table.position(self.moves))
