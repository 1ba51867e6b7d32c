"""Build plans of 3D gravity boards (``c4table plan XxYxH``): entries per generation, bytes and
compute, as :mod:`c4table.pipeline.planning.plan` gives them for 2D boards, and whether the keys fit the
pipeline's 64-bit words.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.plan3d``).

>>> p = make_plan3d("2x2x3k3", workers=1, memory_per_worker=2**30)
>>> p.entries             # counted exactly: the table has 1,463 entries
1463
"""
from __future__ import annotations

import math

from c4table.game.board import Board
from c4table.game.grid3d import symmetries
from c4table.pipeline.planning.plan import SMALL_PLY_LIMIT, Plan, PlyPlan, _profile_7x6, arrangements
from c4table.wording import count
from c4table.game.grid3d import readings
from c4table.game.rules import Position
from c4table.builddir.reader import BuildDir
from c4table.errors import BuildInputError


def _fraction_7x6():
    """``f(t)``: the reachable fraction of 7x6 fillings at board fraction ``t`` (0..1), log-linear
    between Böck's plies."""
    b76 = Board(7, 6)
    prof = _profile_7x6()
    logs = [math.log(p / arrangements(b76, [0] * 7, 0, g)) for g, p in enumerate(prof)]

    def f(t: float) -> float:
        x = t * (len(logs) - 1)
        lo = min(int(x), len(logs) - 2)
        return math.exp(logs[lo] + (logs[lo + 1] - logs[lo]) * (x - lo))
    return f


def small_plies3d(board: Board, limit: int = SMALL_PLY_LIMIT) -> list[tuple[int, int]]:
    """``(positions, entries)`` of plies 0, 1, ... of the 3D ``board``, enumerated exactly with
    the plain rules (every image counted in positions), while a ply has at most ``limit``
    entries.

    >>> small_plies3d(Board.parse("4x4x4"), limit=100)
    [(1, 1), (16, 3), (256, 36)]
    """
    layer = {0: Position(board)}
    out = []
    while layer and len(layer) <= limit:
        images = sum(len(set(readings(board, p.codes()))) for p in layer.values())
        out.append((images, len(layer)))
        nxt: dict[int, Position] = {}
        for p in layer.values():
            if p.is_terminal:
                continue
            for c in p.legal_moves():
                child = p.child(c)
                nxt.setdefault(child.key(), child)
        layer = nxt
    return out


def make_plan3d(board: str | Board, workers: int, memory_per_worker: int,
                from_dir=None, limit: int = SMALL_PLY_LIMIT) -> Plan:
    """Plan a build of the 3D ``board`` (see docs/modules.md); ``from_dir``: the build
    directory of a forward run of it (``c4table forward XxYxH --max-ply N``), whose counted
    plies replace the enumerated ones; ``limit``: enumerate plies of at most so many entries."""
    board = Board.parse(board)
    plan = Plan(board, workers, memory_per_worker)
    cells, n = board.cells, board.width
    S = len(symmetries(board))
    exact = small_plies3d(board, limit)[: cells + 1]
    source = "exact (enumerated)"
    if from_dir is not None:
        m = BuildDir.load(from_dir)      # checked: a damaged manifest is refused
        if m.board.name != board.name:
            raise BuildInputError(f"{from_dir}: manifest is for board {m.board.name}, not {board}")
        measured = [(p.positions, p.entries) for p in m.plies
                    if p.positions is not None and p.entries is not None]
        if len(measured) > len(exact):
            exact, source = measured[: cells + 1], "measured"
    frac = _fraction_7x6()

    def free(g: int) -> float:   # fillings of g cells ignoring lines, images sharing an entry
        return arrangements(board, [0] * n, 0, g) / S

    last = len(exact) - 1
    c = exact[last][1] / (free(last) * frac(last / cells)) if last < cells else 0.0
    for g in range(cells + 1):
        if g < len(exact):
            plan.plies.append(PlyPlan(g, exact[g][0], exact[g][1], source))
        else:
            e = int(round(c * free(g) * frac(g / cells)))
            plan.plies.append(PlyPlan(g, e * S, e, f"estimated (calibrated at ply {last})"))
    if last < cells:
        bound = sum(free(g) for g in range(cells + 1))
        plan.notes.append(
            f"plies 0-{last} counted exactly, the rest estimated from the fillings of the board "
            f"ignoring lines (divided by its {S} symmetries) times the reachable fraction of 7x6 "
            f"fillings at the same fill (Böck's Table 2): a shape assumption, no measurement; "
            f"every filling reachable would be at most {bound:.3g} entries")
    bits = max(1, (board.key_limit - 1).bit_length())
    plan.notes.append(
        f"keys: {board.base} column codes (height {board.height}, K = {board.k}) per column, "
        f"{n} columns: {bits} bits, {board.key_bytes} key bytes, {board.entry_size}-byte entries")
    cells_bits = board.width * (board.height + 1)
    if bits > 56 or cells_bits > 64:
        need = []
        if bits > 64:
            need.append(f"keys of {bits} bits do not fit in 64: the pipeline would need 128-bit "
                        "keys (two words per key, per child key and per backward message, "
                        "parent key and score: " + count(bits + 8, "bit") + ")")
        elif bits > 56:
            need.append(f"keys of {bits} bits fit a uint64 but not the backward messages "
                        "(key << 8 | score): messages of two words")
        if cells_bits > 64:
            need.append(f"bitboards of X*Y*(H+1) = {cells_bits} bits with the sentinel row; "
                        f"3D lines are tested with masks, so {cells} bits without it"
                        + (" would fit one word" if cells <= 64 else " need two words"))
        plan.notes.append("not buildable here: " + "; ".join(need))
    return plan
