#!/usr/bin/env python3
"""Price the sorts of the 2D kernels' output on the generations of a finished build: the
children ``expand`` writes and the messages ``emit_parents`` writes (as ``resolve`` sends
them), each sorted by numpy's quicksort, by its stable sort (timsort, which merges the
sorted runs the kernels write: ``pipeline.kernels.cpu._close_runs``) and as the build sorts it
(:func:`c4table.pipeline.sort.extsort.sort_runs`: the unordered tail by a quicksort first).
Prints per generation the kernel's CPU and each sort's, in ns per key of the generation, the
output's descents (where it goes down: the runs' joins and the tail of mirrored values, which
is in no order) and checks that the sorts agree; then ``resolve`` on the generation with the
next one's messages, with and without its own messages out.

    python -m tools.diag.sorted_runs /tmp/build-6x4 --plies 12 15 17 19

CPU is ``thread_time``, the best of ``--repeat`` calls. A diagnostic, not a test.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from c4table.builddir.reader import BuildDir
from c4table.game.board import Board

from c4table.builddir.shards import read_shard
from c4table.io.storage import open_storage
from c4table.pipeline.kernels import cpu
from c4table.pipeline.sort.extsort import sort_runs


def best_cpu(f, repeat: int) -> float:
    """The least thread CPU seconds of ``repeat`` calls of ``f``."""
    best = float("inf")
    for _ in range(repeat):
        t = time.thread_time()
        f()
        best = min(best, time.thread_time() - t)
    return best


def descents(x: np.ndarray) -> int:
    """Places where ``x`` goes down: one less than its ascending runs."""
    return int(np.count_nonzero(x[1:] < x[:-1]))


def generation(root: Path, ply: int, stage: str = "forward", outcomes: bool = False):
    """The keys (and outcomes) of generation ``ply`` of the build at ``root``."""
    store = open_storage(str(root))
    infos = BuildDir.load(root).manifest.step(stage, ply).nonempty()
    parts = [read_shard(store, s, with_outcome=outcomes) for s in infos]
    if not outcomes:
        return np.concatenate(parts)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def price(label: str, kernel, n_keys: int, repeat: int) -> None:
    """Time ``kernel()`` (returning its output and its unordered tail's length) and the sorts
    of that output; print a row."""
    out, tail = kernel()
    t_kernel = best_cpu(kernel, repeat)
    quick, stable, build = out.copy(), out.copy(), out.copy()
    t_quick = best_cpu(lambda: out.copy().sort(kind="quicksort"), repeat)
    t_stable = best_cpu(lambda: out.copy().sort(kind="stable"), repeat)
    t_build = best_cpu(lambda: sort_runs(out.copy(), tail), repeat)
    quick.sort(kind="quicksort")
    stable.sort(kind="stable")
    sort_runs(build, tail)
    assert np.array_equal(quick, stable) and np.array_equal(quick, build)
    ns = 1e9 / n_keys
    print(f"  {label:9s} {out.shape[0] / n_keys:5.2f} per key, {descents(out):8d} descents, "
          f"tail {tail / max(1, out.shape[0]):.1%}; kernel {t_kernel * ns:6.1f}  quicksort "
          f"{t_quick * ns:6.1f}  stable {t_stable * ns:6.1f}  tail apart {t_build * ns:6.1f} ns/key  "
          f"({t_quick / t_build:.1f}x, {t_stable / t_build:.2f}x)")


def build_args(doc: str, why: str = "") -> tuple[argparse.Namespace, Board]:
    """The command line of a diagnostic over the generations of a finished 2D build (``root``,
    ``--plies``, ``--repeat``; ``doc`` its module docstring) and the build's board;
    :class:`SystemExit` for a 3D board (``why``: what the message adds)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path, help="a finished build directory (its work/ kept)")
    ap.add_argument("--plies", type=int, nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    board = BuildDir.load(args.root).board
    if board.variant != "2d":
        raise SystemExit(f"a 2D board's build, please{why}")
    return args, board


def messages_to(root: Path, board: Board, ply: int) -> np.ndarray:
    """The messages generation ``ply`` of the build at ``root`` gets from ``ply + 1``, as an
    annotate task reads them: sorted, the best per parent (none for the last generation)."""
    if ply + 1 > board.cells:
        return np.empty(0, np.uint64)
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    nxt, nxt_outs = generation(root, ply + 1, "backward", outcomes=True)
    tail = np.zeros(1, np.int64)
    msgs = np.empty(nxt.shape[0] * board.width, np.uint64)
    msgs = msgs[: cpu.emit_parents(nxt, nxt_outs, ply + 1, *tabs, *untabs, msgs, tail)]
    sort_runs(msgs, int(tail[0]))
    return msgs[: cpu.keep_best(msgs)]


def main() -> None:
    args, board = build_args(__doc__, " (the 3D kernels write no runs)")
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    w = board.width
    for ply in args.plies:
        keys, outs = generation(args.root, ply, "backward", outcomes=True)
        n = keys.shape[0]
        print(f"{board.name} ply {ply}: {n} keys")

        def children():
            buf, tail = np.empty(n * w, np.uint64), np.zeros(1, np.int64)
            m = cpu.expand(keys, ply, *tabs, buf, np.zeros(4, np.int64), tail)
            return buf[:m], int(tail[0])

        def messages():
            buf, tail = np.empty(n * w, np.uint64), np.zeros(1, np.int64)
            return buf[: cpu.emit_parents(keys, outs, ply, *tabs, *untabs, buf, tail)], int(tail[0])

        price("children", children, n, args.repeat)
        price("messages", messages, n, args.repeat)
        resolve_cost(args.root, board, ply, keys, outs, args.repeat)


def resolve_cost(root: Path, board, ply: int, keys: np.ndarray, outs: np.ndarray,
                 repeat: int) -> None:
    """Print what ``resolve`` costs on generation ``ply`` given the messages of ``ply + 1``
    (sorted, best per parent, as an annotate task reads them), with its messages to ``ply - 1``
    and without (thread CPU, ns per key); check its outcomes against the build's."""
    if ply + 1 > board.cells:
        return
    tabs, untabs = cpu.board_tables(board), cpu.unmove_tables(board)
    msgs, tail = messages_to(root, board, ply), np.zeros(1, np.int64)
    n = keys.shape[0]
    out, sent = np.empty(n, np.uint8), np.empty(n * board.width, np.uint64)
    costs = []
    for send in (sent, np.empty(0, np.uint64)):
        def run():
            bad, _ = cpu.resolve(keys, msgs, ply, *tabs, *untabs, out, send, np.zeros(6, np.int64), tail)
            assert bad == -1
        run()
        costs.append(best_cpu(run, repeat) * 1e9 / n)
        assert np.array_equal(out, outs)
    print(f"  resolve   {msgs.shape[0] / n:5.2f} messages per key in; {costs[0]:6.1f} ns/key with its "
          f"messages out, {costs[1]:6.1f} without")


if __name__ == "__main__":
    main()
