"""Backward pass: the outcome byte of every position, generation by generation, from the last
generation down to 0.

Generation g is annotated from generation g+1's entries (:func:`pipeline.kernels.annotate`):
one task per forward shard of g joins its positions' children against g+1 and writes a
backward shard ``(key, outcome)``. The driver keeps each annotated generation as a pair of
memory-mapped ``.npy`` arrays under ``work/cache/`` (keys and outcome bytes), so the tasks of
generation g-1 (in any process) share one copy through the page cache; the cache is rebuilt
from the backward shards when missing.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from c4table.board import Board
from c4table.errors import BuildError, CorruptDataError
from pipeline.kernels import annotate, board_tables, key_bits
from pipeline.shards import ShardInfo, read_shard, write_shard

CHUNK_SLOTS = 1 << 20  # child queries sorted together in one join chunk


def gen_dir(ply: int) -> str:
    return f"work/backward/ply_{ply:02d}"


def cache_paths(root: Path, ply: int) -> tuple[Path, Path]:
    d = root / "work" / "cache"
    return d / f"ply_{ply:02d}.keys.npy", d / f"ply_{ply:02d}.out.npy"


def load_cache(root: Path, ply: int) -> tuple[np.ndarray, np.ndarray]:
    kp, op = cache_paths(root, ply)
    return np.load(kp, mmap_mode="r"), np.load(op, mmap_mode="r")


def join_chunk_parents(board: Board) -> int:
    """Parents per join chunk so that ``key << idx_bits | slot`` fits 64 bits."""
    idx_bits = 64 - key_bits(board)
    slots = min(CHUNK_SLOTS, 1 << idx_bits)
    return max(1, slots // board.width)


def annotate_task(root: str, board_spec: tuple, ply: int, info_json: dict, offset: int,
                  cache_tmp: tuple[str, str], has_next: bool, rel: str):
    """Annotate one forward shard of generation ``ply``; write its backward shard and its slice
    of the generation's cache arrays. Returns (shard info json, stats int64[6])."""
    board = Board(*board_spec)
    rootp = Path(root)
    keys = read_shard(rootp, ShardInfo.from_json(info_json))
    if has_next:
        next_keys, next_out = load_cache(rootp, ply + 1)
    else:
        next_keys, next_out = np.empty(0, np.uint64), np.empty(0, np.uint8)
    out = np.empty(keys.shape[0], np.uint8)
    stats = np.zeros(6, np.int64)
    idx_bits = 64 - key_bits(board)
    bad = annotate(keys, ply, *board_tables(board), next_keys, next_out, idx_bits,
                   join_chunk_parents(board), out, stats)
    if bad >= 0:
        raise CorruptDataError(
            f"{root}/{info_json['file']}: a child of position key {int(keys[bad])} (ply {ply}) is "
            f"missing from generation {ply + 1}; the forward pass output is inconsistent")
    ck = np.load(cache_tmp[0], mmap_mode="r+")
    co = np.load(cache_tmp[1], mmap_mode="r+")
    ck[offset: offset + keys.shape[0]] = keys
    co[offset: offset + keys.shape[0]] = out
    ck.flush()
    co.flush()
    del ck, co
    info = write_shard(rootp, rel, keys, out)
    return info.to_json(), stats


def ensure_cache(build, ply: int) -> None:
    """Make sure the cache arrays of annotated generation ``ply`` exist (rebuild from shards)."""
    kp, op = cache_paths(build.root, ply)
    if kp.exists() and op.exists():
        return
    shards = build.manifest.shards("backward", ply)
    if shards is None:
        raise BuildError(f"generation {ply} has not been annotated yet")
    total = sum(s.rows for s in shards)
    ktmp, otmp = _new_cache(build.root, ply, total)
    ck = np.load(ktmp, mmap_mode="r+")
    co = np.load(otmp, mmap_mode="r+")
    off = 0
    for s in shards:
        k, o = read_shard(build.root, s, with_outcome=True)
        ck[off: off + s.rows] = k
        co[off: off + s.rows] = o
        off += s.rows
    ck.flush()
    co.flush()
    del ck, co
    os.replace(ktmp, kp)
    os.replace(otmp, op)


def _new_cache(root: Path, ply: int, n: int) -> tuple[Path, Path]:
    kp, op = cache_paths(root, ply)
    kp.parent.mkdir(parents=True, exist_ok=True)
    ktmp = kp.with_name(kp.name.replace(".npy", ".tmp.npy"))
    otmp = op.with_name(op.name.replace(".npy", ".tmp.npy"))
    if n == 0:  # numpy cannot memory-map an empty array
        np.save(ktmp, np.empty(0, np.uint64))
        np.save(otmp, np.empty(0, np.uint8))
    else:
        np.lib.format.open_memmap(ktmp, mode="w+", dtype=np.uint64, shape=(n,)).flush()
        np.lib.format.open_memmap(otmp, mode="w+", dtype=np.uint8, shape=(n,)).flush()
    return ktmp, otmp


def run(build) -> None:
    """Run (or resume) the backward pass over every generation the forward pass produced."""
    board: Board = build.board
    m = build.manifest
    last = board.cells
    if m.shards("forward", last) is None or "entries" not in m.ply_record(last):
        raise BuildError(f"{build.root}: the forward pass is not finished (run forward first)")
    total = sum(m.data["plies"][p]["entries"] for p in range(last + 1))
    prog = build.progress("backward", total=total)
    for ply in range(last, -1, -1):
        if m.shards("backward", ply) is not None:
            prog.done += m.data["plies"][ply]["entries"]
            continue
        t0 = time.perf_counter()
        has_next = ply < last and m.data["plies"][ply + 1]["entries"] > 0
        if has_next:
            ensure_cache(build, ply + 1)
        shards = [s for s in m.shards("forward", ply) if s.rows]
        n = sum(s.rows for s in shards)
        ktmp, otmp = _new_cache(build.root, ply, n)
        tasks, off = [], 0
        for i, s in enumerate(shards):
            tasks.append((str(build.root), board.spec, ply, s.to_json(), off, (str(ktmp), str(otmp)),
                          has_next, f"{gen_dir(ply)}/part-{i:05d}.parquet"))
            off += s.rows
        results = build.executor.map(annotate_task, tasks)
        stats = np.zeros(6, np.int64)
        infos = []
        for info, st in results:
            infos.append(ShardInfo.from_json(info))
            stats += st
        kp, op = cache_paths(build.root, ply)
        os.replace(ktmp, kp)
        os.replace(otmp, op)
        m.finish_step("backward", ply, infos)
        m.set_backward_counts(ply, stats)
        m.save()
        rec = m.data["plies"][ply]
        prog.step(f"ply {ply}", n, entries=n, a_wins=rec["a_wins"], draws=rec["draws"],
                  b_wins=rec["b_wins"], time=f"{time.perf_counter() - t0:.2f}s")
