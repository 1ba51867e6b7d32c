"""Where a build's files live: a local directory (the default) or any ``pyarrow.fs`` URI that
every worker can reach (``s3://bucket/prefix``, ``gs://``, ``abfs://``, ``hdfs://``).

Every stage reads and writes the build directory only through a :class:`Storage`, with paths
relative to it (``work/forward/ply_03/part-00000.parquet``), so the same tasks run against a
local disk, a shared POSIX file system or an object store. What differs:

* **Atomic writes.** Locally a file is written under a temporary name and renamed, so a file
  under its final name is complete. On an object store an object appears only when its upload
  completes, which gives the same guarantee.
* **Durability.** A durable write (the default) fsyncs the file and its directory before it
  returns. Files written in bulk by tasks (shards) are written without, and made durable
  together by :meth:`Storage.sync` before the manifest records them
  (:meth:`c4table.pipeline.manifest.Manifest.save`): the fsyncs run in parallel (the file
  system commits them together) and each directory is fsync'ed once. On an object store a
  written object is already durable.
* **Reads.** Whole files (:meth:`Storage.read_bytes`), byte ranges (:meth:`Storage.read_into`:
  ``pread`` locally, a ranged GET remotely) and random-access files for parquet footers.
* **Around the page cache.** The final table is written and read back for hashing with
  ``O_DIRECT`` where the file system allows it (:class:`PositionalWriter`, :func:`read_span`;
  ``C4TABLE_DIRECT_IO=off`` turns it off), through the page cache otherwise.
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

import errno
import itertools
import mmap
import os
import re
import shutil
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from c4table.pipeline.counters import active

SYNC_THREADS = 16   # parallel fsyncs of :meth:`Storage.sync` (the journal commits them together)
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
        active().head_requests += 1
        if self.root is not None:
            return (self.root / rel).is_file()
        return self.fs.get_file_info(self.path(rel)).type == pafs.FileType.File

    def size(self, rel: str) -> int:
        active().head_requests += 1
        if self.root is not None:
            return (self.root / rel).stat().st_size
        info = self.fs.get_file_info(self.path(rel))
        if info.type != pafs.FileType.File:
            raise FileNotFoundError(self.display(rel))
        return info.size

    def list_files(self, rel: str) -> list[str]:
        """Relative paths of the files under directory ``rel`` (recursively; [] if none)."""
        return sorted(self._list_sizes(rel))

    def tree_size(self, rel: str) -> int:
        """Bytes of the files under directory ``rel`` (recursively; 0 if none)."""
        return sum(self._list_sizes(rel).values())

    def _list_sizes(self, rel: str) -> dict[str, int]:
        """{relative path: size} of the files under directory ``rel`` (one LIST)."""
        active().list_requests += 1
        if self.root is not None:
            d = self.root / rel
            if not d.is_dir():
                return {}
            sizes = {}
            for top, dirs, names in os.walk(d):   # errors (a vanished directory) are skipped
                dirs[:] = [x for x in dirs if not _is_trash(x)]   # being removed in the background
                for name in names:
                    path = os.path.join(top, name)
                    try:
                        sizes[os.path.relpath(path, self.root)] = os.stat(path).st_size
                    except FileNotFoundError:
                        continue
            return sizes
        sel = pafs.FileSelector(self.path(rel), recursive=True, allow_not_found=True)
        n = len(self.base) + 1
        return {i.path[n:]: i.size for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.File}

    # ------------------------------------------------------------------ reads
    def read_bytes(self, rel: str) -> bytes:
        data = self._read_bytes(rel)
        active().add_read(len(data), ranged=False)
        return data

    def _read_bytes(self, rel: str) -> bytes:
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
        active().add_read(len(view), ranged=True)
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
        """A random-access file (for parquet readers); each read it serves is counted as one
        ranged read (pyarrow's S3 files make one ranged GET per read)."""
        if self.root is None:
            active().head_requests += 1   # opening an object asks for its size
        return pa.PythonFile(_CountingInput(self.fs.open_input_file(self.path(rel)), active()),
                             mode="r")

    def open_input_stream(self, rel: str, read_ahead: bool = True, offset: int = 0):
        """A sequential reader of ``rel`` (``read(n)``), for streaming whole files (one GET).
        ``read_ahead=False`` (local files) reads no byte beyond those asked for, for a file
        that other processes are still filling behind the bytes read so far; ``offset``
        (local files) starts the reading there."""
        c = active()
        c.add_read(0, ranged=False)
        if self.root is not None:
            f = open(self.root / rel, "rb", buffering=-1 if read_ahead else 0)
            if offset:
                f.seek(offset)
            return _CountingStream(f, c)
        return _CountingStream(self.fs.open_input_stream(self.path(rel)), c)

    # ------------------------------------------------------------------ writes
    def write_atomic(self, rel: str, data, durable: bool = True) -> None:
        """Write ``data`` (bytes-like) to ``rel`` so that it appears whole or not at all."""
        self.write_atomic_chunks(rel, [data], durable, size=memoryview(data).nbytes)

    def write_atomic_chunks(self, rel: str, chunks, durable: bool = True,
                            size: int | None = None) -> None:
        """Write the bytes-like items of the iterable ``chunks``, in order, as file ``rel``,
        so that it appears whole or not at all (the caller need not hold the whole file).
        ``durable=False`` skips the fsyncs, for scratch files that a crash makes the build
        discard or check anyway (runs, messages, merge parts) and for files made durable later
        in a batch (:meth:`sync`: shards, before a manifest records them). ``size``, the bytes
        to be written if known, lets a local write go over a spent file of the recycle bin
        (:meth:`recycle_tree`) rather than into a new one."""
        counts = active()
        if self.root is None:
            n = 0
            with self.fs.open_output_stream(self.path(rel)) as f:
                for c in chunks:
                    n += f.write(c)
            counts.add_write(n)
            return
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        try:
            n = 0
            reused = size is not None and self._claim_recycled(tmp, size)
            with open(tmp, "r+b" if reused else "wb") as f:
                for c in chunks:
                    n += f.write(c)
                if reused:
                    f.truncate(n)   # a longer spent file: its tail goes
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, path)
        counts.add_write(n)
        if durable:
            fsync_dir(path.parent)

    def sync(self, rels) -> None:
        """Make the files ``rels`` (written without fsync, by any process) durable with their
        directory entries: locally fsync each file and then each of their directories once,
        in parallel threads; nothing to do on an object store."""
        if self.root is None:
            return
        files = sorted({str(self.root / r) for r in rels})
        if not files:
            return
        dirs = sorted({os.path.dirname(f) for f in files})
        if len(files) + len(dirs) <= 2:
            for p in files + dirs:
                fsync_path(p)
            return
        with ThreadPoolExecutor(min(SYNC_THREADS, len(files))) as ex:
            list(ex.map(fsync_path, files))
            list(ex.map(fsync_path, dirs))

    def writer_at(self, rel: str, offset: int, direct: bool = True) -> "PositionalWriter":
        """A :class:`PositionalWriter` filling the existing local file ``rel`` from byte
        ``offset`` on, without the page cache where the file system allows it (``direct``).
        Local storage only."""
        if self.root is None:
            raise NotImplementedError("writer_at: positional writes need a local directory")
        return PositionalWriter(self.root / rel, offset, direct)

    def read_chunks(self, rel: str, start: int, end: int, direct: bool = True):
        """Yield the bytes ``[start, end)`` of the local file ``rel`` in order, as memoryviews
        valid until the next one is asked for (two reused buffers: no fresh memory), reading
        ahead in a background thread; with ``direct``, without the page cache where the file
        system allows it (:func:`read_span`). Local storage only."""
        if self.root is None:
            raise NotImplementedError("read_chunks: needs a local directory")
        got = 0
        for view in read_span(self.root / rel, start, end, direct):
            got += len(view)
            yield view
        active().add_read(got, ranged=True)

    def open_output(self, rel: str):
        """A stream that writes ``rel`` directly (the caller handles atomicity, e.g. by writing
        a temporary name and :meth:`rename`). Counted as one object written when closed."""
        if self.root is not None:
            (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
            return _CountingOutput(open(self.root / rel, "wb"), active())
        return _CountingOutput(self.fs.open_output_stream(self.path(rel)), active())

    def rename(self, src: str, dst: str) -> None:
        if self.root is not None:
            os.replace(self.root / src, self.root / dst)
            fsync_dir((self.root / dst).parent)
        else:
            self.fs.move(self.path(src), self.path(dst))

    def delete(self, rel: str) -> None:
        """Delete file ``rel`` if it exists."""
        c = active()
        if self.root is not None:
            p = self.root / rel
            try:
                n = p.stat().st_size
            except FileNotFoundError:
                return
            p.unlink(missing_ok=True)
        else:
            c.head_requests += 1
            info = self.fs.get_file_info(self.path(rel))
            if info.type != pafs.FileType.File:
                return
            n = info.size
            self.fs.delete_file(self.path(rel))
        c.delete_requests += 1
        c.bytes_deleted += n

    def delete_tree(self, rel: str) -> None:
        """Delete directory ``rel`` and everything under it, if it exists (one LIST, then one
        delete request per file). Locally the files are unlinked at once and the emptied
        directories renamed aside (``.NAME.deleted-*``) and removed by a background thread
        (:func:`settle_deletes` waits for it): an ext4 ``rmdir`` takes milliseconds, and a build
        deletes a spent directory of runs or messages after every generation."""
        files = self._list_sizes(rel)
        c = active()
        c.delete_requests += len(files)
        c.bytes_deleted += sum(files.values())
        if self.root is not None:
            d = self.root / rel
            if not d.is_dir():
                return
            for f in files:
                (self.root / f).unlink(missing_ok=True)
            _set_aside(d)
            return
        info = self.fs.get_file_info(self.path(rel))
        if info.type == pafs.FileType.Directory:
            self.fs.delete_dir(self.path(rel))
        else:
            for f in files:
                self.fs.delete_file(self.path(f))


    # ------------------------------------------------------------------ recycle bin
    # A spent scratch file (a generation's runs or messages, once read) is not unlinked but
    # moved into the recycle bin, and a later local write of known size goes *over* one of
    # them (renamed to its temporary name, written from offset 0 without truncating first,
    # cut to its length at the end), so it reuses the page-cache pages the spent file still
    # holds. On a virtual machine whose balloon reports freed memory to the host (free page
    # reporting), every page of a new file is fresh memory the host must back again: writing
    # 1 GiB into a new file took 2.9 s of CPU there, over a cached one 0.15 s.

    def recycle_tree(self, rel: str) -> None:
        """Delete directory ``rel`` like :meth:`delete_tree`, but locally keep its files of at
        least :data:`RECYCLE_MIN_BYTES` in the recycle bin (:data:`RECYCLE_DIR`) for later
        writes to go over. Files of the bin no write took since the last call are surplus
        and unlinked first, so the bin holds at most one spent directory's files. On an
        object store, or with ``C4TABLE_RECYCLE=0``, this is :meth:`delete_tree`."""
        if self.root is None or not recycling():
            self.delete_tree(rel)
            return
        d = self.root / rel
        if not d.is_dir():
            return
        files = self._list_sizes(rel)
        c = active()
        c.delete_requests += len(files)
        c.bytes_deleted += sum(files.values())
        bin_dir = self.root / RECYCLE_DIR
        self.empty_recycle_bin()
        bin_dir.mkdir(parents=True, exist_ok=True)
        for f, n in files.items():
            if n >= RECYCLE_MIN_BYTES:
                try:
                    os.rename(self.root / f, bin_dir / f"{os.getpid()}-{next(_trash_seq)}")
                    continue
                except OSError:
                    pass
            (self.root / f).unlink(missing_ok=True)
        _set_aside(d)

    def recycle_bytes(self) -> int:
        """Bytes of the files in the recycle bin (0 on an object store or with none)."""
        if self.root is None:
            return 0
        return sum(_bin_sizes(self.root / RECYCLE_DIR).values())

    def empty_recycle_bin(self) -> int:
        """Unlink the files of the recycle bin; return their bytes. (The pages they held are
        freed: call it when the disk is needed or the scratch files are done.)"""
        if self.root is None:
            return 0
        bin_dir = self.root / RECYCLE_DIR
        sizes = _bin_sizes(bin_dir)
        for name in sizes:
            try:
                os.unlink(bin_dir / name)
            except FileNotFoundError:   # taken by a write meanwhile
                sizes[name] = 0
        try:
            os.rmdir(bin_dir)
        except OSError:   # none, or a file moved in meanwhile
            pass
        return sum(sizes.values())

    def _claim_recycled(self, tmp: Path, size: int) -> bool:
        """Move a file of the recycle bin to ``tmp`` for a write of ``size`` bytes to go over:
        the smallest at least that long, else the longest. False if the bin has none (or the
        write is under :data:`RECYCLE_MIN_BYTES`). Several processes may claim at once: the
        rename gives each file to one of them."""
        if size < RECYCLE_MIN_BYTES or not recycling():
            return False
        bin_dir = self.root / RECYCLE_DIR
        sizes = _bin_sizes(bin_dir)
        if not sizes:
            return False
        fit = sorted((n, name) for name, n in sizes.items() if n >= size)
        rest = sorted(((n, name) for name, n in sizes.items() if n < size), reverse=True)
        for _, name in fit + rest:
            try:
                os.rename(bin_dir / name, tmp)
                return True
            except FileNotFoundError:   # another process took it
                continue
            except OSError:
                return False
        return False


class _CountingStream:
    """A sequential reader that adds the bytes it returns to its counts."""

    def __init__(self, f, counts):
        self._f, self._c = f, counts

    def read(self, n: int = -1) -> bytes:
        b = self._f.read(n)
        self._c.bytes_read += len(b)
        return b

    def readinto(self, buf) -> int:
        """Read into the writable buffer ``buf`` (reused by the caller: no fresh memory per
        read); returns the bytes read, 0 at the end."""
        n = self._f.readinto(buf) or 0
        self._c.bytes_read += n
        return n

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _CountingInput(_CountingStream):
    """A random-access file (wrapped by ``pa.PythonFile``): every read is one ranged read."""

    def read(self, n: int = -1) -> bytes:
        b = self._f.read(n)
        self._c.add_read(len(b), ranged=True)
        return b

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._f.seek(pos, whence)

    def tell(self) -> int:
        return self._f.tell()

    def size(self) -> int:
        return self._f.size()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return self._f.closed


class _CountingOutput:
    """A writer counted as one object of the bytes written, when closed."""

    def __init__(self, f, counts):
        self._f, self._c, self._n = f, counts, 0

    def write(self, b) -> int:
        n = self._f.write(b)
        self._n += len(memoryview(b).cast("B")) if n is None else n
        return n

    def flush(self) -> None:
        self._f.flush()

    def fileno(self) -> int:
        return self._f.fileno()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()
            self._c.add_write(self._n)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_trash_seq = itertools.count()
RECYCLE_DIR = "work/recycle"   # the recycle bin of a local build directory (Storage.recycle_tree)
RECYCLE_MIN_BYTES = 1 << 20    # smaller spent files are unlinked, smaller writes go to new files
RECYCLE_ENV = "C4TABLE_RECYCLE"


def recycling() -> bool:
    """Whether spent scratch files are recycled (``C4TABLE_RECYCLE=0`` turns it off).

    >>> isinstance(recycling(), bool)
    True
    """
    return os.environ.get(RECYCLE_ENV, "1") not in ("0", "no", "off")


def _bin_sizes(bin_dir: Path) -> dict[str, int]:
    """{name: size} of the files in the recycle bin ``bin_dir`` ({} if there is none)."""
    sizes = {}
    try:
        with os.scandir(bin_dir) as it:
            for e in it:
                try:
                    sizes[e.name] = e.stat(follow_symlinks=False).st_size
                except FileNotFoundError:   # claimed meanwhile
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return sizes
_background: dict[str, tuple[int, ThreadPoolExecutor]] = {}   # name: (pid, its thread)


def background(name: str) -> ThreadPoolExecutor:
    """This process's one background thread ``name`` (started on first use; a forked child
    starts its own): the jobs submitted to it run in order, off the caller's path (the
    manifest's checkpoints, the removal of spent directories)."""
    got = _background.get(name)
    if got is None or got[0] != os.getpid():
        got = _background[name] = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix=f"c4table-{name}"))
    return got[1]


