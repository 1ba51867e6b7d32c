"""A build run's ledger: what this run of a build did, stage by stage (the requests, bytes
and tasks its executor counted, wall time, entries and steps, the shuffles it measured), added
to what the earlier runs left in ``DIR/stats.json`` (:mod:`c4table.pipeline.runtime.counters`)
and saved there as it goes, so that a run killed loses only the counts since its last save.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from c4table.errors import C4Error
from c4table.io.recycle import RECYCLE_DIR
from c4table.io.storage import Storage
from c4table.pipeline.runtime import counters
from c4table.pipeline.runtime.execution import Executor
from c4table.pipeline.sort import shuffle


@dataclass
class StageWork:
    """What one stage did in this run, for the build's summary: the entries it processed and
    the steps it ran (generations, or ranges of a ``.c4z`` merge) of the ``of`` it has in all;
    a resumed stage ran fewer steps than that."""

    entries: int = 0
    steps: int = 0
    of: int = 0

    def add(self, entries: int, steps: int = 1) -> None:
        self.entries += entries
        self.steps += steps

    @property
    def resumed(self) -> bool:
        """True if steps finished by earlier runs were left as they were."""
        return self.steps < self.of


@dataclass
class RunLedger:
    """The ledger of one run of a build (held by :class:`~c4table.pipeline.stages.build.Build`
    as ``ledger``): its stages' counts and times, saved to ``DIR/stats.json`` with the
    ``settings()`` of the build (memory, task memory, storage, shuffle threshold)."""

    store: Storage
    executor: Executor
    board_name: str
    settings: Callable[[], dict]
    earlier: dict = field(init=False, default_factory=dict)   # stats.json as this run found it
    counts: object = field(init=False, default=None)          # the executor's StageCounts
    shuffles: list = field(init=False, default_factory=list)  # this run's shuffles, measured
    stage_seconds: dict = field(init=False, default_factory=dict)  # wall time of this run's stages
    stage_work: dict = field(init=False, default_factory=dict)  # stage -> its StageWork this run

    def __post_init__(self) -> None:
        self.earlier = self._load_earlier()
        self._start()

    def _load_earlier(self) -> dict:
        """``DIR/stats.json`` as the earlier runs left it ({}: none, or damaged)."""
        with counters.uncounted():
            try:
                return counters.load_stats(self.store) if self.store.exists(counters.STATS) else {}
            except C4Error:
                return {}

    def _start(self) -> None:
        """Start this run's stored-bytes ledger from what the build directory holds now (after
        the scratch of an interrupted run is gone), so that a resumed run's peak is what the
        disk held, not a rise from zero. Locally that is measured: the bytes of the directory's
        files but ``stats.json`` (never counted) and the recycle bin (counted as deleted). On
        an object store (a LIST of a big build is many requests) it is the ledger the earlier
        runs left in ``stats.json`` (``stored_bytes``; it drifts by the scratch files a resume
        deletes, which no earlier run counted as deleted), or the setup's counts if none."""
        with counters.uncounted():
            if self.store.local:
                held = self.store.tree_size("") - self.store.tree_size(RECYCLE_DIR)
                if self.store.exists(counters.STATS):
                    held -= self.store.size(counters.STATS)
            else:
                held = self.earlier.get("stored_bytes")
        if held is not None:
            self.executor.counts.rebase(held)

    def work(self, stage: str, of: int) -> StageWork:
        """The :class:`StageWork` of ``stage`` in this run, which has ``of`` steps in all (its
        driver adds the entries of each step it runs)."""
        w = self.stage_work.setdefault(stage, StageWork())
        w.of = of
        return w

    def run_stage(self, stage: str, fn, *args):
        """Run ``fn(*args)`` (a stage's driver) with its requests, bytes and tasks counted
        under ``stage``; then record the counts in ``DIR/stats.json`` (:meth:`save`; the
        stages also do after each generation or merge range)."""
        self.counts = self.executor.counts
        self.counts.set_stage(stage)
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.stage_seconds[stage] = time.perf_counter() - t0
            self.save()

    @property
    def executor_counts(self) -> dict:
        """This run's counts per stage (kept after the executor is closed)."""
        return self.counts.to_json() if self.counts is not None else {}

    def save(self) -> None:
        """Write ``DIR/stats.json``: per stage, the counts of the runs before this one (as this
        run found them) plus this run's so far, with ``runs`` one more (:func:`counters.add_run
        <c4table.pipeline.runtime.counters.add_run>`), for the stages this run ran tasks in;
        the others as found. Called often (after each generation and merge range): a run killed
        loses only the counts since. A stage with nothing left to do runs no task and adds no
        run. Its own requests are not counted: the file's size depends on the counts it holds
        (timings, memory, the executor's name), and the next stage would count reading it."""
        mine = {k: v for k, v in self.executor_counts.items()
                if k != "setup" and v["tasks"]}
        if not mine:
            return
        before = self.earlier.get("stages", {})
        stages = {**before, **{k: counters.add_run(before.get(k), v) for k, v in mine.items()}}
        with counters.uncounted():
            counters.save_stats(self.store, self.board_name, self.executor.workers,
                                self.executor.name, stages,
                                {**self.settings(),
                                 "shuffles": self.earlier.get("shuffles", []) + self.shuffles,
                                 # the ledger now (a remote resume starts from it)
                                 "stored_bytes": self.counts.stored,
                                 # the .c4z merge's files are counted (format 1 did not)
                                 "c4z_counted": self.earlier.get("c4z_counted", True)
                                 or "merge" not in before})

    def saving(self, results):
        """Yield the items of ``results`` (a stage's task results), saving the counts
        (:meth:`save`) after the caller has taken each in. Closing it closes
        ``results`` (:meth:`Executor.imap <c4table.pipeline.runtime.execution.Executor.imap>`
        then cancels the tasks not started)."""
        try:
            for r in results:
                yield r
                self.save()
        finally:
            if hasattr(results, "close"):
                results.close()

    def slice_reads(self) -> int:
        """Run-slice reads counted so far in the current stage (see :meth:`log_shuffle`)."""
        c = self.executor.counts
        c.sample()
        st = c.stages.get(c.stage)
        return st.slice_reads if st is not None else 0

    def log_shuffle(self, stage: str, ply: int, tasks: int, runs: int, group: int | None,
                    reads: int) -> None:
        """Record one shuffle of this run (written to ``stats.json``): its tasks, the runs they
        read, the pre-merge group size (None: read directly) and the run-slice reads counted."""
        self.shuffles.append({"stage": stage, "ply": ply, "tasks": tasks, "runs": runs,
                              "group": group, "slice_reads": reads,
                              "bound": shuffle.read_bound(tasks, runs, group)})
