"""The block codec of a ``.c4z``: a block of table entries to and from its two zstd frames (key
stream and outcome symbols), the trained dictionaries, and the zstd contexts."""
from __future__ import annotations

import bisect
import ctypes
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np
import xxhash
import zstandard

from c4table.c4z.codec import BlockCodec, _decode, _decode_rows, _rows
from c4table.c4z.format import (
    DEFAULT_LEVEL,
    DICT_SAMPLES,
    KEY_DICT_BYTES,
    KEY_DICT_SHARE,
    PART_SHARE,
    SYM_DICT_BYTES,
    SYM_DICT_SHARE,
    TRANSFORM,
)
from c4table.c4z.registry import register_codec
from c4table.errors import TableError
from c4table.game.board import Board
from c4table.table.source import keys_of_rows


def encode_block(raw, board: Board, level: int = DEFAULT_LEVEL,
                 part_entries: int | None = None, key_dict: bytes | None = None,
                 sym_dict: bytes | None = None, check_outcomes: bool = False,
                 min_match: int = 0) -> tuple[int, bytes]:
    """``(first key, block bytes)`` of raw table bytes (whole entries, keys strictly
    increasing), in parts of ``part_entries`` entries: a head, then a key frame and a symbol
    frame, each one zstd frame (with ``key_dict`` / ``sym_dict``) whose zstd blocks end where the
    parts end, so a probe decodes only up to the end of its part (layout: ``docs/modules.md``,
    ``c4table.c4z.blocks``). ``check_outcomes``: a :class:`~c4table.errors.TableError` if an
    outcome byte is none that the entry's ply allows (see :mod:`c4table.c4z.codec`).
    ``min_match``: the frames' zstd parameters (:func:`zstd_params`; 0: the level's own).

    >>> first, block = encode_block(bytes([0, 0, 0, 16, 0, 0, 1, 0x4f]), Board.parse("4x4"), part_entries=1)
    >>> first, decode_block_bytes(block, Board.parse("4x4"), 2, first, part_entries=1)[1].tolist()
    (0, [16, 79])
    """
    keys, outs = entries_of_raw(raw, board)
    return encode_entries(keys, outs, board, level, part_entries, key_dict, sym_dict,
                          check_outcomes, min_match)


def entries_of_raw(raw, board: Board) -> tuple[np.ndarray, np.ndarray]:
    """The keys (uint64) and outcome bytes (uint8) of raw table rows (whole entries);
    :class:`TableError` unless the keys strictly increase (every block codec's ``encode``)."""
    E = board.entry_size
    rows = np.frombuffer(raw, np.uint8).reshape(-1, E)
    keys = keys_of_rows(rows, E - 1)
    if keys.shape[0] > 1 and not (keys[1:] > keys[:-1]).all():
        raise TableError("keys are not strictly increasing (not a sorted table)")
    return keys, np.ascontiguousarray(rows[:, E - 1])


def ply_symbols(board: Board, keys: np.ndarray, outs: np.ndarray,
                check_outcomes: bool = False) -> np.ndarray:
    """The outcome symbols (int64) of entries, chosen by each key's ply
    (:mod:`c4table.c4z.codec`); with ``check_outcomes``, :class:`TableError` naming the first
    outcome byte that is impossible at its ply (the rule-coded formats' symbols)."""
    kernels = block_codec(board)
    syms = kernels.fwd[kernels.plies(keys), outs.astype(np.int64)]
    if check_outcomes and keys.shape[0] and syms.max() >= 65:
        j = int(np.argmax(syms >= 65))
        raise TableError(f"entry {j} of the block (key {int(keys[j])}): outcome byte "
                         f"0x{int(outs[j]):02x} is impossible at its ply")
    return syms


