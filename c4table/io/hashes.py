"""Hashes of tables: the tree hash, sha256 and md5 of a stream of chunks (:class:`Hashes`; with
the per-block xxh64 of :class:`c4table.table.sums.BlockSums` in the same pass), and sha256 of a
file (the tree hash itself: :mod:`c4table.io.treehash`)."""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

from c4table.io.treehash import FIELD, TreeHash


def sha256_of(path) -> str:
    """sha256 of a local file, read in 4 MiB blocks (tools and benchmarks; tables are verified
    with :class:`Hashes`, which adds md5 on a second core)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(1 << 22):
            h.update(b)
    return h.hexdigest()


class Hashes:
    """The digests of a table streamed in chunks: its tree hash (``sha256_tree``,
    :class:`~c4table.io.treehash.TreeHash`: pieces on threads) unless not ``tree``, its sha256
    unless not ``sha256``, its md5 unless not ``md5`` (sha256 and md5 on two cores: hashlib
    releases the GIL on large buffers, so hashing a table costs the slower of the two). A build's
    merge asks for the tree hash alone and has its tasks compute it
    (:mod:`c4table.io.treehash`); the sha256 and md5 when its settings ask
    (``C4TABLE_TABLE_SHA256``, ``C4TABLE_TABLE_MD5``). ``sums`` (a
    :class:`~c4table.table.sums.BlockSums`), if given, is fed the same bytes.

    >>> h = Hashes(md5=False); h.update(b"abc"); sorted(h.result())
    ['bytes', 'sha256', 'sha256_tree']
    """

    def __init__(self, md5: bool = True, sums=None, sha256: bool = True, tree: bool = True,
                 threads: int | None = None):
        self.sha = hashlib.sha256() if sha256 else None
        self.size, self.sums = 0, sums
        self.md5 = hashlib.md5() if md5 else None
        self.tree = TreeHash(threads) if tree else None
        self._pool = ThreadPoolExecutor(1) if md5 and sha256 else None

    def update(self, b) -> None:
        if self._pool is not None:
            done = self._pool.submit(self.md5.update, b)
            self.sha.update(b)
            done.result()
        elif self.sha is not None:
            self.sha.update(b)
        elif self.md5 is not None:
            self.md5.update(b)
        if self.tree is not None:
            self.tree.update(b)
        if self.sums is not None:
            self.sums.update(b)
        self.size += len(b)

    def result(self) -> dict:
        """``{"sha256_tree", "sha256", "md5", "bytes"}`` (those asked for); the object is
        finished after this."""
        out = {"bytes": self.size}
        if self.tree is not None:
            out[FIELD] = self.tree.result()[FIELD]
        if self.sha is not None:
            out["sha256"] = self.sha.hexdigest()
        if self._pool is not None:
            self._pool.shutdown()
        if self.md5 is not None:
            out["md5"] = self.md5.hexdigest()
        return out
