"""Comparison of BDD figures with the per-ply counts an explicit build recorded
(``manifest.json``, read through :class:`c4table.builddir.BuildDir`).

Design notes: ``docs/modules.md`` (``c4table.bdd.crosscheck``).

    >>> from c4table.bdd.results import BddSolution, PlyResult
    >>> from c4table.builddir.reader import PlyCounts
    >>> sol = BddSolution("1x1", "compressed", [PlyResult(0, 1, 0, 3, 0, 1, 0),
    ...                                          PlyResult(1, 1, 0, 3, 0, 1, 0)])
    >>> plies = [PlyCounts(0, positions=1, terminal=0, a_wins=0, draws=1, b_wins=0),
    ...          PlyCounts(1, positions=1, terminal=1, a_wins=1, draws=0, b_wins=0)]
    >>> r = compare(sol, plies)
    >>> [str(d) for d in r.diffs]
    ['ply 1: won: bdd 0, table 1', 'ply 1: drawn: bdd 1, table 0']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from c4table.bdd.results import WON_GAMES, BddCounts
from c4table.errors import BuildError, C4Error, CorruptDataError
from c4table.builddir.manifest import MANIFEST, NotJSONError
from c4table.builddir.reader import BuildDir, PlyCounts

FIELDS = (("positions", "positions"), ("terminal", "terminal"), ("won", "a_wins"),
          ("drawn", "draws"), ("lost", "b_wins"))
"""(BDD field, :class:`~c4table.builddir.reader.PlyCounts` field) pairs compared per ply."""


class ManifestError(C4Error):
    """A manifest that is missing, unreadable or lacks the fields a cross-check needs."""


class CorruptManifestError(ManifestError):
    """A manifest whose contents do not match its own checksum (damaged or edited)."""


@dataclass
class Diff:
    """One differing value: ``table`` is ``None`` if the manifest has no such ply."""

    ply: int
    field: str
    bdd: int | None
    table: int | None

    def __str__(self) -> str:
        show = lambda v: "absent" if v is None else f"{v}"  # noqa: E731
        name = WON_GAMES if self.field == "terminal" else self.field
        return f"ply {self.ply}: {name}: bdd {show(self.bdd)}, table {show(self.table)}"


@dataclass
class CrosscheckResult:
    """Outcome of :func:`compare`: the differences, how many values were compared and
    explanatory notes."""

    board: str
    diffs: list[Diff] = field(default_factory=list)
    compared: int = 0
    fields: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diffs


def load_manifest(path: str | Path) -> tuple[BuildDir, Path]:
    """Read ``path/manifest.json`` (or ``path`` itself if it is a file) through
    :class:`~c4table.builddir.BuildDir`, which checks it: :class:`ManifestError` if there is
    none, :class:`~c4table.errors.CorruptDataError` (one line naming the file) if it is
    damaged, not an object, or fails its own checksum.

    >>> try:
    ...     load_manifest("/nonexistent")
    ... except ManifestError as e:
    ...     print(e)
    no manifest at /nonexistent/manifest.json
    """
    p = Path(path)
    if p.is_dir() or not p.suffix:
        p = p / "manifest.json"
    if not p.is_file():
        raise ManifestError(f"no manifest at {p}")
    hint = "crosscheck takes a build directory or its manifest.json"
    try:   # the one checked reader: format, own checksum, layout
        bd = BuildDir.load(p)
    except NotJSONError as e:   # a manifest.json that is not JSON is damaged (below); another
        if p.name != MANIFEST:  # file that is not JSON is the wrong argument (bad input)
            raise ManifestError(f"{p}: not a manifest (not JSON text); {hint}") from None
        raise CorruptManifestError(f"{e}; its figures are not trusted") from None
    except OSError as e:
        raise ManifestError(f"cannot read manifest {p}: {e.strerror or e}") from None
    except CorruptDataError as e:
        raise CorruptManifestError(f"{e}; its figures are not trusted") from None
    except BuildError as e:
        raise ManifestError(str(e)) from None
    return bd, p


def last_ply(plies: list[PlyCounts]) -> int:
    """The last ply a build has counts for (``-1`` if none): a partial build
    (``forward --max-ply N``) stops early.

    >>> last_ply([PlyCounts(0, positions=1), PlyCounts(1, positions=5), PlyCounts(2)])
    1
    """
    return max((row.ply for row in plies if row.positions is not None), default=-1)


def has_wdl(plies: list[PlyCounts]) -> bool:
    """Whether the backward pass counted the outcomes of every ply."""
    return bool(plies) and all(row.solved for row in plies)


def compare(result: BddCounts, plies: list[PlyCounts]) -> CrosscheckResult:
    """Compare the BDD per-ply figures of ``result`` with a build's counts ``plies``
    (:meth:`c4table.builddir.BuildDir.ply_counts`): positions and terminal always,
    won/drawn/lost when the build has them and ``result`` is solved."""
    solved = bool(result.plies) and result.plies[0].won is not None
    fields = [f for f in FIELDS if f[0] in ("positions", "terminal")
              or (solved and has_wdl(plies))]
    out = CrosscheckResult(result.board, fields=tuple(f for f, _ in fields))
    if not (solved and has_wdl(plies)):
        out.notes.append("won/drawn/lost absent from the manifest: compared positions and "
                         f"{WON_GAMES} only")
    rows = {row.ply: row for row in plies}
    last = result.plies[-1].ply
    for res in result.plies:
        row = rows.pop(res.ply, None)
        for ours, theirs in fields:
            mine = getattr(res, ours)
            other = None if row is None else getattr(row, theirs)
            out.compared += 1
            if (ours == "terminal" and res.ply == last and other == res.positions
                    and mine != other):
                out.notes.append(f"ply {last}: the manifest's finished games include the "
                                 f"{res.positions - mine:,} full-board draws; the BDD's "
                                 f"{WON_GAMES} count wins only (Böck's Table 2); accepted")
                continue
            if mine != other:
                if row is None and mine == 0:   # a table may omit empty plies
                    continue
                out.diffs.append(Diff(res.ply, ours, mine, other))
    for ply, row in sorted(rows.items()):       # plies the BDD does not have
        for ours, theirs in fields:
            if getattr(row, theirs) not in (None, 0):
                out.diffs.append(Diff(ply, ours, None, getattr(row, theirs)))
    return out