def encode_entries(keys: np.ndarray, outs: np.ndarray, board: Board, level: int = DEFAULT_LEVEL,
                   part_entries: int | None = None, key_dict: bytes | None = None,
                   sym_dict: bytes | None = None, check_outcomes: bool = False,
                   min_match: int = 0) -> tuple[int, bytes]:
    """:func:`encode_block` of a block given as its keys (uint64, strictly increasing: the
    caller checks) and outcome bytes (uint8), as a build's merge holds them."""
    n = keys.shape[0]
    part_entries = part_entries or default_part_entries(n)
    codec = block_codec(board)
    kvs, sys_, firsts = [], [], []
    for o in range(0, n, part_entries):
        kv, sy = codec.encode(keys[o: o + part_entries], outs[o: o + part_entries])
        if check_outcomes and sy and np.frombuffer(sy, np.uint8).max() >= 65:
            j = o + int(np.argmax(np.frombuffer(sy, np.uint8) >= 65))
            raise TableError(f"entry {j} of the block (key {int(keys[j])}): outcome byte "
                             f"0x{int(outs[j]):02x} is impossible at its ply")
        kvs.append(kv)
        sys_.append(sy)
        if o:
            firsts.append(int(keys[o]))
    return int(keys[0]), _block(kvs, sys_, firsts, level, key_dict, sym_dict, min_match)


def encode_words(words: np.ndarray, board: Board, level: int = DEFAULT_LEVEL,
                 part_entries: int | None = None, min_match: int = 0,
                 sym_level: int | None = None, symbols: bool = False) -> tuple[int, bytes]:
    """:func:`encode_entries` of a block given as ``key << 8 | outcome`` words (uint64, keys
    strictly increasing: the caller's), as a build's merge tasks gather them: the same bytes,
    without splitting the words first. ``sym_level``: the zstd level of the symbol frame
    (None: ``level``, as for the key frame). ``symbols``: the words' low bytes are already the
    symbols (:meth:`~c4table.c4z.codec.BlockCodec.symbol_words`), as a build's merge gathers
    them.

    >>> w = np.array([16, 1 << 8 | 0x4f], np.uint64)
    >>> b = Board.parse("4x4")
    >>> encode_words(w, b, 3, 1) == encode_entries(np.array([0, 1], np.uint64), np.array([16, 0x4f], np.uint8), b, 3, 1)
    True
    >>> encode_words(block_codec(b).symbol_words(w), b, 3, 1, symbols=True) == encode_words(w, b, 3, 1)
    True
    """
    n = words.shape[0]
    part_entries = part_entries or default_part_entries(n)
    codec = block_codec(board)
    kvs, sys_, firsts = [], [], []
    enc = codec.encode_symbol_words if symbols else codec.encode_words
    for o in range(0, n, part_entries):
        kv, sy = enc(words[o: o + part_entries])
        kvs.append(kv)
        sys_.append(sy)
        if o:
            firsts.append(int(words[o]) >> 8)
    return int(words[0]) >> 8, _block(kvs, sys_, firsts, level, None, None, min_match,
                                      sym_level)


def _block(kvs: list, sys_: list, firsts: list, level: int, key_dict, sym_dict,
           min_match: int = 0, sym_level: int | None = None) -> bytes:
    """A block's bytes from its parts' key and symbol streams (:func:`encode_block`); the
    symbol frame at ``sym_level`` (None: ``level``)."""
    ends = np.cumsum([len(k) for k in kvs]).tolist()
    kf = zstd_frame(_cctx(level, key_dict, min_match), kvs)
    sf = zstd_frame(_cctx(level if sym_level is None else sym_level, sym_dict, min_match), sys_)
    p = len(kvs)
    head = struct.pack(f"<HII{p - 1}I{p - 1}Q", p, len(kf), len(sf), *ends[:-1], *firsts)
    return head + kf + sf


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


@dataclass
class _Streams:
    """A block's two decompressed streams (:func:`_streams`): ``kv`` the key stream, ``sy`` the
    symbols; part ``q`` holds entries ``q * part_entries ..`` from key ``starts[q]``, its keys
    ``kv[bounds[q]: bounds[q + 1]]``."""

    kv: np.ndarray
    sy: np.ndarray
    n: int
    part_entries: int
    bounds: list
    starts: list

    def parts(self):
        """Per part: its key stream, its symbols, its first and end entry, its first key."""
        P = self.part_entries
        for q, start in enumerate(self.starts):
            lo, hi = q * P, min(self.n, (q + 1) * P)
            yield self.kv[self.bounds[q]: self.bounds[q + 1]], self.sy[lo:hi], lo, hi, start


