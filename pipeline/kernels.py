"""numba kernels: the rules of :mod:`c4table.rules` applied to whole arrays of position keys.

Each kernel works on sorted uint64 keys of one generation (ply) and the per-board tables of
:class:`c4table.board.Board` (packed by :func:`board_tables`). Bit tricks used here:

* **Key -> column codes**: a key is a ``w``-digit base-``B`` number, column 0 the least
  significant digit; ``w`` divmods recover the codes of its canonical orientation.
* **Column codes -> bitboards**: ``col_bits_a[code]`` / ``col_bits_b[code]`` hold each column's
  chips (bottom = bit 0), shifted into place by ``c * (h+1)``.
* **k in a row**: with the sentinel row, ``bb & bb>>s & bb>>2s & ... & bb>>(k-1)s`` is non-zero
  iff some line of ``k`` runs in direction ``s`` (1 vertical, ``h+1`` horizontal, ``h`` and
  ``h+2`` diagonal): see :mod:`c4table.board`.
* **Child keys without re-encoding**: dropping a chip in column ``c`` changes only digit ``c``
  (from ``code`` to ``child_code[code, player]``), so ``v1' = v1 + delta * B**c`` and the mirror
  reading ``v2' = v2 + delta * B**(w-1-c)``; the child's key is ``min(v1', v2')``. Both readings
  only grow, so a child's key is always larger than its parent's.
* **Packed sort for joins**: child queries are packed as ``key << idx_bits | slot`` so one
  plain uint64 sort orders them by key while remembering where each answer goes (``argsort``
  is ~20x slower).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from c4table.board import Board

# Outcome byte classes (FORMAT.md): top two bits.
DRAW, A_WINS, B_WINS = 0x00, 0x40, 0x80
NO_CHILD = 0xFF  # marker in the child-result buffer: column not playable


def board_tables(board: Board) -> tuple:
    """The arrays and scalars every kernel takes, in order."""
    return (board.width, board.stride, board.k, board.base, board.cells,
            board.child_code, board.col_bits_a, board.col_bits_b, board.powers)


def key_bits(board: Board) -> int:
    """Bits needed for any key of ``board`` (keys are ``< B**w``)."""
    return max(1, (board.key_limit - 1).bit_length())


@njit(cache=True, inline="always")
def _has_line(bb, stride, k):
    """True if bitboard ``bb`` holds ``k`` chips in a row in any direction."""
    for s in (1, stride, stride - 1, stride + 1):
        m = bb
        for i in range(1, k):
            m &= bb >> np.uint64(i * s)
        if m != 0:
            return True
    return False


@njit(cache=True, inline="always")
def _decode(key, w, base, codes, bits_a, bits_b, powers, stride):
    """Fill ``codes`` from ``key``; return (A bitboard, B bitboard, mirror reading v2)."""
    bb_a = np.uint64(0)
    bb_b = np.uint64(0)
    v2 = np.uint64(0)
    ub = np.uint64(base)
    for c in range(w):
        d = key % ub
        key = key // ub
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


@njit(cache=True, inline="always")
def _child_key(key, v2, code, new_code, c, w, powers):
    """Canonical key of the child whose column ``c`` changes from ``code`` to ``new_code``:
    only digit ``c`` of the reading ``v1 = key`` and digit ``w-1-c`` of the mirror reading
    ``v2`` change, by the same amount."""
    delta = np.uint64(new_code - code)
    c1 = key + delta * powers[c]
    c2 = v2 + delta * powers[w - 1 - c]
    return c1 if c1 < c2 else c2


@njit(cache=True)
def expand(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
           out, stats):
    """Write the canonical child keys of the non-terminal positions in ``keys`` (generation
    ``ply``) to ``out`` (length >= ``len(keys) * w``); return how many were written.

    ``stats`` (int64[4]) accumulates: terminal entries, symmetric entries, symmetric
    terminal entries, entries. An empty ``out`` means: count only, write no children."""
    mover = ply % 2  # 0: A to move
    emit = out.shape[0] > 0
    codes = np.empty(w, np.int64)
    n = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        bb_a, bb_b, v2 = _decode(key, w, base, codes, bits_a, bits_b, powers, stride)
        sym = v2 == key
        term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
        stats[3] += 1
        if sym:
            stats[1] += 1
        if term != 0:
            stats[0] += 1
            if sym:
                stats[2] += 1
            continue
        if not emit:
            continue
        for c in range(w):
            nc = child_code[codes[c], mover]
            if nc < 0:
                continue
            out[n] = _child_key(key, v2, codes[c], nc, c, w, powers)
            n += 1
    return n


@njit(cache=True)
def dedup_sorted(x):
    """Number of distinct values of sorted ``x``, compacted in place at its front."""
    n = x.shape[0]
    if n == 0:
        return 0
    m = 1
    for i in range(1, n):
        if x[i] != x[m - 1]:
            x[m] = x[i]
            m += 1
    return m


@njit(cache=True, inline="always")
def _gallop(arr, n, start, key):
    """First index >= start with arr[idx] >= key (arr sorted, arr[start-1] < key)."""
    if start >= n or arr[start] >= key:
        return start
    lo = start
    step = 1
    hi = lo + 1
    while hi < n and arr[hi] < key:
        lo = hi
        step *= 2
        hi = lo + step
    if hi > n:
        hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if arr[mid] < key:
            lo = mid
        else:
            hi = mid
    return hi


@njit(cache=True)
def annotate(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
             next_keys, next_out, idx_bits, chunk_parents, out, stats):
    """Outcome byte of every position in ``keys`` (generation ``ply``, sorted) from its
    children's entries in the next generation (``next_keys`` sorted, ``next_out`` their bytes).

    Rules (FORMAT.md "Outcome byte"): terminal positions are decided on the board with d = 0;
    otherwise each child's d counts +1, the mover takes its fastest win, else a draw, else its
    slowest loss. Children are looked up in chunks: packed ``child_key << idx_bits | slot``,
    sorted, then merge-joined with galloping against ``next_keys``.

    ``stats`` (int64[6]): for classes draw, A, B (index 0, 1, 2), entries at ``2*cls`` and
    symmetric entries at ``2*cls + 1``. Returns -1 on success, else the index of a position
    whose child is missing from the next generation (a corrupt or foreign input)."""
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    lose_bits = B_WINS if mover == 0 else A_WINS
    n = keys.shape[0]
    codes = np.empty(w, np.int64)
    slots = chunk_parents * w
    q = np.empty(slots, np.uint64)
    child = np.empty(slots, np.uint8)
    sym = np.empty(chunk_parents, np.bool_)
    slot_mask = (np.uint64(1) << np.uint64(idx_bits)) - np.uint64(1)
    shift = np.uint64(idx_bits)
    nn = next_keys.shape[0]
    for s in range(0, n, chunk_parents):
        e = min(n, s + chunk_parents)
        m = 0
        child[: (e - s) * w] = NO_CHILD
        for i in range(s, e):
            key = keys[i]
            bb_a, bb_b, v2 = _decode(key, w, base, codes, bits_a, bits_b, powers, stride)
            sym[i - s] = v2 == key
            term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
            if term == 1:
                out[i] = A_WINS if ply % 2 == 1 else B_WINS
                continue
            if term == 2:
                out[i] = DRAW
                continue
            out[i] = NO_CHILD  # decided below
            for c in range(w):
                nc = child_code[codes[c], mover]
                if nc < 0:
                    continue
                ck = _child_key(key, v2, codes[c], nc, c, w, powers)
                q[m] = (ck << shift) | np.uint64((i - s) * w + c)
                m += 1
        qs = np.sort(q[:m])
        p = 0
        for j in range(m):
            ck = qs[j] >> shift
            p = _gallop(next_keys, nn, p, ck)
            if p >= nn or next_keys[p] != ck:
                return s + np.int64(qs[j] & slot_mask) // w
            child[np.int64(qs[j] & slot_mask)] = next_out[p]
        for i in range(s, e):
            if out[i] == NO_CHILD:
                best_win = 64
                has_draw = False
                draw_d = 0
                worst_loss = -1
                base_slot = (i - s) * w
                for c in range(w):
                    r = child[base_slot + c]
                    if r == NO_CHILD:
                        continue
                    cls = r & 0xC0
                    d = (r & 0x3F) + 1
                    if cls == win_bits:
                        if d < best_win:
                            best_win = d
                    elif cls == DRAW:
                        has_draw = True
                        draw_d = d
                    elif d > worst_loss:
                        worst_loss = d
                if best_win < 64:
                    out[i] = win_bits | best_win
                elif has_draw:
                    out[i] = draw_d
                else:
                    out[i] = lose_bits | worst_loss
            cls_idx = out[i] >> 6  # 0 draw, 1 A, 2 B
            stats[2 * cls_idx] += 1
            if sym[i - s]:
                stats[2 * cls_idx + 1] += 1
    return -1


@njit(cache=True)
def pack_entries(keys, outcomes, out):
    """``out[i] = keys[i] << 8 | outcomes[i]``: one sortable word per table entry."""
    for i in range(keys.shape[0]):
        out[i] = (keys[i] << np.uint64(8)) | np.uint64(outcomes[i])
