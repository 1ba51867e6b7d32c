"""How a build cuts its work into tasks: shard sizes and range counts, from the memory one
task may hold and the number of workers. The stages and the planner
(:mod:`c4table.pipeline.planning.plan`) call the same functions, so a plan counts the tasks,
runs and ranged reads a build will make. Tasks are as big as a worker's memory allows (why:
``docs/modules.md``, ``c4table.pipeline.sort.partition``).

>>> shard_rows_for(16 * 2**30, 7)
134217728
>>> forward_ranges(10_000_000, 64 * 2**20, 5, 4)
15
>>> merge_ranges(10_000_000, 64 * 2**20, 4)
4
>>> merge_shares(10_000_000, 64 * 2**20, 2)
[0.05, 0.05, 0.1125, 0.1125, 0.1575, 0.1575, 0.18, 0.18]
"""
from __future__ import annotations

import math

KEY_BYTES_IN_RAM = 8
MIN_PARALLEL_ROWS = 1 << 16   # below this many keys a stage runs as one task
MIN_TASK_KEYS = 1 << 16       # a generation is cut into at most one task per this many keys
                              # (down to one per worker): each task costs 5-30 ms of CPU beyond
                              # its keys (64 Ki keys are 15-20 ms of work), so a small generation
                              # cut for 16 workers paid more in tasks than it gained (the
                              # schedule model: 5x5 on 16 workers 531 -> 421 tasks, 4.2 -> 3.9 s)


def shard_rows_for(task_memory: int, width: int) -> int:
    """Largest generation shard a task of ``task_memory`` bytes handles on a board ``width``
    columns wide. An expand task holds the shard and its children (w + 1 words per key); a
    backward task holds the shard, its outcomes, the messages it reads and the messages it
    sends (at most w words each per key): 2w + 2 words covers both."""
    return max(1, task_memory // (8 * (2 * width + 2)))


def forward_ranges(run_keys: int, task_memory: int, width: int, workers: int) -> int:
    """Range tasks (next generation's shards) that merge ``run_keys`` run keys: each holds its
    slices plus the merged copy (~2 words per key) and at most a shard's rows; at least one
    per worker once there is enough to split (:data:`MIN_TASK_KEYS` keys a task at the least).

    >>> forward_ranges(500_000, 1 << 30, 7, 16), forward_ranges(10_000_000, 1 << 30, 7, 16)
    (7, 16)
    """
    if run_keys == 0:
        return 0
    per_task = max(1, task_memory // (2 * KEY_BYTES_IN_RAM))
    n = math.ceil(run_keys / min(per_task, shard_rows_for(task_memory, width)))
    if run_keys < MIN_PARALLEL_ROWS:
        return n
    return max(n, min(workers, max(1, run_keys // MIN_TASK_KEYS)))


def premerge_keys(task_memory: int) -> int:
    """Values one pre-merge piece may hold (:mod:`c4table.pipeline.sort.shuffle`): its slices and
    their merged copy, 2 words per value, as a forward range task."""
    return max(1, task_memory // (2 * KEY_BYTES_IN_RAM))


MERGE_BYTES_PER_ENTRY = 8 + 2


def merge_ranges(entries: int, task_memory: int, workers: int) -> int:
    """Range tasks of the final merge: a task holds one word per entry, plus row groups and
    chunks of a bounded size (counted as 2 bytes per entry more, for small budgets). Ranges
    come in multiples of the workers so that the last wave keeps every worker busy."""
    per_task = max(1, task_memory // MERGE_BYTES_PER_ENTRY)
    n = math.ceil(entries / per_task)
    if entries >= MIN_PARALLEL_ROWS:
        n = max(workers, -(-n // workers) * workers)
    return n


# The local merge's driver hashes each range once it and those before it are written
# (:func:`c4table.pipeline.stages.merge.hash_ranges`); the sha256 is one sequential stream. A merge of
# one wave (as many equal ranges as workers) finishes all its ranges together and leaves the
# hash of the whole table after them with the cores idle (5x5: ~0.2 s of a ~1 s merge). So such
# a merge is cut into waves of growing size, these shares of the entries (each in ``workers``
# equal ranges): the hashing starts once the small first wave is written and goes on while the
# later waves merge. On many workers the hash of the table takes longer than its range tasks
# (6x5 on 16 workers: about 11 s against 6, the schedule model), and the sooner it starts the
# sooner the merge ends (the model: 17.4 -> 13.3 s, against two waves of 80% and 20%). From
# this many entries on: below, the tail is a few ms and more tasks cost as much.
HASH_WAVES = (0.10, 0.225, 0.315, 0.36)
HASH_WAVE_MIN_ENTRIES = 1 << 22


def _hash_waves(entries: int, task_memory: int, workers: int, local: bool) -> bool:
    return (local and workers > 1 and entries >= HASH_WAVE_MIN_ENTRIES
            and merge_ranges(entries, task_memory, workers) == workers)


def merge_shares(entries: int, task_memory: int, workers: int, local: bool = True) -> list[float]:
    """The share of the entries each range task of the final merge takes, in key order: the
    :func:`merge_ranges` ranges, equal; a local merge of a single wave on several workers is cut
    into waves of growing size (:data:`HASH_WAVES`), so its hashing overlaps the later waves.
    (The planner asks :func:`merge_split`.)

    >>> merge_shares(10_000_000, 64 * 2**20, 4, local=False)
    [0.25, 0.25, 0.25, 0.25]
    >>> merge_shares(10_000_000, 64 * 2**20, 2)
    [0.05, 0.05, 0.1125, 0.1125, 0.1575, 0.1575, 0.18, 0.18]
    >>> merge_shares(2_000_000, 64 * 2**20, 2)   # a small table: one wave
    [0.5, 0.5]
    >>> len(merge_shares(10_000_000, 8 * 2**20, 2))   # six waves of memory-sized ranges already
    12
    """
    if _hash_waves(entries, task_memory, workers, local):
        return [round(share / workers, 12) for share in HASH_WAVES for _ in range(workers)]
    n = merge_ranges(entries, task_memory, workers)
    return [1 / n] * n if n else []


def merge_split(entries: int, task_memory: int, workers: int, local: bool = True) -> tuple[int, float]:
    """The range tasks of the final merge and the largest one's share of the entries, as
    :func:`merge_shares` cuts them (without listing them).

    >>> merge_split(10_000_000, 64 * 2**20, 2)
    (8, 0.18)
    >>> n, largest = merge_split(10**21, 16 * 2**30, 64, local=False)   # more than a list holds
    >>> n % 64, round(n * largest, 9)
    (0, 1.0)
    """
    if _hash_waves(entries, task_memory, workers, local):
        return len(HASH_WAVES) * workers, round(max(HASH_WAVES) / workers, 12)
    n = merge_ranges(entries, task_memory, workers)
    return n, (1 / n if n else 0.0)
