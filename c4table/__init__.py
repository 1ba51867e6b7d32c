"""c4table: complete Connect-4 lookup tables in Sidney Cadot's format.

Small public API over the table format (``README.md``; the modules: ``docs/modules.md``)::

    >>> import c4table
    >>> t = c4table.open_table("tables/5x4/connect4_5x4.dat")
    >>> t.probe("3344").outcome
    'A'
"""
import os

from c4table import jitcache as _jitcache

_jitcache.configure()   # before numba is imported: its cache keyed by the kernels' source

from c4table.budget import DEFAULT_MEMORY
from c4table.errors import (BoardError, BuildError, C4Error, ClosedTableError, CorruptDataError,
                            IllegalPositionError, InputError, MissingTableError,
                            PositionNotFoundError, TableError)

# Imported on first use (PEP 562): the command line's start-up (``c4table build`` included)
# does not pay for the readers, the exporter and the plots it does not call, and importing the
# package does not import numpy (the command line sets numpy's thread count first: cli.py).
_LAZY = {"Board": "game.board", "Outcome": "game.codec", "decode_outcome": "game.codec",
         "encode_outcome": "game.codec", "parse_drawing": "game.drawing", "render": "game.drawing",
         "ExportReport": "analysis.export", "export_positions": "analysis.export",
         "Position": "game.rules", "PlyStats": "analysis.stats", "ply_stats": "analysis.stats",
         "MoveProbe": "table.probe", "Probe": "table.probe", "Table": "table.source",
         "open_table": "open", "VerifyReport": "analysis.verify", "verify_table": "analysis.verify",
         "BuildDir": "builddir.reader", "open_build_dir": "builddir.reader"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'c4table' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"c4table.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["Board", "Outcome", "decode_outcome", "encode_outcome", "Position", "Table", "Probe",
           "MoveProbe", "open_table", "verify_table", "VerifyReport", "C4Error", "InputError", "BoardError",
           "BuildError", "CorruptDataError", "IllegalPositionError", "MissingTableError",
           "PositionNotFoundError", "TableError", "ClosedTableError", "build_table", "parse_drawing", "render",
           "export_positions", "ExportReport", "ply_stats", "PlyStats", "open_build_dir", "BuildDir"]


def build_table(board: "str | Board", out: "str | os.PathLike", memory: "str | int" = DEFAULT_MEMORY,
                workers: "int | None" = None, scheduler=None, quiet: bool = True,
                restart: bool = False, keep_work: bool = True, root: "str | None" = None,
                table_format: str = "dat"):
    """Build (or finish building) the table of ``board`` (``"5x4"``, ``"5x4k3"`` or a
    :class:`Board`) in the directory ``out`` (or a ``pyarrow.fs`` URI such as
    ``s3://bucket/prefix``) and return the table's path. ``memory``: budget shared by the workers
    (default :data:`c4table.budget.DEFAULT_MEMORY`); ``workers``: processes (default: all cores); ``scheduler``: a dask address,
    ``"local"`` or a ``distributed.Client``; ``quiet=False`` shows progress lines on stderr;
    ``restart``: discard a partial build; ``keep_work``: keep ``out/work`` after the merge;
    ``root``: a move string or drawing, to build the rooted table of every position reachable
    from it (:mod:`c4table.game.root`); ``table_format``: ``"dat"`` (the raw table) or ``"c4z"``
    (written straight into a compressed ``.c4z``, docs/c4z.md). See
    :func:`c4table.pipeline.stages.build.build_table`.

    >>> import c4table
    >>> c4table.build_table("4x4", "tables/4x4").name         # already built: returns at once
    'connect4_4x4.dat'
    """
    from c4table.pipeline.stages.build import build_table as _build
    return _build(board, out, memory=memory, workers=workers, scheduler=scheduler, quiet=quiet,
                  restart=restart, keep_work=keep_work, root=root, table_format=table_format)
