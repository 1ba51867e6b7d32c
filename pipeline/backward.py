"""Backward pass: the outcome byte of every position, generation by generation, from the last
generation down to 0.

Generation g is annotated from generation g+1's entries (:func:`pipeline.kernels.annotate`):
one task per forward shard of g joins its positions' children against g+1 and writes a
backward shard ``(key, outcome)``. The driver keeps each annotated generation as a pair of
memory-mapped ``.npy`` arrays under ``work/cache/`` (keys and outcome bytes), so the tasks of
generation g-1 (in any process) share one copy through the page cache. Cache files are built
under ``*.tmp.npy`` names (blocks reserved up front), fsync'ed and renamed; the backward step
records their xxh64, and a cache this process did not write is used only if it matches
(otherwise it is rebuilt from the backward shards).
"""
from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path

import numpy as np

from c4table.board import Board
from c4table.errors import BuildError, CorruptDataError
from pipeline import resources
from pipeline.kernels import annotate, board_tables, key_bits
from pipeline.shards import ShardInfo, file_xxh64, fsync_dir, read_shard, verify_shards, write_shard

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
    """Make sure the cache arrays of annotated generation ``ply`` exist and can be trusted.

    Cache files this process did not write are checked against the xxh64 that the backward
    step recorded; a missing, unrecorded or mismatching cache is rebuilt from the (checksummed)
    backward shards, so a killed build never reuses a partial or damaged cache."""
    kp, op = cache_paths(build.root, ply)
    tag = f"cache {ply}"
    if tag in build.verified and kp.exists() and op.exists():
        return
    shards = build.manifest.shards("backward", ply)
    if shards is None:
        raise BuildError(f"generation {ply} has not been annotated yet")
    rec = build.manifest.data["steps"]["backward"][str(ply)].get("cache")
    if kp.exists() and op.exists():
        if rec is not None and cache_digests(build.root, ply) == rec:
            build.verified.add(tag)
            return
        build.note("backward", f"cache of generation {ply} does not match the manifest; "
                               "rebuilding it from the shards")
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
    _install_cache(build.root, ply, ktmp, otmp)
    build.verified.add(tag)


def cache_digests(root: Path, ply: int, paths: tuple[Path, Path] | None = None) -> dict:
    """xxh64 of the two cache files of generation ``ply`` (or of ``paths``)."""
    kp, op = paths or cache_paths(root, ply)
    return {"keys": file_xxh64(kp), "out": file_xxh64(op)}


def _install_cache(root: Path, ply: int, ktmp: Path, otmp: Path) -> None:
    """fsync the finished temporary cache files and rename them into place."""
    kp, op = cache_paths(root, ply)
    for t in (ktmp, otmp):
        fd = os.open(t, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    os.replace(ktmp, kp)
    os.replace(otmp, op)
    fsync_dir(kp.parent)


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
        for t in (ktmp, otmp):  # reserve the blocks: a full disk fails here with ENOSPC,
            fd = os.open(t, os.O_RDWR)  # not later with SIGBUS in a task writing the map
            try:
                os.posix_fallocate(fd, 0, os.fstat(fd).st_size)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
            finally:
                os.close(fd)
    return ktmp, otmp


def run(build) -> None:
    """Run (or resume) the backward pass over every generation the forward pass produced.

    On resume the finished generations' backward shards are verified (xxh64), not recomputed,
    and a cache is used only if it matches its recorded checksum (:func:`ensure_cache`)."""
    board: Board = build.board
    m = build.manifest
    last = board.cells
    if build.complete():
        return
    if m.shards("forward", last) is None or "entries" not in m.ply_record(last):
        raise BuildError(f"{build.root}: the forward pass is not finished (run forward first)")
    total = sum(m.data["plies"][p]["entries"] for p in range(last + 1))
    prog = build.progress("backward", total=total)
    todo = [p for p in range(last, -1, -1) if m.shards("backward", p) is None]
    done = [p for p in range(last, -1, -1) if m.shards("backward", p) is not None]
    if todo and "backward" not in build.verified:
        # Verify up front what this process did not write: the finished backward generations,
        # and the forward shards still to be read unless this process's forward pass made or
        # verified them. (Every read checks again; this makes a damaged file fail first.)
        check, parts = [], []
        if "forward" not in build.verified:
            check += [s for p in todo for s in m.shards("forward", p)]
            parts.append(f"forward generations {todo[-1]}-{todo[0]}")
        if done:
            check += [s for p in done for s in m.shards("backward", p)]
            parts.append(f"backward generations {done[-1]}-{done[0]}")
        if check:
            n = verify_shards(build.executor, build.root, check)
            prog.note(f"{'resuming at ply %d: ' % todo[0] if done else ''}verified {n} finished "
                      f"shard(s) of {' and '.join(parts)} (xxh64)")
        build.verified.add("backward")
    for ply in range(last, -1, -1):
        if m.shards("backward", ply) is not None:
            prog.done += m.data["plies"][ply]["entries"]
            continue
        t0 = time.perf_counter()
        what = f"backward generation {ply}"
        resources.check_free(build.root, resources.backward_need(build, ply), what)
        stale = build.root / gen_dir(ply)   # an unfinished attempt's shards
        if stale.exists():
            shutil.rmtree(stale)
        finished = f"backward generations {ply + 1}-{last}" if ply < last else "the forward pass"
        with resources.disk_full_guard(build.root, what, finished):
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
            digests = cache_digests(build.root, ply, (ktmp, otmp))
            _install_cache(build.root, ply, ktmp, otmp)
            build.verified.add(f"cache {ply}")
            m.finish_step("backward", ply, infos, cache=digests)
            m.set_backward_counts(ply, stats)
            m.save()
        rec = m.data["plies"][ply]
        prog.step(f"ply {ply}", n, entries=n, a_wins=rec["a_wins"], draws=rec["draws"],
                  b_wins=rec["b_wins"], time=f"{time.perf_counter() - t0:.2f}s")
