"""Checks a table file must pass when it is opened, before any answer is given: they cost a
``stat`` and two key reads, whatever the table's size. Its size must be a whole number of
entries and that of its reference (the manifest beside it, else the known table of its board);
its first and last keys must be those of its board (or root). A table with no reference is
checked for its structure only. Each refusal is one :class:`~c4table.errors.TableError` line;
a :class:`~c4table.errors.TableBoardError` (bad input) when the file is that of another board:
its size is that of another board's known table, or its name says another board.
The checks in full: ``docs/modules.md`` (``c4table.table.check``).

>>> from c4table.game.board import Board
>>> check_size(Path("connect4_4x4.dat"), Board(4, 4), 322164 - 4, None)
Traceback (most recent call last):
...
c4table.errors.TableError: connect4_4x4.dat: 322,160 bytes, but known table 4x4 has 322,164: truncated, or a table of another board
"""
from __future__ import annotations

from pathlib import Path

from c4table.game.board import Board
from c4table.errors import TableError, TableBoardError
from c4table.table.known import known_tables


def known_of_size(size: int, sha256: str | None = None, sha256_tree: str | None = None) -> list[str]:
    """Boards of the known tables that have ``size`` bytes (and, with ``sha256`` or
    ``sha256_tree`` given, the same value of those the known table records, at least one)."""
    given = {k: v for k, v in (("sha256", sha256), ("sha256_tree", sha256_tree)) if v}

    def same(ref: dict) -> bool:
        both = [k for k in given if k in ref]
        return not given or (bool(both) and all(ref[k] == given[k] for k in both))

    return [name for name, ref in known_tables().items() if ref.get("bytes") == size and same(ref)]


def reference(name: str, board: Board, build, rooted: bool = False) -> tuple[str, dict] | None:
    """``(label, record)`` of what the table file ``name`` of ``board`` should be: the table
    record of ``build`` (a :class:`~c4table.builddir.BuildDir`) if it describes the file, else
    the known table of the board (not for a rooted table: known tables are full ones), else
    ``None``."""
    if build is not None and build.table is not None and build.describes(name):
        return f"its manifest {build.path}", build.table.figures()
    ref = None if rooted else known_tables().get(board.name)
    if ref is not None:
        return f"known table {board.name}", ref
    return None


def _other_board(path: Path, size: int, board: Board) -> str:
    """Why ``path`` looks like the table of another board than ``board`` ("": it does not)."""
    named = Board.of_table_name(path.name)
    if named is not None and named != board:
        return f" (its name says board {named.name}: give --board {named.name} or none)"
    others = [b for b in known_of_size(size) if b != board.name]
    if not others:
        return ""
    return f" (it has the size of known table {others[0]}: give --board {others[0]} if it is one)"


def _refuse(text: str, other: str) -> TableError:
    """The error of a table that fails a check: a :class:`TableBoardError` if it looks like
    another board's (``other``, the hint of :func:`_other_board`)."""
    return TableBoardError(text + other) if other else TableError(text)


def check_size(path: Path, board: Board, size: int, build=None, rooted: bool = False) -> None:
    """Refuse a table file of ``size`` bytes that cannot be the table of ``board`` (see module
    docstring); ``rooted``: the table of a subtree (:mod:`c4table.game.root`)."""
    E = board.entry_size
    if size == 0:
        raise TableError(f"{path}: empty file")
    if size % E:
        raise _refuse(f"{path}: size {size:,} is not a multiple of the {E}-byte entry of "
                      f"board {board} (truncated or wrong board?)", _other_board(path, size, board))
    ref = reference(path.name, board, build, rooted)
    if ref is not None:
        label, rec = ref
        want = rec.get("bytes")
        if want is not None and want != size:
            raise _refuse(f"{path}: {size:,} bytes, but {label} has {want:,}: truncated, or a "
                          "table of another board", _other_board(path, size, board))


def check_keys(path: Path, board: Board, first: int, last: int, build=None,
               first_key: int = 0) -> None:
    """Refuse a table whose first key is not ``first_key`` (0, the empty board, for a full
    table; the root's key for a rooted one: every other key of its subtree is larger), whose
    last key is out of range, or whose last key is not the last key of its build's shards."""
    if first != first_key:
        what = "the empty board" if first_key == 0 else "the root's key"
        raise _refuse(f"{path}: first key is {first}, not {first_key} ({what}): not a table "
                      f"of board {board}", _other_board(path, path.stat().st_size, board))
    if last >= board.key_limit:
        raise _refuse(f"{path}: last key {last} is out of range for board {board}",
                      _other_board(path, path.stat().st_size, board))
    if build is not None and build.describes(path.name) and build.table is not None:
        bounds = build.key_bounds()
        if bounds is not None and bounds[1] != last:
            raise TableError(f"{path}: last key {last}, but the build's shards ({build.path}) end "
                             f"at {bounds[1]}: truncated or damaged table")
