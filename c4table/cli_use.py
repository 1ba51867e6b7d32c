"""Command-line commands for using a table: ``best`` (optimal moves), ``play`` (against perfect
play), ``stats`` (per-ply counts and plot) and ``export`` (parquet dataset); plus the helpers
``lookup`` shares with them (reading drawings, drawing the board).

Registered on the ``c4table`` group by :func:`c4table.cli._register_optional`; errors follow
:mod:`c4table.cli` (one line on stderr, exit status 2 for bad input, 1 for bad data).

>>> from click.testing import CliRunner
>>> CliRunner().invoke(best, ["--table", "tables/5x4/connect4_5x4.dat", "3344"]).output
'3344  ply 4, A to move: A wins in 3 plies; best: 2 (A wins in 3 plies)\\n'
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from c4table.errors import IllegalPositionError

TABLE_OPTION = click.option("--table", "table_path", required=True, type=click.Path(dir_okay=False),
                            help="table file (connect4_WxH.dat)")
TABLE_BOARD_OPTION = click.option("--board", "board", default=None,
                                  help="board of the table if its name does not say (WxH)")
DRAWING_OPTION = click.option("--drawing", "drawing", default=None, metavar="FILE|-",
                              help="read the position as a drawing (rows of . A B or . x o, top row "
                                   "first) from FILE or - for stdin")


def read_drawing(source: str) -> str:
    """Text of a drawing from a file name or ``-`` (stdin).

    >>> read_drawing("board.txt")
    '.....\\n.....\\n..B..\\n.AAB.\\n'
    """
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text()
    except FileNotFoundError:
        raise click.BadParameter(f"{source}: no such file", param_hint="--drawing") from None


def queries(positions: tuple[str, ...], drawing: str | None) -> list[tuple[str, bool]]:
    """``(text, batch)`` pairs to answer: a drawing, the positions, and stdin lines for ``-``."""
    if drawing is not None and "-" in positions and drawing == "-":
        raise click.UsageError("stdin cannot hold both a drawing (--drawing -) and positions (-)")
    out: list[tuple[str, bool]] = []
    if drawing is not None:
        out.append((read_drawing(drawing), False))
    for p in positions:
        if p == "-":
            out.extend((line.strip(), True) for line in sys.stdin)
        else:
            out.append((p, False))
    if not out:
        raise click.UsageError("give at least one position (\"\" for the empty board, - for stdin) "
                               "or --drawing FILE")
    return out


def board_picture(table, probe) -> str:
    """The drawing of a probed position with its best moves marked, indented for the CLI."""
    from c4table.drawing import render
    pos = table.position(probe.position)
    text = render(pos, [m.column for m in probe.best_moves()])
    return "\n".join("    " + line for line in text.splitlines())


def lookup_json(probe) -> dict:
    """The object ``lookup --json`` prints for a probed position (the API's answer too).

    >>> from c4table.table import Probe
    >>> lookup_json(Probe("", 0, "A", "draw", 20, False))["outcome"]
    'draw'
    """
    return probe.to_json()


def error_json(text: str, message: str) -> dict:
    """The object ``lookup --json -`` prints for a line that is not a legal position.

    >>> error_json("9", "bad move")
    {'position': '9', 'error': 'bad move'}
    """
    return {"position": text, "error": message}


def answer_queries(table, qs: list[tuple[str, bool]], as_json: bool, draw: bool,
                   to_json, to_text) -> int:
    """Probe each ``(text, batch)`` query of :func:`queries` and print one answer per query
    (``to_json(probe)`` as a JSON line, or ``to_text(probe)``; plus the drawing if ``draw``).
    An illegal position read in a batch prints an ``error`` answer and counts as a failure; a
    single one given on the command line raises. Returns the number of failures."""
    failures = 0
    for text, batch in qs:
        try:
            probe = table.probe(text)
        except IllegalPositionError as e:
            if not batch:
                raise
            failures += 1
            click.echo(json.dumps(error_json(text, str(e))) if as_json
                       else f"{text}: error: {e}")
            continue
        if as_json:
            obj = to_json(probe)
            if draw:
                obj["drawing"] = table.drawing(probe.position)
            click.echo(json.dumps(obj))
        else:
            click.echo(to_text(probe))
            if draw:
                click.echo(board_picture(table, probe))
    return failures


def _best_line(probe) -> str:
    from c4table.play import describe
    head = f"{probe.position or '(empty)'}  ply {probe.ply}, {probe.to_move} to move: "
    if probe.terminal:
        return head + f"game over, {'draw' if probe.outcome == 'draw' else probe.outcome + ' has won'}"
    best = probe.best_moves()
    cols = ", ".join(str(m.column) for m in best)
    return head + f"{describe(probe.outcome, probe.distance)}; best: {cols} " \
                  f"({describe(best[0].outcome, best[0].distance)})"


@click.command()
@TABLE_OPTION
@TABLE_BOARD_OPTION
@DRAWING_OPTION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per position")
@click.option("--draw", "draw", is_flag=True, help="also draw the board with the best moves marked")
@click.argument("positions", nargs=-1)
def best(table_path, board, drawing, as_json, draw, positions):
    """Optimal move(s) of POSITIONS (move strings, "" for the empty board, - for one per line
    on stdin): the fastest win, else a draw, else the slowest loss."""
    from c4table.table import open_table

    def to_json(probe) -> dict:
        return {"position": probe.position, "ply": probe.ply, "to_move": probe.to_move,
                "outcome": probe.outcome, "distance": probe.distance, "terminal": probe.terminal,
                "best": [vars(m) for m in probe.best_moves()]}

    qs = queries(positions, drawing)
    with open_table(table_path, board) as table:
        failures = answer_queries(table, qs, as_json, draw, to_json, _best_line)
    if failures:
        sys.exit(2)


@click.command()
@TABLE_OPTION
@TABLE_BOARD_OPTION
@click.option("--side", type=click.Choice(["A", "B", "a", "b"]), default=None,
              help="your side: A moves first (default: asked on a terminal, else A)")
@click.option("--start", default="", help="start from this move string instead of the empty board")
@DRAWING_OPTION
def play(table_path, board, side, start, drawing):
    """Play against perfect play in the terminal. After every move the outcome under perfect
    play and its distance are shown; h gives a hint, u undoes, q quits."""
    from c4table.play import play_game
    from c4table.table import open_table
    if drawing is not None:
        if drawing == "-":
            raise click.BadParameter("play reads its moves from stdin: give the drawing as a file",
                                     param_hint="--drawing")
        start = read_drawing(drawing)
    if side is None:
        if sys.stdin.isatty():
            side = click.prompt("Play as A (moves first) or B?", type=click.Choice(["A", "B", "a", "b"]),
                                default="A", show_choices=False)
        else:
            side = "A"
    with open_table(table_path, board) as table:
        play_game(table, side.upper(), start)


@click.command()
@click.argument("path", metavar="DIR|FILE", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["tsv", "markdown"]), default="tsv", show_default=True)
@click.option("--png", "png", type=click.Path(dir_okay=False), default=None,
              help="also plot the counts per ply (log scale) into this PNG file")
@click.option("--scan", is_flag=True, help="count by scanning the table file even if a manifest is there")
@click.option("--board", "board", default=None, help="board of the table if its name does not say")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines while scanning")
def stats(path, fmt, png, scan, board, quiet):
    """Per ply: won / drawn / lost from the first player's view, positions (mirror images
    counted) and table entries, and terminal positions, as in Table 2 of Böck's paper. DIR is a
    build directory (its manifest.json) or FILE a table, which is scanned if no manifest
    describes it."""
    from c4table.stats import format_table, plot_stats, ply_stats, pyplot
    if png:
        pyplot()   # a missing [plot] extra is one line before any work
    rows = ply_stats(path, scan=scan, board=board, quiet=quiet)
    click.echo(format_table(rows, fmt))
    if png:
        p = Path(path)
        title = p.name if p.is_dir() else p.stem
        plot_stats(rows, png, f"Connect-4 {title.replace('connect4_', '')}: positions per ply")
        click.echo(f"plot written to {png}", err=True)


def _ply_arg(value: str) -> int | None:
    if value == "all":
        return None
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: a ply number or 'all'") from None


@click.command()
@TABLE_OPTION
@TABLE_BOARD_OPTION
@click.option("--ply", "ply", default="all", show_default=True, help="ply to export (number of chips), or all")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="parquet file to write")
@click.option("--nonterminal", is_flag=True, help="leave out finished games")
@click.option("--mirror", is_flag=True, help="add the mirror image of every asymmetric position")
@click.option("--source", type=click.Choice(["auto", "table", "shards"]), default="auto", show_default=True,
              help="where entries come from: the build's backward shards if present (auto), or a scan")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def export(table_path, board, ply, out, nonterminal, mirror, source, quiet):
    """Write every position of a ply (or all) to a parquet file: one uint8 column per cell
    (a1..: column letter, row from the bottom; 0 empty, 1 A, 2 B), ply, moves (one move order
    reaching it), outcome, distance, terminal, key (and mirrored with --mirror)."""
    from c4table.export import export_positions
    from c4table.table import open_table
    ply_n = _ply_arg(ply)
    with open_table(table_path, board) as table:
        if ply_n is not None and not 0 <= ply_n <= table.board.cells:
            raise click.BadParameter(f"ply {ply_n} does not exist on board {table.board} "
                                     f"(0..{table.board.cells})", param_hint="--ply")
        rep = export_positions(table, out, ply_n, nonterminal=nonterminal, mirror=mirror,
                               source=source, quiet=quiet)
    click.echo(f"{rep.path}: {rep.rows:,} rows ({rep.entries:,} table entries, from {rep.source}) "
               f"in {rep.seconds:.1f}s, {rep.rate:,.0f} rows/s")


COMMANDS = [best, play, stats, export]
