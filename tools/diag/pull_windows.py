"""What the pulling backward pass would read for each shard of one generation of a build whose
forward pass (and the backward pass of the generation after it) is finished: the slices
:func:`c4table.pipeline.stages.pull.annotate` cuts a shard into at the build's task budget
(and where the windows reach more than ``SPREAD_ROWS`` rows per key), and for each shard the
most rows of the next generation a slice reads, as the windows of its columns reach them and
as the blocks that hold its children (what a slice too small to cut further reads when its
windows span too many). Reads only the keys and the block indexes.

    python -m tools.diag.pull_windows DIR PLY [--workers 2] [--memory 12GiB] [--top 8]
"""
from __future__ import annotations

import argparse

import numpy as np


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", help="a build directory (its board and shards from manifest.json)")
    ap.add_argument("ply", type=int, help="the generation whose shards would be annotated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="12GiB", help="the build's --memory (shared by the workers)")
    ap.add_argument("--top", type=int, default=8, help="shards listed, the widest windows first")
    a = ap.parse_args(argv)

    from c4table.builddir.reader import BuildDir
    from c4table.builddir.shards import read_shard
    from c4table.budget import MemoryBudget
    from c4table.io.storage import open_storage
    from c4table.pipeline.kernels import cpu
    from c4table.pipeline.stages import pull

    bd = BuildDir.load(a.dir)
    m = bd.manifest
    board = bd.board
    store = open_storage(a.dir)
    shards = [s for s in m.shards("forward", a.ply) if s.rows]
    nxt = pull.NextGeneration(store, [s for s in m.shards("backward", a.ply + 1) or [] if s.rows])
    memory = MemoryBudget.parse(a.memory).bytes // a.workers
    tabs, w = cpu.board_tables(board), board.width
    lo, hi = np.empty(w, np.uint64), np.empty(w, np.uint64)
    rows = []
    for i, sh in enumerate(shards):
        keys = read_shard(store, sh)
        n = keys.shape[0]
        held = n * (8 + 1) + n * w * 8      # keys, outcomes, the messages out (as annotate)
        allowance = max(pull.MIN_WINDOW_ROWS, (memory - held) // pull.ROW_BYTES)
        todo, slices, spans, exact = [(0, n)], 0, 0, 0
        while todo:
            i0, i1 = todo.pop()
            cpu.column_windows(keys[i0:i1], a.ply, *tabs, lo, hi)
            r = nxt.rows_of(nxt.blocks_of(lo, hi))
            if pull.too_wide(r, i1 - i0, allowance) and i1 - i0 >= 2 * pull.MIN_SLICE_KEYS:
                mid = (i0 + i1) // 2
                todo += [(mid, i1), (i0, mid)]
                continue
            slices += 1
            spans = max(spans, r)
            if pull.too_wide(r, i1 - i0, allowance):
                kids = np.empty((i1 - i0, w), np.uint64)
                cpu.pulled_children(keys[i0:i1], a.ply, *tabs, kids)
                r = min(r, nxt.rows_of(nxt.blocks_holding(kids.ravel())))
            exact = max(exact, r)
        rows.append((spans, exact, i, n, slices, allowance))
    rows.sort(reverse=True)
    print(f"{m.board} ply {a.ply}: {len(shards)} shards, {memory / 2**30:.1f} GiB a task "
          f"({a.workers} workers, --memory {a.memory}), windows at {pull.ROW_BYTES} bytes a row")
    print(f"{'shard':>6} {'keys':>12} {'slices':>6} {'allowed rows':>13} {'windows reach':>14} "
          f"{'children blocks':>16}")
    for spans, exact, i, n, slices, allowance in rows[: a.top]:
        print(f"{i:6d} {n:12,} {slices:6d} {allowance:13,} {spans:14,} {exact:16,}")


if __name__ == "__main__":
    main()
