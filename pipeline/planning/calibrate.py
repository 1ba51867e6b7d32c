"""Calibration: this machine's costs of a build, measured by a short representative run and
cached per machine and version, so that plans (``c4table plan BOARD --calibrate``) use them.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.calibrate``).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

from c4table.budget import DEFAULT_MEMORY
from c4table.config import cache_dir
import c4table.config as config
from c4table.pipeline.sort.extsort import sort_runs
from c4table.pipeline.planning.schedule import SORTED_PER_ENTRY, MachineCosts, forward_shards, simulate, sort_ns

CALIBRATION_BOARD = "5x5"
STEP_BOARD = "4x4"
CALIBRATION_RUNS = 2   # builds of CALIBRATION_BOARD; the one with the least CPU is kept
SORT_SIZES = (1 << 16, 1 << 19, 1 << 22, 1 << 25)
SORT_RUNS = 7   # sorted runs a kernel writes: one per column (7x6's width; 5x5 and 6x4: 5, 6)
HASH_BYTES = 64 << 20
DISK_BYTES = 256 << 20


def cpu_model() -> str:
    """This machine's CPU model and its cores (:func:`~c4table.pipeline.runtime.execution.machine_name`)."""
    from c4table.pipeline.runtime.execution import machine_name
    return machine_name()


def version() -> str:
    """c4table's version."""
    try:
        return metadata.version("c4table")
    except metadata.PackageNotFoundError:   # pragma: no cover - a source tree
        return "0"


def code_digest() -> str:
    """A digest of the build's code (``pipeline/*.py``): a calibration of other code is stale."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def cache_path(machine: str | None = None, ver: str | None = None) -> Path:
    """Where the calibration of ``machine`` (default: this one) at ``ver`` is cached."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", machine or cpu_model()).strip("-").lower()[:80]
    return cache_dir() / f"calibration-{slug}-{ver or version()}.json"


