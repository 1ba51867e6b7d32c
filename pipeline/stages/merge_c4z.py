"""The final merge written straight into a ``.c4z`` (``build --format c4z``): no raw table
file ever exists.

The key space is cut into ranges as for the ``.dat`` (:func:`~c4table.pipeline.stages.merge.choose_ranges`),
and each range task gathers its entries in key order and finds its offset in the table as the
``.dat`` merge's tasks do (:func:`~c4table.pipeline.stages.merge.gather_range`). The ``.c4z``'s blocks lie
on a fixed grid (block ``i`` holds entries ``i*B ..``), which a range seldom starts or ends
on: a task compresses the whole blocks inside its range (the ``encode_words`` of the block
codec :func:`build_codec` names, on the grid of :func:`build_grid` at the level of
:func:`build_level` with the min match of :func:`build_min_match`, no trained dictionaries)
into a part file ``work/merge/blocks-R.bin``
and returns the raw entries before the first and after the last of them (fewer than ``B``
each). The driver takes the tasks' results in range order while later ranges still run and
feeds them to an :class:`~c4table.c4z.assemble.Assembler`: it compresses the partial blocks
where two ranges meet, appends every block to ``connect4_WxH.c4z.tmp`` and deletes each part
file once appended. Each task decodes its blocks again and hashes the tree hash's pieces inside
its raw bytes; the driver combines them, hashing only the pieces two ranges straddle (the
whole-file sha256 and md5, every block decoded in the driver, only with
``C4TABLE_TABLE_SHA256`` and ``C4TABLE_TABLE_MD5``). The file's bytes depend only on the table,
the codec, the grid, the level and the min match (each block is compressed alone,
deterministically), not on how the ranges were cut:
a rerun after a crash writes the same file.

Nothing is kept past its last reader, and a rerun after a crash continues: once the driver has
appended range ``r``, it makes the file durable and records where it stands in
``connect4_WxH.c4z.tmp.state`` (atomically: the ranges' bounds, the codec, the grid, the level and min match, the ranges done,
the blocks and bytes written, the raw entries of the partial block; :class:`MergeState`), and then
deletes every backward shard and its forward (key) shard whose keys all lie below the ranges
still to come: no later range reads them (their manifest records stay: the later ranges'
offsets count their rows). A rerun finding a state that matches the manifest's shards cuts
the ``.tmp`` back to it, hashes its blocks again (decoded, as when appended: the sha256 state
cannot be saved) and merges the remaining ranges with the recorded bounds, codec, grid, level and min match, so
it writes the same bytes; the shards below them may be gone, and are not checked.

Once the table is in place, ``build`` and ``merge`` delete the build's intermediate files
(``DIR/work``): no later step reads them (a ``.dat`` build keeps them unless ``--clean``).
Durability mirrors the ``.dat`` merge: the finished file is fsync'ed, its hashes (the raw
table's sha256 and size, and the container's own sha256 and size) are recorded in the
manifest, and only then is it renamed into place; a rerun finding the recorded ``.tmp``
checks its sha256 and renames it (the merge state and the ``.tmp.idx`` side file go only
after the rename), and anything unrecorded is continued from the merge state, or merged again
if there is none.
"""
from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import xxhash

import c4table.config as config
from c4table.c4z.assemble import RESTART, Assembler, Checkpoint, idx_path
from c4table.c4z.blocks import block_codec, default_part_entries
from c4table.c4z.codec import BlockCodec
from c4table.c4z.format import (BUILD_CODEC, BUILD_PART_ENTRIES, IDX_RECORD, MAGIC, TRANSFORM,
                                default_c4z_name)
from c4table.c4z.registry import codec_names, get_codec
from c4table.errors import BuildError, BuildInputError, CorruptDataError, TableError
from c4table.game.board import Board
from c4table.io.counting import active
from c4table.io.files import fsync_dir
from c4table.io import treehash
from c4table.io.storage import open_storage
from c4table.io.treehash import FIELD, SpanCut, SpanEdges, TreeHash, combine, tree_hash_file
from c4table.pipeline.kernels.cpu import words_to_entries
from c4table.pipeline.kernels.kernelset import in_cache
from c4table.pipeline.runtime import resources
from c4table.pipeline.sort.partition import merge_shares
from c4table.pipeline.stages import merge
from c4table.wording import count
from c4table.builddir.shards import verify_shards
from c4table.builddir.records import FileRecord, TableRecord
from c4table.builddir.tableformat import C4Z

