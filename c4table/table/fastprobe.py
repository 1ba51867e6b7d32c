"""Probing many positions at once: the answers of :meth:`c4table.table.Table.probe`, computed by
numba kernels over whole arrays of move strings (the probe server's batches and cache misses).

One kernel replays every move string on bitboards and derives the keys of each position and
its children; a second searches them all in the memory-mapped file (:mod:`c4table.table.search`).
Anything this path does not handle alone is answered by :meth:`Table.probe` itself, so messages
and errors are the same. Why and how: ``docs/modules.md`` (``c4table.table.fastprobe``).

>>> from c4table import open_table
>>> fp = FastProber.for_table(open_table("tables/5x4/connect4_5x4.dat"))
>>> fp.probe_many(["3344", ""])[0].distance
3
"""
from __future__ import annotations

import numpy as np
from numba import njit

from c4table.game.codec import decode_outcome
from c4table.errors import C4Error
from c4table.game.lines import _has_line
from c4table.table.probe import MoveProbe, Probe
from c4table.table.search import NOT_FOUND, search
from c4table.table.source import Table
from c4table.table.sums import check_rows

NO_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)
# status of a replayed move string
GOES_ON, SLOW, OVER = 0, 1, 2


@njit(cache=True)
def replay(cols, offsets, w, h, stride, k, cells, empty_code, child_code, powers, keys, plies, status):
    """For move string ``i`` (0-based columns ``cols[offsets[i]:offsets[i+1]]``): its key in
    ``keys[i*(w+1)]``, its children's keys in ``keys[i*(w+1)+1+c]`` (``NO_KEY`` where column
    ``c`` cannot be played, and all of them once the game is over), its ply in ``plies[i]``,
    and ``status[i]``: 0 the game goes on, 2 it is over, 1 a move string to leave to
    :meth:`Table.probe` (an illegal move).

    No allocation per row, and three line tests per row instead of one per move: lines only
    ever appear, so the game ended before the last move exactly when the board without the last
    chip has a line; if it has none, the game is over iff the last mover's board has one."""
    heights = np.empty(w, np.int64)
    codes = np.empty(w, np.int64)
    nokey = np.uint64(0xFFFFFFFFFFFFFFFF)
    v0 = np.uint64(0)
    for c in range(w):
        v0 += np.uint64(empty_code) * powers[c]
    for i in range(offsets.shape[0] - 1):
        for c in range(w):
            heights[c] = 0
            codes[c] = empty_code
        v1 = v0
        v2 = v0
        bb0 = np.uint64(0)
        bb1 = np.uint64(0)
        over = False
        ply = 0
        st = 0
        bit = np.uint64(0)
        for j in range(offsets[i], offsets[i + 1]):
            c = cols[j]
            if c < 0 or c >= w or heights[c] >= h:
                st = 1
                break
            p = ply & 1
            nc = child_code[codes[c], p]
            if nc < 0:
                st = 1
                break
            delta = np.uint64(nc - codes[c])
            v1 += delta * powers[c]
            v2 += delta * powers[w - 1 - c]
            codes[c] = nc
            bit = np.uint64(1) << np.uint64(c * stride + heights[c])
            heights[c] += 1
            ply += 1
            if p == 0:
                bb0 |= bit
            else:
                bb1 |= bit
        if st == 0 and ply >= 2 * k - 1:
            last, other = (bb0, bb1) if ply & 1 else (bb1, bb0)
            if _has_line(last ^ bit, stride, k) or _has_line(other, stride, k):
                st = 1               # a move after the end of the game: Table.probe says which
            else:
                over = _has_line(last, stride, k)
        terminal = over or ply == cells
        status[i] = st if st != 0 or not terminal else 2
        plies[i] = ply
        base = i * (w + 1)
        keys[base] = v1 if v1 < v2 else v2
        mover = ply & 1
        for c in range(w):
            nc = child_code[codes[c], mover] if not terminal and heights[c] < h else -1
            if nc < 0:
                keys[base + 1 + c] = nokey
            else:
                delta = np.uint64(nc - codes[c])
                c1 = v1 + delta * powers[c]
                c2 = v2 + delta * powers[w - 1 - c]
                keys[base + 1 + c] = c1 if c1 < c2 else c2


