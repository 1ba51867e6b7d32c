"""numba kernels of 3D gravity boards (``XxYxH``, :mod:`c4table.game.grid3d`): the kernels of
:mod:`c4table.pipeline.kernels.cpu` with lines given as bit masks (13 directions) and keys
canonical under the grid's symmetries instead of the mirror
(:func:`c4table.pipeline.kernels.kernelset.for_board` picks the kernel module of a board, so the
pipeline's stages call one name for both); the 2D kernels are untouched (their keys are Cadot's, their speed the measured one).

Design notes: ``docs/modules.md`` (``c4table.pipeline.kernels.cpu3d``).
"""
from __future__ import annotations


import numpy as np
from numba import njit

from c4table.game.grid3d import line_masks, symmetry_powers  # noqa: F401
from c4table.game.lines3d import (_decode, _has_line, _images, _is_terminal, board_tables,  # noqa: F401
                                  classify, has_lines)
from c4table.pipeline.kernels.cpu import A_WINS, B_WINS, _count, _decide, _score, unmove_tables

__all__ = ["board_tables", "unmove_tables", "expand", "resolve", "emit_parents",
           "classify", "has_lines"]


@njit(cache=True, inline="always")
def _moved_key(reads, delta, c, pows, sign):
    """Least reading after column ``c``'s code grows (``sign`` 1) or shrinks (-1) by ``delta``."""
    best = np.uint64(0)
    for s in range(pows.shape[0]):
        step = delta * pows[s, c]
        v = reads[s] + step if sign > 0 else reads[s] - step
        if s == 0 or v < best:
            best = v
    return best


@njit(cache=True)
def expand(keys, ply, n, stride, k, base, cells, child_code, bits_a, bits_b, pows, masks,
           out, stats, tail):
    """:func:`c4table.pipeline.kernels.cpu.expand` on a 3D board (``stats[1]``, ``stats[2]`` count
    ``2 - images`` per entry, see docs/modules.md). Its output is in no order: all of it is
    the tail (``tail[0]``)."""
    mover = ply % 2
    emit = out.shape[0] > 0
    codes = np.empty(n, np.int64)
    reads = np.empty(pows.shape[0], np.uint64)
    m = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        bb_a, bb_b = _decode(key, n, base, codes, bits_a, bits_b, pows, stride, reads)
        extra = 2 - _images(reads)
        term = _is_terminal(ply, cells, bb_a, bb_b, masks)
        stats[3] += 1
        stats[1] += extra
        if term != 0:
            stats[0] += 1
            stats[2] += extra
            continue
        if not emit:
            continue
        for c in range(n):
            nc = child_code[codes[c], mover]
            if nc < 0:
                continue
            out[m] = _moved_key(reads, np.uint64(nc - codes[c]), c, pows, 1)
            m += 1
    tail[0] = m
    return m


@njit(cache=True, inline="always")
def _emit(reads, codes, o, ply, n, pows, parent_code, top_owner, out, m):
    last = 0 if ply % 2 == 1 else 1
    parent_win_bits = A_WINS if (ply - 1) % 2 == 0 else B_WINS
    score = np.uint64(_score(o, parent_win_bits))
    for c in range(n):
        code = codes[c]
        if top_owner[code] != last:
            continue
        pk = _moved_key(reads, np.uint64(code - parent_code[code]), c, pows, -1)
        out[m] = (pk << np.uint64(8)) | score
        m += 1
    return m


@njit(cache=True)
def resolve(keys, msgs, ply, n, stride, k, base, cells, child_code, bits_a, bits_b, pows, masks,
            parent_code, top_owner, out, emitted, stats, tail):
    """:func:`c4table.pipeline.kernels.cpu.resolve` on a 3D board (``stats[2*cls+1]`` counts
    ``2 - images`` per entry; the messages in no order: ``tail[0]`` is all of them)."""
    emit = emitted.shape[0] > 0
    codes = np.empty(n, np.int64)
    reads = np.empty(pows.shape[0], np.uint64)
    nm = msgs.shape[0]
    p = 0
    ne = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        bb_a, bb_b = _decode(key, n, base, codes, bits_a, bits_b, pows, stride, reads)
        o, p = _decide(_is_terminal(ply, cells, bb_a, bb_b, masks), ply, msgs, nm, p, key)
        if o < 0:
            return i, ne
        out[i] = o
        _count(stats, o, 2 - _images(reads))
        if emit:
            ne = _emit(reads, codes, o, ply, n, pows, parent_code, top_owner, emitted, ne)
    tail[0] = ne
    return -1, ne


@njit(cache=True)
def emit_parents(keys, outcomes, ply, n, stride, k, base, cells, child_code, bits_a, bits_b,
                 pows, masks, parent_code, top_owner, emitted, tail):
    """:func:`c4table.pipeline.kernels.cpu.emit_parents` on a 3D board (in no order: ``tail[0]``
    is all of them)."""
    codes = np.empty(n, np.int64)
    reads = np.empty(pows.shape[0], np.uint64)
    ne = 0
    for i in range(keys.shape[0]):
        _decode(keys[i], n, base, codes, bits_a, bits_b, pows, stride, reads)
        ne = _emit(reads, codes, outcomes[i], ply, n, pows, parent_code, top_owner, emitted, ne)
    tail[0] = ne
    return ne


