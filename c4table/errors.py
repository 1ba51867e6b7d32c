"""Exception classes of c4table and the exit status of each: every error a user can cause has
its own class and a one-line message; the CLI prints that line and exits with the class's
:attr:`~C4Error.exit_status` (:func:`c4table.cli.main.main`; the table in docs/cli.md, "Exit
status").

The rule: exit status 2 (:data:`EXIT_BAD_INPUT`, the :class:`InputError` classes) when the
command cannot do what it was asked, given what it was given: a malformed board, position or
option, a file that is missing or is not what it was named as (another board), a build
directory or option the build cannot use, an optional extra not installed; nothing was done
(or, for a batch, the other items were). Exit status 1 (:data:`EXIT_FAILED`, every other
class) when the command ran and something failed: a check, damaged data, a build that cannot
go on.

>>> from c4table.game.board import Board
>>> try:
...     Board.parse("7by6")
... except BoardError as e:
...     print(e, "-> exit status", e.exit_status)
bad board '7by6': expected WIDTHxHEIGHT such as 7x6, 5x4k3 (K in a row) or 2x2x4 (3D) -> exit status 2
"""

EXIT_FAILED = 1
"""A check failed (``verify``, ``crosscheck``), data is damaged, a run could not go on, or an
unexpected error."""
EXIT_BAD_INPUT = 2
"""The command cannot do what it was asked with the input it was given (see the module
docstring); click's usage errors exit with it too."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT, as a shell reports a process killed by it)."""


class C4Error(Exception):
    """Base class of every c4table error."""

    #: the exit status of the command line for this error (:data:`EXIT_FAILED` unless an
    #: :class:`InputError`)
    exit_status = EXIT_FAILED


class InputError(C4Error):
    """Input the command cannot act on (exit status 2): the subclasses name what; this class
    itself is any other (a parquet file without the column asked for, a malformed setting)."""

    exit_status = EXIT_BAD_INPUT


class BoardError(InputError, ValueError):
    """A board size that is malformed or out of range."""


class IllegalPositionError(InputError, ValueError):
    """A move string or drawing that cannot arise in play (bad digit, full column, move after
    the game ended, floating chip, ...)."""


class TableError(C4Error):
    """A table file that is missing, truncated, unsorted or does not match its board."""


class TableBoardError(InputError, TableError):
    """A table file whose board cannot be used: it is another board's than the one it was
    opened as (given by ``--board`` or its name: its size or first key is another board's), or
    nothing tells it (no manifest, a name that does not say, no ``--board``)."""


class ClosedTableError(TableError, ValueError):
    """A table used after :meth:`~c4table.table.Table.close` (like I/O on a closed file)."""


class TableDamaged(TableError):
    """A table whose bytes are damaged: a block that does not match its checksum (the sidecar
    ``TABLE.dat.sums``), or an outcome byte its position cannot have. It never answers."""


class MissingTableError(InputError, TableError, FileNotFoundError):
    """No table file at the given path."""


class PositionNotFoundError(TableError, KeyError):
    """A legal position whose key is absent from the table: the table is incomplete or for
    another board."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MissingExtraError(InputError, ImportError):
    """An optional feature whose dependencies are not installed; the message names the extra to
    install (``pip install 'c4table[plot]'``, ``'c4table[dask]'``)."""


class BuildError(C4Error):
    """A build that cannot go on (disk full, a merge that does not add up, an inconsistent
    build directory)."""


class BuildInputError(InputError, BuildError):
    """A build that cannot start as asked (exit status 2): ``--out`` holds another board's
    build or another process's, is not a directory, or is remote where the build needs a local
    one; a stage run before the one it needs; a board too large for the pipeline; an
    unreachable ``--scheduler``."""


class CorruptDataError(BuildError, TableError):
    """A shard or file whose checksum, size or order does not match what the manifest says."""


class BudgetError(BuildInputError, ValueError):
    """Build options that cannot work: a memory budget too small for the workers asked for."""
