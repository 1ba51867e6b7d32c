"""What a build will ask of its storage, stage by stage: the figures the build's own counters
measure (:mod:`c4table.pipeline.runtime.counters`, ``DIR/stats.json``), predicted from a plan's
entries per generation, the workers and the memory of one worker.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.iomodel``).

>>> from c4table.pipeline.planning.plan import make_plan
>>> for gib in (4, 16):   # shuffles past 1 M ranged reads are two-level (pipeline/sort/shuffle.py)
...     io = predict_io(make_plan("7x6", workers=64, memory_per_worker=gib * 2**30))
...     print(gib, io.largest_shuffle_reads <= 10_000_000)
4 True
16 True
"""
from __future__ import annotations

import math
from typing import NamedTuple
from dataclasses import dataclass, field

import c4table.config as config
from c4table.pipeline.sort.extsort import FENCE
from c4table.pipeline.sort.partition import forward_ranges, merge_split, premerge_keys
from c4table.builddir.shards import BACKWARD_ROW_GROUP, TAIL
from c4table.pipeline.sort.shuffle import group_size, max_reads_default
from c4table.pipeline.kernels.cpu import key_bits
from c4table.pipeline.stages.merge import READ_GROUPS, WRITE_CHUNK
from c4table.builddir import tableformat

IO_MODEL = {
    # distinct children a task spills per next-generation entry: 1 with one task, towards
    # 1 + (dup - 1) with many (each task dedups only its own children); fitted, 5x4 and 4x6
    "child_dup": 1.40,
    # messages a task keeps per entry of its generation: base with one task, + extra with many.
    # Only children read through the mirror send one (the others are pulled): 0.24-0.27 per
    # entry in 2-worker builds of 5x4, 5x5 and 6x4 (0.17-0.31 by ply on 6x5); the extra keeps
    # the ratio fitted when every child sent one (1.15 + 0.45)
    "msg_base": 0.26, "msg_extra": 0.10,
    # the pull: the blocks of generation g + 1 its tasks' column windows reach, over that
    # generation's stored keys and outcomes (the windows of a shard's columns overlap: the
    # blocks of 1.3-1.9 times the next generation's rows on 6x5's plies 12-24), and the shards
    # each task opens (footer and block index: up to TAIL bytes of each of its two files; their
    # size queries and ranged reads, with those of the blocks, fitted to a 2-worker 6x5 build)
    "pull_window": 1.6, "pull_shards_per_task": 2.0,
    # shard bytes per key = zeta * (log2(key space / entries) + 1) / 8 (delta-coded keys): 0.98
    # fitted to 5x6 for parquet's DELTA_BINARY_PACKED shards; shards are now varint deltas in
    # zstd frames (c4table/builddir/shards.py), 0.122x and 0.101x the parquet bytes on the same
    # 5x5 and 6x4 builds (docs/measurements/2026-11-27-shard-codecs.md), hence 0.98 * 0.11
    "zeta_forward": 0.11,
    # backward shards hold outcomes only (their keys are the forward shard's), zstd level 3:
    # bytes per entry by the board's entries, sampled at the end of 2-worker c4z builds (index
    # and frames included): interpolated in log2(entries) between them, held at the ends
    # (:func:`outcome_bytes`; docs/measurements/2026-11-27-plan-refit.md)
    "outcome_bytes": ((34_888_367, 0.218), (47_455_869, 0.217), (1_409_488_535, 0.183),
                      (34_586_522_319, 0.143)),
    # runs, message runs and pieces (run format v3, pipeline/sort/runcodec.py): varint
    # differences through zstd level 1 per block of 65,536 values, a message's score byte as a
    # stream of its own. Bytes per value = a + b * (gap bits: log2(key space / values in the
    # run)), fitted (relative least squares) to the bytes written by 2-worker c4z builds of
    # 5x5, 6x4, 6x5 and 6x6 (gaps of 2**9 to 2**15 for child runs, 2**17 to 2**23 for
    # messages; docs/measurements/2026-11-27-plan-refit.md): the values are children of sorted
    # parents, not random keys, so their bytes grow far slower than the gap's bits.
    "child_run_bytes": (0.1326, 0.0050), "message_run_bytes": (0.2553, 0.0045),
    # merge: bytes read of the shards (keys and outcomes) over their stored bytes: gathered
    # once (a build's merge trusts the shards its own run's backward pass wrote; one resumed in
    # a later run verifies them first, which read them twice: 1.96 on 6x5, 2.05 on 6x6); the
    # row groups straddling a range's ends are counted apart (the small boards' reads beyond
    # the shards)
    "merge_shard_reads": 1.0,
    # the largest forward shard (a range of the splitters) over the mean: 1.30-1.37 in local
    # 4-worker builds of 5x4 and 4x6 at 32 and 64 MiB per task (splitters weighted by run size)
    "shard_skew": 1.35,
    # the share of its group's values the largest pre-merge task takes (a group's runs cover
    # few of its chunks): fitted to local 4-worker builds of 4x6 at 32 and 64 MiB per task
    "premerge_share": 0.75,
    # merge: ranged reads per (range task, backward shard) pair: footer and row groups, of the
    # outcomes' file and of the keys' (forward) file
    "merge_reads_per_pair": 4.0,
    # size/existence queries besides one per run slice: per generation (forward), per task
    # (backward: checks of the runs it reads and writes)
    "heads_per_forward_generation": 2.4, "heads_per_backward_task": 3.0,
    # forward shuffles: share of (task, run) pairs whose window is not empty (a run holds the
    # children of one key range of the generation before, which miss some ranges); fitted to
    # a local 5x4 build (4 workers x 1 MiB, two-level past 100 reads): 2,210 of 2,757
    "forward_slice_hit": 0.8,
}

