"""Writing a ``.c4z`` from pieces that arrive in key order, with no raw table file: compressed
whole blocks (made elsewhere, e.g. by a build's merge tasks, on the file's block grid) and
the raw entries of the blocks they leave partial (a task's range seldom starts or ends on the
grid). :class:`Assembler` appends each block to the part file, compresses the partial blocks
once their entries are all in, and checks the keys strictly increasing across blocks (from
each block's first and last keys); when asked, it hashes the raw table as it passes (sha256,
md5: each compressed block is decoded again for that, so the hashes are those of what the
file holds). The table's tree hash is the caller's to combine (a build's merge tasks hash
the pieces they decode again). The blocks go through
the :class:`~c4table.c4z.blockwriter.BlockWriter` every ``.c4z`` writer shares;
:meth:`Assembler.finish` appends the index, header and trailer; publishing the file is the
caller's (a build records it in its manifest first). :meth:`Assembler.checkpoint`
makes what was added durable and returns where it stands (:class:`Checkpoint`);
:meth:`Assembler.reopen` continues from one after a crash, checking the blocks already written
(xxh64) and decoding again those its digests need: all of them for a sha256 or md5, for a tree
hash those past the pieces it holds."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xxhash

from c4table.c4z.blocks import default_part_entries
from c4table.c4z.blockwriter import BlockWriter, Resume, idx_path
from c4table.c4z.format import BUILD_CODEC, IDX_RECORD, MAGIC
from c4table.c4z.registry import get_codec
from c4table.errors import BuildError, CorruptDataError
from c4table.game.board import Board
from c4table.io.hashes import Hashes
from c4table.io.treehash import TreeHash


RESTART = "the shards below it may be gone: rerun with --restart to build it again"


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
    the ranges; likewise ``min_match``, :func:`~c4table.c4z.blocks.zstd_params`, and the block
    ``codec``, by name); ``md5``: hash the md5 too."""

    def __init__(self, part: Path, board: Board, block_entries: int, level: int,
                 part_entries: int | None = None, md5: bool = False,
                 reopen: Checkpoint | None = None, min_match: int = 0, sha256: bool = True,
                 tree: TreeHash | None = None, codec: str = BUILD_CODEC):
        self.part, self.board, self.level, self.min_match = Path(part), board, level, min_match
        self.block_entries = block_entries
        self.part_entries = part_entries or default_part_entries(block_entries)
        self.codec = get_codec(codec)(board, self.part_entries, level, min_match)
        self.E = board.entry_size
        # the whole-file digests, of every block decoded here (none: the blocks come with their
        # last keys, and the tree hash is combined by the caller from what made them)
        self.hashes = Hashes(md5, sha256=sha256, tree=False) if md5 or sha256 else None
        self.tree = tree   # on reopening: fed the bytes past its size that the file holds
        self.pending = bytearray()   # raw entries of the block being filled (from the grid)
        self.entries = 0             # entries placed so far (whole blocks and pending)
        resume = None if reopen is None else self._reread(reopen)
        self.w = BlockWriter(self.part, self.codec, block_entries, resume=resume,
                             hashes=self.hashes, bad_block=self._bad_block,
                             unordered=self._unordered)
        if reopen is not None:
            self.entries = reopen.blocks * block_entries
            self.add_raw(reopen.pending)
            if self.tree is not None:   # the pending entries past what the tree holds
                past = self.tree.size - reopen.blocks * block_entries * self.E
                self.tree.update(memoryview(reopen.pending)[max(0, past):])

    @classmethod
    def reopen(cls, part: Path, board: Board, block_entries: int, level: int, at: Checkpoint,
               part_entries: int | None = None, md5: bool = False,
               min_match: int = 0, sha256: bool = True,
               tree: TreeHash | None = None, codec: str = BUILD_CODEC) -> "Assembler":
        """The part file ``part`` (and its side file) cut back to the checkpoint ``at`` and open
        for adding what follows it; its blocks are read, checked (xxh64, keys increasing) and,
        with ``sha256`` or ``md5``, hashed again; ``tree`` (a tree hash of the table's first
        ``tree.size`` bytes) is fed the rest of what the blocks and ``at.pending`` hold, so
        only the blocks past it are decoded. :class:`BuildError` if the files do not hold what
        ``at`` records."""
        return cls(part, board, block_entries, level, part_entries, md5, reopen=at,
                   min_match=min_match, sha256=sha256, tree=tree, codec=codec)

    @property
    def blocks(self) -> int:
        return self.w.blocks

    @property
    def part_bytes(self) -> int:
        return self.w.part_bytes

    @property
    def last_key(self) -> int:
        return self.w.last_key

    def _reread(self, at: Checkpoint) -> Resume:
        """Read the blocks the checkpoint ``at`` records back (read only), check them and hash
        them; where the writer continues."""
        idxf = idx_path(self.part)
        if not (self.part.exists() and idxf.exists()) or self.part.stat().st_size < at.part_bytes \
                or idxf.stat().st_size < at.blocks * IDX_RECORD.size \
                or at.entries != at.blocks * self.block_entries + len(at.pending) // self.E:
            raise CorruptDataError(f"{self.part.name}: does not hold the {at.blocks:,} blocks "
                                   f"its checkpoint records; {RESTART}")
        start, last = len(MAGIC), -1
        bb = self.block_entries * self.E
        tree_at = self.tree.size if self.tree is not None else at.blocks * bb
        if tree_at > at.entries * self.E:
            raise CorruptDataError(f"{self.part.name}: its tree hash stands past its checkpoint; "
                                   f"{RESTART}")
        with open(self.part, "rb") as f, open(idxf, "rb") as fidx:
            recs = np.frombuffer(fidx.read(at.blocks * IDX_RECORD.size), "<u8").reshape(-1, 3)
            f.seek(start)
            for i, (first, end, x) in enumerate(recs.tolist()):
                comp = f.read(end - start)
                if end <= start or len(comp) != end - start or xxhash.xxh64_intdigest(comp) != x:
                    raise CorruptDataError(f"{self.part.name}: block {i:,} differs "
                                           f"from its index record (damaged); {RESTART}")
                if first <= last:
                    raise self._unordered(i, first, last)
                if self.hashes is not None or (i + 1) * bb > tree_at or i + 1 == at.blocks:
                    rows, last = self._decode(comp, first, i)
                    if self.hashes is not None:
                        self.hashes.update(rows)
                    if self.tree is not None and (i + 1) * bb > tree_at:
                        self.tree.update(memoryview(rows).cast("B")[max(0, tree_at - i * bb):])
                else:   # only the keys' order is checked (first keys increasing)
                    last = first
                start = end
        if start != at.part_bytes or last != at.last_key:
            raise CorruptDataError(f"{self.part.name}: its {at.blocks:,} blocks end at byte "
                                   f"{start:,}, key {last}, not where its checkpoint "
                                   f"says; {RESTART}")
        return Resume(at.blocks, at.part_bytes, last)

    def checkpoint(self) -> Checkpoint:
        """Make the blocks written so far durable (fsync of both files) and say where they end
        (the partial block's raw entries are the caller's to keep)."""
        self.w.sync()
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
            self.w.add_raw(bytes(self.pending[:whole]))
            del self.pending[:whole]

    def add_block(self, comp: bytes, first: int, xxh64: int | None = None,
                  last: int | None = None) -> None:
        """A compressed whole block (``block_entries`` entries starting with key ``first``,
        ending with key ``last``) that follows what was added before, which must end on the
        grid; ``xxh64`` (the maker's checksum of ``comp``) is checked if given. The block is
        decoded here when the whole-file digests are asked for, or its ``last`` key is not
        given."""
        if self.pending:
            raise BuildError(f"{self.part.name}: a whole block arrived after "
                             f"{len(self.pending) // self.E:,} entries of a partial one")
        x = xxhash.xxh64_intdigest(comp)
        if xxh64 is not None and x != xxh64:
            raise BuildError(f"{self.part.name}: block {self.blocks:,} changed after it was "
                             "compressed (xxh64 differs)")
        if first <= self.last_key:
            raise self._unordered(self.blocks, first, self.last_key)
        if self.hashes is not None or last is None:
            rows, last = self._decode(comp, first, self.blocks)
            if self.hashes is not None:
                self.hashes.update(rows)
        elif last < first:
            raise self._unordered(self.blocks, first, last)
        self.entries += self.block_entries
        self.w.add_block(first, comp, last, x)

    def _decode(self, comp: bytes, first: int, i: int):
        """Whole block ``i``'s raw entries and last key."""
        try:
            return self.codec.decode_rows(comp, self.block_entries, first)
        except Exception as e:   # zstd or the block's own checks
            raise BuildError(f"{self.part.name}: block {i:,} does not decode: {e}") from None

    def finish(self, *, file: str, root=None, keep_idx: bool = False, digests: dict | None = None,
               **extra) -> dict:
        """Compress the last (partial) block, append index, header and trailer, fsync and
        close; return the raw table's digests (``digests``, e.g. the tree hash the caller
        combined, and ``sha256``, ``md5`` where asked, ``bytes``). ``keep_idx``: leave the side
        file of index records (a rerun from a checkpoint needs it until the file is published;
        :func:`idx_path`)."""
        if self.pending:
            self.w.add_raw(bytes(self.pending))
            self.pending = bytearray()
        digests = {**(digests or {}), **(self.hashes.result() if self.hashes is not None else {}),
                   "bytes": self.entries * self.E}
        self.w.finish(entries=self.entries, raw_bytes=self.entries * self.E, digests=digests,
                      file=file, root=root, **extra)
        if not keep_idx:
            idx_path(self.part).unlink(missing_ok=True)
        return digests

    def close(self) -> None:
        """Close the files (after a failure; :meth:`finish` closes them otherwise)."""
        self.w.close()

    def _bad_block(self, i: int, e: Exception) -> BuildError:
        return BuildError(f"{self.part.name}: block {i:,}: {e}")

    def _unordered(self, i: int, first: int, last: int) -> BuildError:
        return BuildError(f"{self.part.name}: block {i:,} starts with key {first} "
                          f"not above the previous block's last key {last}")
