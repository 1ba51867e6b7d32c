"""External merge sort of uint64 keys under a memory budget.

Phase 1 (*runs*): each task sorts and deduplicates the keys it produced (in place:
``ndarray.sort`` uses numpy's AVX-512 sort, ~60 M keys/s/core) and spills them to disk as a
``.npy`` run, with a small sample of its keys.
Phase 2 (*ranges*): splitters chosen from the samples cut the key space into ranges of about
equal size; one task per range memory-maps every run, slices out its range (binary search on
the sorted run), merges the slices and drops duplicates. Ranges are disjoint and ordered, so
their outputs concatenated in order are the sorted, deduplicated whole, and no task ever holds
more than its range: a generation larger than RAM still sorts.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from pipeline.kernels import dedup_sorted

SAMPLE_PER_RUN = 256


def sort_unique(x: np.ndarray) -> np.ndarray:
    """Sort ``x`` in place and return the view of its distinct values."""
    x.sort()
    return x[: dedup_sorted(x)]


def write_run(path: Path, keys: np.ndarray) -> None:
    """Spill sorted keys to ``path`` (.npy), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, keys)
    os.replace(tmp, path)


def sample(keys: np.ndarray, n: int = SAMPLE_PER_RUN) -> np.ndarray:
    """Evenly spaced keys of sorted ``keys`` (at most ``n``), for choosing splitters."""
    if keys.shape[0] <= n:
        return keys.copy()
    idx = np.linspace(0, keys.shape[0] - 1, n).astype(np.int64)
    return keys[idx].copy()


def choose_splitters(samples: list[np.ndarray], n_ranges: int) -> list[int]:
    """``n_ranges + 1`` increasing boundaries; range r is ``[b[r], b[r+1])``; the first is 0 and
    the last is 2**64 - 1 (keys never reach it), so every key falls in one range."""
    top = np.iinfo(np.uint64).max
    allkeys = np.sort(np.concatenate(samples)) if samples else np.empty(0, np.uint64)
    bounds = [0]
    if allkeys.shape[0] and n_ranges > 1:
        for r in range(1, n_ranges):
            b = int(allkeys[(r * allkeys.shape[0]) // n_ranges])
            if b > bounds[-1]:
                bounds.append(b)
    bounds.append(int(top))
    return bounds


def open_run(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r")


def range_slices(runs: list[np.ndarray], lo: int, hi: int) -> list[np.ndarray]:
    """The part of each sorted run with ``lo <= key < hi``."""
    out = []
    lo_u, hi_u = np.uint64(lo), np.uint64(hi)
    for r in runs:
        a = int(np.searchsorted(r, lo_u, "left"))
        b = int(np.searchsorted(r, hi_u, "left"))
        if b > a:
            out.append(r[a:b])
    return out


def merge_range(run_paths: list[Path], lo: int, hi: int) -> np.ndarray:
    """Sorted distinct keys in ``[lo, hi)`` over all runs."""
    parts = range_slices([open_run(p) for p in run_paths], lo, hi)
    if not parts:
        return np.empty(0, np.uint64)
    merged = np.concatenate(parts)
    return sort_unique(merged)
