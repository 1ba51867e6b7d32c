"""Which device runs the build's per-task work, and that work on a GPU.

Design notes: ``docs/modules.md`` (``c4table.pipeline.kernels.gpu.device``).
"""
from __future__ import annotations

import time

import numpy as np

from c4table.errors import BuildInputError

_state = {"xp": None, "kernels": None, "sim": False}
# seconds spent by this process in each part of the GPU stages ("forward kernel", "backward
# sort", ... "copy": host <-> device), synchronised with the device; tools/bench/gpu_run.py prints them
timings: dict[str, float] = {}
THREADS = 256      # threads per block on a GPU
MAX_BLOCKS = 4096  # grid-stride loops beyond this
SIM_THREADS = 2    # the simulator's grid: two threads, so that the striding is exercised


def simulated() -> bool:
    """True under numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config
    return bool(getattr(config, "ENABLE_CUDASIM", 0))


_PROBE = ("import json; from numba import cuda; import cupy\n"
          "ok = cuda.is_available()\n"
          "print(json.dumps([ok, int(cupy.cuda.Device().mem_info[1]) if ok else 0]))")


def _probe() -> tuple[bool, int]:
    """(a CUDA GPU is usable, its memory in bytes), asked of a child process: CUDA must not be
    initialised in a process that forks workers afterwards (``--workers`` above 1), and
    asking the driver initialises it. Once per process."""
    if "probe" not in _state:
        import json
        import subprocess
        import sys
        try:
            r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                               timeout=120)
            ok, total = json.loads(r.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, ValueError, IndexError, OSError):
            ok, total = False, 0
        _state["probe"] = (bool(ok), int(total))
    return _state["probe"]


def unavailable() -> str | None:
    """Why ``--device gpu`` cannot run here, or None if it can."""
    if simulated():
        return None
    try:
        from numba import cuda  # noqa: F401
    except ImportError:
        return "--device gpu needs numba-cuda and CuPy (pip install 'c4table[gpu]')"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "--device gpu needs CuPy (pip install 'c4table[gpu]')"
    if not _probe()[0]:
        return "--device gpu: no CUDA GPU found (set NUMBA_ENABLE_CUDASIM=1 to run the GPU path " \
               "on numba-cuda's simulator)"
    return None


def check(device: str) -> None:
    """Raise :class:`BuildInputError` unless a build's tasks can run on ``device`` (``cpu`` or
    ``gpu``); the build passes its choice to the tasks
    (:class:`c4table.pipeline.kernels.kernelset.KernelSet`)."""
    if device not in ("cpu", "gpu"):
        raise BuildInputError(f"unknown device {device!r}: give cpu or gpu")
    if device == "gpu":
        why = unavailable()
        if why:
            raise BuildInputError(why)


def card_memory() -> int | None:
    """Total memory of the GPU in bytes (None under the simulator), without initialising CUDA
    in this process (:func:`_probe`)."""
    if simulated():
        return None
    return _probe()[1] or None


def peak_memory() -> int:
    """Bytes CuPy's memory pool holds: its high-water mark, as the pool keeps the blocks it
    allocated for the next tasks (tools/bench/gpu_run.py prints it; 0 under the simulator)."""
    if simulated():
        return 0
    import cupy
    return int(cupy.get_default_memory_pool().total_bytes())


def _xp():
    if _state["xp"] is None:
        if simulated():
            _state["xp"] = np
        else:
            import cupy
            _state["xp"] = cupy
    return _state["xp"]


def _kernels():
    """The three CUDA kernels (:mod:`c4table.pipeline.kernels.gpu.launch`), compiled on first use."""
    if _state["kernels"] is None:
        from c4table.pipeline.kernels.gpu import launch
        _state["kernels"] = (launch.expand_kernel, launch.resolve_kernel, launch.emit_kernel)
    return _state["kernels"]


def _grid(n: int) -> tuple[int, int]:
    if simulated():
        return 1, SIM_THREADS
    return max(1, min(MAX_BLOCKS, -(-n // THREADS))), THREADS


def _tables(tables: tuple) -> tuple:
    """The board tables with their arrays on the device (scalars as they are)."""
    xp = _xp()
    return tuple(xp.asarray(t) if isinstance(t, np.ndarray) else t for t in tables)


class _Clock:
    """Adds the wall time of a block to :data:`timings` (synchronised with the device)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        if not simulated():
            import cupy
            cupy.cuda.Device().synchronize()
        timings[self.name] = timings.get(self.name, 0.0) + time.perf_counter() - self.t0


def _sorted_valid(x):
    """``x`` less its :data:`~c4table.pipeline.kernels.gpu.kernels.NO_KEY` slots (a stream compaction:
    a position has about 2 children or parents of its ``w`` slots), sorted on the device."""
    from c4table.pipeline.kernels.gpu.kernels import NO_KEY   # loaded with the kernels, not by a CPU build
    xp = _xp()
    x = x[x != NO_KEY]
    x.sort()
    return x


