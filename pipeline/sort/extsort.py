"""External merge sort of uint64 keys under a memory budget.

Design notes: ``docs/modules.md`` (``c4table.pipeline.sort.extsort``).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import xxhash

from c4table.errors import CorruptDataError
from c4table.pipeline.sort import runcodec
from c4table.io.counting import active
from c4table.pipeline.kernels.cpu import dedup_sorted, merge_two, take_below
from c4table.io.storage import Storage

SAMPLE_PER_RUN = 256
FENCE = runcodec.BLOCK   # one fence value (and block) per this many run values
SORT_CHUNK = 1 << 14   # values sorted at a time when many runs are merged (128 KiB: in the L2 cache)
PAIRWISE_RUNS = 3      # up to this many runs are merged pairwise (merge_two), more in pieces
WRITE_BLOCKS = 16      # blocks joined into one write of a run
FENCE_CACHE_BYTES = 64 << 20   # fences kept per process (LRU): ~1.4 TiB of runs at 8 B/fence

_fence_cache: OrderedDict = OrderedDict()   # (storage uri, run file, xxh64, rows) -> _Index
_fence_cache_bytes = 0
_fence_lock = threading.Lock()


def sort_runs(x: np.ndarray, tail: int) -> None:
    """Sort ``x`` in place: a few sorted runs one after the other, then ``tail`` values in no
    order (a kernel's output: ``pipeline.kernels.cpu._close_runs``; the 3D kernels' output
    is all tail). The tail is sorted on its own by numpy's quicksort (AVX-512 where the CPU has
    it), which makes it one more run; then numpy's stable sort (timsort for 64-bit words) finds
    the runs and merges them: 5-9x less CPU than the quicksort of the whole on the children and
    messages of 6x4's plies 12-21 (``tools/diag/sorted_runs.py``), and the tail sorted apart
    1.3x less than the timsort alone (``docs/measurements/2026-11-29-build-cpu.md``).

    >>> x = np.array([1, 5, 9, 2, 3, 8, 7], np.uint64)   # runs [1 5 9] [2 3], tail [8 7]
    >>> sort_runs(x, tail=2); x.tolist()
    [1, 2, 3, 5, 7, 8, 9]
    """
    n = x.shape[0]
    if tail >= n:
        x.sort(kind="quicksort")
        return
    if tail > 0:
        x[n - tail:].sort(kind="quicksort")
    x.sort(kind="stable")


def sort_unique(x: np.ndarray, tail: int) -> np.ndarray:
    """Sort ``x`` in place (:func:`sort_runs`, ``tail`` values at its end in no order) and return
    the view of its distinct values."""
    sort_runs(x, tail)
    return x[: dedup_sorted(x)]


def merge_sorted(parts: list[np.ndarray], unique: bool) -> np.ndarray:
    """The sorted union of sorted uint64 arrays; with ``unique`` (each part without repeats)
    values in several parts appear once, otherwise every copy is kept. Up to
    :data:`PAIRWISE_RUNS` parts are merged pairwise (:func:`~c4table.pipeline.kernels.cpu.merge_two`);
    more are gathered into one buffer and ordered piece by piece (:func:`merge_window`). The
    pipeline's tasks call :func:`merge_window` on :func:`read_range_window` directly.

    >>> a, b = np.array([1, 4, 9], np.uint64), np.array([4, 5], np.uint64)
    >>> merge_sorted([a, b], unique=True).tolist(), merge_sorted([a, b], unique=False).tolist()
    ([1, 4, 5, 9], [1, 4, 4, 5, 9])
    """
    parts = [p for p in parts if p.shape[0]]
    if len(parts) <= PAIRWISE_RUNS:
        return _merge_pairwise(parts, unique)
    ends = np.cumsum([p.shape[0] for p in parts], dtype=np.int64)
    starts = ends - np.array([p.shape[0] for p in parts], np.int64)
    return merge_window(np.concatenate(parts), starts, ends, unique)


def _merge_pairwise(parts: list[np.ndarray], unique: bool) -> np.ndarray:
    """:func:`merge_sorted` by pairwise merges (log2 of the parts passes over the values)."""
    if not parts:
        return np.empty(0, np.uint64)
    while len(parts) > 1:
        merged = []
        for i in range(0, len(parts) - 1, 2):
            out = np.empty(parts[i].shape[0] + parts[i + 1].shape[0], np.uint64)
            merged.append(out[: merge_two(parts[i], parts[i + 1], out, unique)])
        if len(parts) % 2:
            merged.append(parts[-1])
        parts = merged
    return parts[0]


def merge_window(words: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                 unique: bool) -> np.ndarray:
    """The sorted union of the sorted runs ``words[starts[r]:ends[r]]`` (every copy kept, or
    with ``unique`` each value once), as a new array (or a view of ``words``, for one run). Up
    to :data:`PAIRWISE_RUNS` runs are merged pairwise;
    more are cut into cache-sized pieces and sorted there (:func:`sorted_chunks`): on 5x6's
    data, pairwise merging cost 3.3 ns per value and level (6.5 for 4 runs, 9.8 for 8), the
    pieces 4.5-4.9 whatever the number of runs.

    >>> w = np.array([1, 4, 9, 4, 5, 2, 9], np.uint64)
    >>> merge_window(w, np.array([0, 3, 5]), np.array([3, 5, 7]), unique=True).tolist()
    [1, 2, 4, 5, 9]
    """
    keep = [r for r in range(starts.shape[0]) if ends[r] > starts[r]]
    if len(keep) <= PAIRWISE_RUNS:
        return _merge_pairwise([words[starts[r]:ends[r]] for r in keep], unique)
    starts, ends = starts[keep].astype(np.int64), ends[keep].astype(np.int64)
    out = np.empty(int((ends - starts).sum()), np.uint64)
    n = 0
    for piece in sorted_chunks(words, starts, ends):
        m = dedup_sorted(piece) if unique else piece.shape[0]
        out[n: n + m] = piece[:m]
        n += m
    return out[:n]


def sorted_chunks(words: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                  chunk: int | None = None):
    """The values of the sorted runs ``words[starts[r]:ends[r]]``, in order, as consecutive sorted
    arrays of about ``chunk`` values (default :data:`SORT_CHUNK`): splitters from every run cut the
    key space, and each piece's slices are gathered into a buffer the size of the CPU cache and
    merged there by a timsort (:func:`sort_runs`; figures: ``docs/modules.md``). Equal values
    land in the same piece. A yielded
    array is overwritten by the next.

    >>> w = np.array([1, 4, 9, 2, 3, 10], np.uint64)
    >>> [c.tolist() for c in sorted_chunks(w, np.array([0, 3]), np.array([3, 6]), chunk=2)]
    [[1, 2], [3, 4], [9, 10]]
    """
    chunk = chunk or SORT_CHUNK
    step = max(1, chunk // 16)
    sample = np.sort(np.concatenate([words[s:e:step] for s, e in zip(starts, ends)]
                                    or [np.empty(0, np.uint64)]))
    per = max(1, chunk // step)
    bounds = np.unique(sample[per::per])   # equal values (copies in several runs) cut once
    # Each piece's exact size (runs may repeat values, so the sample alone does not bound it):
    sizes = np.zeros(bounds.shape[0], np.int64)
    for s, e in zip(starts, ends):
        sizes += np.diff(np.searchsorted(words[s:e], bounds, "left"), prepend=0)
    buf = np.empty(int(sizes.max()) if sizes.shape[0] else 0, np.uint64)
    cur = starts.astype(np.int64).copy()
    ends = ends.astype(np.int64)
    for b in bounds:
        n = take_below(words, cur, ends, b, buf)
        piece = buf[:n]
        sort_runs(piece, 0)   # the runs' slices, one after the other
        yield piece
    rest = np.concatenate([words[c:e] for c, e in zip(cur, ends)] or [np.empty(0, np.uint64)])
    sort_runs(rest, 0)
    yield rest


def write_run(store: Storage, rel: str, keys: np.ndarray, low_bits: int = 0) -> str:
    """Spill sorted keys as a run: ``rel`` holds the values in blocks of :data:`FENCE`, each its
    varint differences through zstd on its own (:mod:`~c4table.pipeline.sort.runcodec`; 8 for
    ``low_bits`` keeps the low byte of ``key << 8 | byte`` values apart, as messages are) and
    ``rel + ".fences"`` the run's index (the first value and the offset of every block), so a
    range of the run can be found and read without reading the rest
    (:func:`read_range_window`). The index is written first: a run that exists has its index.
    Runs are scratch (a crash discards or re-checks them), so they are not fsync'ed. Returns
    the run file's xxh64."""
    data = np.ascontiguousarray(keys, dtype=np.uint64)
    blobs = runcodec.encode_blocks(data, low_bits)
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    store.write_atomic(rel + ".fences", runcodec.index_bytes(data.shape[0], low_bits,
                                                             data[::FENCE], offsets), durable=False)
    h = xxhash.xxh64()

    def chunks():
        for b0 in range(0, len(blobs), WRITE_BLOCKS):
            chunk = b"".join(blobs[b0:b0 + WRITE_BLOCKS])
            h.update(chunk)
            yield chunk

    # its size known, a local run may go over a spent file's cached pages (Storage.recycle_tree)
    store.write_atomic_chunks(rel, chunks(), durable=False, size=int(offsets[-1]))
    return h.hexdigest()


