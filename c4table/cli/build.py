"""The build commands: ``build`` (forward, backward and merge), and each stage alone:
``forward``, ``backward``, ``merge``; how they open the build directory and what they print."""
from __future__ import annotations

import click

from c4table.budget import DEFAULT_MEMORY, MemoryBudget
from c4table.builddir import tableformat
from c4table.cli.c4z import compress_build, compress_options, compressed_build_done
from c4table.cli.fail import fail as _fail
from c4table.errors import EXIT_BAD_INPUT
from c4table.cli.options import (DEFAULT_BOARD, DEVICE, board_arg, codec_option, connect_option,
                                 device_options, format_option)
from c4table.cli.process import done_with_interpreter


def _gpu_memory(host: MemoryBudget, workers, scheduler) -> MemoryBudget | None:
    """The memory budget of a ``--device gpu`` run (fails with exit status 2 where the GPU
    path cannot run), or None on the CPU. ``host``: the budget ``--memory`` gives."""
    ctx = click.get_current_context(silent=True)
    opts = ctx.meta.get(DEVICE, {}) if ctx is not None else {}
    if opts.get("device", "cpu") != "gpu":
        return None
    from c4table.pipeline.kernels.gpu import device
    from c4table.units import parse_size
    why = device.unavailable()
    if why:
        _fail(why, EXIT_BAD_INPUT)
    if scheduler is not None:
        _fail("--device gpu runs on this machine's GPU (no --scheduler); docs/gpu.md says how "
              "several GPUs would share a build", EXIT_BAD_INPUT)
    card = device.card_memory()
    try:
        gpu = parse_size(opts["gpu_memory"]) if opts.get("gpu_memory") else \
            (int(card * 0.9) if card else None)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--gpu-memory") from None
    return MemoryBudget(min(host.bytes, gpu // 2)) if gpu else host


def _build_options(f):
    f = device_options(f)
    f = click.option("--out", "out", type=click.Path(file_okay=False), default=None, metavar="DIR",
                     help="build directory, or a pyarrow.fs URI every worker can reach such as "
                          "s3://bucket/prefix (default: tables/WxH)")(f)
    f = click.option("--memory", default=DEFAULT_MEMORY, show_default=True, metavar="SIZE",
                     help="memory budget shared by the workers (e.g. 512MiB, 8GiB)")(f)
    f = click.option("--workers", type=click.IntRange(1, 4096), default=None, metavar="N",
                     help="worker processes (default: all cores)")(f)
    f = click.option("--scheduler", default=None, metavar="local|ADDRESS",
                     help="dask scheduler: 'local' for a LocalCluster, or an address tcp://host:8786 "
                          "(default: local processes, no dask)")(f)
    f = click.option("-q", "--quiet", is_flag=True, help="no progress lines")(f)
    f = click.option("--restart", is_flag=True,
                     help="discard the build in --out (its manifest, shards and table files) "
                          "and start over")(f)
    f = connect_option(f)
    f = click.option("--root", "root", default=None, metavar="MOVES|FILE|-",
                     help="build the rooted table of every position reachable from this one: a "
                          "move string, or a drawing in FILE or on stdin (-); writes "
                          "connect4_WxH_root-MOVES.dat (default --out tables/WxH_root-MOVES)")(f)
    return f


#: The order of the build commands' parameters in their --help: what a first build sets, then
#: what changes the table or the directory, then where the work runs, then the output.
PARAM_ORDER = ("board", "out", "table_format", "workers", "memory", "restart", "clean",
               "compress", "compress_only", "c4z_codec", "max_ply", "root", "connect", "scheduler", "device",
               "gpu_memory", "quiet", "verbose")


def _ordered(cmd: click.Command) -> click.Command:
    """``cmd`` with its parameters in :data:`PARAM_ORDER` (their --help order; an eager
    option such as --connect is still read first)."""
    cmd.params.sort(key=lambda p: PARAM_ORDER.index(p.name) if p.name in PARAM_ORDER
                    else len(PARAM_ORDER))
    return cmd


def _no_compress_with_c4z(table_format: str, compress: bool, compress_only: bool) -> None:
    if not tableformat.get(table_format).raw and (compress or compress_only):
        raise click.UsageError(f"--format {table_format} already writes the .{table_format}; "
                               "drop --compress/--compress-only")


def _open(board, out, memory, workers, scheduler, quiet, restart, root=None, table_format="dat",
          c4z_codec=None):
    import gc
    was = gc.isenabled()
    gc.disable()   # importing the pipeline (numba) makes full collections that find nothing
    try:           # (the executor freezes these objects before the first task)
        from c4table.pipeline.stages.build import BuildSettings, open_with
        from c4table.io.storage import is_url, open_storage
    finally:
        if was:
            gc.enable()
    try:
        budget = MemoryBudget.parse(memory)   # parsed once: the settings carry it
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory") from None
    on_gpu = _gpu_memory(budget, workers, scheduler)
    device = "cpu" if on_gpu is None else "gpu"
    if on_gpu is not None:   # --workers N: N processes share the card, default one
        budget, workers = on_gpu, workers or 1
    if out and is_url(out):
        try:
            open_storage(out)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--out") from None
    origin = None
    if root is not None:
        from c4table.game.root import root_argument
        origin = root_argument(board, root)
    default = origin.default_dir if origin is not None else f"tables/{board.name}"
    return open_with(BuildSettings.parse(board, out or default, budget, workers, scheduler, quiet,
                                         restart, origin, device, table_format, c4z_codec))


@click.command(short_help="Build a complete table: forward, backward and merge")
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@click.option("--clean", is_flag=True, help="delete the intermediate shards (DIR/work) after the merge")
@compress_options
@format_option
@codec_option
@click.option("-v", "--verbose", is_flag=True,
              help="also the storage requests, bytes and tasks of each stage (always shown for "
                   "an object store such as s3://)")
def build(board, out, memory, workers, scheduler, quiet, restart, root, clean, compress, compress_only,
          table_format, c4z_codec, verbose):
    """Build the complete table of BOARD (default 5x4): forward, backward and merge.

    Writes DIR/connect4_WxH.dat (connectK_WxH.dat with --connect K) and DIR/manifest.json.
    BOARD XxYxH is a 3D board: an X by Y grid of columns of height H (connectK_XxYxH.dat).
    Rerunning on a partial build resumes it. --format c4z writes DIR/connect4_WxH.c4z instead,
    with no raw table on disk."""
    _no_compress_with_c4z(table_format, compress, compress_only)
    b = _open(board, out, memory, workers, scheduler, quiet, restart, root, table_format, c4z_codec)
    from c4table.pipeline.stages.build import run_build
    if compress_only and compressed_build_done(b.store, b.table_name):
        b.close()
        path = b.store.root / b.table_name
    else:
        path = run_build(b, keep_work=not clean)
    click.echo(f"{_compressed(path, compress, compress_only, quiet)}  "
               f"{b.manifest.table.entries:,} entries  {b.manifest.table.identity}")
    if verbose or not b.store.local:
        _echo_counts(b, quiet)
    else:
        _echo_stages(b, quiet)
    if not quiet and not clean and b.store.local:
        _echo_work(b.store.root / "work")
    done_with_interpreter()


def _echo_counts(b, quiet: bool) -> None:
    """The requests, bytes, tasks and task memory of this run's stages (DIR/stats.json)."""
    from c4table.pipeline.runtime.counters import format_stats
    stages = {k: v for k, v in b.ledger.executor_counts.items() if v["tasks"]}
    if quiet or not stages:
        return
    click.echo(f"storage and tasks of this run ({b.store.display('stats.json')} sums every "
               "run of each stage):")
    for line in format_stats(stages):
        click.echo("  " + line)


def _echo_stages(b, quiet: bool) -> None:
    """One short line per stage this run ran: the entries it processed in this run, wall time,
    rate; for a resumed stage, how many of its steps this run ran (the storage figures: ``-v``,
    or DIR/stats.json)."""
    if quiet:
        return
    ran = {k for k, v in b.ledger.executor_counts.items() if v["tasks"]}
    for stage, seconds in b.ledger.stage_seconds.items():
        if stage in ran:
            click.echo("  " + stage_line(stage, seconds, b.ledger.stage_work.get(stage),
                                         b.manifest.table.entries))


def stage_line(stage: str, seconds: float, work, entries: int) -> str:
    """The summary line of ``stage`` after ``seconds``: its :class:`StageWork
    <c4table.pipeline.stages.ledger.StageWork>` ``work`` of this run (None: the whole table's
    ``entries``, a stage that does all or nothing).

    >>> from c4table.pipeline.stages.ledger import StageWork
    >>> stage_line("backward", 0.3, StageWork(6_383_011, 2, 26), 34_888_367)
    'backward  6,383,011 entries in 0.3s (21.3 M entries/s); resumed: 2 of 26 plies this run'
    >>> stage_line("forward", 0.5, StageWork(0, 0, 26), 34_888_367)
    'forward   nothing left to do: 26 plies finished before (verified in 0.5s)'
    """
    from c4table.units import format_seconds
    from c4table.wording import count
    n = entries if work is None else work.entries
    unit = "ply" if stage in ("forward", "backward") else "range"
    if work is not None and work.steps == 0:
        return (f"{stage:<9} nothing left to do: {count(work.of, unit)} finished before "
                f"(verified in {format_seconds(seconds)})")
    rate = f"{n / seconds / 1e6:,.1f} M entries/s" if seconds > 0 else "-"
    line = f"{stage:<9} {n:,} entries in {format_seconds(seconds)} ({rate})"
    if work is not None and work.resumed:
        line += f"; resumed: {work.steps} of {count(work.of, unit)} this run"
    return line


def _echo_work(work) -> None:
    """How much the build directory's intermediate files hold, and how to remove them."""
    from c4table.units import format_size
    if not work.is_dir():
        return
    size = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
    click.echo(f"{work} holds {format_size(size)} of intermediate files (for resuming and "
               "export --source shards); rerun with --clean to remove them")


def _compressed(path, compress: bool, compress_only: bool, quiet: bool):
    """The table ``path``, or its .c4z when asked for (written here)."""
    if not (compress or compress_only):
        return path
    from pathlib import Path
    from c4table.c4z.format import default_c4z_name
    path = Path(path)
    z = default_c4z_name(path)
    if compress_only and not path.exists() and z.exists():
        return z
    return compress_build(path, compress_only, quiet)


@click.command(short_help="Forward pass only: every generation's keys and counts")
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@click.option("--max-ply", type=click.IntRange(0, 64), default=None,
              help="stop after this generation (default: the full board)")
def forward(board, out, memory, workers, scheduler, quiet, restart, root, max_ply):
    """Forward pass only: every generation's sorted, deduplicated keys, and per-ply counts."""
    from c4table.pipeline.stages import forward as fwd
    with _open(board, out, memory, workers, scheduler, quiet, restart, root) as b:
        b.run_stage("forward", fwd.run, b, max_ply)
    last = min(max_ply if max_ply is not None else board.cells, board.cells)
    plies = range(last + 1)
    click.echo(f"{b.root}: forward pass to ply {last}: {b.manifest.total('positions', plies):,} "
               f"positions ({b.manifest.total('entries', plies):,} entries)")


@click.command(short_help="Backward pass only: outcome and distance of each entry")
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
def backward(board, out, memory, workers, scheduler, quiet, restart, root):
    """Backward pass only (after forward): outcome and distance of every position."""
    from c4table.pipeline.stages import backward as bwd
    with _open(board, out, memory, workers, scheduler, quiet, restart, root) as b:
        b.run_stage("backward", bwd.run, b)
    m = b.manifest
    click.echo(f"{b.root}: backward pass done: A wins {m.total('a_wins'):,}, draws "
               f"{m.total('draws'):,}, B wins {m.total('b_wins'):,} positions")


@click.command(short_help="Final merge only: write the table (.dat or .c4z)")
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@compress_options
@format_option
@codec_option
def merge(board, out, memory, workers, scheduler, quiet, restart, root, compress, compress_only,
          table_format, c4z_codec):
    """Final merge only (after backward): write DIR/connectK_WxH.dat (--format c4z:
    DIR/connectK_WxH.c4z)."""
    from c4table.pipeline.stages.build import merge_of
    _no_compress_with_c4z(table_format, compress, compress_only)
    with _open(board, out, memory, workers, scheduler, quiet, restart, root, table_format,
               c4z_codec) as b:
        done = compress_only and compressed_build_done(b.store, b.table_name)
        path = b.store.root / b.table_name if done else b.run_stage("merge", merge_of(b), b)
        if not b.table_format.keeps_work:   # no later step reads the shards
            b.store.delete_tree("work")
    click.echo(f"{_compressed(path, compress, compress_only, quiet)}  "
               f"{b.manifest.table.entries:,} entries  {b.manifest.table.identity}")


COMMANDS = [_ordered(c) for c in (build, forward, backward, merge)]