def _streams(block: bytes, n: int, first: int, part_entries: int | None, key_dict,
             sym_dict) -> _Streams:
    """Split and decompress a block of ``n`` entries (first key ``first``); ValueError or
    ZstdError if its parts and streams do not fit ``n`` entries."""
    kf, sf, ends, firsts = split_block(block)
    part_entries = part_entries or default_part_entries(n)
    p = len(ends) + 1
    if p != -(-n // part_entries):
        raise ValueError(f"{p} parts for {n} entries")
    kv = np.frombuffer(_dctx(key_dict).decompress(kf), np.uint8)
    sy = np.frombuffer(_dctx(sym_dict).decompress(sf), np.uint8)
    if sy.shape[0] != n or not all(0 <= a <= b for a, b in zip([0] + ends, ends + [kv.shape[0]])):
        raise ValueError("the streams do not fit the parts")
    return _Streams(kv, sy, n, part_entries, [0] + ends + [kv.shape[0]], [first] + firsts)


def decode_block_bytes(block: bytes, board: Board, n: int, first: int,
                       key_dict: bytes | None = None, sym_dict: bytes | None = None,
                       part_entries: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keys (uint64) and outcome bytes of a block of ``n`` entries; ValueError or ZstdError
    if it does not decode to exactly that."""
    st = _streams(block, n, first, part_entries, key_dict, sym_dict)
    codec = block_codec(board)
    keys = np.empty(n, np.uint64)
    outs = np.empty(n, np.int64)
    for q, (kv, sy, lo, hi, start) in enumerate(st.parts()):
        if _decode(kv, sy, np.uint64(start), hi - lo, codec.base, codec.width, codec.heights,
                   codec.inv, keys[lo:hi], outs[lo:hi]) < 0:
            raise ValueError(f"the streams of part {q} do not hold {hi - lo} entries")
        if q and not keys[lo - 1] < keys[lo]:
            raise ValueError(f"part {q} starts before part {q - 1} ends")
    return keys, outs.astype(np.uint8)


def decode_block_rows(block: bytes, board: Board, n: int, first: int,
                      part_entries: int | None = None, key_dict: bytes | None = None,
                      sym_dict: bytes | None = None) -> tuple[memoryview, int]:
    """The raw table rows of a block of ``n`` entries and its last key:
    :func:`decode_block_bytes` then :func:`rows_of` in one pass; ValueError or ZstdError if it
    does not decode to exactly that.

    >>> b = Board.parse("4x4")
    >>> first, block = encode_block(bytes([0, 0, 0, 16, 0, 0, 1, 0x4f]), b, part_entries=1)
    >>> rows, last = decode_block_rows(block, b, 2, first, part_entries=1)
    >>> bytes(rows) == bytes([0, 0, 0, 16, 0, 0, 1, 0x4f]), last
    (True, 1)
    """
    st = _streams(block, n, first, part_entries, key_dict, sym_dict)
    codec = block_codec(board)
    E = board.entry_size
    rows = np.empty(n * E, np.uint8)
    last = -1
    for q, (kv, sy, lo, hi, start) in enumerate(st.parts()):
        if q and not last < start:
            raise ValueError(f"part {q} starts before part {q - 1} ends")
        last = _decode_rows(kv, sy, np.uint64(start), hi - lo, codec.base, codec.width,
                            codec.heights, codec.inv, E - 1, rows[lo * E: hi * E])
        if last < 0:
            raise ValueError(f"the streams of part {q} do not hold {hi - lo} entries")
    return memoryview(rows), int(last)


_codecs: dict = {}


def block_codec(board: Board) -> BlockCodec:
    """The :class:`~c4table.c4z.codec.BlockCodec` of ``board``, made once per process."""
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


#: the input size whose zstd parameters :func:`zstd_params` takes: a 262,144-entry block's
#: symbol stream (a build's key stream is a little longer, and would get a bigger window with
#: a shorter search: larger frames, on the 5x5 table)
TUNED_FRAME_BYTES = 1 << 18


def zstd_params(level: int, min_match: int = 0) -> zstandard.ZstdCompressionParameters | None:
    """The zstd parameters of a block's frames at ``level`` with ``min_match`` (3-7): those
    zstd picks for that level on a :data:`TUNED_FRAME_BYTES` input, but with matches of at
    least ``min_match`` bytes (the streams' repeats are long: 6 makes level 4 as small as level
    5 for 20% less CPU, ``docs/measurements/2026-11-27-c4z-build-profile.md``), whatever the
    frame's own size, so that the bytes depend on the level and ``min_match`` only. None for
    ``min_match`` 0: the level's own parameters (zstd's choice by the frame's size).

    >>> p = zstd_params(4, 6)
    >>> (p.window_log, p.hash_log, p.search_log, p.min_match, p.strategy == zstandard.STRATEGY_GREEDY)
    (18, 17, 3, 6, True)
    """
    if not min_match:
        return None
    return zstandard.ZstdCompressionParameters.from_level(
        level, source_size=TUNED_FRAME_BYTES, min_match=min_match, write_checksum=1,
        write_content_size=1)


def _cctx(level: int, zdict: bytes | None = None, min_match: int = 0):
    """This thread's zstd compressor for ``level`` (with ``min_match``: :func:`zstd_params`)
    and dictionary ``zdict``."""
    cache = getattr(_local, "cctx", None)
    if cache is None:
        cache = _local.cctx = {}
    key = (level, zdict, min_match)
    c = cache.get(key)
    if c is None:
        if len(cache) > 8:
            cache.clear()
        d = zstandard.ZstdCompressionDict(zdict) if zdict else None
        p = zstd_params(level, min_match)
        c = cache[key] = zstandard.ZstdCompressor(level=level, write_checksum=True, dict_data=d) \
            if p is None else zstandard.ZstdCompressor(compression_params=p, dict_data=d)
    return c


def train_dicts(src, board: Board, block_entries: int, samples: int | None = None,
                key_size: int | None = None, sym_size: int | None = None,
                ) -> tuple[bytes | None, bytes | None]:
    """zstd dictionaries ``(keys, symbols)`` for the key frames and the symbol frames of the
    table file ``src``: :func:`train_dicts_on` its bytes."""
    with open(src, "rb") as f:
        return train_dicts_on(lambda off, n: os.pread(f.fileno(), n, off),
                              os.fstat(f.fileno()).st_size, board, block_entries, samples,
                              key_size, sym_size)


def train_dicts_on(read: Callable[[int, int], bytes], raw_bytes: int, board: Board,
                   block_entries: int, samples: int | None = None, key_size: int | None = None,
                   sym_size: int | None = None) -> tuple[bytes | None, bytes | None]:
    """zstd dictionaries ``(keys, symbols)`` for the key frames and the symbol frames of a raw
    table of ``raw_bytes`` bytes whose bytes ``read(offset, n)`` gives, trained on the streams
    of ``samples`` blocks spread evenly over it (deterministic: same table, same
    dictionaries). The key dictionary is at most ``key_size`` bytes and 1/500 of the table,
    the symbol one at most ``sym_size`` and 1/5000 (it gains less: about 1.4% of the symbol
    frames on 5x5); None where that is under 8 KiB or the table has fewer than 16 whole
    blocks, where a dictionary would cost more than it saves. ``key_size`` or ``sym_size`` 0:
    no such dictionary."""
    E = board.entry_size
    nblocks = raw_bytes // E // block_entries   # whole blocks only
    samples = DICT_SAMPLES if samples is None else samples
    sizes = (min(KEY_DICT_BYTES if key_size is None else key_size, raw_bytes // KEY_DICT_SHARE),
             min(SYM_DICT_BYTES if sym_size is None else sym_size, raw_bytes // SYM_DICT_SHARE))
    if nblocks < 16 or max(sizes) < 8192:
        return None, None
    codec = block_codec(board)
    data: tuple[list, list] = ([], [])
    for b in np.linspace(0, nblocks - 1, min(samples, nblocks)).astype(np.int64):
        raw = read(int(b) * block_entries * E, block_entries * E)
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


@dataclass
class ProbeState:
    """What a single probe of a block keeps for the next (:meth:`PlySymbolCodec.probe`): the
    block's key and symbol frames, where each part's keys end in the key stream (``bounds``,
    from 0 to the stream's length), each part's first key, and the prefixes of the two
    streams decoded so far."""

    kf: bytes
    sf: bytes
    bounds: list
    firsts: list
    kv: bytes = b""
    sy: bytes = b""


@register_codec(TRANSFORM)
@dataclass(frozen=True, eq=False)
class PlySymbolCodec:
    """The block codec of format 3 (registered under :data:`~c4table.c4z.format.TRANSFORM`):
    a block in parts of ``part_entries`` entries, its keys as LEB128 deltas and its outcome
    bytes as symbols chosen by ply (:mod:`c4table.c4z.codec`), as two zstd frames at ``level``
    (with ``min_match``: :func:`zstd_params`) with the file's trained dictionaries, if any
    (layout: :func:`encode_block`). One per file: :meth:`from_header` reads it back from a
    header that :meth:`header_fields` wrote.

    >>> c = PlySymbolCodec(Board.parse("4x4"), part_entries=1, level=3)
    >>> raw = bytes([0, 0, 0, 16, 0, 0, 1, 0x4f])
    >>> first, block = c.encode(raw)
    >>> keys, outs = c.decode(block, 2, first)
    >>> keys.tolist(), outs.tolist(), c.probe(c.probe_state(block, 2, first), 2, 1)
    ([0, 1], [16, 79], 79)
    >>> c2 = PlySymbolCodec.from_header(c.header_fields(), c.board)
    >>> (c2.name, c2.part_entries, c2.level, c2.encode(raw) == (first, block))
    ('varint-plysym-v3', 1, 3, True)
    """

    name: ClassVar[str]
    format_version: ClassVar[int] = 3
    uses_key_dict: ClassVar[bool] = True
    probe_alone: ClassVar[int] = 0       # probe_keys decodes whole blocks
    board: Board
    part_entries: int
    level: int = DEFAULT_LEVEL
    min_match: int = 0
    key_dict: bytes | None = None
    sym_dict: bytes | None = None
    kernels: BlockCodec = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "kernels", block_codec(self.board))

    @classmethod
    def from_header(cls, header: dict, board: Board, key_dict: bytes | None = None,
                    sym_dict: bytes | None = None) -> "PlySymbolCodec":
        """The codec a ``.c4z`` header describes (its dictionaries read from the file)."""
        return cls(board, int(header.get("part_entries", 0)),
                   int(header.get("level", DEFAULT_LEVEL)), int(header.get("min_match", 0)),
                   key_dict, sym_dict)

    def header_fields(self) -> dict:
        """The header's fields of this codec (its name as ``transform``)."""
        kd, sd = self.key_dict, self.sym_dict
        return {"transform": self.name, "codec": "zstd", "level": self.level,
                "part_entries": self.part_entries,
                "key_dict": {"length": len(kd), "xxh64": xxhash.xxh64_intdigest(kd)} if kd else None,
                "sym_dict": {"length": len(sd), "xxh64": xxhash.xxh64_intdigest(sd)} if sd else None,
                **({"min_match": self.min_match} if self.min_match else {})}

    # ------------------------------------------------------------- encode
    def encode(self, raw, check_outcomes: bool = False) -> tuple[int, bytes]:
        """``(first key, block)`` of raw table rows (:func:`encode_block`)."""
        return encode_block(raw, self.board, self.level, self.part_entries, self.key_dict,
                            self.sym_dict, check_outcomes, self.min_match)

    def symbol_bytes(self, block: bytes, n: int, first: int) -> int:
        """Bytes of a block's symbol frame (the rest is its header and key frame)."""
        return len(split_block(block)[1])

    def encode_words(self, words: np.ndarray, symbols: bool = False) -> tuple[int, bytes]:
        """:meth:`encode` of a block given as ``key << 8 | outcome`` words (``symbols``: the
        low bytes are the outcomes' symbols), as a build's merge tasks gather them
        (:func:`encode_words`; no trained dictionaries)."""
        if self.key_dict or self.sym_dict:
            raise ValueError("encode_words takes no trained dictionaries")
        return encode_words(words, self.board, self.level, self.part_entries, self.min_match,
                            symbols=symbols)

    # ------------------------------------------------------------- decode
    def decode(self, block: bytes, n: int, first: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of a block of ``n`` entries (:func:`decode_block_bytes`)."""
        return decode_block_bytes(block, self.board, n, first, self.key_dict, self.sym_dict,
                                  self.part_entries)

    def decode_rows(self, block: bytes, n: int, first: int) -> tuple[memoryview, int]:
        """Raw table rows of a block and its last key (:func:`decode_block_rows`)."""
        return decode_block_rows(block, self.board, n, first, self.part_entries,
                                 self.key_dict, self.sym_dict)

    # ------------------------------------------------------------- probe
    def probe_state(self, block: bytes, n: int, first: int) -> ProbeState:
        """A block of ``n`` entries (first key ``first``) split for probing, nothing decoded
        yet; ValueError if its head does not fit."""
        kf, sf, ends, firsts = split_block(block)
        if len(ends) + 1 != -(-n // self.part_entries):
            raise ValueError(f"{len(ends) + 1} parts for {n} entries")
        total = zstandard.frame_content_size(kf)
        if total < 0 or ends and not 0 <= ends[0] <= ends[-1] <= total:
            raise ValueError("the key frame does not fit the parts")
        return ProbeState(kf, sf, [0] + ends + [total], [first] + firsts)

    def probe(self, st: ProbeState, n: int, key: int) -> int:
        """Outcome byte of ``key`` in the block of ``n`` entries of ``st``, or -1, decoding only
        what it needs: the part that can hold ``key`` (by the parts' first keys), the key frame
        up to the end of that part (a streaming decoder that stops there), scanned from the
        part's start up to ``key`` by a numba kernel, then, if the key is there, the symbol
        frame up to the end of the part; what is decoded stays in ``st`` (a later probe
        decodes again only if it needs more). ValueError or ZstdError if damaged."""
        P = self.part_entries
        bounds, firsts = st.bounds, st.firsts
        q = bisect.bisect_right(firsts, key) - 1
        if q < 0:
            return -1
        lo, hi = q * P, min(n, (q + 1) * P)
        end, total = bounds[q + 1], bounds[-1]
        # A part but the last: decode up to one byte before its end (zstd, once a block's
        # output is all delivered, decodes the next block ahead); that last byte is needed
        # only if the key is the part's last entry (the scan then runs out: decode all).
        kv = st.kv = _decoded(st.kv, st.kf, self.key_dict, end - 1 if end < total else total,
                              total)
        find = self.kernels.find
        try:
            j = find(memoryview(kv)[bounds[q]: min(end, len(kv))], firsts[q], hi - lo, key)
        except ValueError:
            if len(kv) >= end:
                raise
            kv = st.kv = _decoded(kv, st.kf, self.key_dict, total, total)
            j = find(memoryview(kv)[bounds[q]: end], firsts[q], hi - lo, key)
        if j < 0:
            return -1
        sy = st.sy = _decoded(st.sy, st.sf, self.sym_dict,
                              hi - 1 if lo + j < hi - 1 and hi < n else n, n)
        return self.kernels.outcome(key, sy[lo + j])


def _decoded(buf: bytes, frame, zdict, need: int, total: int) -> bytes:
    """The decoded prefix ``buf`` of ``frame`` (``total`` bytes decoded), made at least
    ``need`` bytes long: a streaming decoder that stops there, or one call for the whole
    frame."""
    if len(buf) >= need:
        return buf
    d = _dctx(zdict)
    buf = d.decompress(frame) if need >= total else d.stream_reader(frame).read(need)
    if len(buf) != min(need, total) or need >= total and len(buf) != total:
        raise ValueError(f"a stream ends early ({len(buf)} of {min(need, total)} bytes)")
    return buf
