"""I/O counters: what each task wrote, read and asked of its storage.

Design notes: ``docs/modules.md`` (``c4table.io.counting``).

>>> c = IOCounts()
>>> with counting(c):
...     active().add_write(100)
>>> c.bytes_written, c.objects_written
(100, 1)
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields


@dataclass
class IOCounts:
    """Requests, bytes and CPU of one task, one stage or one build. CPU and wall time are in
    microseconds: a task run in a worker process counts its process's user + system CPU
    since the process's task before (since it started, for its first); the driver's process
    counts its own (and that of the tasks it runs itself) and the stage's wall time (:class:`c4table.pipeline.runtime.counters.StageCounts`)."""

    bytes_written: int = 0
    objects_written: int = 0
    bytes_read: int = 0
    get_requests: int = 0        # whole-object reads (GET without a range)
    ranged_reads: int = 0        # reads of part of an object (ranged GET / pread)
    slice_reads: int = 0         # of which: windows of sorted runs read by a shuffle
    cached_reads: int = 0        # of which: reads a process keeps for its later tasks (run
    cached_bytes_read: int = 0   # indexes), so their number depends on which worker ran which task
    head_requests: int = 0       # size/existence queries (HEAD / stat)
    list_requests: int = 0
    delete_requests: int = 0
    bytes_deleted: int = 0
    tasks: int = 0
    peak_task_memory: int = 0    # the largest rise of a task's resident set, bytes
    task_memory_sum: int = 0     # sum of the tasks' rises (for the mean)
    first_task_memory: int = 0   # largest rise of a process's first task (loading code too)
    cpu_us: int = 0              # user + system CPU
    sys_us: int = 0              # of which system (page faults, I/O, ...)
    wall_us: int = 0             # the driver's wall time (0 for a task)
    codec_us: int = 0            # of cpu_us: a .c4z merge's block codec, encoding and decoding
                                 # again (its tasks' thread CPU)
    pulled_keys: int = 0         # a pulling backward pass: the keys it annotated ...
    pulled_rows: int = 0         # ... and the rows of the generation after them it read

    def add_write(self, n: int) -> None:
        self.bytes_written += int(n)
        self.objects_written += 1

    def add_read(self, n: int, ranged: bool) -> None:
        self.bytes_read += int(n)
        if ranged:
            self.ranged_reads += 1
        else:
            self.get_requests += 1

    def add_cached_read(self, n: int, ranged: bool) -> None:
        """Count a read whose result this process keeps for its later tasks: how many are made
        depends on which worker ran which task, so they are also counted apart
        (:attr:`task_bytes_read` leaves them out)."""
        self.add_read(n, ranged)
        self.cached_reads += 1
        self.cached_bytes_read += int(n)

    @property
    def task_bytes_read(self) -> int:
        """The bytes read but for the cached reads: what the tasks read for themselves, the
        same whichever worker ran which task."""
        return self.bytes_read - self.cached_bytes_read

    @property
    def requests(self) -> int:
        return (self.objects_written + self.get_requests + self.ranged_reads + self.head_requests
                + self.list_requests + self.delete_requests)

    def merge(self, other: "IOCounts") -> None:
        for f in fields(self):
            if f.name in ("peak_task_memory", "first_task_memory"):
                setattr(self, f.name, max(getattr(self, f.name), getattr(other, f.name)))
            else:
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_json(self) -> dict:
        return {**asdict(self), "requests": self.requests}

    @classmethod
    def from_json(cls, d: dict) -> "IOCounts":
        return cls(**{f.name: int(d.get(f.name, 0)) for f in fields(cls)})


_local = threading.local()
_driver = IOCounts()   # counts of whatever runs outside a counted task (the driver)


def active() -> IOCounts:
    """The counts the calling thread adds to (the running task's, or the driver's)."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else _driver


def driver_counts() -> IOCounts:
    """The process-wide counts of work done outside counted tasks."""
    return _driver


@contextmanager
def counting(c: IOCounts):
    """Make ``c`` the active counts of this thread inside the block."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(c)
    try:
        yield c
    finally:
        stack.pop()


@contextmanager
def uncounted():
    """Count the requests of the block nowhere (a throwaway :class:`IOCounts`): for the
    counters' own file, whose size depends on the counts it holds (so counting it would make
    the counts depend on themselves)."""
    with counting(IOCounts()):
        yield


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
