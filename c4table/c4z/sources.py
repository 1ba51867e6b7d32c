"""Where the bytes of a ``.c4z`` come from: a local file (memory-mapped), a ``pyarrow.fs``
filesystem (s3://, gs://, ...) or an HTTP(S) server with ranged GETs; and the local cache
directory of remote files' indexes."""
from __future__ import annotations

import mmap
import os
import urllib.error
import urllib.request

from c4table.config import cache_dir  # noqa: F401  (the settings own it; kept importable here)
from c4table.c4z.format import TAIL_BYTES
from c4table.errors import CorruptDataError, MissingTableError, TableError
from c4table.io.storage import is_url


class LocalSource:
    """A local file, memory-mapped: a block is a zero-copy view of the page cache (a ``pread``
    and its copy cost about as much as decoding a key stream); ``pread`` where mapping fails.

    A mapped page past the end of a file that shrank while open would kill the process
    (SIGBUS): every :meth:`view` first checks the file's size (one ``fstat``, well under a
    microsecond) and refuses with :class:`~c4table.errors.CorruptDataError` once it is below
    the size the file had at open. What is left is the window between that check and the
    block's use (its checksum and decoding follow at once, in the same thread)."""

    def __init__(self, path: str | os.PathLike):
        self.name = str(path)
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise MissingTableError(f"{path}: no such table file") from None
        except IsADirectoryError:
            raise MissingTableError(f"{path}: is a directory, not a table file") from None
        self.size = os.fstat(self.fd).st_size
        self.requests = 0
        self._mv = None
        if self.size:
            try:
                self._mm = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ)
                self._mv = memoryview(self._mm)
            except (OSError, ValueError):
                pass

    def read(self, offset: int, n: int) -> bytes:
        self.requests += 1
        return os.pread(self.fd, n, offset)

    def view(self, offset: int, n: int):
        """The bytes at ``offset`` as a zero-copy view (a ``read`` if the file is not mapped);
        :class:`~c4table.errors.CorruptDataError` if the file shrank since it was opened."""
        if self._mv is None:
            return self.read(offset, n)
        now = os.fstat(self.fd).st_size
        if now < self.size:
            raise CorruptDataError(f"{self.name}: the file shrank from {self.size:,} to {now:,} "
                                   "bytes while open (truncated or rewritten in place?); open "
                                   "it again once it is whole")
        self.requests += 1
        return self._mv[offset: offset + n]

    def close(self) -> None:
        if self._mv is not None:
            self._mv.release()
            self._mv = None
            try:
                self._mm.close()
            except BufferError:   # a block view still in use somewhere: the GC closes it
                pass
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class ArrowSource:
    """An object in any ``pyarrow.fs`` file system (``s3://``, ``gs://``, ...): every read is
    one ranged GET. Credentials and endpoint from the environment, as for builds."""

    def __init__(self, uri: str):
        import pyarrow as pa  # pyarrow loads in ~0.15 s: only an object-store URI needs it
        import pyarrow.fs as pafs
        self.name = uri
        try:
            fs, path = pafs.FileSystem.from_uri(uri)
            info = fs.get_file_info(path)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as e:
            raise MissingTableError(f"{uri}: cannot open ({' '.join(str(e).split())})") from None
        if info.type != pafs.FileType.File:
            raise MissingTableError(f"{uri}: no such table file")
        self.size = info.size
        self.f = fs.open_input_file(path)
        self.requests = 0

    def read(self, offset: int, n: int) -> bytes:
        self.requests += 1
        data = self.f.read_at(n, offset)
        return data if isinstance(data, bytes) else data.to_pybytes()

    def close(self) -> None:
        self.f.close()


class HttpSource:
    """A file on a web server that answers ``Range`` requests (``http://``, ``https://``)."""

    def __init__(self, url: str, timeout: float = 60.0):
        self.name, self.timeout, self.requests = url, timeout, 0
        self.size = -1
        self._tail = self._get(f"bytes=-{TAIL_BYTES}")   # also tells the size

    def _get(self, rng: str) -> bytes:
        self.requests += 1
        req = urllib.request.Request(self.name, headers={"Range": rng})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                if r.status != 206:
                    raise TableError(f"{self.name}: the server does not answer range requests "
                                     f"(status {r.status})")
                cr = r.headers.get("Content-Range", "")
                if self.size < 0:
                    try:
                        self.size = int(cr.rsplit("/", 1)[1])
                    except (IndexError, ValueError):
                        raise TableError(f"{self.name}: no file size in the answer "
                                         f"(Content-Range {cr!r})") from None
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise MissingTableError(f"{self.name}: no such table file (HTTP 404)") from None
            if e.code == 416 and self.size < 0:   # empty file
                raise CorruptDataError(f"{self.name}: empty file, not a .c4z table") from None
            raise TableError(f"{self.name}: HTTP {e.code} {e.reason}") from None
        except urllib.error.URLError as e:
            raise MissingTableError(f"{self.name}: cannot reach ({e.reason})") from None

    def read(self, offset: int, n: int) -> bytes:
        if n <= 0:
            return b""
        tail0 = self.size - len(self._tail)
        if offset >= tail0:                                   # served from the first answer
            return self._tail[offset - tail0: offset - tail0 + n]
        return self._get(f"bytes={offset}-{offset + n - 1}")

    def close(self) -> None:
        pass


def open_source(where):
    """The byte source of a local path, an ``http(s)://`` URL or a ``pyarrow.fs`` URI."""
    s = str(where)
    if s.startswith(("http://", "https://")):
        return HttpSource(s)
    if is_url(s):
        return ArrowSource(s)
    return LocalSource(s[len("file://"):] if s.startswith("file://") else s)

