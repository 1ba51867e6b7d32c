"""numba kernels of the build: the rules of :mod:`c4table.game.rules` applied to whole arrays of
position keys (the decoding and line tests they share with the readers live in
:mod:`c4table.game.lines`). ``tests/test_rules.py`` checks them against the plain rules on
every position of small boards.

Design notes: ``docs/modules.md`` (``c4table.pipeline.kernels.cpu``).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import njit

from c4table.game.board import Board
from c4table.game.lines import _decode, _divmod_base, _has_line, _is_terminal  # noqa: F401

# Outcome byte classes (FORMAT.md): top two bits.
DRAW, A_WINS, B_WINS = 0x00, 0x40, 0x80
NO_CHILD = 0xFF  # marker in the child-result buffer: column not playable
NO_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)   # no quotient of a decoded key is this (_decode_near)


@lru_cache(maxsize=16)
def board_tables(board: Board) -> tuple:
    """The arrays and scalars every kernel takes, in order (computed once per board and
    process: every task rebuilds its :class:`Board` from ``board.spec``)."""
    return (board.width, board.stride, board.k, board.base, board.cells,
            board.child_code, board.col_bits_a, board.col_bits_b, board.powers)


def key_bits(board: Board) -> int:
    """Bits needed for any key of ``board`` (keys are ``< B**w``)."""
    return max(1, (board.key_limit - 1).bit_length())


@njit(cache=True)
def low_digits(keys, w, base):
    """How many low digits (columns) each key of sorted ``keys`` is decoded by on its own in
    :func:`_decode_near`; the other columns are decoded once per run of keys that share them.
    A key costs the low digits, plus the high ones whenever they change: about ``gap / base**L``
    of the keys for an average gap ``gap`` between neighbours, so ``L`` minimizes
    ``L + (w - L) * min(1, gap / base**L)``. Only the cost depends on it, never a result.

    >>> low_digits(np.arange(0, 10**6, 10, dtype=np.uint64), 5, 111)
    1
    """
    n = keys.shape[0]
    if n < 2:
        return w
    gap = (np.float64(keys[n - 1]) - np.float64(keys[0])) / (n - 1)
    best = w
    best_cost = np.float64(w)
    span = np.float64(1.0)
    for low in range(1, w):
        span *= base
        cost = low + (w - low) * min(1.0, gap / span)
        if cost < best_cost:
            best_cost = cost
            best = low
    return best


@njit(cache=True, inline="always")
def _decode_near(key, low, w, base, codes, bits_a, bits_b, powers, stride, hq, ha, hb, hv):
    """:func:`_decode` of ``key`` when the keys decoded before it in the same call are near it:
    its ``low`` least significant digits (columns ``0 .. low-1``) are decoded each time, the
    other columns only when they differ from those of the key decoded before. The caller
    carries them from key to key: ``hq`` the quotient ``key // base**low`` they were decoded
    from (``2**64 - 1`` before the first key), ``ha``, ``hb`` their A and B bits, ``hv`` their
    part of the mirror reading; ``codes[low:]`` keeps their codes. Returns (A bitboard, B
    bitboard, mirror reading v2, hq, ha, hb, hv). Sorted keys of one generation share their
    high digits with many neighbours: on 5x6's ply 20, ``expand`` 21.3 -> 14 ns per key."""
    bb_a = np.uint64(0)
    bb_b = np.uint64(0)
    v2 = np.uint64(0)
    q = key
    for c in range(low):
        q, d = _divmod_base(q, base)
        codes[c] = d
        bb_a |= bits_a[d] << np.uint64(c * stride)
        bb_b |= bits_b[d] << np.uint64(c * stride)
        v2 += d * powers[w - 1 - c]
    if q != hq:
        hq = q
        ha = np.uint64(0)
        hb = np.uint64(0)
        hv = np.uint64(0)
        for c in range(low, w):
            q, d = _divmod_base(q, base)
            codes[c] = d
            ha |= bits_a[d] << np.uint64(c * stride)
            hb |= bits_b[d] << np.uint64(c * stride)
            hv += d * powers[w - 1 - c]
    return bb_a | ha, bb_b | hb, v2 + hv, hq, ha, hb, hv


