"""The one way blocks get into a ``.c4z``: :class:`BlockWriter`, shared by its four writers,
each of which only says where its rows come from (:func:`~c4table.c4z.writer.compress_table`:
a ``.dat``; :func:`~c4table.c4z.stream.compress_stream`: a raw stream;
:func:`~c4table.c4z.recode.recompress_c4z`: the decoded blocks of another ``.c4z``;
:class:`~c4table.c4z.assemble.Assembler`: a build's merge ranges, whole compressed blocks and
raw ends). The writer owns the part file (the magic, the codec's trained dictionaries, the
blocks in key order) and its side file of index records (:data:`IDX_RECORD` a block), opened
fresh or cut back to a checkpoint (:class:`Resume`); it encodes raw blocks through the file's
block codec (:mod:`~c4table.c4z.registry`; on a thread pool, written in the order given, or
inline), checks the keys strictly increasing across blocks, hashes the raw entries that pass
(:class:`~c4table.io.hashes.Hashes`, if given), makes the files durable
(:meth:`BlockWriter.sync`; :meth:`BlockWriter.checkpoint` also records a resumable
checkpoint, :func:`load_checkpoint`), and :meth:`BlockWriter.finish` appends the block index,
the JSON header (:func:`c4z_header`) and the trailer. Publishing the file is the caller's
(:func:`publish_part`; a build records it in its manifest first)."""
from __future__ import annotations

import json
import os
import time
from collections import deque
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import xxhash
import zstandard

from c4table.c4z.blocks import default_part_entries
from c4table.c4z.format import CHECKPOINT_SECONDS, END_MAGIC, FORMAT_VERSION, IDX_RECORD, MAGIC, TRAILER
from c4table.errors import TableError
from c4table.game.board import Board
from c4table.io.files import fsync_dir


def _fsync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


def idx_path(part: Path) -> Path:
    """The side file of block index records of the part file ``part``."""
    return part.with_name(part.name + ".idx")


def _checkpoint(fpart, fidx, ckpt: Path, settings: dict, blocks: int, part_bytes: int,
                key_dict_bytes: int, sym_dict_bytes: int, **extra) -> None:
    """Make the part files durable up to ``blocks`` finished blocks and record that in the
    checkpoint file ``ckpt`` (atomically); ``extra`` fields are recorded too."""
    _fsync(fpart)
    _fsync(fidx)
    tmp = ckpt.with_name(ckpt.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "blocks": blocks, "part_bytes": part_bytes,
                               "key_dict_bytes": key_dict_bytes,
                               "sym_dict_bytes": sym_dict_bytes, **extra}))
    os.replace(tmp, ckpt)


def check_grid(level: int, block_entries: int, part_entries: int | None) -> int:
    """The entries of a block's part (``part_entries`` or the default for ``block_entries``),
    after checking the zstd ``level`` and the grid (:class:`ValueError` if out of range)."""
    if not 1 <= level <= 22:
        raise ValueError("zstd level must be 1..22")
    part_entries = part_entries or default_part_entries(block_entries)
    if block_entries < 2 or part_entries < 1:
        raise ValueError("block_entries must be at least 2, part_entries at least 1")
    return part_entries


