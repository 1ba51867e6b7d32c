"""The tables a server answers from: opened once each and keyed by board name (``5x4``,
``7x6``); opening only maps a file, so startup reads nothing but the file sizes and manifests."""
from __future__ import annotations

import os
from typing import Iterable

from c4table.errors import C4Error
from c4table.open import open_table
from c4table.table.source import Table


class ServeError(C4Error, ValueError):
    """Tables that cannot be served together (two tables of one board, none at all)."""


def load_tables(paths: Iterable[str | os.PathLike | Table]) -> dict[str, Table]:
    """Open every table (or take it as it is) and key it by its board's name.

    >>> sorted(load_tables(["tables/5x4/connect4_5x4.dat", "tables/4x4/connect4_4x4.dat"]))
    ['4x4', '5x4']
    """
    tables: dict[str, Table] = {}
    for p in paths:
        t = p if isinstance(p, Table) else open_table(p)
        name = t.board.name
        if not t.board.supports("drawing"):   # the web board draws 2D boards only
            raise ServeError(f"{t.path}: board {name} is a 3D board; serve knows 2D boards only "
                             "(use lookup, best or play)")
        if name in tables:
            raise ServeError(f"two tables of board {name}: {tables[name].path} and {t.path}; "
                             "serve one table per board")
        tables[name] = t
    if not tables:
        raise ServeError("no table to serve: give at least one --table")
    return tables
