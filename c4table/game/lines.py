"""The rules of :mod:`c4table.game.rules` as numba kernels over whole arrays of keys: what the
readers ask of a chunk of table entries (:func:`classify`, :func:`bitboards_of`,
:func:`has_lines`, for export and stats) and the decoding the build's kernels
(:mod:`c4table.pipeline.kernels.cpu`) share. ``tests/test_rules.py`` checks them against the plain
rules on every position of small boards. Bit tricks used here:

Design notes: ``docs/modules.md`` (``c4table.game.lines``).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def _has_line(bb, stride, k):
    """True if bitboard ``bb`` holds ``k`` chips in a row in any direction. A shift of 64 bits
    or more (a long line on a tall board: no such line fits) leaves nothing, as in numpy;
    numba's ``>>`` would wrap the shift count instead. Four in a row, the usual case, takes
    two shifts per direction instead of three: ``m = bb & bb >> s`` marks the pairs, and
    ``m & m >> 2s`` two pairs that make four."""
    if k == 4 and 3 * (stride + 1) < 64:
        for s in (1, stride, stride - 1, stride + 1):
            m = bb & (bb >> np.uint64(s))
            if m & (m >> np.uint64(2 * s)):
                return True
        return False
    for s in (1, stride, stride - 1, stride + 1):
        if _line_starts(bb, s, k) != 0:
            return True
    return False


@njit(cache=True, inline="always")
def line_reach(bb, s, i0, k):
    """The cells ``p`` of bitboard ``bb``'s frame from which ``bb`` holds ``p + i*s`` for every
    ``i`` in ``i0..k-1`` (all ones when there is no such ``i``; none once a shift reaches 64
    bits, where no line fits). From ``i0 = 1``, on ``bb``'s own chips: the starts of ``k`` in a
    row (:func:`_line_starts`); the key walk (:mod:`c4table.c4z.rulekeys`) asks from later ``i0``
    for the lines a column not yet placed would complete."""
    m = ~np.uint64(0)
    for i in range(i0, k):
        if i * s >= 64:
            return np.uint64(0)
        m &= bb >> np.uint64(i * s)
    return m


@njit(cache=True, inline="always")
def _line_starts(bb, s, k):
    """The chips of bitboard ``bb`` that start ``k`` in a row in the direction of shift ``s``:
    those with a chip ``s``, ``2s``, ... ``(k - 1)s`` bits above them."""
    return bb & line_reach(bb, s, 1, k)


@njit(cache=True, inline="always")
def _line_cells(bb, stride, k):
    """The chips of bitboard ``bb`` that lie in some ``k`` in a row (0: none): each
    direction's line starts (``m``: a chip with ``k - 1`` more after it), spread over their
    ``k`` cells. A chip outside them can be taken away without breaking any line.

    >>> b = np.uint64(0b1111 | 1 << 10)       # four in column 0, one chip in column 1 (stride 7)
    >>> bin(_line_cells(b, 7, 4)), _line_cells(np.uint64(0b111), 7, 4)
    ('0b1111', 0)
    """
    cells = np.uint64(0)
    for s in (1, stride, stride - 1, stride + 1):
        m = _line_starts(bb, s, k)
        if m:
            c = m
            for i in range(1, k):
                c |= m << np.uint64(i * s)
            cells |= c
    return cells


@njit(cache=True, inline="always")
def _divmod_base(key, base):
    """``(key // base, key % base)`` for uint64 ``key``. The bases of four-in-a-row boards of
    heights 2-7 are written out as constants, so that LLVM turns the division into a multiply
    and a shift (a 64-bit division is the slowest instruction of the kernels, and decoding a
    key is ``w`` of them one after the other); other bases divide at run time. The branch is
    the same for every key of a kernel call, so it is always predicted."""
    if base == 111:
        q = key // np.uint64(111)
        return q, key - q * np.uint64(111)
    if base == 59:
        q = key // np.uint64(59)
        return q, key - q * np.uint64(59)
    if base == 31:
        q = key // np.uint64(31)
        return q, key - q * np.uint64(31)
    if base == 207:
        q = key // np.uint64(207)
        return q, key - q * np.uint64(207)
    if base == 15:
        q = key // np.uint64(15)
        return q, key - q * np.uint64(15)
    if base == 7:
        q = key // np.uint64(7)
        return q, key - q * np.uint64(7)
    ub = np.uint64(base)
    q = key // ub
    return q, key - q * ub


@njit(cache=True, inline="always")
def _decode(key, w, base, codes, bits_a, bits_b, powers, stride):
    """Fill ``codes`` from ``key``; return (A bitboard, B bitboard, mirror reading v2)."""
    bb_a = np.uint64(0)
    bb_b = np.uint64(0)
    v2 = np.uint64(0)
    for c in range(w):
        key, d = _divmod_base(key, base)
        codes[c] = d
        bb_a |= bits_a[d] << np.uint64(c * stride)
        bb_b |= bits_b[d] << np.uint64(c * stride)
        v2 += d * powers[w - 1 - c]
    return bb_a, bb_b, v2


@njit(cache=True, inline="always")
def _is_terminal(ply, cells, bb_a, bb_b, stride, k):
    """0 = game goes on, 1 = last mover made k in a row, 2 = full board without a line."""
    last = bb_a if ply % 2 == 1 else bb_b  # A made the last move at odd plies
    if ply > 0 and _has_line(last, stride, k):
        return 1
    if ply == cells:
        return 2
    return 0


@njit(cache=True)
def classify(keys, w, stride, k, base, cells, bits_a, bits_b, powers, col_height,
             codes, plies, terminal, symmetric):
    """For each key: its column ``codes`` (canonical orientation, ``(n, w)``), ``plies``
    (chips on the board), ``terminal`` (the last mover has k in a row, or the board is full;
    :func:`_is_terminal`) and ``symmetric`` (its own mirror image)."""
    row = np.empty(w, np.int64)
    for i in range(keys.shape[0]):
        key = keys[i]
        bb_a, bb_b, v2 = _decode(key, w, base, row, bits_a, bits_b, powers, stride)
        ply = 0
        for c in range(w):
            codes[i, c] = row[c]
            ply += col_height[row[c]]
        plies[i] = ply
        terminal[i] = _is_terminal(ply, cells, bb_a, bb_b, stride, k) != 0
        symmetric[i] = v2 == key


@njit(cache=True)
def bitboards_of(codes, bits_a, bits_b, stride, a_out, b_out):
    """A's and B's bitboards of each row of column codes."""
    for i in range(codes.shape[0]):
        a = np.uint64(0)
        b = np.uint64(0)
        for c in range(codes.shape[1]):
            a |= bits_a[codes[i, c]] << np.uint64(c * stride)
            b |= bits_b[codes[i, c]] << np.uint64(c * stride)
        a_out[i] = a
        b_out[i] = b


@njit(cache=True)
def has_lines(bbs, stride, k, out):
    """``out[i]``: bitboard ``bbs[i]`` holds k chips in a row (:func:`_has_line`)."""
    for i in range(bbs.shape[0]):
        out[i] = _has_line(bbs[i], stride, k)
