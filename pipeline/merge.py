"""Final merge: every annotated generation into the single sorted table file.

Generations are disjoint (a position's ply is its chip count), so the table is their union
sorted by key. The smallest keys of the backward shards' row groups (parquet footer
statistics: no data read) cut the key space into ranges of about equal entry counts. One task
per range reads, from every generation, only the row groups overlapping its range, packs its
entries as ``key << 8 | outcome`` words, sorts them, converts them to big-endian ``K + 1``-byte
entries and writes them as a part file. The driver then appends the parts in key order to the
table's temporary file, hashing as it goes (each part is deleted once appended), fsyncs it,
records its size and hashes in the manifest, and only then renames it into place (see
:func:`run` for what a resumed merge does).
"""
from __future__ import annotations

import hashlib
import math
import os
import shutil
import time
from pathlib import Path

import numpy as np

from c4table.board import Board
from c4table.errors import BuildError
from pipeline import resources
from pipeline.kernels import pack_entries
from pipeline.shards import ShardInfo, fsync_dir, read_shard_range, row_group_starts, verify_shards

WORD = 8
PARTS = "work/merge"


def entries_to_bytes(packed: np.ndarray, entry_size: int) -> np.ndarray:
    """Big-endian ``entry_size``-byte rows of ``key << 8 | outcome`` words: the low bytes of
    each big-endian 8-byte word."""
    be = packed.astype(">u8").view(np.uint8).reshape(-1, WORD)
    return be[:, WORD - entry_size:]


def range_task(root: str, shards: list[dict], lo: int, hi: int, rel: str, entry_size: int) -> int:
    """Write the entries with ``lo <= key < hi`` of the given backward shards (every
    generation's shards that overlap the range) as the part file ``root/rel``; return how
    many."""
    rootp = Path(root)
    pieces = []
    for d in shards:
        keys, outs = read_shard_range(rootp, ShardInfo.from_json(d), lo, hi)
        if keys.shape[0]:
            packed = np.empty(keys.shape[0], np.uint64)
            pack_entries(keys, outs, packed)
            pieces.append(packed)
        del keys, outs
    packed = np.concatenate(pieces) if pieces else np.empty(0, np.uint64)
    del pieces
    packed.sort()
    count = int(packed.shape[0])
    if count > 1 and not (np.diff(packed >> np.uint64(8)).astype(np.int64) > 0).all():
        raise BuildError(f"duplicate keys across generations in range [{lo}, {hi})")
    data = np.ascontiguousarray(entries_to_bytes(packed, entry_size))
    del packed
    path = rootp / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(memoryview(data).cast("B"))
    os.replace(tmp, path)
    return count


def choose_ranges(root: Path, shards: list[ShardInfo], n_ranges: int) -> list[int]:
    """``n_ranges + 1`` (or fewer) increasing key boundaries with about equal entries between
    them, from the row groups' smallest keys; the first is 0, the last 2**64 - 1."""
    starts = sorted(st for s in shards for st in row_group_starts(root, s))
    total = sum(n for _, n in starts)
    bounds, acc = [0], 0
    step = total / max(1, n_ranges)
    for key, n in starts:
        if acc >= step * len(bounds) and key > bounds[-1]:
            bounds.append(key)
        acc += n
    bounds.append(int(np.iinfo(np.uint64).max))
    return bounds


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
    shards = [s for p in plies for s in m.shards("backward", p) if s.rows]
    total = sum(s.rows for s in shards)
    resources.check_free(build.root, resources.merge_need(build, plies), f"the table {final.name}")
    with resources.disk_full_guard(build.root, f"the table {final.name}", "every generation"):
        if "backward" not in build.verified:
            n = verify_shards(build.executor, build.root, shards)
            prog.note(f"verified {n} backward shard(s) (xxh64)")
            build.verified.add("backward")
        parts_dir = build.root / PARTS
        if parts_dir.exists():
            shutil.rmtree(parts_dir)
        # A range task holds its pieces, their packed copy and the entry bytes: ~3 words/entry.
        per_task = max(1, build.task_memory // (3 * WORD))
        n_ranges = max(math.ceil(total / per_task),
                       build.executor.workers if total >= build.min_parallel_rows else 1)
        bounds = choose_ranges(build.root, shards, n_ranges)
        E = board.entry_size
        tasks = []
        for r in range(len(bounds) - 1):
            lo, hi = bounds[r], bounds[r + 1]
            mine = [s.to_json() for s in shards if s.last >= lo and s.first < hi]
            tasks.append((str(build.root), mine, lo, hi, f"{PARTS}/part-{r:05d}.bin", E))
        counts = build.executor.map(range_task, tasks)
        if sum(counts) != total:
            raise BuildError(f"the merge wrote {sum(counts):,} entries, the generations hold {total:,}")
        prog = build.progress("merge", total=total * E)
        prog.note(f"sorted {total:,} entries ({total * E:,} bytes) in {len(tasks)} range(s) in "
                  f"{time.perf_counter() - t0:.2f}s; appending and hashing")
        hashes = append_parts(tmp, [build.root / t[4] for t in tasks])
        if hashes["bytes"] != total * E:
            raise BuildError(f"{tmp}: {hashes['bytes']:,} bytes written, expected {total * E:,}")
        shutil.rmtree(parts_dir, ignore_errors=True)
        m.data["table"] = {"file": final.name, "entries": total, "bytes": total * E, **hashes}
        m.data["totals"] = _totals(m.data["plies"])
        m.save()
    os.replace(tmp, final)
    fsync_dir(final.parent)
    build.verified.add("table")
    prog.note(f"{final.name}: sha256 {hashes['sha256']}  ({time.perf_counter() - t0:.2f}s)")
    return final


def append_parts(out: Path, parts: list[Path], chunk: int = 1 << 24) -> dict:
    """Write the concatenation of ``parts`` to ``out`` (replacing it), deleting each part once
    appended; fsync. Returns its sha256, md5 and size, computed on the way."""
    sha, md5 = hashlib.sha256(), hashlib.md5()
    size = 0
    buf = bytearray(chunk)
    view = memoryview(buf)
    with open(out, "wb") as dst:
        for p in parts:
            with open(p, "rb") as src:
                while True:
                    n = src.readinto(buf)
                    if not n:
                        break
                    sha.update(view[:n])
                    md5.update(view[:n])
                    dst.write(view[:n])
                    size += n
            p.unlink()
        dst.flush()
        os.fsync(dst.fileno())
    return {"sha256": sha.hexdigest(), "md5": md5.hexdigest(), "bytes": size}


def _totals(plies: list[dict]) -> dict:
    keys = ["entries", "positions", "terminal", "a_wins", "draws", "b_wins"]
    return {k: sum(p.get(k, 0) for p in plies) for k in keys}