def _is_trash(name: str) -> bool:
    """A directory :meth:`Storage.delete_tree` set aside (``.NAME.deleted-PID-N``): listings skip
    it, since the background thread may be removing it while they walk."""
    return name.startswith(".") and ".deleted-" in name


def _set_aside(d: Path) -> None:
    """Rename the emptied directory ``d`` aside (``.NAME.deleted-PID-N``) and remove it in the
    background (:func:`_remove_later`); where the rename fails, remove it now."""
    trash = d.with_name(f".{d.name}.deleted-{os.getpid()}-{next(_trash_seq)}")
    try:
        os.rename(d, trash)
    except OSError:
        shutil.rmtree(d, ignore_errors=True)
        return
    _remove_later(trash)


def _remove_later(path: Path) -> None:
    """Remove the (emptied) directory tree ``path`` in this process's background thread."""
    background("rmdir").submit(shutil.rmtree, path, ignore_errors=True)


def settle_deletes() -> None:
    """Wait until the directories :meth:`Storage.delete_tree` set aside are removed."""
    got = _background.get("rmdir")
    if got is not None and got[0] == os.getpid():
        got[1].submit(int).result()   # one thread, jobs in order: the earlier ones are done


def start_writeback(path, offset: int, n: int) -> None:
    """Ask the kernel to start writing ``n`` bytes of the file ``path`` from ``offset`` to disk,
    without waiting for them (Linux's ``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which the
    ``os`` module does not offer; elsewhere, or if refused, nothing). Not a durability step: a
    later fsync still makes the file durable, but then waits only for what is still in flight.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"; _ = p.write_bytes(b"x" * 10)
    >>> start_writeback(p, 0, 10)
    """
    fn = _sync_file_range()
    if fn is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        fn(fd, offset, n, 2)   # SYNC_FILE_RANGE_WRITE; an error leaves it to the fsync
    finally:
        os.close(fd)


