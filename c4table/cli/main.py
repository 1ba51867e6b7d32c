"""The ``c4table`` command line: build, forward, backward, merge, lookup, verify (and the BDD
commands of :mod:`c4table.cli.bdd`).

Errors a user can cause end with one line on stderr (``c4table: error: ...``) and exit status
2 (bad input: malformed board, position, option or missing file) or 1 (a check failed, data is
corrupt, the build cannot proceed). Nothing prints a traceback.
"""
# Each command imports what it uses inside its function, and the readers' commands load on
# first use (_Commands.LAZY): `import c4table.cli.main` takes 0.15-0.25 s, importing the build,
# the readers, export, .c4z and BDD mode up front 0.7-2.2 s (2-core EPYC VM at load 4,
# 2026-11-26), which every `c4table --help` and every `lookup` would pay.
from __future__ import annotations

import json
import os
import sys

# One BLAS thread per process, set before numpy is first imported (c4table's package import does
# not import it): numpy's OpenBLAS otherwise starts a thread per core at import, which costs
# start-up and exit time in every command and build worker, and nothing here uses BLAS. An
# explicit setting in the environment wins. OMP_NUM_THREADS is left alone: pyarrow sizes its
# own thread pool from it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# And one malloc arena for all threads, before pyarrow's import starts a second one
# (pipeline/runtime/allocator.py: the build's workers then reuse the memory Arrow's threads free).
import c4table.config as config
from c4table.pipeline.runtime.allocator import one_arena  # noqa: E402

one_arena()

import click

from c4table.cli.fail import fail as _fail

from c4table.cli.c4z import compress_build, compress_options, compressed_build_done
from c4table.cli.use import DRAW_OPTION, DRAWING_OPTION, TABLE_BOARD_OPTION, TABLE_OPTION
from c4table.errors import (BoardError, BudgetError, BuildError, C4Error, IllegalPositionError,
                            MissingTableError, TableError)

BOARD_HELP = "board as WIDTHxHEIGHT, e.g. 7x6 (7 columns, 6 rows)"
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


_DEVICE = "c4table.device"


def _remember_device(ctx, param, value):
    if value is not None:
        ctx.meta.setdefault(_DEVICE, {})[param.name] = value


def device_options(f):
    """``--device cpu|gpu`` and ``--gpu-memory``, remembered in the context (:func:`_open`)."""
    f = click.option("--gpu-memory", "gpu_memory", default=None, expose_value=False,
                     callback=_remember_device, metavar="SIZE",
                     help="with --device gpu: GPU memory the tasks may use (default: 90% of "
                          "the card), shared by the workers; shards are sized to half of it")(f)
    return click.option("--device", "device", type=click.Choice(["cpu", "gpu"]), default=None,
                        expose_value=False, callback=_remember_device,
                        help="where the tasks' kernels and sorts run (default cpu); gpu: one "
                             "CUDA GPU, shared by --workers processes, default 1 (docs/gpu.md)")(f)


