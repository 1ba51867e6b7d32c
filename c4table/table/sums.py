"""Per-block checksums of a ``.dat`` table: the sidecar file ``TABLE.dat.sums`` beside it, how it
is written (:class:`BlockSums`, fed the table's bytes in order by the merge and by ``c4table
verify --write-sums``), and how a reader uses it (:class:`Guard`: each block checked the first
time a search touches it, remembered for the life of the open table; an outcome byte its
position's ply cannot have refused with or without sums). Layout: docs/FORMAT.md and
``docs/modules.md`` (``c4table.table.sums``).

>>> s = BlockSums(4, block_entries=2); s.update(b"abcdefghijkl")   # 3 entries: 2 blocks
>>> len(s.finish())
2
"""
from __future__ import annotations

import os
import struct
import sys
from array import array
from pathlib import Path

import numpy as np
import xxhash

from c4table.errors import TableDamaged

SUFFIX = ".sums"
MAGIC = b"C4SUMS\r\n"
VERSION = 1
BLOCK_ENTRIES = 4096           # 28 KiB blocks for 7-byte entries: 553 million sums for 7x6
HEADER = struct.Struct("<8sIIIIQQQQ")   # + the header's own xxh64 (u64)
HEADER_BYTES = HEADER.size + 8
_warned: set[str] = set()


def _le(sums: np.ndarray) -> np.ndarray:
    """``sums`` as the sidecar stores them (little-endian; no copy on a little-endian machine)."""
    return sums if sys.byteorder == "little" else sums.astype("<u8")


def sums_path(table: str | os.PathLike) -> Path:
    """The sidecar of a table file: ``connect4_5x4.dat`` -> ``connect4_5x4.dat.sums``."""
    p = Path(table)
    return p.with_name(p.name + SUFFIX)


