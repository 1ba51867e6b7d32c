"""The ``.c4z`` container: a table compressed in blocks that can still be probed in place,
locally or over ranged reads from an object store or a web server.

Layout (all integers little-endian)::

    "C4ZTBL01"                                   8-byte magic
    key dictionary                               zstd dictionary of the key frames (optional)
    symbol dictionary                            zstd dictionary of the symbol frames (optional)
    block 0 .. block n-1                         two or more zstd frames each (below)
    index                                        zstd frame: first_key u64[n], offset u64[n+1],
                                                 xxh64 u64[n] (of each compressed block)
    header                                       JSON: board, k, root, entries, raw bytes, the
                                                 raw file's sha256 and md5, block size, ...
    trailer (40 bytes)                           index offset, index length, header length,
                                                 xxh64(header), "C4ZEND01"

The header sits at the end so that a 16 TB table is written in one pass (its hashes are only
known at the end); a reader fetches the last :data:`TAIL_BYTES` bytes once, which for tables
up to a few G entries also holds the whole index.

**Blocks** (format version 3). Block ``i`` holds entries ``i*B .. min((i+1)*B, N)`` (``B`` =
``block_entries``, 65,536 by default), in **parts** of ``part_entries`` (header; 9/16 of the
block by default: 36,864 and 28,672). A block is a small head (the count of parts, u16; the
lengths of the two frames, u32; where each part but the last ends in the key stream, u32;
the first key of each part but the first, u64), then two zstd frames (level 19 by default,
content checksums on, each with the file's trained dictionary if it has one): the key
stream (varint deltas, part by part; each part's first key is in the index or the head) and
the outcome symbol stream (outcome bytes mapped through a permutation chosen by the entry's
ply); see :mod:`c4table.c4zcodec`. The frames' zstd blocks end where the parts end
(:func:`zstd_frame`), so a single probe of a key in part 0 decodes both frames only up to
the end of part 0 (9/16 of the work) and scans the keys from the part's start (numba).
Files of format versions 1 and 2 are refused with one line saying to compress the table
again (measurements: ``tools/bench_lookup.py``, README).

**Integrity.** The trailer checks the header (xxh64), the header checks the index (xxh64),
the index checks every compressed block (xxh64) and zstd checks every decoded payload; a
decoded block must also fit its neighbours' first keys. Any failure is a
:class:`~c4table.errors.CorruptDataError` naming the block (or header, index, trailer):
never a wrong answer.

**Resumable compression.** :func:`compress_table` writes ``OUT.part`` (blocks in order) and
``OUT.part.idx`` (24 bytes per finished block) and, every :data:`CHECKPOINT_SECONDS`,
fsyncs both and records the count of finished blocks in ``OUT.part.json``. A rerun with the
same input and settings truncates both files to the checkpoint, re-reads (only hashes) the
input up to there, and continues; at the end the index, header and trailer are appended,
fsync'ed, and ``OUT.part`` is renamed to ``OUT``. :func:`decompress_table` resumes the same
way from the length of ``OUT.part`` (whole blocks are kept, the prefix is re-hashed).

>>> compress_table("tables/4x4/connect4_4x4.dat", quiet=True).name
'connect4_4x4.c4z'
>>> with open_c4z("tables/5x4/connect4_5x4.c4z") as z:
...     z.outcome_byte(0)
20
"""
from __future__ import annotations

import bisect
import json
import os
import struct
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np
import xxhash
import zstandard

from c4table.board import Board
from c4table.c4zcodec import BlockCodec, _decode, _rows
from c4table.errors import (ClosedTableError, CorruptDataError, MissingTableError,
                            PositionNotFoundError, TableError)
from c4table.units import format_seconds, format_size

MAGIC = b"C4ZTBL01"
END_MAGIC = b"C4ZEND01"
TRAILER = struct.Struct("<QQQQ8s")      # index offset, index length, header length, xxh64(header)
FORMAT_VERSION = 3
TRANSFORM = "varint-plysym-v3"
DEFAULT_BLOCK_ENTRIES = 1 << 16
ARCHIVE_BLOCK_ENTRIES = 1 << 24         # compress --archive: smaller files, probes in tens of ms
DEFAULT_LEVEL = 19
TAIL_BYTES = 1 << 16                    # bytes a reader fetches from the end of the file at open
CACHE_BLOCKS = 64                       # decoded blocks kept per open file (LRU) ...
CACHE_ENTRIES = 64 << 16                # ... and at most this many entries (big archive blocks)
PART_SHARE = (9, 16)                    # a block's first part: 9/16 of its entries (default)
KEY_DICT_BYTES = 112640                 # trained zstd dictionary of the key frames (at most)
SYM_DICT_BYTES = 32768                  # trained zstd dictionary of the symbol frames (at most)
KEY_DICT_SHARE = 500                    # ... and at most 1/500 of the table (key dictionary)
SYM_DICT_SHARE = 5000                   # ... and at most 1/5000 (symbol dictionary)
DICT_SAMPLES = 40                       # blocks the dictionaries are trained on
CHECKPOINT_SECONDS = 30.0
PROGRESS_EVERY = 5.0
IDX_RECORD = struct.Struct("<QQQ")      # first key, end offset, xxh64 (the .part.idx side file)


def is_c4z(path) -> bool:
    """True if ``path`` (a path or URI) names a ``.c4z`` file."""
    return str(path).lower().endswith(".c4z")


def default_c4z_name(dat: str | os.PathLike) -> Path:
    """``connect4_5x5.dat`` -> ``connect4_5x5.c4z`` (same directory)."""
    p = Path(dat)
    return p.with_suffix(".c4z") if p.suffix == ".dat" else p.with_name(p.name + ".c4z")


# ----------------------------------------------------------------------- block codec
def keys_of_rows(rows: np.ndarray, key_bytes: int) -> np.ndarray:
    """uint64 keys of big-endian entry rows (n x entry_size bytes)."""
    buf = np.zeros((rows.shape[0], 8), np.uint8)
    buf[:, 8 - key_bytes:] = rows[:, :key_bytes]
    return buf.view(">u8").ravel().astype(np.uint64)


