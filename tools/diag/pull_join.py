#!/usr/bin/env python3
"""Price the backward pass's two designs on the generations of a finished build, in one
process, in memory: *push* (what the build does: generation ``ply + 1`` sends each parent a
message, the messages are sorted, compacted, coded as a run and decoded, and ``resolve``
reads them) against *pull* (each parent of ``ply`` makes its children, as ``expand`` does,
and looks them up in ``ply + 1``'s sorted keys and outcomes: the children of one column in
their own reading come in key order, so each column keeps a cursor that only moves forward;
the mirrored ones, the tail, are sorted and joined apart). Checks that both give the build's
outcomes, and prints per generation the CPU of each step in ns per key of ``ply``.

    python -m tools.diag.pull_join BUILD_DIR --plies 15 18 21 [--repeat 3]

BUILD_DIR: a finished 2D build with its ``work/`` kept. Pull reads ``ply + 1`` whole here;
a build's task would read the windows of it its children fall in. CPU is ``thread_time``, the
best of ``--repeat``. A diagnostic, not a test.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from c4table.pipeline.kernels import cpu
from c4table.pipeline.kernels.cpu import (A_WINS, B_WINS, NO_KEY, _child_key, _decode_near, _gallop,
                                          _is_terminal, _outcome, _score, low_digits)
from c4table.pipeline.sort import runcodec
from c4table.pipeline.sort.extsort import sort_runs
from tools.diag.sorted_runs import best_cpu, build_args, generation, messages_to


@njit(cache=True)
def pull_resolve(keys, nxt, nxt_out, ply, w, stride, k, base, cells, child_code, bits_a, bits_b,
                 powers, best, tail, shift):
    """Best child score (``cpu._score``) of every non-terminal key of generation ``ply`` from
    the children in their own reading, looked up in ``nxt`` (sorted, outcomes ``nxt_out``) by a
    cursor per column; the mirrored children go to ``tail`` as ``child << shift | key index``.
    ``best[i]`` is -1 for a terminal key, 0 while no child was seen. Returns ``(bad, tail
    length)``: bad is -1 or the index of a key a child of which is missing."""
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    codes = np.empty(w, np.int64)
    low = low_digits(keys, w, base)
    hq, ha, hb, hv = NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)
    cur = np.zeros(w, np.int64)
    nn = nxt.shape[0]
    nt = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        bb_a, bb_b, v2, hq, ha, hb, hv = _decode_near(key, low, w, base, codes, bits_a, bits_b,
                                                     powers, stride, hq, ha, hb, hv)
        if _is_terminal(ply, cells, bb_a, bb_b, stride, k) != 0:
            best[i] = -1
            continue
        b = 0
        for c in range(w):
            nc = child_code[codes[c], mover]
            if nc < 0:
                continue
            c1, c2 = _child_key(key, v2, codes[c], nc, c, w, powers)
            if c1 <= c2:
                p = _gallop(nxt, nn, cur[c], c1)
                cur[c] = p
                if p >= nn or nxt[p] != c1:
                    return i, nt
                s = _score(nxt_out[p], win_bits)
                if s > b:
                    b = s
            else:
                tail[nt] = (c2 << np.uint64(shift)) | np.uint64(i)
                nt += 1
        best[i] = b
    return -1, nt


@njit(cache=True)
def join_tail(tail, nxt, nxt_out, ply, best, shift):
    """Fold the sorted mirrored children of ``tail`` (``child << shift | key index``) into
    ``best``; -1, or the tail index of a child missing from ``nxt``."""
    win_bits = A_WINS if ply % 2 == 0 else B_WINS
    p = 0
    nn = nxt.shape[0]
    low = (np.uint64(1) << np.uint64(shift)) - np.uint64(1)
    for t in range(tail.shape[0]):
        child = tail[t] >> np.uint64(shift)
        p = _gallop(nxt, nn, p, child)
        if p >= nn or nxt[p] != child:
            return t
        i = np.int64(tail[t] & low)
        s = _score(nxt_out[p], win_bits)
        if s > best[i]:
            best[i] = s
    return -1


@njit(cache=True)
def finish(keys, ply, w, stride, k, base, cells, child_code, bits_a, bits_b, powers, best, out):
    """Outcome bytes from ``best`` (the terminal keys decided by their lines); -1 or the index
    of a non-terminal key without any child."""
    mover = ply % 2
    win_bits = A_WINS if mover == 0 else B_WINS
    lose_bits = B_WINS if mover == 0 else A_WINS
    codes = np.empty(w, np.int64)
    for i in range(keys.shape[0]):
        if best[i] > 0:
            out[i] = _outcome(np.int64(best[i]), win_bits, lose_bits)
        elif best[i] == 0:
            return i
        else:
            bb_a, bb_b, _ = cpu._decode(keys[i], w, base, codes, bits_a, bits_b, powers, stride)
            term = _is_terminal(ply, cells, bb_a, bb_b, stride, k)
            out[i] = (A_WINS if ply % 2 == 1 else B_WINS) if term == 1 else cpu.DRAW
    return -1


def main() -> None:
    args, board = build_args(__doc__)
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    w = board.width
    shift = 64 - cpu.key_bits(board)   # a tail entry: child key << shift | parent index
    for ply in args.plies:
        if not 0 <= ply < board.cells:
            raise SystemExit(f"ply {ply}: a generation with a next one, please (0-{board.cells - 1})")
        keys, outs = generation(args.root, ply, "backward", outcomes=True)
        nxt, nxt_out = generation(args.root, ply + 1, "backward", outcomes=True)
        n = keys.shape[0]
        ns = 1e9 / n
        if n >= 1 << shift:
            raise SystemExit(f"ply {ply}: {n:,} keys do not fit the {shift} bits of a tail entry")
        # push: ply + 1 emits (resolve with messages out, less without), sort, keep the best,
        # code and decode the run, resolve ply from them
        sent, tail = np.empty(nxt.shape[0] * w, np.uint64), np.zeros(1, np.int64)
        o1 = np.empty(nxt.shape[0], np.uint8)
        nothing = np.empty(0, np.uint64)
        m2 = messages_to(args.root, board, ply + 1)   # ply + 1's own, to run its resolve
        st = np.zeros(6, np.int64)
        t_send = best_cpu(lambda: cpu.resolve(nxt, m2, ply + 1, *tabs, *untabs, o1, sent, st, tail), args.repeat)
        t_nosend = best_cpu(lambda: cpu.resolve(nxt, m2, ply + 1, *tabs, *untabs, o1, nothing, st, tail), args.repeat)
        _, nm = cpu.resolve(nxt, m2, ply + 1, *tabs, *untabs, o1, sent, st, tail)
        msgs0, t0 = sent[:nm].copy(), int(tail[0])

        def sort_keep():
            m = msgs0.copy()
            sort_runs(m, t0)
            return m[: cpu.keep_best(m)]
        msgs = sort_keep()
        t_sort = best_cpu(sort_keep, args.repeat) - best_cpu(msgs0.copy, args.repeat)
        blobs = runcodec.encode_blocks(msgs, 8)
        t_enc = best_cpu(lambda: runcodec.encode_blocks(msgs, 8), args.repeat)
        offsets = np.cumsum([0] + [len(b) for b in blobs])
        data = np.frombuffer(b"".join(blobs), np.uint8)
        back = np.empty_like(msgs)
        t_dec = best_cpu(lambda: runcodec.decode_blocks(data, msgs[::runcodec.BLOCK].copy(), offsets, 0,
                                                        len(blobs), msgs.shape[0], 8, back), args.repeat)
        out = np.empty(n, np.uint8)
        t_res = best_cpu(lambda: cpu.resolve(keys, msgs, ply, *tabs, *untabs, out, nothing, st, tail), args.repeat)
        assert np.array_equal(out, outs)
        push = [(t_send - t_nosend) * ns, t_sort * ns, t_enc * ns, t_dec * ns, t_res * ns]
        # pull
        best = np.empty(n, np.int64)
        buf = np.empty(n * w, np.uint64)

        def pull():
            bad, nt = pull_resolve(keys, nxt, nxt_out, ply, *tabs, best, buf, shift)
            assert bad == -1
            return buf[:nt]
        t_pull = best_cpu(pull, args.repeat)
        tl = pull()
        t_tsort = best_cpu(lambda: tl.copy().sort(), args.repeat) - best_cpu(tl.copy, args.repeat)
        tl.sort()
        bsave = best.copy()
        t_join = best_cpu(lambda: join_tail(tl, nxt, nxt_out, ply, bsave.copy(), shift), args.repeat) - \
            best_cpu(bsave.copy, args.repeat)
        assert join_tail(tl, nxt, nxt_out, ply, best, shift) == -1
        got = np.empty(n, np.uint8)
        t_fin = best_cpu(lambda: finish(keys, ply, *tabs, best, got), args.repeat)
        assert finish(keys, ply, *tabs, best, got) == -1 and np.array_equal(got, outs)
        pulled = [t_pull * ns, t_tsort * ns, t_join * ns, t_fin * ns]
        print(f"{board.name} ply {ply}: {n:,} keys, {msgs0.shape[0] / n:.2f} messages per key "
              f"({msgs.shape[0] / n:.2f} after keep_best), tail {tl.shape[0] / n:.2f} per key")
        print(f"  push {sum(push):6.1f} ns/key: emit {push[0]:.1f}, sort+keep_best {push[1]:.1f}, "
              f"code {push[2]:.1f}, decode {push[3]:.1f}, resolve {push[4]:.1f}")
        print(f"  pull {sum(pulled):6.1f} ns/key: children looked up {pulled[0]:.1f}, tail sorted "
              f"{pulled[1]:.1f}, tail joined {pulled[2]:.1f}, outcomes {pulled[3]:.1f}  "
              f"(same outcomes as the build)")


if __name__ == "__main__":
    main()
