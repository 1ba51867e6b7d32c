"""The block codec of ``.c4z`` format 5 (registered under :data:`FRAME_CODEC`): format 4's
rule-coded keys (:mod:`c4table.c4z.rulekeys`) in short *runs* whose coder starts from
probabilities trained on the block, and the outcome symbols of format 3
(:mod:`c4table.c4z.codec`) in small zstd *frames* that each decode alone. A probe walks one run
of ``run_entries`` keys and decodes one frame of ``frame_entries`` symbols, whatever the
block's size: its cost no longer grows with the block.

Block layout: a mode byte; mode 0: a format-3 block follows (a block whose keys are not all
candidates, which no game table has); mode 1: LEB128 varints ``q`` (runs), ``f`` (frames),
``c0`` and ``nc`` (the contexts the block trains), ``nc`` bytes (each context's starting
probability that a candidate is *not* a key, in 1/256), the first keys of runs 1.. as
deltas from the run before (``q - 1`` varints), the runs' byte lengths (``q``), the frames'
byte lengths (``f``); then the runs' key bits (:class:`~c4table.c4z.rulekeys.RuleKeys`
``lean``), then the frames.

>>> from c4table.game.board import Board
>>> c = FrameCodec(Board.parse("4x4"), 0, level=3, run_entries=2, frame_entries=3)
>>> raw = bytes([0, 0, 0, 16, 0, 0, 1, 0x4f, 0, 0, 31, 0x0e, 0, 0, 33, 0x8d])  # keys 0 1 31 33
>>> first, block = c.encode(raw)
>>> keys, outs = c.decode(block, 4, first)
>>> keys.tolist(), outs.tolist(), block[0]
([0, 1, 31, 33], [16, 79, 14, 141], 1)
>>> st = c.probe_state(block, 4, first)
>>> [c.probe(st, 4, k) for k in (0, 1, 31, 33, 2)]
[16, 79, 14, 141, -1]
>>> odd = bytes([0, 0, 0, 16, 0, 0, 2, 0x4f])       # key 2 is no position: stored as format 3
>>> first, block = c.encode(odd)
>>> block[0], c.decode(block, 2, first)[0].tolist(), c.probe(c.probe_state(block, 2, first), 2, 2)
(0, [0, 2], 79)
>>> c2 = FrameCodec.from_header(c.header_fields(), c.board)
>>> (c2.name, c2.run_entries, c2.frame_entries, c2.encode(raw) == c.encode(raw))
('rulekeys-frames-v5', 2, 3, True)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import xxhash
from numba import njit

from c4table.c4z.blocks import (
    PlySymbolCodec,
    _cctx,
    _dctx,
    block_codec,
    entries_of_raw,
    ply_symbols,
    rows_of,
)
from c4table.c4z.format import DEFAULT_LEVEL, FRAME_CODEC, FRAME_ENTRIES, SHORT_RUN_ENTRIES
from c4table.c4z.registry import register_codec
from c4table.c4z.rulekeys import DECODE, FIND, RuleKeys, walk
from c4table.errors import TableError
from c4table.game.board import Board

_lean_keys: dict = {}


def lean_keys(board: Board) -> RuleKeys:
    """The lean :class:`~c4table.c4z.rulekeys.RuleKeys` of ``board``, made once per process."""
    r = _lean_keys.get(board)
    if r is None:
        r = _lean_keys[board] = RuleKeys(board, lean=True)
    return r


def _varints(values) -> bytes:
    """LEB128 of non-negative ints."""
    out = bytearray()
    for v in values:
        v = int(v)
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
    return bytes(out)


@njit(cache=True)
def _read_varint(buf, pos):
    """``(value, next pos)`` of the LEB128 varint at ``pos``; pos -1 if it runs past ``buf``
    or past 63 bits."""
    v = np.uint64(0)
    s = 0
    while pos < buf.shape[0] and s < 63:
        b = buf[pos]
        pos += 1
        v |= np.uint64(b & 0x7F) << np.uint64(s)
        if b < 0x80:
            return v, pos
        s += 7
    return v, -1


@njit(cache=True)
def parse_head(buf, first, n, run_entries, frame_entries, nprobs):
    """The head of a mode-1 block of ``n`` entries: ``(firsts, kstarts, fstarts, init, ok)``
    with the runs' first keys, the runs' key bits at ``buf[kstarts[r]:kstarts[r + 1]]``, the
    frames at ``buf[fstarts[j]:fstarts[j + 1]]`` and the coder's starting probabilities (out
    of 2048); ``ok`` False if the head does not fit the block."""
    q = (n + run_entries - 1) // run_entries
    f = (n + frame_entries - 1) // frame_entries
    firsts = np.empty(q, np.uint64)
    kstarts = np.empty(q + 1, np.int64)
    fstarts = np.empty(f + 1, np.int64)
    init = np.full(nprobs, 1024, np.int64)
    bad = (firsts, kstarts, fstarts, init, False)
    pos = 1
    vals = np.empty(4, np.int64)
    for i in range(4):
        v, pos = _read_varint(buf, pos)
        if pos < 0:
            return bad
        vals[i] = np.int64(v)
    if vals[0] != q or vals[1] != f or vals[2] + vals[3] > nprobs or pos + vals[3] > buf.shape[0]:
        return bad
    for i in range(vals[3]):
        init[vals[2] + i] = np.int64(buf[pos + i]) * 8
    pos += vals[3]
    firsts[0] = first
    for r in range(1, q):
        v, pos = _read_varint(buf, pos)
        if pos < 0 or v == 0 or firsts[r - 1] + v < firsts[r - 1]:
            return bad
        firsts[r] = firsts[r - 1] + v
    lens = np.empty(q + f, np.int64)
    for i in range(q + f):
        v, pos = _read_varint(buf, pos)
        if pos < 0 or v > np.uint64(buf.shape[0]):
            return bad
        lens[i] = np.int64(v)
    kstarts[0] = pos
    for r in range(q):
        kstarts[r + 1] = kstarts[r] + lens[r]
    fstarts[0] = kstarts[q]
    for j in range(f):
        fstarts[j + 1] = fstarts[j] + lens[q + j]
    if fstarts[f] != buf.shape[0]:
        return bad
    return firsts, kstarts, fstarts, init, True


@njit(cache=True)
def decode_runs(buf, firsts, kstarts, n, run_entries, keys, init, w, base, stride, k, bits_a,
                bits_b, powers, col_height, dif, codes, count, starts, limit, skips, vert):
    """All the keys of a mode-1 block into ``keys`` (one :func:`~c4table.c4z.rulekeys.walk`
    per run, in one call); returns -1, or the first run that does not decode to its keys in
    order after the run before."""
    probs = np.empty(init.shape[0], np.int64)
    none = np.zeros((2, 1), np.int64)
    for r in range(firsts.shape[0]):
        lo = r * run_entries
        hi = min(n, lo + run_entries)
        got = walk(DECODE, firsts[r], hi - lo, keys[lo:hi], buf[kstarts[r]:kstarts[r + 1]],
                   np.uint64(0), w, base, stride, k, bits_a, bits_b, powers, col_height, dif,
                   codes, count, starts, limit, skips, vert, probs, init, True, none)
        if got < 0 or r and not keys[lo - 1] < keys[lo]:
            return r
    return -1


@njit(cache=True)
def find_key(buf, firsts, kstarts, n, run_entries, key, init, w, base, stride, k, bits_a,
             bits_b, powers, col_height, dif, codes, count, starts, limit, skips, vert):
    """``(index, ply)`` of ``key`` in a mode-1 block: the run that can hold it (by the runs'
    first keys) walked up to it; index -1 if the block does not hold it, -2 if the run's bits
    end early."""
    r = np.searchsorted(firsts, key, side="right") - 1
    if r < 0:
        return -1, 0
    lo = r * run_entries
    hi = min(n, lo + run_entries)
    j = walk(FIND, firsts[r], hi - lo, np.empty(1, np.uint64), buf[kstarts[r]:kstarts[r + 1]],
             key, w, base, stride, k, bits_a, bits_b, powers, col_height, dif, codes, count,
             starts, limit, skips, vert, np.empty(init.shape[0], np.int64), init, True,
             np.zeros((2, 1), np.int64))
    if j < 0:
        return j, 0
    ply = 0
    x = key
    for _ in range(w):
        ply += col_height[np.int64(x % np.uint64(base))]
        x //= np.uint64(base)
    return lo + j, ply


@njit(cache=True)
def locate(buf, first, n, run_entries, frame_entries, nprobs, key, w, base, stride, k, bits_a,
           bits_b, powers, col_height, dif, codes, count, starts, limit, skips, vert):
    """One probe of a mode-1 block in one call: its head parsed (:func:`parse_head`) and
    ``key`` found (:func:`find_key`). Returns ``(index, ply, frame start, frame end)``: the
    entry's index in the block, its ply and the bytes of the frame that holds its symbol;
    index -1 if the block does not hold ``key``, -2 if the run's bits end early, -3 if the
    head does not fit the block."""
    firsts, kstarts, fstarts, init, ok = parse_head(buf, first, n, run_entries, frame_entries,
                                                    nprobs)
    if not ok or buf[0] != 1:
        return -3, 0, 0, 0
    i, ply = find_key(buf, firsts, kstarts, n, run_entries, key, init, w, base, stride, k,
                      bits_a, bits_b, powers, col_height, dif, codes, count, starts, limit,
                      skips, vert)
    if i < 0:
        return i, 0, 0, 0
    j = i // frame_entries
    return i, ply, fstarts[j], fstarts[j + 1]


@dataclass(frozen=True)
class BlockOdds:
    """The odds a block's run coders start from, as its head stores them: contexts ``c0 ..
    c0 + nc - 1`` (those with candidates) at ``q8`` in 1/256 that a candidate is not a key;
    ``init``: every context's, in 1/2048 (1024 for the others)."""

    c0: int
    nc: int
    q8: np.ndarray
    init: np.ndarray


