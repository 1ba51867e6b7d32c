"""``c4table plan``: the estimate of a build (sizes, disk, shuffle volume, storage requests,
wall time) from published counts and this machine's calibrated costs, or of a GPU build."""
from __future__ import annotations

import json

import click

from c4table.cli.options import DEVICE, board_arg, codec_option, connect_option, device_options, format_option
from c4table.budget import DEFAULT_MEMORY
from c4table.builddir import tableformat


@click.command(short_help="Estimate a build: entries, size, disk, time and cost")
@click.argument("board", type=board_arg)
@connect_option
@click.option("--workers", type=click.IntRange(1, 1_000_000), default=1, show_default=True,
              help="workers (cores) of the cluster")
@click.option("--memory-per-worker", default=DEFAULT_MEMORY, show_default=True, help="memory of one worker")
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
@click.option("--calibrate-from", "fit_dirs", multiple=True, metavar="DIR",
              type=click.Path(file_okay=False, exists=True),
              help="fit the costs on finished builds made on this machine (their stats.json; "
                   "once per build, e.g. 5x5 and 6x4 to plan 6x5); a build of BOARD itself is "
                   "left out")
@click.option("--fast-costs", is_flag=True,
              help="plan with the fast development machine's costs even if this one is calibrated")
@device_options
@format_option
@codec_option
def plan(board, workers, memory_per_worker, from_dir, as_json, root, probe_plies,
         price_per_1k_requests, price_per_gb_month, shuffle_max_reads, calibrate, recalibrate,
         fit_dirs, fast_costs, table_format, c4z_codec):
    """Estimate a build of BOARD: entries per generation, final size, peak disk, shuffle volume
    and wall time on WORKERS workers, from published counts and measured per-entry costs.
    With --device gpu: the build on one GPU node, from stated device rates (docs/gpu.md)."""
    from c4table.units import format_seconds, format_size, parse_size
    from c4table.wording import count
    from c4table.pipeline.planning.c4zsize import codec_label
    if c4z_codec is not None:
        from c4table.pipeline.stages.merge_c4z import build_codec
        if tableformat.get(table_format).raw:
            raise click.BadParameter(f"a block codec is for --format c4z (this plan is of a "
                                     f".{table_format} build)", param_hint="--codec")
        try:
            build_codec(c4z_codec)
        except Exception as e:
            raise click.BadParameter(str(e).split(": ", 1)[-1], param_hint="--codec") from None
    opts = click.get_current_context().meta.get(DEVICE, {})
    if opts.get("device") == "gpu":
        _echo_gpu_plan(board, opts.get("gpu_memory") or "80GiB", as_json, table_format)
        return
    try:
        mem = parse_size(memory_per_worker)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory-per-worker") from None
    if root is not None:
        from c4table.pipeline.planning.plan import plan_rooted
        p = plan_rooted(board, root, workers, mem, from_dir, probe_plies)
    else:   # the board's variant's plan
        from c4table.pipeline.planning.planners import plan_board
        p = plan_board(board, workers, mem, from_dir, shuffle_max_reads)
    p.shuffle_max_reads = shuffle_max_reads
    p.table_format = table_format
    p.codec_name = c4z_codec
    p.costs = _plan_costs(calibrate or recalibrate, recalibrate, fast_costs, as_json)
    if fit_dirs:
        from c4table.pipeline.planning import fit
        builds, left_out = fit.usable(list(fit_dirs), board)
        p.costs = fit.fit_costs(builds, p.costs)
        p.notes += left_out + [f"measured: {line}" for line in fit.describe(builds)]
        planned = None if tableformat.get(table_format).raw else p.build_codec
        kinds = {b.codec for b in builds}
        if kinds != {planned}:
            def name(c):
                return "dat" if c is None else c
            p.notes.append(f"the builds fitted on wrote {'/'.join(sorted(map(name, kinds)))} "
                           f"tables, this plan is of a {name(planned)} build: their merges differ "
                           "by each block codec's CPU per entry, as the builds' merges counted it "
                           "(or, in stats that do not count it, as measured on the development "
                           "VM) and as measured there for the plan's codec "
                           "(pipeline/planning/c4zsize.py, BUILD_CODEC_CPU_S)")
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
               f"{codec_label(p.c4z_codec)}, {100 * p.c4z_bytes / p.final_bytes:.1f}% of the raw file"
               f"{_c4z_extrapolated(p)})\n"
               + (f"  --archive      about {format_size(p.c4z_archive_bytes)} (compress --archive, "
                  f"{100 * p.c4z_archive_bytes / p.final_bytes:.1f}%; probes in tens of milliseconds)\n"
                  if p.c4z_archive_bytes else "") +
               f"largest gen      {p.peak_entries:,} entries\n"
               f"shuffle volume   {format_size(p.shuffle_bytes)} (child-key runs and backward messages)\n"
               + (f"built as .c4z    about {format_size(p.table_bytes)} (build --format c4z, "
                  f"{codec_label(p.build_codec)}, {100 * p.table_bytes / p.final_bytes:.1f}%: a "
                  "faster profile)\n"
                  if not tableformat.get(table_format).raw else "") +
               f"peak disk        {format_size(p.peak_disk)}\n"
               f"disk traffic     {format_size(sum(s['bytes_written'] for s in io.stages.values()))} "
               f"written, {format_size(sum(s['bytes_read'] for s in io.stages.values()))} read\n"
               f"compute          {format_seconds(p.core_seconds)} of one core\n"
               f"wall time        {format_seconds(p.wall_seconds)} on {count(workers, 'worker')}")
    _echo_io(io, cost, price_per_1k_requests, price_per_gb_month)
    for n in p.notes:
        click.echo(f"note: {n}")


def _echo_gpu_plan(board, gpu_memory: str, as_json: bool, table_format: str = "dat") -> None:
    """``plan --device gpu``: :func:`c4table.pipeline.planning.gpuplan.make_gpu_plan`, printed."""
    from c4table.units import format_seconds, format_size, parse_size
    from c4table.pipeline.planning.gpuplan import make_gpu_plan
    try:
        p = make_gpu_plan(board, parse_size(gpu_memory), table_format=table_format)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--gpu-memory") from None
    if as_json:
        click.echo(json.dumps(p.to_json()))
        return
    d = p.disk_bytes
    click.echo(f"plan for {board} on one GPU ({format_size(p.gpu_memory)}), writing "
               f"{'a raw table' if tableformat.get(p.table_format).raw else 'the .c4z'}, host "
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
            f"{c.step_s:.3f} s per generation step in the driver"
            + (f", tasks computing {c.busy:.0%} of their wall" if c.busy < 1 else "")
            + "; the wall time is mostly "
            f"{what} ({share:.0%}; the schedule model: {parts})"
            + ("; calibrated with other code than this: --recalibrate measures again"
               if stale(c) else ""))


def _c4z_extrapolated(p) -> str:
    """What the plan's ``.c4z`` line adds when its size is not a measured figure."""
    if p.c4z_measured:
        from c4table.pipeline.planning import c4zsize
        e = c4zsize.estimate(p.board, p.entries)
        return "" if e.how == "measured" else f"; {e.how}"
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


COMMANDS = [plan]
