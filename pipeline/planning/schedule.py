"""The schedule of a build on N workers: its wall time and CPU from per-task costs.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.schedule``).

>>> s = simulate([1, 4, 25, 121, 600, 2000, 5000], 7, 7, 2, 1 << 30, FAST_MACHINE, entry_size=5)
>>> s.wall_s > s.cpu_s / 2, s.bound()[0]
(True, 'driver')
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import c4table.config as config
from c4table.io import treehash
from c4table.pipeline.sort.partition import MIN_PARALLEL_ROWS, forward_ranges, merge_shares, merge_split

STRAGGLER = 1.15   # the largest task of a forward or backward list over the mean (assumed; the
                   # splitters' samples make ranges of 1.30-1.37x the mean on small tasks, IO model)
SORTED_PER_ENTRY = 2.15   # keys sorted per entry: children (forward), messages (backward)
CHILD_DUP = 1.40          # run keys per next-generation entry with many tasks (IO model)
MERGE_LIST_MAX = 4096     # merges of more ranges are timed in closed form, not range by range


@dataclass
class MachineCosts:
    """What a build costs on one machine: CPU per entry and stage, and the fixed costs the
    schedule needs. ``source`` says who measured them and how."""

    machine: str
    source: str
    forward_s: float     # core-seconds per entry (tasks), at the reference sort size
    backward_s: float
    merge_s: float       # the merge's range tasks, the driver's hashing not included
    sort_ns: tuple = (0.0, 0.0)   # numpy sort of n keys: a + b * log2(n) ns per key
    ref_sort_ns: dict = field(default_factory=dict)   # stage -> mean sort ns/key where measured
    hash_ns_per_byte: tuple = (0.65, 1.0)   # sha256, md5 (CPU per byte; each on its own thread)
    step_s: float = 0.15   # the driver's wall per generation and stage
    task_s: float = 0.005  # CPU per task beyond its entries
    driver_task_s: float = 0.002   # the driver's serial CPU per task (send, result, counts)
    startup_s: float = 3.0
    # the share of a task's wall time its CPU fills (the rest: waits on reads, writes and the
    # driver); 1.0 unless fitted on builds (fit.fit_costs), whose measured wall it comes from
    busy: float = 1.0
    disk_bytes_per_s: float | None = None
    cores: int | None = None   # the cores of the machine measured
    version: str = ""
    measured: dict = field(default_factory=dict)   # what a calibration measured, as it was

    def per_entry(self, stage: str, sorted_keys: float) -> float:
        """Core-seconds per entry of ``stage`` in a task that sorts ``sorted_keys`` keys."""
        base = {"forward": self.forward_s, "backward": self.backward_s, "merge": self.merge_s}[stage]
        ref = self.ref_sort_ns.get(stage)
        if ref is None or stage == "merge" or not any(self.sort_ns):
            return base
        extra = SORTED_PER_ENTRY * (sort_ns(self.sort_ns, sorted_keys) - ref) * 1e-9
        return max(0.3 * base, base + extra)

    def to_json(self) -> dict:
        d = asdict(self)
        d["sort_ns"] = list(self.sort_ns)
        d["hash_ns_per_byte"] = list(self.hash_ns_per_byte)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "MachineCosts":
        names = {f for f in cls.__dataclass_fields__}
        d = {k: v for k, v in d.items() if k in names}
        for k in ("sort_ns", "hash_ns_per_byte"):
            if k in d:
                d[k] = tuple(d[k])
        return cls(**d)


def sort_ns(fit: tuple, n: float) -> float:
    """ns per key of numpy's sort of ``n`` keys under the fit ``(a, b)``: ``a + b * log2(n)``."""
    a, b = fit
    return a + b * math.log2(max(2.0, n))


