"""Command-line commands for using a table: ``best`` (optimal moves), ``play`` (against perfect
play), ``stats`` (per-ply counts and plot) and ``export`` (parquet dataset); plus the helpers
``lookup`` shares with them (reading drawings, drawing the board).

Registered on the ``c4table`` group by :func:`c4table.cli.main._register_optional`; errors follow
:mod:`c4table.cli.main` (one line on stderr, exit status 2 for bad input, 1 for bad data).

>>> from click.testing import CliRunner
>>> CliRunner().invoke(best, ["--table", "tables/5x4/connect4_5x4.dat", "3344"]).output
'3344  board 5x4, ply 4, A to move: A wins in 3 plies; best: 2 (A wins in 3 plies)\\n'
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click

import c4table.config as config
from c4table.errors import IllegalPositionError
from c4table.table.probe import error_json, lookup_json  # noqa: F401 (the API answers the same objects)

TABLE_ENV = config.SETTINGS["C4TABLE_TABLE"].name


def _board_value(ctx, param, value):
    """``--board WxH``: the board of the table when its name does not say (same in every
    command; drawing the board is ``--draw``)."""
    if value is None:
        return None
    from c4table.game.board import Board
    from c4table.errors import BoardError
    try:
        return Board.parse(value)
    except BoardError as e:
        raise click.BadParameter(f"{e} (--board names the table's board; to draw the board "
                                 "use --draw)") from None


TABLE_OPTION = click.option(
    "--table", "table_path", default=None, envvar=TABLE_ENV, show_envvar=True,
    type=click.Path(dir_okay=False),
    help="table file (connectK_WxH.dat, or .c4z, which may also be an s3:// or https:// URI); "
         "default: $C4TABLE_TABLE, else the one table under tables/")
TABLE_BOARD_OPTION = click.option("--board", "board", default=None, metavar="WxH",
                                  callback=_board_value,
                                  help="board of the table if its name does not say")
DRAWING_OPTION = click.option("--drawing", "drawing", default=None, metavar="FILE|-",
                              help="read the position as a drawing (rows of . A B or . x o, top row "
                                   "first) from FILE or - for stdin")
DRAW_OPTION = click.option("--draw", "draw", is_flag=True,
                           help="also draw the board (A/B/.) with the best moves marked")


def table_path_or_default(path: str | None) -> str:
    """The table to open: ``--table`` (or ``$C4TABLE_TABLE``), else the single
    ``tables/*/connect4_WxH.dat`` (or ``tables/connect4_WxH.dat``) below the current directory.

    >>> table_path_or_default("t.dat")
    't.dat'
    """
    if path:
        return path
    found = sorted(set(Path("tables").glob("connect*_*x*.dat"))
                   | set(Path("tables").glob("*/connect*_*x*.dat")))
    if len(found) == 1:
        return str(found[0])
    why = "no table under tables/" if not found else \
        f"{len(found)} tables under tables/ ({', '.join(str(f) for f in found[:3])}" \
        f"{', ...' if len(found) > 3 else ''})"
    raise click.UsageError(f"give --table FILE (or set ${TABLE_ENV}): {why}")


def table_in_dir(path: str) -> str:
    """``path`` itself, or for a local directory the one ``connect4_WxH.dat`` in it (a build
    directory), so that commands taking a table also take its build directory.

    >>> table_in_dir("t.dat")
    't.dat'
    """
    p = Path(path)
    if "://" in str(path) or not p.is_dir():
        return path
    found = sorted(p.glob("connect*_*x*.dat"))
    if len(found) != 1:
        why = "no connect4_WxH.dat" if not found else f"{len(found)} tables"
        raise click.BadParameter(f"{path}: a directory with {why} in it; give the table file",
                                 param_hint="FILE|DIR")
    return str(found[0])


def read_drawing(source: str) -> str:
    """Text of a drawing from a file name or ``-`` (stdin).

    >>> read_drawing("board.txt")
    '.....\\n.....\\n..B..\\n.AAB.\\n'
    """
    if source == "-":
        return _stdin_text().read()
    try:
        return Path(source).read_text()
    except FileNotFoundError:
        raise click.BadParameter(f"{source}: no such file", param_hint="--drawing") from None
    except IsADirectoryError:
        raise click.BadParameter(f"{source}: is a directory", param_hint="--drawing") from None


