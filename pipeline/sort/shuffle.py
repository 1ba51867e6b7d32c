"""Two-level shuffle: the pre-merge that keeps a shuffle's ranged reads from growing with the
square of its task count.

Design notes: ``docs/modules.md`` (``c4table.pipeline.sort.shuffle``).

>>> group_size(10_361, 10_200, DEFAULT_MAX_READS)
102
>>> group_size(4, 4, DEFAULT_MAX_READS) is None
True
>>> read_bound(10_361, 10_200, 102)
2076500
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

import c4table.config as config
from c4table.pipeline.sort import extsort
from c4table.io.storage import open_storage
from c4table.pipeline.sort.partition import premerge_keys

if TYPE_CHECKING:
    from c4table.pipeline.runtime.execution import Executor

DEFAULT_MAX_READS = 1_000_000
ENV_MAX_READS = "C4TABLE_SHUFFLE_MAX_READS"


@dataclass(frozen=True)
class Shuffle:
    """What a shuffle of a build needs from it: the build directory's URI (the tasks open it),
    the executor that runs the pre-merge tasks (its ``map``), the memory one task may hold and
    the threshold of ranged reads past which the shuffle is made two-level."""

    store_uri: str
    executor: Executor
    task_memory: int
    max_reads: int


def max_reads_default() -> int:
    """The threshold a build uses unless given one: ``$C4TABLE_SHUFFLE_MAX_READS`` or
    :data:`DEFAULT_MAX_READS`."""
    return config.get(ENV_MAX_READS)


def group_size(tasks: int, runs: int, max_reads: int) -> int | None:
    """Runs per group (= coarse chunks) of a two-level shuffle, or None to read directly."""
    if tasks * runs <= max_reads or tasks < 2 or runs < 2:
        return None
    return max(2, math.isqrt(tasks - 1) + 1)


def read_bound(tasks: int, runs: int, g: int | None) -> int:
    """Ranged reads of run slices a shuffle makes at most (pieces cut further because a group
    is skewed to one chunk add one read per run of the group per extra piece)."""
    if g is None:
        return tasks * runs
    return runs * min(g, tasks) + tasks * -(-runs // g)


def premerge_task(root: str, runs: list[dict], bounds: list[int], out: str, unique: bool,
                  max_keys: int) -> list[dict]:
    """Merge one group of runs over one chunk ``[bounds[0], bounds[-1])`` whose ranges start at
    ``bounds[:-1]``: the chunk is cut at range boundaries into pieces of at most ``max_keys``
    values (estimated from the runs' fences; a single range is never cut), each read from every
    run (one slice each), sorted (repeats dropped if ``unique``) and written as a run at
    ``out-NNN.u64`` (its values split as the group's runs are: :func:`extsort.run_low_bits`).
    Returns the records of the nonempty pieces, with their ``lo`` and ``hi``."""
    store = open_storage(root)
    low_bits = extsort.run_low_bits(store, runs[0]) if runs else 0
    est = np.zeros(len(bounds), np.float64)   # values of the group below each bound
    for run in runs:
        _, n, fences = extsort.run_index(store, run)
        for i, x in enumerate(bounds):
            if x >= 1 << 64:
                est[i] += n
            else:
                est[i] += min(n, int(np.searchsorted(fences, np.uint64(x), "left")) * extsort.FENCE)
    cuts, start = [0], 0
    for i in range(1, len(bounds) - 1):
        if est[i + 1] - est[start] > max_keys and i > start:
            cuts.append(i)
            start = i
    cuts.append(len(bounds) - 1)
    pieces = []
    for j in range(len(cuts) - 1):
        lo, hi = bounds[cuts[j]], bounds[cuts[j + 1]]
        vals = extsort.merge_window(*extsort.read_range_window(store, runs, lo, hi), unique)
        if not vals.shape[0]:
            continue
        rel = f"{out}-{j:03d}.u64"
        rec = extsort.run_record(rel, vals, extsort.write_run(store, rel, vals, low_bits))
        pieces.append({**rec, "lo": lo, "hi": hi})
    return pieces


def two_level(sh: Shuffle, runs: list[dict], ranges: list[tuple[int, int]], where: str,
              unique: bool, pieces: list[dict] | None = None
              ) -> tuple[list[list[dict]], list[dict] | None, int | None]:
    """The runs each range's task reads: all of ``runs`` (direct), or, past the build's
    threshold, the pieces of a pre-merge written under ``where`` (or the given, already
    verified ``pieces`` of an earlier run). ``ranges`` are disjoint and increasing ``[lo, hi)``.
    Returns (runs per range, the pieces or None, the group size or None)."""
    T, R = len(ranges), len(runs)
    g = group_size(T, R, sh.max_reads)
    if g is not None and any(ranges[i][1] > ranges[i + 1][0] for i in range(T - 1)):
        g = None   # not disjoint and ordered: read directly (never the case in a build)
    if g is None:
        return [runs] * T, None, None
    if pieces is None:
        groups = [runs[i:i + g] for i in range(0, R, g)]
        P = min(g, T)
        edges = [(c * T) // P for c in range(P + 1)]
        tasks = []
        for gi, group in enumerate(groups):
            for c in range(P):
                idx = range(edges[c], edges[c + 1])
                bounds = [0 if c == 0 else ranges[idx[0]][0], *(ranges[i][0] for i in idx[1:]),
                          1 << 64 if c == P - 1 else ranges[edges[c + 1]][0]]
                tasks.append((sh.store_uri, group, bounds, f"{where}/g{gi:05d}-c{c:05d}", unique,
                              premerge_keys(sh.task_memory)))
        pieces = [p for ps in sh.executor.map(premerge_task, tasks) for p in ps]
    per_range: list[list[dict]] = [[] for _ in range(T)]
    starts = [lo for lo, _ in ranges]
    for p in pieces:   # a piece holds the ranges that start inside it, whole
        for i in range(bisect.bisect_left(starts, p["lo"]), T):
            if ranges[i][0] >= p["hi"]:
                break
            per_range[i].append(p)
    return per_range, pieces, g