# The per-entry costs of plan.COSTS (53 / 74 / 25 ns, the merge's hashing included: about 10 ns
# of it), measured with tools/bench/bench_build.py on a 7x4 build on the fast development machine
# (numpy sorting 110-200 M keys/s), scaled by the ratio the sorted-run kernels gave per stage
# on the same benchmark side by side on the 2-core VM (plan.COSTS says how): 20.6 / 27.9 / 4.8
# ns. No sort fit: no correction for the size of the tasks.
FAST_MACHINE = MachineCosts(
    machine="the fast development machine of plan.COSTS (numpy sort 110-200 M keys/s)",
    source="plan.COSTS: tools/bench/bench_build.py, 7x4, 2 workers, idle; scaled by the sorted-run "
           "kernels' per-stage ratio on the 2-core VM (tools/bench/stage_cpu.py 6x4)",
    forward_s=0.0206e-6, backward_s=0.0279e-6, merge_s=0.0048e-6)


@dataclass
class Schedule:
    """A simulated build: per stage its wall time and what it is made of (seconds)."""

    workers: int
    cores: int
    stages: dict = field(default_factory=dict)
    startup_s: float = 0.0

    @property
    def wall_s(self) -> float:
        return self.startup_s + sum(s["wall_s"] for s in self.stages.values())

    @property
    def cpu_s(self) -> float:
        return sum(s["cpu_s"] for s in self.stages.values())

    def parts(self) -> dict:
        """The wall time cut by what it waits on: ``cores`` (the CPU spread over every core),
        ``waits`` (tasks waiting, not computing: :attr:`MachineCosts.busy`), ``waves``
        (workers idle in a list's last wave and behind its largest task: small generations,
        stragglers), ``driver`` (serial steps, start-up, the hash tail), ``disk`` (the time
        the disk bound adds)."""
        out = {"cores": 0.0, "waits": 0.0, "waves": 0.0, "driver": self.startup_s, "disk": 0.0}
        for s in self.stages.values():
            for k in out:
                out[k] += s.get(k, 0.0)
        return out

    def bound(self) -> tuple[str, float]:
        """``(what, share)``: the part of :meth:`parts` that takes the most of the wall time."""
        p = self.parts()
        k = max(p, key=p.get)
        return k, p[k] / max(1e-9, sum(p.values()))

    def to_json(self) -> dict:
        return {"workers": self.workers, "cores": self.cores, "wall_s": round(self.wall_s, 2),
                "cpu_s": round(self.cpu_s, 2), "startup_s": round(self.startup_s, 2),
                "parts": {k: round(v, 2) for k, v in self.parts().items()},
                "bound": self.bound()[0],
                "stages": {k: {kk: round(vv, 3) for kk, vv in v.items()}
                           for k, v in self.stages.items()}}


def _list_time(tasks: int, mean_s: float, workers: int, skew: float) -> float:
    """Wall of ``tasks`` tasks of mean cost ``mean_s`` on ``workers`` workers."""
    if tasks <= 0:
        return 0.0
    waves = math.ceil(tasks / workers)
    return max(waves * mean_s, (skew if tasks > 1 else 1.0) * mean_s)


def _stage(acc: dict, tasks: int, cpu_each: float, workers: int, cores: int, step_s: float,
           skew: float, busy: float = 1.0) -> None:
    """Add one list of ``tasks`` equal tasks (and the driver's step, ``step_s`` with its share
    per task already in) to a stage's sums; each task takes ``cpu_each / busy`` of wall."""
    # more workers than cores: the cores are the limit (one task's waits are another's CPU)
    computing = max(_list_time(tasks, cpu_each, workers, skew), tasks * cpu_each / cores)
    wall = max(_list_time(tasks, cpu_each / busy, workers, skew), tasks * cpu_each / cores)
    ideal = tasks * cpu_each / max(1, min(workers, cores))
    acc["wall_s"] += wall + step_s
    acc["cpu_s"] += tasks * cpu_each
    acc["cores"] += ideal
    acc["waits"] += wall - computing
    acc["waves"] += computing - ideal
    acc["driver"] += step_s
    acc["tasks"] += tasks