def _stdin_text():
    """stdin as text; bytes that are not UTF-8 stay (as surrogates) so that one bad line is
    one error answer, not the end of the batch."""
    import io
    buf = getattr(sys.stdin, "buffer", None)
    if buf is None:
        return sys.stdin
    return io.TextIOWrapper(buf, encoding="utf-8", errors="surrogateescape")


class Query:
    """One thing to answer: a move string (from the command line or a stdin line) or a
    drawing (``--drawing``)."""

    def __init__(self, text: str, drawing: bool = False):
        self.text = text
        self.drawing = drawing


def queries(positions: tuple[str, ...], drawing: str | None) -> list[Query]:
    """The queries to answer: a drawing, the positions, and stdin lines for ``-``. Empty
    stdin is no query (no output, exit 0); no position and no drawing at all is a usage error."""
    if drawing is not None and "-" in positions and drawing == "-":
        raise click.UsageError("stdin cannot hold both a drawing (--drawing -) and positions (-)")
    if drawing is None and not positions:
        raise click.UsageError("give at least one position (\"\" for the empty board, - for stdin) "
                               "or --drawing FILE")
    out: list[Query] = []
    if drawing is not None:
        out.append(Query(read_drawing(drawing), drawing=True))
    for p in positions:
        if p == "-":
            out.extend(Query(line.strip()) for line in _stdin_text())
        else:
            out.append(Query(p))
    return out


def board_picture(table, probe) -> str:
    """The drawing of a probed position with its best moves marked, indented for the CLI."""
    from c4table.game.drawing import render
    pos = table.position(probe.position)
    text = render(pos, [m.column for m in probe.best_moves()])
    return "\n".join("    " + line for line in text.splitlines())


def _position_of(table, q: Query):
    """The :class:`~c4table.game.rules.Position` of a query. A drawing is always parsed as one
    (a one-line or empty drawing is an error, never a move string)."""
    if q.drawing:
        from c4table.game.drawing import parse_drawing
        lines = q.text.strip().splitlines()
        if len(lines) == 1 and lines[0].strip().isdigit():
            from c4table.wording import quote
            raise IllegalPositionError(
                f"--drawing got one line of digits {quote(lines[0].strip())}: give a move string "
                "as a position argument, a drawing as rows of . A B (top row first)")
        return parse_drawing(q.text, table.board)
    from c4table.game.rules import Position
    return Position.from_moves(table.board, q.text)


def answer_queries(table, qs: list[Query], as_json: bool, draw: bool, to_json, to_text) -> int:
    """Probe each query of :func:`queries` and print one answer per query (``to_json(probe)``
    as a JSON line with the board, or ``to_text(probe)``; plus the drawing if ``draw``).

    A position that cannot arise gets an error answer (``{"board", "position", "error"}`` in
    JSON, ``POSITION: error: ...`` in text; the position quoted escaped and cut) and the rest
    still answer, whether it came from the command line or stdin; a bad drawing raises.
    Returns the number of error answers."""
    from c4table.wording import clip
    failures = 0
    name = table.board.name
    for q in qs:
        try:
            probe = table.probe(_position_of(table, q))
        except IllegalPositionError as e:
            if q.drawing:
                raise
            failures += 1
            click.echo(json.dumps(error_json(q.text, str(e), name)) if as_json
                       else f"{clip(q.text) or '(empty)'}: error: {e}")
            continue
        if as_json:
            obj = {"board": name, **to_json(probe)}     # = lookup_json(probe, name)
            if draw:
                obj["drawing"] = table.drawing(probe.position)
            click.echo(json.dumps(obj))
        else:
            click.echo(to_text(probe, name))
            if draw:
                click.echo(board_picture(table, probe))
    return failures


def finish_answers(failures: int, total: int) -> None:
    """After the answers: one ``c4table: error:`` line and exit status 2 if any position was
    refused (the answers said which)."""
    if failures:
        from c4table.wording import count
        click.echo(f"c4table: error: {failures:,} of {count(total, 'position')} could not be "
                   "answered (see the error answers)", err=True)
        sys.exit(2)


def _head(probe, board_name: str) -> str:
    from c4table.wording import game_over, outcome
    head = f"{probe.position or '(empty)'}  board {board_name}, ply {probe.ply}, " \
           f"{probe.to_move} to move: "
    if probe.terminal:
        return head + f"game over, {game_over(probe.outcome)}"
    return head + outcome(probe.outcome, probe.distance)