@njit(cache=True, inline="always")
def _child_key(key, v2, code, new_code, c, w, powers):
    """The child whose column ``c`` changes from ``code`` to ``new_code``, read both ways: only
    digit ``c`` of the reading ``v1 = key`` and digit ``w-1-c`` of the mirror reading ``v2``
    change, by the same amount. Its key is the smaller."""
    delta = np.uint64(new_code - code)
    return key + delta * powers[c], v2 + delta * powers[w - 1 - c]


@njit(cache=True)
def _close_runs(out, n, fill, tail):
    """Close the *runs layout* of ``out``: return how many values it holds, moved to its front,
    and set ``tail[0]`` to how many of them, at the end, are in no order.

    A kernel called on ``n`` sorted keys stores each value it makes through column ``c`` (a
    child, or a parent's message) in column ``c``'s region ``out[c*n : (c+1)*n]``: from its
    front when the key's own reading gave it (``fill[c]`` so far), else from its back
    (``fill[w + c]``). A column code and the code after a chip is dropped on it (or taken off it)
    keep their order, so the values through one column of sorted keys, read unmirrored, come
    out sorted: each region's front is a sorted run (its back, the mirrored ones, is in no
    order). The fronts are packed first, one sorted run per column, then the backs together
    (through a copy: 4-8% of the values), the *tail* that the caller sorts apart
    (``extsort.sort_runs``). (The stores are written out in each kernel: a helper taking the
    arrays costs a reference count per value, 2-3x the kernel's time.)"""
    w = fill.shape[0] // 2
    nb = 0
    for c in range(w):
        nb += fill[w + c]
    backs = np.empty(nb, np.uint64)
    j = 0
    for c in range(w):
        s = (c + 1) * n - fill[w + c]
        for i in range(fill[w + c]):
            backs[j] = out[s + i]
            j += 1
    d = 0
    for c in range(w):   # in place: no front moves up
        s = c * n
        for i in range(fill[c]):
            out[d] = out[s + i]
            d += 1
    for i in range(nb):
        out[d + i] = backs[i]
    tail[0] = nb
    return d + nb


@njit(cache=True)
def expand(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
           out, stats, tail):
    """Write the canonical child keys of the non-terminal positions in ``keys`` (generation
    ``ply``) to ``out`` (length >= ``len(keys) * w``), as sorted runs and an unordered tail of
    ``tail[0]`` values (:func:`_close_runs`, with repeats); return how many were written.

    ``stats`` (int64[4]) accumulates: terminal entries, symmetric entries, symmetric
    terminal entries, entries. An empty ``out`` means: count only, write no children."""
    mover = ply % 2  # 0: A to move
    emit = out.shape[0] > 0
    codes = np.empty(w, np.int64)
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)   # see _decode_near
    nk = keys.shape[0]
    fill = np.zeros(2 * w, np.int64)   # the runs layout (_close_runs)
    for i in range(nk):
        key = keys[i]
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
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
            c1, c2 = _child_key(key, v2, codes[c], nc, c, w, powers)
            if c1 <= c2:   # the runs layout (_close_runs)
                out[c * nk + fill[c]] = c1
                fill[c] += 1
            else:
                fill[w + c] += 1
                out[(c + 1) * nk - fill[w + c]] = c2
    return _close_runs(out, nk, fill, tail) if emit else 0


@njit(cache=True)
def dedup_sorted(x):
    """Number of distinct values of sorted ``x``, compacted in place at its front."""
    n = x.shape[0]
    if n == 0:
        return 0
    # branch-free: every value is stored at the front and kept by advancing ``m`` when it
    # differs from the one before (half the children of a 5x6 shard repeat: a branch there is
    # mispredicted half the time; 1.54 -> 0.37 ns per value)
    last = x[0]
    m = 1
    for i in range(1, n):
        v = x[i]
        x[m] = v
        m += v != last
        last = v
    return m


