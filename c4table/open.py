"""Opening a table: :func:`open_table` chooses the reader, as python-chess'
``open_tablebase()`` chooses its implementation: a ``.c4z`` file or URI
(``s3://bucket/t.c4z``, ``https://host/t.c4z``) is read by :class:`~c4table.c4z.table.C4zTable`,
anything else is a memory-mapped ``.dat`` (:class:`~c4table.table.dat.DatTable`). Both
implement :class:`~c4table.table.source.Table`.

>>> with open_table("tables/5x4/connect4_5x4.dat") as t:
...     t.probe("3344").outcome
'A'
"""
from __future__ import annotations

import os
from pathlib import Path

from c4table.c4z.format import is_c4z
from c4table.c4z.table import C4zTable
from c4table.errors import MissingTableError
from c4table.game.board import Board
from c4table.table.dat import DatTable
from c4table.table.source import Table


def table_in_dir(path: str | os.PathLike) -> str:
    """``path`` itself, or for a local directory (a build directory) the one table in it: its
    ``connectK_WxH.dat``, else its ``.c4z``. Raises :class:`~c4table.errors.MissingTableError` naming what the directory
    holds when that is not one table."""
    p = Path(path)
    if "://" in str(path) or not p.is_dir():
        return str(path) if isinstance(path, Path) else path
    for pattern in ("connect*_*x*.dat", "connect*_*x*.c4z"):
        found = sorted(p.glob(pattern))
        if len(found) == 1:
            return str(found[0])
        if found:
            raise MissingTableError(f"{path}: a directory with {len(found)} tables in it "
                             f"({', '.join(f.name for f in found)}); give the table file")
    raise MissingTableError(f"{path}: a directory with no connectK_WxH.dat or .c4z table in it")


def open_table(path: str | os.PathLike, board: str | Board | None = None) -> Table:
    """Open a table for lookups: a ``.dat`` path, or a ``.c4z`` path or URI, or a build
    directory holding one of them. ``board`` (``"WxH"``) names the board when neither the
    manifest beside the file nor its name does."""
    path = table_in_dir(path)
    if is_c4z(path):
        return C4zTable(path, board)
    return DatTable(path, board)