_local = threading.local()   # per thread: a dask worker may run several tasks at once


def _scratch(words: int) -> np.ndarray:
    """This thread's scratch words (at least ``words``) for reading runs, reused
    from task to task so that its pages are faulted in once, not for every run."""
    buf = getattr(_local, "scratch", None)
    if buf is None or buf.shape[0] < words:
        buf = _local.scratch = np.empty(max(words, 0 if buf is None else buf.shape[0] * 5 // 4),
                                        np.uint64)
    return buf[:words]


def sample(keys: np.ndarray, n: int = SAMPLE_PER_RUN) -> np.ndarray:
    """Evenly spaced keys of sorted ``keys`` (at most ``n``), for choosing splitters."""
    if keys.shape[0] <= n:
        return keys.copy()
    idx = np.linspace(0, keys.shape[0] - 1, n).astype(np.int64)
    return keys[idx].copy()


def choose_splitters(samples: list[np.ndarray], n_ranges: int,
                     rows: list[int] | None = None) -> list[int]:
    """``n_ranges + 1`` increasing boundaries; range r is ``[b[r], b[r+1])``; the first is 0 and
    the last is 2**64 - 1 (keys never reach it), so every key falls in one range. With
    ``rows`` (the values in each sample's run), a sample value stands for ``rows / len(sample)``
    values of its run, so ranges hold about equal values even when runs differ in size
    (unweighted, a small run's samples counted as much as a big one's: 6x4's largest forward
    shard was 2.8x the mean).

    >>> big, small = np.arange(0, 1000, 10, dtype=np.uint64), np.array([5000, 6000], np.uint64)
    >>> choose_splitters([big, small], 2, rows=[100_000, 20])[1] < 1000
    True
    """
    top = np.iinfo(np.uint64).max
    bounds = [0]
    samples = [np.asarray(x, np.uint64) for x in samples]
    allkeys = np.concatenate(samples) if samples else np.empty(0, np.uint64)
    if allkeys.shape[0] and n_ranges > 1:
        if rows is None:
            weights = np.ones(allkeys.shape[0])
        else:
            weights = np.concatenate([np.full(x.shape[0], r / max(1, x.shape[0]))
                                      for x, r in zip(samples, rows)])
        order = np.argsort(allkeys, kind="stable")
        allkeys, cum = allkeys[order], np.cumsum(weights[order])
        for r in range(1, n_ranges):
            i = min(int(np.searchsorted(cum, cum[-1] * r / n_ranges, "left")), allkeys.shape[0] - 1)
            b = int(allkeys[i])
            if b > bounds[-1]:
                bounds.append(b)
    bounds.append(int(top))
    return bounds


def run_record(rel: str, keys: np.ndarray, digest: str) -> dict:
    """The record of a run that tasks read it by: file, rows and xxh64 (see :func:`run_index`).

    >>> run_record("r.u64", np.arange(3, dtype=np.uint64), "ab")
    {'file': 'r.u64', 'rows': 3, 'xxh64': 'ab'}
    """
    return {"file": rel, "rows": int(keys.shape[0]), "xxh64": digest}


def run_index(store: Storage, run) -> tuple[str, int, np.ndarray]:
    """``(file, values, fences)`` of a run given by its path or by its record
    (:func:`run_record`); the fences are the first value of every block of :data:`FENCE`
    values (see :func:`_index`). Raises :class:`FileNotFoundError` for a missing run."""
    got = _index(store, run)
    return got.file, got.rows, got.fences


def run_is_current(store: Storage, rel: str) -> bool:
    """True if the index of run ``rel`` is of this version's format (a run of an older format
    reads as damaged: a resumed build writes it again)."""
    try:
        return runcodec.parse_index(store.read_bytes(rel + ".fences")) is not None
    except (ValueError, FileNotFoundError):
        return False


def run_low_bits(store: Storage, run) -> int:
    """How the values of a run are split (:func:`write_run`'s ``low_bits``; 0 for raw runs)."""
    return _index(store, run).low_bits


class _Index(NamedTuple):
    """What reading a run needs: its file, values, fences, block byte offsets (None for a run
    of raw uint64, written by an older version) and ``low_bits``."""
    file: str
    rows: int
    fences: np.ndarray
    offsets: np.ndarray | None
    low_bits: int


def _index(store: Storage, run) -> _Index:
    """The :class:`_Index` of a run given by its path (an index GET and a size HEAD) or by its
    record (:func:`run_record`): then the index is read once per process and kept in an LRU of
    :data:`FENCE_CACHE_BYTES` keyed by the storage, the file, its xxh64 and its rows, so a run
    written again under the same name is never served a stale index. How many of these reads a
    stage makes depends on which worker ran which task, so they are counted apart
    (:meth:`~c4table.io.counting.IOCounts.add_cached_read`). Raises
    :class:`FileNotFoundError` for a missing run and :class:`~c4table.errors.CorruptDataError`
    for an index that does not fit its run or is of an older format."""
    global _fence_cache_bytes
    by_path = isinstance(run, str)
    rel = run if by_path else run["file"]
    key = None if by_path else (store.uri, rel, run["xxh64"], int(run["rows"]))
    with _fence_lock:   # a dask worker may run several tasks in threads of one process
        got = _fence_cache.get(key) if key is not None else None
        if got is not None:
            _fence_cache.move_to_end(key)
            return got
    raw = store.read_bytes(rel + ".fences", cached=key is not None)   # kept: counted apart
    try:
        parsed = runcodec.parse_index(raw)
    except ValueError as e:
        raise CorruptDataError(f"{store.display(rel)}.fences: damaged run index ({e})") from None
    if parsed is None:   # an older run: raw values, every FENCE-th one its fences
        fences, offsets, low = np.frombuffer(raw, dtype="<u8"), None, 0
        if by_path:
            size = store.size(rel)
            if size % 8:
                raise CorruptDataError(f"{store.display(rel)}: run size {size:,} is not a whole "
                                       "number of values")
            n = size // 8
        else:
            n = int(run["rows"])
    else:
        n, low, fences, offsets = parsed
        if by_path:
            size = store.size(rel)
            if size != int(offsets[-1]):
                raise CorruptDataError(f"{store.display(rel)}: run size {size:,} does not match "
                                       f"its index ({int(offsets[-1]):,} bytes)")
        elif n != int(run["rows"]):
            raise CorruptDataError(f"{store.display(rel)}: run index says {n:,} values, its "
                                   f"record {int(run['rows']):,}")
    got = _Index(rel, n, fences, offsets, low)
    nbytes = fences.nbytes + (offsets.nbytes if offsets is not None else 0)
    if key is not None and nbytes <= FENCE_CACHE_BYTES:
        with _fence_lock:
            if key not in _fence_cache:   # another thread may have read it meanwhile
                _fence_cache[key] = got
                _fence_cache_bytes += nbytes
            while _fence_cache_bytes > FENCE_CACHE_BYTES and _fence_cache:
                _, old = _fence_cache.popitem(last=False)
                _fence_cache_bytes -= old.fences.nbytes + (old.offsets.nbytes if old.offsets is not None else 0)
    return got


def read_range_parts(store: Storage, rels: list, lo: int, hi: int) -> list[np.ndarray]:
    """The values ``lo <= v < hi`` of each run in ``rels`` (paths, or records from
    :func:`run_record`, whose index is cached: :func:`_index`), sorted, one array per run
    that has any; ``hi`` may be ``2**64`` (no upper bound). See :func:`read_range_window`."""
    words, starts, ends = read_range_window(store, rels, lo, hi)
    return [words[s:e] for s, e in zip(starts, ends) if e > s]


def read_range_window(store: Storage, rels: list, lo: int, hi: int):
    """:func:`read_range_parts` into one buffer: ``(words, starts, ends)``, run ``r``'s values
    being ``words[starts[r]:ends[r]]`` (what :func:`merge_window` merges without a copy).

    A run's fences give the blocks that overlap the range (at most two blocks wider than the
    range); only their words are read (``pread`` locally, one ranged GET on an object store),
    decoded and checked against the index (:func:`~c4table.pipeline.sort.runcodec.decode_blocks`),
    and trimmed. Raises :class:`~c4table.errors.CorruptDataError` for a damaged run."""
    top = int(np.iinfo(np.uint64).max)
    lo_u = np.uint64(lo)
    hi_u = np.uint64(hi) if hi <= top else None
    windows = []
    for run in rels:
        where = store.display(run if isinstance(run, str) else run["file"])
        try:
            rel, n, fences, offsets, low = _index(store, run)
        except FileNotFoundError:
            raise CorruptDataError(f"{where}: run is missing") from None
        if fences.shape[0] != -(-n // FENCE):
            raise CorruptDataError(f"{where}: run of {n:,} values does not match its "
                                   f"{fences.shape[0]} fences")
        if n == 0:
            continue
        f0 = max(int(np.searchsorted(fences, lo_u, "left")) - 1, 0)
        f1 = int(np.searchsorted(fences, hi_u, "left")) if hi_u is not None else fences.shape[0]
        start, end = f0 * FENCE, min(f1 * FENCE, n)
        if end > start:
            windows.append((where, rel, n, fences, offsets, low, f0, f1, start, end))
    words = np.empty(sum(w[9] - w[8] for w in windows), np.uint64)
    starts, ends = [], []
    pos = 0
    for where, rel, n, fences, offsets, low, f0, f1, start, end in windows:
        buf = words[pos: pos + end - start]
        active().slice_reads += 1
        try:
            if offsets is None:
                store.read_into(rel, start * 8, buf)
            else:
                size = int(offsets[f1] - offsets[f0])
                packed = _scratch(-(-size // 8)).view(np.uint8)[:size]
                store.read_into(rel, int(offsets[f0]), packed)
        except EOFError as e:
            raise CorruptDataError(f"{e}") from None
        if offsets is None:
            if not np.array_equal(buf[::FENCE], fences[f0:f0 + -(-buf.shape[0] // FENCE)]):
                raise CorruptDataError(f"{where}: run does not match its fences (damaged)")
        elif (bad := runcodec.decode_blocks(packed, fences, offsets, f0, f1, n, low, buf)) >= 0:
            raise CorruptDataError(f"{where}: block {bad} of the run does not match its index "
                                   "(damaged)")
        a = int(np.searchsorted(buf, lo_u, "left"))
        b = int(np.searchsorted(buf, hi_u, "left")) if hi_u is not None else buf.shape[0]
        starts.append(pos + a)
        ends.append(pos + max(a, b))
        pos += end - start
    return words, np.array(starts, np.int64), np.array(ends, np.int64)


def merge_range(store: Storage, rels: list, lo: int, hi: int) -> np.ndarray:
    """Sorted distinct keys in ``[lo, hi)`` over all runs (paths or records; each run is
    sorted and distinct: merged, not sorted)."""
    return merge_window(*read_range_window(store, rels, lo, hi), unique=True)