class BlockSums:
    """The xxh64 of each block of ``block_entries`` entries of a stream of table bytes fed in
    order, in chunks of any size."""

    def __init__(self, entry_size: int, block_entries: int = BLOCK_ENTRIES):
        self.entry_size, self.block_entries = entry_size, block_entries
        self.block_bytes = entry_size * block_entries
        self.size = 0
        self._sums = array("Q")   # 8 bytes a block: 4.4 GB for 7x6, in memory until written
        self._part = xxhash.xxh64()
        self._in_part = 0

    def update(self, b) -> None:
        mv = memoryview(b).cast("B")
        self.size += len(mv)
        at = 0
        if self._in_part:
            take = min(len(mv), self.block_bytes - self._in_part)
            self._part.update(mv[:take])
            self._in_part += take
            at = take
            if self._in_part == self.block_bytes:
                self._sums.append(self._part.intdigest())
                self._part.reset()
                self._in_part = 0
        B = self.block_bytes
        while len(mv) - at >= B:
            self._sums.append(xxhash.xxh64_intdigest(mv[at: at + B]))
            at += B
        if at < len(mv):
            self._part.update(mv[at:])
            self._in_part = len(mv) - at

    def finish(self) -> np.ndarray:
        """The sums (uint64, a view of what was collected: no copy), the last, shorter block
        included; nothing more can be fed after this."""
        if self._in_part:
            self._sums.append(self._part.intdigest())
            self._part.reset()
            self._in_part = 0
        return np.frombuffer(self._sums, np.uint64) if len(self._sums) else np.zeros(0, np.uint64)

    def header(self) -> bytes:
        """The sidecar's 64-byte header."""
        sums = self.finish()
        head = HEADER.pack(MAGIC, VERSION, self.block_entries, self.entry_size, 0, self.size,
                           sums.shape[0], xxhash.xxh64_intdigest(_le(sums)), 0)
        return head + struct.pack("<Q", xxhash.xxh64_intdigest(head))

    def to_bytes(self) -> bytes:
        """The whole sidecar file (header and sums)."""
        return self.header() + _le(self.finish()).tobytes()

    def write(self, table: str | os.PathLike) -> Path:
        """Write the sidecar beside the local table file ``table`` (atomically); its path."""
        out = sums_path(table)
        tmp = out.with_name(out.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(self.header())
            f.write(_le(self.finish()))   # 8 bytes a block, written as collected (no copy)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
        return out


def write_sums(store, name: str, sums: BlockSums) -> None:
    """Write the sidecar of table ``name`` of ``store`` (a :class:`~c4table.io.storage.Storage`:
    locally under a temporary name, synced, then renamed; on an object store as one object,
    which appears when complete). Counted as one object written either way."""
    rel = name + SUFFIX
    target = rel + ".tmp" if store.local else rel
    with store.open_output(target) as f:
        f.write(sums.header())
        f.write(_le(sums.finish()))
        if store.local:
            f.flush()
            os.fsync(f.fileno())
    if store.local:
        store.rename(target, rel)


def sums_problem(store, name: str, table_bytes: int, entry_size: int, computed: np.ndarray
                 ) -> str | None:
    """Why the sidecar of table ``name`` of ``store`` disagrees with the sums ``computed`` from
    the table's bytes (:class:`BlockSums` of ``BLOCK_ENTRIES``), ``"absent"`` when there is
    none, or ``None`` when it agrees (``c4table verify``)."""
    rel = name + SUFFIX
    if not store.exists(rel):
        return "absent"
    parts = []
    with store.open_input_stream(rel) as f:
        while b := f.read(1 << 24):     # (a remote stream cannot read() to its end at once)
            parts.append(b)
    raw = b"".join(parts)
    try:
        h = SumsHeader(raw, rel)
    except TableDamaged as e:
        return str(e).partition(": ")[2]
    if h.block_entries != BLOCK_ENTRIES or h.entry_size != entry_size or \
            h.table_bytes != table_bytes or len(raw) != HEADER_BYTES + 8 * h.blocks:
        return (f"{rel} describes a table of {h.table_bytes:,} bytes ({h.entry_size}-byte "
                f"entries, blocks of {h.block_entries:,}), not this one")
    got = np.frombuffer(raw, "<u8", offset=HEADER_BYTES)
    if xxhash.xxh64_intdigest(got.tobytes()) != h.sums_xxh64:
        return f"{rel}: its sums do not match their checksum (damaged sums)"
    if got.shape != computed.shape or (got != computed).any():
        diff = np.flatnonzero(got != computed) if got.shape == computed.shape else [0]
        return (f"block {int(diff[0]):,} does not match its sum in {rel} "
                f"({len(diff):,} block(s) differ)")
    return None


class SumsHeader:
    """The parsed header of a sidecar (raises :class:`TableDamaged` for a damaged one)."""

    def __init__(self, raw: bytes, where: Path):
        if len(raw) < HEADER_BYTES or raw[:8] != MAGIC:
            raise TableDamaged(f"{where}: not a c4table block-sums file (damaged; rewrite it with "
                               "c4table verify --write-sums)")
        fields = HEADER.unpack(raw[:HEADER.size])
        (own,) = struct.unpack("<Q", raw[HEADER.size:HEADER_BYTES])
        if own != xxhash.xxh64_intdigest(raw[:HEADER.size]):
            raise TableDamaged(f"{where}: its header does not match its checksum (damaged; rewrite "
                               "it with c4table verify --write-sums)")
        if fields[1] != VERSION:
            raise TableDamaged(f"{where}: block-sums version {fields[1]}, this c4table reads "
                               f"{VERSION} (rewrite it with c4table verify --write-sums)")
        _, _, self.block_entries, self.entry_size, _, self.table_bytes, self.blocks, \
            self.sums_xxh64, _ = fields


def read_sums(table: Path, entry_size: int, table_bytes: int, board=None
              ) -> tuple[np.ndarray, int] | None:
    """``(sums, entries per block)`` of the sidecar beside ``table`` (the sums memory-mapped,
    uint64), or ``None`` when there is none; :class:`TableDamaged` when it is damaged or describes another table."""
    path = sums_path(table)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return None
    with f:
        h = SumsHeader(f.read(HEADER_BYTES), path)
        size = os.fstat(f.fileno()).st_size
    blocks = -(-(table_bytes // entry_size) // max(h.block_entries, 1))
    if h.entry_size != entry_size:
        raise TableDamaged(f"{table}: its sums are for {h.entry_size}-byte entries, not the "
                           f"{entry_size}-byte entries of board {board} (wrong --board?)")
    if h.table_bytes != table_bytes or h.blocks != blocks or size != HEADER_BYTES + 8 * blocks \
            or h.block_entries & (h.block_entries - 1):
        raise TableDamaged(f"{table}: its sums ({path.name}) are for a table of "
                           f"{h.table_bytes:,} bytes, not {table_bytes:,}: another table's "
                           "sums, or a damaged table (c4table verify tells which)")
    if blocks == 0:
        return np.zeros(0, np.uint64), h.block_entries
    return np.memmap(path, "<u8", "r", HEADER_BYTES, (blocks,)), h.block_entries


def impossible(outs: np.ndarray, plies: np.ndarray, cells: int, k: int) -> np.ndarray:
    """Where outcome bytes ``outs`` cannot belong to positions of ply ``plies`` (bool): the
    unused class ``0xC0``, a game that would last past the last cell, a draw before the board
    is full, a win on the wrong player's move or before ``k`` chips of the winner are down.

    >>> impossible(np.array([0x40 | 3, 0x00 | 1, 0xF7]), np.array([4, 4, 0]), 16, 4).tolist()
    [False, True, True]
    """
    o = np.asarray(outs, np.int64)
    cls, end = o & 0xC0, np.asarray(plies, np.int64) + (o & 0x3F)
    return (cls == 0xC0) | (end > cells) | ((cls == 0) & (end != cells)) | \
        ((cls == 0x40) & ((end % 2 != 1) | (end < 2 * k - 1))) | \
        ((cls == 0x80) & ((end % 2 != 0) | (end < 2 * k)))


class Guard:
    """What the search kernels (:mod:`c4table.table.search`) need to check a table as they read
    it: the sums of its blocks (an empty array when it has none), the blocks checked so far,
    and the one-line errors for what they find."""

    def __init__(self, path: Path, board, table_bytes: int):
        self.path, self.board = path, board
        self.entry_size = board.entry_size
        got = read_sums(path, self.entry_size, table_bytes, board)
        if got is None:
            self.sums, self.shift = np.zeros(0, np.uint64), 0
            warn_unchecked(path)
        else:
            self.sums, per = got
            self.shift = per.bit_length() - 1
        #: 1 for each block found to match its sum (zeroed pages: costs only what is touched)
        self.checked = np.zeros(max(self.sums.shape[0], 1), np.uint8)
        self.bad = np.zeros(2, np.int64)

    @property
    def summed(self) -> bool:
        """Whether the table has sums (its blocks are checked)."""
        return self.sums.shape[0] > 0

    def args(self) -> tuple:
        """The trailing arguments of the search kernels."""
        return self.sums, self.checked, self.shift, self.bad

    def raise_found(self, data=None) -> None:
        """Raise :class:`TableDamaged` for what a kernel reported in ``bad`` (nothing if clean)."""
        kind, where = int(self.bad[0]), int(self.bad[1])
        if kind == 0:
            return
        self.bad[:] = 0
        if kind == 1:
            lo = where << self.shift
            raise TableDamaged(f"{self.path}: block {where:,} (entries {lo:,} to "
                               f"{lo + (1 << self.shift) - 1:,}) does not match its checksum in "
                               f"{sums_path(self.path).name}: the table is damaged")
        byte = f" 0x{int(data[where * self.entry_size + self.board.key_bytes]):02x}" \
            if data is not None else ""
        del data           # no view of the map kept alive by the traceback
        raise TableDamaged(f"{self.path}: entry {where:,} has outcome byte{byte}, which no table "
                           "holds: the table is damaged")

    def check_entries(self, data, start: int, stop: int) -> None:
        """Check the blocks holding entries ``start..stop-1`` (raise if one is damaged)."""
        from c4table.table.search import check_blocks
        if stop > start and self.summed:
            check_blocks(data, start >> self.shift, (stop - 1) >> self.shift, self.sums,
                         self.checked, self.shift, self.entry_size, self.bad)
            del data       # no view of the map kept alive by the traceback
            self.raise_found()

    def check_plies(self, outs, plies, what: str = "") -> None:
        """:func:`check_plies` for this table."""
        check_plies(self.path, self.board, outs, plies, what)


def check_plies(path, board, outs, plies, what: str = "") -> None:
    """Raise :class:`TableDamaged` (naming ``path``) if an outcome byte of ``outs`` cannot be
    that of a position of its ply in ``plies`` (:func:`impossible`)."""
    bad = impossible(outs, plies, board.cells, board.k)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        where = f" of {what}" if what else ""
        raise TableDamaged(f"{path}: outcome byte 0x{int(np.asarray(outs).flat[i]):02x}{where} is "
                           f"impossible at ply {int(np.asarray(plies).flat[i])}: the table is damaged")


def check_rows(path, board, found: np.ndarray, plies: np.ndarray) -> None:
    """:func:`check_plies` of rows of outcome bytes ``found`` (int64 ``(n, w + 1)``: a position,
    then its children, one ply later; values outside 0..255 mean none) of positions of ply
    ``plies``, in one numba pass (the batch readers: fastprobe, label)."""
    from c4table.table.search import first_impossible
    at = first_impossible(found, np.ascontiguousarray(plies, np.int64), board.cells, board.k)
    if at >= 0:
        r, c = divmod(int(at), found.shape[1])
        check_plies(path, board, [found[r, c]], [int(plies[r]) + (c > 0)])


def warn_unchecked(path: Path) -> None:
    """Say once per process, on stderr, that the table ``path`` has no sums."""
    key = str(Path(path).resolve())
    if key in _warned:
        return
    _warned.add(key)
    print(f"c4table: warning: {path} has no block checksums ({sums_path(path).name}): its entries "
          "are unchecked (write them with c4table verify --write-sums)", file=sys.stderr, flush=True)
