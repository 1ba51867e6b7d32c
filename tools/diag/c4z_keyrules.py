"""How much of a ``.c4z``'s key stream the rules of the game already know: over a stretch of
the key space, the candidate keys that pass a rule (chips balanced, mirror-canonical, lines
only where a last move can have made them) against the keys the table holds. A key stream
could then store only the exceptions; this measures what that costs, in bits per entry.

    python -m tools.diag.c4z_keyrules FILE.dat [...] [--regions 8] [--entries 200000]

Rules, each adding to the one before:

- ``balanced``: A has as many chips as B or one more (A moves first), and the key is the
  mirror-canonical reading (``min(v1, v2)``, :func:`c4table.game.codec.key_of_codes`);
- ``no loser line``: the player who did not move last has no k in a row;
- ``last move``: if the last mover has k in a row, taking back some top chip of theirs leaves
  them none (the game ended on that move);
- ``takeback``: the position is reachable: top chips can be taken back one at a time, each the
  chip of the player who moved last, down to the empty board without a position with k in a
  row on the way (a depth-first search; a search of over 20,000 positions counts as a pass).

Then the same ``last move`` candidates listed row by row of the key space
(:func:`enumerate_keys`: only the column-0 codes that balance the chips of the other
columns), as a decoder would list them, with its CPU time per table entry and a check that no
table key is missed (``--whole``: over the whole key space too, the true mean per entry: the
sampled regions include the table's sparse ends, where one entry costs many rows). Also the CPU time of the rules per table entry (what a decoder that enumerates the key space
would spend). Per rule: candidates per table entry, recall (table entries that pass), precision (passing
candidates in the table) and the cost of the exceptions, bits per entry: each passing
candidate's membership at its binary entropy plus, for each entry that fails, its position
among the failing candidates (``log2`` of their number per entry); beside today's key frames.
"""
from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from c4table.c4z.rulekeys import d0_lists
from c4table.game.lines import _decode, _has_line
from c4table.table.source import board_of_table, keys_of_rows


@njit(cache=True)
def rule_levels(lo, hi, w, base, stride, k, bits_a, bits_b, powers, col_height, out):
    """``out[i]`` for candidate key ``lo + i``: how many rules it passes (0-4, module
    docstring)."""
    hs = np.empty(w, np.int64)
    codes = np.empty(w, np.int64)
    for i in range(hi - lo):
        key = np.uint64(lo + i)
        bb_a, bb_b, v2 = _decode(key, w, base, codes, bits_a, bits_b, powers, stride)
        na = 0
        nb = 0
        for c in range(w):
            x = bits_a[codes[c]]
            while x:
                na += 1
                x &= x - np.uint64(1)
        ply = 0
        for c in range(w):
            ply += col_height[codes[c]]
        nb = ply - na
        if not (na == nb or na == nb + 1) or v2 < key:
            out[i] = 0
            continue
        last_a = na > nb or ply == 0
        last = bb_a if last_a else bb_b
        other = bb_b if last_a else bb_a
        if ply > 0 and _has_line(other, stride, k):
            out[i] = 1
            continue
        ok = ply == 0 or not _has_line(last, stride, k)
        for c in range(w if not ok else 0):
            h = col_height[codes[c]]
            if h == 0:
                continue
            bit = np.uint64(1) << np.uint64(c * stride + h - 1)
            if last & bit and not _has_line(last & ~bit, stride, k):
                ok = True
                break
        if not ok:
            out[i] = 2
            continue
        for c in range(w):
            hs[c] = col_height[codes[c]]
        out[i] = 4 if _reachable(bb_a, bb_b, hs, ply, w, stride, k) else 3


