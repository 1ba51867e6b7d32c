"""Shard files: sorted key ranges of one generation (and the outcomes of a backward step),
in blocks of :mod:`~c4table.builddir.shardcodec` with a block index, written atomically.

A shard file is ``MAGIC``, its blocks (each a zstd frame of keys, then one of outcomes, either
possibly absent), the block index (one :data:`INDEX` record per block: offset, the two frames'
lengths, rows, first and last key) and a footer (:data:`FOOTER`: where the index starts, the
blocks, the rows, which streams the blocks hold, ``END``). The merge reads a shard by key range
from its index (footer and index: one read of the file's end) and the blocks it needs. A
backward shard of outcomes only has the blocks of its forward shard (block ``i`` of both holds
the same rows).

Design notes: ``docs/modules.md`` (``c4table.builddir.shards``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from c4table.builddir.shardcodec import decode_keys, decode_outcomes, encode_keys, encode_outcomes
from c4table.errors import CorruptDataError
from c4table.io.storage import Storage, open_storage

# Shards are read by key range in the final merge: small blocks (each with its first and last
# key in the index) bound what a range task reads beyond its range. A backward shard has the
# blocks of its forward shard.
ROW_GROUP = 1 << 17
BACKWARD_ROW_GROUP = ROW_GROUP
SUFFIX = ".shard"       # a shard file's name: part-NNNNN.shard
MAGIC = b"C4SHARD1"
END = b"C4SE"
FOOTER = struct.Struct("<QQQI4s")   # index offset, blocks, rows, streams (KEYS | OUTCOMES), END
INDEX = np.dtype([("offset", "<u8"), ("keys", "<u4"), ("outcomes", "<u4"), ("rows", "<u4"),
                  ("pad", "<u4"), ("first", "<u8"), ("last", "<u8")])
KEYS, OUTCOMES = 1, 2
TAIL = 1 << 16          # bytes read from a shard's end to find its footer and block index


@dataclass
class ShardInfo:
    """What the manifest records of one shard."""

    file: str       # path relative to the build directory
    rows: int
    xxh64: str
    first: int      # smallest key (or -1 when empty)
    last: int       # largest key
    keys: str | None = None         # a backward shard of outcomes only: its forward shard
    keys_xxh64: str | None = None   # and that shard's xxh64

    def to_json(self) -> dict:
        d = dict(file=self.file, rows=self.rows, xxh64=self.xxh64, first=self.first, last=self.last)
        if self.keys is not None:
            d.update(keys=self.keys, keys_xxh64=self.keys_xxh64)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ShardInfo":
        return cls(d["file"], d["rows"], d["xxh64"], d["first"], d["last"], d.get("keys"),
                   d.get("keys_xxh64"))

    def key_shard(self) -> "ShardInfo":
        """The shard that holds this shard's keys: itself, or (outcomes only) its forward shard."""
        if self.keys is None:
            return self
        return ShardInfo(self.keys, self.rows, self.keys_xxh64, self.first, self.last)


def _stream_xxh64(f, chunk: int) -> str:
    h = xxhash.xxh64()
    while True:
        b = f.read(chunk)
        if not b:
            break
        h.update(b)
    return h.hexdigest()


def file_xxh64(path: Path, chunk: int = 1 << 22) -> str:
    """xxh64 of a local file, streamed."""
    with open(path, "rb") as f:
        return _stream_xxh64(f, chunk)


def stored_xxh64(store: Storage, rel: str, chunk: int = 1 << 22) -> str:
    """xxh64 of a file of ``store`` (local or remote), streamed."""
    with store.open_input_stream(rel) as f:
        return _stream_xxh64(f, chunk)


def _missing(store: Storage, rel: str) -> CorruptDataError:
    return CorruptDataError(f"{store.display(rel)}: shard listed in the manifest is missing")


def shard_name(directory: str, part: int) -> str:
    """The file of shard ``part`` of a step whose shards lie in ``directory``.

    >>> shard_name("work/forward/ply_03", 1)
    'work/forward/ply_03/part-00001.shard'
    """
    return f"{directory}/part-{part:05d}{SUFFIX}"