def forward_shards(entries: list[int], width: int, workers: int, task_memory: int) -> list[int]:
    """Non-empty forward shards per generation, as the build cuts them (each range task of
    the step before writes one): what :func:`c4table.pipeline.planning.iomodel.predict_io` counts."""
    first = next((g for g, x in enumerate(entries) if x), 0)
    shards = [0] * len(entries)
    shards[first] = 1
    for g in range(first, len(entries) - 1):
        if not entries[g + 1]:
            continue
        dup = 1 + (CHILD_DUP - 1) * (1 - 1 / max(1, shards[g]))
        k = int(entries[g + 1] * dup)
        shards[g + 1] = max(1, min(forward_ranges(k, task_memory, width, workers), entries[g + 1]))
    return shards


def simulate(entries: list[int], width: int, cells: int, workers: int, task_memory: int,
             costs: MachineCosts, entry_size: int, cores: int | None = None,
             local: bool = True, disk_bytes: dict | None = None,
             md5: bool | None = None, sha256: bool | None = None,
             merge_extra_s: float = 0.0) -> Schedule:
    """The :class:`Schedule` of a build with ``entries[g]`` entries in generation ``g`` on
    ``workers`` workers of ``task_memory`` bytes each, on ``cores`` cores (default: one per
    worker), at ``costs``; ``merge_extra_s``: core-seconds per entry the merge's range tasks
    add for the table's format (a ``.c4z``'s block codec:
    :func:`~c4table.pipeline.planning.c4zsize.build_codec_cpu_s`); ``disk_bytes`` (stage ->
    bytes written) adds the disk bound; ``md5``
    (default: ``C4TABLE_TABLE_MD5``, as the build) whether the merge also computes the md5,
    ``sha256`` (default: ``C4TABLE_TABLE_SHA256``) the whole-file sha256."""
    if md5 is None:
        md5 = config.get("C4TABLE_TABLE_MD5")
    if sha256 is None:
        sha256 = config.get("C4TABLE_TABLE_SHA256")
    cores = cores or workers
    sched = Schedule(workers, cores, startup_s=costs.startup_s)
    shards = forward_shards(entries, width, workers, task_memory)
    empty = {"wall_s": 0.0, "cpu_s": 0.0, "cores": 0.0, "waits": 0.0, "waves": 0.0,
             "driver": 0.0, "disk": 0.0, "tasks": 0}
    fwd, bwd, mrg = dict(empty), dict(empty), dict(empty)
    last = len(entries) - 1
    for g in range(len(entries)):   # the step of generation g writes g + 1 and expands it
        if g == last or not entries[g + 1]:
            fwd["wall_s"] += costs.step_s if entries[g] else 0.0
            fwd["driver"] += costs.step_s if entries[g] else 0.0
            continue
        T = shards[g + 1]
        keys = entries[g + 1] / T
        c = keys * costs.per_entry("forward", keys * SORTED_PER_ENTRY) + costs.task_s
        _stage(fwd, T, c, workers, cores, costs.step_s + T * costs.driver_task_s, STRAGGLER,
               costs.busy)
    for g in range(last, -1, -1):
        T = shards[g]
        if not T:
            continue
        keys = entries[g] / T
        c = keys * costs.per_entry("backward", keys * SORTED_PER_ENTRY) + costs.task_s
        _stage(bwd, T, c, workers, cores, costs.step_s + T * costs.driver_task_s, STRAGGLER,
               costs.busy)
    _merge(mrg, sum(entries), workers, cores, task_memory, costs, entry_size, local, md5, sha256,
           merge_extra_s)
    for name, st in (("forward", fwd), ("backward", bwd), ("merge", mrg)):
        # the passes' scratch files go through the page cache; the table is written around it
        # and synced: its bytes wait on the disk
        if name == "merge" and disk_bytes and costs.disk_bytes_per_s and disk_bytes.get(name):
            need = disk_bytes[name] / costs.disk_bytes_per_s
            if need > st["wall_s"]:
                st["disk"] += need - st["wall_s"]
                st["wall_s"] = need
        sched.stages[name] = st
    return sched