@lru_cache(maxsize=1)
def _sync_file_range():
    """libc's ``sync_file_range`` through ctypes, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


# ------------------------------------------------ bytes written and read without the page cache
DIRECT_ALIGN = 4096        # O_DIRECT: offsets, lengths and buffer addresses are multiples of it
DIRECT_BUFFER = 8 << 20    # bytes of each aligned buffer (two per writer, two per reader)
DIRECT_ENV = "C4TABLE_DIRECT_IO"   # "off": every write and read through the page cache


def direct_io_allowed() -> bool:
    """Whether :class:`PositionalWriter` and :func:`read_span` may try ``O_DIRECT`` (Linux, and
    unless the environment sets ``C4TABLE_DIRECT_IO=off``); where the file system then refuses
    it, they fall back to the page cache by themselves.

    >>> direct_io_allowed() == (hasattr(os, "O_DIRECT") and os.environ.get(DIRECT_ENV) != "off")
    True
    """
    return hasattr(os, "O_DIRECT") and os.environ.get(DIRECT_ENV, "").lower() not in ("off", "0", "no")


def direct_io_takes(path) -> bool:
    """Whether the file ``path`` can be opened with ``O_DIRECT`` (and :func:`direct_io_allowed`):
    what a caller deciding between the two ways asks first (a write may still be refused,
    which :class:`PositionalWriter` handles by itself).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"; _ = p.write_bytes(b"x")
    >>> direct_io_takes(p) in (True, False), direct_io_takes(p.with_name("missing"))
    (True, False)
    """
    if not direct_io_allowed():
        return False
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    return True


_aligned: dict[tuple[str, int], tuple[int, list]] = {}   # (name, thread): (pid, its buffers)


def aligned_buffers(name: str, count: int, size: int) -> list:
    """This thread's ``count`` page-aligned buffers ``name`` of ``size`` bytes (anonymous
    ``mmap``): made on first use and lent again to every later user in the thread (a forked
    child makes its own; tasks running at once in threads of one process, as on a dask worker
    of several threads, have their own), so that a task's output is not written through fresh
    memory.

    >>> a, b = aligned_buffers("doc", 2, 8192)
    >>> len(a), aligned_buffers("doc", 2, 8192)[0] is a
    (8192, True)
    """
    key = (name, threading.get_ident())
    got = _aligned.get(key)
    if got is None or got[0] != os.getpid() or len(got[1]) < count or len(got[1][0]) != size:
        got = _aligned[key] = (os.getpid(), [mmap.mmap(-1, size) for _ in range(count)])
    return got[1][:count]


def _round_up(n: int, a: int) -> int:
    return -(-n // a) * a


def _pwrite_all(fd: int, view: memoryview, pos: int) -> None:
    while view:
        k = os.pwrite(fd, view, pos)
        if k <= 0:
            raise OSError(errno.EIO, "a write wrote nothing")
        pos += k
        view = view[k:]


class PositionalWriter:
    """Fills an existing local file from byte ``offset`` on, in order, through buffers it lends
    the caller (:meth:`space`, then :meth:`commit` of the bytes put there), so the caller
    converts its data straight into them and no memory is fresh: two page-aligned buffers
    (:func:`aligned_buffers`) per process, reused by its later writers.

    With ``direct`` (and :func:`direct_io_allowed`) the whole aligned blocks are written with
    ``O_DIRECT``, not through the page cache (on a virtual machine whose freed memory goes back
    to the host, every new page-cache page costs a fault on the host), by this process's
    background thread while the caller fills the other buffer (such a write waits for the
    device); the partial blocks at either end, shared with whoever fills the bytes beside,
    with an ordinary ``pwrite`` (the kernel writes such dirty pages back before a later
    ``O_DIRECT`` read or write of them, so the file stays coherent). Where the file system
    refuses ``O_DIRECT`` (``EINVAL`` at the open or at a write: tmpfs on old kernels,
    overlayfs, some FUSE file systems), or without ``direct``, every byte goes through an
    ordinary ``pwrite``. :meth:`close` writes the rest, waits for the writes in flight and
    returns the bytes written; the caller fsyncs the file. Use it as a context manager: on an
    error the writes in flight are waited for (their buffers are lent again later).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"; _ = p.write_bytes(bytes(10000))
    >>> with PositionalWriter(p, 4000) as w:
    ...     w.space(5000)[:5000] = b"x" * 5000
    ...     w.commit(5000)
    >>> w.written, p.read_bytes() == bytes(4000) + b"x" * 5000 + bytes(1000)
    (5000, True)
    """

    def __init__(self, path, offset: int, direct: bool = True):
        self.fd = os.open(path, os.O_WRONLY)
        self.dfd = -1   # the O_DIRECT descriptor, if the file system took it
        if direct and direct_io_allowed():
            try:
                self.dfd = os.open(path, os.O_WRONLY | os.O_DIRECT)
            except OSError:
                self.dfd = -1
        self.refused = False   # a write with O_DIRECT failed with EINVAL: the page cache since
        self.bufs = aligned_buffers("write", 2 if self.dfd >= 0 else 1, DIRECT_BUFFER)
        self.cur = 0
        self.busy: list = [None, None]   # each buffer's write in flight
        align = DIRECT_ALIGN if self.dfd >= 0 else 1
        self.base = offset - offset % align   # the file's byte at the buffer's byte 0
        self.lo = self.fill = offset - self.base   # the caller's bytes in the buffer: [lo, fill)
        self.written = 0
        self.direct_bytes = 0   # of them, written with O_DIRECT
        self.closed = False

    @property
    def direct(self) -> bool:
        """Whether whole blocks go around the page cache (so far)."""
        return self.dfd >= 0 and not self.refused

    def space(self, n: int) -> memoryview:
        """The free part of the current buffer, at least ``n`` bytes (writing out what the
        buffer holds first if need be); its first bytes are the file's next ones."""
        if len(self.bufs[self.cur]) - self.fill < n:
            self._flush(final=False)
            if len(self.bufs[self.cur]) - self.fill < n:
                raise ValueError(f"PositionalWriter.space: {n:,} bytes do not fit a buffer")
        return memoryview(self.bufs[self.cur])[self.fill:]

    def commit(self, n: int) -> None:
        """The next ``n`` bytes of :meth:`space` are the file's next bytes."""
        self.fill += n

    def _flush(self, final: bool) -> None:
        buf = memoryview(self.bufs[self.cur])
        lo, hi = self.lo, self.fill
        if not self.direct:
            _pwrite_all(self.fd, buf[lo:hi], self.base + lo)
            self.written += hi - lo
            self.base += hi
            self.lo = self.fill = 0
            return
        a, b = _round_up(lo, DIRECT_ALIGN), hi - hi % DIRECT_ALIGN   # the whole blocks: [a, b)
        if a >= b:   # no whole block
            if not final:
                return   # nothing to write yet
            a = b = hi
        self.written += hi - lo
        if lo < a:   # the head: a block shared with the bytes before
            _pwrite_all(self.fd, buf[lo:a], self.base + lo)
        if a < b:
            self.busy[self.cur] = background("direct-write").submit(self._write_direct, buf[a:b],
                                                                    self.base + a)
        if final:
            if b < hi:   # the tail: a block shared with the bytes after
                _pwrite_all(self.fd, buf[b:hi], self.base + b)
            self._wait()
            return
        other = 1 - self.cur   # the rest (less than a block) moves to the other buffer
        if self.busy[other] is not None:
            self.busy[other].result()
            self.busy[other] = None
        self.bufs[other][: hi - b] = self.bufs[self.cur][b:hi]
        self.written -= hi - b
        self.base += b
        self.lo, self.fill, self.cur = 0, hi - b, other

    def _write_direct(self, view: memoryview, pos: int) -> None:
        if not self.refused:
            try:
                _pwrite_all(self.dfd, view, pos)
                self.direct_bytes += len(view)
                return
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                self.refused = True   # and write these bytes (again) through the page cache
        _pwrite_all(self.fd, view, pos)

    def _wait(self) -> None:
        for i, f in enumerate(self.busy):
            if f is not None:
                self.busy[i] = None
                f.result()

    def close(self) -> int:
        """Write the rest, wait for the writes in flight, close; the bytes written."""
        if not self.closed:
            self.closed = True
            try:
                self._flush(final=True)
            finally:
                self._release()
            active().add_write(self.written)
        return self.written

    def _release(self) -> None:
        try:
            for f in self.busy:   # even after an error: the buffers are lent again later
                if f is not None:
                    try:
                        f.result()
                    except BaseException:
                        pass
        finally:
            self.busy = [None, None]
            os.close(self.fd)
            if self.dfd >= 0:
                os.close(self.dfd)
            self.dfd = -1

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()
        elif not self.closed:
            self.closed = True
            self._release()