def encode_block(raw, board: Board, level: int = DEFAULT_LEVEL,
                 part_entries: int | None = None, key_dict: bytes | None = None,
                 sym_dict: bytes | None = None) -> tuple[int, bytes]:
    """``(first key, block bytes)`` of raw table bytes (whole entries, keys strictly
    increasing), in parts of ``part_entries`` entries (the last one fewer): a head (the
    number ``p`` of parts, u16; the lengths of the key frame and of the symbol frame, u32;
    the end of every part but the last in the decoded key stream, u32; the first key of
    every part but the first, u64), then the key frame and the symbol frame. Each frame is
    one zstd frame (with ``key_dict`` / ``sym_dict``) whose zstd blocks end where the parts
    end (:func:`zstd_frame`): the frame keeps its whole history, and a probe of a key of
    part 0 decodes the frames only up to the end of part 0.

    >>> first, block = encode_block(bytes([0, 0, 0, 16, 0, 0, 1, 0x4f]), Board.parse("4x4"), part_entries=1)
    >>> first, decode_block_bytes(block, Board.parse("4x4"), 2, first, part_entries=1)[1].tolist()
    (0, [16, 79])
    """
    E = board.entry_size
    K = E - 1
    rows = np.frombuffer(raw, np.uint8).reshape(-1, E)
    keys = keys_of_rows(rows, K)
    if keys.shape[0] > 1 and not (keys[1:] > keys[:-1]).all():
        raise TableError("keys are not strictly increasing (not a sorted table)")
    outs = np.ascontiguousarray(rows[:, K])
    n = keys.shape[0]
    part_entries = part_entries or default_part_entries(n)
    codec = _codec(board)
    kvs, sys_, firsts = [], [], []
    for o in range(0, n, part_entries):
        kv, sy = codec.encode(keys[o: o + part_entries], outs[o: o + part_entries])
        kvs.append(kv)
        sys_.append(sy)
        if o:
            firsts.append(int(keys[o]))
    ends = np.cumsum([len(k) for k in kvs]).tolist()
    kf = zstd_frame(_cctx(level, key_dict), kvs)
    sf = zstd_frame(_cctx(level, sym_dict), sys_)
    p = len(kvs)
    head = struct.pack(f"<HII{p - 1}I{p - 1}Q", p, len(kf), len(sf), *ends[:-1], *firsts)
    return int(keys[0]), head + kf + sf


def zstd_frame(cctx, pieces: list[bytes]) -> bytes:
    """One zstd frame of the concatenated ``pieces`` (content size and checksum written)
    whose zstd blocks end where each piece ends (a block flush: the frame keeps its match
    history across it, so a cut costs little; a streaming decoder that stops after a piece
    has decoded only the blocks up to it).

    >>> import zstandard
    >>> f = zstd_frame(zstandard.ZstdCompressor(), [b"abc" * 500, b"xyz" * 300])
    >>> zstandard.ZstdDecompressor().stream_reader(f).read(1500) == b"abc" * 500
    True
    """
    if len(pieces) == 1:
        return cctx.compress(pieces[0])
    o = cctx.compressobj(size=sum(len(x) for x in pieces))
    out = []
    for i, x in enumerate(pieces):
        out.append(o.compress(x))
        out.append(o.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK if i + 1 < len(pieces)
                           else zstandard.COMPRESSOBJ_FLUSH_FINISH))
    return b"".join(out)


