"""The options and arguments several commands share: the BOARD argument and ``--connect``,
``--device`` / ``--gpu-memory``, the table options (``--table``, ``--board``, ``--drawing``,
``--draw``) and how they find the table, and the parquet ``--out`` check."""
from __future__ import annotations

import sys
from pathlib import Path

import click

import c4table.config as config
from c4table.builddir import tableformat
from c4table.errors import BoardError

DEFAULT_BOARD = "5x4"


def board_arg(value: str):
    """The BOARD argument, with the connect length of ``--connect`` (see :func:`connect_option`)."""
    from c4table.game.board import Board
    ctx = click.get_current_context(silent=True)
    k = ctx.meta.get(_CONNECT, 4) if ctx is not None else 4
    try:
        return Board.parse(value, k)
    except BoardError as e:
        raise click.BadParameter(str(e)) from None


_CONNECT = "c4table.connect"


def _remember_connect(ctx, param, value):
    if value is not None:
        ctx.meta[_CONNECT] = value


def connect_option(f):
    """``--connect K``: K in a row wins (default 4). Eager, so BOARD (:func:`board_arg`) is
    parsed with it whatever the order on the command line."""
    return click.option("--connect", type=click.IntRange(2, 64), default=None, is_eager=True,
                        expose_value=False, callback=_remember_connect, metavar="K",
                        help="K in a row wins (default 4); the table is connectK_WxH.dat")(f)


DEVICE = "c4table.device"   # ctx.meta key of --device and --gpu-memory


def _remember_device(ctx, param, value):
    if value is not None:
        ctx.meta.setdefault(DEVICE, {})[param.name] = value


def device_options(f):
    """``--device cpu|gpu`` and ``--gpu-memory``, remembered in the context under :data:`DEVICE`
    (for ``build``, its stages and ``plan``)."""
    f = click.option("--gpu-memory", "gpu_memory", default=None, expose_value=False,
                     callback=_remember_device, metavar="SIZE",
                     help="with --device gpu: GPU memory the tasks may use (default: 90% of "
                          "the card), shared by the workers; shards are sized to half of it")(f)
    return click.option("--device", "device", type=click.Choice(["cpu", "gpu"]), default=None,
                        expose_value=False, callback=_remember_device,
                        help="where the tasks' kernels and sorts run (default cpu); gpu: one "
                             "CUDA GPU, shared by --workers processes, default 1 (docs/gpu.md)")(f)


TABLE_ENV = config.SETTINGS["C4TABLE_TABLE"].name


def _board_value(ctx, param, value):
    """``--board WxH``: the board of the table when its name does not say (same in every
    command; drawing the board is ``--draw``)."""
    if value is None:
        return None
    from c4table.game.board import Board
    from c4table.errors import BoardError
    try:
        Board.parse(value)
    except BoardError as e:
        raise click.BadParameter(f"{e} (--board names the table's board; to draw the board "
                                 "use --draw)") from None
    return value   # the text: a table named connectK_WxH.dat keeps its K (open.open_table)


TABLE_OPTION = click.option(
    "--table", "table_path", default=None, envvar=TABLE_ENV, show_envvar=True,
    type=click.Path(), metavar="FILE|DIR",
    help="table file (connectK_WxH.dat, or .c4z, which may also be an s3:// or https:// URI) "
         "or its build directory; default: $C4TABLE_TABLE, else the one table under tables/ "
         "(of the board given by --board)")
TABLE_BOARD_OPTION = click.option("--board", "board", default=None, metavar="WxH",
                                  callback=_board_value,
                                  help="board of the table if its name does not say")
DRAWING_OPTION = click.option("--drawing", "drawing", default=None, metavar="FILE|-",
                              help="read the position as a drawing (rows of . A B or . x o, top row "
                                   "first) from FILE or - for stdin")
DRAW_OPTION = click.option("--draw", "draw", is_flag=True,
                           help="also draw the board (A/B/.) with the best moves marked")


