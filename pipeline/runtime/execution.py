"""Execution layer: where the tasks of a stage run. One interface, two back-ends.

Design notes: ``docs/modules.md`` (``c4table.pipeline.runtime.execution``).

>>> with make_executor(workers=1) as ex:
...     ex.prepare(lambda: print("prepared once, before the first task"))
...     ex.map(abs, [(-1,), (2,)]), ex.map(abs, [(-3,)])
prepared once, before the first task
([1, 2], [3])
"""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import platform
import signal
from concurrent.futures import Executor as _FuturesExecutor
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Iterator, Sequence

from c4table.errors import BuildInputError, MissingExtraError
from c4table.pipeline.runtime import allocator
from c4table.pipeline.runtime.counters import StageCounts, run_counted, run_counted_here


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


def machine_name() -> str:
    """This machine's CPU model (``/proc/cpuinfo``) and its cores, e.g. ``Intel(R) Xeon(R)
    Processor, 2 cores``: what a build's ``stats.json`` and a calibration record."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name}, {default_workers()} cores"


_in_task = False   # in a local worker process: whether a task is running


def _on_sigint(signum, frame) -> None:
    """A local worker's Ctrl-C (a terminal sends SIGINT to its whole process group): a running
    task stops with KeyboardInterrupt, which goes back to the driver like any task's error; an
    idle worker ignores it and exits when the driver, interrupted as well, shuts the pool down
    (an interrupt escaping its wait for work would print a traceback of its own)."""
    if _in_task:
        raise KeyboardInterrupt


def _worker_start() -> None:
    """The initializer of each local worker process: its SIGINT handler (:func:`_on_sigint`)."""
    signal.signal(signal.SIGINT, _on_sigint)


def _run_task(fn: Callable[..., Any], *args):
    """A task in a local worker process: :func:`run_counted`, marked as running for
    :func:`_on_sigint`."""
    global _in_task
    _in_task = True
    try:
        return run_counted(fn, *args)
    finally:
        _in_task = False


class Executor:
    """Runs lists of tasks; ``workers`` tells stages how finely to split their work."""

    def __init__(self, pool: _FuturesExecutor | None, workers: int, name: str, owner=None):
        self._pool = pool
        self.workers = workers
        self.name = name
        self._owner = owner  # e.g. a dask Client/LocalCluster to close with us
        self.counts = StageCounts()   # what the tasks (and the driver) read, wrote and held
        self._prepare: list[Callable[[], Any]] = []
        self._started = False

    def prepare(self, fn: Callable[[], Any]) -> None:
        """Have ``fn()`` run in this (the driver's) process before the first task runs
        anywhere, e.g. loading compiled code: local worker processes start (fork) at the
        first task sent to them, so they inherit what it loaded."""
        self._prepare.append(fn)

    def _start(self) -> None:
        """Before the first task: run the preparations, then freeze the garbage collector's
        objects (``gc.freeze``, until :meth:`close`): the collections of the driver and of the
        workers forked from it no longer traverse the libraries' objects (numba's alone made
        each full collection 0.1-0.2 s), and the workers do not copy the pages they live on."""
        was = gc.isenabled()
        gc.disable()   # loading compiled code makes full collections that find nothing
        try:
            while self._prepare:
                self._prepare.pop(0)()
        finally:
            if was:
                gc.enable()
        if not self._started:
            self._started = True
            gc.freeze()

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple]) -> list:
        """Run ``fn(*args)`` for each ``args`` in ``tasks``; results in task order. The first
        task that raises makes ``map`` raise the same exception. Each task runs under
        :func:`~c4table.pipeline.runtime.counters.run_counted`; its counts go to :attr:`counts`."""
        return list(self.imap(fn, tasks))

    def imap(self, fn: Callable[..., Any], tasks: Sequence[tuple]) -> Iterator:
        """:meth:`map` as a generator: all tasks are sent at once, and each result is yielded
        as soon as it and every result before it are in, while later tasks still run, so the
        driver can work on the first results (e.g. hash the part of a file they wrote) in
        the meantime; the executor keeps no reference to a result it has yielded. Closing the
        generator early cancels the tasks not started.

        >>> with make_executor(workers=1) as ex:
        ...     [r * 10 for r in ex.imap(abs, [(-1,), (2,)])]
        [10, 20]
        """
        tasks = list(tasks)
        if tasks and (self._prepare or not self._started):
            self._start()
        self.counts.sample()   # the driver's requests before the tasks' (the stored-bytes ledger)
        if self._pool is None or len(tasks) <= 1:
            for t in tasks:
                r, c = run_counted_here(fn, *t, memory=self._pool is None)
                self.counts.add(c)
                yield r
                del r
            self.counts.sample()
            return
        run = _run_task if isinstance(self._pool, ProcessPoolExecutor) else run_counted
        futures = [self._pool.submit(run, fn, *t) for t in tasks]
        try:
            for i in range(len(futures)):
                r, c = futures[i].result()
                futures[i] = None   # the result is the caller's now (kept here, every result
                self.counts.add(c)  # would live until the last: a 7x5 merge's driver, 2.5 GB)
                yield r
                del r
        except BaseException:   # a task failed, or the caller stopped early (GeneratorExit)
            for f in futures:
                if f is not None:
                    f.cancel()
            raise
        self.counts.sample()

    def close(self) -> None:
        allocator.release()   # the buffers tasks run here kept (a worker's end with it)
        if self._started:
            self._started = False
            gc.unfreeze()
        if self._pool is not None:
            if isinstance(self._pool, ProcessPoolExecutor):
                self._pool.shutdown(wait=True, cancel_futures=True)
            else:  # dask's ClientExecutor takes no cancel_futures
                self._pool.shutdown(wait=True)
            self._pool = None
        if self._owner is not None:
            for obj in self._owner:
                obj.close()
            self._owner = None

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def make_executor(workers: int | None = None, scheduler=None, start_method: str = "fork") -> Executor:
    """Executor for ``workers`` local processes, or for a dask scheduler.

    ``start_method`` is how local worker processes start ("fork", or "spawn" when the driver
    holds state a fork must not copy, such as an S3 client).
    ``scheduler`` is ``None`` (local processes), ``"local"`` (a dask LocalCluster with
    ``workers`` single-threaded workers), a scheduler address such as ``tcp://host:8786``, or
    an existing ``dask.distributed.Client`` (left open when the executor closes)."""
    workers = workers or default_workers()
    if scheduler is not None and not isinstance(scheduler, str):  # a dask Client
        client = scheduler
        n = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
        return Executor(client.get_executor(pure=False), n, "dask client")
    if scheduler is None:
        if workers == 1:
            return Executor(None, 1, "serial")
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(start_method),
                                   initializer=_worker_start)
        return Executor(pool, workers, f"local processes x{workers}")
    try:
        from dask.distributed import Client, LocalCluster  # the [dask] extra: a missing one is one line
    except ImportError:
        raise MissingExtraError("--scheduler needs dask.distributed, the [dask] extra: "
                                "pip install 'c4table[dask]'") from None
    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        owner = [client, cluster]
    else:
        try:
            client = Client(scheduler)
        except (OSError, ValueError) as e:   # refused, no answer in time, a malformed address
            raise BuildInputError(f"--scheduler {scheduler}: cannot reach the dask scheduler "
                                  f"({e})") from None
        owner = [client]
        workers = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values()))
    return Executor(client.get_executor(pure=False), workers, f"dask {scheduler}", owner)