STATE_VERSION = 5        # 2: the state records the file's grid (1: 65,536-entry blocks, 36,864-entry parts); 3: its min match (before: 0); 4: the tree pieces in the .tree side file (before: none); 5: its block codec (before: format 3's)
C4Z_SHARE = 0.10         # the .c4z as a share of the raw table, at most (measured at the build's profile: 6.4% on 5x5,
                         # 4.6% on 6x5, 4.0% on 6x6; the tests' 16,384-entry blocks: 8.5% on 5x4)
IN_FLIGHT = 4            # ranges whose part files may wait for the driver at once


@dataclass
class RangeBlocks:
    """What a range task of :func:`range_blocks_task` made: its range holds ``count`` entries
    from entry ``offset`` of the table; ``head`` and ``tail`` are the raw entries before its
    first whole block and after its last; the whole blocks are in the part file ``part`` in
    order, ``firsts[i]`` the first key, ``lasts[i]`` the last key, ``lengths[i]`` the byte
    length and ``xxh64s[i]`` the checksum of block ``i``; ``tree``: the tree hash's pieces
    inside the range's raw bytes (its whole blocks as they decode) and its bytes at the edges
    (:class:`~c4table.io.treehash.SpanEdges`)."""

    offset: int
    count: int
    head: bytes
    tail: bytes
    part: str
    firsts: list = field(default_factory=list)
    lengths: list = field(default_factory=list)
    xxh64s: list = field(default_factory=list)
    lasts: list = field(default_factory=list)
    tree: SpanEdges | None = None


def build_level() -> int:
    """The zstd level of a build's blocks (``C4TABLE_C4Z_LEVEL``, default 4: the sizes and
    CPU of each level are in ``docs/settings.md``)."""
    return config.get("C4TABLE_C4Z_LEVEL")


def build_min_match() -> int:
    """The zstd min match of a build's blocks (``C4TABLE_C4Z_MIN_MATCH``, default 6; 0: the
    level's own parameters; :func:`~c4table.c4z.blocks.zstd_params`)."""
    return config.get("C4TABLE_C4Z_MIN_MATCH")


def build_codec(name: str | None = None) -> str:
    """The block codec's name of a build's ``.c4z``: ``name`` (``build --codec``), else
    ``C4TABLE_C4Z_CODEC`` (default format 3's); :class:`BuildInputError` in one line if no
    codec that a merge can write has it."""
    where = "--codec" if name is not None else "C4TABLE_C4Z_CODEC"
    name = name if name is not None else config.get("C4TABLE_C4Z_CODEC")
    try:
        cls = get_codec(name)
    except TableError:
        raise BuildInputError(f"{where}: no .c4z block codec named {name!r} (the "
                              f"codecs: {', '.join(codec_names())})") from None
    if not hasattr(cls, "encode_words"):
        raise BuildInputError(f"{where}: the block codec {name} cannot write a "
                              "build's blocks")
    return name


def _kept_codec(build, codec: str, prog) -> str:
    """The codec ``codec`` a resumed merge began with, which it keeps; says so when the
    build's ``--codec`` names another."""
    if build.c4z_codec not in (None, codec):
        prog.note(f"resuming the merge in {codec} blocks, as it began (--codec "
                  f"{build.c4z_codec} applies to a merge started afresh)")
    return codec


def build_grid() -> tuple[int, int]:
    """``(block entries, part entries)`` of a build's ``.c4z``: ``C4TABLE_C4Z_BLOCK_ENTRIES``
    (default 262,144) in parts of :data:`~c4table.c4z.format.BUILD_PART_ENTRIES` (65,536;
    blocks of at most that many: 9/16 of the block, then the rest)."""
    B = config.get("C4TABLE_C4Z_BLOCK_ENTRIES")
    return B, BUILD_PART_ENTRIES if B > BUILD_PART_ENTRIES else default_part_entries(B)


