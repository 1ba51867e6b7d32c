"""Hashes of tables: sha256 and md5 of a stream of chunks (:class:`Hashes`; with the per-block
xxh64 of :class:`c4table.table.sums.BlockSums` in the same pass), and of a file."""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor


def sha256_of(path) -> str:
    """sha256 of a local file, read in 4 MiB blocks (tools and benchmarks; tables are verified
    with :class:`Hashes`, which adds md5 on a second core)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while b := f.read(1 << 22):
            h.update(b)
    return h.hexdigest()


class Hashes:
    """sha256 and md5 of a stream of chunks, the two digests computed on two cores (hashlib
    releases the GIL on large buffers), so hashing a table costs the slower of the two; with
    ``md5=False`` the sha256 alone (a build's merge, unless its settings ask: ``C4TABLE_TABLE_MD5``).
    ``sums`` (a :class:`~c4table.table.sums.BlockSums`), if given, is fed the same bytes.

    >>> h = Hashes(md5=False); h.update(b"abc"); sorted(h.result())
    ['bytes', 'sha256']
    """

    def __init__(self, md5: bool = True, sums=None):
        self.sha, self.size, self.sums = hashlib.sha256(), 0, sums
        self.md5 = hashlib.md5() if md5 else None
        self._pool = ThreadPoolExecutor(1) if md5 else None

    def update(self, b) -> None:
        if self._pool is None:
            self.sha.update(b)
        else:
            done = self._pool.submit(self.md5.update, b)
            self.sha.update(b)
            done.result()
        if self.sums is not None:
            self.sums.update(b)
        self.size += len(b)

    def result(self) -> dict:
        """``{"sha256", "md5", "bytes"}`` (no ``"md5"`` without it); the object is finished
        after this."""
        out = {"sha256": self.sha.hexdigest(), "bytes": self.size}
        if self._pool is not None:
            self._pool.shutdown()
            out["md5"] = self.md5.hexdigest()
        return out
