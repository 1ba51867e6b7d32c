"""The final table written and hashed without the page cache (``O_DIRECT``), and the fallback
through it where a file system refuses that: the same bytes either way, at every alignment.

Evidence: random bytes placed by :class:`PositionalWriter` (direct, refused at the open,
refused at a write, switched off) against the same bytes placed by Python; spans read back by
:func:`read_span` against slices of the file; whole tables built through each path against
their known tree hashes, the published 4x4 sha256 and the recorded sha256 of tables
byte-identical to Cadot's (``c4table/data/known_tables.json``), and the manifest's hashes
against the tree hash and ``hashlib`` of the file.
"""
import errno
import hashlib
import json
import os

import numpy as np
import pytest

from c4table.io import files as storage
from c4table.pipeline.stages.build import build_table
from c4table.io.files import PositionalWriter, read_span
from c4table.io.options import DIRECT_ENV, IOOptions
from c4table.table.known import known_tables
from c4table.io.treehash import FIELD, tree_hash

BLOCK = storage.DIRECT_ALIGN


def direct_works(d) -> bool:
    """Whether the file system of ``d`` takes an aligned ``O_DIRECT`` write (CI runs on a file
    system nobody chose: where it does not, the tests below check the fallback instead)."""
    p = d / "probe"
    p.write_bytes(bytes(BLOCK))
    buf = storage.aligned_buffers("probe", 1, BLOCK)[0]
    try:
        fd = os.open(p, os.O_WRONLY | os.O_DIRECT)
    except (OSError, AttributeError):
        return False
    try:
        return os.pwrite(fd, buf, 0) == BLOCK
    except OSError:
        return False
    finally:
        os.close(fd)
        p.unlink()


@pytest.fixture
def small_buffers(monkeypatch):
    """Buffers of three blocks, so that a few KB pass through many flushes and buffer swaps."""
    monkeypatch.setattr(storage, "DIRECT_BUFFER", 3 * BLOCK)


def refuse_direct_open(monkeypatch):
    real = os.open

    def fake(path, flags, *a, **k):
        if flags & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(path, flags, *a, **k)
    monkeypatch.setattr(os, "open", fake)


def refuse_direct_writes(monkeypatch):
    """The open succeeds, every write on an ``O_DIRECT`` descriptor fails with EINVAL (as on
    file systems that check the alignment only when writing)."""
    import fcntl
    real = os.pwrite

    def fake(fd, data, pos):
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, data, pos)
    monkeypatch.setattr(os, "pwrite", fake)


def use_mode(monkeypatch, mode):
    """Set up one of the ways the bytes may go: "direct" (O_DIRECT where the file system takes
    it), "off" (switched off by the environment), "refused-open", "refused-write"."""
    if mode == "off":
        monkeypatch.setenv(DIRECT_ENV, "off")
    elif mode == "refused-open":
        refuse_direct_open(monkeypatch)
    elif mode == "refused-write":
        refuse_direct_writes(monkeypatch)
    else:
        assert mode == "direct"


def asked() -> bool:
    """Whether the settings ask for ``O_DIRECT``, read as a storage reads them when it opens
    (the writer and reader do what their caller says)."""
    return IOOptions.from_config().direct


def test_direct_io_takes_what_the_file_system_and_the_settings_take(tmp_path, monkeypatch):
    """True where an aligned ``O_DIRECT`` write works (checked apart, :func:`direct_works`);
    False for a missing file, where the open is refused, and on a storage whose settings
    switch it off."""
    from c4table.io.storage import open_storage
    (tmp_path / "f").write_bytes(bytes(BLOCK))
    assert storage.direct_io_takes(tmp_path / "missing") is False
    if direct_works(tmp_path):
        assert storage.direct_io_takes(tmp_path / "f") is True
        assert open_storage(tmp_path, IOOptions(direct=True)).direct_io_takes("f") is True
    assert open_storage(tmp_path, IOOptions(direct=False)).direct_io_takes("f") is False
    monkeypatch.setenv(DIRECT_ENV, "off")
    assert open_storage(tmp_path, IOOptions.from_config()).direct_io_takes("f") is False
    refuse_direct_open(monkeypatch)
    assert storage.direct_io_takes(tmp_path / "f") is False


# Ranges of a file, as the merge's range tasks cut it: mid-block boundaries, ranges smaller
# than a block (in the middle, at the start and at the end), one of several blocks, one empty.
SIZES = [3, 5000, 17, 4093, 1, 0, 3 * BLOCK + 7, 12345, 2 * BLOCK, 100, 9]


@pytest.mark.parametrize("mode", ["direct", "off", "refused-open", "refused-write"])
def test_positional_writer_places_every_byte(tmp_path, small_buffers, monkeypatch, mode):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, sum(SIZES), dtype=np.uint8).tobytes()
    path = tmp_path / "t"
    path.write_bytes(bytes(len(data)))   # the truncated file the tasks fill
    can = direct_works(tmp_path)
    use_mode(monkeypatch, mode)
    starts = np.concatenate([[0], np.cumsum(SIZES)]).tolist()
    direct_bytes = 0
    for r in [5, 0, 10, 2, 7, 1, 9, 3, 8, 4, 6]:   # out of order, as the tasks finish
        lo, hi = starts[r], starts[r + 1]
        with PositionalWriter(path, lo, asked()) as w:
            at = lo
            while at < hi:   # pieces of odd sizes, as the words of a range come
                space = w.space(7)
                take = min(hi - at, len(space), 1 + (at * 7919) % 5000)
                space[:take] = data[at: at + take]
                w.commit(take)
                at += take
        assert w.written == hi - lo
        direct_bytes += w.direct_bytes
    assert path.read_bytes() == data
    if mode == "direct" and can:
        # the whole blocks went around the page cache, the partial ones through it
        assert 0 < direct_bytes < len(data) and direct_bytes % BLOCK == 0
    else:
        assert direct_bytes == 0