@njit(cache=True)
def _reachable(bb_a, bb_b, hs, ply, w, stride, k):
    """True if the chips can be taken back to the empty board (module docstring,
    ``takeback``); the position itself is the caller's to check. Depth-first with an explicit
    stack of (column tried last) per depth; True after 20,000 positions (undecided)."""
    tried = np.full(ply + 1, -1, np.int64)
    a, b = bb_a, bb_b
    h = hs.copy()
    d = ply
    nodes = 0
    while True:
        if d == 0:
            return True
        nodes += 1
        if nodes > 20000:
            return True
        mover_a = d % 2 == 1
        c = tried[d] + 1
        moved = False
        while c < w:
            if h[c] > 0:
                bit = np.uint64(1) << np.uint64(c * stride + h[c] - 1)
                mine = a if mover_a else b
                if mine & bit:
                    na = a & ~bit if mover_a else a
                    nb = b if mover_a else b & ~bit
                    if not _has_line(na, stride, k) and not _has_line(nb, stride, k):
                        tried[d] = c
                        a, b = na, nb
                        h[c] -= 1
                        d -= 1
                        tried[d] = -1
                        moved = True
                        break
            c += 1
        if moved:
            continue
        # back up: restore the chip taken at depth d + 1
        tried[d] = -1
        d += 1
        if d > ply:
            return False
        c = tried[d]
        h[c] += 1
        bit = np.uint64(1) << np.uint64(c * stride + h[c] - 1)
        if d % 2 == 1:
            a |= bit
        else:
            b |= bit


def measure(dat: Path, regions: int, n_entries: int) -> list[tuple]:
    board = board_of_table(dat, None)
    E = board.entry_size
    total = dat.stat().st_size // E
    counts = np.zeros((5, 2), np.int64)   # rule level passed x in table
    entries = 0
    spent = 0.0
    rule_levels(0, 1, board.width, board.base, board.stride, board.k,   # compile first
                np.asarray(board.col_bits_a, np.uint64), np.asarray(board.col_bits_b, np.uint64),
                np.asarray(board.powers, np.uint64), np.asarray(board.col_height, np.int64),
                np.empty(1, np.int8))
    with open(dat, "rb") as f:
        for s in np.linspace(0, max(total - n_entries, 0), regions).astype(np.int64):
            rows = np.frombuffer(os.pread(f.fileno(), n_entries * E, int(s) * E), np.uint8)
            keys = keys_of_rows(rows.reshape(-1, E), E - 1)
            lo, hi = int(keys[0]), int(keys[-1]) + 1
            lev = np.empty(hi - lo, np.int8)
            t0 = time.thread_time()
            rule_levels(lo, hi, board.width, board.base, board.stride, board.k,
                        np.asarray(board.col_bits_a, np.uint64), np.asarray(board.col_bits_b, np.uint64),
                        np.asarray(board.powers, np.uint64), np.asarray(board.col_height, np.int64), lev)
            spent += time.thread_time() - t0
            member = np.zeros(hi - lo, bool)
            member[(keys - np.uint64(lo)).astype(np.int64)] = True
            for v in range(5):
                for m in (0, 1):
                    counts[v, m] += int(((lev == v) & (member == m)).sum())
            entries += keys.shape[0]
    res = []
    for r, name in ((1, "balanced"), (2, "no loser line"), (3, "last move"), (4, "takeback")):
        passing = counts[r:].sum(0)          # [not in table, in table]
        failing = counts[:r].sum(0)
        cand = passing.sum()
        p = passing[1] / cand
        h = 0.0 if p in (0, 1) else -(p * math.log2(p) + (1 - p) * math.log2(1 - p))
        miss = failing[1]
        miss_bits = miss * math.log2(max(failing.sum() / max(miss, 1), 1)) + miss * 1.0
        res.append((name, cand / entries, passing[1] / entries, p,
                    (cand * h + miss_bits) / entries))
    return board, entries, counts, res, spent / entries