def default_part_entries(block_entries: int) -> int:
    """Entries of a block's parts by default: 9/16 of the block (36,864 of 65,536), so that
    most single probes (9/16 of them) decode the first part only.

    >>> default_part_entries(65536)
    36864
    """
    return max(1, block_entries * PART_SHARE[0] // PART_SHARE[1])


def split_block(block: bytes) -> tuple[bytes, bytes, list[int], list[int]]:
    """The key frame, the symbol frame, the ends of the parts in the key stream (but the
    last) and the first keys of the parts (but the first) of a block; ValueError if the
    lengths do not fit."""
    if len(block) < 10:
        raise ValueError("shorter than its header")
    p, kl, sl = struct.unpack_from("<HII", block)
    hl = 10 + 12 * (p - 1)
    if p < 1 or len(block) < hl or hl + kl + sl != len(block):
        raise ValueError("frame lengths do not fit the block")
    ends = list(struct.unpack_from(f"<{p - 1}I", block, 10))
    firsts = list(struct.unpack_from(f"<{p - 1}Q", block, 10 + 4 * (p - 1)))
    return block[hl: hl + kl], block[hl + kl:], ends, firsts


def decode_block_bytes(block: bytes, board: Board, n: int, first: int,
                       key_dict: bytes | None = None, sym_dict: bytes | None = None,
                       part_entries: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keys (uint64) and outcome bytes of a block of ``n`` entries; ValueError or ZstdError
    if it does not decode to exactly that."""
    kf, sf, ends, firsts = split_block(block)
    part_entries = part_entries or default_part_entries(n)
    p = len(ends) + 1
    if p != -(-n // part_entries):
        raise ValueError(f"{p} parts for {n} entries")
    kv = np.frombuffer(_dctx(key_dict).decompress(kf), np.uint8)
    sy = np.frombuffer(_dctx(sym_dict).decompress(sf), np.uint8)
    if sy.shape[0] != n or not all(0 <= a <= b for a, b in zip([0] + ends, ends + [kv.shape[0]])):
        raise ValueError("the streams do not fit the parts")
    codec = _codec(board)
    keys = np.empty(n, np.uint64)
    outs = np.empty(n, np.int64)
    bounds = [0] + ends + [kv.shape[0]]
    for q in range(p):
        lo, hi = q * part_entries, min(n, (q + 1) * part_entries)
        if _decode(kv[bounds[q]: bounds[q + 1]], sy[lo:hi], np.uint64(firsts[q - 1] if q else first),
                   hi - lo, codec.base, codec.width, codec.heights, codec.inv,
                   keys[lo:hi], outs[lo:hi]) < 0:
            raise ValueError(f"the streams of part {q} do not hold {hi - lo} entries")
        if q and not keys[lo - 1] < keys[lo]:
            raise ValueError(f"part {q} starts before part {q - 1} ends")
    return keys, outs.astype(np.uint8)


_codecs: dict = {}


def _codec(board: Board) -> BlockCodec:
    c = _codecs.get(board)
    if c is None:
        c = _codecs[board] = BlockCodec(board)
    return c


def rows_of(keys: np.ndarray, outs: np.ndarray, entry_size: int) -> memoryview:
    """Raw table bytes (big-endian key, outcome byte) of keys and outcome bytes, as a buffer.

    >>> bytes(rows_of(np.array([0, 258], np.uint64), np.array([20, 147], np.uint8), 3))
    b'\\x00\\x00\\x14\\x01\\x02\\x93'
    """
    rows = np.empty(keys.shape[0] * entry_size, np.uint8)
    _rows(np.ascontiguousarray(keys, np.uint64), np.ascontiguousarray(outs, np.uint8),
          entry_size - 1, rows)
    return memoryview(rows)


_local = threading.local()


def _cctx(level: int, zdict: bytes | None = None):
    """This thread's zstd compressor for ``level`` and dictionary ``zdict``."""
    cache = getattr(_local, "cctx", None)
    if cache is None:
        cache = _local.cctx = {}
    key = (level, zdict)
    c = cache.get(key)
    if c is None:
        if len(cache) > 8:
            cache.clear()
        d = zstandard.ZstdCompressionDict(zdict) if zdict else None
        c = cache[key] = zstandard.ZstdCompressor(level=level, write_checksum=True, dict_data=d)
    return c


def train_dicts(src, board: Board, block_entries: int, samples: int | None = None,
                key_size: int | None = None, sym_size: int | None = None,
                ) -> tuple[bytes | None, bytes | None]:
    """zstd dictionaries ``(keys, symbols)`` for the key frames and the symbol frames of the
    table file ``src``, trained on the streams of ``samples`` blocks spread evenly over it
    (deterministic: same input, same dictionaries). The key dictionary is at most
    ``key_size`` bytes and 1/500 of the table file, the symbol one at most ``sym_size`` and
    1/5000 (it gains less: about 1.4% of the symbol frames on 5x5); None where that is under
    8 KiB or the table has fewer than 16 whole blocks, where a dictionary would cost more
    than it saves. ``key_size`` or ``sym_size`` 0: no such dictionary."""
    E = board.entry_size
    raw_bytes = os.path.getsize(src)
    nblocks = raw_bytes // E // block_entries   # whole blocks only
    samples = DICT_SAMPLES if samples is None else samples
    sizes = (min(KEY_DICT_BYTES if key_size is None else key_size, raw_bytes // KEY_DICT_SHARE),
             min(SYM_DICT_BYTES if sym_size is None else sym_size, raw_bytes // SYM_DICT_SHARE))
    if nblocks < 16 or max(sizes) < 8192:
        return None, None
    codec = _codec(board)
    data: tuple[list, list] = ([], [])
    with open(src, "rb") as f:
        for b in np.linspace(0, nblocks - 1, min(samples, nblocks)).astype(np.int64):
            raw = os.pread(f.fileno(), block_entries * E, int(b) * block_entries * E)
            rows = np.frombuffer(raw, np.uint8).reshape(-1, E)
            keys = keys_of_rows(rows, E - 1)
            for part, stream in zip(data, codec.encode(keys, rows[:, E - 1].copy())):
                part.append(stream)
    out = []
    for size, part in zip(sizes, data):
        try:
            out.append(zstandard.train_dictionary(size, part, k=2048, d=8, level=DEFAULT_LEVEL,
                                                  threads=1).as_bytes() if size >= 8192 else None)
        except zstandard.ZstdError:
            out.append(None)
    return out[0], out[1]


def train_key_dict(src, board: Board, block_entries: int, samples: int | None = None,
                   size: int | None = None) -> bytes | None:
    """The key dictionary of :func:`train_dicts` alone."""
    return train_dicts(src, board, block_entries, samples, size, 0)[0]


def _compress_block(raw, board: Board, level: int, key_dict, part_entries: int, sym_dict
                    ) -> tuple[int, bytes, int]:
    """Worker: ``(first key, compressed block, xxh64 of it)``."""
    first, comp = encode_block(raw, board, level, part_entries, key_dict, sym_dict)
    return first, comp, xxhash.xxh64_intdigest(comp)


_tuned = False


def tune_malloc() -> None:
    """Keep freed buffers mapped (glibc): otherwise every decoded block's fresh arrays
    page-fault their memory again, which made a 65,536-entry block decode 4-8x slower here
    (CPU time 0.9 ms instead of 0.11 ms). Sets glibc's mmap threshold to 64 MiB and its trim
    threshold to 256 MiB, once per process, for processes that read .c4z files."""
    global _tuned
    if _tuned:
        return
    _tuned = True
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 256 << 20)    # M_TRIM_THRESHOLD
        libc.mallopt(-3, 64 << 20)     # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


def _dctx(zdict: bytes | None = None):
    """This thread's zstd decompressor (for dictionary ``zdict``)."""
    cache = getattr(_local, "dctx", None)
    if cache is None:
        cache = _local.dctx = {}
    d = cache.get(zdict)
    if d is None:
        if len(cache) > 8:
            cache.clear()
        zd = zstandard.ZstdCompressionDict(zdict) if zdict else None
        d = cache[zdict] = zstandard.ZstdDecompressor(dict_data=zd)
    return d


# ----------------------------------------------------------------------- byte sources
class LocalSource:
    """A local file, memory-mapped: a block is a zero-copy view of the page cache (a ``pread``
    and its copy cost about as much as decoding a key stream); ``pread`` where mapping fails."""

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
            import mmap
            try:
                self._mm = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ)
                self._mv = memoryview(self._mm)
            except (OSError, ValueError):
                pass

    def read(self, offset: int, n: int) -> bytes:
        self.requests += 1
        return os.pread(self.fd, n, offset)

    def view(self, offset: int, n: int):
        """The bytes at ``offset`` as a zero-copy view (a ``read`` if the file is not mapped)."""
        if self._mv is None:
            return self.read(offset, n)
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
        import pyarrow as pa
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
        import urllib.error
        import urllib.request
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
    from c4table.pipeline.storage import is_url
    if is_url(s):
        return ArrowSource(s)
    return LocalSource(s[len("file://"):] if s.startswith("file://") else s)


def cache_dir() -> Path:
    """Where remote tables' block indexes are cached: ``$C4TABLE_CACHE``, else
    ``$XDG_CACHE_HOME/c4table``, else ``~/.cache/c4table``."""
    if os.environ.get("C4TABLE_CACHE"):
        return Path(os.environ["C4TABLE_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "c4table"


# ----------------------------------------------------------------------- reader
class C4zFile:
    """An open ``.c4z`` file: header, block index, and decoded blocks on demand (an LRU of
    :data:`CACHE_BLOCKS`). ``where`` is a path, ``http(s)://`` URL or ``pyarrow.fs`` URI.

    >>> with open_c4z("tables/5x4/connect4_5x4.c4z") as z:
    ...     z.header["entries"], z.blocks
    (1974174, 31)
    """

    def __init__(self, where, cache_index: bool | None = None):
        self.where = str(where)
        tune_malloc()
        self.src = open_source(where)
        try:
            self._open(cache_index)
        except BaseException:
            self.src.close()
            raise
        self._lru: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._slru: OrderedDict[int, tuple] = OrderedDict()   # decompressed streams (probes)
        self._lock = threading.Lock()
        self._first_list = None   # first keys as Python ints (bisect: no numpy call per probe)

    def _bad(self, what: str) -> CorruptDataError:
        return CorruptDataError(f"{self.where}: {what}")

    def _open(self, cache_index) -> None:
        size = self.src.size
        if size < len(MAGIC) + TRAILER.size:
            raise self._bad(f"{size} bytes: too short for a .c4z table (truncated?)")
        tail_n = min(size, TAIL_BYTES)
        tail = self.src.read(size - tail_n, tail_n)
        if len(tail) != tail_n:
            raise self._bad("short read at the end of the file (truncated?)")
        idx_off, idx_len, hdr_len, hdr_xxh, end = TRAILER.unpack(tail[-TRAILER.size:])
        if end != END_MAGIC:
            raise self._bad("no .c4z trailer at the end (truncated, or not a .c4z file)")
        hdr_off = size - TRAILER.size - hdr_len
        if hdr_off != idx_off + idx_len or idx_off < len(MAGIC) or hdr_len > size:
            raise self._bad("trailer damaged (header and index positions do not fit the file size)")
        if hdr_off < size - tail_n:   # a header longer than the tail: fetch it with the index
            more = self.src.read(idx_off, size - tail_n - idx_off)
            tail, tail_n = more + tail, tail_n + len(more)
        hdr = self._range(tail, size - tail_n, hdr_off, hdr_len)
        if xxhash.xxh64_intdigest(hdr) != hdr_xxh:
            raise self._bad("header damaged (checksum mismatch)")
        try:
            h = json.loads(hdr)
            self.header = h
            grid = h.get("grid")   # a 3D board (docs/FORMAT.md section 8)
            self.board = Board(int(h["width"]), int(h["height"]), int(h.get("k", 4)),
                               None if grid is None else (int(grid[0]), int(grid[1])))
            self.entries = int(h["entries"])
            self.block_entries = int(h["block_entries"])
            self._cache_blocks = max(1, min(CACHE_BLOCKS, CACHE_ENTRIES // self.block_entries))
            self.blocks = int(h["blocks"])
            self.entry_size = int(h["entry_size"])
            self.part_entries = int(h.get("part_entries", 0))
        except (ValueError, KeyError, TypeError) as e:
            raise self._bad(f"header unreadable ({e})") from None
        if h.get("format") == "c4z" and h.get("version") in (1, 2):
            raise TableError(f"{self.where}: a .c4z of format version {h['version']} (written by "
                             "an older c4table), no longer read: compress the table again")
        if h.get("format") != "c4z" or h.get("transform") != TRANSFORM:
            raise TableError(f"{self.where}: unsupported .c4z variant "
                             f"({h.get('format')}, {h.get('transform')}); upgrade c4table")
        if self.entry_size != self.board.entry_size or self.part_entries < 1 or \
                self.blocks != -(-self.entries // self.block_entries):
            raise self._bad("header inconsistent (entry size or block count)")
        comp = None
        cache = None
        remote = not isinstance(self.src, LocalSource)
        if cache_index is None:
            cache_index = remote
        if cache_index:
            cache = cache_dir() / f"{h['sha256']}-{hdr_xxh:016x}.idx"
            try:
                comp = cache.read_bytes()
            except OSError:
                comp = None
            if comp is not None and xxhash.xxh64_intdigest(comp) != h["index_xxh64"]:
                comp = None
        if comp is None:
            comp = self._range(tail, size - tail_n, idx_off, idx_len)
            if xxhash.xxh64_intdigest(comp) != h["index_xxh64"]:
                raise self._bad("block index damaged (checksum mismatch)")
            if cache is not None:
                try:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
                    tmp.write_bytes(comp)
                    os.replace(tmp, cache)
                except OSError:
                    pass   # a cache that cannot be written only costs a read next time
        try:
            raw = zstandard.ZstdDecompressor().decompress(comp)
        except zstandard.ZstdError as e:
            raise self._bad(f"block index damaged ({e})") from None
        nb = self.blocks
        if len(raw) != 8 * (3 * nb + 1):
            raise self._bad("block index damaged (wrong length)")
        a = np.frombuffer(raw, "<u8")
        self.first_keys = a[:nb].astype(np.uint64)
        self.offsets = a[nb: 2 * nb + 1].astype(np.uint64)
        self.checksums = a[2 * nb + 1:].astype(np.uint64)
        self.key_dict = self._dict(tail, size - tail_n, cache, "key_dict", len(MAGIC))
        self.sym_dict = self._dict(tail, size - tail_n, cache, "sym_dict",
                                   len(MAGIC) + len(self.key_dict or b""))
        if nb and (int(self.offsets[0]) != len(MAGIC) + len(self.key_dict or b"")
                   + len(self.sym_dict or b"")
                   or int(self.offsets[-1]) != idx_off
                   or not (self.offsets[1:] > self.offsets[:-1]).all()
                   or not (self.first_keys[1:] > self.first_keys[:-1]).all()):
            raise self._bad("block index damaged (offsets or first keys out of order)")
        self.data_end = idx_off

    def _dict(self, tail: bytes, tail0: int, cache, name: str, offset: int) -> bytes | None:
        """The zstd dictionary of the key frames (``name`` ``key_dict``: it follows the magic)
        or of the symbol frames (``sym_dict``: it follows the key dictionary); the header
        gives its length and xxh64. Read once and cached beside the index for remote tables."""
        what = "key" if name == "key_dict" else "symbol"
        kd = self.header.get(name)
        if not kd:
            return None
        try:
            n, x = int(kd["length"]), int(kd["xxh64"])
        except (KeyError, TypeError, ValueError) as e:
            raise self._bad(f"header unreadable ({name} {e})") from None
        data = None
        cfile = cache.with_suffix(".dict" if name == "key_dict" else ".sdict") \
            if cache is not None else None
        if cfile is not None:
            try:
                data = cfile.read_bytes()
            except OSError:
                data = None
        if data is None or xxhash.xxh64_intdigest(data) != x:
            data = self._range(tail, tail0, offset, n)
            if xxhash.xxh64_intdigest(data) != x:
                raise self._bad(f"{what} dictionary damaged (checksum mismatch)")
            if cfile is not None:
                try:
                    tmp = cfile.with_name(f"{cfile.name}.{os.getpid()}.tmp")
                    tmp.write_bytes(data)
                    os.replace(tmp, cfile)
                except OSError:
                    pass
        return data

    def _range(self, tail: bytes, tail0: int, off: int, n: int) -> bytes:
        if off >= tail0:
            return tail[off - tail0: off - tail0 + n]
        data = self.src.read(off, n)
        if len(data) != n:
            raise self._bad("short read (truncated?)")
        return data

    # ------------------------------------------------------------- blocks
    def block_rows(self, i: int) -> int:
        return min(self.block_entries, self.entries - i * self.block_entries)

    def read_block(self, i: int) -> bytes:
        """The compressed bytes of block ``i``, checked against the index (one read)."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        comp = self.src.view(lo, hi - lo) if hasattr(self.src, "view") else self.src.read(lo, hi - lo)
        if len(comp) != hi - lo:
            raise self._bad(f"block {i} (bytes {lo:,}..{hi:,}): short read (truncated file)")
        if xxhash.xxh64_intdigest(comp) != int(self.checksums[i]):
            raise self._bad(f"block {i} (bytes {lo:,}..{hi:,}): checksum mismatch (damaged block)")
        return comp

    def decode_block(self, i: int, comp: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of block ``i`` from its compressed bytes, checked."""
        n = self.block_rows(i)
        try:
            keys, outs = decode_block_bytes(comp, self.board, n, int(self.first_keys[i]),
                                            self.key_dict, self.sym_dict, self.part_entries)
        except (zstandard.ZstdError, ValueError) as e:
            raise self._bad(f"block {i}: cannot be decoded ({e}); damaged block") from None
        if i + 1 < self.blocks and not keys[-1] < self.first_keys[i + 1]:
            raise self._bad(f"block {i}: keys run past the next block's first key (damaged block)")
        return keys, outs

    def block(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of block ``i`` (cached)."""
        with self._lock:
            hit = self._lru.get(i)
            if hit is not None:
                self._lru.move_to_end(i)
                return hit
        got = self.decode_block(i, self.read_block(i))
        with self._lock:
            self._lru[i] = got
            while len(self._lru) > self._cache_blocks:
                self._lru.popitem(last=False)
        return got

    def iter_blocks(self, start: int = 0, stop: int | None = None, threads: int = 2,
                    raw: bool = False) -> Iterator[tuple]:
        """``(i, keys, outcome bytes)`` of blocks ``start..stop`` in order, read and decoded
        ahead on ``threads`` threads (bounded: at most ``2 * threads`` blocks in flight);
        ``(i, raw table bytes)`` with ``raw`` (made in the threads too: numba kernels and
        zstd release the GIL)."""
        stop = self.blocks if stop is None else stop

        def job(i):
            k, o = self.decode_block(i, self.read_block(i))
            if raw:
                return i, rows_of(k, o, self.entry_size)
            return i, k, o
        if threads <= 1:
            for i in range(start, stop):
                yield job(i)
            return
        with ThreadPoolExecutor(threads) as pool:
            pending = []
            nxt = start
            while nxt < stop or pending:
                while nxt < stop and len(pending) < 2 * threads:
                    pending.append(pool.submit(job, nxt))
                    nxt += 1
                yield pending.pop(0).result()

    # ------------------------------------------------------------- probes
    def block_of(self, key: int) -> int:
        """The block that holds ``key`` if any block does (-1: below the first key)."""
        fl = self._first_list
        if fl is None:
            fl = self._first_list = self.first_keys.tolist()
        return bisect.bisect_right(fl, key) - 1

    def outcome_byte(self, key: int) -> int:
        """Outcome byte of ``key``; :class:`PositionNotFoundError` if absent."""
        i = self.block_of(key) if 0 <= key < 1 << 64 else -1
        if i >= 0:
            with self._lock:
                hit = self._lru.get(i)
            if hit is not None:
                keys, outs = hit
                j = int(np.searchsorted(keys, np.uint64(key)))
                if j < keys.shape[0] and int(keys[j]) == key:
                    return int(outs[j])
            else:
                b = self._probe_block(i, key)
                if b >= 0:
                    return b
        raise PositionNotFoundError(
            f"{self.where}: key {key} is not in the table (incomplete table, or not board {self.board})")

    def _probe_block(self, i: int, key: int) -> int:
        """Outcome byte of ``key`` in block ``i`` or -1, decoding only what it needs: the
        block's part that can hold ``key`` (by the first keys in the block's head), the key
        frame up to the end of that part (a streaming decoder that stops there), scanned from
        the part's start up to ``key`` by a numba kernel, then, if the key is there, the
        symbol frame up to the end of the part. The decoded prefixes stay in a small LRU of
        their own (a later probe decodes again only if it needs more)."""
        n = self.block_rows(i)
        P = self.part_entries
        codec = _codec(self.board)
        with self._lock:
            got = self._slru.get(i)
            if got is not None:
                self._slru.move_to_end(i)
        try:
            if got is None:
                kf, sf, ends, firsts = split_block(self.read_block(i))
                if len(ends) + 1 != -(-n // P):
                    raise ValueError(f"{len(ends) + 1} parts for {n} entries")
                total = zstandard.frame_content_size(kf)
                if total < 0 or ends and not 0 <= ends[0] <= ends[-1] <= total:
                    raise ValueError("the key frame does not fit the parts")
                #     key frame, symbol frame, part ends, part first keys, decoded prefixes
                got = [kf, sf, [0] + ends + [total], [int(self.first_keys[i])] + firsts, b"", b""]
                with self._lock:
                    self._slru[i] = got
                    while len(self._slru) > self._cache_blocks:
                        self._slru.popitem(last=False)
            kf, sf, bounds, firsts = got[:4]
            q = bisect.bisect_right(firsts, key) - 1
            if q < 0:
                return -1
            lo, hi = q * P, min(n, (q + 1) * P)
            end, total = bounds[q + 1], bounds[-1]
            # A part but the last: decode up to one byte before its end (zstd, once a block's
            # output is all delivered, decodes the next block ahead); that last byte is needed
            # only if the key is the part's last entry (the scan then runs out: decode all).
            kv = self._decoded(got, 4, kf, self.key_dict, end - 1 if end < total else total, total)
            try:
                j = codec.find(memoryview(kv)[bounds[q]: min(end, len(kv))], firsts[q], hi - lo, key)
            except ValueError:
                if len(kv) >= end:
                    raise
                kv = self._decoded(got, 4, kf, self.key_dict, total, total)
                j = codec.find(memoryview(kv)[bounds[q]: end], firsts[q], hi - lo, key)
            if j < 0:
                return -1
            sy = self._decoded(got, 5, sf, self.sym_dict,
                               hi - 1 if lo + j < hi - 1 and hi < n else n, n)
            return codec.outcome(key, sy[lo + j])
        except (zstandard.ZstdError, ValueError) as e:
            with self._lock:
                self._slru.pop(i, None)
            raise self._bad(f"block {i}: cannot be decoded ({e}); damaged block") from None

    @staticmethod
    def _decoded(got: list, slot: int, frame, zdict, need: int, total: int) -> bytes:
        """The decoded prefix ``got[slot]`` of ``frame`` (``total`` bytes decoded), made at
        least ``need`` bytes long: a streaming decoder that stops there, or one call for the
        whole frame."""
        buf = got[slot]
        if len(buf) >= need:
            return buf
        d = _dctx(zdict)
        buf = d.decompress(frame) if need >= total else d.stream_reader(frame).read(need)
        if len(buf) != min(need, total) or need >= total and len(buf) != total:
            raise ValueError(f"a stream ends early ({len(buf)} of {min(need, total)} bytes)")
        got[slot] = buf
        return buf

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        """Outcome bytes of many keys (any order): each needed block is read and decoded once.
        Missing keys raise :class:`PositionNotFoundError`, or get ``default`` (int16 result)."""
        q = np.asarray(keys, dtype=np.uint64).ravel()
        out = np.full(q.shape[0], -1, np.int16)
        if q.size == 0:
            return out if default is not None else out.astype(np.uint8)
        order = np.argsort(q, kind="stable")
        sq = q[order]
        blk = np.searchsorted(self.first_keys, sq, "right").astype(np.int64) - 1
        cuts = np.flatnonzero(np.diff(blk)) + 1
        res = np.full(sq.shape[0], -1, np.int16)
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, sq.shape[0]]):
            i = int(blk[lo])
            if i < 0:
                continue
            bk, bo = self.block(i)
            j = np.searchsorted(bk, sq[lo:hi])
            j = np.minimum(j, bk.shape[0] - 1)
            hit = bk[j] == sq[lo:hi]
            res[lo:hi] = np.where(hit, bo[j].astype(np.int16), -1)
        out[order] = res
        return _finish_probe(out, q, default, self.where, self.board)

    def clear_cache(self) -> None:
        """Forget every decoded block (benchmarks measure probes without the LRU)."""
        with self._lock:
            self._lru.clear()
            self._slru.clear()

    def close(self) -> None:
        self.src.close()
        self.clear_cache()

    def __enter__(self) -> "C4zFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _finish_probe(out: np.ndarray, q: np.ndarray, default, where, board) -> np.ndarray:
    """Raise for the first missing key (``default`` None) or fill missing keys with it."""
    miss = out < 0
    if default is None:
        if miss.any():
            k = int(q[np.flatnonzero(miss)[0]])
            raise PositionNotFoundError(f"{where}: key {k} is not in the table (incomplete table, "
                                        f"or not board {board}); {int(miss.sum())} key(s) missing")
        return out.astype(np.uint8)
    out[miss] = default
    return out


def open_c4z(where, cache_index: bool | None = None) -> C4zFile:
    """Open a ``.c4z`` file (path or URI); see :class:`C4zFile`."""
    return C4zFile(where, cache_index)


class RawStream:
    """The original table's bytes of a ``.c4z`` as a file-like ``read(n)`` stream (blocks
    decoded ahead on two threads), e.g. for hashing: ``verify`` reads a ``.c4z`` with it."""

    def __init__(self, z: C4zFile, threads: int = 2):
        self._it = z.iter_blocks(threads=threads, raw=True)
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        parts, have = [self._buf], len(self._buf)
        while n < 0 or have < n:
            nxt = next(self._it, None)
            if nxt is None:
                break
            b = bytes(nxt[1])
            parts.append(b)
            have += len(b)
        data = b"".join(parts)
        if n < 0:
            self._buf = b""
            return data
        self._buf = data[n:]
        return data[:n]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._it.close()


# ----------------------------------------------------------------------- the table view
from c4table.table import ENTRY_DTYPE, Table  # noqa: E402  (table.py imports this module lazily)


class NotMappedError(TableError, NotImplementedError):
    """Raw memory-mapped access asked of a table that has none (a ``.c4z``)."""


class C4zTable(Table):
    """A :class:`~c4table.table.Table` whose entries come from a ``.c4z`` (local or remote):
    ``Table("t.c4z")`` and ``open_table("s3://b/t.c4z")`` give one. Probes decode one block
    each (cached); :meth:`iter_entries` streams the blocks."""

    def __init__(self, path, board: str | Board | None = None):
        self.uri = str(path)
        self.path = Path(self.uri)
        self._z = open_c4z(self.uri)
        self.board = self._z.board
        if board is not None and Board.parse(board) != self.board:
            self._z.close()
            raise TableError(f"{self.uri}: the table is for board {self.board}, not {Board.parse(board)}")
        self.entry_size = self.board.entry_size
        self.key_bytes = self.board.key_bytes
        self.entries = self._z.entries
        self._mm = None
        self._file = None
        self.build = None   # no build directory is read for a .c4z: its header says what it is
        from c4table.root import root_of   # a rooted table: the root its header records
        h = self._z.header
        self.root = root_of(self.board, h.get("file", ""),
                            {"root": h["root"]} if isinstance(h.get("root"), dict) else None)

    @property
    def c4z(self) -> C4zFile:
        if self._z is None:
            raise ClosedTableError(f"{self.uri}: the table is closed (open it again with open_table)")
        return self._z

    def _ensure_open(self) -> None:
        self.c4z

    def key_at(self, i: int) -> int:
        b, j = divmod(i, self.c4z.block_entries)
        return int(self.c4z.block(b)[0][j])

    def outcome_byte(self, key: int) -> int:
        return self.c4z.outcome_byte(key)

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        return self.c4z.probe_keys(keys, default)

    def entries_array(self) -> np.ndarray:
        raise NotMappedError(f"{self.uri}: a .c4z table is not memory-mapped; use iter_entries() "
                             "or `c4table decompress`")

    def iter_entries(self, chunk_entries: int = 1 << 20, start: int = 0,
                     stop: int | None = None) -> Iterator[np.ndarray]:
        stop = self.entries if stop is None else min(stop, self.entries)
        start = max(start, 0)
        if start >= stop:
            return
        B = self.c4z.block_entries
        pend: list[np.ndarray] = []
        have = 0
        for i, keys, outs in self.c4z.iter_blocks(start // B, -(-stop // B)):
            lo, hi = max(start - i * B, 0), min(stop - i * B, keys.shape[0])
            a = np.empty(hi - lo, ENTRY_DTYPE)
            a["key"], a["outcome"] = keys[lo:hi], outs[lo:hi]
            pend.append(a)
            have += a.shape[0]
            while have >= chunk_entries:
                allp = np.concatenate(pend)
                yield allp[:chunk_entries]
                pend, have = [allp[chunk_entries:]], have - chunk_entries
        if have:
            yield np.concatenate(pend)

    def close(self) -> None:
        if self._z is not None:
            self._z.close()
            self._z = None

    def __repr__(self) -> str:
        return f"C4zTable({self.uri!r}, board={self.board}, entries={self.entries})"


# ----------------------------------------------------------------------- compress
def _say(quiet: bool, stream, text: str) -> None:
    if not quiet:
        print(text, file=stream or sys.stderr, flush=True)


def _fsync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


def compress_table(src: str | os.PathLike, out: str | os.PathLike | None = None, *,
                   board: str | Board | None = None, level: int = DEFAULT_LEVEL,
                   block_entries: int = DEFAULT_BLOCK_ENTRIES, threads: int | None = None,
                   quiet: bool = False, stream=None, hashes: dict | None = None,
                   root: str | None = None, part_entries: int | None = None,
                   key_dict: bool = True, sym_dict: bool = True) -> Path:
    """Compress the table file ``src`` into ``out`` (default: ``src`` with ``.c4z``), streaming,
    on ``threads`` threads (default: all cores), resuming an interrupted run (module
    docstring). ``hashes`` (``sha256``, ``md5`` from a manifest), when given, must equal the
    hashes computed on the way. ``part_entries``: the entries of a block's first part (and
    of every further part; default :func:`default_part_entries`), which a single probe
    decodes alone when it holds the key;
    ``key_dict=False`` / ``sym_dict=False`` skip the trained dictionaries. Returns ``out``.

    >>> compress_table("tables/4x4/connect4_4x4.dat", "t44.c4z", quiet=True)
    PosixPath('t44.c4z')
    """
    from c4table.table import board_of_table
    from c4table.verify import Hashes
    src = Path(src)
    if not src.is_file():
        raise MissingTableError(f"{src}: no such table file")
    out = Path(out) if out is not None else default_c4z_name(src)
    if out.resolve() == src.resolve():
        raise TableError(f"{out}: the output would overwrite the input")
    b = board_of_table(src, board)
    E = b.entry_size
    size = src.stat().st_size
    if size == 0 or size % E:
        raise TableError(f"{src}: size {size:,} is not a positive multiple of the {E}-byte entry of "
                         f"board {b} (truncated or wrong board?)")
    if not 1 <= level <= 22:
        raise ValueError("zstd level must be 1..22")
    part_entries = part_entries or default_part_entries(block_entries)
    if block_entries < 2 or part_entries < 1:
        raise ValueError("block_entries must be at least 2, part_entries at least 1")
    threads = threads or os.cpu_count() or 1
    tune_malloc()
    entries = size // E
    nblocks = -(-entries // block_entries)
    part, idxf, ckpt = (out.with_name(out.name + s) for s in (".part", ".part.idx", ".part.json"))
    settings = {"src": str(src.resolve()), "bytes": size, "mtime_ns": src.stat().st_mtime_ns,
                "level": level, "block_entries": block_entries, "board": b.name,
                "part_entries": part_entries, "key_dict": key_dict,
                "sym_dict": sym_dict, "version": FORMAT_VERSION}
    done = 0
    if ckpt.exists() and part.exists() and idxf.exists():
        try:
            state = json.loads(ckpt.read_text())
            if state["settings"] == settings and part.stat().st_size >= state["part_bytes"] and \
                    idxf.stat().st_size >= state["blocks"] * IDX_RECORD.size:
                done = int(state["blocks"])
                part_bytes = int(state["part_bytes"])
        except (ValueError, KeyError, TypeError, OSError):
            done = 0
    h = Hashes()
    stream = stream or sys.stderr
    t0 = last = time.perf_counter()
    chunk = block_entries * E
    if done:   # the dictionary the first run trained, from the part file
        kd_len = int(state.get("key_dict_bytes", 0))
        sd_len = int(state.get("sym_dict_bytes", 0))
        with open(part, "rb") as f:
            f.seek(len(MAGIC))
            key_dict = f.read(kd_len) or None
            sym_dict = f.read(sd_len) or None
    else:
        key_dict, sym_dict = train_dicts(src, b, block_entries,
                                         key_size=KEY_DICT_BYTES if key_dict else 0,
                                         sym_size=SYM_DICT_BYTES if sym_dict else 0)
    dicts_len = len(key_dict or b"") + len(sym_dict or b"")
    with open(src, "rb") as fin:
        if done:
            _say(quiet, stream, f"[compress] resuming {out.name} at block {done:,} of {nblocks:,}; "
                                f"re-hashing the first {format_size(done * chunk)} of the input")
            for _ in range(done):
                h.update(fin.read(chunk))
            fpart = open(part, "r+b")
            fpart.truncate(part_bytes)
            fpart.seek(part_bytes)
            fidx = open(idxf, "r+b")
            fidx.truncate(done * IDX_RECORD.size)
            fidx.seek(done * IDX_RECORD.size)
        else:
            fpart = open(part, "wb")
            fpart.write(MAGIC)
            fpart.write(key_dict or b"")
            fpart.write(sym_dict or b"")
            part_bytes = len(MAGIC) + dicts_len
            fidx = open(idxf, "wb")
        last_ckpt = time.perf_counter()
        prev_last_key = -1
        if done:   # the last key of the input before this point, for the order check
            fin_pos = fin.tell()
            prev = os.pread(fin.fileno(), E, fin_pos - E)
            prev_last_key = int.from_bytes(prev[:E - 1], "big")
        with fpart, fidx, ThreadPoolExecutor(threads) as pool:
            pending: list = []
            i = done

            def drain_one():
                nonlocal part_bytes, prev_last_key, i
                fut, raw_first, last_key = pending.pop(0)
                try:
                    first, comp, x = fut.result()
                except TableError as e:
                    raise TableError(f"{src}: block {i}: {e}") from None
                if first <= prev_last_key:
                    raise TableError(f"{src}: keys not strictly increasing at block {i} "
                                     "(not a sorted table)")
                prev_last_key = last_key
                fpart.write(comp)
                part_bytes += len(comp)
                fidx.write(IDX_RECORD.pack(first, part_bytes, x))
                i += 1

            for bi in range(done, nblocks):
                raw = fin.read(chunk)
                h.update(raw)
                last_key = int.from_bytes(raw[-E:-1], "big")
                pending.append((pool.submit(_compress_block, raw, b, level, key_dict, part_entries,
                                            sym_dict),
                                None, last_key))
                while len(pending) > 2 * threads:
                    drain_one()
                now = time.perf_counter()
                if now - last_ckpt >= CHECKPOINT_SECONDS:
                    _checkpoint(fpart, fidx, ckpt, settings, i, part_bytes, len(key_dict or b""),
                                len(sym_dict or b""))
                    last_ckpt = now
                if not quiet and now - last >= PROGRESS_EVERY:
                    last = now
                    _progress(stream, "compress", i - done, nblocks - done, i, nblocks, chunk,
                              now - t0, part_bytes)
            while pending:
                drain_one()
            digests = h.result()
            if hashes:
                for k in ("sha256", "md5"):
                    if hashes.get(k) and hashes[k] != digests[k]:
                        raise CorruptDataError(f"{src}: {k} {digests[k]} differs from the "
                                               f"expected {hashes[k]} (file changed while compressed?)")
            _fsync(fidx)
            fidx.seek(0)
            rec = np.frombuffer(open(idxf, "rb").read(), "<u8").reshape(-1, 3)
            if rec.shape[0] != nblocks:
                raise TableError(f"{idxf}: {rec.shape[0]} index records for {nblocks} blocks")
            index = np.concatenate([rec[:, 0], np.array([len(MAGIC) + dicts_len], "<u8"),
                                    rec[:, 1], rec[:, 2]]).astype("<u8")
            comp_index = zstandard.ZstdCompressor(level=9).compress(index.tobytes())
            idx_off = part_bytes
            header = {"format": "c4z", "version": FORMAT_VERSION, "board": b.name,
                      "width": b.width, "height": b.height, "k": b.k, "entry_size": E,
                      **({"grid": list(b.grid)} if b.grid is not None else {}),
                      "key_bytes": b.key_bytes, "entries": entries, "raw_bytes": size,
                      "sha256": digests["sha256"], "md5": digests["md5"], "file": src.name,
                      "root": root, "block_entries": block_entries, "blocks": nblocks,
                      "transform": TRANSFORM, "codec": "zstd", "level": level,
                      "part_entries": part_entries,
                      "key_dict": {"length": len(key_dict), "xxh64": xxhash.xxh64_intdigest(key_dict)}
                      if key_dict else None,
                      "sym_dict": {"length": len(sym_dict), "xxh64": xxhash.xxh64_intdigest(sym_dict)}
                      if sym_dict else None,
                      "index_xxh64": xxhash.xxh64_intdigest(comp_index)}
            hdr = json.dumps(header, sort_keys=True).encode()
            fpart.write(comp_index)
            fpart.write(hdr)
            fpart.write(TRAILER.pack(idx_off, len(comp_index), len(hdr),
                                     xxhash.xxh64_intdigest(hdr), END_MAGIC))
            _fsync(fpart)
    os.replace(part, out)
    from c4table.pipeline.storage import fsync_dir
    fsync_dir(out.parent)
    idxf.unlink(missing_ok=True)
    ckpt.unlink(missing_ok=True)
    secs = time.perf_counter() - t0
    osize = out.stat().st_size
    _say(quiet, stream, f"[compress] {out}: {format_size(osize)} ({100 * osize / size:.2f}% of "
                        f"{format_size(size)}), {nblocks:,} blocks, {format_seconds(secs)}, "
                        f"{size / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out


def _checkpoint(fpart, fidx, ckpt: Path, settings: dict, blocks: int, part_bytes: int,
                key_dict_bytes: int, sym_dict_bytes: int) -> None:
    _fsync(fpart)
    _fsync(fidx)
    tmp = ckpt.with_name(ckpt.name + ".tmp")
    tmp.write_text(json.dumps({"settings": settings, "blocks": blocks, "part_bytes": part_bytes,
                               "key_dict_bytes": key_dict_bytes,
                               "sym_dict_bytes": sym_dict_bytes}))
    os.replace(tmp, ckpt)


def _progress(stream, what, done, todo, i, n, chunk, secs, out_bytes) -> None:
    rate = done / secs if secs > 0 else 0
    eta = (todo - done) / rate if rate else 0
    print(f"[{what}] block {i:,} / {n:,} ({100 * i / n:.0f}%)  {rate * chunk / 2**20:.0f} MiB/s of "
          f"raw table  {format_size(out_bytes)} written  ETA {format_seconds(eta)}",
          file=stream, flush=True)


# ----------------------------------------------------------------------- decompress
def decompress_table(src, out: str | os.PathLike | None = None, *, threads: int | None = None,
                     quiet: bool = False, stream=None) -> Path:
    """Write the original table of the ``.c4z`` ``src`` (path or URI) to ``out`` (default: the
    name recorded in its header, in the current directory for a URI, beside ``src``
    otherwise), checking its sha256 and md5 against the header; resumes an interrupted run.

    >>> decompress_table("tables/5x4/connect4_5x4.c4z", "copy.dat", quiet=True).name
    'copy.dat'
    """
    from c4table.verify import Hashes
    stream = stream or sys.stderr
    threads = threads or os.cpu_count() or 1
    with open_c4z(src) as z:
        h = z.header
        if out is None:
            from c4table.pipeline.storage import is_url
            s = str(src)
            out = Path(h["file"]) if is_url(s) else Path(s).with_name(h["file"])
            if out.exists():
                raise TableError(f"{out} already exists; give the output file (-o) to replace it")
        out = Path(out)
        part = out.with_name(out.name + ".part")
        E, B = z.entry_size, z.block_entries
        chunk = B * E
        done = 0
        hashes = Hashes()
        t0 = last = time.perf_counter()
        if part.exists() and z.blocks:
            done = min(part.stat().st_size // chunk, z.blocks - 1)
        if done:
            _say(quiet, stream, f"[decompress] resuming {part.name} at block {done:,} of "
                                f"{z.blocks:,}; re-hashing what is there")
            with open(part, "rb") as f:
                for _ in range(done):
                    hashes.update(f.read(chunk))
            f = open(part, "r+b")
            f.truncate(done * chunk)
            f.seek(done * chunk)
        else:
            f = open(part, "wb")
        with f:
            written = done * chunk
            last_sync = time.perf_counter()
            for i, raw in z.iter_blocks(done, threads=threads, raw=True):
                hashes.update(raw)
                f.write(raw)
                written += len(raw)
                now = time.perf_counter()
                if now - last_sync >= CHECKPOINT_SECONDS:
                    _fsync(f)   # what is on disk before this point survives a crash
                    last_sync = now
                if not quiet and now - last >= PROGRESS_EVERY:
                    last = now
                    _progress(stream, "decompress", i + 1 - done, z.blocks - done, i + 1, z.blocks,
                              chunk, now - t0, written)
            _fsync(f)
        d = hashes.result()
        if d["bytes"] != h["raw_bytes"] or d["sha256"] != h["sha256"] or d["md5"] != h["md5"]:
            part.unlink(missing_ok=True)
            raise CorruptDataError(f"{src}: the decompressed table does not match the header "
                                   f"(sha256 {d['sha256']} != {h['sha256']}); output removed")
    os.replace(part, out)
    from c4table.pipeline.storage import fsync_dir
    fsync_dir(out.absolute().parent)
    secs = time.perf_counter() - t0
    _say(quiet, stream, f"[decompress] {out}: {d['bytes']:,} bytes, sha256 {d['sha256']} matches, "
                        f"{format_seconds(secs)}, {d['bytes'] / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out