def block_odds(counts: np.ndarray, nprobs: int) -> BlockOdds:
    """:class:`BlockOdds` from a block's candidates and keys per context (``counts[0]``,
    ``counts[1]``)."""
    seen = np.flatnonzero(counts[0])
    c0 = int(seen[0]) if seen.shape[0] else 0
    nc = int(seen[-1]) + 1 - c0 if seen.shape[0] else 0
    cand, memb = counts[0, c0: c0 + nc], counts[1, c0: c0 + nc]
    q8 = np.clip(np.rint(256 * (cand - memb + 0.5) / (cand + 1.0)), 1, 255).astype(np.int64)
    init = np.full(nprobs, 1024, np.int64)
    init[c0: c0 + nc] = q8 * 8
    return BlockOdds(c0, nc, q8, init)


@dataclass
class ParsedBlock:
    """A mode-1 block and its head (:func:`parse_head`): what decoding it whole needs."""

    buf: np.ndarray
    firsts: np.ndarray
    kstarts: np.ndarray
    fstarts: np.ndarray
    init: np.ndarray


@dataclass
class FrameProbeState:
    """What probes of a format-5 block keep: the block (a writable copy, which the key walk
    takes), its first key and the frames decoded so far (``v3``: the state of a mode-0
    block, probed as format 3 does)."""

    buf: np.ndarray
    first: int
    frames: dict = field(default_factory=dict)
    v3: object = None


