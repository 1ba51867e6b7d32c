"""Command-line front end of BDD mode: ``c4table bdd count|solve BOARD`` and
``c4table crosscheck DIR``.

Design notes: ``docs/modules.md`` (``c4table.cli.bdd``).

    >>> from click.testing import CliRunner
    >>> r = CliRunner().invoke(bdd, ["count", "2x2", "--json", "--quiet"])
    >>> r.exit_code, r.output[:29]
    (0, '{"board": "2x2", "total": 18,')
"""
from __future__ import annotations

import json
import re
import resource
import sys
import time

import click

from c4table.bdd.crosscheck import (CorruptManifestError, ManifestError, compare, has_wdl,
                                    last_ply, load_manifest)
from c4table.bdd.encoding import ENCODINGS
from c4table.bdd.engine import DEFAULT_NODES, FLAVOURS, BddCapacityError, DDMemoryError
from c4table.bdd.results import WON_GAMES, BddCounts
from c4table.game.board import Board
from c4table.errors import EXIT_BAD_INPUT, EXIT_FAILED, BoardError
from c4table.wording import count
from c4table.cli.fail import fail as _fail

_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class NodeCount(click.ParamType):
    """A node capacity: an integer, optionally with a binary suffix (``200M``, ``2G``)."""

    name = "NODES"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", str(value))
        if not m:
            self.fail(f"{value!r} is not a node count such as 134217728 or 128M", param, ctx)
        n = int(m.group(1)) * _SUFFIX[m.group(2).lower()]
        if not 1024 <= n < 1 << 32:
            self.fail(f"{value!r}: node capacity must be between 1024 and 2^32-1", param, ctx)
        return n


