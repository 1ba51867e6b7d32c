"""The keys of a run of sorted table entries as one bit per *candidate*: the keys the rules of
the game allow there, listed in key order, each coded member (1) or not (0) by an adaptive
binary range coder. Nearly every candidate is a table key (on 5x5-6x5 about 97%), so the bits
cost 0.10-0.17 per entry where zstd of the key deltas costs 0.85-0.90
(``docs/measurements/2026-11-28-c4z-streams.md``).

A key is a candidate when its position has chips balanced (A as many as B, or one more), is
the mirror-canonical reading (:func:`c4table.game.codec.key_of_codes`), the player who did
not move last has no k in a row, and, if the last mover has one, taking back some top chip of
theirs leaves none. Every reachable position passes these, so every table key is a
candidate; a key that is not (a file that is no game table) makes :func:`walk` return -1
and the caller store the block otherwise. Candidates are listed row by row of the key space
(a row: the keys that share the columns 1..; only the column-0 codes that balance the other
columns' chips are tried, :func:`d0_lists`; rows with none are stepped over,
:func:`row_skips`).

The coder is the binary range coder of LZMA (11-bit probabilities, adapted by 1/32 of the
error), one probability per (ply, the last mover has k in a row) of the candidate; its state
starts afresh at each run, so that a probe decodes one run only. Format 5's encoder
(:meth:`RuleKeys.encode_runs`) walks a block once, recording each candidate in a byte, and
codes the records once the block's odds are known.

>>> import numpy as np
>>> from c4table.game.board import Board
>>> rk = RuleKeys(Board.parse("4x4"))
>>> keys = np.array([0, 1, 31, 33, 160], np.uint64)  # "", "1", "2", "12", "1122" on 4x4
>>> data = rk.encode(keys)
>>> rk.decode(data, 0, 5).tolist(), rk.find(data, 0, 5, 33), rk.find(data, 0, 5, 34)
([0, 1, 31, 33, 160], 3, -1)
>>> rk.encode(np.array([0, 2], np.uint64)) is None    # B's chip alone: no position
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from numba import njit

from c4table.game.board import Board
from c4table.game.lines import _has_line, _line_cells, line_reach

ENCODE, DECODE, FIND, COUNT = 0, 1, 2, 3
_SPARSE = object()       # RuleKeys.record: the candidates take more bytes than allowed
_TOP = np.int64(1 << 24)
_MASK32 = np.int64(0xFFFFFFFF)


def d0_starts(codes: np.ndarray, count: np.ndarray) -> np.ndarray:
    """``starts[r, d]``: the first index of ``codes[r, :count[r]]`` (:func:`d0_lists`) whose
    code is at least ``d``. A key whose column-0 code is below its last column's is not the
    mirror-canonical reading (the mirror's leading digit is the smaller), so a row whose last
    column holds ``d`` tries the codes from ``starts[r, d]`` on."""
    base = codes.shape[1]
    starts = np.empty((codes.shape[0], base), np.int64)
    for r in range(codes.shape[0]):
        starts[r] = np.searchsorted(codes[r, :count[r]], np.arange(base), "left")
    return starts


def d0_lists(board: Board) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, count, dif)``: ``dif[c]`` is A's chips minus B's in column code ``c``; for each
    chip balance ``r`` of the columns 1.. (offset by ``height * width``), ``codes[r, :count[r]]``
    are the column-0 codes, increasing, that make the whole position balanced (``dif`` of
    ``-r`` or ``1 - r``)."""
    dif = np.array([sum(1 for x in col if x == 1) - sum(1 for x in col if x == 2)
                    for col in board.columns], np.int64)
    off = board.height * board.width
    span = 2 * off + 1
    codes = np.full((span, board.base), -1, np.int64)
    count = np.zeros(span, np.int64)
    for ri in range(span):
        r = ri - off
        ok = [c for c in range(board.base) if dif[c] in (-r, 1 - r)]
        codes[ri, :len(ok)] = ok
        count[ri] = len(ok)
    return codes, count, dif


def row_skips(codes: np.ndarray, count: np.ndarray, starts: np.ndarray, dif: np.ndarray,
              w: int) -> np.ndarray:
    """``skips[u, l, d]``: the first column-1 code at least ``d`` whose row has column-0 codes
    to try (``base``: none), where ``u`` is the chip balance of the columns 2.. (offset as
    :func:`d0_lists` offsets it) and ``l`` the last column's code (0 on a board of two
    columns, whose last column is column 1). Most rows have none (about 7 of the 8 a 6x5 entry
    visits): :func:`walk` steps over them with this table instead of row by row.

    >>> from c4table.game.board import Board
    >>> codes, count, dif = d0_lists(Board.parse("4x4"))
    >>> s = row_skips(codes, count, d0_starts(codes, count), dif, 4)
    >>> s.shape, int(s.max()) == codes.shape[1]
    ((33, 31, 32), True)
    """
    span, base = codes.shape[0], codes.shape[1]
    lasts = base if w > 2 else 1
    skips = np.empty((span, lasts, base + 1), np.int16)
    d = np.arange(base)
    for u in range(span):
        ri = u + dif                              # the row's balance, offset, per column-1 code
        inside = (ri >= 0) & (ri < span)
        rc = np.clip(ri, 0, span - 1)
        for last in range(lasts):
            lc = np.full(base, last) if w > 2 else d     # two columns: column 1 is the last
            ok = inside & (count[rc] > starts[rc, lc])
            first = np.where(ok, d, base)
            skips[u, last, :base] = np.minimum.accumulate(first[::-1])[::-1]
            skips[u, last, base] = base
    return skips


@njit(cache=True, inline="always")
def _next_row(rest, w, base):
    """The digits ``rest[1:]`` of the next row of the key space (add one, carry); True if a
    digit above ``rest[1]`` changed."""
    c = 1
    while c < w:
        rest[c] += 1
        if rest[c] < base:
            return c > 1
        rest[c] = 0
        c += 1
    return True


@njit(cache=True, inline="always")
def _shift_low(low, cache, pending, buf, pos, m):
    """The range encoder's byte output (LZMA's ``ShiftLow``): write the cached byte and the
    pending 0xFF bytes, carried, once the top byte of ``low`` is settled; returns (low, cache,
    pending, pos), ``pos`` -1 when ``buf[:m]`` is full."""
    if (low & _MASK32) < 0xFF000000 or (low >> 32) != 0:
        carry = low >> 32
        t = cache
        while True:
            if pos >= m:
                return low, cache, pending, -1
            buf[pos] = (t + carry) & 0xFF
            pos += 1
            t = 0xFF
            pending -= 1
            if pending == 0:
                break
        cache = (low >> 24) & 0xFF
    pending += 1
    low = (low & 0x00FFFFFF) << 8
    return low, cache, pending, pos


@njit(cache=True, inline="always")
def _settle(low, rng):
    """The value in ``[low, low + rng)`` with the most low zero bits: the encoder's last
    interval written as few bytes as the decoder needs (it reads zeros past the end)."""
    for b in range(40, -1, -1):
        mask = (np.int64(1) << b) - 1
        v = (low + mask) & ~mask
        if v < low + rng:
            return v
    return low


@njit(cache=True, inline="always")
def _top_chip(height, at):
    """The bit of the top chip of a column of ``height`` chips whose cell 0 is bit ``at``
    (none for an empty column)."""
    if height == 0:
        return np.uint64(0)
    return np.uint64(1) << np.uint64(at + height - 1)


@njit(cache=True, inline="always")
def _starts_from(bb, stride, i0, k):
    """:func:`~c4table.game.lines.line_reach` over the three directions that leave a column
    for the next ones (across, up and down a diagonal)."""
    return (line_reach(bb, stride, i0, k) | line_reach(bb, stride - 1, i0, k)
            | line_reach(bb, stride + 1, i0, k))


def vertical_lines(board: Board) -> np.ndarray:
    """``vert[c]``: bit 0 if column code ``c`` alone holds ``k`` of A's chips in a row, bit 1
    if of B's (:func:`walk`'s line tests of columns 0 and 1)."""
    a = np.asarray(board.col_bits_a, np.uint64)
    b = np.asarray(board.col_bits_b, np.uint64)
    return np.array([int(_has_line(a[c], board.stride, board.k))
                     | 2 * int(_has_line(b[c], board.stride, board.k))
                     for c in range(board.base)], np.int64)


@njit(cache=True)
def walk(mode, first, n, keys, buf, target, w, base, stride, k, bits_a, bits_b, powers,
         col_height, dif, codes, count, starts, limit, skips, vert, probs, init, lean, counts):
    """The candidates after ``first`` (a table key, not coded) in key order, each coded by
    one bit, until the run's ``n`` keys are all placed.

    - ``ENCODE``: ``keys[1:n]`` (increasing, ``keys[0] == first``) into ``buf`` (large
      enough); returns the bytes written, or -1 if a key is no candidate.
    - ``DECODE``: the keys from ``buf`` into ``keys`` (``keys[0] = first``); returns the bytes
      read, or -1 unless ``buf`` holds exactly ``n`` keys below ``limit`` (damaged).
    - ``FIND``: the index of ``target`` among the run's keys, -1 if it is none; -2 if damaged.
    - ``COUNT``: no coding: ``counts[0, c]`` += the candidates of context ``c``, ``counts[1,
      c]`` += those that are keys; returns 0, or -1 if a key is no candidate. With a ``buf``
      (not empty) it also records each candidate there as one byte, ``c | member << 7``
      (:func:`code_records` codes them), and returns how many; -2 if ``buf`` is too short.

    ``probs``: the coder's probabilities (``2 * (cells + 1)``), set to ``init`` here (the
    probability, out of 2048, that a candidate of that context is *not* a key). ``lean``: the
    encoder drops its first byte (always 0) and ends on the fewest bytes that hold its last
    interval (:func:`_settle`; the decoder reads zeros past the end, so trailing zero bytes
    are dropped too), instead of LZMA's five-byte flush."""
    probs[:] = init
    # range coder state: encoder (low, rng, cache, pending) / decoder (code, rng, pos)
    low = np.int64(0)
    rng = _MASK32
    cache = np.int64(0)
    pending = np.int64(1)
    pos = 0
    code = np.int64(0)
    m = buf.shape[0]
    if mode == ENCODE or mode == COUNT:
        keys[0] = first
    else:
        if mode == DECODE:
            keys[0] = first
        else:
            if target == first:
                return 0
            if target < first:
                return -1
        for _ in range(4 if lean else 5):
            code = ((code << 8) | (np.int64(buf[pos]) if pos < m else 0)) & _MASK32
            pos += 1
    placed = 1
    if n <= 1:
        if mode == ENCODE or mode == COUNT:
            return 0
        return 0 if mode == DECODE else -1
    off = col_height.max() * w
    top = powers[w - 1]
    lo = first + np.uint64(1)
    row = lo // np.uint64(base)
    rest = np.zeros(w, np.int64)
    x = row
    for c in range(1, w):
        rest[c] = np.int64(x % np.uint64(base))
        x //= np.uint64(base)
    ua = ub = umir = utop = rtop = np.uint64(0)     # utop, rtop: the top chips of columns 2.., 1..
    ur = uply = 0
    nxt = skips[0, 0]     # the rows of the columns 2.. now: the next one with codes to try
    # The line tests split by where a line starts: in the columns 2.. (``la2``, ``lb2``, once
    # those columns change), in column 1 (its own code, ``vert``, or a chip of it at a cell of
    # ``h1a``/``h1b``, from which the columns 2.. continue a line) or in column 0 (the same
    # with ``h0a``/``h0b``, per row: the cells from which column 1 and the columns 2..
    # (``fa*``, ``fb*``, by direction) continue one).
    la2 = lb2 = False
    h1a = h1b = fa0 = fa1 = fa2 = fb0 = fb1 = fb2 = np.uint64(0)
    s0, s1, s2 = np.uint64(stride), np.uint64(stride - 1), np.uint64(stride + 1)
    fresh = True
    while True:
        if row * np.uint64(base) >= limit:
            return -2 if mode == FIND else -1
        if fresh:
            ua = ub = umir = utop = np.uint64(0)
            ur = uply = 0
            for c in range(2, w):
                d = rest[c]
                ua |= bits_a[d] << np.uint64(c * stride)
                ub |= bits_b[d] << np.uint64(c * stride)
                ur += dif[d]
                uply += col_height[d]
                umir += np.uint64(d) * powers[w - 1 - c]
                utop |= _top_chip(col_height[d], c * stride)
            nxt = skips[ur + off, rest[w - 1] if w > 2 else 0]
            la2 = _has_line(ua, stride, k)
            lb2 = _has_line(ub, stride, k)
            h1a = _starts_from(ua, stride, 1, k)
            h1b = _starts_from(ub, stride, 1, k)
            fa0, fa1, fa2 = (line_reach(ua, stride, 2, k), line_reach(ua, stride - 1, 2, k),
                             line_reach(ua, stride + 1, 2, k))
            fb0, fb1, fb2 = (line_reach(ub, stride, 2, k), line_reach(ub, stride - 1, 2, k),
                             line_reach(ub, stride + 1, 2, k))
            fresh = False
        d1 = rest[1]
        to = np.int64(nxt[d1])
        if to != d1:                # an empty row: on to the next one with codes to try
            if to == base:          # none before the columns 2.. change
                row += np.uint64(base - 1 - d1)
                rest[1] = base - 1
                fresh = _next_row(rest, w, base)
                row += np.uint64(1)
            else:
                row += np.uint64(to - d1)
                rest[1] = to
            continue
        ri = ur + dif[d1] + off
        if 0 <= ri < count.shape[0]:
            ca = bits_a[d1] << np.uint64(stride)
            cb = bits_b[d1] << np.uint64(stride)
            ra = ua | ca
            rb = ub | cb
            # k in a row of A (B) not starting in column 0, and column 0's cells from which one
            # would continue (a chip of A's (B's) there makes one)
            lra = la2 or (vert[d1] & 1) != 0 or (ca & h1a) != 0
            lrb = lb2 or (vert[d1] & 2) != 0 or (cb & h1b) != 0
            h0a = ((ra >> s0) & fa0) | ((ra >> s1) & fa1) | ((ra >> s2) & fa2)
            h0b = ((rb >> s0) & fb0) | ((rb >> s1) & fb1) | ((rb >> s2) & fb2)
            rply = uply + col_height[d1]
            rtop = utop | _top_chip(col_height[d1], stride)
            mir = umir + np.uint64(d1) * powers[w - 2]
            base_key = row * np.uint64(base)
            for j in range(starts[ri, rest[w - 1]], count[ri]):
                d0 = codes[ri, j]
                key = base_key + np.uint64(d0)
                if key < lo:
                    continue
                if np.uint64(d0) * top + mir < key:      # not the mirror-canonical reading
                    # (column 0's code is at least column w-1's: ``starts`` skips the rest)
                    continue
                ply = rply + col_height[d0]
                last_a = ply % 2 == 1
                line_a = lra or (vert[d0] & 1) != 0 or (bits_a[d0] & h0a) != 0
                line_b = lrb or (vert[d0] & 2) != 0 or (bits_b[d0] & h0b) != 0
                if ply > 0 and (line_b if last_a else line_a):
                    continue
                won = ply > 0 and (line_a if last_a else line_b)
                if won:
                    last = (ra | bits_a[d0]) if last_a else (rb | bits_b[d0])
                    ok = False
                    # only a top chip in a line may undo it: those tried one by one
                    tops = _line_cells(last, stride, k) & (rtop | _top_chip(col_height[d0], 0))
                    while tops:
                        bit = tops & (~tops + np.uint64(1))          # the lowest one
                        if not _has_line(last & ~bit, stride, k):
                            ok = True
                            break
                        tops ^= bit
                    if not ok:
                        continue
                # a candidate: one bit
                ctx = 2 * ply + (1 if won else 0)
                p = np.int64(probs[ctx])
                bound = (rng >> 11) * p
                if mode == COUNT:
                    want = keys[placed]
                    if key > want:
                        return -1
                    counts[0, ctx] += 1
                    if m:
                        if pos >= m:
                            return -2
                        buf[pos] = ctx | (128 if key == want else 0)
                        pos += 1
                    if key == want:
                        counts[1, ctx] += 1
                        placed += 1
                        if placed == n:
                            return pos
                elif mode == ENCODE:
                    want = keys[placed]
                    if key > want:
                        return -1                        # a key that is no candidate
                    member = key == want
                    if member:
                        low += bound
                        rng -= bound
                        probs[ctx] = p - (p >> 5)
                    else:
                        rng = bound
                        probs[ctx] = p + ((2048 - p) >> 5)
                    while rng < _TOP:
                        rng = (rng << 8) & _MASK32
                        low, cache, pending, pos = _shift_low(low, cache, pending, buf, pos, m)
                        if pos < 0:
                            return -1
                    if member:
                        placed += 1
                        if placed == n:
                            if lean:
                                low = _settle(low, rng)
                            for _ in range(5):           # flush
                                low, cache, pending, pos = _shift_low(low, cache, pending, buf,
                                                                      pos, m)
                                if pos < 0:
                                    return -1
                            return pos
                else:
                    if mode == FIND and key > target:
                        return -1
                    if code < bound:
                        member = False
                        rng = bound
                        probs[ctx] = p + ((2048 - p) >> 5)
                    else:
                        member = True
                        code -= bound
                        rng -= bound
                        probs[ctx] = p - (p >> 5)
                    while rng < _TOP:
                        rng = (rng << 8) & _MASK32
                        code = ((code << 8) | (np.int64(buf[pos]) if pos < m else 0)) & _MASK32
                        pos += 1
                    if pos > m and not lean:
                        return -1 if mode == DECODE else -2
                    if member:
                        if mode == FIND:
                            if key == target:
                                return placed
                        else:
                            keys[placed] = key
                        placed += 1
                        if placed == n:
                            if mode == FIND:
                                return -1
                            return pos if pos == m or lean and pos >= m else -1
                    elif mode == FIND and key == target:
                        return -1
        fresh = _next_row(rest, w, base)
        row += np.uint64(1)


@njit(cache=True)
def record_runs(keys, run_entries, rec, ends, counts, w, base, stride, k, bits_a, bits_b,
                powers, col_height, dif, codes, count, starts, limit, skips, vert):
    """The first pass of a block's runs of ``run_entries`` keys (:meth:`RuleKeys.record`): one
    :func:`walk` per run in ``COUNT`` mode with its candidates recorded in ``rec``; run ``r``'s
    records end at ``ends[r]``. Returns 0, -1 if a key is no candidate, -2 if ``rec`` is too
    short."""
    n = keys.shape[0]
    probs = np.empty(counts.shape[1], np.int64)          # unused by COUNT, but indexed
    init = np.full(counts.shape[1], 1024, np.int64)
    at = 0
    for r in range(ends.shape[0]):
        lo = r * run_entries
        hi = min(n, lo + run_entries)
        if hi - lo > 1 and at >= rec.shape[0]:   # no room left: an empty rec records nothing
            return -2
        got = walk(COUNT, keys[lo], hi - lo, keys[lo:hi], rec[at:], np.uint64(0), w, base,
                   stride, k, bits_a, bits_b, powers, col_height, dif, codes, count, starts,
                   limit, skips, vert, probs, init, True, counts)
        if got < 0:
            return got
        at += got
        ends[r] = at
    return 0


@njit(cache=True)
def code_records(rec, ends, init, out, starts):
    """The second pass (:meth:`RuleKeys.record`): each run's records coded as :func:`walk`'s
    ``ENCODE`` with ``lean`` framing codes its keys, the same bytes, the runs one after another
    in ``out``; run ``r``'s bytes are ``out[starts[r]:starts[r + 1]]``. Returns the bytes
    written, -1 if ``out`` is too short."""
    probs = np.empty(init.shape[0], np.int64)
    m = out.shape[0]
    at = 0
    r0 = 0
    starts[0] = 0
    for r in range(ends.shape[0]):
        probs[:] = init
        low = np.int64(0)
        rng = _MASK32
        cache = np.int64(0)
        pending = np.int64(1)
        pos = at
        for i in range(r0, ends[r]):
            ctx = np.int64(rec[i] & 127)
            p = probs[ctx]
            bound = (rng >> 11) * p
            if rec[i] & 128:
                low += bound
                rng -= bound
                probs[ctx] = p - (p >> 5)
            else:
                rng = bound
                probs[ctx] = p + ((2048 - p) >> 5)
            while rng < _TOP:
                rng = (rng << 8) & _MASK32
                low, cache, pending, pos = _shift_low(low, cache, pending, out, pos, m)
                if pos < 0:
                    return -1
        if ends[r] > r0:               # the run's last record is its last key: flush
            low = _settle(low, rng)
            for _ in range(5):
                low, cache, pending, pos = _shift_low(low, cache, pending, out, pos, m)
                if pos < 0:
                    return -1
        # lean framing: the first byte (always 0) and the trailing zero bytes dropped
        last = pos - 1
        while last > at and out[last] == 0:
            last -= 1
        size = last - at if last > at else 0
        for j in range(size):
            out[at + j] = out[at + 1 + j]
        at += size
        starts[r + 1] = at
        r0 = ends[r]
    return at


@dataclass(frozen=True)
class RunRecords:
    """A block's runs walked once (:meth:`RuleKeys.record`): each candidate as one byte
    (context | member << 7), where each run's records end, and the candidates and keys per
    context (``int64[2, nprobs]``)."""

    rec: np.ndarray
    ends: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True)