def check_settings(codec: str | None = None) -> None:
    """Read the settings of a build's ``.c4z`` (codec, or ``codec`` given by name; level, min
    match, grid): a bad one is one line (:class:`BuildInputError`) when the build opens."""
    build_codec(codec), build_level(), build_min_match(), build_grid()


def c4z_name(build) -> str:
    """The ``.c4z`` file name of the build's table (``connect4_WxH.c4z``)."""
    return default_c4z_name(build.table_name).name


def range_blocks_task(root: str, shards: list[dict], lo: int, hi: int, below: int, rel: str,
                      board: Board, block_entries: int, level: int,
                      part_entries: int, min_match: int = 0,
                      plies: list[int] | None = None, codec: str = BUILD_CODEC) -> RangeBlocks:
    """Gather the entries with ``lo <= key < hi`` of the given backward shards
    (:func:`~c4table.pipeline.stages.merge.gather_range`: ``below`` is the count of those in
    shards wholly under ``lo``), compress the whole blocks of the file's grid that lie inside
    the range into the part file ``rel``, and return them and the raw entries at the ends
    (:class:`RangeBlocks`). ``plies``: each shard's generation; its outcome bytes are then
    gathered as their symbols at that ply, so the blocks' encoder follows no ply (the same
    bytes; the driver's decode, from each key's own ply, checks them). ``codec``: the block
    codec's name. Memory: the range's words (one per entry) and one block."""
    store = open_storage(root)
    kernels = None if plies is None else block_codec(board)   # the words hold symbols
    maps = None if kernels is None else [kernels.fwd[p] for p in plies]
    rw = merge.gather_range(store, shards, lo, hi, below, maps)
    B, E = block_entries, board.entry_size
    head_n = min(rw.count, (-rw.under) % B)
    out = RangeBlocks(rw.under, rw.count, b"", b"", rel)
    buf = np.empty(B, np.uint64)
    n, want, in_head = 0, head_n, head_n > 0
    tree = SpanCut(rw.under * E, treehash.PIECE_BYTES)
    blocks = get_codec(codec)(board, part_entries, level, min_match)
    codec_ns = [0]   # the thread's CPU in the block codec, encoding and decoding
    with open(store.root / rel, "wb") as f:
        def flush_block():
            t0 = time.thread_time_ns()
            first, comp = blocks.encode_words(buf, symbols=kernels is not None)
            t1 = time.thread_time_ns()
            f.write(comp)
            # decoded again: the tree hash is of what the file holds
            t2 = time.thread_time_ns()
            try:
                rows, last = blocks.decode_rows(comp, B, first)
            except Exception as e:   # zstd or the block's own checks
                raise BuildError(f"range [{lo}, {hi}): a block of key {first} does not "
                                 f"decode: {e}") from None
            codec_ns[0] += t1 - t0 + time.thread_time_ns() - t2
            tree.update(rows)
            out.firsts.append(first)
            out.lasts.append(last)
            out.lengths.append(len(comp))
            out.xxh64s.append(xxhash.xxh64_intdigest(comp))

        for words in rw.ordered():
            s = 0
            while s < words.shape[0]:
                take = min(words.shape[0] - s, (want if in_head else B) - n)
                buf[n: n + take] = words[s: s + take]
                n += take
                s += take
                if in_head and n == want:
                    out.head = _raw(buf[:n], E, kernels)
                    tree.update(out.head)
                    n, in_head = 0, False
                elif not in_head and n == B:
                    flush_block()
                    n = 0
    active().add_write(sum(out.lengths))   # the part file (plain file I/O: counted here)
    active().codec_us += codec_ns[0] // 1000
    if in_head and n:   # cannot happen: the head is at most the range
        raise BuildError(f"range [{lo}, {hi}): {n} entries of {want} in its first block")
    out.tail = _raw(buf[:n], E, kernels)
    tree.update(out.tail)
    out.tree = tree.finish()
    return out