def _gpu_memory(host_memory: str, workers, scheduler):
    """The memory budget, workers and scheduler of a ``--device gpu`` run (fails with exit
    status 2 where the GPU path cannot run), or None on the CPU."""
    ctx = click.get_current_context(silent=True)
    opts = ctx.meta.get(_DEVICE, {}) if ctx is not None else {}
    if opts.get("device", "cpu") != "gpu":
        return None
    from c4table.pipeline.kernels.gpu import device
    from c4table.units import parse_size
    why = device.unavailable()
    if why:
        _fail(why, 2)
    if scheduler is not None:
        _fail("--device gpu runs on this machine's GPU (no --scheduler); docs/gpu.md says how "
              "several GPUs would share a build", 2)
    card = device.card_memory()
    try:
        gpu = parse_size(opts["gpu_memory"]) if opts.get("gpu_memory") else \
            (int(card * 0.9) if card else None)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--gpu-memory") from None
    device.select("gpu")
    host = parse_size(host_memory)
    return min(host, gpu // 2) if gpu else host


def _build_options(f):
    f = device_options(f)
    f = click.option("--out", "out", type=click.Path(file_okay=False), default=None,
                     help="build directory, or a pyarrow.fs URI every worker can reach such as "
                          "s3://bucket/prefix (default: tables/WxH)")(f)
    f = click.option("--memory", default="4GiB", show_default=True,
                     help="memory budget shared by the workers (e.g. 512MiB, 8GiB)")(f)
    f = click.option("--workers", type=click.IntRange(1, 4096), default=None,
                     help="worker processes (default: all cores)")(f)
    f = click.option("--scheduler", default=None,
                     help="dask scheduler: 'local' for a LocalCluster, or an address tcp://host:8786 "
                          "(default: local processes, no dask)")(f)
    f = click.option("-q", "--quiet", is_flag=True, help="no progress lines")(f)
    f = click.option("--restart", is_flag=True, help="discard a partial build in --out and start over")(f)
    f = connect_option(f)
    f = click.option("--root", "root", default=None, metavar="MOVES|FILE|-",
                     help="build the rooted table of every position reachable from this one: a "
                          "move string, or a drawing in FILE or on stdin (-); writes "
                          "connect4_WxH_root-MOVES.dat (default --out tables/WxH_root-MOVES)")(f)
    return f


def format_option(f):
    return click.option("--format", "table_format", type=click.Choice(["dat", "c4z"]),
                        default="dat", show_default=True,
                        help="what the merge writes: the raw table (.dat), or straight into a "
                             "compressed .c4z with no raw file on disk (docs/c4z.md)")(f)


def _no_compress_with_c4z(table_format: str, compress: bool, compress_only: bool) -> None:
    if table_format == "c4z" and (compress or compress_only):
        raise click.UsageError("--format c4z already writes the .c4z; drop --compress/--compress-only")


def _open(board, out, memory, workers, scheduler, quiet, restart, root=None, table_format="dat"):
    import gc
    was = gc.isenabled()
    gc.disable()   # importing the pipeline (numba) makes full collections that find nothing
    try:           # (the executor freezes these objects before the first task)
        from c4table.pipeline.stages.build import open_build
        from c4table.io.storage import is_url, open_storage
    finally:
        if was:
            gc.enable()
    from c4table.units import parse_size
    try:
        parse_size(memory)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory") from None
    on_gpu = _gpu_memory(memory, workers, scheduler)
    if on_gpu is not None:   # --workers N: N processes share the card, default one
        memory, workers = on_gpu, workers or 1
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
    return open_build(board, out or default, memory, workers, scheduler, quiet, restart, origin,
                      table_format)


class _Commands(click.Group):
    """The command group; BDD mode's commands (``bdd``, ``crosscheck``) are imported when first
    named or listed: their modules (oxidd and the BDD engine) are a tenth of the start-up time
    of every other command, ``build`` included."""

    LAZY = ("bdd", "crosscheck")

    def _load_lazy(self) -> None:
        if getattr(self, "_lazy_loaded", False):
            return
        self._lazy_loaded = True
        try:
            from c4table.cli.bdd import bdd, crosscheck
        except ImportError:  # BDD mode needs oxidd
            return
        self.add_command(bdd)
        self.add_command(crosscheck)
        from c4table.cli.examples import add_examples
        add_examples(self)

    def list_commands(self, ctx):
        self._load_lazy()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        if name in self.LAZY:
            self._load_lazy()
        return super().get_command(ctx, name)

    def resolve_command(self, ctx, args):
        name, cmd, rest = super().resolve_command(ctx, args)
        global _running
        _running = cmd.name if cmd is not None else name
        return name, cmd, rest


_running: str | None = None   # the command being run, for the message on Ctrl-C

_RESUME = "interrupted; finished steps are kept, rerun the same command to resume"
ON_INTERRUPT = {
    **dict.fromkeys(("build", "forward", "backward", "merge"), _RESUME),
    **dict.fromkeys(("compress", "decompress"),
                    "interrupted; finished blocks are kept, rerun the same command to resume"),
    "export": "interrupted; the parquet file was not written, rerun the same command to export",
    "label": "interrupted; the parquet file was not written, rerun the same command to label",
    "verify": "interrupted; the table was not changed, rerun the same command to verify it",
}


def interrupted_message() -> str:
    """What Ctrl-C says: for a long command, what to do next (:data:`ON_INTERRUPT`)."""
    return ON_INTERRUPT.get(_running, "interrupted")


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="c4table")
def cli() -> None:
    """Build, verify and query complete Connect-4 lookup tables (Sidney Cadot's format)."""