@njit(cache=True)
def merge_two(a, b, out, unique):
    """Merge sorted ``a`` and ``b`` into ``out`` (length >= both); return how many were
    written. With ``unique`` (each input without repeats) a value in both is written once.
    Linear and branch-light: several times faster than sorting the concatenation."""
    i = 0
    j = 0
    n = 0
    na = a.shape[0]
    nb = b.shape[0]
    while i < na and j < nb:
        x = a[i]
        y = b[j]
        if y < x:
            out[n] = y
            j += 1
        else:
            out[n] = x
            i += 1
            if unique and x == y:
                j += 1
        n += 1
    while i < na:
        out[n] = a[i]
        i += 1
        n += 1
    while j < nb:
        out[n] = b[j]
        j += 1
        n += 1
    return n


@njit(cache=True)
def take_below(x, cur, ends, bound, out):
    """Append to ``out``, run after run, the values ``< bound`` at the front of each sorted run
    ``x[cur[r]:ends[r]]`` and advance ``cur[r]`` past them; return how many. Called with
    increasing bounds, it cuts runs into consecutive slices of the same key range."""
    n = 0
    for r in range(cur.shape[0]):
        i = cur[r]
        e = ends[r]
        while i < e and x[i] < bound:
            out[n] = x[i]
            n += 1
            i += 1
        cur[r] = i
    return n


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


@lru_cache(maxsize=16)
def unmove_tables(board: Board) -> tuple[np.ndarray, np.ndarray]:
    """``(parent_code, top_owner)`` by column code (:attr:`Board.parent_code`,
    :attr:`Board.top_owner`): the code with the top chip removed and who owns that chip."""
    return board.parent_code, board.top_owner


@njit(cache=True, inline="always")
def _score(o, parent_win_bits):
    """Child outcome byte ``o`` as a score for the parent's mover: larger is better. A win in
    ``d`` plies scores ``255 - d`` (192..254), a draw ``128 + d``, a loss ``d`` (1..63), where
    ``d`` counts the parent's move (child distance + 1). The max over a parent's children is
    its outcome (fastest win, else draw, else slowest loss)."""
    cls = o & 0xC0
    d = (o & 0x3F) + 1
    if cls == parent_win_bits:
        return 255 - d
    if cls == DRAW:
        return 128 + d
    return d


@njit(cache=True, inline="always")
def _outcome(score, win_bits, lose_bits):
    """The outcome byte of a position whose best child scores ``score`` (see :func:`_score`)."""
    if score >= 192:
        return win_bits | (255 - score)
    if score >= 128:
        return DRAW | (score - 128)
    return lose_bits | score


@njit(cache=True, inline="always")
def _message_outcome(msgs, nm, p, key, win_bits, lose_bits):
    """The outcome byte of the non-terminal position ``key`` from its children's messages in the
    sorted ``msgs`` (``parent_key << 8 | score``; searched from index ``p`` on, keys come in
    order), and the index after its messages. Several children may send the same score to the
    same parent: the best is the largest, the last of its run. The outcome is -1 when no message
    names ``key`` (its messages are lost)."""
    eight = np.uint64(8)
    p = _gallop(msgs, nm, p, key << eight)
    if p >= nm or (msgs[p] >> eight) != key:
        return -1, p
    while p + 1 < nm and (msgs[p + 1] >> eight) == key:
        p += 1
    return _outcome(np.int64(msgs[p] & np.uint64(0xFF)), win_bits, lose_bits), p + 1


@njit(cache=True, inline="always")
def _decide(term, ply, msgs, nm, p, key):
    """The outcome byte of position ``key`` of generation ``ply`` whose terminal test gave
    ``term`` (1: the last mover has a line, 2: full board, 0: neither), and where its messages
    end in ``msgs``: one step of :func:`resolve`'s loop, which the 3D kernels'
    (:func:`c4table.pipeline.kernels.cpu3d.resolve`) share. -1 when its messages are lost."""
    if term == 1:
        return np.int64(A_WINS if ply % 2 == 1 else B_WINS), p
    if term == 2:
        return np.int64(DRAW), p
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    lose_bits = B_WINS if mover == 0 else A_WINS
    return _message_outcome(msgs, nm, p, key, win_bits, lose_bits)