def _raw(words: np.ndarray, entry_size: int, codec: BlockCodec | None = None) -> bytes:
    """Raw table bytes of ``key << 8 | outcome`` words (``key << 8 | symbol`` with ``codec``:
    :meth:`~c4table.c4z.codec.BlockCodec.outcome_words`)."""
    if codec is not None:
        words = codec.outcome_words(words)
    b = np.empty(words.shape[0] * entry_size, np.uint8)
    words_to_entries(np.ascontiguousarray(words), entry_size, b)
    return b.tobytes()


@dataclass
class MergeState:
    """What the driver records after appending a range (module docstring): the merge of the
    shards whose records hash to ``shards`` cut at ``bounds`` with zstd ``level`` on the grid
    of ``block_entries``-entry blocks in parts of ``part_entries``; its first ``done`` ranges
    are in the ``.tmp`` up to ``at``, and the digests of the tree hash's first
    ``tree_pieces`` pieces in the side file :func:`tree_name`. A rerun continues on the state's
    grid, whatever the build's profile is now (a state of version 1 has the grid of its time,
    one of version 2 the level's own zstd parameters: ``min_match`` 0; before version 4, no
    tree pieces: the blocks are decoded again for them; before version 5, format 3's codec)."""

    shards: str
    bounds: list
    level: int
    done: int
    at: Checkpoint
    block_entries: int = 1 << 16
    part_entries: int = 36864
    min_match: int = 0
    tree_pieces: int = 0
    codec: str = TRANSFORM

    def to_json(self) -> bytes:
        d = asdict(self)
        d["at"]["pending"] = base64.b64encode(self.at.pending).decode()
        return json.dumps({"version": STATE_VERSION, **d}).encode()

    @classmethod
    def from_json(cls, data: bytes) -> "MergeState":
        d = json.loads(data)
        if d.pop("version") not in (1, 2, 3, 4, STATE_VERSION):
            raise ValueError("another version's merge state")
        d["at"]["pending"] = base64.b64decode(d["at"]["pending"])
        return cls(**{**d, "at": Checkpoint(**d["at"])})


def state_name(tmp: str) -> str:
    """The merge state file beside the ``.c4z``'s temporary file ``tmp``."""
    return tmp + ".state"


def shards_digest(shards, board: Board, block_entries: int, part_entries: int) -> str:
    """A digest of the backward shards' records and the grid: a state made from other shards
    is not continued."""
    recs = [s.to_json() for s in shards]
    # the grid of version 1 (the only one it knew) goes in as version 1 wrote it
    grid = [block_entries] if (block_entries, part_entries) == (1 << 16, 36864) else \
        [block_entries, part_entries]
    return xxhash.xxh64(json.dumps([board.name, *grid, recs], sort_keys=True).encode()).hexdigest()


def load_state(store, tmp: str, shards, board: Board) -> MergeState | None:
    """The merge state of ``tmp`` if there is one for ``shards`` (on the grid it records),
    else None."""
    name = state_name(tmp)
    if not (store.exists(name) and store.exists(tmp)):
        return None
    try:
        with store.open_input_stream(name) as f:
            st = MergeState.from_json(f.read())
    except (ValueError, KeyError, TypeError):
        return None
    return st if st.shards == shards_digest(shards, board, st.block_entries, st.part_entries) \
        else None


def drop_shards(store, shards, below: int) -> int:
    """Delete the backward shards whose keys all lie below ``below``, and their forward (key)
    shards; return how many shard records that covers (their files may be gone already)."""
    n = 0
    for s in shards:
        if s.last < below:
            store.delete(s.file)
            if s.keys is not None:
                store.delete(s.keys)
            n += 1
    return n

def save_state(store, tmp: str, st: MergeState) -> None:
    """Record ``st`` beside ``tmp``, atomically and durably."""
    store.write_atomic(state_name(tmp), st.to_json(), durable=True)


def tree_name(tmp: str) -> str:
    """The side file of the tree hash's piece digests (32 bytes each, in order) beside the
    ``.c4z``'s temporary file ``tmp``."""
    return tmp + ".tree"


