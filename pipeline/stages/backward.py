"""Backward pass: the outcome byte of every position, generation by generation, from the last
generation down to 0, as a key-range shuffle of *messages*.

Design notes: ``docs/modules.md`` (``c4table.pipeline.stages.backward``).
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from c4table.wording import count
from c4table.game.board import Board
from c4table.errors import BuildError, BuildInputError, CorruptDataError
from c4table.pipeline.sort import extsort
from c4table.pipeline.runtime import resources
from c4table.pipeline.sort import shuffle
from c4table.pipeline.stages import pull
from c4table.pipeline.kernels.cpu import keep_best
from c4table.pipeline.kernels.kernelset import KernelSet, for_board
from c4table.builddir.records import Premerged
from c4table.builddir.shards import (ShardInfo, read_shard, shard_name, stored_xxh64, verify_shards,
                                     write_outcomes)
from c4table.io.counting import active
from c4table.io.storage import Storage, open_storage

def gen_dir(ply: int) -> str:
    return f"work/backward/ply_{ply:02d}"


def messages_dir(ply: int) -> str:
    """Runs of messages *to* generation ``ply`` (written while annotating ``ply + 1``)."""
    return f"work/messages/ply_{ply:02d}"


def _tables(board: Board) -> tuple:
    kern = for_board(board)   # the 2D kernels, or those of a 3D board
    return (*kern.board_tables(board), *kern.unmove_tables(board))


# ------------------------------------------------------------------ message runs
def write_messages(store: Storage, rel: str, msgs: np.ndarray, tail: int) -> dict:
    """Sort ``msgs`` (as a kernel wrote them: sorted runs, then ``tail`` values in no order,
    :func:`extsort.sort_runs`),
    keep each parent's best, and spill them as a run (:func:`extsort.write_run`) at ``rel``.
    Returns the run's record: file, rows, xxh64."""
    extsort.sort_runs(msgs, tail)
    msgs = msgs[: keep_best(msgs)]
    digest = extsort.write_run(store, rel, msgs, low_bits=8)   # key << 8 | score: the byte apart
    return {"file": rel, "rows": int(msgs.shape[0]), "xxh64": digest}


def _write_sorted_messages(store: Storage, rel: str, msgs: np.ndarray) -> dict:
    """:func:`write_messages` of messages already sorted, best per parent (the GPU's)."""
    digest = extsort.write_run(store, rel, msgs, low_bits=8)
    return {"file": rel, "rows": int(msgs.shape[0]), "xxh64": digest}


def read_messages(store: Storage, runs: list[dict], first: int, last: int) -> np.ndarray:
    """The messages for keys ``first..last`` from every run, sorted."""
    top = (last << 8) | 0xFF   # inclusive; top + 1 may be 2**64, which read_range_window allows
    window = extsort.read_range_window(store, runs, first << 8, top + 1)   # records: fences cached
    return extsort.merge_window(*window, unique=False)   # each run is sorted: merge them


# ------------------------------------------------------------------ tasks
class Annotated(NamedTuple):
    """What annotating a shard gave."""
    shard: dict              # the backward shard's record (:meth:`ShardInfo.to_json`)
    stats: np.ndarray        # int64[6]: draws, A wins, B wins entries, each followed by its symmetric ones
    sent: dict | None        # the record of the messages run it sent to ply - 1, if any


def annotate_task(root: str, kernels: KernelSet, ply: int, info_json: dict, runs: list[dict],
                  rel: str, send_rel: str | None, nxt: list[dict] | None = None,
                  memory: int = 0) -> Annotated:
    """Annotate one forward shard of generation ``ply`` from the messages in ``runs``; write its
    backward shard at ``rel`` and, unless ``send_rel`` is None (ply 0), its messages to ply - 1.
    Kernels that pull (:attr:`KernelSet.pulls`) read the children's outcomes from ``nxt``,
    generation ``ply + 1``'s backward shards, holding at most about ``memory`` bytes
    (:func:`c4table.pipeline.stages.pull.annotate`)."""
    board = kernels.board
    store = open_storage(root)
    info = ShardInfo.from_json(info_json)
    keys = read_shard(store, info)
    msgs = read_messages(store, runs, info.first, info.last) if runs else np.empty(0, np.uint64)
    if kernels.pulls:
        gen = pull.NextGeneration(store, [ShardInfo.from_json(s) for s in nxt or []])
        sent = np.empty(keys.shape[0] * board.width if send_rel else 0, np.uint64)
        got = pull.annotate(gen, board, ply, keys, msgs, sent, memory)
        counts = active()
        counts.pulled_keys += keys.shape[0]
        counts.pulled_rows += got.rows_read
        out, stats, bad, n_sent, tail = got.out, got.stats, got.bad, got.sent, np.array([got.sent])
    elif kernels.on_gpu:   # messages sent come back sorted, best per parent
        bad, out, stats, sent = kernels.gpu.resolve(keys, msgs, ply, _tables(board), bool(send_rel),
                                               board.width)
        n_sent = -1
    else:
        out = np.empty(keys.shape[0], np.uint8)
        sent = np.empty(keys.shape[0] * board.width if send_rel else 0, np.uint64)
        stats, tail = np.zeros(6, np.int64), np.zeros(1, np.int64)
        bad, n_sent = kernels.cpu.resolve(keys, msgs, ply, *_tables(board), out, sent, stats, tail)
    del msgs
    if bad >= 0:
        raise CorruptDataError(
            f"{store.display(info.file)}: position key {int(keys[bad])} (ply {ply}) misses "
            f"children in generation {ply + 1}; the forward pass output is inconsistent")
    shard = write_outcomes(store, rel, out, info)   # the keys stay in the forward shard
    del keys, out
    if send_rel and n_sent < 0:
        run = _write_sorted_messages(store, send_rel, sent)
    else:
        run = write_messages(store, send_rel, sent[:n_sent], int(tail[0])) \
            if send_rel else None
    return Annotated(shard.to_json(), stats, run)


