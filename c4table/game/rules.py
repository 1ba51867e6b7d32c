"""Game rules on one position at a time: dropping chips, the end of the game (k in a row:
:func:`line_through`, :func:`line_owners`), taking a chip back (:meth:`Position.unmoves`),
keys, move strings (1-based column digits from the empty board ``""``; past 9 columns,
:meth:`Position.from_columns`): the one plain statement of the rules (FORMAT.md "Board"),
checked against the build's kernels by ``tests/test_rules.py``.

>>> from c4table.game.board import Board
>>> p = Position.from_moves(Board.parse("7x6"), "4453")
>>> p.ply, p.to_move, p.legal_moves()
(4, 'A', [0, 1, 2, 3, 4, 5, 6])
"""
from __future__ import annotations

from typing import Iterable, Sequence

from c4table.game.board import A, B, EMPTY, Board
from c4table.game.codec import key_of_codes
from c4table.errors import IllegalPositionError
from c4table.wording import quote

PLAYER_NAME = {A: "A", B: "B"}


class Position:
    """A reachable position: the chips of each column, whose turn it is, and whether the game
    has ended (and who won)."""

    __slots__ = ("board", "cols", "ply", "winner", "moves")

    def __init__(self, board: Board):
        self.board = board
        self.cols: list[list[int]] = [[] for _ in range(board.width)]
        self.ply = 0
        self.winner: int | None = None  # A or B once someone has k in a row
        self.moves: list[int] = []     # 0-based columns played so far

    # ------------------------------------------------------------ building
    @classmethod
    def from_moves(cls, board: Board, moves: str) -> "Position":
        """Play a string of 1-based column digits from the empty board.

        Raises :class:`IllegalPositionError` for a bad digit, a full column or a move made after
        the game ended."""
        moves = moves.strip()
        return cls.from_columns(board, board.columns_of_moves(moves), text=moves)

    @classmethod
    def from_columns(cls, board: Board, cols: Iterable[int], text: str | None = None) -> "Position":
        """Play 0-based column indices from the empty board."""
        pos = cls(board)
        for i, c in enumerate(cols):
            label = f" in {quote(text)}" if text is not None else ""
            if pos.winner is not None or pos.ply == board.cells:
                raise IllegalPositionError(f"move {i + 1}{label} is played after the game ended")
            if not 0 <= c < board.width:
                raise IllegalPositionError(f"column {c + 1}{label} does not exist on board {board}")
            if len(pos.cols[c]) == board.height:
                raise IllegalPositionError(f"move {i + 1}{label}: column {c + 1} is full")
            pos.play(c)
        return pos

    def copy(self) -> "Position":
        p = Position(self.board)
        p.cols = [list(c) for c in self.cols]
        p.ply, p.winner, p.moves = self.ply, self.winner, list(self.moves)
        return p

    # ------------------------------------------------------------- queries
    @property
    def to_move(self) -> str:
        """``"A"`` (first player) at even plies, ``"B"`` at odd plies."""
        return "A" if self.ply % 2 == 0 else "B"

    @property
    def is_terminal(self) -> bool:
        """The game is over: the last mover made k in a row, or the board is full."""
        return self.winner is not None or self.ply == self.board.cells

    def legal_moves(self) -> list[int]:
        """0-based columns that may be played (none once the game is over)."""
        if self.is_terminal:
            return []
        return [c for c in range(self.board.width) if len(self.cols[c]) < self.board.height]

    def cell(self, col: int, row: int) -> int:
        """``EMPTY``, ``A`` or ``B`` at 0-based column and row (row 0 at the bottom)."""
        c = self.cols[col]
        return c[row] if row < len(c) else EMPTY

    def codes(self) -> list[int]:
        """Column codes, left to right."""
        h = self.board.height
        return [self.board.code_of[tuple(c) + (EMPTY,) * (h - len(c))] for c in self.cols]

    def key(self) -> int:
        """Mirror-canonical table key of this position."""
        return key_of_codes(self.board, self.codes())

    def is_symmetric(self) -> bool:
        """Its own mirror image (on a 3D board: its own image under every symmetry)."""
        return len(set(self.board.readings(self.codes()))) == 1

    def move_string(self) -> str:
        return self.board.move_string(self.moves)

    # ------------------------------------------------------------- playing
    def play(self, col: int) -> None:
        """Drop the mover's chip in ``col`` (0-based); no legality check beyond the rules engine's
        callers. Sets :attr:`winner` if it makes k in a row."""
        player = A if self.ply % 2 == 0 else B
        row = len(self.cols[col])
        self.cols[col].append(player)
        self.ply += 1
        self.moves.append(col)
        if line_through(self.board, self.cols, col, row):
            self.winner = player

    def child(self, col: int) -> "Position":
        p = self.copy()
        p.play(col)
        return p

    def unmoves(self) -> list[int]:
        """0-based columns whose top chip belongs to the player who moved last: taking one
        back is an un-move (the backward pass sends a position's result to each such parent).

        >>> Position.from_moves(Board(4, 4), "112").unmoves()   # B's chip tops column 1
        [1]
        """
        if self.ply == 0:
            return []
        last = A if self.ply % 2 == 1 else B
        return [c for c in range(self.board.width) if self.cols[c] and self.cols[c][-1] == last]

    def unplay(self, col: int) -> "Position":
        """The position with the top chip of ``col`` taken back (one of :meth:`unmoves`). Its
        move history is known only when ``col`` was the last move; else it is left empty."""
        p = self.copy()
        p.cols[col].pop()
        p.ply -= 1
        p.moves = p.moves[:-1] if p.moves and p.moves[-1] == col else []
        owners = line_owners(p.board, p.cols)
        p.winner = next(iter(owners)) if len(owners) == 1 else None
        return p

    def winning_cells(self) -> list[tuple[int, int]]:
        """The cells (0-based column, row from the bottom) of the winning line the last move
        made, or ``[]`` if the game is not won.

        >>> Position.from_moves(Board(4, 4), "1213141").winning_cells()
        [(0, 0), (0, 1), (0, 2), (0, 3)]
        """
        if self.winner is None or not self.moves:
            return []
        col = self.moves[-1]
        return run_through(self.board, self.cols, col, len(self.cols[col]) - 1)

    def __repr__(self) -> str:
        return f"Position({self.board}, {self.move_string()!r})"