class RunBits:
    """The coded key bits of a block's runs (run ``r`` is ``data[starts[r]:starts[r + 1]]``)
    and the candidates and keys per context the coders' odds came from (``int64[2,
    nprobs]``)."""

    data: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    def run(self, r: int) -> bytes:
        """Run ``r``'s bytes."""
        return self.data[self.starts[r]: self.starts[r + 1]].tobytes()


class RuleKeys:
    """The rule-coded keys of runs of one board (module docstring). ``lean``: the framing of
    :func:`walk`'s ``lean`` (format 5); the methods' ``init``: the coder's starting
    probabilities (default: 1024 in every context, format 4)."""

    def __init__(self, board: Board, lean: bool = False):
        self.board = board
        self.lean = lean
        self.codes, self.count, self.dif = d0_lists(board)
        starts = d0_starts(self.codes, self.count)
        self.args = (board.width, board.base, board.stride, board.k,
                     np.asarray(board.col_bits_a, np.uint64),
                     np.asarray(board.col_bits_b, np.uint64),
                     np.asarray(board.powers, np.uint64), np.asarray(board.col_height, np.int64),
                     self.dif, self.codes, self.count, starts, np.uint64(board.key_limit),
                     row_skips(self.codes, self.count, starts, self.dif, board.width),
                     vertical_lines(board))
        self.nprobs = 2 * (board.cells + 1)
        self.flat = np.full(self.nprobs, 1024, np.int64)
        self._none = np.zeros((2, 1), np.int64)

    def _walk(self, mode, first, n, keys, buf, target=0, init=None, counts=None):
        return walk(mode, np.uint64(first), n, keys, buf, np.uint64(target), *self.args,
                    np.empty(self.nprobs, np.int64), self.flat if init is None else init,
                    self.lean, self._none if counts is None else counts)

    def encode(self, keys: np.ndarray, init: np.ndarray | None = None) -> bytes | None:
        """The bits of a run of increasing keys (its first key is not coded: the caller keeps
        it); None if a key is no candidate."""
        keys = np.ascontiguousarray(keys, np.uint64)
        n = keys.shape[0]
        buf = np.empty(16 + n // 2 + 8 * n // 64 + 64, np.uint8)
        while True:
            m = self._walk(ENCODE, keys[0], n, keys.copy(), buf, init=init)
            if m >= 0 or not self._grow(buf, n):
                break
            buf = np.empty(buf.shape[0] * 4, np.uint8)
        if m < 0:
            return None
        if self.lean and m:        # the first byte is always 0; trailing zeros are implied
            nz = np.flatnonzero(buf[1:m])
            return buf[1: 2 + int(nz[-1])].tobytes() if nz.shape[0] else b""
        return buf[:m].tobytes()

    def tally(self, keys: np.ndarray, counts: np.ndarray) -> bool:
        """Add a run's candidates and keys per context to ``counts`` (``int64[2, nprobs]``);
        False if a key is no candidate."""
        keys = np.ascontiguousarray(keys, np.uint64)
        return self._walk(COUNT, keys[0], keys.shape[0], keys, np.empty(0, np.uint8),
                          counts=counts) >= 0

    def encode_runs(self, keys: np.ndarray, run_entries: int,
                    odds: Callable[[np.ndarray], np.ndarray],
                    cap: int | None = None) -> RunBits | None:
        """The key bits of a block's runs of ``run_entries`` keys (increasing keys; lean
        framing only), each run's coder starting from ``odds(counts)`` (the candidates and keys
        per context over the block); None if a key is no candidate. The block is walked once,
        its candidates recorded (:meth:`record`) and coded from the records (:meth:`code`);
        where they would take more than ``cap`` bytes (default: two per key, and a table of
        sparse keys, such as a rooted one, has more candidates than that), it is walked twice
        instead, counting (:meth:`tally`) then coding each run (:meth:`encode`). The same
        bytes either way."""
        keys = np.ascontiguousarray(keys, np.uint64)
        n = keys.shape[0]
        walked = self.record(keys, run_entries, 2 * n + 1024 if cap is None else cap)
        if walked is None:
            return None
        if walked is not _SPARSE:
            return self.code(walked, odds(walked.counts))
        counts = np.zeros((2, self.nprobs), np.int64)
        for o in range(0, n, run_entries):
            if not self.tally(keys[o: o + run_entries], counts):
                return None
        init = odds(counts)
        bits = [self.encode(keys[o: o + run_entries], init) for o in range(0, n, run_entries)]
        starts = np.concatenate([[0], np.cumsum([len(b) for b in bits])]).astype(np.int64)
        return RunBits(np.frombuffer(b"".join(bits), np.uint8), starts, counts)

    def record(self, keys: np.ndarray, run_entries: int, cap: int):
        """The runs of ``run_entries`` keys of a block (increasing keys) walked once, their
        candidates recorded for :meth:`code` in at most ``cap`` bytes (lean framing only):
        :class:`RunRecords`; None if a key is no candidate; the marker ``_SPARSE`` if they
        take more than ``cap`` bytes."""
        if not self.lean or self.nprobs > 128:      # a context and a member bit in a byte
            raise ValueError("records need lean framing and at most 128 contexts")
        keys = np.ascontiguousarray(keys, np.uint64)
        q = (keys.shape[0] + run_entries - 1) // run_entries
        counts = np.zeros((2, self.nprobs), np.int64)
        rec, ends = np.empty(cap, np.uint8), np.empty(q, np.int64)
        got = record_runs(keys, run_entries, rec, ends, counts, *self.args)
        if got == -2:
            return _SPARSE
        return None if got < 0 else RunRecords(rec, ends, counts)

    def code(self, records: RunRecords, init: np.ndarray) -> RunBits:
        """The key bits of the runs :meth:`record` walked, each run's coder starting from
        ``init``: the bytes :meth:`encode` gives each run."""
        ends = records.ends
        out = np.empty((int(ends[-1]) if ends.shape[0] else 0) + 16 * ends.shape[0] + 64, np.uint8)
        starts = np.empty(ends.shape[0] + 1, np.int64)
        m = code_records(records.rec, ends, np.ascontiguousarray(init, np.int64), out, starts)
        if m < 0:      # cannot happen: a record costs at most a byte (probabilities >= 8/2048)
            raise ValueError("key bits larger than their records")
        return RunBits(out[:m], starts, records.counts)

    def _grow(self, buf, n) -> bool:
        """True if ``buf`` may have been too short (try a bigger one)."""
        return buf.shape[0] < 16 * n + 64

    def decode(self, data, first: int, n: int, init: np.ndarray | None = None) -> np.ndarray:
        """The ``n`` keys of a run from its bits; ValueError if they do not hold them."""
        keys = np.empty(max(n, 1), np.uint64)
        if self._walk(DECODE, first, n, keys, _writable(data), init=init) < 0:
            raise ValueError(f"the key bits do not hold {n} keys")
        return keys[:n]

    def find(self, data, first: int, n: int, key: int, init: np.ndarray | None = None) -> int:
        """Index of ``key`` in the run, -1 if absent; ValueError if the bits are damaged."""
        j = self._walk(FIND, first, n, np.empty(1, np.uint64), _writable(data), key, init=init)
        if j == -2:
            raise ValueError("the key bits end early")
        return int(j)


def _writable(data) -> np.ndarray:
    """``data`` as a uint8 array that :func:`walk` may take (it writes when it encodes, so its
    compiled form takes writable arrays only): a view if writable, else a copy."""
    a = data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)
    return a if a.flags.writeable else a.copy()
