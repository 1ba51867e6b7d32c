#!/usr/bin/env python3
"""Price the backward pass's two designs on the generations of a finished build, in one
process, in memory: *push* (generation ``ply + 1`` sends each parent a message, the messages
are sorted, compacted, coded as a run and decoded, and ``resolve`` reads them: what the GPU's
kernels and the 3D boards' still do) against *pull* (what the 2D build does: ``ply + 1`` sends
only the mirrored children's messages, and ``pull_resolve`` looks the others up in ``ply + 1``'s
sorted keys and outcomes with a cursor per column). Checks that both give the build's
outcomes, and prints per generation the CPU of each step in ns per key of ``ply``.

    python -m tools.diag.pull_join BUILD_DIR --plies 15 18 21 [--repeat 3]

BUILD_DIR: a finished 2D build with its ``work/`` kept. Pull reads ``ply + 1`` whole here
(a build's task reads the blocks its column windows reach, ``column_windows``, also priced);
neither side's shuffle is priced. CPU is ``thread_time``, the best of ``--repeat``. A
diagnostic, not a test.
"""
from __future__ import annotations

import numpy as np

from c4table.pipeline.kernels import cpu
from c4table.pipeline.sort import runcodec
from c4table.pipeline.sort.extsort import sort_runs
from tools.diag.sorted_runs import best_cpu, build_args, generation, messages_to


def main() -> None:
    args, board = build_args(__doc__)
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    w = board.width
    for ply in args.plies:
        if not 0 <= ply < board.cells:
            raise SystemExit(f"ply {ply}: a generation with a next one, please (0-{board.cells - 1})")
        keys, outs = generation(args.root, ply, "backward", outcomes=True)
        nxt, nxt_out = generation(args.root, ply + 1, "backward", outcomes=True)
        n = keys.shape[0]
        ns = 1e9 / n
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
        # pull: ply + 1 sends the mirrored children's messages only (priced as the push's:
        # ply + 1's pull_resolve with and without them out), sorted and kept; pull_resolve
        # looks the others up in ply + 1
        mir, mo = np.empty(nxt.shape[0] * w, np.uint64), np.empty(nxt.shape[0], np.uint8)
        if ply + 2 <= board.cells:
            nn2, nn2_out = generation(args.root, ply + 2, "backward", outcomes=True)
            up = np.empty(nn2.shape[0] * w, np.uint64)
            up = np.sort(up[: cpu.emit_mirrored(nn2, nn2_out, ply + 2, *tabs, *untabs, up, tail)])
            up = up[: cpu.keep_best(up)]
        else:
            nn2, nn2_out, up = np.empty(0, np.uint64), np.empty(0, np.uint8), np.empty(0, np.uint64)
        t_mir = best_cpu(lambda: cpu.pull_resolve(nxt, up, nn2, nn2_out, ply + 1, *tabs, *untabs, mo, mir,
                                                  st, tail), args.repeat) - \
            best_cpu(lambda: cpu.pull_resolve(nxt, up, nn2, nn2_out, ply + 1, *tabs, *untabs, mo, nothing,
                                              st, tail), args.repeat)
        _, nmir = cpu.pull_resolve(nxt, up, nn2, nn2_out, ply + 1, *tabs, *untabs, mo, mir, st, tail)
        mir0 = mir[:nmir].copy()

        def sort_mirrored():
            m = mir0.copy()
            sort_runs(m, nmir)
            return m[: cpu.keep_best(m)]
        mirrored = sort_mirrored()
        t_msort = best_cpu(sort_mirrored, args.repeat) - best_cpu(mir0.copy, args.repeat)
        got = np.empty(n, np.uint8)
        t_pull = best_cpu(lambda: cpu.pull_resolve(keys, mirrored, nxt, nxt_out, ply, *tabs, *untabs,
                                                   got, nothing, st, tail), args.repeat)
        bad, _ = cpu.pull_resolve(keys, mirrored, nxt, nxt_out, ply, *tabs, *untabs, got, nothing, st, tail)
        assert bad == -1 and np.array_equal(got, outs)
        lo, hi = np.empty(w, np.uint64), np.empty(w, np.uint64)
        t_win = best_cpu(lambda: cpu.column_windows(keys, ply, *tabs, lo, hi), args.repeat)
        pulled = [t_mir * ns, t_msort * ns, t_pull * ns, t_win * ns]
        print(f"{board.name} ply {ply}: {n:,} keys, {msgs0.shape[0] / n:.2f} messages per key "
              f"({msgs.shape[0] / n:.2f} after keep_best)")
        print(f"  push {sum(push):6.1f} ns/key: emit {push[0]:.1f}, sort+keep_best {push[1]:.1f}, "
              f"code {push[2]:.1f}, decode {push[3]:.1f}, resolve {push[4]:.1f}")
        print(f"  pull {sum(pulled):6.1f} ns/key: mirrored messages sent {pulled[0]:.1f} "
              f"({mirrored.shape[0] / n:.2f} per key), sorted {pulled[1]:.1f}, pull_resolve {pulled[2]:.1f}, "
              f"column_windows {pulled[3]:.1f}  (same outcomes as the build)")


if __name__ == "__main__":
    main()
