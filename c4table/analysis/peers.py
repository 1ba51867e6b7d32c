"""Other solvers' per-ply win/draw/loss counts read and compared with a table's: Böck's BDD
solver's CSV, jh85's ZDD solver's ``reachtally`` and ``solve`` lines, all brought to the
table's convention (every position reached by legal play, a position and its mirror image
counted apart, won / drawn / lost from the first player's view). An independent check used by
``tools/compare/bench_peers.py``, which runs the solvers; the conventions are in its docstring.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Wdl:
    """One ply's won / drawn / lost counts, from the first player's (A's) view unless said."""
    won: int
    drawn: int
    lost: int

    @property
    def total(self) -> int:
        return self.won + self.drawn + self.lost


@dataclass(frozen=True)
class PseudoPly:
    """One of jh85's ``solve`` lines: ``n`` pseudo-positions, their values for the side to move."""
    n: int
    stm: Wdl


def parse_bock_csv(text: str) -> dict[int, Wdl]:
    """Böck's ``results_solve_*.csv``: ply -> win/draw/loss for the side to move."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = [c.strip() for c in lines[0].split(",")]
    want = ("ply", "win_count", "draw_count", "loss_count", "total_count")
    if any(c not in head for c in want):
        raise ValueError(f"not Böck's results CSV (header {lines[0]!r})")
    col = {c: head.index(c) for c in want}
    out = {}
    for ln in lines[1:]:
        f = [int(float(x)) for x in ln.split(",")]
        w = Wdl(f[col["win_count"]], f[col["draw_count"]], f[col["loss_count"]])
        if w.total != f[col["total_count"]]:
            raise ValueError(f"Böck's CSV: ply {f[col['ply']]}: win+draw+loss != total")
        out[f[col["ply"]]] = w
    return out


def bock_to_a_view(stm: dict[int, Wdl]) -> dict[int, Wdl]:
    """Side to move's view -> A's: A moves at even plies, B at odd ones."""
    return {p: w if p % 2 == 0 else Wdl(w.lost, w.drawn, w.won) for p, w in stm.items()}


def _int(s: str) -> int:
    return int(s.replace(",", ""))


_REACH = re.compile(r"^\s*(\d+)\s*\|\s*([\d,]+)\s*\|\s*([\d,]+)\s*\|\s*([\d,]+)\s*\|\s*([\d,]+)\s*\|")
_SOLVE = re.compile(r"^\[ply\s*(\d+)\]\s*n=([\d,]+)\s+W/D/L\(stm\)\s*=\s*([\d,]+)\s*/\s*([\d,]+)"
                    r"\s*/\s*([\d,]+)")


def parse_jh85_reachtally(text: str) -> dict[int, Wdl]:
    """jh85's ``reachtally`` table: ply -> won/drawn/lost (A's view, finished games included)."""
    out = {}
    for ln in text.splitlines():
        m = _REACH.match(ln)
        if m:
            ply, won, drawn, lost, total = (_int(g) for g in m.groups())
            if won + drawn + lost != total:
                raise ValueError(f"jh85 reachtally: ply {ply}: won+drawn+lost != total")
            out[ply] = Wdl(won, drawn, lost)
    if not out:
        raise ValueError("no per-ply lines in jh85's reachtally output")
    return out


def parse_jh85_solve(text: str) -> dict[int, PseudoPly]:
    """jh85's ``solve`` lines: ply -> pseudo-positions and their W/D/L for the side to move."""
    out = {}
    for ln in text.splitlines():
        m = _SOLVE.match(ln.strip())
        if m:
            ply, n, w, d, l = (_int(g) for g in m.groups())
            if w + d + l != n:
                raise ValueError(f"jh85 solve: ply {ply}: W+D+L != n")
            out[ply] = PseudoPly(n, Wdl(w, d, l))
    if not out:
        raise ValueError("no '[ply k] n=... W/D/L(stm)' lines in jh85's solve output")
    return out


# ---------------------------------------------------------------- the cross-checks

def our_counts(table: Path) -> tuple[dict[int, Wdl], dict[int, int]]:
    """The table's per-ply counts, from its keys (mirror images counted apart, A's view), and
    its finished games per ply (a line of four, or a full board)."""
    from c4table.analysis.stats import scan_stats
    rows = scan_stats(table, quiet=True)
    return ({r.ply: Wdl(r.won, r.drawn, r.lost) for r in rows},
            {r.ply: r.finished for r in rows})


def compare_exact(ours: dict[int, Wdl], theirs: dict[int, Wdl], who: str) -> list[str]:
    """Every ply's won/drawn/lost must be equal; plies absent on one side count as zero."""
    bad = []
    for p in sorted(set(ours) | set(theirs)):
        a, b = ours.get(p, Wdl(0, 0, 0)), theirs.get(p, Wdl(0, 0, 0))
        if a != b:
            bad.append(f"ply {p}: c4table won/drawn/lost {a.won}/{a.drawn}/{a.lost}, "
                       f"{who} {b.won}/{b.drawn}/{b.lost}")
    return bad


def unfinished_stm(ours: dict[int, Wdl], finished: dict[int, int], cells: int) -> dict[int, Wdl]:
    """The table's unfinished positions per ply (0..cells-1), side to move's view. Below a full
    board a finished game is a line made by the player who just moved: A's win at odd plies."""
    out = {}
    for p in range(cells):
        w, f = ours.get(p, Wdl(0, 0, 0)), finished.get(p, 0)
        a = Wdl(w.won - f, w.drawn, w.lost) if p % 2 else Wdl(w.won, w.drawn, w.lost - f)
        out[p] = a if p % 2 == 0 else Wdl(a.lost, a.drawn, a.won)
    return out


def check_pseudo(ours: dict[int, Wdl], finished: dict[int, int], cells: int,
                 pseudo: dict[int, PseudoPly]) -> tuple[list[str], int]:
    """Each class of the table's unfinished positions at most jh85's pseudo-position count of
    that class, per ply. Returns the problems and the surplus (stackings no game reaches)."""
    bad, surplus = [], 0
    for p, mine in unfinished_stm(ours, finished, cells).items():
        theirs = pseudo.get(p)
        if theirs is None:
            bad.append(f"ply {p}: no jh85 solve line")
            continue
        for name in ("won", "drawn", "lost"):
            if getattr(mine, name) > getattr(theirs.stm, name):
                bad.append(f"ply {p}: c4table has {getattr(mine, name)} unfinished positions "
                           f"{name} for the side to move, jh85's space only {getattr(theirs.stm, name)}")
        surplus += theirs.n - mine.total
    return bad, surplus


# ---------------------------------------------------------------- measuring a run