@njit(cache=True)
def enumerate_keys(lo, hi, w, base, stride, k, bits_a, bits_b, powers, col_height, dif,
                   codes, count, out, lined):
    """The keys in ``[lo, hi)`` that pass the ``last move`` rule (module docstring), row by
    row of the key space (a row: all keys that share columns 1..; its candidates are the
    column-0 codes that balance the chips, :func:`~c4table.c4z.rulekeys.d0_lists`), into
    ``out``; returns how many (-1 if ``out`` is too short); ``lined[j]``: the last mover of ``out[j]`` has k in a row."""
    m = 0
    off = (col_height.max()) * w
    top = powers[w - 1]
    row = lo // base
    row_hi = (hi - 1) // base
    rest = np.zeros(w, np.int64)
    x = row
    for c in range(1, w):
        rest[c] = x % base
        x //= base
    ua = ub = umir = np.uint64(0)
    ur = uply = 0
    fresh = True
    while row <= row_hi:
        if fresh:                               # columns 2..: only when column 1 wraps
            ua = ub = umir = np.uint64(0)
            ur = uply = 0
            for c in range(2, w):
                d = rest[c]
                ua |= bits_a[d] << np.uint64(c * stride)
                ub |= bits_b[d] << np.uint64(c * stride)
                ur += dif[d]
                uply += col_height[d]
                umir += np.uint64(d) * powers[w - 1 - c]
        d = rest[1]
        ra = ua | (bits_a[d] << np.uint64(stride))
        rb = ub | (bits_b[d] << np.uint64(stride))
        ri = ur + dif[d] + off
        rply = uply + col_height[d]
        mir = umir + np.uint64(d) * powers[w - 2]
        if ri < 0 or ri >= count.shape[0]:
            fresh = _next_row(rest, w, base)
            row += 1
            continue
        base_key = np.uint64(row) * np.uint64(base)
        for j in range(count[ri]):
            d0 = codes[ri, j]
            key = base_key + np.uint64(d0)
            if key < lo:
                continue
            if key >= hi:
                break
            if np.uint64(d0) * top + mir < key:      # not the mirror-canonical reading
                continue
            a = ra | bits_a[d0]
            b = rb | bits_b[d0]
            ply = rply + col_height[d0]
            last_a = ply % 2 == 1
            last = a if last_a else b
            other = b if last_a else a
            if ply > 0 and _has_line(other, stride, k):
                continue
            won = ply > 0 and _has_line(last, stride, k)
            if won:
                ok = False
                for c in range(w):
                    hc = col_height[d0] if c == 0 else col_height[rest[c]]
                    if hc == 0:
                        continue
                    bit = np.uint64(1) << np.uint64(c * stride + hc - 1)
                    if last & bit and not _has_line(last & ~bit, stride, k):
                        ok = True
                        break
                if not ok:
                    continue
            if m >= out.shape[0]:
                return -1
            out[m] = key
            lined[m] = won
            m += 1
        fresh = _next_row(rest, w, base)
        row += 1
    return m


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


def enumerate_check(dat: Path, regions: int, n_entries: int, restart: int = 65536):
    """Per region: the keys :func:`enumerate_keys` lists against the table's; returns
    (entries, candidates, table keys not listed, seconds of CPU, bits): ``bits`` the code
    length of the candidates' membership under adaptive counts per (ply, last mover has a
    line) that start afresh every ``restart`` candidates (the measure of
    :mod:`tools.diag.c4z_models`)."""
    board = board_of_table(dat, None)
    E = board.entry_size
    total = dat.stat().st_size // E
    codes, count, dif = d0_lists(board)
    args = (board.width, board.base, board.stride, board.k,
            np.asarray(board.col_bits_a, np.uint64), np.asarray(board.col_bits_b, np.uint64),
            np.asarray(board.powers, np.uint64), np.asarray(board.col_height, np.int64), dif,
            codes, count)
    enumerate_keys(np.uint64(0), np.uint64(1), *args, np.empty(4, np.uint64),
                   np.empty(4, np.bool_))   # compile
    from c4table.c4z.codec import BlockCodec
    from tools.diag.c4z_models import _adaptive_bits
    codec = BlockCodec(board)
    n = cand = missed = 0
    bits = 0.0
    spent = 0.0
    with open(dat, "rb") as f:
        for s in np.linspace(0, max(total - n_entries, 0), regions).astype(np.int64):
            rows = np.frombuffer(os.pread(f.fileno(), n_entries * E, int(s) * E), np.uint8)
            keys = keys_of_rows(rows.reshape(-1, E), E - 1)
            out = np.empty(4 * keys.shape[0] + 1024, np.uint64)
            lined = np.empty(out.shape[0], np.bool_)
            t0 = time.thread_time()
            m = enumerate_keys(keys[0], keys[-1] + np.uint64(1), *args, out, lined)
            spent += time.thread_time() - t0
            got = out[:m]
            member = np.isin(got, keys).astype(np.int64)
            ctx = codec.plies(got) * 2 + lined[:m]
            starts = np.arange(0, m, restart, dtype=np.int64)   # counts start afresh
            cl = np.empty(m, np.float64)
            _adaptive_bits(member, ctx, int(ctx.max()) + 1, 2, starts, True, cl)
            bits += cl.sum()
            n += keys.shape[0]
            cand += m
            missed += int((~np.isin(keys, got)).sum())
    return n, cand, missed, spent, bits


