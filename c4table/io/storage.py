"""Where a build's files live: a local directory (the default) or any ``pyarrow.fs`` URI that
every worker can reach (``s3://bucket/prefix``, ``gs://``, ``abfs://``, ``hdfs://``).

Design notes: ``docs/modules.md`` (``c4table.io.storage``).

>>> s = open_storage("/tmp/c4-doc")
>>> s.write_atomic("a/b.txt", b"hello")
>>> s.read_bytes("a/b.txt"), s.size("a/b.txt"), s.exists("a/c.txt")
(b'hello', 5, False)
"""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
from c4table.io.counting import _CountingInput, _CountingOutput, _CountingStream, active
from c4table.io.recycle import _trash_seq
from c4table.io.files import PositionalWriter, direct_io_takes, fsync_dir, fsync_path, read_span
from c4table.io.recycle import RECYCLE_DIR, RECYCLE_MIN_BYTES, _bin_sizes, _is_trash, _set_aside
from c4table.io.options import DIRECT_ENV, IOOptions, current  # noqa: F401  (DIRECT_ENV: for the tests)



SYNC_THREADS = 16   # parallel fsyncs of :meth:`Storage.sync` (the journal commits them together)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(where) -> bool:
    """True for ``scheme://...`` locations other than ``file://``."""
    s = str(where)
    return bool(_URL.match(s)) and not s.startswith("file://")


class Storage:
    """A build directory, local or remote; paths are relative to it (``/``-separated)."""

    def __init__(self, where: str | Path, options: IOOptions | None = None):
        self.options = options if options is not None else current()   # read once, here
        # {rel: bytes} of the files write_atomic wrote here (an object store's overwrite frees
        # them); not carried to the tasks' copies
        self._put_sizes: dict[str, int] = {}
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
        return (open_storage, (self.uri, self.options))

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
    def read_bytes(self, rel: str, cached: bool = False) -> bytes:
        """The whole file ``rel`` (one GET). ``cached``: the caller keeps the bytes for the
        process's later tasks, so how many such reads a stage makes depends on which worker ran
        which task; they are counted apart too (:meth:`IOCounts.add_cached_read`)."""
        data = self._read_bytes(rel)
        c = active()
        if cached:
            c.add_cached_read(len(data), ranged=False)
        else:
            c.add_read(len(data), ranged=False)
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
        (:meth:`recycle_tree`) rather than into a new one. A file it replaces counts as
        deleted bytes (no request): on an object store, one this storage wrote before."""
        counts = active()
        if self.root is None:
            n = 0
            with self.fs.open_output_stream(self.path(rel)) as f:
                for c in chunks:
                    n += f.write(c)
            counts.add_write(n)
            counts.bytes_deleted += self._put_sizes.get(rel, 0)   # what the write replaced
            self._put_sizes[rel] = n
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
        try:   # what the write replaces
            counts.bytes_deleted += os.stat(path).st_size
        except FileNotFoundError:
            pass
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
        return PositionalWriter(self.root / rel, offset, direct and self.options.direct)

    def direct_io_takes(self, rel: str) -> bool:
        """Whether the local file ``rel`` is to be written and read with ``O_DIRECT``: this
        storage's options allow it and the file system takes it."""
        return self.root is not None and self.options.direct and direct_io_takes(self.root / rel)

    def read_chunks(self, rel: str, start: int, end: int, direct: bool = True):
        """Yield the bytes ``[start, end)`` of the local file ``rel`` in order, as memoryviews
        valid until the next one is asked for (two reused buffers: no fresh memory), reading
        ahead in a background thread; with ``direct``, without the page cache where the file
        system allows it (:func:`read_span`). Local storage only."""
        if self.root is None:
            raise NotImplementedError("read_chunks: needs a local directory")
        got = 0
        for view in read_span(self.root / rel, start, end, direct and self.options.direct):
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
        self._put_sizes.pop(src, None)
        self._put_sizes.pop(dst, None)
        if self.root is not None:
            os.replace(self.root / src, self.root / dst)
            fsync_dir((self.root / dst).parent)
        else:
            self.fs.move(self.path(src), self.path(dst))

    def delete(self, rel: str) -> None:
        """Delete file ``rel`` if it exists."""
        c = active()
        self._put_sizes.pop(rel, None)
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
        for f in files:
            self._put_sizes.pop(f, None)
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
        object store, or with recycling off (``C4TABLE_RECYCLE=0``), this is :meth:`delete_tree`."""
        if self.root is None or not self.options.recycle:
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
        if size < RECYCLE_MIN_BYTES or not self.options.recycle:
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


@lru_cache(maxsize=64)
def open_storage(where: str | Path, options: IOOptions | None = None) -> Storage:
    """The :class:`Storage` for ``where`` (a path or URI) with ``options`` (default: this
    process's, :func:`c4table.io.options.current`)."""
    return Storage(where, options)
