"""Forward pass: generation g+1 (all positions after g+1 plies) from generation g.

Design notes: ``docs/modules.md`` (``c4table.pipeline.stages.forward``).
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from c4table.wording import count
from c4table.game.board import Board
from c4table.pipeline.sort import extsort
from c4table.pipeline.runtime import resources
from c4table.pipeline.sort import shuffle
from c4table.pipeline.kernels.kernelset import KernelSet
from c4table.pipeline.sort.partition import forward_ranges
from c4table.builddir.shards import ShardInfo, read_shard, shard_name, verify_shards, write_shard
from c4table.io.storage import open_storage
from c4table.progress import published_total



def gen_dir(ply: int) -> str:
    return f"work/forward/ply_{ply:02d}"


def runs_dir(ply: int) -> str:
    return f"work/runs/ply_{ply:02d}"


class Expanded(NamedTuple):
    """What expanding a shard gave: its counts and the run of its children."""
    stats: np.ndarray        # int64[4]: terminal, symmetric, terminal symmetric entries, entries
    children: int            # distinct children written to the run (0 without a run)
    sample: object           # the run's sample for choosing splitters (None without a run)
    xxh64: str | None        # the run's checksum (None without a run)


class Merged(NamedTuple):
    """A range task's shard of the next generation and, if it expanded it, what that gave."""
    shard: dict              # the shard's record (:meth:`ShardInfo.to_json`)
    expanded: Expanded | None


def expand_task(root: str, kernels: KernelSet, ply: int, info_json: dict,
                run_rel: str | None) -> Expanded:
    """Expand one shard of generation ``ply``; spill its sorted distinct children as a run."""
    store = open_storage(root)
    keys = [read_shard(store, ShardInfo.from_json(info_json))]
    return _expand(store, kernels, ply, keys, run_rel)


def _expand(store, kernels: KernelSet, ply: int, held: list, run_rel: str | None) -> Expanded:
    """:func:`expand_task` on the keys ``held.pop()`` (so that they are freed before the
    children are sorted: the caller keeps no reference)."""
    keys = held.pop()
    board, kern = kernels.board, kernels.cpu   # the 2D kernels, or those of a 3D board
    if kernels.on_gpu:   # the same stats and sorted children, from the GPU's kernels
        stats, children = kernels.gpu.expand(keys, ply, kern.board_tables(board), bool(run_rel),
                                             board.width)
        if not run_rel:
            return Expanded(stats, 0, None, None)
        del keys
        digest = extsort.write_run(store, run_rel, children)
        return Expanded(stats, int(children.shape[0]), extsort.sample(children), digest)
    stats, tail = np.zeros(4, np.int64), np.zeros(1, np.int64)
    buf = np.empty(keys.shape[0] * board.width if run_rel else 0, np.uint64)
    n = kern.expand(keys, ply, *kern.board_tables(board), buf, stats, tail)
    if not run_rel:
        return Expanded(stats, 0, None, None)
    del keys
    children = extsort.sort_unique(buf[:n], int(tail[0]))
    digest = extsort.write_run(store, run_rel, children)
    return Expanded(stats, int(children.shape[0]), extsort.sample(children), digest)


def merge_task(root: str, run_rels: list, lo: int, hi: int, rel: str, expand: tuple | None = None):
    """Merge the range ``[lo, hi)`` of all runs (paths or run records) into one shard of the
    next generation; return its record. With ``expand`` = ``(kernels, ply, run_rel)``, also
    expand the shard just written, from the keys still in memory (:func:`expand_task`'s work on
    it, without reading it back; nothing if it is empty), and return :class:`Merged`: the next
    step's expand then needs no barrier of its own."""
    store = open_storage(root)
    keys = extsort.merge_range(store, run_rels, lo, hi)
    info = write_shard(store, rel, keys).to_json()
    if expand is None:
        return info
    if keys.shape[0] == 0:
        return Merged(info, None)
    kernels, ply, run_rel = expand
    held = [keys]
    del keys
    return Merged(info, _expand(store, kernels, ply, held, run_rel))


def start(build) -> None:
    """Write the first generation (the empty board, or a rooted build's root) if the manifest
    does not have it; the plies below a root are empty generations with zero counts."""
    first = build.first_ply
    if build.manifest.shards("forward", first) is None:
        key = build.origin.key if build.origin is not None else 0
        info = write_shard(build.store, shard_name(gen_dir(first), 0),
                           np.array([key], np.uint64))
        for p in range(first):
            build.manifest.finish_step("forward", p, [])
            build.manifest.set_forward_counts(p, 0, 0, 0, 0)
        build.manifest.finish_step("forward", first, [info])
        # in the background: its fsyncs overlap the loading of the kernels (Executor._start)
        build.manifest.save_soon()


def step_done(build, ply: int, last: int) -> bool:
    m = build.manifest
    return m.ply_counts(ply).forward_counted and (ply == last or m.shards("forward", ply + 1) is not None)