@dataclass(frozen=True)
class WriteProfile:
    """How a ``compress`` writer (of a ``.dat``, of another ``.c4z``, of a raw stream) encodes:
    its block codec's class, zstd ``level``, the block grid (``block_entries``, the entries of
    a part, ``part_entries``), ``min_match``, ``threads``, whether it trains a key and a
    symbol dictionary (only where the codec uses them) and format 5's ``frame_entries``
    (``None``: the codec's default). :meth:`checked` makes one from what the caller asked.

    >>> p = WriteProfile.checked("varint-plysym-v3", 19, 1 << 16, min_match=0, threads=2)
    >>> p.part_entries, p.key_dict, WriteProfile.checked("rulekeys-frames-v5", 19, 1 << 16).key_dict
    (36864, True, False)
    >>> WriteProfile.checked("varint-plysym-v3", 19, 1 << 16, min_match=9)
    Traceback (most recent call last):
    ValueError: min_match must be 3..7 (or 0: the level's own)
    """

    codec_cls: type
    level: int
    block_entries: int
    part_entries: int
    min_match: int
    threads: int
    key_dict: bool
    sym_dict: bool
    frame_entries: int | None = None

    @classmethod
    def checked(cls, codec: str, level: int, block_entries: int, part_entries: int | None = None,
                min_match: int = 0, threads: int | None = None, key_dict: bool = True,
                sym_dict: bool = True, frame_entries: int | None = None) -> "WriteProfile":
        """The profile of the block codec named ``codec`` (:class:`~c4table.errors.TableError`
        if none is registered), its grid checked (:func:`check_grid`), ``min_match`` 0 or
        3..7 and ``frame_entries`` only for a codec with symbol frames (:class:`ValueError`);
        ``threads`` ``None``: all cores."""
        from c4table.c4z.registry import get_codec, has_frames
        part_entries = check_grid(level, block_entries, part_entries)
        if min_match and not 3 <= min_match <= 7:
            raise ValueError("min_match must be 3..7 (or 0: the level's own)")
        codec_cls = get_codec(codec)
        if frame_entries is not None:
            if not has_frames(codec_cls):
                raise ValueError(f"the block codec {codec} has no symbol frames "
                                 "(frame entries are format 5's)")
            if frame_entries < 1:
                raise ValueError("frame entries must be at least 1")
        return cls(codec_cls, level, block_entries, part_entries, min_match,
                   threads or os.cpu_count() or 1, key_dict and codec_cls.uses_key_dict,
                   sym_dict and getattr(codec_cls, "uses_sym_dict", True), frame_entries)

    def settings(self, board: str) -> dict:
        """What a checkpoint records of the profile (a run resumes only with the same)."""
        return {"level": self.level, "block_entries": self.block_entries, "board": board,
                "part_entries": self.part_entries, "key_dict": self.key_dict,
                "sym_dict": self.sym_dict, "version": FORMAT_VERSION, "codec": self.codec_cls.name,
                **({"min_match": self.min_match} if self.min_match else {}),
                **({"frame_entries": self.frame_entries} if self.frame_entries else {})}

    def codec(self, board: Board, key_dict: bytes | None = None, sym_dict: bytes | None = None):
        """The block codec of ``board`` with the trained dictionaries given."""
        return self.codec_cls(board, self.part_entries, self.level, self.min_match, key_dict,
                              sym_dict, **({"frame_entries": self.frame_entries}
                                           if self.frame_entries else {}))


def load_checkpoint(ckpt: Path, part: Path, settings: dict) -> dict | None:
    """The checkpoint ``ckpt`` of the part file ``part`` (and its side file) if it was made
    with ``settings`` and the files hold what it records (``None`` otherwise)."""
    idxf = idx_path(part)
    if not (ckpt.exists() and part.exists() and idxf.exists()):
        return None
    try:
        state = json.loads(ckpt.read_text())
        if state["settings"] == settings and part.stat().st_size >= state["part_bytes"] and \
                idxf.stat().st_size >= state["blocks"] * IDX_RECORD.size:
            int(state["blocks"]), int(state["part_bytes"])   # numbers, or no checkpoint
            return state
    except (ValueError, KeyError, TypeError, OSError):
        pass
    return None


@dataclass(frozen=True)
class Resume:
    """Where a part file is continued: after its first ``blocks`` blocks, which end at byte
    ``part_bytes`` with key ``last_key``."""

    blocks: int
    part_bytes: int
    last_key: int


def _encode(codec, raw, check_outcomes: bool) -> tuple[int, bytes, int]:
    """Worker: ``(first key, block, xxh64 of it)`` of raw table rows."""
    first, comp = codec.encode(raw, check_outcomes)
    return first, comp, xxhash.xxh64_intdigest(comp)


