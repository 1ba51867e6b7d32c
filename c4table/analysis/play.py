"""Playing against perfect play in the terminal: a line-based loop over any text streams (a
terminal, tmux, or plain piped stdin), with the table answering every move instantly.

Design notes: ``docs/modules.md`` (``c4table.analysis.play``).

>>> import io
>>> from c4table import open_table
>>> with open_table("tables/5x4/connect4_5x4.dat") as t:
...     play_game(t, human="B", inp=io.StringIO("3\\n3\\n"), out=io.StringIO())
'quit'
"""
from __future__ import annotations

import sys
from typing import TextIO

from c4table import wording
from c4table.game.drawing import render
from c4table.errors import IllegalPositionError
from c4table.game.rules import Position
from c4table.table.probe import MoveProbe, Probe
from c4table.table.source import Table


def describe(outcome: str, distance: int) -> str:
    """``"A wins in 7 plies"``, ``"draw in 12 plies"``, ``"B wins in 1 ply"``, ``"B has won"``
    (:func:`c4table.wording.outcome`).

    >>> describe("A", 1), describe("draw", 4), describe("B", 0)
    ('A wins in 1 ply', 'draw in 4 plies', 'B has won')
    """
    return wording.outcome(outcome, distance)


def choose_move(probe: Probe, width: int) -> MoveProbe:
    """The computer's move: an optimal one, nearest the centre among equals.

    >>> p = Probe("", 0, "A", "A", 3, False, [MoveProbe(1, "A", 3), MoveProbe(3, "A", 3)])
    >>> choose_move(p, 5).column
    3
    """
    best = probe.best_moves()
    if not best:
        raise IllegalPositionError("the game is over: no move to choose")
    centre = (width + 1) / 2
    return min(best, key=lambda m: (abs(m.column - centre), m.column))


def play_game(table: Table, human: str = "A", start: str | Position = "", inp: TextIO | None = None,
              out: TextIO | None = None, show_board: bool = True) -> str:
    """Play ``human`` (``"A"`` moves first, ``"B"``) against the table from ``start`` (a move
    string, drawing or Position; ``""`` is a rooted table's root, else the empty board). Returns ``"A"``, ``"B"`` or ``"draw"`` when the game ends,
    ``"quit"`` if the player quits or input ends.

    >>> import io
    >>> from c4table import open_table
    >>> t = open_table("tables/5x4/connect4_5x4.dat")
    >>> out = io.StringIO()
    >>> play_game(t, "A", inp=io.StringIO("q\\n"), out=out)
    'quit'
    """
    inp = inp or sys.stdin
    out = out or sys.stdout
    human = human.upper()
    if human not in ("A", "B"):
        raise IllegalPositionError(f"side must be A or B, not {human!r}")
    board = table.board
    if table.root is not None and isinstance(start, str) and not start.strip():
        start = table.root.moves   # a rooted table starts at its root
    pos = table.position(start)
    table.wdl(pos)   # a position the table does not hold fails here, before the greeting
    history: list[Position] = []

    def say(text: str = "", end: str = "\n") -> None:
        out.write(text + end)
        out.flush()

    computer = "B" if human == "A" else "A"
    say(f"You are {human} ({'first' if human == 'A' else 'second'} player), the computer is "
        f"{computer}. Board {board}. Type a column 1-{board.width}, h for a hint, u to undo, q to quit.")
    while True:
        probe = table.probe(pos)
        if show_board:   # the last move's column marked ^, a winning line in brackets
            say(render(pos, last=True, line=pos.winning_cells(), margin=True))
        if probe.terminal:
            result = probe.outcome
            say(f"Game over: {'draw' if result == 'draw' else result + ' wins'}"
                f"{' (you)' if result == human else ''}.")
            return result
        say(f"ply {probe.ply}, {probe.to_move} to move: {describe(probe.outcome, probe.distance)}")
        if probe.to_move == computer:
            m = choose_move(probe, board.width)
            history.append(pos)
            pos = pos.child(m.column - 1)
            say(f"{computer} (computer) plays {m.column}: {describe(m.outcome, m.distance - 1)}")
            continue
        while True:
            say(f"your move ({human}): ", end="")
            line = inp.readline()
            if not line:
                say("\nend of input: quitting.")
                return "quit"
            if not (hasattr(inp, "isatty") and inp.isatty()):
                say(line.strip())  # echo piped input so the transcript reads like a session
            cmd = line.strip().lower()
            if cmd in ("q", "quit", "exit"):
                say("bye.")
                return "quit"
            if cmd in ("h", "hint", "?"):
                best = {m.column for m in probe.best_moves()}
                for m in probe.moves:
                    say(f"  column {m.column}: {describe(m.outcome, m.distance)}"
                        f"{'  *best' if m.column in best else ''}")
                continue
            if cmd in ("u", "undo"):
                # back to the previous position where it was the human's turn
                back = [i for i, h in enumerate(history) if h.to_move == human]
                if not back:
                    say("nothing to undo.")
                    continue
                pos = history[back[-1]]
                del history[back[-1]:]
                say("undone.")
                break
            if not cmd.isdigit() or not 1 <= int(cmd) <= board.width:
                say(f"type a column 1-{board.width}, h, u or q.")
                continue
            col = int(cmd)
            mv = next((m for m in probe.moves if m.column == col), None)
            if mv is None:
                say(f"column {col} is full.")
                continue
            best = probe.best_moves()
            verdict = "best move" if any(m.column == col for m in best) else \
                f"not best: {', '.join(str(m.column) for m in best)} gives {describe(best[0].outcome, best[0].distance)}"
            history.append(pos)
            pos = pos.child(col - 1)
            say(f"{human} (you) plays {col}: {describe(mv.outcome, mv.distance - 1)} ({verdict})")
            break