@njit(cache=True, inline="always")
def _count(stats, o, symmetric):
    """Count outcome ``o`` in :func:`resolve`'s ``stats``: one entry of its class and
    ``symmetric`` (1 for a symmetric 2D entry; ``2 - images`` on a 3D board) symmetric ones."""
    cls_idx = o >> 6  # 0 draw, 1 A, 2 B
    stats[2 * cls_idx] += 1
    stats[2 * cls_idx + 1] += symmetric


@njit(cache=True, inline="always")
def _mirror_pairs(codes, w):
    """How many column pairs ``(j, w-1-j)``, from the outside in, may change which reading of
    a position is the smaller when one chip is added or taken: up to and including the first
    pair whose codes differ (every pair of a symmetric position). The readings are compared
    digit by digit from column ``w-1`` (own) against column ``0`` (mirror) inwards, so a chip
    in a column past that pair leaves the first difference, and the order, as they were: only
    the columns ``c`` with ``min(c, w-1-c) < pairs`` can give a child or parent read through
    the mirror. Most positions differ in their outer pair: two columns instead of ``w``."""
    j = 0
    while j < w // 2 and codes[j] == codes[w - 1 - j]:
        j += 1
    return j + 1


@njit(cache=True, inline="always")
def _emit(key, v2, codes, o, ply, w, powers, parent_code, top_owner, out, nk, fill, mirrored_only):
    """Write one message ``parent_key << 8 | score`` per parent of the position (``key``, mirror
    reading ``v2``, column ``codes``, outcome ``o``, generation ``ply``) to the runs of ``out``
    (:func:`_close_runs`, ``nk`` keys): each column whose top chip is the last mover's, with that
    chip taken back. Parents that are not in generation ``ply - 1`` (unreachable, or already
    decided) are dropped by the join. With ``mirrored_only``, only the messages to parents
    reached through the mirror reading (the tail): the ones a parent cannot pull
    (:func:`pull_resolve`); past the column pairs of :func:`_mirror_pairs` there are none."""
    last = 0 if ply % 2 == 1 else 1  # A made the last move at odd plies
    parent_win_bits = A_WINS if (ply - 1) % 2 == 0 else B_WINS
    score = np.uint64(_score(o, parent_win_bits))
    pairs = _mirror_pairs(codes, w) if mirrored_only else w
    for c in range(w):
        if c >= pairs and c < w - pairs:
            continue
        code = codes[c]
        if top_owner[code] != last:
            continue
        delta = np.uint64(code - parent_code[code])
        p1 = key - delta * powers[c]
        p2 = v2 - delta * powers[w - 1 - c]
        if p1 <= p2:   # the runs layout (_close_runs)
            if mirrored_only:
                continue
            out[c * nk + fill[c]] = (p1 << np.uint64(8)) | score
            fill[c] += 1
        else:
            fill[w + c] += 1
            out[(c + 1) * nk - fill[w + c]] = (p2 << np.uint64(8)) | score


@njit(cache=True)
def resolve(keys, msgs, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
            parent_code, top_owner, out, emitted, stats, tail):
    """Outcome byte of every position in ``keys`` (generation ``ply``, sorted) from the
    messages its children sent (``msgs``: sorted ``key << 8 | score`` words, so each key's best
    score comes last; the rules: FORMAT.md "Outcome byte", :func:`_score`), and the messages
    for generation ``ply - 1`` written to ``emitted`` as sorted runs and an unordered tail of
    ``tail[0]`` values (:func:`_close_runs`).
    ``stats`` (int64[6]) counts entries and symmetric entries per class. Returns ``(bad,
    n_emitted)``: ``bad`` is -1, or the index of a non-terminal position no child sent a
    message to (its children are missing from the next generation: a corrupt or foreign input)."""
    emit = emitted.shape[0] > 0
    codes = np.empty(w, np.int64)
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)   # see _decode_near
    nm = msgs.shape[0]
    p = 0
    nk = keys.shape[0]
    fill = np.zeros(2 * w, np.int64)   # the runs layout (_close_runs)
    for i in range(nk):
        key = keys[i]
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
        o, p = _decide(_is_terminal(ply, cells, bb_a, bb_b, stride, k), ply, msgs, nm, p, key)
        if o < 0:
            return i, 0
        out[i] = o
        _count(stats, o, 1 if v2 == key else 0)
        if emit:
            _emit(key, v2, codes, o, ply, w, powers, parent_code, top_owner, emitted, nk, fill, False)
    return -1, _close_runs(emitted, nk, fill, tail) if emit else 0


