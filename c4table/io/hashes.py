"""Hashes of tables: sha256 and md5 of a stream of chunks (:class:`Hashes`), and of a file."""
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
    releases the GIL on large buffers), so hashing a table costs the slower of the two."""

    def __init__(self):
        self.sha, self.md5, self.size = hashlib.sha256(), hashlib.md5(), 0
        self._pool = ThreadPoolExecutor(1)

    def update(self, b) -> None:
        done = self._pool.submit(self.md5.update, b)
        self.sha.update(b)
        done.result()
        self.size += len(b)

    def result(self) -> dict:
        """``{"sha256", "md5", "bytes"}``; the object is finished after this."""
        self._pool.shutdown()
        return {"sha256": self.sha.hexdigest(), "md5": self.md5.hexdigest(), "bytes": self.size}
