"""The part file of a ``.c4z`` being compressed, shared by
:func:`~c4table.c4z.writer.compress_table` and :func:`~c4table.c4z.stream.compress_stream`:
its checkpoint read back (:func:`load_checkpoint`), the part files opened fresh or cut back
to the checkpoint (:func:`open_part`), and :class:`BlockWriter`, which writes the blocks
compressed on a thread pool in the order submitted, checks their keys strictly increasing
and checkpoints the part files."""
from __future__ import annotations

import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Callable

from c4table.c4z.blocks import default_part_entries
from c4table.c4z.format import CHECKPOINT_SECONDS, IDX_RECORD, MAGIC
from c4table.errors import TableError


def _fsync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


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


def load_checkpoint(ckpt: Path, part: Path, idxf: Path, settings: dict) -> dict | None:
    """The checkpoint ``ckpt`` of the part files ``part``, ``idxf`` if it was made with
    ``settings`` and the files hold what it records (``None`` otherwise)."""
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


def reopen_part(part: Path, idxf: Path, done: int, part_bytes: int):
    """``OUT.part`` and ``OUT.part.idx`` of a resumed run, cut back to the checkpoint (``done``
    blocks, ``part_bytes`` bytes) and open for appending after it."""
    fpart = open(part, "r+b")
    fpart.truncate(part_bytes)
    fpart.seek(part_bytes)
    fidx = open(idxf, "r+b")
    fidx.truncate(done * IDX_RECORD.size)
    fidx.seek(done * IDX_RECORD.size)
    return fpart, fidx


def open_part(part: Path, idxf: Path, done: int, part_bytes: int, head: bytes = b""):
    """The part files: reopened at the checkpoint (``done`` blocks, ``part_bytes`` bytes) if
    ``done``, else new, the part file starting with the magic and ``head`` (the dictionaries)."""
    if done:
        return reopen_part(part, idxf, done, part_bytes)
    fpart = open(part, "wb")
    fpart.write(MAGIC)
    fpart.write(head)
    return fpart, open(idxf, "wb")


class BlockWriter:
    """Blocks compressed on a pool written to the part files ``fpart``, ``fidx`` in the order
    submitted, after ``blocks`` blocks and ``part_bytes`` bytes already there (``last_key``:
    the last key before them); at most ``ahead`` futures wait. ``bad_block(i, e)`` and
    ``unordered(i)`` make the errors for a block ``i`` that failed to compress and for keys
    not increasing. :meth:`checkpoint` records the checkpoint ``ckpt`` of ``settings``."""

    def __init__(self, fpart, fidx, *, blocks: int, part_bytes: int, last_key: int, ahead: int,
                 ckpt: Path, settings: dict, bad_block: Callable[[int, TableError], Exception],
                 unordered: Callable[[int], Exception], key_dict_bytes: int = 0,
                 sym_dict_bytes: int = 0):
        self.fpart, self.fidx = fpart, fidx
        self.blocks, self.part_bytes, self.last_key = blocks, part_bytes, last_key
        self.ahead, self.ckpt, self.settings = ahead, ckpt, settings
        self.bad_block, self.unordered = bad_block, unordered
        self.dict_bytes = (key_dict_bytes, sym_dict_bytes)
        self.pending: deque = deque()
        self.last_ckpt = time.perf_counter()

    def add(self, fut, last_key: int) -> None:
        """A future of ``_compress_block`` (``(first key, block, xxh64)``) whose entries end
        with key ``last_key``; writes the oldest blocks while more than ``ahead`` wait."""
        self.pending.append((fut, last_key))
        while len(self.pending) > self.ahead:
            self._write_one()

    def drain(self) -> None:
        """Write every block still waiting."""
        while self.pending:
            self._write_one()

    def due(self, now: float) -> bool:
        """Whether a checkpoint is due (:data:`CHECKPOINT_SECONDS` since the last)."""
        return now - self.last_ckpt >= CHECKPOINT_SECONDS

    def checkpoint(self, now: float, **extra) -> None:
        """Checkpoint the blocks written so far (``extra``: recorded too)."""
        _checkpoint(self.fpart, self.fidx, self.ckpt, self.settings, self.blocks,
                    self.part_bytes, *self.dict_bytes, **extra)
        self.last_ckpt = now

    def _write_one(self) -> None:
        fut, last_key = self.pending.popleft()
        try:
            first, comp, x = fut.result()
        except TableError as e:
            raise self.bad_block(self.blocks, e) from None
        if first <= self.last_key:
            raise self.unordered(self.blocks)
        self.last_key = last_key
        self.fpart.write(comp)
        self.part_bytes += len(comp)
        self.fidx.write(IDX_RECORD.pack(first, self.part_bytes, x))
        self.blocks += 1
