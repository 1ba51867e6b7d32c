"""What a table says about a position: :class:`Probe` (outcome, distance, each legal move as a
:class:`MoveProbe`), the order of moves for the side to move, and the JSON objects ``lookup
--json`` and the server print for an answer or for a position that cannot arise."""
from __future__ import annotations

from dataclasses import dataclass, field

from c4table.wording import clip



@dataclass
class MoveProbe:
    """One legal move: 1-based ``column``; the outcome if it is played, and ``distance`` in
    plies from the position before the move (the move itself counts as one ply)."""

    column: int
    outcome: str
    distance: int


@dataclass
class Probe:
    """What the table says about a position: ``outcome`` (``"A"``, ``"B"`` or ``"draw"``) and
    ``distance`` (plies to that result under optimal play), plus each legal move."""

    position: str
    ply: int
    to_move: str
    outcome: str
    distance: int
    terminal: bool
    moves: list[MoveProbe] = field(default_factory=list)

    def best_moves(self) -> list[MoveProbe]:
        """Optimal moves: the fastest win, else a draw, else the slowest loss."""
        if not self.moves:
            return []
        ranked = sorted(self.moves, key=lambda m: move_rank(m, self.to_move))
        best = move_rank(ranked[0], self.to_move)
        return [m for m in ranked if move_rank(m, self.to_move) == best]

    def to_json(self) -> dict:
        """The fields as a plain dict, moves as dicts (``asdict`` without its deep copies, which
        cost the server more than the probe itself)."""
        d = {k: v for k, v in self.__dict__.items() if k[0] != "_"}   # not the board (_board)
        d["moves"] = [dict(m.__dict__) for m in self.moves]
        return d


def _probe_svg(self) -> str | None:
    """Jupyter's picture of a probe (:mod:`c4table.game.svg`), when its table set its board."""
    b = getattr(self, "_board", None)
    if b is None or not b.supports("drawing"):
        return None
    from c4table.game.svg import probe_svg
    return probe_svg(self, b.width, b.height)


Probe._repr_svg_ = _probe_svg


def move_rank(m: MoveProbe, mover: str) -> tuple:
    """Sort key of a move for the side to move: win (fewest plies) < draw < loss (most plies)."""
    if m.outcome == mover:
        return (0, m.distance)
    if m.outcome == "draw":
        return (1, 0)
    return (2, -m.distance)


def lookup_json(probe, board: str | None = None) -> dict:
    """The object ``lookup --json`` prints for a probed position (the API's answer too):
    ``{"board": ..., "position": ..., "ply": ..., ...}`` (``board`` first when given).

    >>> lookup_json(Probe("", 0, "A", "draw", 20, False), "5x4")["board"]
    '5x4'
    """
    obj = probe.to_json()
    return {"board": board, **obj} if board is not None else obj


def with_winning_cells(obj: dict, table, probe) -> dict:
    """``obj`` (a probe's JSON object) with, for a won game, ``winning_cells``: the
    ``[column, row]`` pairs (both 1-based, row 1 at the bottom) of the line that won it, as
    the web board marks them and the terminal game brackets them. Other answers unchanged."""
    if probe.terminal and probe.outcome != "draw":
        obj["winning_cells"] = [[c + 1, r + 1]
                                for c, r in table.position(probe.position).winning_cells()]
    return obj


def error_json(text: str, message: str, board: str | None = None) -> dict:
    """The object ``lookup --json`` prints for a position that cannot arise (the input
    quoted cut and escaped, :func:`c4table.wording.clip`).

    >>> error_json("9", "bad move", "5x4")
    {'board': '5x4', 'position': '9', 'error': 'bad move'}
    """
    obj = {"position": clip(text), "error": message}
    return {"board": board, **obj} if board is not None else obj
