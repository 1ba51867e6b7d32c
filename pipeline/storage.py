"""Where a build's files live: a local directory (the default) or any ``pyarrow.fs`` URI that
every worker can reach (``s3://bucket/prefix``, ``gs://``, ``abfs://``, ``hdfs://``).

Every stage reads and writes the build directory only through a :class:`Storage`, with paths
relative to it (``work/forward/ply_03/part-00000.parquet``), so the same tasks run against a
local disk, a shared POSIX file system or an object store. What differs:

* **Atomic writes.** Locally a file is written under a temporary name, fsync'ed and renamed
  (then the directory is fsync'ed), so a file under its final name is complete. On an object
  store an object appears only when its upload completes, which gives the same guarantee.
* **Reads.** Whole files (:meth:`Storage.read_bytes`), byte ranges (:meth:`Storage.read_into`:
  ``pread`` locally, a ranged GET remotely) and random-access files for parquet footers.
* **What only a local directory has**: a lock file, free-disk checks and ENOSPC handling
  (:mod:`c4table.pipeline.resources` skips them for URIs).

Credentials and endpoints come from the environment, as for any ``pyarrow.fs`` user
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``
for an S3-compatible server such as MinIO); workers must have the same environment.

>>> s = open_storage("/tmp/c4-doc")
>>> s.write_atomic("a/b.txt", b"hello")
>>> s.read_bytes("a/b.txt"), s.size("a/b.txt"), s.exists("a/c.txt")
(b'hello', 5, False)
"""
from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(where) -> bool:
    """True for ``scheme://...`` locations other than ``file://``."""
    s = str(where)
    return bool(_URL.match(s)) and not s.startswith("file://")


class Storage:
    """A build directory, local or remote; paths are relative to it (``/``-separated)."""

    def __init__(self, where: str | Path):
        s = str(where)
        if is_url(s):
            try:
                self.fs, base = pafs.FileSystem.from_uri(s)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
                raise ValueError(f"{s}: not a storage location pyarrow.fs can open ({e})") from None
            self.base = base.rstrip("/")
            self.root: Path | None = None
            self.uri = s.rstrip("/")
        else:
            if s.startswith("file://"):
                s = s[len("file://"):]
            self.root = Path(s).absolute()
            self.fs = pafs.LocalFileSystem()
            self.base = str(self.root)
            self.uri = str(self.root)

    @property
    def local(self) -> bool:
        return self.root is not None

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"Storage({self.uri!r})"

    def __reduce__(self):   # tasks receive storages; rebuild (and cache) them on arrival
        return (open_storage, (self.uri,))

    def path(self, rel: str) -> str:
        """Full path of ``rel`` for this storage's file system."""
        return f"{self.base}/{rel}" if rel else self.base

    def display(self, rel: str = "") -> str:
        """``rel`` as a user should read it (a local path or a URI)."""
        return f"{self.uri}/{rel}" if rel else self.uri

    # ------------------------------------------------------------------ queries
    def exists(self, rel: str) -> bool:
        if self.root is not None:
            return (self.root / rel).is_file()
        return self.fs.get_file_info(self.path(rel)).type == pafs.FileType.File

    def size(self, rel: str) -> int:
        if self.root is not None:
            return (self.root / rel).stat().st_size
        info = self.fs.get_file_info(self.path(rel))
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(self.display(rel))
        return info.size

    def list_files(self, rel: str) -> list[str]:
        """Relative paths of the files under directory ``rel`` (recursively; [] if none)."""
        if self.root is not None:
            d = self.root / rel
            if not d.is_dir():
                return []
            return sorted(str(p.relative_to(self.root)) for p in d.rglob("*") if p.is_file())
        sel = pafs.FileSelector(self.path(rel), recursive=True, allow_not_found=True)
        n = len(self.base) + 1
        return sorted(i.path[n:] for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File)

    # ------------------------------------------------------------------ reads
    def read_bytes(self, rel: str) -> bytes:
        if self.root is not None:
            return (self.root / rel).read_bytes()
        try:
            with self.fs.open_input_stream(self.path(rel)) as f:
                return f.read()
        except OSError as e:
            if not self.exists(rel):
                raise FileNotFoundError(self.display(rel)) from None
            raise e

    def read_into(self, rel: str, offset: int, out) -> None:
        """Fill the writable buffer ``out`` with the bytes of ``rel`` from ``offset``."""
        view = memoryview(out).cast("B")
        if self.root is not None:
            fd = os.open(self.root / rel, os.O_RDONLY)
            try:
                got = 0
                while got < len(view):
                    k = os.preadv(fd, [view[got:]], offset + got)
                    if k <= 0:
                        raise EOFError(f"{self.display(rel)}: shorter than expected")
                    got += k
            finally:
                os.close(fd)
            return
        with self.fs.open_input_file(self.path(rel)) as f:
            data = f.read_at(len(view), offset)
        if len(data) != len(view):
            raise EOFError(f"{self.display(rel)}: shorter than expected")
        view[:] = data

    def open_input(self, rel: str):
        """A random-access file (for parquet readers)."""
        return self.fs.open_input_file(self.path(rel))

    def open_input_stream(self, rel: str):
        """A sequential reader of ``rel`` (``read(n)``), for streaming whole files."""
        if self.root is not None:
            return open(self.root / rel, "rb")
        return self.fs.open_input_stream(self.path(rel))

    # ------------------------------------------------------------------ writes
    def write_atomic(self, rel: str, data, durable: bool = True) -> None:
        """Write ``data`` (bytes-like) to ``rel`` so that it appears whole or not at all."""
        self.write_atomic_chunks(rel, [data], durable)

    def write_atomic_chunks(self, rel: str, chunks, durable: bool = True) -> None:
        """Write the bytes-like items of the iterable ``chunks``, in order, as file ``rel``,
        so that it appears whole or not at all (the caller need not hold the whole file).
        ``durable=False`` skips the fsyncs, for scratch files that a crash makes the build
        discard or check anyway (runs, messages, merge parts)."""
        if self.root is None:
            with self.fs.open_output_stream(self.path(rel)) as f:
                for c in chunks:
                    f.write(c)
            return
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                for c in chunks:
                    f.write(c)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)

    def open_output(self, rel: str):
        """A stream that writes ``rel`` directly (the caller handles atomicity, e.g. by writing
        a temporary name and :meth:`rename`)."""
        if self.root is not None:
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            return open(self.root / rel, "wb")
        return self.fs.open_output_stream(self.path(rel))

    def rename(self, src: str, dst: str) -> None:
        if self.root is not None:
            os.replace(self.root / src, self.root / dst)
            fsync_dir((self.root / dst).parent)
        else:
            self.fs.move(self.path(src), self.path(dst))

    def delete(self, rel: str) -> None:
        """Delete file ``rel`` if it exists."""
        if self.root is not None:
            (self.root / rel).unlink(missing_ok=True)
        elif self.exists(rel):
            self.fs.delete_file(self.path(rel))

    def delete_tree(self, rel: str) -> None:
        """Delete directory ``rel`` and everything under it, if it exists."""
        if self.root is not None:
            shutil.rmtree(self.root / rel, ignore_errors=True)
            return
        info = self.fs.get_file_info(self.path(rel))
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self.path(rel))
        else:
            for f in self.list_files(rel):
                self.fs.delete_file(self.path(f))


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@lru_cache(maxsize=64)
def open_storage(where: str | Path) -> Storage:
    """The :class:`Storage` for ``where`` (a path or URI), one per process and location."""
    return Storage(where)