@njit(cache=True)
def emit_parents(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                 powers, parent_code, top_owner, emitted, tail):
    """The messages of annotated generation ``ply`` (``keys``, their ``outcomes``) to its
    parents, as :func:`resolve` writes them (sorted runs, ``tail[0]`` unordered values at the
    end); returns how many. Used to rebuild lost messages
    from a finished backward shard."""
    return _emit_all(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                     powers, parent_code, top_owner, emitted, tail, False)


@njit(cache=True)
def emit_mirrored(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                  powers, parent_code, top_owner, emitted, tail):
    """:func:`emit_parents` of the messages :func:`pull_resolve` sends: only those to parents
    reached through the mirror reading, all in the tail."""
    return _emit_all(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                     powers, parent_code, top_owner, emitted, tail, True)


@njit(cache=True)
def _emit_all(keys, outcomes, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
              powers, parent_code, top_owner, emitted, tail, mirrored_only):
    codes = np.empty(w, np.int64)
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)   # see _decode_near
    nk = keys.shape[0]
    fill = np.zeros(2 * w, np.int64)   # the runs layout (_close_runs)
    for i in range(nk):
        key = keys[i]
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
        _emit(key, v2, codes, outcomes[i], ply, w, powers, parent_code, top_owner, emitted, nk, fill,
              mirrored_only)
    return _close_runs(emitted, nk, fill, tail)


@njit(cache=True, inline="always")
def _pulled_children(key, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
                     codes, kids):
    """``kids[c]``: the child of ``key`` (generation ``ply``) made through column ``c`` when its
    own reading gives it, the one :func:`pull_resolve` looks up, else ``NO_KEY``. Returns
    False, and leaves ``kids`` alone, when ``key`` is terminal (no children)."""
    bb_a, bb_b, v2 = _decode(key, w, base, codes, bits_a, bits_b, powers, stride)
    if _is_terminal(ply, cells, bb_a, bb_b, stride, k) != 0:
        return False
    mover = ply % 2
    for c in range(w):
        kids[c] = NO_KEY
        nc = child_code[codes[c], mover]
        if nc >= 0:
            c1, c2 = _child_key(key, v2, codes[c], nc, c, w, powers)
            if c1 <= c2:
                kids[c] = c1
    return True


@njit(cache=True)
def pulled_children(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers,
                    out):
    """``out[i, c]``: the child of ``keys[i]`` (generation ``ply``) that :func:`pull_resolve`
    looks up through column ``c`` (:func:`_pulled_children`), ``NO_KEY`` where none."""
    codes = np.empty(w, np.int64)
    kids = np.empty(w, np.uint64)
    for i in range(keys.shape[0]):
        if not _pulled_children(keys[i], ply, w, stride, k, base, cells, child_code, bits_a,
                                bits_b, powers, codes, kids):
            for c in range(w):
                out[i, c] = NO_KEY
            continue
        for c in range(w):
            out[i, c] = kids[c]


