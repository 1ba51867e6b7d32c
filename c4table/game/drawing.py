"""Board drawings: parsing a picture of a position, checking that it can arise in play,
reconstructing one move order that reaches it, and drawing a position (with marked best moves).

Design notes: ``docs/modules.md`` (``c4table.game.drawing``).

>>> from c4table.game.board import Board
>>> p = parse_drawing('''
... .....
... .....
... ..B..
... .AAB.
... ''', Board.parse("5x4"))
>>> p.ply, p.to_move, p.move_string()
(4, 'A', '3423')
>>> print(render(p, marks=[3]))
. . . . .
. . . . .
. . B . .
. A A B .
1 2 3 4 5
    *
"""
from __future__ import annotations

from typing import Iterable, Sequence

from c4table.game.board import A, B, EMPTY, Board
from c4table.errors import IllegalPositionError
from c4table.game.rules import Position, line_owners
from c4table.wording import count, quote

CELL_OF_CHAR = {".": EMPTY, "A": A, "x": A, "X": A, "B": B, "o": B, "O": B}
CHAR_OF_CELL = {EMPTY: ".", A: "A", B: "B"}
_IGNORED_LINE = set("0123456789*^ \t")


def _grid_lines(text: str) -> list[str]:
    rows = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0]
        if not line.strip() or set(line) <= _IGNORED_LINE:
            continue
        row = "".join(ch for ch in line if ch not in " \t|")
        bad = [ch for ch in row if ch not in CELL_OF_CHAR]
        if bad:
            raise IllegalPositionError(
                f"bad character {quote(bad[0])} in drawing row {quote(raw.strip())}: use . for empty, "
                "A or x for the first player, B or o for the second")
        rows.append(row)
    return rows


def parse_grid(text: str, board: Board | None = None) -> tuple[Board, list[list[int]]]:
    """Parse a drawing into its board and bottom-first columns, checking only its shape and
    characters (no rules). The board is taken from the drawing's size when not given.

    >>> parse_grid("..\\nAB")[1]
    [[1], [2]]
    """
    rows = _grid_lines(text)
    if not rows:
        moves = [ln.strip() for ln in text.splitlines() if ln.strip().isdigit()]
        if moves:   # digit lines are ignored in a drawing (column numbers under it)
            raise IllegalPositionError(
                f"the drawing looks like move strings ({quote(moves[0])}"
                f"{', ...' if len(moves) > 1 else ''}), not rows of . A B: give move strings as "
                "positions, or one per line on stdin with - (e.g. c4table lookup - < FILE)")
        raise IllegalPositionError("empty drawing: expected rows of . A B, top row first")
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise IllegalPositionError(f"drawing rows have different lengths {sorted(widths)}")
    w, h = len(rows[0]), len(rows)
    if board is None:
        board = Board(w, h)
    elif (w, h) != (board.width, board.height):
        raise IllegalPositionError(
            f"drawing is {count(w, 'column')} x {count(h, 'row')}, the board is {board} "
            f"({count(board.width, 'column')} x {count(board.height, 'row')})")
    cols: list[list[int]] = []
    for c in range(w):
        cells = [CELL_OF_CHAR[rows[h - 1 - r][c]] for r in range(h)]  # bottom first
        n = 0
        while n < h and cells[n] != EMPTY:
            n += 1
        if any(cells[n:]):
            r = n + next(i for i, x in enumerate(cells[n:]) if x)
            raise IllegalPositionError(
                f"floating chip in column {c + 1}, row {r + 1} from the bottom: "
                f"row {n + 1} below it is empty")
        cols.append(cells[:n])
    return board, cols


def reconstruct_moves(board: Board, cols: Sequence[Sequence[int]]) -> list[int] | None:
    """One sequence of 0-based columns that reaches ``cols`` (bottom-first chips) from the empty
    board under the rules, or ``None`` if there is none. Assumes no floating chips and valid
    chip counts (docs/modules.md says how it searches).

    >>> reconstruct_moves(Board(4, 4), [[1, 2], [1], [], []])
    [0, 0, 1]
    """
    cols = [list(c) for c in cols]
    heights = [len(c) for c in cols]
    n = sum(heights)
    w = board.width
    if n == 0:
        return []
    if line_owners(board, cols):
        # the last chip played must break every line: try each eligible top chip
        last = A if n % 2 == 1 else B
        starts = []
        for c in range(w):
            if heights[c] and cols[c][-1] == last:
                before = [col[:-1] if i == c else col for i, col in enumerate(cols)]
                if not line_owners(board, before):
                    starts.append(c)
        if not starts:
            return None
    else:
        starts = None
    return search_moves(board, cols, starts)