class BlockWriter:
    """The part file ``part`` of a ``.c4z`` being written with the block codec ``codec`` (an
    instance of a registered codec class) on a grid of ``block_entries``-entry blocks (module
    docstring): new, or continued from ``resume``. Raw blocks (:meth:`add_raw`) are encoded on
    ``pool`` if given (at most ``ahead`` waiting; written in the order added), else inline;
    ``check_outcomes`` refuses outcome bytes impossible at their ply; ``hashes`` is fed every
    raw block added. ``bad_block(i, error)`` and ``unordered(i, first, last_key)`` make the
    errors for a block ``i`` that failed to encode and for one whose first key is not above
    the last key before it."""

    def __init__(self, part: Path, codec, block_entries: int, *, resume: Resume | None = None,
                 pool: Executor | None = None, ahead: int = 0, hashes=None,
                 check_outcomes: bool = False,
                 bad_block: Callable[[int, TableError], Exception] | None = None,
                 unordered: Callable[[int, int, int], Exception] | None = None):
        self.part, self.idx = Path(part), idx_path(Path(part))
        self.codec, self.block_entries = codec, block_entries
        self.pool, self.ahead, self.hashes = pool, ahead, hashes
        self.check_outcomes = check_outcomes
        self.bad_block = bad_block or (lambda i, e: TableError(f"{self.part.name}: block {i:,}: {e}"))
        self.unordered = unordered or (lambda i, first, last: TableError(
            f"{self.part.name}: block {i:,} starts with key {first} not above the previous "
            f"block's last key {last}"))
        self.dict_bytes = (len(codec.key_dict or b""), len(codec.sym_dict or b""))
        self.first_offset = len(MAGIC) + sum(self.dict_bytes)
        self.pending: deque = deque()
        self.last_ckpt = time.perf_counter()
        if resume is None:
            self.blocks, self.part_bytes, self.last_key = 0, self.first_offset, -1
            self.f = open(self.part, "wb")
            self.f.write(MAGIC)
            self.f.write((codec.key_dict or b"") + (codec.sym_dict or b""))
            self.fidx = open(self.idx, "wb")
        else:
            self.blocks, self.part_bytes, self.last_key = resume.blocks, resume.part_bytes, resume.last_key
            self.f = open(self.part, "r+b")
            self.fidx = open(self.idx, "r+b")
            for f, size in ((self.f, self.part_bytes), (self.fidx, self.blocks * IDX_RECORD.size)):
                f.truncate(size)
                f.seek(size)

    def __enter__(self) -> "BlockWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------- blocks
    def add_raw(self, raw) -> None:
        """A block of raw table rows (whole entries, the grid's block or the file's last),
        following what was added before: hashed, encoded and written in order."""
        if self.hashes is not None:
            self.hashes.update(raw)
        E = self.codec.board.entry_size
        last = int.from_bytes(raw[-E:-1], "big")
        if self.pool is None:
            try:
                done = _encode(self.codec, raw, self.check_outcomes)
            except TableError as e:
                raise self.bad_block(self.blocks, e) from None
            self._put(done, last)
            return
        self.pending.append((self.pool.submit(_encode, self.codec, raw, self.check_outcomes), last))
        while len(self.pending) > self.ahead:
            self._write_one()

    def add_block(self, first: int, comp: bytes, last_key: int, xxh64: int | None = None) -> None:
        """A block already encoded (its keys from ``first`` to ``last_key``; ``xxh64`` of
        ``comp``: computed if not given), following what was added before."""
        self.drain()
        self._put((first, comp, xxhash.xxh64_intdigest(comp) if xxh64 is None else xxh64),
                  last_key)

    def drain(self) -> None:
        """Write every block still being encoded."""
        while self.pending:
            self._write_one()

    def _write_one(self) -> None:
        fut, last_key = self.pending.popleft()
        try:
            done = fut.result()
        except TableError as e:
            raise self.bad_block(self.blocks, e) from None
        self._put(done, last_key)

    def _put(self, done: tuple[int, bytes, int], last_key: int) -> None:
        first, comp, x = done
        if first <= self.last_key:
            raise self.unordered(self.blocks, first, self.last_key)
        self.last_key = last_key
        self.f.write(comp)
        self.part_bytes += len(comp)
        self.fidx.write(IDX_RECORD.pack(first, self.part_bytes, x))
        self.blocks += 1

    # ------------------------------------------------------------- durability
    def sync(self) -> None:
        """Make the blocks written so far durable (fsync of both files)."""
        _fsync(self.f)
        _fsync(self.fidx)

    def due(self, now: float) -> bool:
        """Whether a checkpoint is due (:data:`CHECKPOINT_SECONDS` since the last)."""
        return now - self.last_ckpt >= CHECKPOINT_SECONDS

    def checkpoint(self, ckpt: Path, settings: dict, now: float, **extra) -> None:
        """Make the blocks written so far durable and record them in the checkpoint file
        ``ckpt`` with ``settings`` (:func:`load_checkpoint`; ``extra``: recorded too)."""
        _checkpoint(self.f, self.fidx, ckpt, settings, self.blocks, self.part_bytes,
                    *self.dict_bytes, **extra)
        self.last_ckpt = now

    # ------------------------------------------------------------- end
    def finish(self, *, entries: int, raw_bytes: int, digests: dict, file: str, root=None,
               **extra) -> None:
        """Write what is still being encoded, then append the block index, the header (of
        ``entries`` entries, ``raw_bytes`` raw bytes, the raw table's ``digests``, its file
        name ``file`` and ``root``; ``extra`` fields as they are) and the trailer; fsync and
        close. The side file stays (:func:`publish_part` removes it)."""
        self.drain()
        header = c4z_header(self.codec.board, self.codec, entries=entries, raw_bytes=raw_bytes,
                            digests=digests, file=file, root=root,
                            block_entries=self.block_entries, blocks=self.blocks, **extra)
        with self.f, self.fidx:
            finish_part(self.f, self.fidx, self.idx, self.part_bytes, self.blocks,
                        self.first_offset, header)

    def close(self) -> None:
        """Close the files (after a failure; :meth:`finish` closes them otherwise)."""
        self.f.close()
        self.fidx.close()