@cli.command()
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@click.option("--clean", is_flag=True, help="delete the intermediate shards (DIR/work) after the merge")
@compress_options
@format_option
@click.option("-v", "--verbose", is_flag=True,
              help="also the storage requests, bytes and tasks of each stage (always shown for "
                   "an object store such as s3://)")
def build(board, out, memory, workers, scheduler, quiet, restart, root, clean, compress, compress_only,
          table_format, verbose):
    """Build the complete table of BOARD (default 5x4): forward, backward and merge.

    Writes DIR/connect4_WxH.dat (connectK_WxH.dat with --connect K) and DIR/manifest.json.
    BOARD XxYxH is a 3D board: an X by Y grid of columns of height H (connectK_XxYxH.dat).
    Rerunning on a partial build resumes it. --format c4z writes DIR/connect4_WxH.c4z instead,
    with no raw table on disk."""
    _no_compress_with_c4z(table_format, compress, compress_only)
    b = _open(board, out, memory, workers, scheduler, quiet, restart, root, table_format)
    from c4table.pipeline.stages.build import run_build
    if compress_only and compressed_build_done(b.store, b.table_name):
        b.close()
        path = b.store.root / b.table_name
    else:
        path = run_build(b, keep_work=not clean)
    click.echo(f"{_compressed(path, compress, compress_only, quiet)}  "
               f"{b.manifest.table['entries']:,} entries  sha256 {b.manifest.table['sha256']}")
    if verbose or not b.store.local:
        _echo_counts(b, quiet)
    else:
        _echo_stages(b, quiet)
    if not quiet and not clean and b.store.local:
        _echo_work(b.store.root / "work")
    _done_with_interpreter()


def _echo_counts(b, quiet: bool) -> None:
    """The requests, bytes, tasks and task memory of this run's stages (DIR/stats.json)."""
    from c4table.pipeline.runtime.counters import format_stats
    stages = {k: v for k, v in b.executor_counts.items() if v["tasks"]}
    if quiet or not stages:
        return
    click.echo(f"storage and tasks of this run (also in {b.store.display('stats.json')}):")
    for line in format_stats(stages):
        click.echo("  " + line)


def _echo_stages(b, quiet: bool) -> None:
    """One short line per stage this run ran: entries, wall time, rate (the storage figures:
    ``-v``, or DIR/stats.json)."""
    from c4table.units import format_seconds
    ran = {k for k, v in b.executor_counts.items() if v["tasks"]}
    entries = b.manifest.table["entries"]
    if quiet:
        return
    for stage, seconds in b.stage_seconds.items():
        if stage in ran:
            rate = f"{entries / seconds / 1e6:,.1f} M entries/s" if seconds > 0 else "-"
            click.echo(f"  {stage:<9} {entries:,} entries in {format_seconds(seconds)} ({rate})")


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


@cli.command()
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@click.option("--max-ply", type=click.IntRange(0, 64), default=None,
              help="stop after this generation (default: the full board)")
def forward(board, out, memory, workers, scheduler, quiet, restart, root, max_ply):
    """Forward pass only: every generation's sorted, deduplicated keys, and per-ply counts."""
    from c4table.pipeline.stages import forward as fwd
    with _open(board, out, memory, workers, scheduler, quiet, restart, root) as b:
        b.run_stage("forward", fwd.run, b, max_ply)
    plies = b.manifest.data["plies"]
    last = min(max_ply if max_ply is not None else board.cells, board.cells)
    total = sum(p["positions"] for p in plies[: last + 1])
    click.echo(f"{b.root}: forward pass to ply {last}: {total:,} positions "
               f"({sum(p['entries'] for p in plies[: last + 1]):,} entries)")