def _parse_board(ctx: click.Context, spec: str, connect: int | None = None) -> Board:
    try:
        board = Board.parse(spec, connect or 4)
    except BoardError as e:
        _fail(str(e), EXIT_BAD_INPUT)
    if not board.supports("bdd"):
        _fail(f"board {board}: BDD mode knows 2D boards only, not 3D boards", EXIT_BAD_INPUT)
    return board


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _engine_options(f):
    """Options shared by ``bdd count``, ``bdd solve`` and ``crosscheck``."""
    opts = [
        click.option("--encoding", type=click.Choice(ENCODINGS), default="compressed",
                     show_default=True,
                     help="compressed: one variable per cell plus an extra row (Böck); "
                          "plain: two variables per cell."),
        click.option("--bdd-nodes", "nodes", type=NodeCount(), default=DEFAULT_NODES,
                     show_default=True,
                     help="oxidd node capacity, a hard cap (suffix K/M/G allowed). Memory is "
                          "committed as nodes are used."),
        click.option("--threads", type=click.IntRange(1, 256), default=1, show_default=True,
                     help="oxidd worker threads (measured: no gain from 2 on this workload)."),
        click.option("--engine", "flavour", type=click.Choice(FLAVOURS), default="bdd",
                     show_default=True,
                     help="oxidd diagram kind: bdd (plain) or bcdd (complement edges)."),
        click.option("--terminal", type=click.Choice(["union", "lines"]), default="union",
                     show_default=True,
                     help="remove terminal positions with one conjunction with the union of "
                          "all lines, or line by line as in Böck's implementation."),
        click.option("--image", type=click.Choice(["mono", "part"]), default="mono",
                     show_default=True,
                     help="one transition relation, or one image per column OR-ed together."),
        click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr."),
        click.option("--connect", type=click.IntRange(2, 64), default=None, metavar="K",
                     help="K in a row wins (default 4; crosscheck: the manifest's K, which "
                          "--connect must match)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _run(ctx, board: Board, solve_it: bool, encoding, nodes, threads, flavour, terminal, image,
         quiet, max_ply: int | None = None) -> BddCounts:
    """Run the forward (and backward) pass with progress on stderr, turning a node-capacity
    failure into a one-line message and exit status 1."""
    from c4table.bdd.count import count_positions
    from c4table.bdd.solve import solve

    def fwd(ply, positions, nodes_, elapsed):
        click.echo(f"[bdd {board}] forward  ply {ply:3d}  positions {positions:>22,}  "
                   f"nodes {nodes_:>12,}  {elapsed:9.1f}s", err=True)

    def bwd(ply, positions, nodes_, elapsed):
        click.echo(f"[bdd {board}] backward ply {ply:3d}  positions {positions:>22,}  "
                   f"nodes {nodes_:>12,}  {elapsed:9.1f}s", err=True)

    kw = dict(nodes=nodes, threads=threads, flavour=flavour, terminal=terminal,
              partitioned=(image == "part"), progress=None if quiet else fwd)
    try:
        if solve_it:
            return solve(board, encoding, backward_progress=None if quiet else bwd, **kw)
        return count_positions(board, encoding, max_ply=max_ply, **kw)
    except BddCapacityError as e:
        _fail(str(e), EXIT_FAILED)
    except DDMemoryError:
        _fail(f"BDD node capacity of {nodes:,} nodes exhausted; rerun with a larger "
                   f"--bdd-nodes (e.g. {nodes * 4})", EXIT_FAILED)


def _print_table(result: BddCounts, solved: bool) -> None:
    cols = ["ply", "positions", "terminal", "nodes"] + (["won", "drawn", "lost"] if solved else [])
    rows = [[f"{getattr(p, c):,}" for c in cols] for p in result.plies]
    cols = [WON_GAMES if c == "terminal" else c for c in cols]   # wins only: see results.py
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    click.echo("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in rows:
        click.echo("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    if solved:
        a, d, b = (sum(getattr(p, f) for p in result.plies) for f in ("won", "drawn", "lost"))
        root = result.plies[0]
        value = "first player wins" if root.won else "draw" if root.drawn else "second player wins"
        click.echo(f"won {a:,}  drawn {d:,}  lost {b:,}  (first player's view; "
                   f"empty board: {value})")
    click.echo(f"board {result.board}  total {result.total:,} positions  "
               f"({result.encoding} encoding)")
    click.echo(f"elapsed {result.wall:.2f} s (CPU {result.cpu:.2f} s)  peak nodes "
               f"{result.peak_nodes:,}  peak RSS {_peak_rss_mib():.0f} MiB")


@click.group("bdd", short_help="Per-ply counts with BDDs (Böck's method, oxidd)")
def bdd() -> None:
    """Symbolic (BDD) per-ply counts and win/draw/loss, Böck's method (oxidd)."""


def _command(solve_it: bool):
    def cmd(board, as_json, encoding, nodes, threads, flavour, terminal, image, quiet, connect):
        ctx = click.get_current_context()
        b = _parse_board(ctx, board, connect)
        result = _run(ctx, b, solve_it, encoding, nodes, threads, flavour, terminal, image, quiet)
        if as_json:
            click.echo(json.dumps(result.to_json()))
        else:
            _print_table(result, solved=solve_it)
    return cmd


@bdd.command("count", short_help="Per-ply positions and won games, symbolically")
@click.argument("board")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_engine_options
def count_cmd(**kw) -> None:
    """Per ply: positions, won games (the last mover has k in a row; Böck's "terminal") and
    BDD nodes of BOARD (WxH, e.g. 5x4); total. Mirror images are counted separately."""
    _command(False)(**kw)


@bdd.command("solve", short_help="Per-ply won, drawn and lost positions, symbolically")
@click.argument("board")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@_engine_options
def solve_cmd(**kw) -> None:
    """Per ply: won, drawn and lost positions from the FIRST player's view (won games count as
    won at odd plies, lost at even plies), total and won games of BOARD."""
    _command(True)(**kw)


@click.command("crosscheck", short_help="Compare the BDD figures with a build's manifest")
@click.argument("path", type=click.Path())
@_engine_options
def crosscheck(path, encoding, nodes, threads, flavour, terminal, image, quiet, connect) -> None:
    """Compare the BDD figures with an explicit table's manifest.

    PATH is a build directory holding manifest.json, or the manifest itself. Per ply,
    positions and won games, and won/drawn/lost when the manifest has a_wins/draws/b_wins,
    must be equal (the manifest counts mirror images separately, like the BDD). A partial
    build (forward --max-ply N) is compared up to its last ply. Prints each difference and a
    verdict; exit 0 if all equal, 1 on any mismatch or a damaged manifest, 2 if the manifest
    is missing or is not a manifest.
    """
    ctx = click.get_current_context()
    try:
        bd, mpath = load_manifest(path)
        board = bd.board
    except CorruptManifestError as e:
        _fail(str(e), EXIT_FAILED)
    except (ManifestError, BoardError, ValueError, TypeError) as e:
        _fail(str(e), EXIT_BAD_INPUT)
    if bd.root_moves is not None:   # c4table.game.root: counts of a subtree, not the board's
        _fail(f"{mpath}: a build rooted at {bd.root_moves or '(empty)'}; the BDD "
                   "counts every position of the board, so crosscheck compares full builds only", EXIT_BAD_INPUT)
    if connect is not None and connect != board.k:
        _fail(f"{mpath} is a build of board {board.width}x{board.height} with connect "
                   f"length {board.k}, not --connect {connect}", EXIT_BAD_INPUT)
    t0 = time.perf_counter()
    plies = bd.ply_counts()
    last = last_ply(plies)
    if last < board.cells:
        click.echo(f"note: partial build: the manifest has plies 0-{last} of {board.cells}; "
                   f"comparing up to ply {last}")
    result = _run(ctx, board, has_wdl(plies), encoding, nodes, threads, flavour, terminal,
                  image, quiet, max_ply=last if last < board.cells else None)
    res = compare(result, plies)
    for note in res.notes:
        click.echo(f"note: {note}")
    for d in res.diffs:
        click.echo(f"MISMATCH {d}")
    elapsed = time.perf_counter() - t0
    fields = "/".join(WON_GAMES if f == "terminal" else f for f in res.fields)
    if res.ok:
        click.echo(f"crosscheck {board}: OK, {count(len(result.plies), 'ply')} x {fields} equal "
                   f"({res.compared} values; BDD total {result.total:,}; {elapsed:.1f} s) "
                   f"against {mpath}")
    else:
        plies = len({d.ply for d in res.diffs})
        click.echo(f"crosscheck {board}: MISMATCH, {len(res.diffs)} of "
                   f"{count(res.compared, 'value')} differ on {count(plies, 'ply')} ({fields}) "
                   f"against {mpath}")
        _fail(f"{mpath}: crosscheck failed ({len(res.diffs):,} of "
                   f"{count(res.compared, 'value')} differ)", EXIT_FAILED)


if __name__ == "__main__":  # pragma: no cover - convenience: python -m c4table.cli.bdd
    cli = click.Group(commands=[bdd, crosscheck])
    cli(prog_name="c4table", args=sys.argv[1:])