def emit_task(root: str, kernels: KernelSet, ply: int, info_json: dict, send_rel: str) -> dict:
    """Send again the messages of a finished backward shard of generation ``ply``: those
    the kernels' backward pass reads (only the mirrored ones when they pull)."""
    board = kernels.board
    store = open_storage(root)
    keys, outs = read_shard(store, ShardInfo.from_json(info_json), with_outcome=True)
    if kernels.on_gpu:
        return _write_sorted_messages(store, send_rel,
                                      kernels.gpu.emit(keys, outs, ply, _tables(board), board.width))
    sent, tail = np.empty(keys.shape[0] * board.width, np.uint64), np.zeros(1, np.int64)
    emit = kernels.cpu.emit_mirrored if kernels.pulls else kernels.cpu.emit_parents
    n = emit(keys, outs, ply, *_tables(board), sent, tail)
    return write_messages(store, send_rel, sent[:n], int(tail[0]))


def verify_run_task(root: str, run: dict) -> bool:
    """True if a message run and its fences are present, of this version's run format, and the
    run matches its xxh64."""
    store = open_storage(root)
    return (store.exists(run["file"]) and store.exists(run["file"] + ".fences")
            and extsort.run_is_current(store, run["file"])
            and stored_xxh64(store, run["file"]) == run["xxh64"])


def incoming_runs(build, ply: int) -> list[dict]:
    """The verified message runs to generation ``ply`` (sent by step ``ply + 1``), sending
    them again from ply + 1's backward shards if any is missing or damaged."""
    m = build.manifest
    step = m.step("backward", ply + 1)
    if step is None:
        raise BuildError(f"generation {ply + 1} has not been annotated yet")
    runs = step.messages
    tag = f"messages {ply}"
    if runs is not None and step.mirrored_only and not build.kernels.pulls:
        build.note("backward", f"the messages to generation {ply} are the mirrored ones only "
                               f"(a pulling backward pass sent them); sending all of them again "
                               f"from generation {ply + 1}'s backward shards")
    elif runs is not None and tag in build.verified:
        return runs
    elif runs is not None and all(build.executor.map(verify_run_task, [(build.store.uri, r) for r in runs])):
        build.verified.add(tag)
        return runs
    else:
        build.note("backward", f"messages to generation {ply} are missing or damaged; sending them "
                               f"again from generation {ply + 1}'s backward shards")
    build.store.delete_tree(messages_dir(ply))
    if step.premerged is not None:   # pieces of the messages being replaced
        step = m.update_step("backward", ply + 1, premerged=None)
    shards = step.nonempty()
    if "backward" not in build.verified:
        verify_shards(build.executor, build.store, shards)
    tasks = [(build.store.uri, build.kernels, ply + 1, s.to_json(),
              f"{messages_dir(ply)}/run-{i:05d}.u64") for i, s in enumerate(shards)]
    runs = build.executor.map(emit_task, tasks)
    m.update_step("backward", ply + 1, messages=runs, mirrored_only=build.kernels.pulls)
    m.save()
    build.verified.add(tag)
    return runs


def premerged_runs(build, ply: int, runs: list[dict], shards: list[ShardInfo]):
    """The message runs each annotate task of generation ``ply`` reads: ``runs``, or past the
    build's threshold the pieces of their pre-merge (:func:`c4table.pipeline.sort.shuffle.two_level`,
    under ``messages_dir(ply)/pre``). The pieces are recorded in the manifest beside the runs
    they merge (``"premerged"`` in the step of ``ply + 1``), so a rerun verifies (xxh64) and
    reuses them rather than merging again. Returns (runs per task, group size or None)."""
    m = build.manifest
    ranges = [(s.first << 8, ((s.last << 8) | 0xFF) + 1) for s in shards]
    rec, pieces = m.step("backward", ply + 1).premerged, None
    if rec is not None and rec.matches(ranges):
        if all(build.executor.map(verify_run_task, [(build.store.uri, p) for p in rec.pieces])):
            pieces = rec.pieces
            build.note("backward", f"reusing the {count(len(pieces), 'pre-merged message run')} "
                                   f"to generation {ply} (verified, xxh64)")
    if pieces is None:
        if rec is not None:
            m.update_step("backward", ply + 1, premerged=None)
        build.store.delete_tree(f"{messages_dir(ply)}/pre")   # an unfinished attempt's pieces
    per_task, made, group = shuffle.two_level(build.shuffler(), runs, ranges, f"{messages_dir(ply)}/pre",
                                              unique=False, pieces=pieces)
    if made is not None and pieces is None:
        m.update_step("backward", ply + 1, premerged=Premerged.of(ranges, made))
        m.save()
    return per_task, group