def lookup_text(probe, board_name: str) -> str:
    """``lookup``'s text answer: the position's outcome, then one line per legal move."""
    from c4table.wording import outcome
    lines = [_head(probe, board_name)]
    best = {m.column for m in probe.best_moves()}
    for m in probe.moves:
        lines.append(f"  column {m.column}: {outcome(m.outcome, m.distance)}"
                     f"{'  *best' if m.column in best else ''}")
    return "\n".join(lines)


def scored_lookup_text(probe, board_name: str, cells: int) -> str:
    """``lookup --scores``: ``lookup``'s text with Pons' score (:mod:`c4table.analysis.pons`) after the
    position's line and after each move's line."""
    from c4table.analysis.pons import move_score, probe_score
    lines = lookup_text(probe, board_name).split("\n")
    lines[0] += f"; score {probe_score(probe, cells)}"
    for j, m in enumerate(probe.moves, start=1):
        lines[j] += f"  (score {move_score(probe, m, cells)})"
    return "\n".join(lines)


def _best_line(probe, board_name: str) -> str:
    from c4table.wording import outcome
    head = _head(probe, board_name)
    if probe.terminal:
        return head
    best = probe.best_moves()
    cols = ", ".join(str(m.column) for m in best)
    return head + f"; best: {cols} ({outcome(best[0].outcome, best[0].distance)})"