def run_through(board: Board, cols: Sequence[Sequence[int]], col: int,
                row: int) -> list[tuple[int, int]]:
    """Cells (0-based column, row) of the first run of ``k`` or more chips of one player through
    the chip at ``col``, ``row`` of ``cols`` (each column's chips, bottom first), sorted; ``[]``
    if there is none: the board's variant knows its lines (:meth:`Board.run_through`; on a 2D
    board horizontal, vertical and the two diagonals).

    >>> run_through(Board(4, 4), [[1], [1], [1], [1]], 2, 0)
    [(0, 0), (1, 0), (2, 0), (3, 0)]
    """
    return board.run_through(cols, col, row)


def line_through(board: Board, cols: Sequence[Sequence[int]], col: int, row: int) -> bool:
    """Whether the chip at 0-based ``col``, ``row`` of ``cols`` (each column's chips, bottom
    first) is part of ``k`` in a row: the rule for the end of the game.

    >>> line_through(Board(4, 4), [[1], [1], [1], [1]], 2, 0)
    True
    """
    return bool(run_through(board, cols, col, row))


def line_owners(board: Board, cols: Sequence[Sequence[int]]) -> set[int]:
    """Players (``A``/``B``) owning ``k`` in a row anywhere in ``cols`` (each column's chips,
    bottom first).

    >>> line_owners(Board(4, 4), [[1], [1], [1], [1]])
    {1}
    """
    owners: set[int] = set()
    for c in range(board.width):
        for r in range(len(cols[c])):
            if cols[c][r] not in owners and line_through(board, cols, c, r):
                owners.add(cols[c][r])
    return owners


def parse_moves(board: Board, moves: str) -> Position:
    """Shorthand for :meth:`Position.from_moves`."""
    return Position.from_moves(board, moves)

