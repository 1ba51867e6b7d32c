"""Per-block checksums of a ``.dat`` table: the sidecar file ``TABLE.dat.sums`` beside it, how it
is written (:class:`BlockSums`, fed the table's bytes in order, handing each batch of finished
sums on to :class:`SumsWriter`, which streams them into the sidecar: the merge, ``c4table
verify --write-sums``, ``c4table decompress``), how it is checked as a table streams past (:class:`SumsCheck`: ``c4table
verify``, ``c4table compress``), and how a reader uses it (:class:`Guard`: each block checked
the first time a search touches it, remembered for the life of the open table; an outcome byte
its position's ply cannot have refused with or without sums). Memory for the sums does not grow
with the table on any of these paths. Layout: docs/FORMAT.md and ``docs/modules.md``
(``c4table.table.sums``).

>>> s = BlockSums(4, block_entries=2); s.update(b"abcdefghijkl")   # 3 entries: 2 blocks
>>> len(s.finish())
2
"""
from __future__ import annotations

import os
import struct
import sys
import tempfile
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
BATCH = 1 << 16                # sums handed on at a time (512 KiB)
READ_BYTES = 1 << 20           # sidecar bytes a check reads at a time
REWRITE = "rewrite it with c4table verify --write-sums"
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
    order, in chunks of any size. Finished sums go to ``sink`` in order, in batches of up to
    :data:`BATCH` (a uint64 array, valid during the call), so that memory does not grow with
    the table; without a sink they are kept (:meth:`finish` returns them: small tables, tests).
    The count of blocks and the xxh64 of the sums (the sidecar's header) are kept either way."""

    def __init__(self, entry_size: int, block_entries: int = BLOCK_ENTRIES, sink=None):
        self.entry_size, self.block_entries = entry_size, block_entries
        self.block_bytes = entry_size * block_entries
        self.size = 0
        self.blocks = 0                      # sums handed on (or kept) so far
        self._sink = sink
        self._kept = [] if sink is None else None
        self._batch = array("Q")
        self._digest = xxhash.xxh64()        # of the sums' little-endian bytes
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
                self._batch.append(self._part.intdigest())
                self._part.reset()
                self._in_part = 0
        B = self.block_bytes
        batch = self._batch
        while len(mv) - at >= B:
            batch.append(xxhash.xxh64_intdigest(mv[at: at + B]))
            at += B
        if at < len(mv):
            self._part.update(mv[at:])
            self._in_part = len(mv) - at
        if len(batch) >= BATCH:
            self._hand_on()

    def add_pieces(self, sums) -> None:
        """The xxh64s of whole blocks hashed elsewhere (uint64s, in order: e.g. a build's merge
        tasks, :class:`~c4table.io.treehash.SpanCut`) that follow the bytes fed so far, which
        must end on a block boundary."""
        if self._in_part:
            raise ValueError(f"block sums: whole blocks given at byte {self.size:,}, inside a block")
        self._hand_on()
        self._batch = array("Q", np.asarray(sums, np.uint64).tobytes())
        self.size += len(self._batch) * self.block_bytes
        self._hand_on()

    def _hand_on(self) -> None:
        """Pass the batch of finished sums on (to the sink, or to those kept)."""
        if not self._batch:
            return
        batch = np.frombuffer(self._batch, np.uint64)
        self._batch = array("Q")
        self._digest.update(_le(batch))
        self.blocks += batch.shape[0]
        if self._sink is None:
            self._kept.append(batch)
        else:
            self._sink(batch)

    def finish(self) -> np.ndarray:
        """Hand on the last sums (the last, shorter block included); nothing more can be fed
        after this. Returns the kept sums (uint64; empty with a sink)."""
        if self._in_part:
            self._batch.append(self._part.intdigest())
            self._part.reset()
            self._in_part = 0
        self._hand_on()
        if not self._kept:
            return np.zeros(0, np.uint64)
        if len(self._kept) > 1:
            self._kept[:] = [np.concatenate(self._kept)]
        return self._kept[0]

    def header(self) -> bytes:
        """The sidecar's 64-byte header (after :meth:`finish`, which it calls)."""
        self.finish()
        head = HEADER.pack(MAGIC, VERSION, self.block_entries, self.entry_size, 0, self.size,
                           self.blocks, self._digest.intdigest(), 0)
        return head + struct.pack("<Q", xxhash.xxh64_intdigest(head))

    def to_bytes(self) -> bytes:
        """The whole sidecar file (header and sums) of kept sums."""
        return self.header() + _le(self.finish()).tobytes()

    def write(self, table: str | os.PathLike) -> Path:
        """Write the sidecar of kept sums beside the local table file ``table`` (atomically);
        its path."""
        out = sums_path(table)
        tmp = out.with_name(out.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(self.header())
            f.write(_le(self.finish()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
        return out


class SumsWriter:
    """The sidecar of table ``name`` of ``store`` (a :class:`~c4table.io.storage.Storage`),
    written as the sums come (:meth:`take`, the sink of a :class:`BlockSums`): locally into a
    temporary file after a blank header, which :meth:`commit` fills in at the end, syncs and
    renames; for an object store into a local temporary file, uploaded as one object (which
    appears when complete) by :meth:`commit`. :meth:`abort` (or leaving the ``with`` block
    without a commit) drops what was written. Counted as one object written."""

    def __init__(self, store, name: str):
        self.store, self.rel = store, name + SUFFIX
        self._tmp = self.rel + ".tmp"
        self._done = False
        if store.local:
            self._f = store.open_output(self._tmp)
            self._f.write(bytes(HEADER_BYTES))   # the header's place, filled in by commit
        else:
            self._f = tempfile.TemporaryFile()

    def take(self, batch: np.ndarray) -> None:
        self._f.write(_le(batch))

    def commit(self, sums: BlockSums) -> None:
        """Finish ``sums`` (the :class:`BlockSums` that fed this writer) and put the sidecar in
        place with its header."""
        head = sums.header()                    # hands on the last sums first
        if self.store.local:
            self._f.flush()
            os.pwrite(self._f.fileno(), head, 0)
            os.fsync(self._f.fileno())
            self._f.close()
            self.store.rename(self._tmp, self.rel)
        else:
            self._f.seek(0)
            with self.store.open_output(self.rel) as out:
                out.write(head)
                while b := self._f.read(1 << 24):
                    out.write(b)
            self._f.close()
        self._done = True

    def abort(self) -> None:
        """Drop the unfinished sidecar (nothing once committed)."""
        if self._done:
            return
        self._done = True
        self._f.close()
        if self.store.local:
            (self.store.root / self._tmp).unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.abort()


class SumsCheck:
    """The sums of a table's blocks checked as they come (:meth:`take`: the sink of a
    :class:`BlockSums` of :data:`BLOCK_ENTRIES`, e.g. :meth:`block_sums`) against the sidecar of
    the table, which is read along (memory does not grow with the table). ``stop``: the first
    block that does not match raises :class:`TableDamaged` naming it (``c4table compress``);
    otherwise :meth:`finish` reports the first such block and their count (``c4table verify``).
    Opened by :func:`open_check`."""

    def __init__(self, name: str, table_bytes: int, entry_size: int, shown, f,
                 head: "SumsHeader", stop: bool):
        self.rel, self.shown, self.stop = name + SUFFIX, shown, stop
        self.table_bytes, self.entry_size, self.head = table_bytes, entry_size, head
        self._f = f
        self._digest = xxhash.xxh64()        # of the sidecar's sums, as read
        self._have = np.zeros(0, "<u8")      # sidecar sums read and not yet compared
        self._rest = b""                     # a read's bytes past its last whole sum
        self._at = 0                         # blocks compared so far
        self.first_bad, self.bad = -1, 0
        self._damaged: bool | None = None

    def block_sums(self) -> BlockSums:
        """A :class:`BlockSums` whose sums this check takes."""
        return BlockSums(self.entry_size, BLOCK_ENTRIES, sink=self.take)

    def _more(self) -> bool:
        """Read the next sums of the sidecar into ``_have``; False at its end."""
        while True:
            raw = self._f.read(READ_BYTES)
            if not raw:
                return False
            self._digest.update(raw)
            raw = self._rest + raw
            whole = len(raw) // 8 * 8
            self._rest = raw[whole:]
            if whole:
                self._have = np.frombuffer(raw, "<u8", whole // 8)
                return True

    def take(self, batch: np.ndarray) -> None:
        at = 0
        while at < batch.shape[0]:
            if not self._have.shape[0] and not self._more():   # a sidecar cut short
                self._differ(self._at, batch.shape[0] - at)
                self._at += batch.shape[0] - at
                return
            n = min(batch.shape[0] - at, self._have.shape[0])
            ne = batch[at: at + n] != self._have[:n]
            if ne.any():
                self._differ(self._at + int(np.argmax(ne)), int(np.count_nonzero(ne)))
            self._have = self._have[n:]
            at += n
            self._at += n

    def _differ(self, block: int, count: int) -> None:
        if self.first_bad < 0:
            self.first_bad = block
        self.bad += count
        if self.stop:
            self._refuse()

    def _sums_damaged(self) -> bool:
        """Whether the sidecar's sums do not match their checksum (read to its end, once)."""
        if self._damaged is None:
            while self._more():
                pass
            self._damaged = self._digest.intdigest() != self.head.sums_xxh64 or bool(self._rest)
        return self._damaged

    def where(self, block: int) -> str:
        """Block ``block``, with its bytes and entries."""
        B = self.entry_size * BLOCK_ENTRIES
        lo, hi = block * B, max(min((block + 1) * B, self.table_bytes), block * B + 1)
        E = self.entry_size
        return (f"block {block:,} (bytes {lo:,} to {hi - 1:,}, entries {lo // E:,} to "
                f"{(hi - 1) // E:,})")

    def _refuse(self) -> None:
        self.stop = False                    # (once)
        if self._sums_damaged():
            raise TableDamaged(f"{self.shown}: its sums ({self.rel}) do not match their checksum "
                               f"(damaged sums; {REWRITE})")
        raise TableDamaged(f"{self.shown}: {self.where(self.first_bad)} does not match its "
                           f"checksum in {self.rel}: the table is damaged")

    def finish(self) -> str | None:
        """After the :class:`BlockSums` feeding this check is finished: close the sidecar and
        say why it disagrees with the table (``None``: it agrees); with ``stop``,
        :class:`TableDamaged` instead."""
        stop = self.stop
        try:
            if self._at != self.head.blocks:          # the table is longer or shorter
                self._differ(min(self._at, self.head.blocks), 1)
            damaged = self._sums_damaged()
        finally:
            self.close()
        if stop and (damaged or self.first_bad >= 0):
            self._refuse()
        if damaged:
            return f"{self.rel}: its sums do not match their checksum (damaged sums)"
        if self.first_bad >= 0:
            return (f"{self.where(self.first_bad)} does not match its sum in {self.rel} "
                    f"({self.bad:,} block(s) differ)")
        return None

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SumsProblem(TableDamaged):
    """A sidecar that is damaged or describes another table (:func:`open_check`); ``reason``:
    the message without the path in front."""

    def __init__(self, where, reason: str):
        super().__init__(f"{where}: {reason}")
        self.reason = reason


def open_check(store, name: str, table_bytes: int, entry_size: int, shown=None,
               stop: bool = True) -> SumsCheck | None:
    """A :class:`SumsCheck` of table ``name`` of ``store`` (``table_bytes`` long, entries of
    ``entry_size`` bytes; ``shown``: the table as messages name it), or ``None`` when it has no
    sidecar; :class:`SumsProblem` when the sidecar is damaged or describes another table."""
    rel = name + SUFFIX
    shown = shown if shown is not None else name
    if not store.exists(rel):
        return None
    f = store.open_input_stream(rel)
    try:
        raw = b""
        while len(raw) < HEADER_BYTES and (b := f.read(HEADER_BYTES - len(raw))):
            raw += b
        problem = header_problem(raw)
        if problem:
            raise SumsProblem(shown, f"{rel}: {problem}")
        h = SumsHeader(raw, rel)
        blocks = -(-(table_bytes // max(entry_size, 1)) // BLOCK_ENTRIES)
        if h.block_entries != BLOCK_ENTRIES or h.entry_size != entry_size or \
                h.table_bytes != table_bytes or h.blocks != blocks:
            raise SumsProblem(shown, f"{rel} describes a table of {h.table_bytes:,} bytes "
                                     f"({h.entry_size}-byte entries, blocks of "
                                     f"{h.block_entries:,}), not this one")
    except BaseException:
        f.close()
        raise
    return SumsCheck(name, table_bytes, entry_size, shown, f, h, stop)


def header_problem(raw: bytes) -> str | None:
    """Why ``raw`` is not the header of a sidecar this c4table reads (``None``: it is)."""
    if len(raw) < HEADER_BYTES or raw[:8] != MAGIC:
        return f"not a c4table block-sums file (damaged; {REWRITE})"
    if struct.unpack("<Q", raw[HEADER.size:HEADER_BYTES])[0] != \
            xxhash.xxh64_intdigest(raw[:HEADER.size]):
        return f"its header does not match its checksum (damaged; {REWRITE})"
    version = HEADER.unpack(raw[:HEADER.size])[1]
    if version != VERSION:
        return f"block-sums version {version}, this c4table reads {VERSION} ({REWRITE})"
    return None


class SumsHeader:
    """The parsed header of a sidecar (raises :class:`TableDamaged` for a damaged one)."""

    def __init__(self, raw: bytes, where: Path):
        problem = header_problem(raw)
        if problem:
            raise TableDamaged(f"{where}: {problem}")
        _, _, self.block_entries, self.entry_size, _, self.table_bytes, self.blocks, \
            self.sums_xxh64, _ = HEADER.unpack(raw[:HEADER.size])


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