def cached() -> MachineCosts | None:
    """This machine's cached calibration at this version, or None."""
    p = cache_path()
    try:
        return MachineCosts.from_json(json.loads(p.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def stale(costs: MachineCosts) -> bool:
    """True if ``costs`` were calibrated with other code than this (``pipeline/*.py``)."""
    return bool(costs.version) and not costs.version.endswith(f"code {code_digest()}")


def save(costs: MachineCosts) -> Path:
    p = cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(costs.to_json(), indent=1) + "\n")
    os.replace(tmp, p)
    return p


# ------------------------------------------------------------------ measuring
def own_cpu() -> float:
    """User + system CPU seconds of this process alone (all its threads)."""
    t = os.times()
    return t.user + t.system


def tree_cpu(pid: int | None = None) -> float:
    """User + system CPU seconds of process ``pid`` (default: this one) and all its live
    descendants, from ``/proc`` (Linux; elsewhere this process and its reaped children)."""
    pid = pid or os.getpid()
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    if not Path(f"/proc/{pid}/stat").exists():   # pragma: no cover - non-Linux
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    total, todo, seen = 0.0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick   # utime, stime
            for t in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (t / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def sorted_runs_keys(n: int, runs: int, rng) -> tuple[np.ndarray, int]:
    """``n`` random uint64 as the kernels write them (:mod:`c4table.pipeline.kernels.cpu`):
    ``runs`` sorted runs one after the other, each over the whole key range (a column's
    children, or parents, of a sorted generation), then about 10% of the values at random
    (the mirrored ones, the unordered tail: 5-14% of 6x4's children); and the tail's length."""
    x = rng.integers(0, 2**63, size=n, dtype=np.uint64)
    mirrored = n // 10
    cut = np.linspace(0, n - mirrored, runs + 1).astype(np.int64)
    for a, b in zip(cut[:-1], cut[1:]):
        x[a:b].sort()
    return x, mirrored


def sort_fit(sizes=None, seed: int = 1, runs: int = SORT_RUNS) -> tuple[tuple[float, float], dict]:
    """The build's sort (:func:`c4table.pipeline.sort.extsort.sort_runs`: the tail by numpy's
    quicksort, then its stable sort, a timsort that finds the runs and merges them) of ``runs``
    sorted runs and a tenth of the values apart (:func:`sorted_runs_keys`) at ``sizes``: the
    least-squares fit ``(a, b)`` of ns per key against ``log2(n)``, and the measured ns per key
    per size (best of 2 runs)."""
    rng = np.random.default_rng(seed)
    out = {}
    for n in sizes or SORT_SIZES:
        base, tail = sorted_runs_keys(n, runs, rng)
        best = float("inf")
        for _ in range(2):
            x = base.copy()
            t = time.perf_counter()
            sort_runs(x, tail)
            best = min(best, time.perf_counter() - t)
        out[n] = best / n * 1e9
    xs = np.log2(np.array(list(out), float))
    ys = np.array(list(out.values()))
    b, a = np.polyfit(xs, ys, 1)
    return (float(a), float(b)), out


def hash_rates(n: int | None = None) -> tuple[float, float]:
    """CPU ns per byte of sha256 and of md5 (one thread each)."""
    n = n or HASH_BYTES
    buf = np.random.default_rng(2).integers(0, 255, size=n, dtype=np.uint8).tobytes()
    out = []
    for algo in (hashlib.sha256, hashlib.md5):
        t = time.process_time()
        algo(buf).hexdigest()
        out.append((time.process_time() - t) / n * 1e9)
    return out[0], out[1]


def disk_rate(where: Path, n: int | None = None) -> float:
    """Bytes per second of writing ``n`` bytes to a new file under ``where`` and syncing it."""
    n = n or DISK_BYTES
    p = Path(where) / "disk-rate.tmp"
    chunk = np.ones(1 << 22, np.uint8).tobytes()
    t = time.perf_counter()
    with open(p, "wb") as f:
        for _ in range(n // len(chunk)):
            f.write(chunk)
        f.flush()
        os.fsync(f.fileno())
    dt = time.perf_counter() - t
    p.unlink()
    return n / max(dt, 1e-6)


def mean_sort_ns(entries: list[int], width: int, workers: int, task_memory: int,
                 fit: tuple) -> float:
    """The entry-weighted mean of the sort cost per key in the tasks of a build (the sizes
    :func:`~c4table.pipeline.planning.schedule.simulate` gives its tasks)."""
    shards = forward_shards(entries, width, workers, task_memory)
    num = den = 0.0
    for g, e in enumerate(entries):
        if e and shards[g]:
            num += e * sort_ns(fit, e / shards[g] * SORTED_PER_ENTRY)
            den += e
    return num / den if den else 0.0


def _run_board(board: str, workers: int, memory: str, where: Path) -> dict:
    """Build ``board`` in a fresh directory under ``where``: per stage its wall time, the CPU
    of the process tree and its tasks; the start-up (opening, kernels, forking the workers)."""
    from c4table.pipeline.stages import backward
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages import merge
    from c4table.pipeline.stages.build import open_build
    d = Path(tempfile.mkdtemp(prefix=f"{board}_", dir=where))
    t0 = time.perf_counter()
    b = open_build(board, d, memory=memory, workers=workers, quiet=True)
    wall, cpu, driver = {}, {}, {}
    try:
        b.executor.map(abs, [(-1,)] * max(2, workers))   # load the kernels, fork the workers
        startup = time.perf_counter() - t0
        for name, stage in (("forward", forward.run), ("backward", backward.run),
                            ("merge", merge.run)):
            t, c, o = time.perf_counter(), tree_cpu(), own_cpu()
            b.run_stage(name, stage, b)
            wall[name], cpu[name] = time.perf_counter() - t, tree_cpu() - c
            driver[name] = own_cpu() - o
        counts = b.ledger.executor_counts
        tasks = {s: counts.get(s, {}).get("tasks", 0) for s in wall}
        task_memory = b.task_memory
    finally:
        b.close()
        shutil.rmtree(d, ignore_errors=True)
    return {"wall_s": wall, "cpu_s": cpu, "driver_cpu_s": driver, "tasks": tasks, "task_memory": task_memory,
            "startup_s": startup, "entries": [p.entries for p in b.manifest.plies],
            "board": b.board}


def command_wall(board: str, workers: int, memory: str, where: Path) -> float:
    """Wall seconds of ``c4table build BOARD`` as a fresh process (the interpreter's start, the
    imports, the kernels' cache, the workers, the stages, the exit), in a directory under
    ``where``."""
    import subprocess
    import sys
    d = Path(tempfile.mkdtemp(prefix=f"cli_{board}_", dir=where))
    try:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", board, "--out", str(d),
                        "--workers", str(workers), "--memory", memory, "--quiet"], check=True,
                       stdout=subprocess.DEVNULL, cwd=d)
        return time.perf_counter() - t
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _passes_wall(run: dict, costs: MachineCosts, workers: int) -> tuple[float, float, int]:
    """(measured, simulated) wall of a run's forward and backward passes, and their steps."""
    from c4table.pipeline.runtime.execution import default_workers
    bd = run["board"]
    sim = simulate(run["entries"], bd.width, bd.cells, workers, run["task_memory"], costs,
                   bd.entry_size, cores=default_workers())
    steps = sum(1 for e in run["entries"] if e) * 2
    return (run["wall_s"]["forward"] + run["wall_s"]["backward"],
            sim.stages["forward"]["wall_s"] + sim.stages["backward"]["wall_s"], steps)


def calibrate(board: str = CALIBRATION_BOARD, workers: int | None = None, memory: str = DEFAULT_MEMORY,
              where: str | Path | None = None, progress=None, step_board: str = STEP_BOARD
              ) -> MachineCosts:
    """Measure this machine's :class:`~c4table.pipeline.planning.schedule.MachineCosts` with a build
    of ``board`` on ``workers`` workers (default: every core) in a temporary directory under
    ``where``, after one of ``step_board`` (small: its wall time is the driver's steps);
    ``progress(text)`` hears what is being measured."""
    from c4table.pipeline.runtime.execution import default_workers
    say = progress or (lambda text: None)
    workers = workers or default_workers()
    d = Path(tempfile.mkdtemp(prefix="c4table_calibrate_", dir=where))
    load0 = os.getloadavg()[0]
    try:
        say(f"building {step_board} and {board} on {workers} workers in {d}")
        small = _run_board(step_board, workers, memory, d)
        cli = command_wall(step_board, workers, memory, d)
        # the run with the least CPU: other people's load on a shared machine moved a single
        # run's CPU per entry by 7-15% between calibrations twenty minutes apart
        run = min((_run_board(board, workers, memory, d) for _ in range(CALIBRATION_RUNS)),
                  key=lambda r: sum(r["cpu_s"].values()))
        say("numpy's sort, sha256 and md5 rates, the disk")
        fit, sorts = sort_fit()
        sha, md5 = hash_rates()
        disk = disk_rate(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    entries, cpu, tasks, wall = run["entries"], run["cpu_s"], run["tasks"], run["wall_s"]
    E = sum(entries)
    entry_size = run["board"].entry_size
    # a task's fixed CPU: the small board's passes are nearly all fixed costs
    fb = ("forward", "backward")
    task_s = min(0.05, sum(small["cpu_s"][s] for s in fb) / max(1, sum(small["tasks"][s] for s in fb)))
    # the driver's serial work per task (sending it, taking its result and counts)
    driver_task_s = sum(run["driver_cpu_s"][s] for s in fb) / max(1, sum(tasks[s] for s in fb))
    per = {s: max(0.0, cpu[s] - task_s * tasks[s]) / E for s in wall}
    digests = sha + (md5 if config.get("C4TABLE_TABLE_MD5") else 0.0)   # what its merge hashed
    per["merge"] = max(0.1 * per["merge"], per["merge"] - digests * 1e-9 * entry_size)
    ref = mean_sort_ns(entries, run["board"].width, workers, run["task_memory"], fit)
    load = (load0 + os.getloadavg()[0]) / 2
    costs = MachineCosts(
        machine=cpu_model(), version=f"{version()} code {code_digest()}", cores=default_workers(),
        source=(f"c4table plan --calibrate {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC: "
                f"{board} on {workers} workers, {sum(cpu.values()):.1f} CPU-s in "
                f"{sum(wall.values()):.1f} s, load {load:.1f}; sort of {SORT_RUNS} sorted runs "
                f"{1e3 / sorts[max(sorts)]:.0f} M keys/s at {max(sorts):,}"),
        forward_s=per["forward"], backward_s=per["backward"], merge_s=per["merge"],
        sort_ns=fit, ref_sort_ns={"forward": ref, "backward": ref},
        hash_ns_per_byte=(sha, md5), step_s=0.0, startup_s=max(small["startup_s"], cli - sum(small["wall_s"].values())),
        task_s=task_s,
        driver_task_s=driver_task_s,
        disk_bytes_per_s=disk)
    # the driver's step: the small board's passes are all steps (their tasks take little)
    got, sim, steps = _passes_wall(small, costs, workers)
    costs.step_s = min(1.0, max(0.002, (got - sim) / steps))
    # what the tasks of the larger board took in wall time over the model's (other people's
    # load on the cores stretches them; 1.0 on a machine to itself): reported, not applied
    got, sim, steps = _passes_wall(run, costs, workers)
    stretch = got / sim if sim else 1.0
    costs.measured = {"board": board, "workers": workers, "load": round(load, 2),
                      "wall_s": wall, "cpu_s": cpu, "driver_cpu_s": run["driver_cpu_s"],
                      "tasks": tasks, "entries": E,
                      "stretch": round(stretch, 3), "step_board": step_board,
                      "step_board_command_wall_s": round(cli, 3),
                      "step_board_wall_s": small["wall_s"],
                      "sort_ns_per_key": {str(k): round(v, 2) for k, v in sorts.items()}}
    return costs