def save_tree(store, tmp: str, tree: TreeHash, have: int) -> int:
    """Append the tree's piece digests after the first ``have`` to its side file and make it
    durable; the count of pieces it holds."""
    digests = tree.digests()
    path = store.root / tree_name(tmp)
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.truncate(have * 32)
        f.seek(have * 32)
        f.write(b"".join(digests[have:]))
        f.flush()
        os.fsync(f.fileno())
    return len(digests)


def load_tree(store, tmp: str, pieces: int) -> TreeHash:
    """A tree hash holding the first ``pieces`` piece digests of the side file of ``tmp``."""
    tree = TreeHash()
    if pieces:
        data = (store.root / tree_name(tmp)).read_bytes()[: pieces * 32] \
            if store.exists(tree_name(tmp)) else b""
        if len(data) != pieces * 32:
            raise CorruptDataError(f"{tree_name(tmp)}: holds fewer than the {pieces:,} piece "
                                   f"digests its merge state records; {RESTART}")
        tree.add_pieces([data[i: i + 32] for i in range(0, len(data), 32)])
    return tree


def forget_state(store, tmp: str) -> None:
    """Drop the merge state and side files of ``tmp`` (its table is published)."""
    store.delete(state_name(tmp))
    store.delete(tree_name(tmp))
    store.delete(idx_path(store.root / tmp).name)


def resume_point(build, shards, tmp: str) -> MergeState | None:
    """The merge state to continue from (None: the merge starts afresh), after deleting the
    shards it has passed (again: a crash may have come first) and verifying the others."""
    store, prog = build.store, build.progress("merge")
    state = load_state(store, tmp, shards, build.board)
    if state is None:
        store.delete(state_name(tmp))
        live = shards
    else:
        below = state.bounds[state.done]
        drop_shards(store, shards, below)
        live = [s for s in shards if s.last >= below]
        prog.note(f"resuming the merge after {count(state.done, 'range')} of "
                  f"{len(state.bounds) - 1} ({state.at.entries:,} entries in {tmp})")
    if "backward" not in build.verified:
        n = verify_shards(build.executor, store, live)
        prog.note(f"verified {n} backward shard(s) (xxh64)")
        build.verified.add("backward")
    return state


def merge_need(store, shards, bounds: list, done: int, total: int, raw_bytes: int,
               tmp: str) -> int:
    """Free disk the merge needs beyond what the build directory holds now, from the ranges
    ``bounds`` it merges from range ``done`` on: after appending each range, and before
    deleting the shards it has passed, the directory holds the ``.c4z`` so far (at most
    :data:`C4Z_SHARE` of the ``raw_bytes``, pro rata of the entries up to the range's end) and
    the shards whose keys reach the range's start; the most of that over the ranges, plus the
    part files of :data:`IN_FLIGHT` ranges, less what the directory holds now (the shards
    still there and ``tmp``), with the usual margin."""
    table = raw_bytes * C4Z_SHARE
    written = store.size(tmp) if store.exists(tmp) else 0
    sizes = np.array([sum(store.size(f) for f in (sh.file, sh.keys) if f is not None and store.exists(f))
                      for sh in shards], np.float64)
    firsts = np.array([sh.first for sh in shards], np.uint64)
    lasts = np.array([sh.last for sh in shards], np.uint64)
    rows = np.array([sh.rows for sh in shards], np.float64)
    now = written + sizes.sum()
    peak = now
    for r in range(done, len(bounds) - 1):
        after = rows[firsts >= np.uint64(bounds[r + 1])].sum()   # entries wholly past range r
        so_far = max(written, table * (total - after) / max(1, total))
        peak = max(peak, so_far + sizes[lasts >= np.uint64(bounds[r])].sum())
    in_flight = table * min(1.0, IN_FLIGHT / max(1, len(bounds) - 1 - done))
    return resources.with_margin(peak - now + in_flight)