def table_path_or_default(path: str | None, board=None) -> str:
    """The table to open: ``--table`` (or ``$C4TABLE_TABLE``; a build directory stands for the
    table in it), else the one ``tables/*/connect4_WxH.dat`` (or ``tables/connect4_WxH.dat``)
    below the current directory, or the one of ``board`` (``--board``) among them.

    >>> table_path_or_default("t.dat")
    't.dat'
    """
    if path:
        return table_or_build_dir(path)
    found = sorted(set(Path("tables").glob("connect*_*x*.dat"))
                   | set(Path("tables").glob("*/connect*_*x*.dat")))
    if board is not None and found:
        from c4table.game.board import Board
        mine = [f for f in found if f.name == Board.parse(board).table_filename]
        if len(mine) == 1:
            return str(mine[0])
        if not mine:
            raise click.UsageError(f"no table of board {board} under tables/ (found: "
                                   f"{_listed(found)}); give --table FILE|DIR")
        found = mine
    if len(found) == 1:
        return str(found[0])
    if not found:
        raise click.UsageError(f"give --table FILE|DIR (or set ${TABLE_ENV}): no table under "
                               "tables/ (build one: c4table build 5x4)")
    raise click.UsageError(f"{len(found)} tables under tables/: {_listed(found)}; choose one with "
                           f"--board WxH or --table FILE|DIR (or set ${TABLE_ENV})")


def _listed(found: list[Path]) -> str:
    shown = [str(f.parent if f.parent.name != "tables" else f) for f in found[:8]]
    return ", ".join(shown) + (", ..." if len(found) > 8 else "")


def table_or_build_dir(path: str, name: str = "table_path") -> str:
    """``path`` itself, or for a local directory the table in it (a build directory), so that
    commands taking a table also take its build directory (:func:`c4table.open.table_in_dir`).
    ``name`` is the parameter of the running command that gave ``path``, which an error names
    as the user wrote it (``--table FILE|DIR``, or an argument ``FILE|DIR``).

    >>> table_or_build_dir("t.dat")
    't.dat'
    """
    from c4table.errors import MissingTableError
    from c4table.open import table_in_dir as find
    try:
        return find(path)
    except MissingTableError as e:
        raise click.BadParameter(str(e), param_hint=param_hint(name)) from None


def param_hint(name: str) -> str:
    """How the running command's parameter ``name`` reads on its command line: ``--table
    FILE|DIR`` for an option, ``FILE|DIR`` (its metavar) for an argument; ``--table FILE|DIR``
    outside a command.

    >>> param_hint("table_path")
    '--table FILE|DIR'
    """
    ctx = click.get_current_context(silent=True)
    for p in ctx.command.params if ctx is not None else ():
        if p.name == name:
            shown = p.metavar or p.name.upper()
            return shown if isinstance(p, click.Argument) else f"{p.opts[0]} {shown}"
    return "--table FILE|DIR"


def read_drawing(source: str) -> str:
    """Text of a drawing from a file name or ``-`` (stdin).

    >>> read_drawing("board.txt")
    '.....\\n.....\\n..B..\\n.AAB.\\n'
    """
    if source == "-":
        return stdin_text().read()
    try:
        return Path(source).read_text()
    except FileNotFoundError:
        raise click.BadParameter(f"{source}: no such file", param_hint="--drawing") from None
    except IsADirectoryError:
        raise click.BadParameter(f"{source}: is a directory", param_hint="--drawing") from None


def stdin_text():
    """stdin as text; bytes that are not UTF-8 stay (as surrogates) so that one bad line is
    one error answer, not the end of the batch."""
    import io
    buf = getattr(sys.stdin, "buffer", None)
    if buf is None:
        return sys.stdin
    return io.TextIOWrapper(buf, encoding="utf-8", errors="surrogateescape")


PARQUET_SUFFIXES = (".parquet", ".pq")


def parquet_out(value: str) -> str:
    """Check ``export --out``: export writes parquet only, so the name must say so (a
    ``.csv`` name holding parquet would mislead), and the directory must exist (a typo in it
    is an error, not a new directory tree).

    >>> parquet_out("ply8.parquet")
    'ply8.parquet'
    """
    p = Path(value)
    if p.suffix.lower() not in PARQUET_SUFFIXES:
        raise click.BadParameter(f"{value}: export writes parquet only; name the file "
                                 f"*.parquet (or *.pq)", param_hint="--out")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise click.BadParameter(f"{value}: directory {parent} does not exist",
                                 param_hint="--out")
    return value


def codec_option(f):
    """``--codec NAME``: the block codec of a ``--format c4z`` table, by name."""
    return click.option("--codec", "c4z_codec", default=None, metavar="NAME",
                        help="with --format c4z: the block codec by name (default "
                             "$C4TABLE_C4Z_CODEC, else varint-plysym-v3, format 3; "
                             "rulekeys-frames-v5, format 5: about 0.77x the bytes for 1.4x the "
                             "build's CPU)")(f)


def format_option(f):
    return click.option("--format", "table_format", type=click.Choice(tableformat.NAMES),
                        default=tableformat.DAT.name, show_default=True,
                        help="what the merge writes: " + ", or ".join(
                            f.summary for f in tableformat.FORMATS.values()))(f)
