"""Machine costs fitted on finished builds: ``c4table plan BOARD --calibrate-from DIR ...``
(design notes: ``docs/modules.md``, ``c4table.pipeline.planning.fit``).

Each build directory's ``stats.json`` holds, per stage and summed over every run that worked
on it, the CPU of its tasks and driver and the stage's wall time; its manifest, the entries per
generation. :func:`fit_costs` turns them into the
:class:`~c4table.pipeline.planning.schedule.MachineCosts` the schedule model prices a plan with:

- forward and backward: CPU per entry ``a_stage + b * log2(keys a task sorts)`` beside a fixed
  cost per worker and run, ``b`` shared by the two stages (:func:`fit_costs`);
- merge: CPU per entry beside a fixed cost, the driver's hashing and a ``.c4z`` build's block
  codec taken out (as its tasks counted it, ``codec_us``; the schedule adds back the hashing,
  and the codec of the build it plans:
  :func:`~c4table.pipeline.planning.c4zsize.build_codec_cpu_s`), so builds of either format
  fit one merge;
- the wall time the schedule's CPU does not fill: a cost per generation step in the driver,
  and the share of a task's wall its CPU fills (``busy``; the rest waits on reads, writes and
  the driver), from what the builds' measured wall time has over the schedule's with neither
  (:func:`_wall_fit`; one build: the step cost alone, from the passes).

A build of the board being planned is never fitted on (the plan would only repeat it):
:func:`usable` leaves it out and says so.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from c4table.builddir.reader import BuildDir
from c4table.errors import BuildInputError
from c4table.game.board import Board
from c4table.io.storage import open_storage
from c4table.pipeline.planning.c4zsize import uncounted_codec_cpu_s
from c4table.pipeline.planning.schedule import SORTED_PER_ENTRY, MachineCosts, forward_shards, simulate
from c4table.pipeline.runtime.counters import load_stats

STAGES = ("forward", "backward", "merge")


@dataclass(frozen=True)
class MeasuredBuild:
    """What one finished build measured: its board, format (and a ``.c4z``'s block codec),
    workers and task memory, its entries per generation, and per stage the CPU (user + system)
    and wall seconds and the tasks, summed over the runs that worked on it."""

    root: str
    board: Board
    table_format: str
    workers: int
    task_memory: int
    entries: tuple
    cpu_s: dict
    sys_s: dict
    wall_s: dict
    tasks: dict
    runs: int
    machine: str | None
    codec: str | None = None   # a .c4z build's block codec (its header's); None: a .dat
    codec_note: str | None = None   # why ``codec`` is a guess (its .c4z could not be read)
    codec_s: float = 0.0   # the CPU its merge's tasks counted in the block codec (0: not counted)

    @property
    def merge_extra_s(self) -> float:
        """CPU per entry its table's format added to the merge: its block codec's, as its merge
        counted it, or for a build that did not count it, the codec's figure of the code of then
        (:func:`~c4table.pipeline.planning.c4zsize.uncounted_codec_cpu_s`)."""
        if self.codec is None:
            return 0.0
        if self.codec_s > 0:
            return self.codec_s / max(1, self.total)
        return uncounted_codec_cpu_s(self.codec)

    @classmethod
    def load(cls, root: str | os.PathLike) -> "MeasuredBuild":
        """The finished build in directory ``root``; :class:`BuildInputError` (one line) if it
        is not finished or its stats have no CPU figures (a build of an older version)."""
        bd = BuildDir.load(root)
        where = str(root)
        if bd.table is None:
            raise BuildInputError(f"{where}: the build is not finished (no table in its manifest)")
        st = load_stats(open_storage(root))
        stages = st.get("stages", {})
        missing = [s for s in STAGES if s not in stages or "cpu_us" not in stages[s]
                   or not stages[s]["cpu_us"]]
        if missing:
            raise BuildInputError(f"{where}/stats.json: no CPU figures for the "
                                  f"{', '.join(missing)} stage(s) (built by an older version of "
                                  "c4table, or not finished)")
        codec = _codec_of(bd, root)
        return cls(root=where, board=bd.board, table_format=bd.table.format.name, workers=int(st["workers"]),
                   task_memory=int(st["task_memory"]),
                   entries=tuple(p.entries or 0 for p in bd.plies),
                   cpu_s={s: stages[s]["cpu_us"] / 1e6 for s in STAGES},
                   sys_s={s: stages[s].get("sys_us", 0) / 1e6 for s in STAGES},
                   wall_s={s: stages[s].get("wall_us", 0) / 1e6 for s in STAGES},
                   tasks={s: int(stages[s]["tasks"]) for s in STAGES},
                   runs=max(int(stages[s].get("runs", 1)) for s in STAGES),
                   machine=st.get("machine"), codec=codec.name, codec_note=codec.note,
                   codec_s=stages["merge"].get("codec_us", 0) / 1e6)

    def sim(self, costs: MachineCosts):
        """The schedule model of this build at ``costs`` (its format's codec included)."""
        return simulate(list(self.entries), self.board.width, self.board.cells, self.workers,
                        self.task_memory, costs, self.board.entry_size,
                        merge_extra_s=self.merge_extra_s)

    def own_costs(self, costs: MachineCosts) -> MachineCosts:
        """``costs`` with each stage's CPU per entry scaled so that the schedule model of this
        build spends the CPU it measured per stage: the wall the model then leaves unexplained
        is what the CPU did not fill, not a miss of the fitted costs."""
        sim = self.sim(costs)
        r = {s: self.cpu_s[s] / max(1e-9, sim.stages[s]["cpu_s"]) for s in STAGES}
        return replace(costs, forward_s=costs.forward_s * r["forward"],
                       backward_s=costs.backward_s * r["backward"],
                       merge_s=(costs.merge_s + self.merge_extra_s) * r["merge"]
                       - self.merge_extra_s)

    @property
    def total(self) -> int:
        return sum(self.entries)

    def log2_task_keys(self) -> float:
        """The entry-weighted mean over generations of log2 of the keys one of its forward or
        backward tasks sorts (the task sizes the schedule model gives this build)."""
        shards = forward_shards(list(self.entries), self.board.width, self.workers,
                                self.task_memory)
        num = den = 0.0
        for g, e in enumerate(self.entries):
            if e and shards[g]:
                num += e * math.log2(max(2.0, e / shards[g] * SORTED_PER_ENTRY))
                den += e
        return num / den if den else 1.0

    def per_entry(self, stage: str, task_s: float) -> float:
        """CPU seconds per entry of ``stage``, its tasks' fixed costs taken out."""
        return max(0.0, self.cpu_s[stage] - task_s * self.tasks[stage]) / max(1, self.total)


@dataclass(frozen=True)
class TableCodec:
    """The block codec of a finished build's table: ``name`` (``None`` for a raw table) and,
    where it is a guess, ``note``, the plan note that says so."""

    name: str | None
    note: str | None = None


def _codec_of(bd: BuildDir, root) -> TableCodec:
    """The block codec of a finished ``.c4z`` build's table, from its header. A ``.c4z`` that
    cannot be read (moved or removed since, damaged) is taken to be the build's default codec,
    format 3's, and the note says so: its CPU is then priced at that codec's."""
    rec = bd.table
    if rec.format.raw or rec.container is None:
        return TableCodec(None)
    from c4table.c4z.format import BUILD_CODEC
    from c4table.c4z.reader import open_c4z
    from c4table.errors import C4Error
    path = f"{str(root).rstrip('/')}/{rec.container.file}"
    try:
        with open_c4z(path) as z:
            return TableCodec(str(z.header.get("transform", BUILD_CODEC)))
    except (OSError, ValueError, C4Error) as e:
        return TableCodec(BUILD_CODEC, f"{path}: not read ({e}); its block codec is taken to be "
                                       f"{BUILD_CODEC}, the build's default")


def usable(dirs: list[str | os.PathLike], board: Board) -> tuple[list[MeasuredBuild], list[str]]:
    """The builds in ``dirs`` to fit on for a plan of ``board``, and notes on those left out
    (a build of ``board`` itself) and on a build whose block codec is a guess
    (:class:`TableCodec`). :class:`BuildInputError` if none is left, or if they were
    measured on different machines."""
    builds, notes = [], []
    for d in dirs:
        b = MeasuredBuild.load(d)
        if b.board == board:
            notes.append(f"{d}: a build of {board} itself, left out of the fit (a plan fitted "
                         "on the build it predicts would only repeat it)")
            continue
        builds.append(b)
        if b.codec_note:
            notes.append(b.codec_note)
    if not builds:
        raise BuildInputError(f"no build to fit the costs of a {board} plan on: give builds of "
                              "other boards (--calibrate-from DIR, once per build)")
    machines = {b.machine for b in builds if b.machine}
    if len(machines) > 1:
        raise BuildInputError("the builds were measured on different machines ("
                              + "; ".join(sorted(machines)) + "): fit on one machine's builds")
    return builds, notes


def _solve(rows: list[list[float]], ys: list[float], nonneg: list[int]) -> list[float]:
    """Least squares of ``rows @ p = ys``; a parameter listed in ``nonneg`` that comes out
    below 0 is fixed at 0 and the rest fitted again."""
    cols = list(range(len(rows[0])))
    while True:
        A = np.array([[r[c] for c in cols] for r in rows], float)
        p, *_ = np.linalg.lstsq(A, np.array(ys, float), rcond=None)
        bad = [c for c, v in zip(cols, p) if c in nonneg and v < 0]
        if not bad:
            out = [0.0] * len(rows[0])
            for c, v in zip(cols, p):
                out[c] = float(v)
            return out
        cols.remove(bad[0])


def fit_costs(builds: list[MeasuredBuild], base: MachineCosts) -> MachineCosts:
    """:class:`MachineCosts` fitted on ``builds`` (see the module's docstring); what the builds
    do not measure (tasks' fixed cost, hashing rates, start-up, disk) is taken from ``base``.

    Per build and stage, CPU per entry ``y = F / entries + a + b * log2(task keys)``: ``F`` the
    stage's fixed CPU per worker and run (loading the kernels, the driver's steps: what makes
    the small boards dear per entry), ``a`` its cost per entry, ``b`` the growth with the task
    size, shared by the two passes and fitted from three builds on (never below 0). Each build
    weighs alike (relative errors). The plan keeps ``a`` and ``b``: ``F`` is noise on a big
    build.
    """
    n = len(builds)
    fixed = [b.runs * b.workers / max(1, b.total) for b in builds]   # multiplies F
    xs = [b.log2_task_keys() for b in builds]
    x_ref = max(xs)   # where the line is anchored: the largest tasks fitted on
    grow = n >= 3 and max(xs) - min(xs) > 0.5
    rows, ys = [], []
    for i, stage in enumerate(("forward", "backward")):
        for b, f, x in zip(builds, fixed, xs):
            r = [0.0] * 4 + [x - x_ref]
            if n >= 2:
                r[2 * i] = f
            r[2 * i + 1] = 1.0
            rows.append(r if grow else r[:4])
            ys.append(b.per_entry(stage, 0.0))
    p = _solve(rows, ys, nonneg=[0, 2, 4])
    slope = p[4] if grow else 0.0   # seconds per entry per doubling of the task's keys
    m_rows = [[f, 1.0] if n >= 2 else [0.0, 1.0] for f in fixed]
    merge = _solve(m_rows, [b.per_entry("merge", 0.0) - b.merge_extra_s for b in builds],
                   nonneg=[0])[1]
    sha, _ = base.hash_ns_per_byte
    entry_size = max(builds, key=lambda b: b.total).board.entry_size
    merge = max(0.1 * merge, merge - sha * 1e-9 * entry_size)   # the schedule adds the hashing
    # sort_ns(fit, n) = b_ns * log2(n): SORTED_PER_ENTRY * (sort_ns(n) - ref) is the growth
    b_ns = slope * 1e9 / SORTED_PER_ENTRY
    ref = b_ns * x_ref
    machine = next((b.machine for b in builds if b.machine), None) or base.machine
    names = ", ".join(f"{b.board} ({b.codec or b.table_format}, {b.workers} workers, "
                      f"{sum(b.cpu_s.values()):,.0f} CPU-s)" for b in builds)
    costs = replace(base, machine=machine, task_s=0.0,
                    source=f"fitted on {n} build(s): {names}",
                    forward_s=max(1e-12, p[1]), backward_s=max(1e-12, p[3]), merge_s=merge,
                    sort_ns=(0.0, b_ns), ref_sort_ns={"forward": ref, "backward": ref},
                    measured={"builds": [b.root for b in builds],
                              "fixed_cpu_s_per_worker_run": {"forward": round(p[0], 3),
                                                             "backward": round(p[2], 3)},
                              "slope_ns_per_doubling": round(slope * 1e9, 3),
                              "log2_task_keys": [round(x, 2) for x in xs]})
    costs.step_s, costs.busy = _wall_fit(builds, costs)
    costs.measured["busy_share"] = round(costs.busy, 3)
    return costs


#: builds a fit of the tasks' busy share needs (with fewer, the step cost alone): two builds
#: fit two parameters exactly, noise and all
WALL_FIT_BUILDS = 3


def _wall_fit(builds: list[MeasuredBuild], costs: MachineCosts) -> tuple[float, float]:
    """``(step_s, busy)``: the driver's wall per generation step and the share of a task's
    wall its CPU fills. Per build, the wall of its three stages over the schedule's with
    neither (``busy`` 1, no step cost) is ``steps * step_s + k * W`` (``busy = 1 / (1 + k)``;
    ``W``: the schedule's wall at ``k`` less the free one, over ``k``, a secant taken again at
    each of three rounds' ``k``, as the merge's hashing makes the wall bend; each build's
    schedule at the CPU it measured, :meth:`MeasuredBuild.own_costs`), fitted by least
    squares, each build weighing alike. Fewer than :data:`WALL_FIT_BUILDS` builds: the step
    cost alone (:func:`_step_s`). ``step_s`` is kept between 2 ms and 1 s, ``busy`` between
    0.3 and 1."""
    if len(builds) < WALL_FIT_BUILDS:
        return _step_s(builds, costs), 1.0
    sims = []
    for b in builds:
        own = b.own_costs(replace(costs, step_s=0.0, busy=1.0))

        def wall(busy: float, b=b, own=own) -> float:
            sim = b.sim(replace(own, busy=busy))
            return sum(st["wall_s"] for st in sim.stages.values())
        sims.append((b, wall, wall(1.0), max(1e-9, sum(b.wall_s.values())),
                     2 * sum(1 for e in b.entries if e) + 1))
    k = 1.0
    for _ in range(3):
        rows = [[steps / got, (wall(1 / (1 + k)) - free) / k / got]
                for _, wall, free, got, steps in sims]
        step, k_new = _solve(rows, [(got - free) / got for _, _, free, got, _ in sims],
                             nonneg=[0, 1])
        k = max(k_new, 1e-3)
    return min(1.0, max(0.002, step)), max(0.3, 1 / (1 + k_new))


def _step_s(builds: list[MeasuredBuild], costs: MachineCosts) -> float:
    """The driver's wall per generation step: what the builds' passes took in wall time over
    the schedule's wall with no step cost, per step (between 2 ms and 1 s)."""
    over = steps = 0.0
    free = replace(costs, step_s=0.0)
    for b in builds:
        sim = b.sim(free)
        got = b.wall_s["forward"] + b.wall_s["backward"]
        over += got - sim.stages["forward"]["wall_s"] - sim.stages["backward"]["wall_s"]
        steps += 2 * sum(1 for e in b.entries if e)
    return min(1.0, max(0.002, over / max(1.0, steps)))


def describe(builds: list[MeasuredBuild]) -> list[str]:
    """One line per build: its measured CPU per entry and stage, and system time's share."""
    out = []
    for b in builds:
        per = " / ".join(f"{b.cpu_s[s] / b.total * 1e9:.0f}" for s in STAGES)
        cpu = sum(b.cpu_s.values())
        out.append(f"{Path(b.root).name or b.root}: {b.board}, {b.total:,} entries, {per} ns per "
                   f"entry (forward / backward / merge), system {sum(b.sys_s.values()) / cpu:.0%}")
    return out