def c4z_header(b: Board, codec, *, entries: int, raw_bytes: int, digests: dict, file: str, root,
               block_entries: int, blocks: int, **extra) -> dict:
    """The JSON header of a ``.c4z`` written with ``codec`` (without ``index_xxh64``, which
    :func:`finish_part` adds); ``extra`` fields are recorded as they are."""
    return {"format": "c4z", "version": getattr(codec, "format_version", FORMAT_VERSION),
            "board": b.name,
            "width": b.width, "height": b.height, "k": b.k, "entry_size": b.entry_size,
            **b.json_fields(),
            "key_bytes": b.key_bytes, "entries": entries, "raw_bytes": raw_bytes,
            **{k: digests[k] for k in ("sha256_tree", "sha256", "md5") if k in digests},
            "file": file, "root": root, "block_entries": block_entries, "blocks": blocks,
            **codec.header_fields(), **extra}


def finish_part(fpart, fidx, idxf: Path, part_bytes: int, nblocks: int, first_offset: int,
                header: dict) -> None:
    """Append the block index (from the ``.part.idx`` side file ``idxf``), the header and the
    trailer to the part file ``fpart`` (positioned at ``part_bytes``, the end of the last
    block; ``first_offset``: where block 0 starts) and fsync it."""
    _fsync(fidx)
    rec = np.frombuffer(open(idxf, "rb").read(), "<u8").reshape(-1, 3)
    if rec.shape[0] != nblocks:
        raise TableError(f"{idxf}: {rec.shape[0]} index records for {nblocks} blocks")
    index = np.concatenate([rec[:, 0], np.array([first_offset], "<u8"),
                            rec[:, 1], rec[:, 2]]).astype("<u8")
    comp_index = zstandard.ZstdCompressor(level=9).compress(index.tobytes())
    header = {**header, "index_xxh64": xxhash.xxh64_intdigest(comp_index)}
    hdr = json.dumps(header, sort_keys=True).encode()
    fpart.write(comp_index)
    fpart.write(hdr)
    fpart.write(TRAILER.pack(part_bytes, len(comp_index), len(hdr),
                             xxhash.xxh64_intdigest(hdr), END_MAGIC))
    _fsync(fpart)


def publish_part(part: Path, out: Path, ckpt: Path) -> None:
    """Rename the finished part file to ``out`` (durably) and drop its side files (the index
    records and the checkpoint ``ckpt``)."""
    os.replace(part, out)
    fsync_dir(out.absolute().parent)
    idx_path(part).unlink(missing_ok=True)
    ckpt.unlink(missing_ok=True)