@cli.command()
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
def backward(board, out, memory, workers, scheduler, quiet, restart, root):
    """Backward pass only (after forward): outcome and distance of every position."""
    from c4table.pipeline.stages import backward as bwd
    with _open(board, out, memory, workers, scheduler, quiet, restart, root) as b:
        b.run_stage("backward", bwd.run, b)
    t = {k: sum(p[k] for p in b.manifest.data["plies"]) for k in ("a_wins", "draws", "b_wins")}
    click.echo(f"{b.root}: backward pass done: A wins {t['a_wins']:,}, draws {t['draws']:,}, "
               f"B wins {t['b_wins']:,} positions")


@cli.command()
@click.argument("board", type=board_arg, default=DEFAULT_BOARD, required=False)
@_build_options
@compress_options
@format_option
def merge(board, out, memory, workers, scheduler, quiet, restart, root, compress, compress_only,
          table_format):
    """Final merge only (after backward): write DIR/connectK_WxH.dat (--format c4z:
    DIR/connectK_WxH.c4z)."""
    from c4table.pipeline.stages.build import merge_of
    _no_compress_with_c4z(table_format, compress, compress_only)
    with _open(board, out, memory, workers, scheduler, quiet, restart, root, table_format) as b:
        done = compress_only and compressed_build_done(b.store, b.table_name)
        path = b.store.root / b.table_name if done else b.run_stage("merge", merge_of(b), b)
        if table_format == "c4z":   # no later step reads the shards
            b.store.delete_tree("work")
    click.echo(f"{_compressed(path, compress, compress_only, quiet)}  "
               f"{b.manifest.table['entries']:,} entries  sha256 {b.manifest.table['sha256']}")


