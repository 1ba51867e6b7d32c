"""Vectorised probes of a memory-mapped ``.dat`` table: many keys answered in one call
(numba), for bulk labelling of positions. The ``.c4z`` counterpart is
:meth:`c4table.c4z.C4zFile.probe_keys`; both are reached through
:meth:`c4table.table.Table.probe_keys`.

>>> import numpy as np
>>> raw = np.frombuffer(bytes([0, 0, 20, 0, 1, 147, 0, 5, 18]), np.uint8)
>>> probe_sorted_dat(raw, 3, np.array([1, 2, 5], np.uint64)).tolist()
[147, -1, 18]
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _search(buf, E, n, q, out):
    K = E - 1
    lo0 = 0
    for t in range(q.shape[0]):
        key = q[t]
        lo, hi = lo0, n
        while lo < hi:
            mid = (lo + hi) >> 1
            k = np.uint64(0)
            base = mid * E
            for b in range(K):
                k = (k << np.uint64(8)) | np.uint64(buf[base + b])
            if k < key:
                lo = mid + 1
            else:
                hi = mid
        lo0 = lo   # queries are sorted: the next one is not before this one
        if lo < n:
            k = np.uint64(0)
            base = lo * E
            for b in range(K):
                k = (k << np.uint64(8)) | np.uint64(buf[base + b])
            out[t] = np.int16(buf[base + K]) if k == key else np.int16(-1)
        else:
            out[t] = -1


def probe_sorted_dat(buf: np.ndarray, entry_size: int, sorted_keys: np.ndarray) -> np.ndarray:
    """Outcome bytes (int16, -1 if absent) of ascending ``sorted_keys`` in the raw table bytes
    ``buf`` (uint8, memory-mapped)."""
    out = np.empty(sorted_keys.shape[0], np.int16)
    _search(buf, entry_size, buf.shape[0] // entry_size, sorted_keys, out)
    return out


def probe_dat(buf: np.ndarray, entry_size: int, keys) -> np.ndarray:
    """Outcome bytes (int16, -1 if absent) of ``keys`` in any order."""
    q = np.asarray(keys, dtype=np.uint64).ravel()
    if q.size > 1 and not (q[1:] >= q[:-1]).all():
        order = np.argsort(q)
        out = np.empty(q.shape[0], np.int16)
        out[order] = probe_sorted_dat(buf, entry_size, q[order])
        return out
    return probe_sorted_dat(buf, entry_size, q)
