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

from c4table.c4z.format import is_c4z
from c4table.c4z.table import C4zTable
from c4table.game.board import Board
from c4table.table.dat import DatTable
from c4table.table.source import Table


def open_table(path: str | os.PathLike, board: str | Board | None = None) -> Table:
    """Open a table for lookups: a ``.dat`` path, or a ``.c4z`` path or URI. ``board``
    (``"WxH"``) names the board when neither the manifest beside the file nor its name does."""
    if is_c4z(path):
        return C4zTable(path, board)
    return DatTable(path, board)