@click.command()
@TABLE_OPTION
@TABLE_BOARD_OPTION
@DRAWING_OPTION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per position")
@DRAW_OPTION
@click.argument("positions", nargs=-1)
def best(table_path, board, drawing, as_json, draw, positions):
    """Optimal move(s) of POSITIONS (move strings, "" for the empty board, - for one per line
    on stdin): the fastest win, else a draw, else the slowest loss."""
    from c4table.open import open_table

    def to_json(probe) -> dict:
        return {"position": probe.position, "ply": probe.ply, "to_move": probe.to_move,
                "outcome": probe.outcome, "distance": probe.distance, "terminal": probe.terminal,
                "best": [vars(m) for m in probe.best_moves()]}

    qs = queries(positions, drawing)
    with open_table(table_path_or_default(table_path), board) as table:
        failures = answer_queries(table, qs, as_json, draw, to_json, _best_line)
    finish_answers(failures, len(qs))


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
    from c4table.analysis.play import play_game
    from c4table.open import open_table
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
    with open_table(table_path_or_default(table_path), board) as table:
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
    counted), table entries, and finished games (a line of k or a full board; BDD mode's
    won_games counts the lines only), as in Table 2 of Böck's paper. DIR is a build
    directory (its manifest.json) or FILE a table, which is scanned if no manifest describes
    it."""
    from c4table.analysis.stats import format_table, plot_stats, ply_stats, pyplot
    if png:
        pyplot()   # a missing [plot] extra is one line before any work
    rows = ply_stats(path, scan=scan, board=board, quiet=quiet)
    click.echo(format_table(rows, fmt))
    if png:
        p = Path(path)
        title = p.name if p.is_dir() else p.stem
        named = re.match(r"connect(\d+)_(.+)$", title)   # connect3_5x4 -> Connect-3 5x4
        label = f"Connect-{named[1]} {named[2]}" if named else f"Connect-4 {title}"
        plot_stats(rows, png, f"{label}: positions per ply")
        click.echo(f"plot written to {png}", err=True)


PARQUET_SUFFIXES = (".parquet", ".pq")


def parquet_out(value: str) -> str:
    """Check ``export --out``: export writes parquet only, so the name must say so (a
    ``.csv`` name holding parquet would mislead), and the directory must exist (a typo in it
    is an error, not a new directory tree).

    >>> parquet_out("ply8.parquet")
    'ply8.parquet'
    """
    p = Path(value)
    if p.suffix.lower() not in PARQUET_SUFFIXES:
        raise click.BadParameter(f"{value}: export writes parquet only; name the file "
                                 f"*.parquet (or *.pq)", param_hint="--out")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"{value}: directory {parent} does not exist",
                                 param_hint="--out")
    return value


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
@click.option("--out", "out", required=False, type=click.Path(dir_okay=False),
              callback=lambda ctx, param, value: value if value is None else parquet_out(value),
              help="parquet file to write (.parquet or .pq; its directory must exist)")
@click.option("--per-move", "per_move", is_flag=True,
              help="add value, score (Pons), move_scores, move_distance, legal_mask, best_mask")
@click.option("--planes", type=click.Choice(["pettingzoo", "openspiel"]), default=None,
              help="add obs, the board in that library's layout (implies --per-move)")
@click.option("--hf", "hf", default=None, type=click.Path(file_okay=False),
              help="write a Hugging Face dataset directory (data/*.parquet, README.md) instead of --out; "
                   "always with the per-move columns")
@click.option("--split", "split", default=None, metavar="test=F",
              help="with --hf: the fraction F of positions (by a hash of the key) in the test split")
@click.option("--rows-per-shard", "rows_per_shard", type=click.IntRange(min=1), default=500_000,
              show_default=True, help="with --hf: rows per parquet shard")
@click.option("--decisive", is_flag=True,
              help="with --hf: only positions where the side to move can reach two of win, draw, loss")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="with --hf: a uniform sample of N rows (by a seeded hash), in random order")
@click.option("--seed", type=int, default=0, show_default=True, help="with --sample")
@click.option("--nonterminal", is_flag=True, help="leave out finished games")
@click.option("--mirror", is_flag=True, help="add the mirror image of every asymmetric position")
@click.option("--quiet-positions", "quiet_positions", is_flag=True,
              help="only positions where nobody has won and neither side can win with one move "
                   "(John Tromp's 8-ply selection: 67,557 positions on 7x6 at ply 8)")
@click.option("--source", type=click.Choice(["auto", "table", "shards"]), default="auto", show_default=True,
              help="where entries come from: the build's backward shards if present (auto), or a scan")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def export(table_path, board, ply, out, per_move, planes, hf, split, rows_per_shard, decisive,
           sample, seed, nonterminal, mirror, quiet_positions, source, quiet):
    """Write every position of a ply (or all) to a parquet file: one uint8 column per cell
    (a1..: column letter, row from the bottom; 0 empty, 1 A, 2 B), ply, moves (one move order
    reaching it), outcome, distance, terminal, key (and mirrored with --mirror)."""
    from c4table.analysis.export import export_positions
    from c4table.open import open_table
    ply_n = _ply_arg(ply)
    with open_table(table_path_or_default(table_path), board) as table:
        if ply_n is not None and not 0 <= ply_n <= table.board.cells:
            raise click.BadParameter(f"ply {ply_n} does not exist on board {table.board} "
                                     f"(0..{table.board.cells})", param_hint="--ply")
        if hf is not None:
            return _export_hf(table, hf, ply_n, split, rows_per_shard, decisive, sample, seed,
                              planes, nonterminal, mirror, quiet_positions, quiet)
        if out is None:
            raise click.UsageError("give --out FILE.parquet (or --hf DIR)")
        if split or decisive or sample:
            raise click.UsageError("--split, --decisive and --sample go with --hf DIR")
        rep = export_positions(table, out, ply_n, nonterminal=nonterminal, mirror=mirror,
                               quiet_positions=quiet_positions, source=source, quiet=quiet,
                               per_move=per_move or planes is not None, planes=planes)
    from c4table.wording import count
    click.echo(f"{rep.path}: {count(rep.rows, 'row')} ({count(rep.entries, 'table entry')}, from "
               f"{rep.source}) in {rep.seconds:.1f}s, {rep.rate:,.0f} rows/s")


def _export_hf(table, hf, ply, split, rows_per_shard, decisive, sample, seed, planes,
               nonterminal, mirror, quiet_positions, quiet):
    """``export --hf DIR``."""
    from c4table.analysis.dataset import export_hf
    test = 0.0
    if split:
        name, _, frac = split.partition("=")
        try:
            test = float(frac)
        except ValueError:
            test = -1.0
        if name != "test" or not 0 <= test < 1:
            raise click.BadParameter(f"{split!r}: test=F with 0 <= F < 1", param_hint="--split")
    if quiet_positions:
        raise click.UsageError("--quiet-positions does not go with --hf")
    rep = export_hf(table, hf, ply=ply, test=test, rows_per_shard=rows_per_shard, decisive=decisive,
                    sample=sample, seed=seed, planes=planes, nonterminal=nonterminal, mirror=mirror,
                    quiet=quiet)
    rows = ", ".join(f"{name} {n:,} rows in {rep.shards[name]} shard(s)" for name, n in rep.rows.items())
    click.echo(f"{rep.path}: {rows} ({rep.entries:,} table entries) in {rep.seconds:.1f}s")


COMMANDS = [best, play, stats, export]
