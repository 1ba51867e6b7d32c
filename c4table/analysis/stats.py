"""Per-ply statistics of a table, like Table 2 of Böck's paper: for every ply the positions
(mirror images counted separately, and table entries, which share one per mirror pair), the
finished games (a line of k or a full board), and how many are won, drawn and lost from the first player's (A's) view;
as TSV or markdown, and as a log-scale plot (matplotlib).

Design notes: ``docs/modules.md`` (``c4table.analysis.stats``).

>>> rows = ply_stats("tables/5x4")
>>> format_table(rows, "tsv").splitlines()[1].split()
['0', '0', '1', '0', '1', '1', '0']
"""
from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Sequence, TextIO

import numpy as np

from c4table.progress import Meter
from c4table.game.board import Board
from c4table.errors import MissingExtraError, MissingTableError, TableError
from c4table.analysis.decode import decode_entries
from c4table.table.source import Table
from c4table.table.sums import check_plies
from c4table.open import open_table
from c4table.builddir.reader import BuildDir
from c4table.io.storage import is_url



@dataclass
class PlyStats:
    """Counts of one ply. ``won``/``drawn``/``lost`` are from A's (the first player's) view and
    count mirror images separately, like ``positions`` and ``finished``; ``entries`` counts
    table entries (a position and its mirror image share one). ``finished``: games over at
    this ply, by a line of k or a full board (the manifest's ``terminal``; BDD mode's
    ``won_games`` counts the lines only)."""

    ply: int
    won: int
    drawn: int
    lost: int
    positions: int
    entries: int
    finished: int

    @property
    def terminal(self) -> int:
        """Former name of :attr:`finished`."""
        return self.finished


COLUMNS = [f.name for f in fields(PlyStats)]
#: The column headers ``stats`` prints: whose win ``won`` and ``lost`` count is in the name.
HEADERS = [{"won": "won_by_A", "lost": "lost_by_A"}.get(c, c) for c in COLUMNS]


def stats_from_manifest(build: BuildDir) -> list[PlyStats]:
    """Per-ply rows from a build directory's checked manifest (after the backward pass)."""
    out = []
    root = build.manifest.origin()
    first = root.ply if root is not None else 0   # a rooted build: its plies from the root's
    for rec in build.plies[first:]:
        if rec.a_wins is None:
            raise TableError("the manifest has no outcome counts yet (run the backward pass)")
        out.append(PlyStats(rec.ply, rec.a_wins, rec.draws, rec.b_wins,
                            rec.positions, rec.entries, rec.terminal))
    if not out:
        raise TableError("the manifest has no per-ply counts (run the forward and backward passes)")
    return out


def scan_stats(table, quiet: bool = True, stream: TextIO | None = None) -> list[PlyStats]:
    """Per-ply rows counted from a table file (a :class:`~c4table.table.Table` or a path) in one
    streaming, vectorised pass.

    >>> [s.positions for s in scan_stats("tables/4x4/connect4_4x4.dat")][:3]
    [1, 4, 16]
    """
    own = not isinstance(table, Table)
    t = open_table(table) if own else table
    stream = stream or sys.stderr
    try:
        b = t.board
        n = b.cells + 1
        acc = {k: np.zeros(n, np.int64) for k in
               ("entries", "sym", "term", "term_sym", "a", "a_sym", "d", "d_sym", "b", "b_sym")}
        meter = Meter("stats", len(t), "entries", quiet, stream)
        seen = 0
        for chunk in t.iter_entries():
            _, ply, term, images = decode_entries(b, chunk["key"], images=True)
            check_plies(t.path, b, chunk["outcome"], ply)   # a byte its ply cannot have: damage
            cls = chunk["outcome"] & 0xC0
            sym = 2 - images   # positions = 2 * entries - sym (images: 1, 2, or up to 8 in 3D)

            def count(mask=None, weights=None):
                if mask is None:
                    return np.bincount(ply, weights, minlength=n)[:n].astype(np.int64)
                return np.bincount(ply[mask], None if weights is None else weights[mask],
                                   minlength=n)[:n].astype(np.int64)
            acc["entries"] += count()
            acc["sym"] += count(None, sym)
            acc["term"] += count(term)
            acc["term_sym"] += count(term, sym)
            for name, bits in (("a", 0x40), ("d", 0x00), ("b", 0x80)):
                m = cls == bits
                acc[name] += count(m)
                acc[name + "_sym"] += count(m, sym)
            seen += chunk.shape[0]
            meter.update(seen)
        def both(k: str, p: int) -> int:  # mirror images counted separately
            return int(2 * acc[k][p] - acc[k + "_sym"][p])
        acc["entries_sym"] = acc["sym"]
        first = t.root.ply if t.root is not None else 0   # a rooted table: from its root's ply
        return [PlyStats(p, both("a", p), both("d", p), both("b", p), both("entries", p),
                         int(acc["entries"][p]), both("term", p)) for p in range(first, n)]
    finally:
        if own:
            t.close()


