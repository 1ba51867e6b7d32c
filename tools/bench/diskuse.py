"""What a build directory holds on disk, in total and per file kind, sampled while it runs.

:func:`disk_bytes` (one directory's bytes now), :func:`sample` (per kind), and the tools' one
sampling loop: :class:`PeakSampler` (a thread calling a probe every few seconds and keeping the
largest value it returned) and :class:`DiskSampler` (that loop over a directory, keeping the
peaks per kind). The benchmarks that report a build's peak disk or memory use them
(``big_build``, ``c4z_build``, ``bench_build``, ``bench_rooted``, ``bench_c4z_stream``,
``tools.compare.bench_peers``, ``tools.diag.plan_vs_measured``).

Sizes are allocated blocks (``st_blocks * 512``: what the disk holds, sparse files counted by
what they hold) unless ``allocated=False`` asks for the files' lengths. Run alone, it prints
what a build directory holds now, per kind::

    python -m tools.bench.diskuse /path/to/build-dir
"""
from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

KINDS = {   # a file kind: a test on its path relative to the build directory
    "key shards": lambda p: p.startswith("work/forward/"),
    "outcome shards": lambda p: p.startswith("work/backward/"),
    "child runs": lambda p: p.startswith("work/runs/"),
    "messages": lambda p: p.startswith("work/messages/"),
    "recycle bin": lambda p: p.startswith("work/recycle/"),
    "table": lambda p: "/" not in p and (p.endswith((".dat", ".c4z")) or ".tmp" in p
                                         or p.startswith("parts")),
}


def _files(root: Path, allocated: bool):
    """(path relative to ``root``, bytes) of each file under ``root``; files that vanish
    while the walk goes on are skipped."""
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            yield os.path.relpath(full, root), (st.st_blocks * 512 if allocated else st.st_size)


def disk_bytes(root: Path, allocated: bool = True) -> int:
    """Bytes of the files under ``root`` now."""
    return sum(n for _, n in _files(root, allocated))


def sample(root: Path, allocated: bool = True) -> dict:
    """Bytes the disk holds under ``root``, in total and per kind, and the raw ``.dat`` files
    seen, as one JSON-ready record: ``{"t", "bytes", "kinds", "raw_files", "raw_names"}``."""
    kinds = dict.fromkeys(KINDS, 0)
    total, raw = 0, []
    for rel, size in _files(root, allocated):
        total += size
        if rel.endswith(".dat") or ".dat." in rel:
            raw.append(rel)
        for k, test in KINDS.items():
            if test(rel):
                kinds[k] += size
    return {"t": round(time.time(), 1), "bytes": total, "kinds": kinds, "raw_files": len(raw),
            "raw_names": raw}


class PeakSampler:
    """Calls ``probe`` every ``every`` seconds in a thread while the ``with`` block runs (or
    from :meth:`start` to :meth:`stop`), and once more at its end, keeping ``peak``: the largest
    number ``probe`` returned (bytes of a directory, of a process tree's memory, ...)."""

    def __init__(self, probe: Callable[[], int], every: float):
        self.probe, self.every = probe, every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> int:
        """Probe once now, keep the peak; the value probed."""
        value = self.probe()
        self.peak = max(self.peak, value)
        return value

    @property
    def native_id(self) -> int | None:
        """The sampling thread's id in the kernel (to leave its own CPU out of a process's)."""
        return self._thread.native_id

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def start(self) -> "PeakSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class DiskSampler(PeakSampler):
    """A :class:`PeakSampler` of the bytes under ``root`` (:func:`sample`; nothing while
    ``root`` does not exist), which also keeps the peak of each kind and every raw file seen;
    ``on_sample`` (if given) receives each record, e.g. to append it to a log."""

    def __init__(self, root: Path, every: float, on_sample=None, allocated: bool = True):
        super().__init__(self._probe, every)
        self.root, self.on_sample, self.allocated = Path(root), on_sample, allocated
        self.peak_kind = dict.fromkeys(KINDS, 0)
        self.raw_seen: set[str] = set()

    def _probe(self) -> int:
        if not self.root.exists():
            return 0
        s = sample(self.root, self.allocated)
        for k, v in s["kinds"].items():
            self.peak_kind[k] = max(self.peak_kind[k], v)
        self.raw_seen.update(s["raw_names"])
        if self.on_sample is not None:
            self.on_sample(s)
        return s["bytes"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="What a build directory holds on disk, per file kind.")
    ap.add_argument("dir", type=Path, help="a build directory")
    a = ap.parse_args(argv)
    if not a.dir.is_dir():
        ap.error(f"no directory {a.dir}")
    print(json.dumps(sample(a.dir), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
