"""Pascal Pons' scores: the position value machine-learning work on Connect-4 trains on.

Design notes: ``docs/modules.md`` (``c4table.analysis.pons``).

>>> pons_score(42, 0, "A", "A", 41)
1
>>> pons_score(20, 4, "A", "A", 3)      # 5x4, "3344": A wins with its 2nd move from here, n = 7
7
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: ``move_scores`` of a column that cannot be played (full, or the game is over).
NO_MOVE_SCORE = -1000
#: ``move_distance`` of a column that cannot be played.
NO_MOVE_DISTANCE = 255
#: Pons' web API (``/solve``) for a full column.
WEB_FULL = 100


def pons_score(cells: int, ply: int, to_move: str, outcome: str, distance: int) -> int:
    """Pons' score of a position (or a move) for ``to_move``: ``outcome`` (``"A"``, ``"B"`` or
    ``"draw"``) reached ``distance`` plies after ``ply`` on a board of ``cells`` cells."""
    if outcome == "draw":
        return 0
    mag = (cells + 2 - (ply + distance)) // 2
    return mag if outcome == to_move else -mag


def probe_score(probe, cells: int) -> int:
    """The score of a :class:`~c4table.table.Probe` (the position, for its side to move); a
    finished game is a loss (or draw) at ``n = ply``, which its distance 0 already says."""
    return pons_score(cells, probe.ply, probe.to_move, probe.outcome, probe.distance)


def move_score(probe, move, cells: int) -> int:
    """The score of one :class:`~c4table.table.MoveProbe` of ``probe``, for the side to move."""
    return pons_score(cells, probe.ply, probe.to_move, move.outcome, move.distance)


def add_scores(obj: dict, cells: int) -> dict:
    """Add ``"score"`` to a ``lookup --json`` object (at its end) and to each of its moves (at
    the end of each), in place; returns ``obj``. Other keys and their order are unchanged.

    >>> o = {"position": "", "ply": 0, "to_move": "A", "outcome": "A", "distance": 41,
    ...      "terminal": False, "moves": [{"column": 4, "outcome": "A", "distance": 41}]}
    >>> add_scores(o, 42)["score"], o["moves"][0]["score"]
    (1, 1)
    """
    if "outcome" not in obj:       # an error answer
        return obj
    ply, mover = obj["ply"], obj["to_move"]
    for m in obj.get("moves", ()):
        m["score"] = pons_score(cells, ply, mover, m["outcome"], m["distance"])
    obj["score"] = pons_score(cells, ply, mover, obj["outcome"], obj["distance"])
    return obj


def web_scores(probe, width: int, cells: int) -> list[int]:
    """Pons' web API ``score`` list: per column (0-based index) the score of playing it,
    :data:`WEB_FULL` (100) where it cannot be played (a full column; every column once the
    game is over)."""
    out = [WEB_FULL] * width
    for m in probe.moves:
        out[m.column - 1] = move_score(probe, m, cells)
    return out


# ------------------------------------------------------------------------- vectorised
@njit(cache=True)
def label_kernel(found, plies, cells, w, value, score, move_scores, move_dist, legal, best,
                 outcome, distance, ok):
    """Per row ``i``: ``found[i, 0]`` the outcome byte of the position, ``found[i, 1 + c]`` that
    of its child through column ``c`` (-1: the column cannot be played; -2: a child that should
    be in the table and is not). Fills ``value`` (+1/0/-1 for the side to move), ``score``,
    ``move_scores`` / ``move_dist`` (:data:`NO_MOVE_SCORE` / :data:`NO_MOVE_DISTANCE` where
    the column cannot be played), ``legal``, ``best`` (the moves of the largest score),
    ``outcome`` (0 draw, 1 A, 2 B), ``distance``; ``ok[i]`` False where a byte is missing."""
    for i in range(found.shape[0]):
        ply = plies[i]
        mover = 1 + (ply % 2)
        b0 = found[i, 0]
        ok[i] = b0 >= 0
        if b0 < 0:
            b0 = 0
        res = b0 >> 6
        d = b0 & 63
        outcome[i] = res
        distance[i] = d
        mag = (cells + 2 - (ply + d)) // 2
        if res == 0:
            value[i] = 0
            score[i] = 0
        elif res == mover:
            value[i] = 1
            score[i] = mag
        else:
            value[i] = -1
            score[i] = -mag
        top = -32768
        for c in range(w):
            cb = found[i, 1 + c]
            if cb == -2:
                ok[i] = False
            if cb < 0:
                legal[i, c] = False
                move_scores[i, c] = -1000
                move_dist[i, c] = 255
                continue
            legal[i, c] = True
            cr = cb >> 6
            md = (cb & 63) + 1
            move_dist[i, c] = md
            m = (cells + 2 - (ply + md)) // 2
            s = 0 if cr == 0 else (m if cr == mover else -m)
            move_scores[i, c] = s
            if s > top:
                top = s
        for c in range(w):
            best[i, c] = legal[i, c] and move_scores[i, c] == top


def label_arrays(found: np.ndarray, plies: np.ndarray, cells: int, w: int) -> dict:
    """The per-move label arrays of :func:`label_kernel` as a dict (``ok`` included)."""
    n = found.shape[0]
    out = dict(value=np.empty(n, np.int8), score=np.empty(n, np.int16),
               move_scores=np.empty((n, w), np.int16), move_distance=np.empty((n, w), np.uint8),
               legal_mask=np.empty((n, w), np.bool_), best_mask=np.empty((n, w), np.bool_),
               outcome=np.empty(n, np.uint8), distance=np.empty(n, np.uint8),
               ok=np.empty(n, np.bool_))
    label_kernel(np.ascontiguousarray(found, dtype=np.int64), np.ascontiguousarray(plies, dtype=np.int64),
                 cells, w, out["value"], out["score"], out["move_scores"], out["move_distance"],
                 out["legal_mask"], out["best_mask"], out["outcome"], out["distance"], out["ok"])
    return out