@register_codec(FRAME_CODEC)
@dataclass(frozen=True, eq=False)
class FrameCodec:
    """The block codec of format 5 (module docstring). One per file: :meth:`from_header`
    reads it back from a header that :meth:`header_fields` wrote. ``part_entries`` and
    ``key_dict`` serve the format-3 blocks of a file that is no game table."""

    name: ClassVar[str]
    format_version: ClassVar[int] = 5
    uses_key_dict: ClassVar[bool] = False
    #: no trained symbol dictionary: on frames of 16,384 symbols it saves about 1% and costs
    #: a probe about a fifth of its frame's decoding time
    uses_sym_dict: ClassVar[bool] = False
    #: ``probe_keys`` probes a block's keys one by one when it holds at most this many (a
    #: whole block walks all its runs)
    probe_alone: ClassVar[int] = 256
    #: a probe copies the block (the key walk takes a writable buffer): the reader reads it
    #: into a buffer of its own rather than mapping its pages
    probe_copies: ClassVar[bool] = True
    board: Board
    part_entries: int
    level: int = DEFAULT_LEVEL
    min_match: int = 0
    key_dict: bytes | None = None
    sym_dict: bytes | None = None
    run_entries: int = SHORT_RUN_ENTRIES
    frame_entries: int = FRAME_ENTRIES
    v3: PlySymbolCodec = field(init=False, repr=False)
    _args: tuple = field(init=False, repr=False)
    _nprobs: int = field(init=False, repr=False)
    _inv: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "key_dict", None)
        rk = lean_keys(self.board)     # what every probe needs, looked up once
        object.__setattr__(self, "_args", rk.args)
        object.__setattr__(self, "_nprobs", rk.nprobs)
        object.__setattr__(self, "_inv", block_codec(self.board).inv)
        object.__setattr__(self, "v3", PlySymbolCodec(self.board, self.part_entries
                                                      or self.frame_entries, self.level,
                                                      self.min_match, None, self.sym_dict))

    @classmethod
    def from_header(cls, header: dict, board: Board, key_dict: bytes | None = None,
                    sym_dict: bytes | None = None) -> "FrameCodec":
        """The codec a ``.c4z`` header describes (its symbol dictionary read from the file)."""
        run, frame = int(header.get("run_entries", 0)), int(header.get("frame_entries", 0))
        if run < 1 or frame < 1:
            raise TableError("header has no run_entries or frame_entries (damaged header)")
        return cls(board, int(header.get("part_entries", 0)),
                   int(header.get("level", DEFAULT_LEVEL)), int(header.get("min_match", 0)),
                   None, sym_dict, run, frame)

    def header_fields(self) -> dict:
        """The header's fields of this codec (its name as ``transform``)."""
        sd = self.sym_dict
        return {"transform": self.name, "codec": "zstd", "level": self.level,
                "part_entries": self.part_entries, "run_entries": self.run_entries,
                "frame_entries": self.frame_entries, "key_dict": None,
                "sym_dict": {"length": len(sd), "xxh64": xxhash.xxh64_intdigest(sd)} if sd else None,
                **({"min_match": self.min_match} if self.min_match else {})}

    # ------------------------------------------------------------- encode
    def encode(self, raw, check_outcomes: bool = False) -> tuple[int, bytes]:
        """``(first key, block)`` of raw table rows (whole entries, keys strictly increasing)."""
        return self.encode_entries(*entries_of_raw(raw, self.board), check_outcomes)

    def _fallback(self, keys, outs, check_outcomes) -> tuple[int, bytes]:
        first, block = self.v3.encode(rows_of(keys, outs, self.board.entry_size), check_outcomes)
        return first, b"\x00" + block

    def encode_entries(self, keys: np.ndarray, outs: np.ndarray,
                       check_outcomes: bool = False) -> tuple[int, bytes]:
        """:meth:`encode` of a block given as its keys (uint64, strictly increasing) and
        outcome bytes (uint8)."""
        syms = ply_symbols(self.board, keys, outs, check_outcomes)
        return self._encode(keys, syms, lambda: outs, check_outcomes)

    def encode_words(self, words: np.ndarray, symbols: bool = False) -> tuple[int, bytes]:
        """:meth:`encode` of a block given as ``key << 8 | outcome`` words (uint64, keys
        strictly increasing), as a build's merge tasks gather them; ``symbols``: the low bytes
        are the outcomes' symbols already
        (:meth:`~c4table.c4z.codec.BlockCodec.symbol_words`). The same bytes."""
        keys = words >> np.uint64(8)
        low = (words & np.uint64(255)).astype(np.uint8)
        if not symbols:
            return self.encode_entries(keys, low)
        kernels = block_codec(self.board)
        return self._encode(keys, low, lambda: kernels.inv[kernels.plies(keys),
                                                           low.astype(np.int64)].astype(np.uint8))

    def _encode(self, keys, syms, outs, check_outcomes: bool = False) -> tuple[int, bytes]:
        """The block of keys and their symbols; ``outs()`` gives the outcome bytes where the
        block must be stored as format 3 (a key the rules do not allow)."""
        n = keys.shape[0]
        rk = lean_keys(self.board)
        R, F = self.run_entries, self.frame_entries
        bits = rk.encode_runs(keys, R, lambda counts: block_odds(counts, rk.nprobs).init)
        if bits is None:
            return self._fallback(keys, outs(), check_outcomes)
        od = block_odds(bits.counts, rk.nprobs)
        sy = syms.astype(np.uint8)
        cctx = _cctx(self.level, self.sym_dict, self.min_match)
        frames = [cctx.compress(sy[o: o + F].tobytes()) for o in range(0, n, F)]
        firsts = keys[::R]
        head = (b"\x01" + _varints([bits.starts.shape[0] - 1, len(frames), od.c0, od.nc])
                + od.q8.astype(np.uint8).tobytes() + _varints(np.diff(firsts).tolist())
                + _varints(np.diff(bits.starts).tolist()) + _varints([len(f) for f in frames]))
        return int(keys[0]), head + bits.data.tobytes() + b"".join(frames)

    # ------------------------------------------------------------- decode
    def _parsed(self, block, n: int, first: int) -> ParsedBlock:
        """A mode-1 block parsed; ValueError if its head does not fit ``n``."""
        buf = np.frombuffer(block, np.uint8).copy()
        firsts, ks, fs, init, ok = parse_head(buf, np.uint64(first), n, self.run_entries,
                                              self.frame_entries, self._nprobs)
        if not ok or buf[0] != 1:
            raise ValueError("the block's head does not fit its entries")
        return ParsedBlock(buf, firsts, ks, fs, init)

    def _frame(self, frame, j: int, n: int) -> bytes:
        """The symbols of frame ``j`` of a block of ``n`` entries from its bytes; ValueError if
        it does not hold them."""
        F = self.frame_entries
        want = min(F, n - j * F)
        sy = _dctx(self.sym_dict).decompress(frame)
        if len(sy) != want:
            raise ValueError(f"frame {j} does not hold {want} symbols")
        return sy

    def symbol_bytes(self, block: bytes, n: int, first: int) -> int | None:
        """Bytes of the outcome-symbol frames of a block of ``n`` entries (the rest is its
        head and its runs' key bits); ``None`` for a block stored as format 3 (mode 0)."""
        if block[:1] == b"\x00":
            return None
        st = self._parsed(block, n, first)
        return int(st.fstarts[-1] - st.fstarts[0])

    def decode(self, block: bytes, n: int, first: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of a block of ``n`` entries; ValueError or ZstdError if it
        does not decode to exactly that."""
        if block[:1] == b"\x00":
            return self.v3.decode(memoryview(block)[1:], n, first)
        st = self._parsed(block, n, first)
        keys = np.empty(n, np.uint64)
        bad = decode_runs(st.buf, st.firsts, st.kstarts, n, self.run_entries, keys, st.init,
                          *self._args)
        if bad >= 0:
            raise ValueError(f"run {bad}: its bits do not hold its keys in order")
        fs = st.fstarts
        sy = np.frombuffer(b"".join(self._frame(st.buf[fs[j]: fs[j + 1]], j, n)
                                    for j in range(fs.shape[0] - 1)), np.uint8)
        kernels = block_codec(self.board)
        outs = kernels.inv[kernels.plies(keys), sy.astype(np.int64)]
        return keys, outs.astype(np.uint8)

    def decode_rows(self, block: bytes, n: int, first: int) -> tuple[memoryview, int]:
        """Raw table rows of a block and its last key."""
        keys, outs = self.decode(block, n, first)
        return rows_of(keys, outs, self.board.entry_size), int(keys[-1])

    # ------------------------------------------------------------- probe
    def probe_state(self, block: bytes, n: int, first: int) -> FrameProbeState:
        """A block of ``n`` entries kept for probing, nothing parsed or decoded yet (each
        probe parses its head again, in the same call as the key's walk: cheaper than keeping
        it where a block sees one or two probes)."""
        if block[:1] == b"\x00":
            return FrameProbeState(np.empty(0, np.uint8), first,
                                   v3=self.v3.probe_state(memoryview(block)[1:], n, first))
        return FrameProbeState(np.frombuffer(block, np.uint8).copy(), first)

    def probe(self, st: FrameProbeState, n: int, key: int) -> int:
        """Outcome byte of ``key`` in the block of ``st``, or -1: the run that can hold it (by
        the runs' first keys) walked up to ``key``, then its frame decoded (kept in ``st`` for
        the next probe). ValueError or ZstdError if damaged."""
        if st.v3 is not None:
            return self.v3.probe(st.v3, n, key)
        i, ply, fs, fe = locate(st.buf, np.uint64(st.first), n, self.run_entries, self.frame_entries,
                                self._nprobs, np.uint64(key), *self._args)
        if i < 0:
            if i == -1:
                return -1
            raise ValueError("the key bits end early" if i == -2 else
                             "the block's head does not fit its entries")
        F = self.frame_entries
        j = i // F
        sy = st.frames.get(j)
        if sy is None:
            sy = st.frames[j] = self._frame(st.buf[fs:fe], j, n)
        return int(self._inv[ply, sy[i % F]])