def _find_table(d: Path) -> Path | None:
    found = sorted(d.glob("connect*_*x*.dat"))
    return found[0] if len(found) == 1 else None


def ply_stats(path: str | os.PathLike, scan: bool = False, board: str | Board | None = None,
              quiet: bool = True) -> list[PlyStats]:
    """Per-ply rows of a build directory, its ``manifest.json``, or a table file: from the
    manifest when there is one describing the table (unless ``scan``), else by scanning.

    >>> ply_stats("tables/5x4")[4]
    PlyStats(ply=4, won=..., drawn=..., lost=..., positions=..., entries=..., finished=0)
    """
    if str(path).startswith(("http://", "https://")) or is_url(str(path)):   # a remote .c4z
        with open_table(str(path), board) as t:
            return scan_stats(t, quiet)
    p = Path(path)
    if not p.exists():
        raise MissingTableError(f"{p}: no such build directory or table file")
    if p.is_dir() or p.name.endswith(".json"):
        has_manifest = p.is_file() or (p / "manifest.json").is_file()
        if has_manifest and not scan:
            return stats_from_manifest(BuildDir.load(p))   # checked: refuses a damaged one
        table = _find_table(p) if p.is_dir() else None
        if table is None:
            raise MissingTableError(f"{p}: no manifest.json and no single connectK_WxH.dat to scan")
    else:
        table = p
    with open_table(table, board) as t:   # refuses a truncated or renamed table
        if t.build is not None and t.build.plies and not scan:
            return stats_from_manifest(t.build)
        return scan_stats(t, quiet)


def totals(rows: Sequence[PlyStats]) -> PlyStats:
    """Column sums (``ply`` = -1)."""
    sums = {c: sum(getattr(r, c) for r in rows) for c in COLUMNS[1:]}
    return PlyStats(-1, **sums)


def format_table(rows: Sequence[PlyStats], fmt: str = "tsv") -> str:
    """``"tsv"``: a header and one line per ply; ``"markdown"``: a table with thousands
    separators and a total row. The headers (:data:`HEADERS`) say the counts are from A's
    view: ``won_by_A`` (positions A wins with perfect play), ``drawn``, ``lost_by_A`` (B wins).

    >>> format_table([PlyStats(0, 1, 0, 0, 1, 1, 0)], "tsv").splitlines()[1].split()
    ['0', '1', '0', '0', '1', '1', '0']
    """
    if fmt == "tsv":
        lines = ["\t".join(HEADERS)]
        lines += ["\t".join(str(v) for v in asdict(r).values()) for r in rows]
        return "\n".join(lines)
    if fmt in ("markdown", "md"):
        head = "| " + " | ".join(HEADERS) + " |"
        sep = "|" + "|".join("---:" for _ in COLUMNS) + "|"
        lines = [head, sep]
        for r in list(rows) + [totals(rows)]:
            vals = ["total" if r.ply < 0 else str(r.ply)] + [f"{v:,}" for v in list(asdict(r).values())[1:]]
            lines.append("| " + " | ".join(vals) + " |")
        return "\n".join(lines)
    raise ValueError(f"unknown format {fmt!r}: tsv or markdown")


def pyplot():
    """matplotlib.pyplot on the Agg back-end, or :class:`MissingExtraError` naming the extra."""
    try:
        import matplotlib  # the [plot] extra: a missing one is one line
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingExtraError("stats --png needs matplotlib, the [plot] extra: "
                                "pip install 'c4table[plot]'") from None
    return plt


def plot_stats(rows: Sequence[PlyStats], png: str | os.PathLike, title: str = "") -> Path:
    """Draw positions, won, drawn, lost and finished games per ply on a log scale (like the figures
    of Böck's paper) into the PNG file ``png``. Needs matplotlib.

    >>> plot_stats(ply_stats("tables/5x4"), "wdl.png", "5x4")
    PosixPath('wdl.png')
    """
    plt = pyplot()
    png = Path(png)
    x = [r.ply for r in rows]
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100)
    series = (("positions", "all positions", "k", "-"), ("won", "won by A", "tab:blue", "-"),
              ("drawn", "drawn", "tab:gray", "-"), ("lost", "lost by A", "tab:red", "-"),
              ("finished", "finished games", "tab:green", ":"))
    for attr, label, color, style in series:
        y = [getattr(r, attr) for r in rows]
        ys = [v if v > 0 else float("nan") for v in y]  # log scale: leave zeros out
        ax.plot(x, ys, style, color=color, marker=".", label=label)
    ax.set_yscale("log")
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("ply (chips on the board)")
    ax.set_ylabel("positions (mirror images counted)")
    ax.set_title(title or "positions per ply")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, format="png")
    plt.close(fig)
    return png
