"""The expand, resolve and emit kernels of the GPU path, written once: each is a plain
``@njit`` body over the keys ``start, start + step, ...`` of its arrays, which a CUDA kernel
calls with ``start = cuda.grid(1)`` and ``step = cuda.gridsize(1)`` (numba compiles an
``@njit`` function called from a CUDA kernel as a device function), and which numba-cuda's
simulator (``NUMBA_ENABLE_CUDASIM=1``) runs compiled on the CPU.

Design notes: ``docs/modules.md`` (``c4table.pipeline.kernels.gpu.kernels``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from c4table.game.lines import _divmod_base, _is_terminal
from c4table.pipeline.kernels.cpu import A_WINS, B_WINS, DRAW, NO_KEY, _outcome, _score


@njit(cache=True, inline="always")
def _decode_bits(key, w, base, bits_a, bits_b, powers, stride):
    """(A bitboard, B bitboard, mirror reading v2) of ``key``, without a codes array (a CUDA
    thread has no heap): :func:`c4table.game.lines._decode` less its ``codes``."""
    bb_a = np.uint64(0)
    bb_b = np.uint64(0)
    v2 = np.uint64(0)
    q = key
    for c in range(w):
        q, d = _divmod_base(q, base)
        bb_a |= bits_a[d] << np.uint64(c * stride)
        bb_b |= bits_b[d] << np.uint64(c * stride)
        v2 += d * powers[w - 1 - c]
    return bb_a, bb_b, v2


@njit(cache=True)
def expand_range(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
                 out, stats, start, step):
    """:func:`c4table.pipeline.kernels.cpu.expand` on keys ``start::step``: the children of key ``i``
    at ``out[i*w : i*w + w]`` (:data:`NO_KEY` for a full column or a terminal position), the
    counts in ``stats[start]`` (terminal, symmetric, symmetric terminal, entries). An empty
    ``out`` means: count only."""
    mover = ply % 2
    emit = out.shape[0] > 0
    for i in range(start, keys.shape[0], step):
        key = keys[i]
        bb_a, bb_b, v2 = _decode_bits(key, w, base, bits_a, bits_b, powers, stride)
        sym = v2 == key
        term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
        stats[start, 3] += 1
        if sym:
            stats[start, 1] += 1
        if term != 0:
            stats[start, 0] += 1
            if sym:
                stats[start, 2] += 1
        if not emit:
            continue
        q = key
        for c in range(w):
            q, digit = _divmod_base(q, base)
            d = np.int64(digit)   # int64 - uint64 would be float64 in numba
            nc = child_code[d, mover]
            if term != 0 or nc < 0:
                out[i * w + c] = NO_KEY
                continue
            delta = np.uint64(nc - d)
            c1 = key + delta * powers[c]
            c2 = v2 + delta * powers[w - 1 - c]
            out[i * w + c] = c1 if c1 < c2 else c2


@njit(cache=True, inline="always")
def _emit_fixed(key, v2, o, ply, w, base, powers, parent_code, top_owner, out, i):
    """:func:`c4table.pipeline.kernels.cpu._emit` into ``out[i*w : i*w + w]``, :data:`NO_KEY` where
    a column sends nothing."""
    last = 0 if ply % 2 == 1 else 1
    parent_win_bits = A_WINS if (ply - 1) % 2 == 0 else B_WINS
    score = np.uint64(_score(o, parent_win_bits))
    q = key
    for c in range(w):
        q, digit = _divmod_base(q, base)
        code = np.int64(digit)
        if top_owner[code] != last:
            out[i * w + c] = NO_KEY
            continue
        delta = np.uint64(code - parent_code[code])
        p1 = key - delta * powers[c]
        p2 = v2 - delta * powers[w - 1 - c]
        pk = p1 if p1 < p2 else p2
        out[i * w + c] = (pk << np.uint64(8)) | score


@njit(cache=True, inline="always")
def _first_at_least(msgs, x):
    """First index of sorted ``msgs`` whose value is >= ``x`` (binary search)."""
    lo = 0
    hi = msgs.shape[0]
    while lo < hi:
        mid = (lo + hi) // 2
        if msgs[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def resolve_range(keys, msgs, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                  powers, parent_code, top_owner, out, emitted, stats, bad, start, step):
    """:func:`c4table.pipeline.kernels.cpu.resolve` on keys ``start::step``: outcome bytes in
    ``out``, messages to the parents at ``emitted[i*w : i*w + w]`` (unless ``emitted`` is
    empty), counts in ``stats[start]`` (as resolve's ``stats``), and in ``bad[start]`` the first
    index of this thread's keys that no message names (-1 if none)."""
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    lose_bits = B_WINS if mover == 0 else A_WINS
    emit = emitted.shape[0] > 0
    eight = np.uint64(8)
    for i in range(start, keys.shape[0], step):
        key = keys[i]
        bb_a, bb_b, v2 = _decode_bits(key, w, base, bits_a, bits_b, powers, stride)
        term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
        if term == 1:
            o = A_WINS if ply % 2 == 1 else B_WINS
        elif term == 2:
            o = DRAW
        else:
            hi = _first_at_least(msgs, ((key << eight) | np.uint64(0xFF)) + np.uint64(1)) \
                if key < (NO_KEY >> eight) else msgs.shape[0]
            if hi == 0 or (msgs[hi - 1] >> eight) != key:
                if bad[start] < 0:
                    bad[start] = i
                continue
            o = _outcome(np.int64(msgs[hi - 1] & np.uint64(0xFF)), win_bits, lose_bits)
        out[i] = o
        cls_idx = o >> 6
        stats[start, 2 * cls_idx] += 1
        if v2 == key:
            stats[start, 2 * cls_idx + 1] += 1
        if emit:
            _emit_fixed(key, v2, o, ply, w, base, powers, parent_code, top_owner, emitted, i)


@njit(cache=True)
def emit_range(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
               powers, parent_code, top_owner, emitted, start, step):
    """:func:`c4table.pipeline.kernels.cpu.emit_parents` on keys ``start::step``, at fixed places."""
    for i in range(start, keys.shape[0], step):
        key = keys[i]
        _, _, v2 = _decode_bits(key, w, base, bits_a, bits_b, powers, stride)
        _emit_fixed(key, v2, outcomes[i], ply, w, base, powers, parent_code, top_owner,
                    emitted, i)
