"""Result records of BDD mode: per-ply counts and win/draw/loss, as plain dataclasses.

Design notes: ``docs/modules.md`` (``c4table.bdd.results``).

    >>> r = BddCounts("1x1", "compressed", [PlyResult(0, 1, 0, 3), PlyResult(1, 1, 0, 3)])
    >>> r.total, r.to_json()["plies"][1]
    (2, {'ply': 1, 'positions': 1, 'won_games': 0, 'nodes': 3})
"""
from __future__ import annotations

from dataclasses import dataclass, field

WON_GAMES = "won_games"
"""Output name of :attr:`PlyResult.terminal` (text columns and JSON keys): games the last
mover has won with k in a row (Böck's Table 2 "terminal"). c4table's own statistics call every
finished game, full-board draws included, ``finished``: two names for two counts."""


@dataclass
class PlyResult:
    """One ply: ``positions`` (all positions of the ply, terminal ones included), ``terminal``
    (the last mover has k in a row; full boards without a line are not counted here, as in
    Böck's Table 2), ``nodes`` (BDD nodes of the ply's set, oxidd ``node_count``, terminal
    nodes included) and, after solving, ``won``/``drawn``/``lost`` from the first player's
    view."""

    ply: int
    positions: int
    terminal: int
    nodes: int
    won: int | None = None
    drawn: int | None = None
    lost: int | None = None

    def to_json(self) -> dict:
        d = {"ply": self.ply, "positions": self.positions, WON_GAMES: self.terminal,
             "nodes": self.nodes}
        if self.won is not None:
            d.update(won=self.won, drawn=self.drawn, lost=self.lost)
        return d


@dataclass
class BddCounts:
    """Forward-pass result of one board: per-ply counts plus run statistics (``peak_nodes``:
    largest number of stored BDD nodes sampled between operations; ``wall``/``cpu``: seconds)."""

    board: str
    encoding: str
    plies: list[PlyResult]
    peak_nodes: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    stats: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        """All positions of all plies (the figure of Böck's Table 1)."""
        return sum(p.positions for p in self.plies)

    def to_json(self) -> dict:
        return {"board": self.board, "total": self.total,
                "plies": [p.to_json() for p in self.plies]}


@dataclass
class BddSolution(BddCounts):
    """Forward and backward pass: every ply also has ``won``/``drawn``/``lost``."""