def run(build, max_ply: int | None = None) -> None:
    """Run (or resume) the forward pass up to generation ``max_ply`` (default: full board).

    On resume the finished generations are verified (xxh64 of every shard), not recomputed;
    before each generation the free disk is checked against an estimate of its needs."""
    board: Board = build.board
    last = board.cells if max_ply is None else min(max_ply, board.cells)
    if build.complete():
        return
    resuming = build.resuming
    with resources.disk_full_guard(build.store, "forward generation 0"):
        start(build)
    prog = build.progress("forward", total=_expected_positions(build, last))
    todo = [p for p in range(last + 1) if not step_done(build, p, last)]
    if todo and resuming and "forward" not in build.verified:
        finished = [s for p in range(todo[0] + 1) for s in build.manifest.shards("forward", p) or []]
        n = verify_shards(build.executor, build.store, finished)
        prog.note(f"resuming at ply {todo[0]}: verified {count(n, 'finished shard')} of generations "
                  f"0-{todo[0]} (xxh64)")
    if todo:   # every forward shard is now verified or about to be written by this process
        build.verified.add("forward")
    fused = None   # (ply, expand results): a generation its merge tasks expanded already
    work = build.ledger.work("forward", of=last + 1 - build.first_ply)
    for ply in range(last + 1):
        if step_done(build, ply, last):
            prog.done += build.manifest.ply_counts(ply).positions
            continue
        t0 = time.perf_counter()
        shards = build.manifest.shards("forward", ply)
        expand_more = ply < last
        rdir = runs_dir(ply + 1)
        ready = fused[1] if fused is not None and fused[0] == ply else None
        fused = None
        if ready is None:
            build.store.delete_tree(rdir)
        if expand_more:
            what = f"forward generation {ply + 1}"
            # the merge tasks of generation ply + 1 also expand it: its runs are written too
            written = None if ready is None else build.store.tree_size(rdir)
            resources.check_free(build.store, resources.forward_need(
                build.manifest, build.store, ply, and_next=ply + 1 < last, runs_written=written), what)
            build.store.delete_tree(gen_dir(ply + 1))   # an unfinished attempt's shards
        else:
            what = f"forward counts of generation {ply}"
        with resources.disk_full_guard(build.store, what, f"forward generations 0-{ply}"):
            run_rels = [run_rel(ply + 1, i) if expand_more else None
                        for i, s in enumerate(shards) if s.rows]
            if ready is not None:
                results = ready
            else:
                tasks = [(build.store.uri, build.kernels, ply, s.to_json(), rel)
                         for s, rel in zip([s for s in shards if s.rows], run_rels)]
                results = build.executor.map(expand_task, tasks)
            stats = np.zeros(4, np.int64)
            for r in results:
                stats += r.stats
            if expand_more:
                new_shards, nxt = _merge_runs(build, ply + 1, run_rels, results, last)
                fused = (ply + 1, nxt)
                build.manifest.finish_step("forward", ply + 1, new_shards,
                                           run_keys=int(sum(r.children for r in results)))
            terminal, sym, term_sym, entries = (int(x) for x in stats)
            build.manifest.set_forward_counts(ply, entries, sym, terminal, term_sym)
            build.manifest.checkpoint(entries)
        build.spent(rdir)   # spent: recycled or deleted (Build.spent)
        build.ledger.save()   # a killed run loses only this generation's counts
        rec = build.manifest.ply_counts(ply)
        work.add(entries)
        prog.step(f"ply {ply}/{last}", rec.positions, entries=entries,
                  positions=rec.positions, finished=rec.terminal,
                  time=f"{time.perf_counter() - t0:.2f}s")
    build.manifest.flush()   # the steps checkpoint() left unsaved


def run_rel(ply: int, i: int) -> str:
    """The run of children of generation ``ply`` that shard ``i`` (its index among all the
    shards, empty ones included) of generation ``ply - 1`` spills."""
    return f"{runs_dir(ply)}/run-{i:05d}.u64"


def _merge_runs(build, ply: int, run_rels: list[str], results, last: int):
    """Range-merge the runs of generation ``ply`` into its shards, each merge task expanding
    the shard it wrote (:func:`merge_task`; its runs spilled under ``runs_dir(ply + 1)``, or
    counts alone if ``ply`` is ``last``). Returns (the shards, the :class:`Expanded` of the
    non-empty ones in order)."""
    total = sum(r.children for r in results)
    if total == 0:
        return [], []
    n_ranges = forward_ranges(total, build.task_memory, build.board.width, build.executor.workers)
    bounds = extsort.choose_splitters([r.sample for r in results], n_ranges,
                                      [r.children for r in results])
    runs = [{"file": f, "rows": r.children, "xxh64": r.xxh64} for f, r in zip(run_rels, results)]
    ranges = list(zip(bounds[:-1], bounds[1:]))
    reads0 = build.ledger.slice_reads()
    reads, _, group = shuffle.two_level(build.shuffler(), runs, ranges, f"{runs_dir(ply)}/pre", unique=True)
    # shard r is range r: its task spills run r of generation ply + 1 (run_rel)
    tasks = [(build.store.uri, reads[r], lo, hi, shard_name(gen_dir(ply), r),
              (build.kernels, ply, run_rel(ply + 1, r) if ply < last else None))
             for r, (lo, hi) in enumerate(ranges)]
    out = build.executor.map(merge_task, tasks)
    build.ledger.log_shuffle("forward", ply, len(ranges), len(runs), group, build.ledger.slice_reads() - reads0)
    infos = [ShardInfo.from_json(m.shard) for m in out]
    return infos, [m.expanded for m in out if m.expanded is not None]


def _expected_positions(build, last: int) -> int | None:
    board = build.board
    if last != board.cells or build.origin is not None:
        return None
    return published_total(board.name)