def _encode_file(keys: np.ndarray | None, outcomes: np.ndarray | None, rows: list[int],
                 firsts: np.ndarray, lasts: np.ndarray) -> bytes:
    """A shard file of the given blocks (``rows`` per block)."""
    index = np.zeros(len(rows), INDEX)
    pieces, pos, lo = [MAGIC], len(MAGIC), 0
    for i, n in enumerate(rows):
        kf = encode_keys(keys[lo: lo + n]) if keys is not None else b""
        of = encode_outcomes(outcomes[lo: lo + n]) if outcomes is not None else b""
        index[i] = (pos, len(kf), len(of), n, 0, firsts[i], lasts[i])
        pieces += [kf, of]
        pos += len(kf) + len(of)
        lo += n
    streams = (KEYS if keys is not None else 0) | (OUTCOMES if outcomes is not None else 0)
    pieces += [index.tobytes(), FOOTER.pack(pos, len(rows), lo, streams, END)]
    return b"".join(pieces)


def _put(store: Storage, rel: str, data: bytes) -> str:
    digest = xxhash.xxh64(data).hexdigest()
    store.write_atomic(rel, data, durable=False)
    return digest


def write_shard(store: Storage, rel: str, keys: np.ndarray, outcomes: np.ndarray | None = None) -> ShardInfo:
    """Write strictly increasing uint64 ``keys`` (and optional uint8 ``outcomes``) to ``rel`` of
    ``store`` in blocks of :data:`ROW_GROUP`: encoded in memory, checksummed, then written
    atomically but not fsync'ed: the manifest makes a shard durable when it records it
    (:meth:`~c4table.builddir.manifest.Manifest.save`, one batch of fsyncs for the shards of
    many tasks)."""
    keys = np.ascontiguousarray(keys, np.uint64)
    n = int(keys.shape[0])
    if outcomes is not None and outcomes.shape[0] != n:
        raise ValueError(f"{outcomes.shape[0]} outcomes for {n} keys")
    starts = np.arange(0, n, ROW_GROUP)
    ends = np.minimum(starts + ROW_GROUP, n)
    data = _encode_file(keys, outcomes, (ends - starts).tolist(), keys[starts], keys[ends - 1])
    return ShardInfo(rel, n, _put(store, rel, data), int(keys[0]) if n else -1, int(keys[-1]) if n else -1)


def write_outcomes(store: Storage, rel: str, outcomes: np.ndarray, keys: ShardInfo) -> ShardInfo:
    """Write the uint8 ``outcomes`` of the keys of forward shard ``keys`` (same order) to
    ``rel`` as a backward shard of outcomes only, with the blocks of the forward shard (so
    block ``i`` of both files holds the same rows); return its record, which names the forward
    shard. No second encoding of the keys. Written like :func:`write_shard`: atomically, made
    durable when the manifest records it."""
    if outcomes.shape[0] != keys.rows:
        raise ValueError(f"{outcomes.shape[0]} outcomes for a shard of {keys.rows} keys")
    index = _read_index(store, keys.file)
    if int(index["rows"].sum()) != keys.rows:
        raise CorruptDataError(f"{store.display(keys.file)}: {int(index['rows'].sum())} rows, "
                               f"manifest says {keys.rows}")
    data = _encode_file(None, outcomes, index["rows"].tolist(), index["first"], index["last"])
    return ShardInfo(rel, keys.rows, _put(store, rel, data), keys.first, keys.last, keys.file, keys.xxh64)


def _parse_footer(where: str, size: int, tail: bytes) -> tuple[int, int, int, int]:
    """``(index offset, blocks, rows, streams)`` from a file's last :data:`FOOTER` bytes."""
    if size < len(MAGIC) + FOOTER.size or len(tail) != FOOTER.size:
        raise CorruptDataError(f"{where}: unreadable shard (too short)")
    at, blocks, rows, streams, end = FOOTER.unpack(tail)
    if end != END or at + blocks * INDEX.itemsize + FOOTER.size != size or at < len(MAGIC):
        raise CorruptDataError(f"{where}: unreadable shard (no shard footer: an older build's "
                               "parquet shard, or damaged)")
    return at, blocks, rows, streams


def _check_index(where: str, index: np.ndarray, at: int, rows: int) -> np.ndarray:
    """``index`` if its blocks tile the file from the magic to the index and hold ``rows``."""
    ends = index["offset"] + index["keys"] + index["outcomes"]
    if not index.shape[0] and (rows or at != len(MAGIC)):
        raise CorruptDataError(f"{where}: unreadable shard (damaged block index)")
    if index.shape[0] and (int(index["offset"][0]) != len(MAGIC) or int(ends[-1]) != at or
                           np.any(index["offset"][1:] != ends[:-1]) or int(index["rows"].sum()) != rows
                           or np.any(index["rows"] == 0)):
        raise CorruptDataError(f"{where}: unreadable shard (damaged block index)")
    return index


