"""BDD mode: an independent symbolic computation of per-ply position counts and win/draw/loss
(Böck, "Strongly Solving 7x6 Connect-Four on Consumer Grade Hardware", sections 2-3), used to
cross-check the explicit tables. It shares no code with the explicit pipeline: only the board
parser (:class:`c4table.game.board.Board`) is common.

Design notes: ``docs/modules.md`` (``c4table.bdd``).

    >>> from c4table.bdd import count_positions, solve
    >>> count_positions("4x4").total
    161029
    >>> solve("3x3").plies[9].to_json()
    {'ply': 9, 'positions': 114, 'won_games': 0, 'nodes': 66, 'won': 0, 'drawn': 114, 'lost': 0}
"""
from c4table.bdd.count import count_positions
from c4table.bdd.encoding import ENCODINGS
from c4table.bdd.engine import DEFAULT_NODES, BddCapacityError
from c4table.bdd.results import BddCounts, BddSolution, PlyResult
from c4table.bdd.solve import solve

__all__ = ["BddCapacityError", "BddCounts", "BddSolution", "DEFAULT_NODES", "ENCODINGS",
           "PlyResult", "count_positions", "solve"]
