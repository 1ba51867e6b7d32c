"""The pull side of the backward pass on 2D boards: a shard of generation ``ply`` reads the
blocks of ``ply + 1``'s backward shards its children fall in (the key window of each column,
:func:`~c4table.pipeline.kernels.cpu.column_windows`) and joins them
(:func:`~c4table.pipeline.kernels.cpu.pull_resolve`); only the children read through the
mirror still come as messages. A shard whose windows would not fit the task's memory is cut
into slices of keys, each with its own windows, and so is one whose windows reach more than
:data:`SPREAD_ROWS` rows per key (its keys straddle a change of a high column's code, so its
children lie far apart, with a long stretch of the next generation between them); a slice too
small to cut further whose windows still span too many rows reads only the blocks that hold
its children.

Design notes: ``docs/modules.md`` (``c4table.pipeline.stages.pull``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from c4table.builddir.shards import OpenShard, ShardInfo, open_row_groups, read_row_groups
from c4table.io.storage import Storage
from c4table.pipeline.kernels import cpu

ROW_BYTES = 10           # a key and its outcome byte, as a window holds them (blocks are
                         # decoded in place), and about a byte of the compressed run read
MIN_SLICE_KEYS = 1 << 14  # a shard is not cut into slices smaller than this
MIN_WINDOW_ROWS = 1 << 20  # a slice may always hold this many rows of windows
SPREAD_ROWS = 16          # a slice whose windows reach more rows than this per key is cut too


def too_wide(rows: int, keys: int, allowance: int) -> bool:
    """Whether a slice of ``keys`` keys whose windows reach ``rows`` rows is cut (or, too small
    to cut, reads only its children's blocks): the rows exceed the task's ``allowance`` or
    :data:`SPREAD_ROWS` per key."""
    return rows > allowance or rows > SPREAD_ROWS * keys


@dataclass
class NextGeneration:
    """Generation ``ply + 1``'s backward shards (sorted, disjoint key ranges), each opened by
    block (:func:`~c4table.builddir.shards.open_row_groups`) the first time a window reaches it."""

    store: Storage
    shards: list[ShardInfo]
    _opened: dict[int, tuple[OpenShard, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.first = np.array([s.first for s in self.shards], np.uint64)
        self.last = np.array([s.last for s in self.shards], np.uint64)

    def _blocks(self, i: int):
        got = self._opened.get(i)
        if got is None:
            shard, groups = open_row_groups(self.store, self.shards[i])
            got = self._opened[i] = (shard, np.array([g.first for g in groups], np.uint64),
                                     np.array([g.last for g in groups], np.uint64),
                                     np.array([g.rows for g in groups], np.int64))
        return got

    def blocks_of(self, lo: np.ndarray, hi: np.ndarray) -> dict[int, np.ndarray]:
        """The blocks that hold keys of any window ``lo[c]..hi[c]`` (``lo > hi``: none), by
        shard: sorted block numbers."""
        want: dict[int, set] = {}
        for a, b in zip(lo.tolist(), hi.tolist()):
            if a > b:
                continue
            s0 = int(np.searchsorted(self.last, np.uint64(a), "left"))
            s1 = int(np.searchsorted(self.first, np.uint64(b), "right"))
            for i in range(s0, s1):
                _, first, last, _ = self._blocks(i)
                b0 = int(np.searchsorted(last, np.uint64(a), "left"))
                b1 = int(np.searchsorted(first, np.uint64(b), "right"))
                want.setdefault(i, set()).update(range(b0, b1))
        return {i: np.array(sorted(v), np.int64) for i, v in sorted(want.items())}

    def blocks_holding(self, keys: np.ndarray) -> dict[int, np.ndarray]:
        """The blocks that hold (or would hold) any of ``keys`` (``NO_KEY`` ignored), by
        shard: sorted block numbers. Where a slice's windows span far more rows than its
        children (children on both sides of a change of a high column's code), only these
        are read."""
        k = np.unique(keys[keys != cpu.NO_KEY])
        s = np.searchsorted(self.last, k, "left")   # the first shard whose last key is >= k
        want = {}
        for i in np.unique(s).tolist():
            if i >= len(self.shards):
                continue        # past the generation: pull_resolve reports the missing child
            _, _, last, _ = self._blocks(i)
            b = np.searchsorted(last, k[s == i], "left")
            want[i] = np.unique(b[b < last.shape[0]])
        return want

    def rows_of(self, blocks: dict[int, np.ndarray]) -> int:
        return sum(int(self._blocks(i)[3][b].sum()) for i, b in blocks.items())

    def read(self, blocks: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcomes of ``blocks`` (:meth:`blocks_of`), in key order: each run of
        consecutive blocks of a shard is one read."""
        n = self.rows_of(blocks)
        keys, outs = np.empty(n, np.uint64), np.empty(n, np.uint8)
        at = 0
        for i, b in blocks.items():
            shard, rows = self._blocks(i)[0], self._blocks(i)[3]
            cuts = np.flatnonzero(np.diff(b) != 1) + 1
            for run in np.split(b, cuts):
                m = int(rows[run].sum())
                read_row_groups(shard, run.tolist(), (keys[at: at + m], outs[at: at + m]))
                at += m
        return keys, outs


@dataclass(frozen=True)
class Pulled:
    """What :func:`annotate` gave: the outcome bytes, the class counts (as ``resolve``'s
    ``stats``), the messages to ``ply - 1`` at the front of the buffer given (in no order),
    the index of a bad key (-1: none), and the rows of ``ply + 1`` read."""

    out: np.ndarray
    stats: np.ndarray
    sent: int
    bad: int
    rows_read: int


def annotate(nxt: NextGeneration, board, ply: int, keys: np.ndarray, msgs: np.ndarray,
             emitted: np.ndarray, memory: int) -> Pulled:
    """The outcome of every key of a shard of generation ``ply`` by
    :func:`~c4table.pipeline.kernels.cpu.pull_resolve` from ``nxt`` and the mirrored children's
    messages ``msgs``; the messages it sends go to ``emitted`` (``len(keys) * width`` words, or
    empty to send none). ``memory``: the bytes the task may hold."""
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    w = board.width
    n = keys.shape[0]
    out = np.empty(n, np.uint8)
    stats, tail = np.zeros(6, np.int64), np.zeros(1, np.int64)
    held = n * (8 + 1) + emitted.nbytes + msgs.nbytes   # keys, outcomes, the messages out and in
    allowance = max(MIN_WINDOW_ROWS, (memory - held) // ROW_BYTES)
    lo, hi = np.empty(w, np.uint64), np.empty(w, np.uint64)
    todo, sent, rows_read = [(0, n)], 0, 0
    while todo:
        i0, i1 = todo.pop()
        cpu.column_windows(keys[i0:i1], ply, *tabs, lo, hi)
        blocks = nxt.blocks_of(lo, hi)
        rows = nxt.rows_of(blocks)
        if i1 - i0 > 1 and too_wide(rows, i1 - i0, allowance):
            if i1 - i0 < 2 * MIN_SLICE_KEYS:
                # a small slice whose windows still span too much (its keys straddle a
                # change of a high column's code): only the blocks of its children
                kids = np.empty((i1 - i0, w), np.uint64)
                cpu.pulled_children(keys[i0:i1], ply, *tabs, kids)
                exact = nxt.blocks_holding(kids.ravel())
                del kids
                exact_rows = nxt.rows_of(exact)
                if exact_rows < rows:
                    blocks, rows = exact, exact_rows
            if rows > allowance or i1 - i0 >= 2 * MIN_SLICE_KEYS:
                mid = (i0 + i1) // 2
                todo += [(mid, i1), (i0, mid)]   # the lower half first
                continue
        nk, nv = nxt.read(blocks)
        rows_read += nk.shape[0]
        room = emitted[sent: sent + (i1 - i0) * w] if emitted.shape[0] else emitted
        bad, made = cpu.pull_resolve(keys[i0:i1], msgs, nk, nv, ply, *tabs, *untabs, out[i0:i1],
                                     room, stats, tail)
        del nk, nv
        if bad >= 0:
            return Pulled(out, stats, sent, i0 + bad, rows_read)
        sent += made
    return Pulled(out, stats, sent, -1, rows_read)