def _merge(acc: dict, total: int, workers: int, cores: int, task_memory: int,
           costs: MachineCosts, entry_size: int, local: bool, md5: bool = False,
           sha256: bool = False, extra_s: float = 0.0) -> None:
    """The merge: range tasks in waves, each hashing the tree hash's whole pieces inside its
    range (sha256 per byte, in the tasks); the driver hashes, once a range and those before it
    are in, the piece it straddles with the one before it (at most
    :data:`~c4table.io.treehash.PIECE_BYTES`, all of a range smaller than a piece; on the tree
    hash's threads), and with ``sha256`` / ``md5`` reads the whole range back in key order (each
    digest on its own thread): per range the driver waits on the slower of the two. Every byte
    is hashed once for the tree, in a task or in the driver. The hash of what is left after the
    last range is the tail."""
    if not total:
        return
    sha, md5_ns = costs.hash_ns_per_byte
    whole = max(sha if sha256 else 0.0, md5_ns if md5 else 0.0)
    hash_wall = whole * 1e-9 * entry_size                 # per entry, in the driver
    hash_cpu = ((sha if sha256 else 0.0) + (md5_ns if md5 else 0.0)) * 1e-9 * entry_size
    tree = sha * 1e-9                                     # per byte

    def straddled(entries: float) -> float:   # the driver's bytes: the piece where a range begins
        return min(treehash.PIECE_BYTES, entries * entry_size)

    def task(entries: float) -> float:   # a range task: its merge and the whole pieces inside it
        return entries * (costs.merge_s + extra_s) + (entries * entry_size - straddled(entries)) * tree \
            + costs.task_s

    def driver(entries: float) -> float:   # the driver's wait per range, in key order
        return max(entries * hash_wall, straddled(entries) * tree)

    u = costs.busy   # a range task's wall is its CPU over u
    n, _ = merge_split(total, task_memory, workers, local)
    if n > MERGE_LIST_MAX:   # equal ranges in whole waves, hashed in order
        c = task(total / n)
        h = driver(total / n)
        waves = math.ceil(n / workers)
        busy = waves * c / u
        done = max(busy + min(n, workers) * h, c / u + n * h)
        cpu = n * c + total * hash_cpu + n * straddled(total / n) * tree
        _merge_parts(acc, n, busy, done, cpu, workers, cores, costs.step_s, u)
        return
    shares = merge_shares(total, task_memory, workers, local)
    # list scheduling in order (the pool takes the tasks as submitted); the driver hashes in order
    free = [0.0] * workers
    done = 0.0
    cpu = 0.0
    for s in shares:
        w = min(range(workers), key=free.__getitem__)
        c = task(s * total)
        free[w] += c / u
        cpu += c + straddled(s * total) * tree
        done = max(done, free[w]) + driver(s * total)
    cpu += total * hash_cpu
    _merge_parts(acc, len(shares), max(free), done, cpu, workers, cores, costs.step_s, u)


def _merge_parts(acc: dict, tasks: int, busy: float, done: float, cpu: float, workers: int,
                 cores: int, step_s: float, u: float = 1.0) -> None:
    """The merge's sums: ``busy`` when the last range task ends, ``done`` when the driver has
    hashed the last range, ``cpu`` the tasks' and the digests' CPU; ``u`` the share of a
    range task's wall its CPU fills."""
    wall = max(done, cpu / cores) + step_s
    ideal = min(cpu / max(1, min(workers + 1, cores)), wall)
    b = min(busy, wall)
    waits = min(b * (1 - u), max(0.0, b - ideal))   # the parts add up to the wall
    acc.update(wall_s=wall, cpu_s=cpu, cores=ideal, tasks=tasks, waits=waits,
               waves=max(0.0, b - ideal - waits), driver=max(0.0, wall - max(b, ideal)))