class FastProber:
    """Vectorised :meth:`Table.probe` for one plain memory-mapped table."""

    def __init__(self, table: Table):
        b = table.board
        self.table = table
        self.board = b
        self.data = table.entries_array().view(np.uint8)   # searched with the table's guard
        self.guard = table.guard
        self.digits = "".join(str(c + 1) for c in range(min(b.width, 9)))
        self.args = (b.width, b.height, b.stride, b.k, b.cells, b.code_of[(0,) * b.height],
                     b.child_code, b.powers)
        self.probe_many([""])      # compile (or load the cached kernels) now, not on a request

    @classmethod
    def for_table(cls, table: Table) -> "FastProber | None":
        """A prober, or ``None`` when the table is not a plain sorted file of entries (then use
        :meth:`Table.probe`)."""
        try:
            if not isinstance(table, Table) or table.board.width > 9 \
                    or not table.board.supports("per_move"):
                return None
            return cls(table)
        except (AttributeError, TypeError, ValueError, NotImplementedError):
            return None

    def probe_many(self, texts: list[str]) -> list[Probe | C4Error]:
        """``[table.probe(t) for t in texts]``, with the error :meth:`Table.probe` raises in place
        of each text it cannot answer."""
        b = self.board
        w = b.width
        fast: list[int] = []
        strings: list[str] = []
        for i, t in enumerate(texts):
            s = t.strip()
            if len(s) <= b.cells and s.isascii() and (not s or set(s) <= set(self.digits)):
                fast.append(i)
                strings.append(s)
        out: list[Probe | None] = [None] * len(texts)
        if fast:
            raw = "".join(strings).encode("ascii")
            cols = (np.frombuffer(raw, np.uint8).astype(np.int64) - 49) if raw else np.zeros(0, np.int64)
            offsets = np.zeros(len(strings) + 1, np.int64)
            np.cumsum([len(s) for s in strings], out=offsets[1:])
            keys = np.empty(len(strings) * (w + 1), np.uint64)
            plies = np.empty(len(strings), np.int64)
            status = np.empty(len(strings), np.int64)
            replay(cols, offsets, *self.args, keys, plies, status)
            found = np.empty(keys.shape[0], np.int64)
            search(self.data, self.table.entries, b.entry_size, b.key_bytes, keys, found,
                   *self.guard.args())
            self.guard.raise_found(self.data)
            found = found.reshape(len(strings), w + 1)
            check_rows(self.table.path, b, found, plies)   # a byte its ply cannot have
            found = found.tolist()
            keys = keys.reshape(len(strings), w + 1)
            for n, i in enumerate(fast):
                row = found[n]
                if status[n] == SLOW or row[0] == NOT_FOUND:
                    continue
                ply = int(plies[n])
                res = decode_outcome(row[0])
                moves = []
                complete = True
                for c in range(w):
                    if keys[n, c + 1] == NO_KEY:
                        continue
                    if row[c + 1] == NOT_FOUND:
                        complete = False
                        break
                    child = decode_outcome(row[c + 1])
                    moves.append(MoveProbe(c + 1, child.result, child.distance + 1))
                if not complete:
                    continue
                out[i] = Probe(strings[n], ply, "A" if ply % 2 == 0 else "B", res.result, res.distance,
                               bool(status[n] == OVER), moves)
                out[i]._board = b
        for i, p in enumerate(out):
            if p is None:
                try:
                    out[i] = self.table.probe(texts[i])   # the slow path: its answer or its error
                except C4Error as e:
                    out[i] = e.with_traceback(None)   # keep no frame (and so no view of the file) alive
        return out

    def close(self) -> None:
        """Let go of the view of the table's file (before closing the table)."""
        self.data = None
