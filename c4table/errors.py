"""Exception classes of c4table: every error a user can cause has its own class and a one-line
message; the CLI prints that line and exits with status 2 (bad input) or 1 (a check failed).

>>> from c4table.game.board import Board
>>> try:
...     Board.parse("7by6")
... except BoardError as e:
...     print(e)
bad board '7by6': expected WIDTHxHEIGHT such as 7x6, 5x4k3 (K in a row) or 2x2x4 (3D)
"""


class C4Error(Exception):
    """Base class of every c4table error."""


class BoardError(C4Error, ValueError):
    """A board size that is malformed or out of range."""


class IllegalPositionError(C4Error, ValueError):
    """A move string or drawing that cannot arise in play (bad digit, full column, move after
    the game ended, floating chip, ...)."""


class TableError(C4Error):
    """A table file that is missing, truncated, unsorted or does not match its board."""


class ClosedTableError(TableError, ValueError):
    """A table used after :meth:`~c4table.table.Table.close` (like I/O on a closed file)."""


class TableDamaged(TableError):
    """A table whose bytes are damaged: a block that does not match its checksum (the sidecar
    ``TABLE.dat.sums``), or an outcome byte its position cannot have. It never answers."""


class MissingTableError(TableError, FileNotFoundError):
    """No table file at the given path."""


class PositionNotFoundError(TableError, KeyError):
    """A legal position whose key is absent from the table: the table is incomplete or for
    another board."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingExtraError(C4Error, ImportError):
    """An optional feature whose dependencies are not installed; the message names the extra to
    install (``pip install 'c4table[plot]'``, ``'c4table[dask]'``)."""


class BuildError(C4Error):
    """A build that cannot proceed (memory budget too small, disk full, inconsistent build
    directory)."""


class CorruptDataError(BuildError, TableError):
    """A shard or file whose checksum, size or order does not match what the manifest says."""


class BudgetError(BuildError, ValueError):
    """Build options that cannot work: a memory budget too small for the workers asked for
    (bad input, like an unknown board: exit status 2)."""
