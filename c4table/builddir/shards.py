"""Shard files: sorted key ranges of one generation, stored as parquet, written atomically.

Design notes: ``docs/modules.md`` (``c4table.builddir.shards``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from c4table.errors import CorruptDataError
from c4table.io.storage import Storage, open_storage

# Shards are read by key range in the final merge: small row groups (each with its key min/max
# statistics) bound what a range task reads beyond its range. A backward shard has the row
# groups of its forward shard.
ROW_GROUP = 1 << 17
BACKWARD_ROW_GROUP = ROW_GROUP


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


def _arrow(values: np.ndarray, typ) -> pa.Array:
    """A numpy array as an arrow array without copying. (``pa.array`` of a numpy array, like
    ``to_numpy`` and ``pq.read_table``, imports pandas: 0.7 s of start-up the build does not
    need, so shards go through buffers both ways.)"""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(typ, values.shape[0], [None, pa.py_buffer(values)])


def _table(cols: dict) -> pa.Table:
    """The columns as a table whose fields are declared non-nullable: parquet then stores no
    definition levels (a column here never holds a null). Measured on 5x6's ply 20 (18.5 M
    keys): writing keys 5.9 -> 4.9 ns and reading them 1.9 -> 1.4 ns per key, outcomes 4.9 ->
    3.7 and 2.7 -> 1.3 ns. Shards written with nullable fields (older builds) read the same.

    >>> _table({"key": _arrow(np.array([3, 5], np.int64), pa.int64())}).schema.field("key").nullable
    False
    """
    return pa.table(cols, schema=pa.schema([pa.field(k, v.type, nullable=False) for k, v in cols.items()]))


def column_numpy(table: pa.Table, name: str, dtype) -> np.ndarray:
    """Column ``name`` of ``table`` (no nulls) as a numpy array of ``dtype``, from its buffers
    (one chunk: no copy).

    >>> t = pa.table({"key": _arrow(np.array([3, 5], np.int64), pa.int64())})
    >>> column_numpy(t, "key", np.uint64)
    array([3, 5], dtype=uint64)
    """
    dt = np.dtype(dtype)
    parts = []
    for chunk in table.column(name).chunks:
        if chunk.null_count or chunk.type.bit_width != 8 * dt.itemsize:
            raise CorruptDataError(f"column {name} has nulls or type {chunk.type}")
        parts.append(np.frombuffer(chunk.buffers()[1], dt, count=len(chunk),
                                   offset=chunk.offset * dt.itemsize))
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dt)


def write_shard(store: Storage, rel: str, keys: np.ndarray, outcomes: np.ndarray | None = None) -> ShardInfo:
    """Write sorted uint64 ``keys`` (and optional uint8 ``outcomes``) to ``rel`` of ``store``:
    encoded in memory, checksummed, then written atomically but not fsync'ed: the manifest
    makes a shard durable when it records it (:meth:`~c4table.builddir.manifest.Manifest.save`,
    one batch of fsyncs for the shards of many tasks)."""
    cols = {"key": _arrow(keys.view(np.int64), pa.int64())}
    enc = {"key": "DELTA_BINARY_PACKED"}
    if outcomes is not None:
        # one byte per value (fixed_size_binary(1)): parquet stores a uint8 column as INT32,
        # four bytes to compress per value (measured: 20% smaller, writes 12% and reads 30%
        # faster); :func:`column_numpy` reads either kind as uint8.
        cols["outcome"] = _arrow(outcomes, pa.binary(1))
    sink = pa.BufferOutputStream()
    # No compression: DELTA_BINARY_PACKED alone keeps a generation's clustered keys at about
    # 1.25 bytes (5x6), zstd level 1 took them to 0.6 but cost 3.7 ns more per key to write and
    # 2 ns more to read (each key is read three times), measured on 5x6's ply 22.
    pq.write_table(_table(cols), sink, compression="none",
                   use_dictionary=False, column_encoding=enc, write_statistics=["key"],
                   row_group_size=ROW_GROUP)
    buf = sink.getvalue()
    digest = xxhash.xxh64(buf).hexdigest()
    store.write_atomic(rel, buf, durable=False)
    n = int(keys.shape[0])
    return ShardInfo(rel, n, digest, int(keys[0]) if n else -1, int(keys[-1]) if n else -1)


def write_outcomes(store: Storage, rel: str, outcomes: np.ndarray, keys: ShardInfo) -> ShardInfo:
    """Write the uint8 ``outcomes`` of the keys of forward shard ``keys`` (same order) to
    ``rel`` as a backward shard of outcomes only, with the row groups of :func:`write_shard`
    (so row group ``i`` of both files holds the same rows); return its record, which names the
    forward shard. About 0.2 bytes per entry (zstd), and no second encoding of the keys.
    Written like :func:`write_shard`: atomically, made durable when the manifest records it."""
    if outcomes.shape[0] != keys.rows:
        raise ValueError(f"{outcomes.shape[0]} outcomes for a shard of {keys.rows} keys")
    md = _open_parquet(store, keys.file).metadata   # its row groups (an older build's are larger)
    group = md.row_group(0).num_rows if md.num_row_groups else ROW_GROUP
    sink = pa.BufferOutputStream()
    pq.write_table(_table({"outcome": _arrow(outcomes, pa.binary(1))}), sink,
                   compression="zstd", compression_level=1, use_dictionary=False,
                   write_statistics=False, row_group_size=max(1, group))
    buf = sink.getvalue()
    digest = xxhash.xxh64(buf).hexdigest()
    store.write_atomic(rel, buf, durable=False)
    return ShardInfo(rel, keys.rows, digest, keys.first, keys.last, keys.file, keys.xxh64)


def read_shard(store: Storage, info: ShardInfo, with_outcome: bool = False, check: bool = True):
    """Read a shard back as uint64 keys (and uint8 outcomes); verify checksums and row counts.
    A backward shard of outcomes only takes its keys from its forward shard."""
    if info.keys is not None:
        keys = _read_columns(store, info.key_shard(), ("key",), check)[0]
        if not with_outcome:
            return keys
        return keys, _read_columns(store, info, ("outcome",), check)[0]
    cols = _read_columns(store, info, ("key", "outcome") if with_outcome else ("key",), check)
    return cols if with_outcome else cols[0]


def _read_columns(store: Storage, info: ShardInfo, names: tuple, check: bool) -> list:
    where = store.display(info.file)
    try:
        data = store.read_bytes(info.file)
    except FileNotFoundError:
        raise _missing(store, info.file) from None
    if check:
        digest = xxhash.xxh64(data).hexdigest()
        if digest != info.xxh64:
            raise CorruptDataError(f"{where}: checksum {digest} does not match manifest {info.xxh64}")
    try:
        table = pq.ParquetFile(pa.BufferReader(data)).read()
    except Exception as e:  # pyarrow raises several types for damaged files
        raise CorruptDataError(f"{where}: unreadable shard ({e.__class__.__name__}: {e})") from None
    try:
        cols = [column_numpy(table, n, np.uint64 if n == "key" else np.uint8) for n in names]
    except (KeyError, CorruptDataError) as e:
        raise CorruptDataError(f"{where}: unreadable shard ({e})") from None
    if cols[0].shape[0] != info.rows:
        raise CorruptDataError(f"{where}: {cols[0].shape[0]} rows, manifest says {info.rows}")
    return cols


def _open_parquet(store: Storage, rel: str) -> pq.ParquetFile:
    if not store.exists(rel):
        raise _missing(store, rel)
    try:
        return pq.ParquetFile(store.open_input(rel))
    except Exception as e:
        raise CorruptDataError(f"{store.display(rel)}: unreadable shard ({e.__class__.__name__}: {e})") from None


@dataclass
class RowGroup:
    """One row group of a shard, from its footer: index, key statistics and rows."""

    index: int
    first: int
    last: int
    rows: int


@dataclass
class OpenShard:
    """A backward shard opened for reading by row group: the parquet file of its keys and that
    of its outcomes (the same file for an older shard with both columns)."""

    keys: pq.ParquetFile
    outcomes: pq.ParquetFile
    where: str


def open_row_groups(store: Storage, info: ShardInfo) -> tuple[OpenShard, list[RowGroup]]:
    """A backward shard opened for reading by row group, and its non-empty row groups with
    their key statistics (footers only: no data is read). A shard of outcomes only must have
    the row groups of its forward shard."""
    kf = _open_parquet(store, info.key_shard().file)
    of = _open_parquet(store, info.file) if info.keys is not None else kf
    md = kf.metadata
    if info.keys is not None:
        om = of.metadata
        if om.num_row_groups != md.num_row_groups or any(
                om.row_group(i).num_rows != md.row_group(i).num_rows for i in range(md.num_row_groups)):
            raise CorruptDataError(f"{store.display(info.file)}: row groups do not match those "
                                   f"of its keys' shard {store.display(info.keys)}")
    groups = []
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        if rg.num_rows:
            st = rg.column(0).statistics
            groups.append(RowGroup(i, int(st.min), int(st.max), rg.num_rows))
    return OpenShard(kf, of, store.display(info.file)), groups


def read_row_groups(shard: OpenShard, indices: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Keys and outcomes of some row groups of an opened backward shard. The checksums are not
    checked here: the caller verifies the shards once (:func:`verify_shards`)."""
    try:
        if shard.keys is shard.outcomes:
            table = shard.keys.read_row_groups(indices, columns=["key", "outcome"])
            return column_numpy(table, "key", np.uint64), column_numpy(table, "outcome", np.uint8)
        keys = column_numpy(shard.keys.read_row_groups(indices, columns=["key"]), "key", np.uint64)
        outs = column_numpy(shard.outcomes.read_row_groups(indices, columns=["outcome"]),
                            "outcome", np.uint8)
    except CorruptDataError as e:
        raise CorruptDataError(f"{shard.where}: unreadable shard ({e})") from None
    except Exception as e:
        raise CorruptDataError(f"{shard.where}: unreadable shard ({e.__class__.__name__}: {e})") from None
    if keys.shape[0] != outs.shape[0]:
        raise CorruptDataError(f"{shard.where}: {outs.shape[0]} outcomes for {keys.shape[0]} keys")
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