def read_span(path, start: int, end: int, direct: bool = True):
    """Yield the bytes ``[start, end)`` of the file ``path`` in order (fewer if it ends
    before), as memoryviews of two reused page-aligned buffers (:func:`aligned_buffers`): each
    is valid until the next one is asked for, and the next one is read by this process's
    background thread meanwhile. With ``direct`` (and :func:`direct_io_allowed`) they are read
    with ``O_DIRECT``, the whole blocks around the span, from the disk rather than the page
    cache (pages of the file still dirty there are written back by the kernel first, so the
    bytes are those of the file); where the file system refuses it, through the page cache.
    Nothing at or past ``end`` is read into the page cache.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "f"; _ = p.write_bytes(bytes(range(256)) * 40)
    >>> b"".join(bytes(v) for v in read_span(p, 5000, 5004))
    b'\\x88\\x89\\x8a\\x8b'
    """
    fds = {}
    if direct and direct_io_allowed():
        try:
            fds["direct"] = os.open(path, os.O_RDONLY | os.O_DIRECT)
        except OSError:
            pass
    align = DIRECT_ALIGN if fds else 1
    if not fds:
        fds["cached"] = os.open(path, os.O_RDONLY)
    bufs = aligned_buffers("read", 2, DIRECT_BUFFER)
    pending = None

    def read(i: int, pos: int) -> int:   # into buffer i from pos; the bytes read (short: EOF)
        view = memoryview(bufs[i])[: min(len(bufs[i]), _round_up(end, align) - pos)]
        got = 0
        while got < len(view):
            fd = fds.get("direct", -1)
            try:
                k = os.preadv(fds["cached"] if fd < 0 else fd, [view[got:]], pos + got)
            except OSError as e:
                if fd < 0 or e.errno != errno.EINVAL:
                    raise
                os.close(fds.pop("direct"))   # refused after all: the page cache
                fds["cached"] = os.open(path, os.O_RDONLY)
                continue
            if k == 0:
                break
            got += k
        return got

    try:
        pos, i = start - start % align, 0
        if pos < end:
            pending = background("read-ahead").submit(read, i, pos)
        while pending is not None:
            got = pending.result()
            pending = None
            want = min(len(bufs[i]), _round_up(end, align) - pos)
            if got == want and pos + got < end:   # read the next while this one is used
                pending = background("read-ahead").submit(read, 1 - i, pos + got)
            lo, hi = max(start, pos) - pos, min(end, pos + got) - pos
            if lo < hi:
                yield memoryview(bufs[i])[lo:hi]
            pos += got
            i = 1 - i
    finally:
        if pending is not None:   # stopped early: the read in flight ends before its buffer is lent again
            try:
                pending.result()
            except BaseException:
                pass
        for fd in fds.values():
            os.close(fd)


def fsync_path(path) -> None:
    """fsync a file or a directory by its path (its written data and metadata reach the disk,
    whoever wrote it)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


fsync_dir = fsync_path


@lru_cache(maxsize=64)
def open_storage(where: str | Path) -> Storage:
    """The :class:`Storage` for ``where`` (a path or URI), one per process and location."""
    return Storage(where)