def search_moves(board: Board, cols: Sequence[Sequence[int]],
                 starts: Sequence[int] | None = None) -> list[int] | None:
    """The depth-first search of :func:`reconstruct_moves`, given the 0-based columns that may
    hold the last move (``None``: any top chip of the last mover, for a position without a
    line).

    >>> search_moves(Board(4, 4), [[1, 2], [1], [], []], [1])
    [0, 0, 1]
    """
    cols = [list(c) for c in cols]
    heights = [len(c) for c in cols]
    n = sum(heights)
    w = board.width
    failed: set[tuple[int, ...]] = set()
    order: list[int] = []  # columns un-played, last move first

    def search(hs: list[int], m: int, choices: Iterable[int] | None) -> bool:
        if m == 0:
            return True
        t = tuple(hs)
        if t in failed:
            return False
        player = A if m % 2 == 1 else B
        other = B if player == A else A
        cand = [c for c in (choices if choices is not None else range(w))
                if hs[c] and cols[c][hs[c] - 1] == player]
        cand.sort(key=lambda c: 0 if hs[c] >= 2 and cols[c][hs[c] - 2] == other else 1)
        for c in cand:
            hs[c] -= 1
            order.append(c)
            if search(hs, m - 1, None):
                return True
            order.pop()
            hs[c] += 1
        failed.add(t)
        return False

    if not search(list(heights), n, starts):
        return None
    return order[::-1]


def parse_drawing(text: str, board: Board | str | None = None) -> Position:
    """Parse a drawing (rows top first) into the :class:`Position` reached by one legal move
    order. Raises :class:`IllegalPositionError` for a drawing that cannot arise in play:
    floating chip, impossible chip counts, two winners, a line of the player who did not move
    last, or no move order at all.

    >>> parse_drawing("....\\n....\\n....\\nAB..").move_string()
    '12'
    """
    if board is not None and not Board.parse(board).supports("drawing"):
        raise IllegalPositionError(f"board {Board.parse(board)}: drawings of 3D boards are not "
                                   "read; give the position as a move string")
    board, cols = parse_grid(text, Board.parse(board) if board is not None else None)
    na = sum(col.count(A) for col in cols)
    nb = sum(col.count(B) for col in cols)
    if na - nb not in (0, 1):
        raise IllegalPositionError(
            f"impossible chip counts: A has {na}, B has {nb} (A moves first, so A must have as "
            "many chips as B or one more)")
    owners = line_owners(board, cols)
    if owners == {A, B}:
        raise IllegalPositionError(
            f"both A and B have {board.k} in a row: the game ends at the first line")
    last = A if (na + nb) % 2 == 1 else B
    if owners and owners != {last}:
        who = "A" if A in owners else "B"
        raise IllegalPositionError(
            f"{who} has {board.k} in a row but {'A' if last == A else 'B'} moved last "
            f"(A {na}, B {nb} chips)")
    moves = reconstruct_moves(board, cols)
    if moves is None:
        why = (f"no chip of the last mover ends every {board.k}-in-a-row" if owners else
               "the chips cannot be stacked in alternating turns")
        raise IllegalPositionError(f"drawing cannot arise in play: {why}")
    return Position.from_columns(board, moves)


def render(pos: Position, marks: Iterable[int] = (), numbers: bool = True,
           last: bool = False, line: Iterable[tuple[int, int]] = (), margin: bool = False) -> str:
    """Draw ``pos`` as its board's variant is drawn (:data:`RENDERERS`: :func:`render_rows`, or
    :func:`render_layers` for a 3D board).

    >>> print(render(Position.from_moves(Board(4, 4), "12"), numbers=False))
    . . . .
    . . . .
    . . . .
    A B . .
    """
    return RENDERERS[pos.board.variant](pos, marks, numbers, last, line, margin)


