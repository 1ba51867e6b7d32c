"""Rooted tables: the complete table of every position reachable from one position, the *root*.

Design notes: ``docs/modules.md`` (``c4table.game.root``).

>>> from c4table.game.board import Board
>>> r = Root.parse(Board(7, 6), "4453")
>>> r.ply, r.table_filename
(4, 'connect4_7x6_root-4453.dat')
>>> Root.from_filename(Board(7, 6), "connect4_7x6_root-4453.dat").key == r.key
True
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from c4table.errors import IllegalPositionError, PositionNotFoundError
from c4table.game.board import Board
from c4table.game.drawing import parse_drawing
from c4table.game.rules import Position

#: ``connect4_WxH_root-MOVES.dat``: group 1 width, 2 height, 3 the root's moves (or ``empty``).
ROOTED_NAME = re.compile(r"connect(\d+)_(\d+)x(\d+)_root-(empty|[1-9]+)\.dat$")  # K, W, H, root
EMPTY_NAME = "empty"


class NotReachableError(PositionNotFoundError, IllegalPositionError):
    """A position that a rooted table does not hold: it cannot be reached from the table's
    root (by the moves of a game that has not ended). Bad input, like an illegal position."""


@dataclass(frozen=True)
class Root:
    """The root of a rooted table: one move string reaching it, its ply and its (mirror
    canonical) key."""

    board: Board
    moves: str
    ply: int
    key: int

    # ------------------------------------------------------------ making
    @classmethod
    def of_position(cls, pos: Position) -> "Root":
        """The root at ``pos``; a finished game is refused (nothing would be left to solve)."""
        if pos.is_terminal:
            how = "the board is full" if pos.winner is None else \
                f"{'A' if pos.ply % 2 else 'B'} has won"
            shown = pos.move_string() or "(empty)"
            raise IllegalPositionError(f"root {shown} is a finished game ({how}): a rooted table "
                                       "needs a position where the game goes on")
        if pos.board.width > 9 and pos.ply:
            raise IllegalPositionError(f"board {pos.board} has more than 9 columns: a root other "
                                       "than the empty board cannot be named by a move string")
        return cls(pos.board, pos.move_string(), pos.ply, pos.key())

    @classmethod
    def parse(cls, board: Board | str, text: str) -> "Root":
        """A root from a move string (``""`` is the empty board) or a drawing (several lines,
        see :mod:`c4table.game.drawing`).

        >>> Root.parse("5x4", "3344").moves
        '3344'
        """
        board = Board.parse(board)
        if "\n" in text.strip():
            return cls.of_position(parse_drawing(text, board))
        text = text.strip()
        if text == EMPTY_NAME:
            text = ""
        return cls.of_position(Position.from_moves(board, text))

    @classmethod
    def from_filename(cls, board: Board, name: str) -> "Root | None":
        """The root named by a rooted table's file name, or None if the name is not one."""
        m = ROOTED_NAME.search(name)
        if not m or (int(m.group(1)), int(m.group(2)), int(m.group(3))) != \
                (board.k, board.width, board.height):
            return None
        try:
            return cls.parse(board, m.group(4))
        except IllegalPositionError:
            return None

    @classmethod
    def from_json(cls, board: Board, rec: dict) -> "Root":
        """The root of a manifest's ``"root"`` record (its moves are replayed and must give the
        recorded ply and key)."""
        root = cls.parse(board, rec["moves"])
        if (root.ply, root.key) != (rec.get("ply"), rec.get("key")):
            raise ValueError(f"root record {rec} does not agree with its moves")
        return root

    def to_json(self) -> dict:
        return {"moves": self.moves, "ply": self.ply, "key": self.key}

    # ------------------------------------------------------------ naming
    @property
    def label(self) -> str:
        """The moves, or ``empty`` for the empty board."""
        return self.moves or EMPTY_NAME

    @property
    def table_filename(self) -> str:
        return f"connect{self.board.k}_{self.board.width}x{self.board.height}_root-{self.label}.dat"

    @property
    def default_dir(self) -> str:
        """Default build directory of a rooted build: ``tables/WxH_root-MOVES``."""
        return f"tables/{self.board.name}_root-{self.label}"

    def __str__(self) -> str:
        return f"{self.moves or '(empty)'} (ply {self.ply})"

    # ------------------------------------------------------------ answering
    def not_reachable(self, pos: Position, where: str | Path = "") -> NotReachableError:
        """The error for a position the rooted table does not hold."""
        shown = pos.move_string() or "(empty)"
        why = ": it has fewer chips than the root" if pos.ply < self.ply else ""
        at = f"{where}: " if where else ""
        return NotReachableError(f"{at}position {shown} (ply {pos.ply}) is not reachable from "
                                 f"the root {self} of this rooted table{why}")


def root_of(board: Board, name: str, manifest: dict | None) -> Root | None:
    """The root of the table file ``name``: the ``"root"`` record of its manifest (a parsed
    ``manifest.json`` that describes this file), else its file name; None for a full table."""
    if manifest is not None and (manifest.get("table") or {}).get("file", name) == name \
            and isinstance(manifest.get("root"), dict):
        try:
            return Root.from_json(board, manifest["root"])
        except (ValueError, KeyError, TypeError, IllegalPositionError):
            pass
    return Root.from_filename(board, name)


def root_argument(board: Board, value: str) -> Root:
    """The root of a ``--root`` value: a move string (``""`` or ``empty`` for the empty board),
    ``-`` (a drawing on stdin), or the name of a file holding a drawing.

    >>> root_argument(Board(5, 4), "3344").ply
    4
    """
    text = value.strip()
    if text == "-":
        return Root.parse(board, sys.stdin.read())
    if "\n" in text or text == EMPTY_NAME or text.isdigit() or text == "":
        return Root.parse(board, text)
    path = Path(value)
    if path.is_file():
        return Root.parse(board, path.read_text())
    raise IllegalPositionError(f"root {value!r} is neither a move string (columns 1-{board.width}) "
                               "nor a drawing file")