def complete(build, rec: TableRecord | None) -> bool:
    """True if the ``.c4z`` the manifest's table record ``rec`` names is there, of its size and
    sha256 (hashed once per process); False if it is missing (or none is recorded); an error
    naming it if it differs."""
    if rec is None or rec.container is None:
        return False
    store, z = build.store, rec.container
    if not store.exists(z.file):
        return False
    if "table" in build.verified:
        return True
    size = store.size(z.file)
    what = merge.verify_stored(store, z.file, z) if size == z.bytes else f"size {size:,}"
    if what is not None:
        raise CorruptDataError(f"{store.display(z.file)}: {what} does not match the manifest's "
                               "record; delete it and rerun to rewrite it from the finished "
                               "generations")
    build.verified.add("table")
    return True


def codec_compiled(name: str = BUILD_CODEC) -> bool | None:
    """Whether numba's cache holds the block codec kernels the merge runs with the codec
    ``name``: the key plies, and an encoder of blocks (of outcomes or of symbols, as the tasks
    choose), and for the rule-coded formats the key walk's; None when it cannot be asked."""
    from c4table.c4z import codec, framecodec, rulekeys
    plies, outs, syms = (in_cache(k) for k in (codec._plies, codec._encode, codec._encode_symbols))
    rules = [] if name == TRANSFORM else \
        [in_cache(k) for k in (rulekeys.record_runs, rulekeys.code_records, framecodec.decode_runs)]
    if None in (plies, outs, syms, *rules):
        return None
    return plies and (outs or syms) and all(rules)


def _found_finished(build, name: str, tmp: str):
    """The table's path if it is in place already: a raw table built before (whose ``.c4z``
    is ``compress``'s to make), the recorded ``.c4z``, or one found whole under ``tmp`` and
    verified against its record (then renamed); else None."""
    store, rec = build.store, build.manifest.table
    final = store.root / name
    if rec is not None and rec.format is not C4Z and build.complete():
        build.progress("merge").note(f"the table is already built as {build.table_name}; "
                                     "c4table compress makes its .c4z")
        return store.root / build.table_name
    if rec is None or rec.format is not C4Z or rec.container is None:
        return None
    if complete(build, rec):
        forget_state(store, tmp)
        return final
    if store.exists(tmp) and store.size(tmp) == rec.container.bytes:
        build.progress("merge").note(f"found the finished table under {tmp}; verifying it")
        if merge.verify_stored(store, tmp, rec.container) is None:
            store.rename(tmp, name)
            fsync_dir(store.root)
            forget_state(store, tmp)
            build.verified.add("table")
            return final
    return None


def _checked_plies(build, bs: merge.BackwardShards) -> None:
    """The range tasks map outcomes to symbols at their shard's ply: each shard's first key
    must be of it (:class:`BuildError` otherwise: a manifest of another build?)."""
    codec = block_codec(build.board)
    for s, p in zip(bs.shards, bs.plies):
        if int(codec.plies(np.array([s.first], np.uint64))[0]) != p:
            raise BuildError(f"{build.store.display(s.file)}: a shard of generation {p} whose "
                             f"first key is not of that ply (a manifest of another build?)")