def render_rows(pos: Position, marks: Iterable[int] = (), numbers: bool = True,
                last: bool = False, line: Iterable[tuple[int, int]] = (), margin: bool = False) -> str:
    """Draw ``pos`` top row first (``.``, ``A``, ``B``), with column numbers and a ``*`` under
    each 1-based column in ``marks`` (e.g. the best moves). ``last``: a ``^`` under the column
    of the last move (its top chip); ``line``: cells (0-based column, row) drawn in brackets,
    such as the winning four (:meth:`Position.winning_cells`), which needs one character left
    of the board (``margin``: keep it there always, so that boards of one game line up).

    >>> print(render(Position.from_moves(Board(4, 4), "12"), numbers=False))
    . . . .
    . . . .
    . . . .
    A B . .
    >>> print(render(Position.from_moves(Board(4, 4), "1212121"), last=True,
    ...              line=Position.from_moves(Board(4, 4), "1212121").winning_cells()))
    [A]. . .
    [A]B . .
    [A]B . .
    [A]B . .
     1 2 3 4
     ^
    """
    b = pos.board
    wide = max(len(str(b.width)), 1) if numbers else 1
    line = set(line)
    margin = margin or bool(line)

    def row_text(r: int) -> str:
        # one separator between cells; a bracket replaces it around cells of ``line``
        seps = [" "] * (b.width + 1)
        for c in range(b.width):
            if (c, r) in line:
                if (c - 1, r) not in line:
                    seps[c] = "["
                if (c + 1, r) not in line:
                    seps[c + 1] = "]"
        cells = "".join(seps[c] + CHAR_OF_CELL[pos.cell(c, r)].rjust(wide) for c in range(b.width))
        text = cells + seps[b.width]
        return (text if margin else text[1:]).rstrip()

    rows = [row_text(r) for r in range(b.height - 1, -1, -1)]
    pad = " " if margin else ""
    if numbers:
        labels = [str(c + 1) for c in range(b.width)]
        rows.append(pad + " ".join(x.rjust(wide) for x in labels))
        marks = set(marks)
        if marks:
            rows.append(pad + " ".join(("*" if c + 1 in marks else " ").rjust(wide)
                                       for c in range(b.width)).rstrip())
    if last and pos.moves:
        rows.append(pad + " ".join(("^" if c == pos.moves[-1] else " ").rjust(wide)
                                   for c in range(b.width)).rstrip())
    return "\n".join(rows)


def render_layers(pos: Position, marks: Iterable[int] = (), numbers: bool = True,
                  last: bool = False, line: Iterable[tuple[int, int]] = ()) -> str:
    """Draw a position of a 3D board (:mod:`c4table.game.grid3d`): its layers side by side, the top
    layer first, each an ``X`` by ``Y`` grid seen from above (``y = 0`` at the bottom), then the
    grid of 1-based column numbers; ``line`` cells in brackets, a line naming the ``marks``
    (best moves) and, with ``last``, the column of the last move.

    >>> b = Board.grid3d(2, 2, 2, k=2)
    >>> print(render_layers(Position.from_moves(b, "141"), marks=[2, 3]))
    layer 2  layer 1  columns
     .  .     .  B     3 4
     A  .     A  .     1 2
    best: 2, 3
    """
    b = pos.board
    X, Y = b.grid
    line = set(line)
    wide = len(str(b.width))
    span = max(3 * X, len(f"layer {b.height}"))
    head = [f"layer {z + 1}".ljust(span) for z in range(b.height - 1, -1, -1)]
    if numbers:
        head.append("columns")
    rows = ["  ".join(head).rstrip()]
    for y in range(Y - 1, -1, -1):
        parts = []
        for z in range(b.height - 1, -1, -1):
            cells = []
            for x in range(X):
                c = y * X + x
                ch = CHAR_OF_CELL[pos.cell(c, z)]
                cells.append(f"[{ch}]" if (c, z) in line else f" {ch} ")
            parts.append("".join(cells).ljust(span))
        if numbers:
            parts.append(" " + " ".join(str(y * X + x + 1).rjust(wide) for x in range(X)))
        rows.append("  ".join(parts).rstrip())
    marks = sorted(set(marks))
    if marks:
        rows.append("best: " + ", ".join(str(m) for m in marks))
    if last and pos.moves:
        c = pos.moves[-1]
        rows.append(f"last move: column {c + 1} (layer {len(pos.cols[c])})")
    return "\n".join(rows)


def _render_layers(pos: Position, marks: Iterable[int] = (), numbers: bool = True,
                   last: bool = False, line: Iterable[tuple[int, int]] = (),
                   margin: bool = False) -> str:
    return render_layers(pos, marks, numbers, last, line)   # no margin: the layers need none


#: Board variant name (:data:`c4table.game.board.VARIANTS`) -> how its positions are drawn.
RENDERERS = {"2d": render_rows, "3d": _render_layers}
