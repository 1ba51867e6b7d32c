"""Final merge: every annotated generation into the single sorted table file.

Generations are disjoint (a position's ply is its chip count), so the table is their union
sorted by key. The smallest keys of the backward shards' blocks (their block
indexes: no data read) cut the key space into ranges of about equal entry counts (locally,
a single wave of them is cut into waves of growing size: :func:`~c4table.pipeline.sort.partition.merge_shares`). One task
per range reads, from every generation, only the row groups overlapping its range, packs its
entries as ``key << 8 | outcome`` words (each generation's slice already sorted), orders them
piece by cache-sized piece (:func:`~c4table.pipeline.sort.extsort.sorted_chunks`) and converts them to big-endian ``K + 1``-byte
entries. In a local build directory each task writes its entries straight into the table's
temporary file at their final place: its offset is the count of entries below its range's
first key, which it finds as it reads (shards wholly below from their records, row groups
from their footers' statistics, and the row group straddling the boundary, read anyway), and
writes them around the page cache (``O_DIRECT``: the whole blocks from two reused aligned
buffers, the partial blocks it shares with its neighbours through the page cache;
:class:`~c4table.io.storage.PositionalWriter`), since new page-cache pages are what
writing a table cost on a virtual machine that hands freed memory back to its host. Each
task hashes, as it writes, the tree hash's pieces and the block sums sidecar's blocks that lie
inside its bytes and returns the bytes at its edges (:class:`RangeWritten`); the driver
combines them in range order, hashing only the pieces two ranges straddle
(:func:`hash_ranges`; the whole-file sha256 and md5 only with ``C4TABLE_TABLE_SHA256`` and
``C4TABLE_TABLE_MD5``, read back in key order), then fsyncs the file, records its size and
hashes in the manifest, and only then renames it into place (see :func:`run` for what a
resumed merge does). Where the file system refuses ``O_DIRECT`` the same code goes through the
page cache, and the driver starts each range's writeback as it comes in. On an object store (no positional writes) each task writes a part file and the driver
appends the parts in key order while hashing, deleting each part once appended.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import xxhash

from c4table.wording import count
from c4table.errors import BuildError, BuildInputError, CorruptDataError
from c4table.io.hashes import Hashes
from c4table.io import treehash
from c4table.io.treehash import FIELD, SpanCut, SpanEdges, TreeHash, combine, tree_hash_file
from c4table.table.sums import BLOCK_ENTRIES, BlockSums, SumsWriter
from c4table.pipeline.runtime import allocator, resources
from c4table.pipeline.sort.extsort import sorted_chunks
from c4table.pipeline.kernels.cpu import pack_entries, pack_mapped, strictly_increasing_keys, words_to_entries
from c4table.pipeline.sort.partition import merge_shares
from c4table.builddir.records import TableRecord
from c4table.builddir.tableformat import DAT
from c4table.builddir.shards import ShardInfo, open_row_groups, read_row_groups, verify_shards
from c4table.io.storage import Storage, open_storage
from c4table.io.files import background, fsync_path, start_writeback

READ_GROUPS = 8          # row groups decoded at a time by a range task (~1 M entries)
WRITE_CHUNK = 1 << 22    # entries converted to bytes at a time
SORT_PIECE = 1 << 16     # words sorted at a time: fewer pieces than extsort.SORT_CHUNK, since a
                         # traced task (counters.run_counted) pays ~1 us per Python allocation
PARTS = "work/merge"
PROGRESS_EVERY = 10.0    # seconds between two progress lines of the range tasks


def entries_to_bytes(packed: np.ndarray, entry_size: int) -> np.ndarray:
    """Big-endian ``entry_size``-byte rows of ``key << 8 | outcome`` words: the low bytes of
    each big-endian 8-byte word (:func:`~c4table.pipeline.kernels.cpu.words_to_entries`).

    >>> entries_to_bytes(np.array([0x0102_03FF], np.uint64), 5).tolist()
    [[0, 1, 2, 3, 255]]
    """
    out = np.empty((packed.shape[0], entry_size), np.uint8)
    words_to_entries(packed, entry_size, out.reshape(-1))
    return out


@dataclass
class RangeWords:
    """The entries of one merge range as a range task gathered them: ``under`` entries of the
    table lie below the range (its offset, when the task was given ``below``), ``count`` in it,
    and ``ordered()`` yields its ``key << 8 | outcome`` words in key order, piece by piece
    (checked strictly increasing)."""

    under: int
    count: int
    ordered: object


def gather_range(store: Storage, shards: list[dict], lo: int, hi: int,
                 below: int | None = None, maps: list | None = None) -> RangeWords:
    """Read the entries with ``lo <= key < hi`` of the given backward shards into one word per
    entry and count the entries under ``lo`` (``below`` plus those of its own shards): see
    :func:`range_task`. ``maps``: per shard, a 256-byte map its outcome bytes go through into
    the words (:func:`~c4table.pipeline.kernels.cpu.pack_mapped`)."""
    under = below or 0   # entries with a key below lo
    picks = []
    for d in shards:
        info = ShardInfo.from_json(d)
        shard, groups = open_row_groups(store, info)
        under += sum(g.rows for g in groups if g.last < lo)
        picks.append((shard, [g for g in groups if g.last >= lo and g.first < hi]))
    packed = allocator.buffer(sum(g.rows for _, groups in picks for g in groups), np.uint64,
                              "range words")
    pos = 0
    starts = []
    for k, (shard, groups) in enumerate(picks):
        starts.append(pos)
        for i in range(0, len(groups), READ_GROUPS):
            keys, outs = read_row_groups(shard, [g.index for g in groups[i: i + READ_GROUPS]])
            a = int(np.searchsorted(keys, np.uint64(lo), "left"))
            b = int(np.searchsorted(keys, np.uint64(hi), "left"))
            if maps is None:
                pack_entries(keys[a:b], outs[a:b], packed[pos: pos + b - a])
            else:
                pack_mapped(keys[a:b], outs[a:b], maps[k], packed[pos: pos + b - a])
            pos += b - a
            under += a   # keys of these row groups below lo (the one straddling lo has them)
            del keys, outs
    packed = packed[:pos]
    ends = np.array([*starts[1:], pos], np.int64)
    starts = np.array(starts, np.int64)

    def ordered():   # the words in key order, piece by piece, checked
        prev = -1
        for words in sorted_chunks(packed, starts, ends, SORT_PIECE):
            if not strictly_increasing_keys(words) or (words.shape[0] and int(words[0]) >> 8 <= prev):
                raise BuildError(f"duplicate keys across generations in range [{lo}, {hi})")
            if words.shape[0]:
                prev = int(words[-1]) >> 8
                yield words

    return RangeWords(under, pos, ordered)


def range_task(root: str, shards: list[dict], lo: int, hi: int, rel: str, entry_size: int,
               below: int | None = None, direct: bool = False):
    """Write the entries with ``lo <= key < hi`` of the given backward shards (every
    generation's shards that overlap the range) as the part file ``rel`` and return how many;
    or, with ``below`` (the entries of the shards lying wholly under ``lo``, which their records
    give), into the existing file ``rel`` at their place: the task finds its offset itself,
    ``below`` plus the entries under ``lo`` in its own shards, which it counts as it reads them
    (whole row groups from their footers' key statistics, and the row group straddling ``lo``,
    which it reads anyway), and returns them with the hashes of the tree's pieces and of the
    sidecar's blocks that lie inside its bytes, and its bytes at the edges
    (:class:`RangeWritten`). So no round of counting tasks runs before the range tasks, and
    the driver reads none of the table back.

    ``direct``: write around the page cache where the file system allows it
    (:meth:`~c4table.io.storage.Storage.writer_at`; a part file is written as before).

    Memory: one uint64 word per entry (sized from the row groups' counts, filled row group by
    row group), then converted straight into the writer's two reused buffers (or, for a part,
    chunks) and written. Each generation's slice is already sorted
    (and generations are disjoint), so the words are not sorted as a whole: they are cut into
    key ranges of about :data:`SORT_PIECE` words that fit the CPU cache
    (:func:`~c4table.pipeline.sort.extsort.sorted_chunks`),
    and each range's slices are gathered and sorted there."""
    store = open_storage(root)
    rw = gather_range(store, shards, lo, hi, below)
    under, pos, ordered = rw.under, rw.count, rw.ordered

    if below is None:   # a part file (object store): fresh chunks, an upload may hold them
        def chunks():
            out = np.empty(WRITE_CHUNK * entry_size, np.uint8)
            n_out = 0
            for words in ordered():
                s = 0
                while s < words.shape[0]:
                    take = min(words.shape[0] - s, WRITE_CHUNK - n_out)
                    words_to_entries(words[s: s + take], entry_size,
                                     out[n_out * entry_size: (n_out + take) * entry_size])
                    n_out += take
                    s += take
                    if n_out == WRITE_CHUNK:
                        yield out.data
                        out = np.empty(WRITE_CHUNK * entry_size, np.uint8)
                        n_out = 0
            if n_out:
                yield out[: n_out * entry_size].data

        store.write_atomic_chunks(rel, chunks(), durable=False)   # a part is scratch
        return pos
    # in place: converted straight into the writer's reused buffers, written around the page
    # cache where the file system allows it (direct); the tree's pieces and the sidecar's
    # blocks inside the range hashed on the way (the driver hashes only those it straddles)
    start = under * entry_size
    tree = SpanCut(start, treehash.PIECE_BYTES)
    sums = SpanCut(start, BLOCK_ENTRIES * entry_size, xxhash.xxh64_intdigest, _u64)
    with store.writer_at(rel, start, direct) as w:
        for words in ordered():
            s = 0
            while s < words.shape[0]:
                space = np.frombuffer(w.space(entry_size), np.uint8)
                take = min(words.shape[0] - s, space.shape[0] // entry_size)
                out = space[: take * entry_size]
                words_to_entries(words[s: s + take], entry_size, out)
                tree.update(out)
                sums.update(out)
                w.commit(take * entry_size)
                s += take
                del space, out
    return RangeWritten(under, pos, tree.finish(), sums.finish())


def _u64(xs: list) -> np.ndarray:
    return np.array(xs, np.uint64)


@dataclass
class RangeWritten:
    """What a range task of :func:`range_task` wrote in place: ``count`` entries from entry
    ``offset`` of the table; ``tree``, the tree hash's pieces inside its bytes and the bytes
    at its edges (:class:`~c4table.io.treehash.SpanEdges`), ``sums`` the same for the
    sidecar's xxh64 blocks (:class:`~c4table.table.sums.BlockSums`)."""

    offset: int
    count: int
    tree: SpanEdges
    sums: SpanEdges


def choose_ranges(store: Storage, shards: list[ShardInfo], n_ranges: int,
                  shares: list[float] | None = None) -> list[int]:
    """``n_ranges + 1`` (or fewer) increasing key boundaries with about equal entries between
    them (or, with ``shares``, about those shares of the entries, in order: ``n_ranges`` is then
    their count), from the row groups' smallest keys; the first is 0, the last 2**64 - 1."""
    starts = sorted((g.first, g.rows) for s in shards for g in open_row_groups(store, s)[1])
    total = sum(n for _, n in starts)
    if shares is None:
        shares = [1 / max(1, n_ranges)] * max(1, n_ranges)
    cuts = (np.cumsum(shares)[:-1] * total).tolist()   # entries below boundary 1, 2, ...
    bounds, acc = [0], 0
    for key, n in starts:
        if len(bounds) <= len(cuts) and acc >= cuts[len(bounds) - 1] and key > bounds[-1]:
            bounds.append(key)
        acc += n
    bounds.append(int(np.iinfo(np.uint64).max))
    return bounds


def hash_stored(store: Storage, rel: str, chunk: int = 1 << 24, md5: bool = True,
                sha256: bool = True, tree: bool = True) -> dict:
    """Tree hash, sha256, md5 (each unless not asked) and size of a file of ``store``,
    streamed."""
    h = Hashes(md5, sha256=sha256, tree=tree)
    with store.open_input_stream(rel) as f:
        while b := f.read(chunk):
            h.update(b)
    return h.result()


def hash_ranges(store: Storage, rel: str, entry_size: int, n_ranges: int, total: int,
                written, direct: bool = False, md5: bool = False, sums=None,
                sha256: bool = False) -> dict:
    """The digests of the local file ``rel`` of ``total`` entries that ``n_ranges`` range
    tasks are filling: ``written`` yields, in range order, their :class:`RangeWritten` (e.g.
    :meth:`Executor.imap` of the range tasks, while later ranges still run). Its tree hash
    (``sha256_tree``) and its sidecar's block sums (``sums``, a
    :class:`~c4table.table.sums.BlockSums`, if given) are combined from what the tasks hashed:
    only the pieces and blocks that straddle two ranges are hashed here, from the bytes the
    tasks returned (:func:`~c4table.io.treehash.combine`). With ``sha256`` or ``md5`` each
    range is read back and hashed in key order as soon as it and every range before it are
    written (one core: on a large table the longest serial part of the build); with ``direct``
    around the page cache (the tasks wrote them so: :meth:`~c4table.io.storage.Storage.read_chunks`).
    Without ``direct`` the kernel is asked to start writing each range to disk as soon as it
    is in (:func:`~c4table.io.storage.start_writeback`, in a background thread), so that the
    caller's fsync of the table waits for little. Raises :class:`BuildError` if a range does
    not start where the one before it ended, the ranges do not add up to ``total`` or the file
    holds more (the file is then not trusted).

    >>> import pathlib
    >>> from c4table.io.treehash import SpanEdges, tree_hash
    >>> d = pathlib.Path("hash_ranges"); d.mkdir(exist_ok=True); _ = (d / "t").write_bytes(b"abcdef")
    >>> runs = [RangeWritten(0, 1, SpanEdges(0, 1 << 26, b"ab"), SpanEdges(0, 8, b"ab")),
    ...         RangeWritten(1, 2, SpanEdges(2, 1 << 26, b"cdef"), SpanEdges(2, 8, b"cdef"))]
    >>> h = hash_ranges(open_storage(d), "t", 2, 2, 3, iter(runs), sha256=True)
    >>> h["bytes"], h["sha256_tree"] == tree_hash(b"abcdef")
    (6, True)
    """
    tree = TreeHash()
    whole = Hashes(md5, sha256=sha256, tree=False) if md5 or sha256 else None
    done = ranges = at = 0   # bytes hashed whole, ranges finished, entries they cover
    for r, rw in enumerate(written):
        ranges += 1
        if r >= n_ranges or rw.offset != at:
            where = f"starts at entry {rw.offset:,} where the ranges before it end at {at:,}" \
                if r < n_ranges else "is one range too many"
            raise BuildError(f"merge range {r} {where} (the table file is not trusted)")
        c = rw.count
        if c and store.local and not direct:
            background("writeback").submit(start_writeback, store.root / rel, rw.offset * entry_size,
                                           c * entry_size)
        at += c
        end = at * entry_size
        if rw.tree.end != end or (sums is not None and rw.sums.end != end):
            raise BuildError(f"merge range {r}: its hashed bytes end at {rw.tree.end:,}, its "
                             f"entries at byte {end:,} (the table file is not trusted)")
        combine(tree, [rw.tree])
        if sums is not None:
            combine(sums, [rw.sums])
        if whole is not None and done < end:
            # Opened afresh once the range is written, and never read ahead of it (through
            # the page cache): on a file system shared between hosts (NFS) a reader sees
            # another host's writes only from an open made after they were closed.
            for view in store.read_chunks(rel, done, end, direct):
                whole.update(view)
                done += len(view)
    if ranges != n_ranges:
        raise BuildError(f"the merge finished {ranges} of {n_ranges} ranges")
    if at != total:
        raise BuildError(f"the merge ranges wrote {at:,} entries where {total:,} were counted "
                         "(the table file is not trusted)")
    size = store.size(rel)
    if size != total * entry_size:
        raise BuildError(f"{store.display(rel)}: {size:,} bytes where the ranges wrote "
                         f"{total * entry_size:,} (the table file is not trusted)")
    out = tree.result()
    if whole is not None:
        out.update((k, v) for k, v in whole.result().items() if k != "bytes")
    return out


def verify_stored(store: Storage, rel: str, rec) -> str | None:
    """Check the file ``rel`` of ``store`` against the record ``rec`` (a table's or a
    container's) by its tree hash (a local file: pieces on threads; else streamed) or, for a
    record without one, its sha256; None if it matches, else what differs."""
    if rec.sha256_tree:
        got = tree_hash_file(store.root / rel)[FIELD] if store.local else \
            hash_stored(store, rel, md5=False, sha256=False)[FIELD]
        return None if got == rec.sha256_tree else f"{FIELD} {got}"
    got = hash_stored(store, rel, md5=False, tree=False)["sha256"]
    return None if got == rec.sha256 else f"sha256 {got}"


def table_location(build):
    """The table's path (local builds) or URI."""
    name = build.table_name
    return build.store.root / name if build.store.local else build.store.display(name)


@dataclass(frozen=True)
class BackwardShards:
    """The backward pass's shards that hold entries, generation by generation in key order
    within each, and the ply of each (``plies[i]`` is ``shards[i]``'s): what both merges read."""

    shards: list
    plies: list

    @property
    def total(self) -> int:
        return sum(s.rows for s in self.shards)


def backward_shards(build) -> BackwardShards:
    """The finished backward pass's non-empty shards of every ply of ``build``;
    :class:`BuildInputError` if a ply is not finished."""
    m = build.manifest
    plies = list(range(build.board.cells + 1))
    missing = [p for p in plies if m.shards("backward", p) is None]
    if missing:
        raise BuildInputError(f"{build.root}: the backward pass is not finished (plies "
                              f"{missing[:5]}... missing)")
    pairs = [(s, p) for p in plies for s in m.shards("backward", p) if s.rows]
    return BackwardShards([s for s, _ in pairs], [p for _, p in pairs])


def _found_finished(build, name: str, tmp_name: str, prog) -> bool:
    """True if the table is already in place: recorded and verified, or found whole under
    ``tmp_name`` (verified against its record, then renamed). Says why a table file found
    without a matching record is merged again."""
    store, rec = build.store, build.manifest.table
    if build.complete():
        return True
    if rec is not None and store.local and store.exists(tmp_name) and store.size(tmp_name) == rec.bytes:
        prog.note(f"found the finished table under {tmp_name}; verifying it")
        if verify_stored(store, tmp_name, rec) is None:
            store.rename(tmp_name, name)
            build.verified.add("table")
            prog.note(f"{name}: {rec.identity}")
            return True
        prog.note(f"{tmp_name} does not match the manifest; merging again")
    if rec is None and store.exists(name):
        prog.note(f"{name} has no record in the manifest (interrupted merge?); not trusted, "
                  "merging again")
    return False


def reported(results, prog, first: int, n_ranges: int, every: float | None = None):
    """The range tasks' ``results`` (each with its ``count`` of entries, or that count; the
    ranges after ``first`` of ``n_ranges``) passed on as they come, with a progress line of
    ``prog`` (a :class:`~c4table.progress.Progress` whose ``total`` is the entries these ranges
    hold) once ``every`` seconds (default :data:`PROGRESS_EVERY`) have passed since the last:
    ranges and entries, rate, ETA.

    >>> import io
    >>> from c4table.progress import Progress
    >>> out = io.StringIO()
    >>> class R:
    ...     count = 5
    >>> p = Progress("merge", total=15, stream=out)
    >>> len(list(reported([R(), R(), R()], p, 3, 6, every=0.0)))
    3
    >>> out.getvalue().splitlines()[-1].startswith("[merge] range 6/6  entries 15  ")
    True
    """
    every = PROGRESS_EVERY if every is None else every
    last, pending = time.perf_counter(), 0
    for k, r in enumerate(results, first + 1):
        pending += r if isinstance(r, int) else r.count
        now = time.perf_counter()
        if now - last >= every:
            prog.step(f"range {k}/{n_ranges}", pending, now=now, entries=prog.done + pending)
            last, pending = now, 0
        yield r


def _write_local(build, shards: list, bounds: list, target: str, sums, prog, t0: float) -> dict:
    """The ranges merged into the local table file ``target``, each written at its place and
    hashed once it and those before it are (:func:`hash_ranges`): the hashes."""
    store, E = build.store, build.board.entry_size
    total = sum(s.rows for s in shards)
    n_r = len(bounds) - 1
    with open(store.root / target, "wb") as f:   # the table's size, filled by the tasks
        f.truncate(total * E)
    # each range task finds its offset itself: the entries of the shards wholly below its
    # range (here, from their records) and those below it in its own shards
    direct = store.direct_io_takes(target)   # around the page cache if it can
    tasks = [(store.uri, _inside(shards, bounds, r), bounds[r], bounds[r + 1], target, E,
              sum(s.rows for s in shards if s.last < bounds[r]), direct) for r in range(n_r)]
    # (the counts saved after each range: RunLedger.saving)
    results = reported(build.ledger.saving(build.executor.imap(range_task, tasks)),
                       build.progress("merge", total=total), 0, n_r)
    hashes = hash_ranges(store, target, E, n_r, total, results, direct, build.table_md5, sums,
                         build.table_sha256)
    prog.note(f"sorted and hashed {total:,} entries ({total * E:,} bytes) in "
              f"{count(len(tasks), 'range')} in {time.perf_counter() - t0:.2f}s")
    fsync_path(store.root / target)
    return hashes


def _write_parts(build, shards: list, bounds: list, target: str, sums, prog, t0: float) -> dict:
    """The ranges merged into part objects of an object store, then appended into ``target``
    in order and hashed (:func:`append_parts`): the hashes."""
    store, E = build.store, build.board.entry_size
    total = sum(s.rows for s in shards)
    tasks = [(store.uri, _inside(shards, bounds, r), bounds[r], bounds[r + 1],
              f"{PARTS}/part-{r:05d}.bin", E) for r in range(len(bounds) - 1)]
    counts = list(reported(build.executor.imap(range_task, tasks), build.progress("merge", total=total),
                           0, len(tasks)))
    if sum(counts) != total:
        raise BuildError(f"the merge wrote {sum(counts):,} entries, the generations hold {total:,}")
    prog.note(f"sorted {total:,} entries ({total * E:,} bytes) in {count(len(tasks), 'range')} "
              f"in {time.perf_counter() - t0:.2f}s; appending and hashing")
    return append_parts(store, target, [t[4] for t in tasks], md5=build.table_md5, sums=sums,
                        sha256=build.table_sha256)


def _inside(shards: list, bounds: list, r: int) -> list[dict]:
    """The records of the shards that hold keys of range ``r``."""
    return [s.to_json() for s in shards if s.last >= bounds[r] and s.first < bounds[r + 1]]


def run(build):
    """Write (or find already written) ``DIR/connect4_WxH.dat`` (a rooted build:
    ``DIR/connect4_WxH_root-MOVES.dat``); return its path (or URI). (A ``--format c4z``
    build runs :func:`c4table.pipeline.stages.merge_c4z.run` instead:
    :func:`c4table.pipeline.stages.build.merge_of`.)

    Locally, the manifest records the table's size and hashes *before* the temporary file is
    renamed into place, so after a crash either the recorded table is there (and is verified
    by its tree hash, :meth:`Build.complete`), or it is still under ``.tmp`` (verified, then
    renamed), or nothing is recorded and the merge runs again (a file without a record is not
    trusted).
    On an object store the table is uploaded under its name (it appears only when complete)
    and then recorded; a table without a record is merged again."""
    m, store = build.manifest, build.store
    name = build.table_name
    tmp_name = name + ".tmp"
    final = table_location(build)
    prog = build.progress("merge")
    if _found_finished(build, name, tmp_name, prog):
        return final
    shards = backward_shards(build).shards
    t0 = time.perf_counter()
    total = sum(s.rows for s in shards)
    E = build.board.entry_size
    resources.check_free(store, resources.merge_need(m, list(range(build.board.cells + 1))),
                         f"the table {name}")
    # the table's per-block xxh64, hashed with its sha256 and streamed into its sidecar (the
    # sidecar's temporary file is dropped if the merge fails)
    with resources.disk_full_guard(store, f"the table {name}", "every generation"), \
            SumsWriter(store, name) as sidecar:
        sums = BlockSums(E, sink=sidecar.take)
        if "backward" not in build.verified:
            n = verify_shards(build.executor, store, shards)
            prog.note(f"verified {n} backward shard(s) (xxh64)")
            build.verified.add("backward")
        store.delete_tree(PARTS)
        # Ranges: see partition.merge_ranges (one word per entry and bounded buffers per task).
        # Locally a single wave is cut into waves of growing size, merged while the first are
        # hashed.
        shares = merge_shares(total, build.task_memory, build.executor.workers, store.local)
        bounds = choose_ranges(store, shards, len(shares), shares)
        target = tmp_name if store.local else name
        write = _write_local if store.local else _write_parts
        hashes = write(build, shards, bounds, target, sums, prog, t0)
        if hashes["bytes"] != total * E:
            raise BuildError(f"{store.display(target)}: {hashes['bytes']:,} bytes written, "
                             f"expected {total * E:,}")
        store.delete_tree(PARTS)
        sidecar.commit(sums)
        m.record_table(TableRecord.of(DAT, name, total, hashes))
        m.save()
    if store.local:
        store.rename(tmp_name, name)
    build.verified.add("table")
    prog.note(f"{name}: {m.table.identity}  ({time.perf_counter() - t0:.2f}s)")
    return final


def append_parts(store: Storage, out: str, parts: list[str], chunk: int = 1 << 24,
                 md5: bool = True, sums=None, sha256: bool = True) -> dict:
    """Write the concatenation of ``parts`` to ``out`` (replacing it), deleting each part once
    appended; fsync locally. Returns its tree hash, sha256 (unless not ``sha256``), md5 (unless
    not ``md5``) and size, computed on the way."""
    h = Hashes(md5, sums, sha256=sha256)
    with store.open_output(out) as dst:
        for p in parts:
            with store.open_input_stream(p) as src:
                while True:
                    b = src.read(chunk)
                    if not b:
                        break
                    h.update(b)
                    dst.write(b)
            store.delete(p)
        if store.local:
            dst.flush()
            os.fsync(dst.fileno())
    return h.result()


def complete(build, rec: TableRecord | None) -> bool:
    """True if the raw table the manifest records as ``rec`` is there, of its size and tree hash
    (sha256 for a record without one; hashed once per process); False if it is missing (or
    none is recorded); an error naming it if it differs."""
    name = build.table_name
    store = build.store
    final = store.display(name)
    if rec is None or not store.exists(name):
        return False
    if "table" in build.verified:
        return True
    E = build.board.entry_size
    size = store.size(name)
    if size != rec.bytes:
        why = f"size {size:,} is not a multiple of the {E}-byte entry" if size % E else f"size {size:,}"
        raise CorruptDataError(f"{final}: {why}, the manifest records {rec.bytes:,} bytes; "
                               "delete it and rerun to rewrite it from the finished generations")
    build.note("merge", f"verifying the finished table {name}")
    differs = verify_stored(store, name, rec)
    if differs is not None:
        raise CorruptDataError(f"{final}: {differs} does not match the manifest's "
                               f"{rec.identity}; delete it and rerun to rewrite it from the "
                               "finished generations")
    build.verified.add("table")
    return True