@njit(cache=True)
def column_windows(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers, lo, hi):
    """The key window each column's pulled children of ``keys`` (generation ``ply``, sorted)
    fall in: ``lo[c]``, ``hi[c]`` the smallest and largest child made through column ``c`` and
    read in its own reading (:func:`pull_resolve`; ``lo[c] > hi[c]``: none). Through one column
    they come in key order, so the first key that has one gives ``lo`` and the last ``hi``: a
    scan from the front stops once every column has its ``lo``, then one from the back finds
    the ``hi`` of each. A column without any makes the front scan read every key; it decodes
    keys as :func:`pull_resolve` does (:func:`_decode_near`) and makes only the children of
    the columns still looked for, so such a scan costs about a decoding and a terminal test
    per key (the outer columns of a stretch of the key space whose children there all read
    through the mirror have none)."""
    want = np.ones(w, np.bool_)
    for c in range(w):
        lo[c] = NO_KEY
        hi[c] = np.uint64(0)
    nk = keys.shape[0]
    _window_scan(keys, 0, nk, 1, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                 powers, want, lo)
    for c in range(w):
        want[c] = lo[c] != NO_KEY
    _window_scan(keys, nk - 1, -1, -1, ply, w, stride, k, base, cells, child_code, bits_a,
                 bits_b, powers, want, hi)


@njit(cache=True)
def _window_scan(keys, start, stop, step, ply, w, stride, k, base, cells, child_code, bits_a,
                 bits_b, powers, want, found):
    """One scan of :func:`column_windows`, over ``keys[start:stop:step]``: ``found[c]`` the
    first pulled child through each column ``c`` with ``want[c]`` (cleared as it is found);
    it stops once every column has one."""
    codes = np.empty(w, np.int64)
    left = 0
    for c in range(w):
        left += want[c]
    mover = ply % 2
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)   # see _decode_near
    i = start
    while i != stop and left > 0:
        key = keys[i]
        i += step
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
        if _is_terminal(ply, cells, bb_a, bb_b, stride, k) != 0:
            continue
        for c in range(w):
            if want[c]:
                nc = child_code[codes[c], mover]
                if nc >= 0:
                    c1, c2 = _child_key(key, v2, codes[c], nc, c, w, powers)
                    if c1 <= c2:
                        found[c] = c1
                        want[c] = False
                        left -= 1


@njit(cache=True)
def pull_resolve(keys, msgs, nxt, nxt_out, ply, w, stride, k, base, cells, child_code, bits_a,
                 bits_b, powers, parent_code, top_owner, out, emitted, stats, tail):
    """:func:`resolve` where a position *pulls* its children's outcomes: each child made
    through column ``c`` that its own reading gives is looked up in ``nxt`` (sorted keys of
    generation ``ply + 1``, or at least every block of them :func:`column_windows` reaches;
    outcomes ``nxt_out``) by a cursor per column, which only moves forward (through one column
    the children of sorted keys come in key order). Only the children read through the mirror
    send messages (``msgs``, as :func:`resolve`'s, from :func:`emit_mirrored` or this kernel's
    ``emitted``): a child ``K`` of a non-symmetric parent ``P`` whose own reading is the mirror
    of ``K`` unmoves, in ``K``'s own reading, to the mirror of ``P``, which is greater than
    ``P``: the tail of :func:`_emit`. (A symmetric parent reaches that child through the
    mirrored column in its own reading.) The messages to generation ``ply - 1`` are written
    the same way: only those, all in the tail. Returns ``(bad, n_emitted)``: ``bad`` is -1, or
    the index of a position a child of which is missing from ``nxt``, or that has a mirrored
    child and no message."""
    emit = emitted.shape[0] > 0
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    lose_bits = B_WINS if mover == 0 else A_WINS
    codes = np.empty(w, np.int64)
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)   # see _decode_near
    cur = np.zeros(w, np.int64)
    nn = nxt.shape[0]
    nm = msgs.shape[0]
    p = 0
    eight = np.uint64(8)
    nk = keys.shape[0]
    fill = np.zeros(2 * w, np.int64)   # the runs layout (_close_runs)
    scores = np.empty(256, np.int64)   # _score of each outcome byte: a load, not three branches
    for o in range(256):
        scores[o] = _score(o, win_bits)
    for i in range(nk):
        key = keys[i]
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
        term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
        if term == 1:
            o = np.int64(A_WINS if ply % 2 == 1 else B_WINS)
        elif term == 2:
            o = np.int64(DRAW)
        else:
            b = np.int64(0)
            mirrored = False
            for c in range(w):
                nc = child_code[codes[c], mover]
                if nc < 0:
                    continue
                c1, c2 = _child_key(key, v2, codes[c], nc, c, w, powers)
                if c1 <= c2:
                    q = _gallop(nxt, nn, cur[c], c1)
                    cur[c] = q
                    if q >= nn or nxt[q] != c1:
                        return i, 0
                    b = max(b, scores[nxt_out[q]])
                elif v2 != key:
                    mirrored = True
            p = _gallop(msgs, nm, p, key << eight)
            if p < nm and (msgs[p] >> eight) == key:
                while p + 1 < nm and (msgs[p + 1] >> eight) == key:
                    p += 1
                s = np.int64(msgs[p] & np.uint64(0xFF))
                if s > b:
                    b = s
                p += 1
            elif mirrored:
                return i, 0
            if b == 0:   # no child at all: not a position of this generation
                return i, 0
            o = _outcome(b, win_bits, lose_bits)
        out[i] = o
        _count(stats, o, 1 if v2 == key else 0)
        if emit:
            _emit(key, v2, codes, o, ply, w, powers, parent_code, top_owner, emitted, nk, fill, True)
    return -1, _close_runs(emitted, nk, fill, tail) if emit else 0