def enumerate_whole(dat: Path, chunk: int = 1 << 26) -> tuple[int, int, float]:
    """The whole key space enumerated (:func:`enumerate_keys`) in chunks of ``chunk`` keys;
    returns (table entries, candidates, seconds of CPU)."""
    board = board_of_table(dat, None)
    codes, count, dif = d0_lists(board)
    args = (board.width, board.base, board.stride, board.k,
            np.asarray(board.col_bits_a, np.uint64), np.asarray(board.col_bits_b, np.uint64),
            np.asarray(board.powers, np.uint64), np.asarray(board.col_height, np.int64), dif,
            codes, count)
    enumerate_keys(np.uint64(0), np.uint64(1), *args, np.empty(4, np.uint64), np.empty(4, np.bool_))
    out = np.empty(chunk, np.uint64)
    lined = np.empty(chunk, np.bool_)
    cand = 0
    spent = 0.0
    chunk -= chunk % board.base
    for lo in range(0, board.key_limit, chunk):
        t0 = time.thread_time()
        m = enumerate_keys(np.uint64(lo), np.uint64(min(lo + chunk, board.key_limit)), *args,
                           out, lined)
        spent += time.thread_time() - t0
        cand += m
    return dat.stat().st_size // board.entry_size, cand, spent


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+", type=Path)
    ap.add_argument("--regions", type=int, default=8)
    ap.add_argument("--entries", type=int, default=200000)
    ap.add_argument("--restart", default="65536,1024",
                    help="candidates after which the membership coder's counts start afresh")
    ap.add_argument("--whole", action="store_true",
                    help="also enumerate the whole key space (time per table entry)")
    a = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    for t in a.tables:
        board, n, counts, res, per = measure(t, a.regions, a.entries)
        cand = int(counts.sum())
        if a.whole:
            wn, wc, ws = enumerate_whole(t)
            print(f"\nwhole key space: {wc:,} `last move` candidates for {wn:,} entries "
                  f"({wc / wn:.4f} per entry), {ws:.1f} s of CPU: {ws / wn * 1e9:.1f} ns per entry")
        print(f"\n### {t.name}: {a.regions} regions of {a.entries:,} entries ({n:,})\n"
              "| rule | candidates per entry | recall | precision | exceptions, bits per entry |\n"
              "|---|---:|---:|---:|---:|")
        for name, cpe, rec, prec, bits in res:
            print(f"| {name} | {cpe:.3f} | {rec:.5f} | {prec:.5f} | {bits:.4f} |")
        for r in (int(x) for x in a.restart.split(",")):
            en, ec, em, es, eb = enumerate_check(t, a.regions, a.entries, r)
            print(f"\nrow-by-row enumeration of the `last move` candidates: {ec / en:.3f} per "
                  f"entry, {em} table keys not among them, {es / en * 1e9:.1f} ns of CPU per table "
                  f"entry; their membership coded adaptively by (ply, line), counts afresh every "
                  f"{r:,} candidates: {eb / en:.4f} bits per entry")
        print(f"\nkey space candidates per entry {cand / n:.1f}; all rules cost {per * 1e9:.0f} ns "
              f"of CPU per table entry ({per * n / cand * 1e9:.1f} ns per candidate key), "
              f"one thread")


if __name__ == "__main__":
    main()