STAGES = ("forward", "backward", "merge")
FIELDS = ("bytes_written", "objects_written", "bytes_read", "get_requests", "ranged_reads",
          "head_requests", "peak_stored_bytes", "tasks", "peak_task_memory")


@dataclass
class IOPlan:
    stages: dict = field(default_factory=lambda: {s: {f: 0 for f in FIELDS} for s in STAGES})
    shuffles: list = field(default_factory=list)   # (stage, ply, tasks, runs, ranged reads, group)
    max_reads: int = 0    # the threshold of a two-level shuffle (pipeline/sort/shuffle.py)
    run_bytes: float = 0.0   # stored bytes of every child run, message run and piece written

    @property
    def largest_shuffle_reads(self) -> int:
        return max((s[4] for s in self.shuffles), default=0)

    def requests(self, stage: str) -> int:
        c = self.stages[stage]
        return c["objects_written"] + c["get_requests"] + c["ranged_reads"] + c["head_requests"]

    def cost(self, per_1k_requests: float, per_gb_month: float, months: float = 1.0) -> float:
        """Object-store cost: every request at ``per_1k_requests`` per thousand, and the peak
        stored bytes held for ``months`` at ``per_gb_month`` per GB (10**9 bytes)."""
        reqs = sum(self.requests(s) for s in STAGES)
        peak = max(self.stages[s]["peak_stored_bytes"] for s in STAGES)
        return reqs / 1000 * per_1k_requests + peak / 1e9 * per_gb_month * months

    def to_json(self) -> dict:
        return {"stages": self.stages, "largest_shuffle_ranged_reads": self.largest_shuffle_reads,
                "shuffle_max_reads": self.max_reads,
                "shuffles": [dict(zip(("stage", "ply", "tasks", "runs", "ranged_reads", "group"), s))
                             for s in self.shuffles]}


def run_value_bytes(space_bits: float, values: float, kind: str = "child") -> float:
    """Stored bytes per value of a run (``kind`` "child" or "message") of ``values`` sorted
    values spread over a key space of ``2**space_bits`` (run format v3,
    :mod:`c4table.pipeline.sort.runcodec`): ``a + b * gap bits`` as fitted (at most 8).

    >>> round(run_value_bytes(40, 2**30), 2)   # gaps of about 2**10
    0.18
    >>> round(run_value_bytes(48, 2**30, "message"), 2)
    0.34
    """
    if values <= 1:
        return 8.0
    a, b = IO_MODEL["message_run_bytes" if kind == "message" else "child_run_bytes"]
    return min(8.0, a + b * max(0.0, space_bits - math.log2(values)))