def _dedup_sorted(x):
    """Sorted ``x`` without repeats (a mask and a compaction: no second sort)."""
    xp = _xp()
    if x.shape[0] < 2:
        return x
    keep = xp.empty(x.shape[0], dtype=bool)
    keep[0] = True
    keep[1:] = x[1:] != x[:-1]
    return x[keep]


def _keep_best(x):
    """Sorted messages, one per parent key: the last (best) of each key's run."""
    xp = _xp()
    if x.shape[0] == 0:
        return x
    hi = x >> np.uint64(8)
    keep = xp.empty(x.shape[0], dtype=bool)
    keep[:-1] = hi[:-1] != hi[1:]
    keep[-1] = True
    return x[keep]


def to_host(x) -> np.ndarray:
    xp = _xp()
    return x if xp is np else xp.asnumpy(x)


def expand(keys: np.ndarray, ply: int, tables: tuple, children: bool, w: int):
    """The GPU's :func:`c4table.pipeline.kernels.cpu.expand` followed by the sort and
    deduplication of the children. Returns (stats int64[4], sorted distinct children on the
    host, or None when ``children`` is false)."""
    xp = _xp()
    expand_kernel = _kernels()[0]
    blocks, threads = _grid(keys.shape[0])
    with _Clock("forward copy"):
        d_keys = xp.asarray(keys)
    with _Clock("forward kernel"):
        out = xp.empty(keys.shape[0] * w if children else 0, dtype=np.uint64)
        stats = xp.zeros((blocks * threads, 4), dtype=np.int64)
        expand_kernel[blocks, threads](d_keys, ply, *_tables(tables), out, stats)
    del d_keys
    st = to_host(stats.sum(axis=0)).astype(np.int64)
    if not children:
        return st, None
    with _Clock("forward sort"):
        kids = _sorted_valid(out)
        del out
        kids = _dedup_sorted(kids)
    with _Clock("forward copy"):
        return st, np.ascontiguousarray(to_host(kids), dtype=np.uint64)


def resolve(keys: np.ndarray, msgs: np.ndarray, ply: int, tables: tuple, send: bool, w: int):
    """The GPU's :func:`c4table.pipeline.kernels.cpu.resolve`, then the sort and best-per-parent of
    the messages sent. Returns (bad index or -1, outcome bytes, stats int64[6], sorted best
    messages or None when ``send`` is false), all on the host."""
    xp = _xp()
    resolve_kernel = _kernels()[1]
    blocks, threads = _grid(keys.shape[0])
    with _Clock("backward copy"):
        d_keys, d_msgs = xp.asarray(keys), xp.asarray(msgs)
    with _Clock("backward kernel"):
        out = xp.zeros(keys.shape[0], dtype=np.uint8)
        sent = xp.empty(keys.shape[0] * w if send else 0, dtype=np.uint64)
        stats = xp.zeros((blocks * threads, 6), dtype=np.int64)
        bad = xp.full(blocks * threads, -1, dtype=np.int64)
        resolve_kernel[blocks, threads](d_keys, d_msgs, ply, *_tables(tables), out, sent,
                                        stats, bad)
    del d_keys, d_msgs
    bad_h = to_host(bad)
    bad_i = int(bad_h[bad_h >= 0].min()) if (bad_h >= 0).any() else -1
    st = to_host(stats.sum(axis=0)).astype(np.int64)
    best = None
    if send and bad_i < 0:
        with _Clock("backward sort"):
            best = _keep_best(_sorted_valid(sent))
    del sent
    with _Clock("backward copy"):
        out_h = to_host(out)
        best_h = None if best is None else np.ascontiguousarray(to_host(best), dtype=np.uint64)
    return bad_i, out_h, st, best_h


def emit(keys: np.ndarray, outcomes: np.ndarray, ply: int, tables: tuple, w: int) -> np.ndarray:
    """The GPU's :func:`c4table.pipeline.kernels.cpu.emit_parents`, sorted, best per parent."""
    xp = _xp()
    emit_kernel = _kernels()[2]
    blocks, threads = _grid(keys.shape[0])
    d_keys, d_outs = xp.asarray(keys), xp.asarray(outcomes)
    sent = xp.empty(keys.shape[0] * w, dtype=np.uint64)
    with _Clock("backward kernel"):
        emit_kernel[blocks, threads](d_keys, d_outs, ply, *_tables(tables), sent)
    with _Clock("backward sort"):
        best = _keep_best(_sorted_valid(sent))
    return np.ascontiguousarray(to_host(best), dtype=np.uint64)
