"""Final merge: every annotated generation into the single sorted table file.

Generations are disjoint (a position's ply is its chip count), so the table is their union
sorted by key. Splitters sampled from all generations cut the key space into ranges; the
driver counts each range's entries (binary search in each generation's cache arrays), which
fixes every range's byte offset in the output in advance. One task per range packs its entries
as ``key << 8 | outcome`` words, sorts them, converts them to big-endian ``K + 1``-byte entries
and writes them at their offset with ``pwrite``. The file is written under a temporary name
(blocks reserved up front), fsync'ed and hashed; the manifest records its size and hashes, and
only then is it renamed into place (see :func:`run` for what a resumed merge does).
"""
from __future__ import annotations

import errno
import hashlib
import math
import os
import time
from pathlib import Path

import numpy as np

from c4table.board import Board
from c4table.errors import BuildError
from pipeline import backward, extsort
from pipeline.kernels import pack_entries
from pipeline.shards import fsync_dir

WORD = 8


def entries_to_bytes(packed: np.ndarray, entry_size: int) -> np.ndarray:
    """Big-endian ``entry_size``-byte rows of ``key << 8 | outcome`` words: the low bytes of
    each big-endian 8-byte word."""
    be = packed.astype(">u8").view(np.uint8).reshape(-1, WORD)
    return be[:, WORD - entry_size:]


def range_task(root: str, plies: list[int], lo: int, hi: int, out_path: str, offset: int,
               count: int, entry_size: int) -> int:
    """Write the entries with ``lo <= key < hi`` at entry ``offset`` of ``out_path``."""
    rootp = Path(root)
    packed = np.empty(count, np.uint64)
    pos = 0
    lo_u, hi_u = np.uint64(lo), np.uint64(hi)
    for ply in plies:
        keys, outs = backward.load_cache(rootp, ply)
        a = int(np.searchsorted(keys, lo_u, "left"))
        b = int(np.searchsorted(keys, hi_u, "left"))
        if b > a:
            pack_entries(keys[a:b], outs[a:b], packed[pos: pos + b - a])
            pos += b - a
    if pos != count:
        raise BuildError(f"range [{lo}, {hi}) holds {pos} entries, expected {count}")
    packed.sort()
    if count > 1 and not (np.diff(packed >> np.uint64(8)).astype(np.int64) > 0).all():
        raise BuildError(f"duplicate keys across generations in range [{lo}, {hi})")
    data = np.ascontiguousarray(entries_to_bytes(packed, entry_size))
    fd = os.open(out_path, os.O_WRONLY)
    try:
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += os.pwrite(fd, view[written:], offset * entry_size + written)
    finally:
        os.close(fd)
    return count


def hash_file(path: Path, progress=None, chunk: int = 1 << 24) -> dict:
    """sha256 and md5 of a file, streamed."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    size = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            sha.update(b)
            md5.update(b)
            size += len(b)
            if progress is not None:
                progress(len(b))
    return {"sha256": sha.hexdigest(), "md5": md5.hexdigest(), "bytes": size}


def run(build) -> Path:
    """Write (or find already written) ``DIR/connect4_WxH.dat``; return its path.

    The manifest records the table's size and hashes *before* the temporary file is renamed
    into place, so after a crash either the recorded table is there (and is verified by
    sha256, :meth:`Build.complete`), or it is still under ``.tmp`` (verified, then renamed),
    or nothing is recorded and the merge runs again (a file without a record is not trusted)."""
    board: Board = build.board
    m = build.manifest
    final = build.root / board.table_filename
    tmp = final.with_name(final.name + ".tmp")
    if build.complete():
        return final
    prog = build.progress("merge")
    rec = m.table
    if rec is not None and tmp.exists() and tmp.stat().st_size == rec["bytes"]:
        prog.note(f"found the finished table under {tmp.name}; verifying it (sha256)")
        if hash_file(tmp)["sha256"] == rec["sha256"]:
            os.replace(tmp, final)
            fsync_dir(final.parent)
            build.verified.add("table")
            prog.note(f"{final.name}: sha256 {rec['sha256']}")
            return final
        prog.note(f"{tmp.name} does not match the manifest; merging again")
    if rec is None and final.exists():
        prog.note(f"{final.name} has no record in the manifest (interrupted merge?); not trusted, "
                  "merging again")
    plies = list(range(board.cells + 1))
    missing = [p for p in plies if m.shards("backward", p) is None]
    if missing:
        raise BuildError(f"{build.root}: the backward pass is not finished (plies {missing[:5]}... missing)")
    t0 = time.perf_counter()
    plies = [p for p in plies if m.data["plies"][p]["entries"] > 0]
    from pipeline import resources
    resources.check_free(build.root, resources.merge_need(build, plies), f"the table {final.name}")
    with resources.disk_full_guard(build.root, f"the table {final.name}", "every generation"):
        for p in plies:
            backward.ensure_cache(build, p)
        total = sum(m.data["plies"][p]["entries"] for p in plies)
        per_task = max(1, build.task_memory // (3 * WORD))
        n_ranges = max(math.ceil(total / per_task),
                       build.executor.workers if total >= build.min_parallel_rows else 1)
        samples = [extsort.sample(backward.load_cache(build.root, p)[0], 1024) for p in plies]
        bounds = extsort.choose_splitters(samples, n_ranges)
        counts = [0] * (len(bounds) - 1)
        for p in plies:
            keys = backward.load_cache(build.root, p)[0]
            idx = np.searchsorted(keys, np.array(bounds, dtype=np.uint64), "left")
            idx[-1] = keys.shape[0]
            for r in range(len(counts)):
                counts[r] += int(idx[r + 1] - idx[r])
        assert sum(counts) == total
        E = board.entry_size
        with open(tmp, "wb") as f:
            f.truncate(total * E)
            if total:
                try:  # reserve the blocks: a full disk fails now, not half-way
                    os.posix_fallocate(f.fileno(), 0, total * E)
                except OSError as e:
                    if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
        tasks, off = [], 0
        for r, c in enumerate(counts):
            if c:
                tasks.append((str(build.root), plies, bounds[r], bounds[r + 1], str(tmp), off, c, E))
            off += c
        build.executor.map(range_task, tasks)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        prog = build.progress("merge", total=total * E)
        prog.note(f"wrote {total:,} entries ({total * E:,} bytes) in {time.perf_counter() - t0:.2f}s; hashing")
        hashes = hash_file(tmp)
        m.data["table"] = {"file": final.name, "entries": total, "bytes": total * E, **hashes}
        m.data["totals"] = _totals(m.data["plies"])
        m.save()
    os.replace(tmp, final)
    fsync_dir(final.parent)
    build.verified.add("table")
    prog.note(f"{final.name}: sha256 {hashes['sha256']}  ({time.perf_counter() - t0:.2f}s)")
    return final


def _totals(plies: list[dict]) -> dict:
    keys = ["entries", "positions", "terminal", "a_wins", "draws", "b_wins"]
    return {k: sum(p.get(k, 0) for p in plies) for k in keys}
