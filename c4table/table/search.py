"""The one binary search over a memory-mapped ``.dat`` (numba kernels), which checks each block
of the file against its checksum the first time it touches it.

Every reader of a ``.dat`` goes through here (lookup, best, play, the Python API, serve, label,
export). A :class:`~c4table.table.sums.Guard` carries what the kernels need; a kernel stops at
the first damage it meets and reports it in ``bad``, and the caller raises
:class:`~c4table.errors.TableDamaged`. Details: ``docs/modules.md`` (``c4table.table.search``).
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

_LITTLE = sys.byteorder == "little"   # the word view of xxh64's lanes

NOT_FOUND = 0xFFFF
OK, BLOCK, OUTCOME = 0, 1, 2

_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)
_P5 = np.uint64(2870177450012600261)


@njit(cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True)
def _round(acc, lane):
    acc = acc + lane * _P2
    return _rotl(acc, 31) * _P1


@njit(cache=True)
def _merge(acc, val):
    acc = acc ^ _round(np.uint64(0), val)
    return acc * _P1 + _P4


@njit(cache=True)
def _u64(data, o):
    v = np.uint64(0)
    for b in range(7, -1, -1):
        v = (v << np.uint64(8)) | np.uint64(data[o + b])
    return v


@njit(cache=True)
def xxh64(data, lo, hi):
    """xxh64 (seed 0) of ``data[lo:hi]`` (uint8): the digest of the ``xxhash`` package, which
    writes the sums (tests check the two agree)."""
    n = hi - lo
    p = lo
    if n >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - _P1
        stripes = n // 32
        if _LITTLE and lo % 8 == 0:    # aligned: the lanes read as words
            words = data[lo: lo + stripes * 32].view(np.uint64)
            for s in range(stripes):
                v1 = _round(v1, words[4 * s])
                v2 = _round(v2, words[4 * s + 1])
                v3 = _round(v3, words[4 * s + 2])
                v4 = _round(v4, words[4 * s + 3])
        else:
            for s in range(stripes):
                q = lo + 32 * s
                v1 = _round(v1, _u64(data, q))
                v2 = _round(v2, _u64(data, q + 8))
                v3 = _round(v3, _u64(data, q + 16))
                v4 = _round(v4, _u64(data, q + 24))
        p = lo + stripes * 32
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = _P5
    h += np.uint64(n)
    while p + 8 <= hi:
        h ^= _round(np.uint64(0), _u64(data, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += 8
    if p + 4 <= hi:
        w = np.uint64(data[p]) | (np.uint64(data[p + 1]) << np.uint64(8)) | \
            (np.uint64(data[p + 2]) << np.uint64(16)) | (np.uint64(data[p + 3]) << np.uint64(24))
        h ^= w * _P1
        h = _rotl(h, 23) * _P2 + _P3
        p += 4
    while p < hi:
        h ^= np.uint64(data[p]) * _P5
        h = _rotl(h, 11) * _P1
        p += 1
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def _block_ok(data, blk, sums, checked, shift, nbytes, entry_size):
    """Whether block ``blk`` matches its sum (checked once: remembered in ``checked``)."""
    if checked[blk]:
        return True
    lo = (blk << shift) * entry_size
    hi = min(lo + (np.int64(1) << shift) * entry_size, nbytes)
    if xxh64(data, lo, hi) != sums[blk]:
        return False
    checked[blk] = 1
    return True


@njit(cache=True)
def check_blocks(data, first, last, sums, checked, shift, entry_size, bad):
    """Check blocks ``first..last`` (inclusive); the first damaged one goes to ``bad``."""
    if sums.shape[0] == 0:
        return
    for blk in range(first, last + 1):
        if not _block_ok(data, blk, sums, checked, shift, data.shape[0], entry_size):
            bad[0] = BLOCK
            bad[1] = blk
            return


@njit(cache=True)
def search(data, entries, entry_size, key_bytes, keys, out, sums, checked, shift, bad):
    """``out[i]``: the outcome byte stored for ``keys[i]`` in the sorted big-endian entries
    ``data`` (uint8), or ``NOT_FOUND``; ``NO_KEY`` keys are skipped (``NOT_FOUND``). Keys in
    any order, each searched from scratch. Stops at the first damage (``bad``).

    (The block check is written out in each loop rather than in a helper that writes ``bad``:
    that costs the searches more than twice their time.)"""
    nokey = np.uint64(0xFFFFFFFFFFFFFFFF)
    summed = sums.shape[0] != 0
    nbytes = data.shape[0]
    for i in range(keys.shape[0]):
        key = keys[i]
        out[i] = NOT_FOUND
        if key == nokey:
            continue
        lo, hi = 0, entries
        while lo < hi:
            mid = (lo + hi) // 2
            if summed and checked[mid >> shift] == 0 and \
                    not _block_ok(data, mid >> shift, sums, checked, shift, nbytes, entry_size):
                bad[0] = BLOCK
                bad[1] = mid >> shift
                return
            o = mid * entry_size
            kk = np.uint64(0)
            for b in range(key_bytes):
                kk = (kk << np.uint64(8)) | np.uint64(data[o + b])
            if kk < key:
                lo = mid + 1
            elif kk > key:
                hi = mid
            else:
                v = data[o + key_bytes]
                if v >= 0xC0:
                    bad[0] = OUTCOME
                    bad[1] = mid
                    return
                out[i] = v
                break


@njit(cache=True)
def search_sorted(data, entries, entry_size, key_bytes, keys, out, sums, checked, shift, bad):
    """``out[i]``: the outcome byte of ``keys[i]`` (sorted ascending) in the sorted big-endian
    entries ``data``, -2 if absent, -1 for ``NO_KEY``. Each search gallops from the previous
    key's place, so a chunk of sorted keys costs about ``log(gap)`` probes per key. Stops at
    the first damage (``bad``)."""
    nokey = np.uint64(0xFFFFFFFFFFFFFFFF)
    summed = sums.shape[0] != 0
    nbytes = data.shape[0]
    lo = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        if key == nokey:
            out[i] = -1
            continue
        step = 1                      # gallop: find hi with key(hi) >= key
        hi = lo
        while hi < entries:
            if summed and checked[hi >> shift] == 0 and \
                    not _block_ok(data, hi >> shift, sums, checked, shift, nbytes, entry_size):
                bad[0] = BLOCK
                bad[1] = hi >> shift
                return
            o = hi * entry_size
            kk = np.uint64(0)
            for b in range(key_bytes):
                kk = (kk << np.uint64(8)) | np.uint64(data[o + b])
            if kk >= key:
                break
            lo = hi + 1
            hi = lo + step
            step *= 2
        if hi > entries:
            hi = entries
        while lo < hi:                # lower bound in [lo, hi]
            mid = (lo + hi) // 2
            if summed and checked[mid >> shift] == 0 and \
                    not _block_ok(data, mid >> shift, sums, checked, shift, nbytes, entry_size):
                bad[0] = BLOCK
                bad[1] = mid >> shift
                return
            o = mid * entry_size
            kk = np.uint64(0)
            for b in range(key_bytes):
                kk = (kk << np.uint64(8)) | np.uint64(data[o + b])
            if kk < key:
                lo = mid + 1
            else:
                hi = mid
        out[i] = -2
        if lo < entries:
            if summed and checked[lo >> shift] == 0 and \
                    not _block_ok(data, lo >> shift, sums, checked, shift, nbytes, entry_size):
                bad[0] = BLOCK
                bad[1] = lo >> shift
                return
            o = lo * entry_size
            kk = np.uint64(0)
            for b in range(key_bytes):
                kk = (kk << np.uint64(8)) | np.uint64(data[o + b])
            if kk == key:
                v = data[o + key_bytes]
                if v >= 0xC0:
                    bad[0] = OUTCOME
                    bad[1] = lo
                    return
                out[i] = v


@njit(cache=True)
def search_packed(data, entries, entry_size, key_bytes, keys, out, block, sums, checked, shift,
                  bad):
    """:func:`search_sorted` for keys in any order, when keys fit in 48 bits: each block of at
    most 65,536 keys is sorted as ``key << 16 | place`` (a sort of plain integers, no argsort),
    searched in that order, and each answer written back to its place. ``NO_KEY`` gives -1."""
    nokey = np.uint64(0xFFFFFFFFFFFFFFFF)
    n = keys.shape[0]
    pack = np.empty(block, np.uint64)
    sk = np.empty(block, np.uint64)
    res = np.empty(block, np.int64)
    mask = np.uint64(0xFFFF)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        m = 0
        for i in range(lo, hi):
            if keys[i] == nokey:
                out[i] = -1
            else:
                pack[m] = (keys[i] << np.uint64(16)) | np.uint64(i - lo)
                m += 1
        p = np.sort(pack[:m])
        for j in range(m):
            sk[j] = p[j] >> np.uint64(16)
        search_sorted(data, entries, entry_size, key_bytes, sk[:m], res[:m], sums, checked, shift,
                      bad)
        if bad[0] != OK:
            return
        for j in range(m):
            out[lo + np.int64(p[j] & mask)] = res[j]


@njit(cache=True)
def first_impossible(found, plies, cells, k):
    """The first place ``(row, column)`` flattened (``row * found.shape[1] + column``) where the
    outcome byte ``found`` (int64, ``(n, w + 1)``: the position, then its children; values
    outside 0..255 are not bytes and skipped) cannot be that of a position of ply ``plies[row]``
    (``+ 1`` for a child), or -1: :func:`c4table.table.sums.impossible` in one pass."""
    n, m = found.shape
    for r in range(n):
        for c in range(m):
            v = found[r, c]
            if v < 0 or v > 255:
                continue
            cls = v & 0xC0
            end = plies[r] + (1 if c > 0 else 0) + (v & 0x3F)
            if cls == 0xC0 or end > cells or (cls == 0 and end != cells) or \
                    (cls == 0x40 and (end % 2 != 1 or end < 2 * k - 1)) or \
                    (cls == 0x80 and (end % 2 != 0 or end < 2 * k)):
                return r * m + c
    return -1
