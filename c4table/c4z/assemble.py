"""Writing a ``.c4z`` from pieces that arrive in key order, with no raw table file: compressed
whole blocks (made elsewhere, e.g. by a build's merge tasks, on the file's block grid) and
the raw entries of the blocks they leave partial (a task's range seldom starts or ends on the
grid). :class:`Assembler` appends each block to the part file, compresses the partial blocks
once their entries are all in, and hashes the raw table as it passes (sha256; md5 too if
asked): each compressed block is decoded again for that, so the hashes are those of what the
file holds, and the keys are checked strictly increasing across blocks. :meth:`Assembler.finish`
appends the index, header and trailer (:func:`~c4table.c4z.writer.finish_part`); publishing the
file is the caller's (a build records it in its manifest first). :meth:`Assembler.checkpoint`
makes what was added durable and returns where it stands (:class:`Checkpoint`);
:meth:`Assembler.reopen` continues from one after a crash, hashing the blocks already written
again (decoded, as when they were added) so that the digests are those of the whole file."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from c4table.c4z.blocks import decode_block_rows, default_part_entries, encode_block
from c4table.c4z.format import IDX_RECORD, MAGIC
from c4table.c4z.writer import c4z_header, finish_part
from c4table.errors import BuildError, CorruptDataError
from c4table.game.board import Board
from c4table.io.hashes import Hashes


RESTART = "the shards below it may be gone: rerun with --restart to build it again"


def idx_path(part: Path) -> Path:
    """The side file of block index records of the part file ``part``."""
    return part.with_name(part.name + ".idx")


@dataclass
class Checkpoint:
    """Where an :class:`Assembler` stands: ``entries`` placed, the first ``blocks`` blocks
    written (``part_bytes`` bytes of the part file, their index records in the side file),
    ``last_key`` the last key of those blocks (-1: none) and ``pending`` the raw entries of
    the partial block after them."""

    entries: int
    blocks: int
    part_bytes: int
    last_key: int
    pending: bytes


class Assembler:
    """A ``.c4z`` part file being written in key order (module docstring). ``block_entries``
    and ``part_entries`` are the file's grid; ``level`` the zstd level of the partial blocks
    compressed here (the whole ones must use the same for the file to be the same whoever cut
    the ranges; likewise ``min_match``, :func:`~c4table.c4z.blocks.zstd_params`); ``md5``: hash
    the md5 too."""

    def __init__(self, part: Path, board: Board, block_entries: int, level: int,
                 part_entries: int | None = None, md5: bool = False,
                 reopen: Checkpoint | None = None, min_match: int = 0):
        self.part, self.board, self.level, self.min_match = Path(part), board, level, min_match
        self.block_entries = block_entries
        self.part_entries = part_entries or default_part_entries(block_entries)
        self.E = board.entry_size
        self.hashes = Hashes(md5)
        self.pending = bytearray()   # raw entries of the block being filled (from the grid)
        self.entries = 0             # entries placed so far (whole blocks and pending)
        self.blocks = 0
        self.last_key = -1
        self.first_offset = self.part_bytes = len(MAGIC)
        if reopen is None:
            self.f = open(self.part, "wb")
            self.f.write(MAGIC)
            self.fidx = open(idx_path(self.part), "wb")
        else:
            self._reopen(reopen)

    @classmethod
    def reopen(cls, part: Path, board: Board, block_entries: int, level: int, at: Checkpoint,
               part_entries: int | None = None, md5: bool = False,
               min_match: int = 0) -> "Assembler":
        """The part file ``part`` (and its side file) cut back to the checkpoint ``at`` and open
        for adding what follows it; its blocks are read, checked (xxh64, keys increasing) and
        hashed again. :class:`BuildError` if the files do not hold what ``at`` records."""
        return cls(part, board, block_entries, level, part_entries, md5, reopen=at,
                   min_match=min_match)

    def _reopen(self, at: Checkpoint) -> None:
        idxf = idx_path(self.part)
        if not (self.part.exists() and idxf.exists()) or self.part.stat().st_size < at.part_bytes \
                or idxf.stat().st_size < at.blocks * IDX_RECORD.size \
                or at.entries != at.blocks * self.block_entries + len(at.pending) // self.E:
            raise CorruptDataError(f"{self.part.name}: does not hold the {at.blocks:,} blocks "
                                   f"its checkpoint records; {RESTART}")
        self.f, self.fidx = open(self.part, "r+b"), open(idxf, "r+b")
        try:
            recs = np.frombuffer(self.fidx.read(at.blocks * IDX_RECORD.size), "<u8").reshape(-1, 3)
            self.f.seek(self.first_offset)
            start = self.first_offset
            for first, end, x in recs.tolist():
                comp = self.f.read(end - start)
                if end <= start or len(comp) != end - start or xxhash.xxh64_intdigest(comp) != x:
                    raise CorruptDataError(f"{self.part.name}: block {self.blocks:,} differs "
                                           f"from its index record (damaged); {RESTART}")
                self._hash_block(comp, first)
                self.blocks += 1
                start = end
            if start != at.part_bytes or self.last_key != at.last_key:
                raise CorruptDataError(f"{self.part.name}: its {at.blocks:,} blocks end at byte "
                                       f"{start:,}, key {self.last_key}, not where its checkpoint "
                                       f"says; {RESTART}")
            for f, size in ((self.f, at.part_bytes), (self.fidx, at.blocks * IDX_RECORD.size)):
                f.truncate(size)
                f.seek(size)
        except BaseException:
            self.close()
            raise
        self.part_bytes, self.entries = at.part_bytes, at.blocks * self.block_entries
        self.add_raw(at.pending)

    def checkpoint(self) -> Checkpoint:
        """Make the blocks written so far durable (fsync of both files) and say where they end
        (the partial block's raw entries are the caller's to keep)."""
        for f in (self.f, self.fidx):
            f.flush()
            os.fsync(f.fileno())
        return Checkpoint(self.entries, self.blocks, self.part_bytes, self.last_key,
                          bytes(self.pending))

    def add_raw(self, raw) -> None:
        """Raw entries (``E``-byte rows, in key order) that follow what was added before."""
        if len(raw) % self.E:
            raise BuildError(f"{self.part.name}: {len(raw):,} raw bytes are not whole entries")
        self.pending += raw
        self.entries += len(raw) // self.E
        whole = self.block_entries * self.E
        while len(self.pending) >= whole:
            self._emit_raw(bytes(self.pending[:whole]))
            del self.pending[:whole]

    def add_block(self, comp: bytes, first: int, xxh64: int | None = None) -> None:
        """A compressed whole block (``block_entries`` entries starting with key ``first``)
        that follows what was added before, which must end on the grid; ``xxh64`` (the
        maker's checksum of ``comp``) is checked if given."""
        if self.pending:
            raise BuildError(f"{self.part.name}: a whole block arrived after "
                             f"{len(self.pending) // self.E:,} entries of a partial one")
        if xxh64 is not None and xxhash.xxh64_intdigest(comp) != xxh64:
            raise BuildError(f"{self.part.name}: block {self.blocks:,} changed after it was "
                             "compressed (xxh64 differs)")
        self._hash_block(comp, first)
        self.entries += self.block_entries
        self._write(comp, first)

    def _hash_block(self, comp: bytes, first: int) -> None:
        """Decode a whole block, check its keys follow those before it, hash its raw entries."""
        try:
            rows, last = decode_block_rows(comp, self.board, self.block_entries, first,
                                           part_entries=self.part_entries)
        except Exception as e:   # zstd or the block's own checks
            raise BuildError(f"{self.part.name}: block {self.blocks:,} does not decode: {e}") from None
        self._check_order(first, last)
        self.hashes.update(rows)

    def finish(self, *, file: str, root=None, keep_idx: bool = False, **extra) -> dict:
        """Compress the last (partial) block, append index, header and trailer, fsync and
        close; return the raw table's digests (``sha256``, ``md5`` if asked, ``bytes``).
        ``keep_idx``: leave the side file of index records (a rerun from a checkpoint needs
        it until the file is published; :func:`idx_path`)."""
        if self.pending:
            self._emit_raw(bytes(self.pending))
            self.pending = bytearray()
        digests = self.hashes.result()
        header = c4z_header(self.board, entries=self.entries, raw_bytes=self.entries * self.E,
                            digests=digests, file=file, root=root,
                            block_entries=self.block_entries, blocks=self.blocks,
                            level=self.level, part_entries=self.part_entries, key_dict=None,
                            sym_dict=None,
                            **({"min_match": self.min_match} if self.min_match else {}), **extra)
        with self.f, self.fidx:
            finish_part(self.f, self.fidx, idx_path(self.part), self.part_bytes, self.blocks,
                        self.first_offset, header)
        if not keep_idx:
            idx_path(self.part).unlink(missing_ok=True)
        return digests

    def close(self) -> None:
        """Close the files (after a failure; :meth:`finish` closes them otherwise)."""
        self.f.close()
        self.fidx.close()

    def _emit_raw(self, raw: bytes) -> None:
        first, comp = encode_block(raw, self.board, self.level, self.part_entries,
                                   min_match=self.min_match)
        rows = np.frombuffer(raw, np.uint8).reshape(-1, self.E)
        last = int.from_bytes(rows[-1, : self.E - 1].tobytes(), "big")
        self._check_order(first, last)
        self.hashes.update(raw)
        self._write(comp, first)

    def _check_order(self, first: int, last: int) -> None:
        if first <= self.last_key:
            raise BuildError(f"{self.part.name}: block {self.blocks:,} starts with key {first} "
                             f"not above the previous block's last key {self.last_key}")
        self.last_key = last

    def _write(self, comp: bytes, first: int) -> None:
        self.f.write(comp)
        self.part_bytes += len(comp)
        self.fidx.write(IDX_RECORD.pack(first, self.part_bytes, xxhash.xxh64_intdigest(comp)))
        self.blocks += 1
