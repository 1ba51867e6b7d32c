"""Backward pass: the outcome byte of every position, generation by generation, from the last
generation down to 0, as a key-range shuffle of *messages*.

A generation's positions learn their outcome from their children, and the children live all
over the next generation's key space. Rather than letting every task read the whole next
generation, each annotated position *sends* one message per parent, the word
``parent_key << 8 | score`` (:func:`pipeline.kernels.resolve`), where the score ranks the
child's outcome for the parent's mover. So one step, for generation g:

1. one task per forward shard of g (a key range) reads its keys and, from every message run
   that generation g+1's tasks wrote, the slice inside its key range (binary search, then
   ``pread`` of that slice only); sorts the slices together; each key's best message decides
   it (terminal positions are decided on the board);
2. the same task writes its backward shard ``(key, outcome)`` and sorts the messages it sends
   to generation g-1, keeps the best per parent key, and spills them as one sorted ``.npy``
   run under ``work/messages/ply_{g-1}/``.

No task holds more than its shard, its messages in and its messages out (what
:attr:`pipeline.build.Build.shard_rows` sizes), and tasks share no memory-mapped state: they
could run on machines that see the build directory.

Resume: a step records its backward shards and its message runs (xxh64) in the manifest. The
next step verifies the runs it reads; missing or damaged runs are sent again from the finished
backward shards (:func:`emit_task`). Runs are deleted once the generation they inform is done.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np

from c4table.board import Board
from c4table.errors import BuildError, CorruptDataError
from pipeline import resources
from pipeline.kernels import board_tables, emit_parents, keep_best, resolve, unmove_tables
from pipeline.shards import ShardInfo, file_xxh64, read_shard, verify_shards, write_shard

MESSAGE_BYTES = 8


def gen_dir(ply: int) -> str:
    return f"work/backward/ply_{ply:02d}"


def messages_dir(ply: int) -> str:
    """Runs of messages *to* generation ``ply`` (written while annotating ``ply + 1``)."""
    return f"work/messages/ply_{ply:02d}"


def _tables(board: Board) -> tuple:
    return (*board_tables(board), *unmove_tables(board))


# ------------------------------------------------------------------ message runs
def write_messages(root: Path, rel: str, msgs: np.ndarray) -> dict:
    """Sort ``msgs``, keep each parent's best, and spill them as a run at ``root/rel``
    (atomically). Returns the run's record: file, rows, xxh64."""
    msgs.sort()
    msgs = msgs[: keep_best(msgs)]
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    try:
        with open(tmp, "wb") as f:
            np.lib.format.write_array(f, msgs, allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        digest = file_xxh64(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    return {"file": rel, "rows": int(msgs.shape[0]), "xxh64": digest}


def read_messages(root: Path, runs: list[dict], first: int, last: int) -> np.ndarray:
    """The messages for keys ``first..last`` from every run, sorted. Each run is searched through
    a memory map (a few pages) and its slice read with ``pread`` into one buffer."""
    lo, hi = np.uint64(first << 8), np.uint64((last << 8) | 0xFF)
    spans = []
    for r in runs:
        path = root / r["file"]
        try:
            arr = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as e:
            raise CorruptDataError(f"{path}: unreadable message run ({e})") from None
        if arr.shape[0] != r["rows"] or arr.dtype != np.uint64:
            raise CorruptDataError(f"{path}: {arr.shape[0]} messages, the manifest says {r['rows']}")
        if not arr.shape[0]:
            continue
        a = int(np.searchsorted(arr, lo, "left"))
        b = int(np.searchsorted(arr, hi, "right"))
        if b > a:
            spans.append((path, arr.offset + a * MESSAGE_BYTES, b - a))
        del arr
    out = np.empty(sum(n for _, _, n in spans), np.uint64)
    pos = 0
    for path, off, n in spans:
        view = memoryview(out[pos: pos + n]).cast("B")
        with open(path, "rb") as f:
            got = 0
            while got < len(view):
                k = os.preadv(f.fileno(), [view[got:]], off + got)
                if k <= 0:
                    raise CorruptDataError(f"{path}: message run is shorter than its header says")
                got += k
        pos += n
    out.sort()
    return out


# ------------------------------------------------------------------ tasks
def annotate_task(root: str, board_spec: tuple, ply: int, info_json: dict, runs: list[dict],
                  rel: str, send_rel: str | None):
    """Annotate one forward shard of generation ``ply`` from the messages in ``runs``; write its
    backward shard at ``rel`` and, unless ``send_rel`` is None (ply 0), its messages to ply - 1.
    Returns (shard info json, stats int64[6], run record or None)."""
    board = Board(*board_spec)
    rootp = Path(root)
    info = ShardInfo.from_json(info_json)
    keys = read_shard(rootp, info)
    msgs = read_messages(rootp, runs, info.first, info.last) if runs else np.empty(0, np.uint64)
    out = np.empty(keys.shape[0], np.uint8)
    sent = np.empty(keys.shape[0] * board.width if send_rel else 0, np.uint64)
    stats = np.zeros(6, np.int64)
    bad, n_sent = resolve(keys, msgs, ply, *_tables(board), out, sent, stats)
    del msgs
    if bad >= 0:
        raise CorruptDataError(
            f"{root}/{info.file}: position key {int(keys[bad])} (ply {ply}) has none of its "
            f"children in generation {ply + 1}; the forward pass output is inconsistent")
    shard = write_shard(rootp, rel, keys, out)
    del keys, out
    run = write_messages(rootp, send_rel, sent[:n_sent]) if send_rel else None
    return shard.to_json(), stats, run


def emit_task(root: str, board_spec: tuple, ply: int, info_json: dict, send_rel: str) -> dict:
    """Send again the messages of a finished backward shard of generation ``ply``."""
    board = Board(*board_spec)
    rootp = Path(root)
    keys, outs = read_shard(rootp, ShardInfo.from_json(info_json), with_outcome=True)
    sent = np.empty(keys.shape[0] * board.width, np.uint64)
    n = emit_parents(keys, outs, ply, *_tables(board), sent)
    return write_messages(rootp, send_rel, sent[:n])


def verify_run_task(root: str, run: dict) -> bool:
    """True if a message run is present and matches its recorded xxh64."""
    path = Path(root) / run["file"]
    return path.is_file() and file_xxh64(path) == run["xxh64"]


def incoming_runs(build, ply: int) -> list[dict]:
    """The verified message runs to generation ``ply`` (sent by step ``ply + 1``), sending
    them again from ply + 1's backward shards if any is missing or damaged."""
    m = build.manifest
    step = m.data["steps"]["backward"].get(str(ply + 1))
    if step is None:
        raise BuildError(f"generation {ply + 1} has not been annotated yet")
    runs = step.get("messages")
    tag = f"messages {ply}"
    if runs is not None and tag in build.verified:
        return runs
    if runs is not None and all(build.executor.map(verify_run_task, [(str(build.root), r) for r in runs])):
        build.verified.add(tag)
        return runs
    build.note("backward", f"messages to generation {ply} are missing or damaged; sending them "
                           f"again from generation {ply + 1}'s backward shards")
    mdir = build.root / messages_dir(ply)
    if mdir.exists():
        shutil.rmtree(mdir)
    shards = [s for s in m.shards("backward", ply + 1) if s.rows]
    if "backward" not in build.verified:
        verify_shards(build.executor, build.root, shards)
    tasks = [(str(build.root), build.board.spec, ply + 1, s.to_json(),
              f"{messages_dir(ply)}/run-{i:05d}.npy") for i, s in enumerate(shards)]
    runs = build.executor.map(emit_task, tasks)
    step["messages"] = runs
    m.save()
    build.verified.add(tag)
    return runs


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
    if m.shards("forward", last) is None or "entries" not in m.ply_record(last):
        raise BuildError(f"{build.root}: the forward pass is not finished (run forward first)")
    total = sum(m.data["plies"][p]["entries"] for p in range(last + 1))
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
            n = verify_shards(build.executor, build.root, check)
            prog.note(f"{'resuming at ply %d: ' % todo[0] if done else ''}verified {n} finished "
                      f"shard(s) of {' and '.join(parts)} (xxh64)")
    if todo:
        build.verified.add("backward")
    for ply in range(last, -1, -1):
        if m.shards("backward", ply) is not None:
            prog.done += m.data["plies"][ply]["entries"]
            continue
        t0 = time.perf_counter()
        what = f"backward generation {ply}"
        resources.check_free(build.root, resources.backward_need(build, ply), what)
        for stale in (build.root / gen_dir(ply), build.root / messages_dir(ply - 1)):
            if stale.exists():   # an unfinished attempt's output
                shutil.rmtree(stale)
        finished = f"backward generations {ply + 1}-{last}" if ply < last else "the forward pass"
        with resources.disk_full_guard(build.root, what, finished):
            runs = incoming_runs(build, ply) if ply < last else []
            shards = [s for s in m.shards("forward", ply) if s.rows]
            n = sum(s.rows for s in shards)
            tasks = [(str(build.root), board.spec, ply, s.to_json(), runs,
                      f"{gen_dir(ply)}/part-{i:05d}.parquet",
                      f"{messages_dir(ply - 1)}/run-{i:05d}.npy" if ply > 0 else None)
                     for i, s in enumerate(shards)]
            results = build.executor.map(annotate_task, tasks)
            stats = np.zeros(6, np.int64)
            infos, sent = [], []
            for info, st, run_rec in results:
                infos.append(ShardInfo.from_json(info))
                stats += st
                if run_rec is not None:
                    sent.append(run_rec)
            m.finish_step("backward", ply, infos, **({"messages": sent} if ply > 0 else {}))
            m.set_backward_counts(ply, stats)
            m.save()
            build.verified.add(f"messages {ply - 1}")
        spent = build.root / messages_dir(ply)
        if spent.exists():
            shutil.rmtree(spent)
        rec = m.data["plies"][ply]
        prog.step(f"ply {ply}", n, entries=n, a_wins=rec["a_wins"], draws=rec["draws"],
                  b_wins=rec["b_wins"], sent=sum(r["rows"] for r in sent),
                  time=f"{time.perf_counter() - t0:.2f}s")