def outcome_bytes(entries: float) -> float:
    """Stored bytes per entry of a board's outcome shards, by its entries (interpolated in
    ``log2`` between the measured boards, the nearest one's outside them).

    >>> outcome_bytes(1e6), round(outcome_bytes(5e9), 3), outcome_bytes(2e12)
    (0.218, 0.167, 0.143)
    """
    pts = IO_MODEL["outcome_bytes"]
    x = math.log2(max(1.0, entries))
    for (e0, b0), (e1, b1) in zip(pts, pts[1:]):
        x0, x1 = math.log2(e0), math.log2(e1)
        if x <= x1:
            return b0 if x <= x0 else b0 + (b1 - b0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


def _index_bytes(values: float) -> float:
    """Bytes of a run's index (``.fences``): a fence and a block offset per block of
    :data:`FENCE` values."""
    return 16 * values / FENCE


def _shard_bytes(entries: int, rows: int, key_bits: int, zeta: float) -> float:
    if rows <= 0 or entries <= 0:
        return 0.0
    return rows * zeta * (math.log2(max(2.0, 2.0 ** key_bits / entries)) + 1) / 8


def _merged(window_values: float, values: float, parts: int) -> float:
    """Bytes a task holds while it merges sorted slices (:func:`extsort.merge_window` on
    :func:`extsort.read_range_window`): the windows it read and one merged copy (the first
    level of a pairwise merge of up to three runs, later levels replacing the one before; for
    more runs the pieces gathered into the output; one part is not copied)."""
    return 8 * (window_values + (values if parts > 1 else 0))


def _keys_read(rows: float) -> float:
    """Bytes of the keys :func:`read_shard` returns: one array decoded from the shard's blocks."""
    return 8 * rows


def _window(run_bytes: float, ranges: int) -> float:
    """Bytes a range task reads from one run cut into ``ranges`` ranges: its slice, widened to
    the fences around it (about one fence spacing in all, none beyond the run's ends)."""
    if not run_bytes:
        return 0.0
    return min(run_bytes, run_bytes / ranges + 8 * FENCE * (ranges - 1) / ranges)


def _shuffle(st: dict, tasks: int, runs: int, run_bytes: float, merged_bytes: float,
             W: int, max_reads: int, hit: float = 1.0, task_memory: int = 1 << 62,
             vb: float = 8.0) -> tuple[int, float, int | None, float, int]:
    """Add the requests and bytes of one shuffle's reads to the stage counts ``st``: ``tasks``
    range tasks over ``runs`` runs of ``run_bytes`` in all, read directly or, past
    ``max_reads``, through a pre-merge (:mod:`c4table.pipeline.sort.shuffle`) whose pieces hold
    ``merged_bytes`` (both counted at 8 bytes a value, as a task holds them decoded; stored, a
    value takes ``vb`` bytes, and each run or piece has its index). Fences are read once per worker process and run (cached), sizes come
    with the run records (no HEAD). Returns (ranged reads, bytes the pieces add to the store (stored),
    group size or None, values in a range task's windows, runs or pieces it reads); a pre-merge
    task's memory goes to ``st["peak_task_memory"]``. ``hit``: the share of (task, run) pairs
    whose window is not empty."""
    g = group_size(tasks, runs, max_reads)
    run_b = run_bytes / runs
    if g is None:
        pairs = tasks * runs
        st["ranged_reads"] += pairs * hit
        st["get_requests"] += min(tasks, W) * runs
        st["bytes_read"] += (pairs * _window(run_b, tasks) * vb / 8
                             + min(tasks, W) * _index_bytes(run_bytes / 8))
        return pairs * hit, 0.0, None, runs * _window(run_b, tasks) / 8, runs
    P = min(g, tasks)
    groups = -(-runs // g)
    pieces = groups * P
    l1 = runs * P
    st["tasks"] += pieces
    st["ranged_reads"] += l1 * hit
    st["get_requests"] += min(P, W) * runs
    st["bytes_read"] += l1 * _window(run_b, P) * vb / 8 + min(P, W) * _index_bytes(run_bytes / 8)
    # a pre-merge task: the windows of its group's runs over its chunk, and their merge. A
    # group's runs cover few chunks (a run holds the children, or parents, of one key range),
    # so the largest task takes most of its group's values, up to what a piece may hold
    gv = IO_MODEL["premerge_share"] * run_bytes / 8 / groups
    v = min(gv, premerge_keys(task_memory))
    st["peak_task_memory"] = max(st["peak_task_memory"],
                                 _merged(min(gv, v + min(g, runs) * FENCE), v, min(g, runs)))
    st["objects_written"] += 2 * pieces
    st["bytes_written"] += merged_bytes * vb / 8 + _index_bytes(merged_bytes / 8)
    per_chunk = tasks / P
    l2 = tasks * groups
    piece_b = merged_bytes / pieces
    st["ranged_reads"] += l2 * hit
    st["get_requests"] += pieces * min(W, per_chunk)
    st["bytes_read"] += (l2 * _window(piece_b, per_chunk) * vb / 8
                         + min(W, per_chunk) * _index_bytes(merged_bytes / 8))
    return ((l1 + l2) * hit, merged_bytes * vb / 8, g, groups * _window(piece_b, per_chunk) / 8,
            groups)


class _Shape(NamedTuple):
    """What the three stages' predictions share: entries per generation, the first and last
    generations, workers, task memory, board width, key bits, the shuffle bound, remote."""
    e: list
    first: int
    last: int
    W: int
    m: int
    w: int
    kb: int
    max_reads: int
    remote: bool


def _predict_forward(io: IOPlan, s: _Shape) -> tuple[list, list, float]:
    """The forward stage's counts into ``io``; returns the nonempty forward shards and the
    bytes of each generation, and the bytes stored at its end."""
    e, first, last, W, m, w, kb, max_reads, remote = s
    M = IO_MODEL
    f = io.stages["forward"]
    shards = [0] * (last + 1)           # nonempty forward shards per generation
    shards[first] = 1
    fbytes = [0.0] * (last + 1)
    fbytes[first] = 16.0
    stored = 0.0
    for g in range(first, last + 1):
        T = shards[g]
        if g == first:   # expand tasks read the first generation; the range tasks that write
            f["tasks"] += T   # each later one expand it from memory (forward.merge_task)
            f["get_requests"] += T
            f["bytes_read"] += fbytes[g]
        f["objects_written"] += 1       # the manifest
        # about one existence check per shard, a few per generation remotely
        f["head_requests"] += T + (M["heads_per_forward_generation"] if remote else 0)
        if g == last or e[g + 1] == 0:
            continue
        dup = 1 + (M["child_dup"] - 1) * (1 - 1 / T)
        k = e[g + 1] * dup
        runs = T
        f["objects_written"] += 2 * runs
        vb = run_value_bytes(kb, k / runs)   # a run: the children of one task
        f["bytes_written"] += k * vb + _index_bytes(k)
        io.run_bytes += k * vb + _index_bytes(k)
        R = max(1, min(forward_ranges(int(k), m, w, W), e[g + 1]))
        shards[g + 1] = R
        fbytes[g + 1] = _shard_bytes(e[g + 1], e[g + 1], kb, M["zeta_forward"])
        f["tasks"] += R
        # a pre-merge group of G runs drops the repeats between its runs
        groups = -(-runs // (group_size(R, runs, max_reads) or runs))
        merged = 8 * e[g + 1] * (1 + (M["child_dup"] - 1) * (1 - 1 / groups))
        reads, extra, grp, window, parts = _shuffle(f, R, runs, 8 * k, min(merged, 8 * k), W,
                                                    max_reads, M["forward_slice_hit"], m, vb)
        # a range task (forward.merge_task): its windows and their merge
        values = M["shard_skew"] * (min(merged, 8 * k) if grp else 8 * k) / 8 / R
        f["peak_task_memory"] = max(f["peak_task_memory"], _merged(window, values, parts))
        f["objects_written"] += R
        f["bytes_written"] += fbytes[g + 1]
        io.shuffles.append(("forward", g + 1, R, runs, reads, grp))
        io.run_bytes += extra
        stored_now = stored + fbytes[g + 1] + k * vb + _index_bytes(k) + extra
        if g + 1 < last and e[g + 2]:   # the range tasks also spill generation g + 1's runs
            k2 = e[g + 2] * (1 + (M["child_dup"] - 1) * (1 - 1 / R))
            stored_now += k2 * run_value_bytes(kb, k2 / R) + _index_bytes(k2)
        f["peak_stored_bytes"] = max(f["peak_stored_bytes"], int(stored_now + fbytes[first]))
        stored += fbytes[g + 1]
        # an expand task: its shard's keys and a buffer of w children per key
        r = M["shard_skew"] * e[g] / T
        f["peak_task_memory"] = max(f["peak_task_memory"], _keys_read(r) + 8 * w * r)
    stored += fbytes[first]
    return shards, fbytes, stored


def _predict_backward(io: IOPlan, s: _Shape, shards: list, fbytes: list, stored: float) -> float:
    """The backward stage's counts into ``io``; returns the bytes stored at its end."""
    e, first, last, W, m, w, kb, max_reads, remote = s
    M = IO_MODEL
    b = io.stages["backward"]
    incoming = 0.0   # message bytes to generation g (8 a message: as tasks hold them)
    incoming_stored, in_vb = 0.0, 8.0   # the same messages as stored (bit-packed, indexes)
    in_runs = 0
    ob = outcome_bytes(sum(e))
    for g in range(last, first - 1, -1):
        T = shards[g]
        if T == 0:
            b["objects_written"] += 1
            continue
        b["tasks"] += T
        b["head_requests"] += M["heads_per_backward_task"] * T
        b["get_requests"] += T
        b["bytes_read"] += fbytes[g]
        if g < last and shards[g + 1]:   # the pull: windows of generation g + 1
            nb = fbytes[g + 1] + ob * e[g + 1]
            opened = T * min(shards[g + 1], M["pull_shards_per_task"])
            b["bytes_read"] += M["pull_window"] * nb + opened * 2 * min(TAIL, nb / shards[g + 1])
            b["ranged_reads"] += opened * 6
            b["head_requests"] += opened * 4
        bb = ob * e[g]
        b["bytes_written"] += bb
        b["objects_written"] += T + 1
        extra = 0.0
        r, msgs, msg_mem = M["shard_skew"] * e[g] / T, M["shard_skew"] * incoming / 8 / T, 0.0
        if in_runs:
            reads, extra, grp, window, parts = _shuffle(b, T, in_runs, incoming, incoming, W,
                                                        max_reads, task_memory=m, vb=in_vb)
            io.shuffles.append(("backward", g, T, in_runs, reads, grp))
            io.run_bytes += extra
            msg_mem = _merged(window, msgs, parts)
        out, out_vb, out_stored = 0.0, 8.0, 0.0
        if g > first:
            out = 8 * e[g] * (M["msg_base"] + M["msg_extra"] * (1 - 1 / T))
            # a message is parent_key << 8 | score: its key space is 8 bits wider
            out_vb = run_value_bytes(kb + 8, out / 8 / T, "message")
            out_stored = out / 8 * out_vb + _index_bytes(out / 8)
            b["bytes_written"] += out_stored
            io.run_bytes += out_stored
            b["objects_written"] += 2 * T
        stored += bb
        b["peak_stored_bytes"] = max(b["peak_stored_bytes"],
                                     int(stored + incoming_stored + extra + out_stored))
        # an annotate task: its keys and the messages' windows and merge; then its keys, the
        # merged messages, an outcome byte, a buffer of w messages to send per key and the
        # rows of its windows (a key and an outcome byte each)
        pulled = 9 * M["pull_window"] * M["shard_skew"] * e[g + 1] / T if g < last else 0.0
        hold = _keys_read(r) + max(msg_mem, 8 * msgs + r + (8 * w * r if g > first else 0) + pulled)
        b["peak_task_memory"] = max(b["peak_task_memory"], hold)
        incoming, incoming_stored, in_vb = out, out_stored, out_vb
        in_runs = T if g > first else 0
    return stored


def _merge_peak(stored: float, table: float, R: int, W: int, shards: list, fbytes: list,
                e: list, ob: float) -> float:
    """Bytes stored at the peak of a ``.c4z`` merge: after its first ``k`` of ``R`` ranges it
    has deleted each shard whose keys all lie below them (a generation cut into ``t`` shards
    has lost ``floor(k t / R)`` of them), holds ``k / R`` of the table, and its ``W`` tasks'
    parts in flight (``stored``: what the backward pass left)."""
    peak = 0.0
    for k in range(R + 1):
        dropped = sum((fbytes[g] + ob * e[g]) * math.floor(k * t / R) / t
                      for g, t in enumerate(shards) if t)
        peak = max(peak, stored - dropped + table * (k + min(W, R - k)) / R)
    return peak


def _predict_merge(io: IOPlan, s: _Shape, board, shards: list, fbytes: list, stored: float,
                   plan) -> None:
    """The merge's counts into ``io`` (``plan``: its table's format and size)."""
    e, first, last, W, m, w, kb, max_reads, remote = s
    M = IO_MODEL
    mg = io.stages["merge"]
    E = sum(e)
    raw = E * board.entry_size
    c4z = not tableformat.get(getattr(plan, "table_format", tableformat.DAT)).raw
    # build --format c4z: the tasks write their blocks as parts, the driver copies them into
    # the .c4z (reading the parts, not a raw table); parts go as they are appended
    table = plan.table_bytes if c4z else raw
    R, largest = merge_split(E, m, W, local=not remote)
    nb = sum(shards)
    mg["tasks"] = R
    # a range task opens the shards of each generation that overlap its range
    pairs = sum(min(R * t, t + R - 1) for t in shards if t)
    # opening a shard: an existence check, and on an object store a HEAD for its size
    mg["head_requests"] = 2 * (pairs + nb) * (2 if remote else 1)   # two files per shard
    mg["ranged_reads"] = pairs * M["merge_reads_per_pair"] + nb
    # a backward shard is read with its forward shard (the keys)
    ob = outcome_bytes(E)
    bshards = sum(fbytes) + ob * E
    per_key = [_shard_bytes(e[g], 1, kb, M["zeta_forward"]) + ob for g in range(len(e))]
    # plus, per pair beyond one per shard, the row group straddling a range's end, read by
    # both ranges; and per pair the end of each of its two files (footer and block index:
    # TAIL bytes, the whole file when smaller), what the small boards' reads are mostly made of
    group = sum((min(R * t, t + R - 1) - t) * min(BACKWARD_ROW_GROUP, e[g] / t) * per_key[g]
                for g, t in enumerate(shards) if t)
    tails = sum(min(R * t, t + R - 1) * (min(TAIL, fbytes[g] / t) + min(TAIL, ob * e[g] / t))
                for g, t in enumerate(shards) if t)
    mg["bytes_read"] = M["merge_shard_reads"] * bshards + group + tails + table
    mg["get_requests"] = R
    # locally the tasks write the table in place; remotely (or as .c4z) they write parts, appended
    mg["bytes_written"] = 2 * table if remote or c4z else table
    if c4z:   # after each range, the merge state with the raw entries of the partial block
        B = min(E, config.get("C4TABLE_C4Z_BLOCK_ENTRIES"))   # (base64: 4/3), half a block on average
        mg["bytes_written"] += int(R * B / 2 * board.entry_size * 4 / 3)
    # the tasks' parts (or the table's ranges), the manifest and the stats; a .c4z merge also
    # saves its state after each range and writes the container and its index side file
    mg["objects_written"] = 2 * R + 3 if c4z else R + 2
    mg["peak_stored_bytes"] = int(_merge_peak(stored, table, R, W, shards, fbytes, e, ob)
                                  if c4z else stored + table)
    # a range task: one word per entry, the keys and outcomes of READ_GROUPS row groups
    # (concatenated: 9 bytes a row), and one chunk of entries converted to bytes
    n = E * largest
    mg["peak_task_memory"] = (8 * n + 9 * min(n, READ_GROUPS * BACKWARD_ROW_GROUP)
                              + board.entry_size * min(n, WRITE_CHUNK))
    io.shuffles.append(("merge", None, R, nb, pairs, None))


def predict_io(plan, workers: int | None = None, task_memory: int | None = None,
               remote: bool = True, max_reads: int | None = None) -> IOPlan:
    """Predicted counts of a build of ``plan`` (a :class:`c4table.pipeline.planning.plan.Plan`) on an
    object store (``remote``; a local directory makes fewer HEAD requests), whose shuffles
    are made two-level past ``max_reads`` ranged reads (default: the plan's, or the build's
    default, :func:`c4table.pipeline.sort.shuffle.max_reads_default`)."""
    board = plan.board
    W = workers or plan.workers
    m = task_memory or plan.memory_per_worker
    w, kb = board.width, key_bits(board)
    e = [p.entries for p in plan.plies]
    last = len(e) - 1
    first = next((g for g, x in enumerate(e) if x), 0)
    if max_reads is None:
        max_reads = getattr(plan, "shuffle_max_reads", None) or max_reads_default()
    io = IOPlan(max_reads=max_reads)
    s = _Shape(e, first, last, W, m, w, kb, max_reads, remote)
    shards, fbytes, stored = _predict_forward(io, s)
    stored = _predict_backward(io, s, shards, fbytes, stored)
    _predict_merge(io, s, board, shards, fbytes, stored, plan)
    for s in io.stages.values():
        for k2 in s:
            s[k2] = int(round(s[k2]))
    io.shuffles = [(*x[:4], int(round(x[4])), x[5]) for x in io.shuffles]
    return io