def run(build):
    """Write (or find already written) ``DIR/connect4_WxH.c4z``; return its path. See the
    module docstring (local build directories only)."""
    store, m = build.store, build.manifest
    if not store.local:
        raise BuildInputError(f"{build.root}: --format c4z writes into a local build directory")
    name = c4z_name(build)
    final = store.root / name
    tmp = name + ".tmp"
    found = _found_finished(build, name, tmp)
    if found is not None:
        return found
    board: Board = build.board
    bs = merge.backward_shards(build)
    prog = build.progress("merge")
    if codec_compiled(build_codec(build.c4z_codec)) is False:   # the first c4z merge after install
        prog.note("compiling the .c4z block codec (first run after install only)...")
    t0 = time.perf_counter()
    _checked_plies(build, bs)
    shards, total = bs.shards, bs.total
    with resources.disk_full_guard(store, f"the table {name}", "every generation"):
        state = resume_point(build, shards, tmp)
        done = state.done if state is not None else 0
        store.delete_tree(merge.PARTS)
        (store.root / merge.PARTS).mkdir(parents=True, exist_ok=True)
        if state is None:
            shares = merge_shares(total, build.task_memory, build.executor.workers, True)
            bounds = merge.choose_ranges(store, shards, len(shares), shares)
            level, (B, P), mm = build_level(), build_grid(), build_min_match()
            codec_name = build_codec(build.c4z_codec)
        else:
            bounds, level, B, P = state.bounds, state.level, state.block_entries, state.part_entries
            mm, codec_name = state.min_match, _kept_codec(build, state.codec, prog)
        resources.check_free(store, merge_need(store, shards, bounds, done, total,
                                               total * board.entry_size, tmp), f"the table {name}")
        digest = shards_digest(shards, board, B, P)
        n_r = len(bounds) - 1
        tasks = []
        for r in range(done, n_r):
            inside = [k for k, s in enumerate(shards)
                      if s.last >= bounds[r] and s.first < bounds[r + 1]]
            below = sum(s.rows for s in shards if s.last < bounds[r])
            tasks.append((store.uri, [shards[k].to_json() for k in inside], bounds[r],
                          bounds[r + 1], below, f"{merge.PARTS}/blocks-{r:05d}.bin", board, B,
                          level, P, mm, [bs.plies[k] for k in inside], codec_name))

        pieces = [state.tree_pieces if state is not None else 0]

        def appended(k: int, at: Checkpoint, tree: TreeHash) -> None:   # ranges 0..k-1 are in the .tmp
            pieces[0] = save_tree(store, tmp, tree, pieces[0])
            save_state(store, tmp, MergeState(digest, bounds, level, k, at, B, P, mm, pieces[0],
                                              codec_name))
            drop_shards(store, shards, bounds[k])

        left = total - (state.at.entries if state is not None else 0)
        build.ledger.work("merge", of=n_r).add(left, n_r - done)
        results = merge.reported(build.ledger.saving(build.executor.imap(range_blocks_task, tasks)),
                                 build.progress("merge", total=left), done, n_r)   # counts saved
        tree = load_tree(store, tmp, state.tree_pieces) if state is not None else None
        digests = assemble(store, store.root / tmp, board, total, n_r, level, results, build.table_md5,
                           resume=state, appended=appended, min_match=mm, tree=tree, codec=codec_name,
                           sha256=build.table_sha256, file=build.table_name,
                           root=m.root_record())
        if digests["bytes"] != total * board.entry_size:
            raise BuildError(f"{tmp}: {digests['bytes']:,} raw bytes hashed, expected "
                             f"{total * board.entry_size:,}")
        store.delete_tree(merge.PARTS)
        zhash = tree_hash_file(store.root / tmp)   # the container's own: pieces on threads
        m.record_table(TableRecord.of(C4Z, build.table_name, total, digests,
                                      FileRecord(name, zhash["bytes"], sha256_tree=zhash[FIELD])))
        m.save()
    store.rename(tmp, name)
    fsync_dir(store.root)
    forget_state(store, tmp)
    build.verified.add("table")
    secs = time.perf_counter() - t0
    prog.note(f"{name}: {zhash['bytes']:,} bytes ({100 * zhash['bytes'] / max(1, digests['bytes']):.2f}% "
              f"of the raw {digests['bytes']:,}) in {count(n_r, 'range')}, raw "
              f"{m.table.identity} ({secs:.2f}s)")
    return final