def test_positional_writer_waits_for_its_writes_on_error(tmp_path, small_buffers):
    path = tmp_path / "t"
    path.write_bytes(bytes(10 * BLOCK))
    with pytest.raises(RuntimeError):
        with PositionalWriter(path, 100) as w:
            for _ in range(5):
                space = w.space(BLOCK)
                space[:BLOCK] = b"\x01" * BLOCK
                w.commit(BLOCK)
            raise RuntimeError("a task failed")
    assert all(f is None for f in w.busy) and w.closed
    # its buffers are lent again: a later writer is whole
    with PositionalWriter(path, 0) as w2:
        for _ in range(10):
            w2.space(BLOCK)[:BLOCK] = b"\x02" * BLOCK
            w2.commit(BLOCK)
    assert path.read_bytes() == b"\x02" * (10 * BLOCK)


@pytest.mark.parametrize("mode", ["direct", "off", "refused-open"])
def test_read_span_reads_exactly_the_span(tmp_path, small_buffers, monkeypatch, mode):
    rng = np.random.default_rng(6)
    data = rng.integers(0, 256, 11 * BLOCK + 123, dtype=np.uint8).tobytes()
    path = tmp_path / "t"
    with open(path, "wb") as f:   # left dirty in the page cache: a direct read must see it
        f.write(data)
    use_mode(monkeypatch, mode)
    n = len(data)
    spans = [(0, n), (1, 2), (BLOCK - 1, BLOCK + 1), (5000, 5000), (7, 3 * BLOCK),
             (3 * BLOCK, 9 * BLOCK + 5), (n - 10, n), (n - 10, n + 5000)]   # the last: past EOF
    for lo, hi in spans:
        views = list(bytes(v) for v in read_span(path, lo, hi, asked()))
        assert b"".join(views) == data[lo:hi], (lo, hi)
    # stopped early (a generator closed after one piece): the reads in flight are waited for
    g = read_span(path, 0, n, asked())
    assert bytes(next(g)) == data[: 3 * BLOCK]
    g.close()
    assert b"".join(bytes(v) for v in read_span(path, 0, n, asked())) == data


def table_sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("board,mode", [("4x4", "direct"), ("4x4", "off"), ("5x4", "direct"),
                                        ("5x4", "refused-write"), ("4x5", "refused-open")])
@pytest.mark.slow
def test_tables_byte_identical_through_every_path(tmp_path, small_buffers, monkeypatch, board, mode):
    """A 2 MiB budget cuts the merge into many ranges (boundaries in mid-block, some ranges
    barely a few blocks), the small buffers make every range flush many times; the table must
    be the known one whichever way its bytes went, and the manifest's hashes those of the file:
    the tree hash the range tasks combined, and the sha256 and md5 the driver read back (both
    asked for, C4TABLE_TABLE_SHA256 and C4TABLE_TABLE_MD5)."""
    use_mode(monkeypatch, mode)
    monkeypatch.setenv("C4TABLE_TABLE_SHA256", "1")
    monkeypatch.setenv("C4TABLE_TABLE_MD5", "1")
    path = build_table(board, tmp_path, memory="2MiB", workers=2, quiet=True)
    m = json.loads((tmp_path / "manifest.json").read_text())
    data = path.read_bytes()
    known = known_tables()[board]
    assert tree_hash(data) == m["table"][FIELD] == known[FIELD]
    assert hashlib.sha256(data).hexdigest() == m["table"]["sha256"] == known["sha256"]
    assert hashlib.md5(data).hexdigest() == m["table"]["md5"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["stages"]["merge"]["tasks"] >= 2   # ranges meeting in mid-block


def test_writers_in_threads_of_one_process_do_not_share_buffers(tmp_path, small_buffers):
    """Range tasks may run at once in threads of one process (a dask worker of several
    threads): each thread has its own buffers."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(8)
    n = 40 * BLOCK + 333
    data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
    path = tmp_path / "t"
    path.write_bytes(bytes(n))
    cuts = [0, 5 * BLOCK + 1, 17 * BLOCK - 9, 30 * BLOCK + 100, n]

    def fill(r):
        lo, hi = cuts[r], cuts[r + 1]
        with PositionalWriter(path, lo) as w:
            at = lo
            while at < hi:
                space = w.space(1)
                take = min(hi - at, len(space), 1000)
                space[:take] = data[at: at + take]
                w.commit(take)
                at += take
        return w.written

    with ThreadPoolExecutor(4) as ex:
        assert sum(ex.map(fill, range(4))) == n
    assert path.read_bytes() == data