@njit(cache=True)
def keep_best(x):
    """Sorted messages ``x`` compacted in place to one per key, the last (best) of each key's
    run; returns how many."""
    n = x.shape[0]
    m = 0
    eight = np.uint64(8)
    for i in range(n - 1):   # branch-free, as dedup_sorted
        v = x[i]
        x[m] = v
        m += (v >> eight) != (x[i + 1] >> eight)
    if n:
        x[m] = x[n - 1]
        m += 1
    return m


@njit(cache=True)
def strictly_increasing_keys(packed):
    """True if the keys (``word >> 8``) of sorted ``key << 8 | outcome`` words never repeat."""
    eight = np.uint64(8)
    for i in range(1, packed.shape[0]):
        if (packed[i] >> eight) == (packed[i - 1] >> eight):
            return False
    return True


@njit(cache=True)
def pack_entries(keys, outcomes, out):
    """``out[i] = keys[i] << 8 | outcomes[i]``: one sortable word per table entry."""
    for i in range(keys.shape[0]):
        out[i] = (keys[i] << np.uint64(8)) | np.uint64(outcomes[i])


@njit(cache=True)
def pack_mapped(keys, outcomes, table, out):
    """``out[i] = keys[i] << 8 | table[outcomes[i]]``: :func:`pack_entries` with each outcome
    byte replaced through a 256-byte map (a ``.c4z`` merge packs the symbols of one
    generation's outcomes, :func:`c4table.c4z.codec.symbol_tables`)."""
    for i in range(keys.shape[0]):
        out[i] = (keys[i] << np.uint64(8)) | np.uint64(table[outcomes[i]])


@njit(cache=True, inline="always")
def _put_entry(v, out, j, entry_size):
    """The low ``entry_size`` bytes of ``v``, big-endian, at ``out[j:]``."""
    for b in range(entry_size - 1, -1, -1):
        out[j + b] = np.uint8(v & np.uint64(0xFF))
        v >>= np.uint64(8)


@njit(cache=True)
def words_to_entries(packed, entry_size, out):
    """The low ``entry_size`` bytes of each ``key << 8 | outcome`` word, big-endian, one
    table entry after the other, into the uint8 array ``out`` (one pass, no temporaries).
    The entry sizes of the 2D boards (4-7 bytes) are written out as constants, so that LLVM
    unrolls and merges the byte stores: 3.4 -> 0.4 ns per 6-byte entry."""
    n = packed.shape[0]
    if entry_size == 6:
        for i in range(n):
            _put_entry(packed[i], out, i * 6, 6)
    elif entry_size == 5:
        for i in range(n):
            _put_entry(packed[i], out, i * 5, 5)
    elif entry_size == 7:
        for i in range(n):
            _put_entry(packed[i], out, i * 7, 7)
    elif entry_size == 4:
        for i in range(n):
            _put_entry(packed[i], out, i * 4, 4)
    else:
        for i in range(n):
            _put_entry(packed[i], out, i * entry_size, entry_size)