def assemble(store, part, board: Board, total: int, n_ranges: int, level: int, results,
             md5: bool, resume: MergeState | None = None, appended=None, min_match: int = 0,
             tree: TreeHash | None = None, sha256: bool = False, codec: str = BUILD_CODEC,
             **header) -> dict:
    """Write the ``.c4z`` part file ``part`` from the range tasks' ``results``
    (:class:`RangeBlocks`, in range order, e.g. :meth:`Executor.imap` while later ranges
    still run), deleting each task's part file once appended; fsync it. The raw table's tree
    hash is combined from the tasks' (:func:`~c4table.io.treehash.combine`: only the pieces
    that straddle two ranges are hashed here); its sha256 and md5 only with ``sha256`` and
    ``md5`` (every block decoded again here, one core). With ``resume`` (a
    :class:`MergeState`) the file is continued from its checkpoint and ``results`` are those
    of the ranges after it (and its ``min_match``); ``tree``: the tree hash of the pieces the
    state records (:func:`load_tree`). After each range, ``appended(k, checkpoint, tree)`` is
    called with the count of ranges now in the file, made durable, and the tree hash so far.
    ``codec``: the block codec's name (a resumed file's is its state's). Returns the raw
    table's digests. Raises
    :class:`BuildError` if a range does not start where the one before it ended, or the
    ranges do not add up to ``total``."""
    if resume is None:
        B, P = build_grid()
        tree = TreeHash()
        a, r0 = Assembler(part, board, B, level, P, md5=md5, min_match=min_match,
                          sha256=sha256, codec=codec), 0
    else:   # the grid the file was begun on
        held = _file_size(part) + _file_size(idx_path(part))
        tree = tree if tree is not None else TreeHash()
        a = Assembler.reopen(part, board, resume.block_entries, level, resume.at,
                             resume.part_entries, md5=md5, min_match=resume.min_match,
                             sha256=sha256, tree=tree, codec=resume.codec)
        r0 = resume.done
    # the container and its side file (plain file I/O) are counted here, by the driver: as
    # far as counted (by the earlier run up to its checkpoint), what was cut off past it, and
    # what reopening read back
    counted = _counted_at(a) if resume is not None else (0, 0)
    if resume is not None:
        active().bytes_deleted += max(0, held - sum(counted))
        active().add_read(sum(counted) - len(MAGIC), ranged=False)
    try:
        at, ranges = a.entries, r0
        for r, res in enumerate(results, r0):
            ranges += 1
            if r >= n_ranges or res.offset != at:
                where = f"starts at entry {res.offset:,} where the ranges before it end at {at:,}" \
                    if r < n_ranges else "is one range too many"
                raise BuildError(f"merge range {r} {where}")
            if res.tree is None or res.tree.end != (res.offset + res.count) * board.entry_size:
                raise BuildError(f"merge range {r}: its tree hash does not cover its entries")
            combine(tree, [res.tree])
            a.add_raw(res.head)
            if res.firsts:
                with open(store.root / res.part, "rb") as f:
                    for first, length, x, last in zip(res.firsts, res.lengths, res.xxh64s,
                                                      res.lasts):
                        comp = f.read(length)
                        if len(comp) != length:
                            raise BuildError(f"{res.part}: ends inside block of key {first}")
                        a.add_block(comp, first, x, last)
                active().add_read(sum(res.lengths), ranged=False)   # the part file
            store.delete(res.part)
            a.add_raw(res.tail)
            at += res.count
            now = _counted_at(a)
            active().bytes_written += sum(now) - sum(counted)   # one object each: at the end
            counted = now
            if appended is not None:
                appended(r + 1, a.checkpoint(), tree)
        if ranges != n_ranges or at != total:
            raise BuildError(f"the merge's {ranges} of {n_ranges} ranges hold {at:,} entries "
                             f"where {total:,} were counted")
        if a.entries != total:
            raise BuildError(f"{part.name}: {a.entries:,} entries placed, expected {total:,}")
        keep = resume is not None or appended is not None
        digests = a.finish(keep_idx=keep, digests=tree.result(), **header)
    except BaseException:
        a.close()
        raise
    c, idx = active(), a.blocks * IDX_RECORD.size
    c.add_write(_file_size(part) - counted[0])   # the container (index, header, trailer too)
    c.add_write(idx - counted[1])                # its side file of index records
    c.add_read(idx, ranged=False)                # read back for the container's index
    if not keep:                                 # unlinked by finish
        c.delete_requests += 1
        c.bytes_deleted += idx
    return digests


def _counted_at(a: Assembler) -> tuple[int, int]:
    """The bytes of the ``.c4z`` part file and of its side file of index records that
    ``a`` has written so far (the blocks, from the magic on; a record per block)."""
    return a.part_bytes, a.blocks * IDX_RECORD.size


def _file_size(path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
