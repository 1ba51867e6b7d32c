"""Bytes to and from local files around the page cache: the table written with ``O_DIRECT``
(:class:`PositionalWriter`) and read back for hashing (:func:`read_span`) where the file system
allows it and the caller asks (:class:`~c4table.io.options.IOOptions`), writeback started early
(:func:`start_writeback`), fsyncs (:func:`fsync_path`), and the background threads that do it
(:func:`background`)."""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from c4table.io.counting import active

_background: dict[str, tuple[int, ThreadPoolExecutor]] = {}   # name: (pid, its thread)


def background(name: str) -> ThreadPoolExecutor:
    """This process's one background thread ``name`` (started on first use; a forked child
    starts its own): the jobs submitted to it run in order, off the caller's path (the
    manifest's checkpoints, the removal of spent directories)."""
    got = _background.get(name)
    if got is None or got[0] != os.getpid():
        got = _background[name] = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix=f"c4table-{name}"))
    return got[1]


def start_writeback(path, offset: int, n: int) -> None:
    """Ask the kernel to start writing ``n`` bytes of the file ``path`` from ``offset`` to disk,
    without waiting for them (Linux's ``sync_file_range(SYNC_FILE_RANGE_WRITE)``, which the
    ``os`` module does not offer; elsewhere, or if refused, nothing). Not a durability step: a
    later fsync still makes the file durable, but then waits only for what is still in flight.

    >>> import pathlib
    >>> p = pathlib.Path("writeback.bin"); _ = p.write_bytes(b"x" * 10)
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
        fn = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


# ------------------------------------------------ bytes written and read without the page cache
DIRECT_ALIGN = 4096        # O_DIRECT: offsets, lengths and buffer addresses are multiples of it
DIRECT_BUFFER = 8 << 20    # bytes of each aligned buffer (two per writer, two per reader)
HAS_O_DIRECT = hasattr(os, "O_DIRECT")   # Linux; elsewhere every byte goes through the page cache


def direct_io_takes(path) -> bool:
    """Whether the file ``path`` can be opened with ``O_DIRECT``: what a caller deciding
    between the two ways asks first (a write may still be refused, which
    :class:`PositionalWriter` handles by itself).

    >>> import pathlib
    >>> direct_io_takes(pathlib.Path("no-such-file"))
    False

    On an existing file the answer depends on the file system (``tests/test_direct_io.py``).
    """
    if not HAS_O_DIRECT:
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
    the caller (:meth:`space`, then :meth:`commit` of the bytes put there): two page-aligned
    buffers (:func:`aligned_buffers`) per process, so no memory is fresh. With ``direct`` the
    whole aligned blocks go with ``O_DIRECT`` from a background thread, the partial ones at either
    end with ``pwrite``; where the file system refuses ``O_DIRECT``, every byte with ``pwrite``
    (why and how: ``docs/modules.md``, ``c4table.io.files``). :meth:`close` returns the bytes
    written; the caller fsyncs. Use it as a context manager.

    >>> import pathlib
    >>> p = pathlib.Path("positional.bin"); _ = p.write_bytes(bytes(10000))
    >>> with PositionalWriter(p, 4000) as w:
    ...     w.space(5000)[:5000] = b"x" * 5000
    ...     w.commit(5000)
    >>> w.written, p.read_bytes() == bytes(4000) + b"x" * 5000 + bytes(1000)
    (5000, True)"""

    def __init__(self, path, offset: int, direct: bool = True):
        self.fd = os.open(path, os.O_WRONLY)
        self.dfd = -1   # the O_DIRECT descriptor, if the file system took it
        if direct and HAS_O_DIRECT:
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
    """Yield the bytes ``[start, end)`` of the file ``path`` in order (fewer if it ends before), as
    memoryviews of two reused page-aligned buffers (:func:`aligned_buffers`), each valid until the
    next is asked for (read meanwhile by a background thread). With ``direct``, read with
    ``O_DIRECT`` from the disk where the file system takes it (dirty pages are written back
    first), else through the page cache; nothing at or past ``end`` enters the page cache.

    >>> import pathlib
    >>> p = pathlib.Path("span.bin"); _ = p.write_bytes(bytes(range(256)) * 40)
    >>> b"".join(bytes(v) for v in read_span(p, 5000, 5004))
    b'\\x88\\x89\\x8a\\x8b'
    """
    fds = {}
    if direct and HAS_O_DIRECT:
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