def _index_of(where: str, data: bytes) -> tuple[np.ndarray, int, int]:
    """Block index, rows and streams of a whole shard file in memory."""
    at, blocks, rows, streams = _parse_footer(where, len(data), data[len(data) - FOOTER.size:])
    if data[:len(MAGIC)] != MAGIC:
        raise CorruptDataError(f"{where}: unreadable shard (bad magic)")
    index = np.frombuffer(data, INDEX, count=blocks, offset=at)
    return _check_index(where, index, at, rows), rows, streams


def _read_index(store: Storage, rel: str) -> np.ndarray:
    """The checked block index of ``rel``: one ranged read of the file's last :data:`TAIL`
    bytes (footer and, but for a shard of over 200 M rows, the whole index), a second one for
    the rest of a larger index."""
    where = store.display(rel)
    try:
        size = store.size(rel)
    except FileNotFoundError:
        raise _missing(store, rel) from None
    tail = bytearray(min(size, TAIL))
    if tail:
        store.read_into(rel, size - len(tail), tail)
    at, blocks, rows, _ = _parse_footer(where, size, bytes(tail[len(tail) - FOOTER.size:]))
    index = np.empty(blocks, INDEX)
    start = at - (size - len(tail))     # where the index starts in the tail
    if start >= 0:
        index[:] = np.frombuffer(tail, INDEX, count=blocks, offset=start)
    elif blocks:
        store.read_into(rel, at, index.view(np.uint8))
    return _check_index(where, index, at, rows)


def read_shard(store: Storage, info: ShardInfo, with_outcome: bool = False, check: bool = True):
    """Read a shard back as uint64 keys (and uint8 outcomes); verify checksums and row counts.
    A backward shard of outcomes only takes its keys from its forward shard."""
    if info.keys is not None:
        keys = _read_stream(store, info.key_shard(), KEYS, check)
        if not with_outcome:
            return keys
        return keys, _read_stream(store, info, OUTCOMES, check)
    keys = _read_stream(store, info, KEYS, check)
    return (keys, _read_stream(store, info, OUTCOMES, check)) if with_outcome else keys


def _read_stream(store: Storage, info: ShardInfo, stream: int, check: bool) -> np.ndarray:
    """All the keys (``KEYS``) or outcomes (``OUTCOMES``) of a shard file, checked."""
    where = store.display(info.file)
    try:
        data = store.read_bytes(info.file)
    except FileNotFoundError:
        raise _missing(store, info.file) from None
    if check:
        digest = xxhash.xxh64(data).hexdigest()
        if digest != info.xxh64:
            raise CorruptDataError(f"{where}: checksum {digest} does not match manifest {info.xxh64}")
    index, rows, streams = _index_of(where, data)
    if not streams & stream:
        raise CorruptDataError(f"{where}: unreadable shard (it holds no "
                               f"{'keys' if stream == KEYS else 'outcomes'})")
    if rows != info.rows:
        raise CorruptDataError(f"{where}: {rows} rows, manifest says {info.rows}")
    out = np.empty(rows, np.uint64 if stream == KEYS else np.uint8)
    view = memoryview(data)
    try:
        _decode_blocks(view, index, 0, stream, out)
    except CorruptDataError as e:
        raise CorruptDataError(f"{where}: unreadable shard ({e})") from None
    return out


def _decode_blocks(data: memoryview, index: np.ndarray, base: int, stream: int, out: np.ndarray) -> None:
    """Decode one stream of the blocks of ``index`` (whose bytes start at file offset ``base``
    of ``data``) into ``out``, block after block."""
    lo = 0
    for off, kl, ol, n, first, last in zip(index["offset"].tolist(), index["keys"].tolist(),
                                           index["outcomes"].tolist(), index["rows"].tolist(),
                                           index["first"].tolist(), index["last"].tolist()):
        at = off - base
        if stream == KEYS:
            keys = decode_keys(data[at: at + kl], first, n)
            if int(keys[-1]) != last:
                raise CorruptDataError("damaged block (its last key is not the index's)")
            out[lo: lo + n] = keys
        else:
            out[lo: lo + n] = decode_outcomes(data[at + kl: at + kl + ol], n)
        lo += n


@dataclass
class RowGroup:
    """One block of a shard, from its index: its number, first and last key, and rows."""

    index: int
    first: int
    last: int
    rows: int