# ------------------------------------------------------------------ driver
def run(build) -> None:
    """Run (or resume) the backward pass over every generation the forward pass produced.

    On resume the finished generations' backward shards are verified (xxh64), not recomputed,
    and the messages the next generation needs are verified or sent again
    (:func:`incoming_runs`)."""
    board: Board = build.board
    m = build.manifest
    last = board.cells
    if build.complete():
        return
    if m.shards("forward", last) is None or not m.ply_counts(last).forward_counted:
        raise BuildInputError(f"{build.root}: the forward pass is not finished (run forward first)")
    total = m.total("entries", range(last + 1))
    prog = build.progress("backward", total=total)
    todo = [p for p in range(last, -1, -1) if m.shards("backward", p) is None]
    done = [p for p in range(last, -1, -1) if m.shards("backward", p) is not None]
    if todo and "backward" not in build.verified:
        # Verify up front what this process did not write: the finished backward generations,
        # and the forward shards still to be read unless this process's forward pass made or
        # verified them. (Every read checks again; this makes a damaged file fail first.)
        check, parts = [], []
        if "forward" not in build.verified:
            check += [s for p in todo for s in m.shards("forward", p)]
            parts.append(f"forward generations {todo[-1]}-{todo[0]}")
        if done:
            check += [s for p in done for s in m.shards("backward", p)]
            parts.append(f"backward generations {done[-1]}-{done[0]}")
        if check:
            n = verify_shards(build.executor, build.store, check)
            prog.note(f"{'resuming at ply %d: ' % todo[0] if done else ''}verified "
                      f"{count(n, 'finished shard')} of {' and '.join(parts)} (xxh64)")
    if todo:
        build.verified.add("backward")
    work = build.ledger.work("backward", of=last + 1 - build.first_ply)
    for ply in range(last, -1, -1):
        if m.shards("backward", ply) is not None:
            prog.done += m.entries(ply)
            continue
        if ply < build.first_ply:   # below a rooted build's root: nothing to annotate
            m.finish_step("backward", ply, [])
            m.set_backward_counts(ply, np.zeros(6, np.int64))
            if ply == 0:
                m.save()
            continue
        t0 = time.perf_counter()
        what = f"backward generation {ply}"
        resources.check_free(build.store, resources.backward_need(m, build.store, ply), what)
        for stale in (gen_dir(ply), *([messages_dir(ply - 1)] if ply else [])):
            build.store.delete_tree(stale)   # an unfinished attempt's output
        finished = f"backward generations {ply + 1}-{last}" if ply < last else "the forward pass"
        with resources.disk_full_guard(build.store, what, finished):
            runs = incoming_runs(build, ply) if ply < last else []
            shards = [s for s in m.shards("forward", ply) if s.rows]
            n = sum(s.rows for s in shards)
            reads0 = build.ledger.slice_reads()
            per_task, group = premerged_runs(build, ply, runs, shards) if runs else \
                ([runs] * len(shards), None)
            nxt = [s.to_json() for s in m.shards("backward", ply + 1) if s.rows] \
                if build.kernels.pulls and ply < last else None
            tasks = [(build.store.uri, build.kernels, ply, s.to_json(), per_task[i],
                      shard_name(gen_dir(ply), i),
                      f"{messages_dir(ply - 1)}/run-{i:05d}.u64" if ply > build.first_ply else None,
                      nxt, build.task_memory)
                     for i, s in enumerate(shards)]
            results = build.executor.map(annotate_task, tasks)
            if runs:
                build.ledger.log_shuffle("backward", ply, len(shards), len(runs), group,
                                  build.ledger.slice_reads() - reads0)
            stats = np.zeros(6, np.int64)
            infos, sent = [], []
            for r in results:
                infos.append(ShardInfo.from_json(r.shard))
                stats += r.stats
                if r.sent is not None:
                    sent.append(r.sent)
            m.finish_step("backward", ply, infos,
                          messages=sent if ply > build.first_ply else None,
                          mirrored_only=build.kernels.pulls)
            m.set_backward_counts(ply, stats)
            m.checkpoint(n)
            build.verified.add(f"messages {ply - 1}")
        build.spent(messages_dir(ply))   # spent: recycled or deleted (Build.spent)
        build.ledger.save()   # a killed run loses only this generation's counts
        rec = m.ply_counts(ply)
        work.add(n)
        prog.step(f"ply {ply}", n, entries=n, a_wins=rec.a_wins, draws=rec.draws,
                  b_wins=rec.b_wins, sent=sum(r["rows"] for r in sent),
                  time=f"{time.perf_counter() - t0:.2f}s")
    m.flush()   # the steps checkpoint() left unsaved
    build.store.empty_recycle_bin()   # the scratch files are done; the merge needs the disk