@cli.command()
@click.argument("board", type=board_arg)
@connect_option
@click.option("--workers", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="workers (cores) of the cluster")
@click.option("--memory-per-worker", default="4GiB", show_default=True, help="memory of one worker")
@click.option("--from", "from_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="build directory of a measured forward run (c4table forward --max-ply N)")
@click.option("--json", "as_json", is_flag=True, help="the plan as one JSON object")
@click.option("--root", "root", default=None, metavar="MOVES|FILE|-",
              help="plan the rooted build from this position (see build --root), from a short "
                   "forward run (or the forward run in --from)")
@click.option("--probe-plies", type=click.IntRange(1, 64), default=8, show_default=True,
              help="with --root: plies the forward run counts at most")
@click.option("--price-per-1k-requests", type=click.FloatRange(0), default=None,
              help="object store: price of 1,000 requests (e.g. 0.0004 for S3 GETs)")
@click.option("--price-per-gb-month", type=click.FloatRange(0), default=None,
              help="object store: price of storing 1 GB for a month (e.g. 0.023)")
@click.option("--shuffle-max-reads", type=click.IntRange(1), default=None,
              help="a shuffle past this many ranged reads (tasks x runs) is pre-merged "
                   "(two-level); the build's is $C4TABLE_SHUFFLE_MAX_READS, default 1,000,000")
@click.option("--calibrate", is_flag=True,
              help="measure this machine's costs with a short build (about a minute; cached per "
                   "machine and version, and used by later plans) unless they are cached")
@click.option("--recalibrate", is_flag=True, help="measure this machine's costs again")
@click.option("--fast-costs", is_flag=True,
              help="plan with the fast development machine's costs even if this one is calibrated")
@device_options
@format_option
def plan(board, workers, memory_per_worker, from_dir, as_json, root, probe_plies,
         price_per_1k_requests, price_per_gb_month, shuffle_max_reads, calibrate, recalibrate,
         fast_costs, table_format):
    """Estimate a build of BOARD: entries per generation, final size, peak disk, shuffle volume
    and wall time on WORKERS workers, from published counts and measured per-entry costs.
    With --device gpu: the build on one GPU node, from stated device rates (docs/gpu.md)."""
    from c4table.units import format_seconds, format_size, parse_size
    from c4table.pipeline.planning.plan import make_plan
    from c4table.wording import count
    opts = click.get_current_context().meta.get(_DEVICE, {})
    if opts.get("device") == "gpu":
        _echo_gpu_plan(board, opts.get("gpu_memory") or "80GiB", as_json)
        return
    try:
        mem = parse_size(memory_per_worker)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory-per-worker") from None
    if root is not None:
        from c4table.pipeline.planning.plan import plan_rooted
        p = plan_rooted(board, root, workers, mem, from_dir, probe_plies)
    elif board.grid is not None:   # a 3D board: nothing published
        from c4table.pipeline.planning.plan3d import make_plan3d
        p = make_plan3d(board, workers, mem, from_dir)
    else:
        p = make_plan(board, workers, mem, from_dir, shuffle_max_reads)
    p.shuffle_max_reads = shuffle_max_reads
    p.table_format = table_format
    p.costs = _plan_costs(calibrate or recalibrate, recalibrate, fast_costs, as_json)
    p.notes.append(_costs_note(p))
    io = p.io()
    cost = None
    if price_per_1k_requests is not None or price_per_gb_month is not None:
        cost = io.cost(price_per_1k_requests or 0.0, price_per_gb_month or 0.0,
                       months=max(p.wall_seconds / (30 * 86400), 1 / 30))
    if as_json:
        d = p.to_json()
        if cost is not None:
            d["object_store_cost"] = round(cost, 2)
        click.echo(json.dumps(d))
        return
    click.echo(f"plan for {board}: {count(workers, 'worker')} x {format_size(mem)}")
    click.echo("ply  positions            entries              source")
    for r in p.plies:
        click.echo(f"{r.ply:>3}  {r.positions:>19,}  {r.entries:>19,}  {r.source}")
    click.echo(f"entries          {p.entries:,}\n"
               f"final file       {p.final_bytes:,} bytes ({format_size(p.final_bytes)})\n"
               f"as .c4z          about {format_size(p.c4z_bytes)} (c4table compress, "
               f"{100 * p.c4z_bytes / p.final_bytes:.1f}% of the raw file"
               f"{_c4z_extrapolated(p)})\n"
               + (f"  --archive      about {format_size(p.c4z_archive_bytes)} (compress --archive, "
                  f"{100 * p.c4z_archive_bytes / p.final_bytes:.1f}%; probes in tens of milliseconds)\n"
                  if p.c4z_archive_bytes else "") +
               f"largest gen      {p.peak_entries:,} entries\n"
               f"shuffle volume   {format_size(p.shuffle_bytes)} (child-key runs and backward messages)\n"
               + (f"built as .c4z    about {format_size(p.table_bytes)} (build --format c4z, "
                  f"{100 * p.table_bytes / p.final_bytes:.1f}%: a faster profile)\n"
                  if table_format == "c4z" else "") +
               f"peak disk        {format_size(p.peak_disk)}\n"
               f"disk traffic     {format_size(sum(s['bytes_written'] for s in io.stages.values()))} "
               f"written, {format_size(sum(s['bytes_read'] for s in io.stages.values()))} read\n"
               f"compute          {format_seconds(p.core_seconds)} of one core\n"
               f"wall time        {format_seconds(p.wall_seconds)} on {count(workers, 'worker')}")
    _echo_io(io, cost, price_per_1k_requests, price_per_gb_month)
    for n in p.notes:
        click.echo(f"note: {n}")


def _echo_gpu_plan(board, gpu_memory: str, as_json: bool) -> None:
    """``plan --device gpu``: :func:`c4table.pipeline.planning.gpuplan.make_gpu_plan`, printed."""
    from c4table.units import format_seconds, format_size, parse_size
    from c4table.pipeline.planning.gpuplan import make_gpu_plan
    try:
        p = make_gpu_plan(board, parse_size(gpu_memory))
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--gpu-memory") from None
    if as_json:
        click.echo(json.dumps(p.to_json()))
        return
    d = p.disk_bytes
    click.echo(f"plan for {board} on one GPU ({format_size(p.gpu_memory)}), host "
               f"{format_size(p.host_memory)}: {p.entries:,} entries, largest generation "
               f"{p.peak_entries:,}")
    click.echo(f"keys sorted      {p.keys_sorted:,} on the GPU")
    click.echo(f"PCIe             {format_size(p.pcie_bytes)} both ways")
    click.echo(f"disk             {format_size(d['written'])} written, {format_size(d['read'])} "
               f"read, {format_size(d['peak_stored'])} at the peak")
    for name, s in p.seconds.items():
        click.echo(f"{name + ' alone':<17}{format_seconds(s)}")
    click.echo(f"GPU-hours        {p.seconds['gpu'] / 3600:.2f}")
    click.echo(f"wall time        {format_seconds(p.wall_seconds)} overlapped (bound: {p.bound}), "
               f"{format_seconds(p.serial_seconds)} serial")
    for note in p.notes:
        click.echo(f"note: {note}")


def _plan_costs(calibrate: bool, again: bool, fast: bool, quiet: bool):
    """The machine costs a plan uses: this machine's cached calibration (measured now with
    ``calibrate`` if none is cached, or anew with ``again``), else the fast machine's."""
    from c4table.pipeline.planning import calibrate as cal
    from c4table.pipeline.planning.schedule import FAST_MACHINE
    if fast:
        return FAST_MACHINE
    costs = None if again else cal.cached()
    if costs is None and calibrate:
        say = (lambda t: None) if quiet else (lambda t: click.echo(f"calibrating: {t}", err=True))
        costs = cal.calibrate(progress=say)
        where = cal.save(costs)
        say(f"saved {where}")
    return costs or FAST_MACHINE


def _costs_note(p) -> str:
    """Whose costs the plan's CPU and wall time rest on, and what bounds the wall time."""
    from c4table.pipeline.planning.calibrate import stale
    c = p.costs
    s = p.schedule()
    what, share = s.bound()
    parts = ", ".join(f"{k} {v:,.0f} s" for k, v in s.parts().items())
    return (f"costs of {c.machine} ({c.source}): {c.forward_s * 1e9:.0f} / {c.backward_s * 1e9:.0f}"
            f" / {c.merge_s * 1e9:.0f} ns per entry (forward / backward / merge tasks), "
            f"{c.step_s:.3f} s per generation step in the driver; the wall time is mostly "
            f"{what} ({share:.0%}; the schedule model: {parts})"
            + ("; calibrated with other code than this: --recalibrate measures again"
               if stale(c) else ""))


def _c4z_extrapolated(p) -> str:
    """What the plan's ``.c4z`` line adds when its size is not a measured figure."""
    if p.c4z_measured:
        return ""
    return "; extrapolated" + (", see the note" if any(".c4z" in n for n in p.notes) else "")


def _echo_io(io, cost, per_req, per_gb) -> None:
    """The plan's predicted storage figures per stage (the counters of DIR/stats.json)."""
    from c4table.pipeline.runtime.counters import format_stats
    from c4table.pipeline.planning.iomodel import STAGES
    stages = {s: {**io.stages[s], "list_requests": 0} for s in STAGES}
    click.echo("storage and tasks (predicted; a build measures the same in DIR/stats.json):")
    for line in format_stats(stages):
        click.echo("  " + line)
    for s in STAGES:
        shuf = [x for x in io.shuffles if x[0] == s]
        if shuf:
            big = max(shuf, key=lambda x: x[4])
            if big[1] is None:
                what = (f"{big[2]:,} range tasks open the {big[3]:,} backward shards that overlap "
                        f"their ranges: {big[4]:,} shard opens")
            elif big[5]:
                what = (f"largest at ply {big[1]}: {big[2]:,} tasks x {big[3]:,} runs, pre-merged in "
                        f"groups of {big[5]:,} (two-level): {big[4]:,} ranged reads "
                        f"(direct: {big[2] * big[3]:,})")
            else:
                what = (f"largest at ply {big[1]}: {big[2]:,} tasks x {big[3]:,} runs = {big[4]:,} "
                        "ranged reads (read directly)")
            click.echo(f"requests per shuffle, {s}: {what}; stage total {io.requests(s):,} requests")
    if cost is not None:
        click.echo(f"object store     about {cost:,.2f} (requests at {per_req or 0:g} per 1,000, peak "
                   f"storage at {per_gb or 0:g} per GB-month for the build's wall time, at least a day)")


@cli.command()
@TABLE_OPTION
@TABLE_BOARD_OPTION
@DRAW_OPTION
@DRAWING_OPTION
@click.option("--json", "as_json", is_flag=True, help="one JSON object per position")
@click.option("--scores", is_flag=True, help="also show Pons' scores (side to move, larger the sooner "
                                             "it wins; JSON always has them)")
@click.argument("positions", nargs=-1)
def lookup(table_path, board, draw, drawing, as_json, scores, positions):
    """Outcome and distance of POSITIONS (move strings of 1-based columns, "" for the empty
    board, - to read one per line from stdin), and of each legal move.

    Distances count plies: for a move, from the position before it (the move included)."""
    from c4table.cli.use import answer_queries, finish_answers, lookup_json, lookup_text, \
        queries, table_path_or_default
    from c4table.open import open_table
    qs = queries(positions, drawing)
    from c4table.cli.use import scored_lookup_text
    from c4table.analysis.pons import add_scores
    with open_table(table_path_or_default(table_path, board), board) as table:
        cells = table.board.cells
        failures = answer_queries(table, qs, as_json, draw,
                                  lambda p: add_scores(lookup_json(p), cells),
                                  (lambda p, n: scored_lookup_text(p, n, cells)) if scores else lookup_text)
    finish_answers(failures, len(qs))


@cli.command()
@click.argument("table_path", metavar="FILE|DIR", type=click.Path())
@click.option("--board", default=None, help="board of the table if its name does not say")
@click.option("--sha256", "sha256", default=None, help="expected sha256 (hex)")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def verify(table_path, board, sha256, quiet):
    """Hash FILE (sha256, md5), check its structure and compare it with the manifest beside it,
    the known tables shipped with c4table and --sha256. DIR: the table of a build directory.
    Exit 0 on match, 1 on mismatch."""
    from c4table.cli.use import table_in_dir
    from c4table.analysis.verify import verify_table
    from c4table.wording import count
    if sha256 is not None and (len(sha256.strip()) != 64 or
                               any(c not in "0123456789abcdefABCDEF" for c in sha256.strip())):
        raise click.BadParameter("expected 64 hex digits", param_hint="--sha256")
    rep = verify_table(table_in_dir(table_path), board, sha256, quiet)
    click.echo(f"file     {rep.path}\nboard    {rep.board}\nentries  {rep.entries:,}\n"
               f"bytes    {rep.bytes:,}\nsha256   {rep.sha256}\nmd5      {rep.md5}")
    for p in rep.problems:
        click.echo(f"problem  {p}")
    if rep.ok:
        click.echo(rep.verdict())
        sys.exit(0)
    # the problems are listed once, above; the verdict counts them
    click.echo(f"MISMATCH {rep.path.name}: {count(len(rep.problems), 'problem')}")
    _fail(f"{rep.path}: failed verification ({count(len(rep.problems), 'problem')})", 1)


def _register_optional() -> None:
    from c4table.cli.use import COMMANDS
    from c4table.cli.c4z import COMMANDS as C4Z_COMMANDS
    for command in COMMANDS + C4Z_COMMANDS:
        cli.add_command(command)
    from c4table.cli.serve import serve
    cli.add_command(serve)
    from c4table.cli.label import label
    cli.add_command(label)
    # bdd and crosscheck: registered on first use (_Commands)
    from c4table.cli.examples import add_examples
    add_examples(cli)


_register_optional()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every expected error into one line and an exit code.

    Exit 2: bad input (usage errors, malformed board/position/option, missing table file, text
    that is not valid UTF-8). Exit 1: a check failed or data is corrupt, the build cannot go on
    (disk full, memory budget, a worker process that died), or any other error. 130: interrupted.
    No traceback is printed unless ``C4TABLE_TRACEBACK=1``."""
    from concurrent.futures.process import BrokenProcessPool
    if argv is None:   # the command line's own process (a caller passing argv may go on)
        _fast_exit()
    try:
        # without standalone mode click *returns* the code a command gave ctx.exit(n)
        rc = cli.main(args=argv, prog_name="c4table", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as e:
        click.echo(e.ctx.get_help())   # bare "c4table" or a bare group: the help is the answer
        sys.exit(0)
    except click.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        _fail(_one_line(e.format_message()) + hint, e.exit_code)
    except click.ClickException as e:
        _fail(_one_line(e.format_message()), e.exit_code)
    except click.exceptions.Abort as e:
        # click turns Ctrl-C (KeyboardInterrupt) into Abort; its cause says which it was
        if isinstance(e.__cause__, KeyboardInterrupt):
            _fail(interrupted_message(), 130)
        _fail("aborted", 130)
    except KeyboardInterrupt:
        _fail(interrupted_message(), 130)
    except (BoardError, IllegalPositionError, MissingTableError, BudgetError) as e:
        _fail(_one_line(str(e)), 2)
    except (TableError, BuildError, C4Error) as e:
        _fail(_one_line(str(e)), 1)
    except UnicodeError as e:
        _fail(f"input is not valid text: {_one_line(str(e))}", 2)
    except BrokenProcessPool:
        _fail("a worker process died (killed, out of memory or crashed); finished steps are kept, "
              "rerun the same command to resume", 1)
    except MemoryError:
        _fail("out of memory; finished steps are kept: lower --memory or --workers and rerun to "
              "resume", 1)
    except OSError as e:
        from c4table.pipeline.runtime.resources import is_disk_full
        if is_disk_full(e):
            _fail(f"disk full ({e.filename or 'build directory'}); finished steps are kept, free "
                  "space and rerun to resume", 1)
        _fail(_one_line(f"{e.strerror or e} ({e.filename})" if e.filename else str(e)), 1)
    except Exception as e:  # noqa: BLE001 - the promise is one line, never a traceback
        if config.get("C4TABLE_TRACEBACK"):
            raise
        _fail(_one_line(f"internal error: {type(e).__name__}: {e} (set C4TABLE_TRACEBACK=1 "
                        "for the traceback)"), 1)
    if argv is None and _skip_finalization and rc in (None, 0):
        # the command line's own process, a build that finished: its files are closed and
        # durable, its workers joined, its lock given back; what is left is the interpreter's
        # finalization (module teardown, thread-pool joins of idle threads), ~20 ms of nothing
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):   # e.g. a closed pipe: the usual exit reports it
            pass
        else:
            os._exit(0)
    sys.exit(rc if isinstance(rc, int) else 0)


_skip_finalization = False


def _done_with_interpreter() -> None:
    """Called by a command once everything it wrote is closed (and, for a build, durable):
    if :func:`main` runs as the command line's own process (``argv`` None), it then ends the
    process with ``os._exit`` once the output is flushed, skipping the interpreter's
    finalization (a build's own cost, measured ~20 ms of idle time per build)."""
    global _skip_finalization
    _skip_finalization = _exit_registered


def _fast_exit() -> None:
    """Freeze the garbage collector's objects when the interpreter exits (once registered): the
    collections of its shutdown then skip the ~110,000 objects numba and the other libraries
    hold, which took longer than a small build (0.3-1 s; frozen, 0.1 s). Exit handlers and
    flushes still run; cyclic garbage left at exit is not collected (the process ends)."""
    global _exit_registered
    if not _exit_registered:
        import atexit
        import gc
        atexit.register(gc.freeze)
        _exit_registered = True


_exit_registered = False


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


if __name__ == "__main__":
    main()