@dataclass
class OpenShard:
    """A backward shard opened for reading by block: its storage, the file of its keys and
    that of its outcomes (the same file for a shard with both), and their block indexes."""

    store: Storage
    keys: str
    keys_index: np.ndarray
    outcomes: str
    outcomes_index: np.ndarray
    where: str


def open_row_groups(store: Storage, info: ShardInfo) -> tuple[OpenShard, list[RowGroup]]:
    """A backward shard opened for reading by block, and its blocks with their first and last
    keys (block indexes only: no data is read). A shard of outcomes only must have the blocks
    of its forward shard."""
    kfile = info.key_shard().file
    ki = _read_index(store, kfile)
    oi = _read_index(store, info.file) if info.keys is not None else ki
    if info.keys is not None and (oi.shape[0] != ki.shape[0] or np.any(oi["rows"] != ki["rows"])):
        raise CorruptDataError(f"{store.display(info.file)}: blocks do not match those "
                               f"of its keys' shard {store.display(info.keys)}")
    groups = [RowGroup(i, f, l, n) for i, (f, l, n) in enumerate(zip(
        ki["first"].tolist(), ki["last"].tolist(), ki["rows"].tolist()))]
    return OpenShard(store, kfile, ki, info.file, oi, store.display(info.file)), groups


def _read_span(store: Storage, rel: str, index: np.ndarray) -> memoryview:
    """The bytes from the first to the last of some blocks of ``rel`` (one ranged read)."""
    lo = int(index["offset"][0])
    hi = int(index["offset"][-1] + index["keys"][-1] + index["outcomes"][-1])
    buf = bytearray(hi - lo)
    store.read_into(rel, lo, buf)
    return memoryview(buf)


def read_row_groups(shard: OpenShard, indices: list[int],
                    out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keys and outcomes of some blocks (in increasing order: consecutive ones, read in one
    read per file) of an opened backward shard, decoded into ``out`` (a uint64 and a uint8
    array of the blocks' rows, e.g. slices of a bigger buffer) if given, else into new arrays.
    The checksums are not checked here: the caller verifies the shards once
    (:func:`verify_shards`)."""
    if any(b <= a for a, b in zip(indices, indices[1:])):
        raise ValueError(f"blocks {indices} are not in increasing order")
    ki, oi = shard.keys_index[indices], shard.outcomes_index[indices]
    n = int(ki["rows"].sum())
    if out is None:
        keys, outs = np.empty(n, np.uint64), np.empty(n, np.uint8)
    else:
        keys, outs = out
        if keys.shape != (n,) or outs.shape != (n,) or keys.dtype != np.uint64 \
                or outs.dtype != np.uint8:
            raise ValueError(f"out must be a uint64 and a uint8 array of {n} rows")
    if not n:
        return keys, outs
    try:
        span = _read_span(shard.store, shard.keys, ki)
        _decode_blocks(span, ki, int(ki["offset"][0]), KEYS, keys)
        if shard.outcomes != shard.keys:
            span = _read_span(shard.store, shard.outcomes, oi)
        _decode_blocks(span, oi, int(oi["offset"][0]), OUTCOMES, outs)
    except CorruptDataError as e:
        raise CorruptDataError(f"{shard.where}: unreadable shard ({e})") from None
    except (OSError, EOFError) as e:
        raise CorruptDataError(f"{shard.where}: unreadable shard ({e.__class__.__name__}: {e})") from None
    return keys, outs


def verify_shard_task(root: str, info_json: dict) -> int:
    """Check one finished shard's presence and xxh64 against the manifest (and those of the
    forward shard holding its keys); return its rows."""
    info = ShardInfo.from_json(info_json)
    store = open_storage(root)
    for f in (info, info.key_shard()) if info.keys is not None else (info,):
        if not store.exists(f.file):
            raise _missing(store, f.file)
        digest = stored_xxh64(store, f.file)
        if digest != f.xxh64:
            raise CorruptDataError(f"{store.display(f.file)}: checksum {digest} does not match "
                                   f"manifest {f.xxh64} (damaged shard)")
    return info.rows


def verify_shards(executor, store: Storage, infos: list[ShardInfo]) -> int:
    """Check finished shards (in parallel through ``executor``); raise
    :class:`CorruptDataError` naming the first bad file. Returns how many were checked."""
    tasks = [(store.uri, s.to_json()) for s in infos]
    executor.map(verify_shard_task, tasks)
    return len(tasks)
