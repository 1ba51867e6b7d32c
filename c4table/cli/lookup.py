"""The commands that answer positions from a table: ``lookup`` (outcome and distance of a
position and each move), ``best`` (optimal moves) and ``play`` (against perfect play); and how
they read positions (arguments, stdin, drawings) and print the answers.

>>> from click.testing import CliRunner
>>> CliRunner().invoke(best, ["--table", "tables/5x4/connect4_5x4.dat", "3344"]).output
'3344  board 5x4, ply 4, A to move: A wins in 3 plies; best: 2 (A wins in 3 plies)\\n'
"""
from __future__ import annotations

import json
import sys

import click

from c4table.cli.options import (DRAW_OPTION, DRAWING_OPTION, TABLE_BOARD_OPTION, TABLE_OPTION,
                                 read_drawing, stdin_text, table_path_or_default)
from c4table.errors import IllegalPositionError
from c4table.table.probe import error_json, lookup_json, with_winning_cells


class Query:
    """One thing to answer: a move string (from the command line or a stdin line) or a
    drawing (``--drawing``)."""

    def __init__(self, text: str, drawing: bool = False):
        self.text = text
        self.drawing = drawing


def queries(positions: tuple[str, ...], drawing: str | None) -> list[Query]:
    """The queries to answer: a drawing, the positions, and stdin lines for ``-``. Empty
    stdin is no query (no output, exit 0); an empty (or blank) line is the empty board, as
    ``""`` is on the command line and as ``lookup --json`` writes its position, so its output's
    positions read back line for line; no position and no drawing at all is a usage error."""
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
            out.extend(Query(line.strip()) for line in stdin_text())
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
            with_winning_cells(obj, table, probe)       # a won game: its line (as the API)
            if draw:
                obj["drawing"] = table.drawing(probe.position)
            click.echo(json.dumps(obj))
        else:
            click.echo(to_text(probe, name))
            if draw:
                click.echo(board_picture(table, probe))
    return failures


def finish_answers(failures: int, total: int, done: str = "answered",
                   where: str = "the error answers") -> None:
    """After a batch (``lookup``, ``best``, ``label``): one ``c4table: error:`` line and exit
    status 2 if any position was refused (``where`` says which: the answers, or the error
    column of the file ``label`` wrote); the others were ``done``."""
    if failures:
        from c4table.errors import EXIT_BAD_INPUT
        from c4table.wording import count
        click.echo(f"c4table: error: {failures:,} of {count(total, 'position')} could not be "
                   f"{done} (see {where})", err=True)
        sys.exit(EXIT_BAD_INPUT)


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


@click.command(short_help="Outcome and distance of positions and of each move")
@TABLE_OPTION
@TABLE_BOARD_OPTION
@DRAW_OPTION
@DRAWING_OPTION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per position")
@click.option("--scores", is_flag=True, help="also show Pons' scores (side to move, larger the sooner "
                                             "it wins; JSON always has them)")
@click.argument("positions", nargs=-1)
def lookup(table_path, board, draw, drawing, as_json, scores, positions):
    """Outcome and distance of POSITIONS (move strings of 1-based columns, "" for the empty
    board, - to read one per line from stdin, where an empty line is the empty board), and of
    each legal move.

    Distances count plies: for a move, from the position before it (the move included)."""
    from c4table.open import open_table
    qs = queries(positions, drawing)
    from c4table.analysis.pons import add_scores
    with open_table(table_path_or_default(table_path, board), board) as table:
        cells = table.board.cells
        failures = answer_queries(table, qs, as_json, draw,
                                  lambda p: add_scores(lookup_json(p), cells),
                                  (lambda p, n: scored_lookup_text(p, n, cells)) if scores else lookup_text)
    finish_answers(failures, len(qs))


@click.command(short_help="The optimal moves of positions")
@TABLE_OPTION
@TABLE_BOARD_OPTION
@DRAWING_OPTION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per position")
@DRAW_OPTION
@click.argument("positions", nargs=-1)
def best(table_path, board, drawing, as_json, draw, positions):
    """Optimal move(s) of POSITIONS (move strings, "" for the empty board, - for one per line
    on stdin, an empty line being the empty board): the fastest win, else a draw, else the
    slowest loss."""
    from c4table.open import open_table

    def to_json(probe) -> dict:
        return {"position": probe.position, "ply": probe.ply, "to_move": probe.to_move,
                "outcome": probe.outcome, "distance": probe.distance, "terminal": probe.terminal,
                "best": [vars(m) for m in probe.best_moves()]}

    qs = queries(positions, drawing)
    with open_table(table_path_or_default(table_path, board), board) as table:
        failures = answer_queries(table, qs, as_json, draw, to_json, _best_line)
    finish_answers(failures, len(qs))


@click.command(short_help="Play against perfect play in the terminal")
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
    with open_table(table_path_or_default(table_path, board), board) as table:
        play_game(table, side.upper(), start)


COMMANDS = [lookup, best, play]
