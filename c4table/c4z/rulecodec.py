"""The block codec of ``.c4z`` format 4 (registered under :data:`RULE_CODEC`): a block's keys
as range-coded bits over the candidates the rules of the game allow
(:mod:`c4table.c4z.rulekeys`), in *runs* of ``run_entries`` entries that each decode alone
(a probe walks one run), and its outcome bytes as the ply symbols of format 3
(:mod:`c4table.c4z.codec`) in one zstd frame flushed at the block's parts.

Block layout: a mode byte; mode 0: a format-3 block follows (:func:`~c4table.c4z.blocks.encode_entries`
without dictionary for its keys: a block whose keys are not all candidates, which no game
table has); mode 1: ``<III`` (runs ``q``, bytes of key bits, bytes of the symbol frame), the
first keys of runs 1.. (``q - 1`` u64), the ends of runs 0..q-2 in the key bits (``q - 1``
u32), the key bits, the symbol frame.

>>> from c4table.game.board import Board
>>> c = RuleKeyCodec(Board.parse("4x4"), part_entries=2, level=3, run_entries=2)
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
>>> c2 = RuleKeyCodec.from_header(c.header_fields(), c.board)
>>> (c2.name, c2.run_entries, c2.encode(raw) == c.encode(raw))
('rulekeys-plysym-v4', 2, True)
"""
from __future__ import annotations

import bisect
import struct
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import xxhash
import zstandard

from c4table.c4z.blocks import (
    PlySymbolCodec,
    _cctx,
    _decoded,
    _dctx,
    block_codec,
    default_part_entries,
    entries_of_raw,
    ply_symbols,
    rows_of,
    zstd_frame,
)
from c4table.c4z.format import DEFAULT_LEVEL, RULE_CODEC, RUN_ENTRIES
from c4table.c4z.registry import register_codec
from c4table.c4z.rulekeys import RuleKeys
from c4table.errors import TableError
from c4table.game.board import Board

_HEAD = struct.Struct("<BIII")
_rule_keys: dict = {}


def rule_keys(board: Board) -> RuleKeys:
    """The :class:`~c4table.c4z.rulekeys.RuleKeys` of ``board``, made once per process."""
    r = _rule_keys.get(board)
    if r is None:
        r = _rule_keys[board] = RuleKeys(board)
    return r


@dataclass
class RuleProbeState:
    """What a single probe of a format-4 block keeps for the next: the runs' first keys and
    key bits, the symbol frame and the prefix of the symbols decoded so far (``v3``: the
    state of a mode-0 block, probed as format 3 does)."""

    firsts: list
    bits: list
    sf: bytes
    sy: bytes = b""
    v3: object = None


@register_codec(RULE_CODEC)
@dataclass(frozen=True, eq=False)
class RuleKeyCodec:
    """The block codec of format 4 (module docstring). One per file: :meth:`from_header`
    reads it back from a header that :meth:`header_fields` wrote. ``key_dict`` is unused
    (the keys need none) and kept for the writers' common signature."""

    name: ClassVar[str]
    format_version: ClassVar[int] = 4
    uses_key_dict: ClassVar[bool] = False
    #: ``probe_keys`` probes a block's keys one by one when it holds at most this many (a
    #: whole block walks all its runs: about 30 probes' work)
    probe_alone: ClassVar[int] = 16
    board: Board
    part_entries: int
    level: int = DEFAULT_LEVEL
    min_match: int = 0
    key_dict: bytes | None = None
    sym_dict: bytes | None = None
    run_entries: int = RUN_ENTRIES
    v3: PlySymbolCodec = field(init=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "key_dict", None)
        object.__setattr__(self, "v3", PlySymbolCodec(self.board, self.part_entries, self.level,
                                                      self.min_match, None, self.sym_dict))

    @classmethod
    def from_header(cls, header: dict, board: Board, key_dict: bytes | None = None,
                    sym_dict: bytes | None = None) -> "RuleKeyCodec":
        """The codec a ``.c4z`` header describes (its symbol dictionary read from the file)."""
        run = int(header.get("run_entries", 0))
        if run < 1:
            raise TableError("header has no run_entries (damaged header)")
        return cls(board, int(header.get("part_entries", 0)),
                   int(header.get("level", DEFAULT_LEVEL)), int(header.get("min_match", 0)),
                   None, sym_dict, run)

    def header_fields(self) -> dict:
        """The header's fields of this codec (its name as ``transform``)."""
        sd = self.sym_dict
        return {"transform": self.name, "codec": "zstd", "level": self.level,
                "part_entries": self.part_entries, "run_entries": self.run_entries,
                "key_dict": None,
                "sym_dict": {"length": len(sd), "xxh64": xxhash.xxh64_intdigest(sd)} if sd else None,
                **({"min_match": self.min_match} if self.min_match else {})}

    # ------------------------------------------------------------- encode
    def encode(self, raw, check_outcomes: bool = False) -> tuple[int, bytes]:
        """``(first key, block)`` of raw table rows (whole entries, keys strictly increasing)."""
        return self.encode_entries(*entries_of_raw(raw, self.board), check_outcomes)

    def encode_words(self, words: np.ndarray, symbols: bool = False) -> tuple[int, bytes]:
        """:meth:`encode` of a block given as ``key << 8 | outcome`` words (``symbols``: the
        low bytes are the outcomes' symbols), as a build's merge tasks gather them."""
        if symbols:
            words = block_codec(self.board).outcome_words(words)
        return self.encode_entries(words >> np.uint64(8), (words & np.uint64(255)).astype(np.uint8))

    def encode_entries(self, keys: np.ndarray, outs: np.ndarray,
                       check_outcomes: bool = False) -> tuple[int, bytes]:
        """:meth:`encode` of a block given as its keys (uint64, strictly increasing) and
        outcome bytes (uint8)."""
        n = keys.shape[0]
        syms = ply_symbols(self.board, keys, outs, check_outcomes)
        rk = rule_keys(self.board)
        R = self.run_entries
        bits, ends, firsts = [], [], []
        for o in range(0, n, R):
            b = rk.encode(keys[o: o + R])
            if b is None:     # a key the rules do not allow: the block as format 3 stores it
                first, block = self.v3.encode(rows_of(keys, outs, self.board.entry_size),
                                              check_outcomes)
                return first, b"\x00" + block
            bits.append(b)
            ends.append(sum(len(x) for x in bits))
            if o:
                firsts.append(int(keys[o]))
        P = self.part_entries or default_part_entries(n)
        sy = syms.astype(np.uint8)
        sf = zstd_frame(_cctx(self.level, self.sym_dict, self.min_match),
                        [sy[o: o + P].tobytes() for o in range(0, n, P)])
        kb = b"".join(bits)
        q = len(bits)
        head = _HEAD.pack(1, q, len(kb), len(sf)) + struct.pack(
            f"<{q - 1}Q{q - 1}I", *firsts, *ends[:-1])
        return int(keys[0]), head + kb + sf

    # ------------------------------------------------------------- decode
    def _split(self, block: bytes, n: int, first: int) -> RuleProbeState:
        """A mode-1 block split into its runs; ValueError if its head does not fit ``n``."""
        if len(block) < _HEAD.size:
            raise ValueError("shorter than its header")
        mode, q, kl, sl = _HEAD.unpack_from(block)
        hl = _HEAD.size + 12 * (q - 1)
        if mode != 1 or q != -(-n // self.run_entries) or hl + kl + sl != len(block):
            raise ValueError("the block's head does not fit its entries")
        firsts = [first] + list(struct.unpack_from(f"<{q - 1}Q", block, _HEAD.size))
        ends = list(struct.unpack_from(f"<{q - 1}I", block, _HEAD.size + 8 * (q - 1))) + [kl]
        if any(b < a for a, b in zip([0] + ends, ends)) or \
                any(b <= a for a, b in zip(firsts, firsts[1:])):
            raise ValueError("the runs do not fit the block")
        kb = memoryview(block)[hl: hl + kl]
        bits = [kb[a:b] for a, b in zip([0] + ends[:-1], ends)]
        return RuleProbeState(firsts, bits, bytes(memoryview(block)[hl + kl:]))

    def decode(self, block: bytes, n: int, first: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of a block of ``n`` entries; ValueError or ZstdError if it
        does not decode to exactly that."""
        if block[:1] == b"\x00":
            return self.v3.decode(memoryview(block)[1:], n, first)
        st = self._split(block, n, first)
        rk = rule_keys(self.board)
        R = self.run_entries
        keys = np.empty(n, np.uint64)
        for r, (f, b) in enumerate(zip(st.firsts, st.bits)):
            lo, hi = r * R, min(n, (r + 1) * R)
            keys[lo:hi] = rk.decode(b, f, hi - lo)
            if r and not keys[lo - 1] < keys[lo]:
                raise ValueError(f"run {r} starts before run {r - 1} ends")
        sy = np.frombuffer(_dctx(self.sym_dict).decompress(st.sf), np.uint8)
        if sy.shape[0] != n:
            raise ValueError(f"the symbols do not hold {n} entries")
        kernels = block_codec(self.board)
        outs = kernels.inv[kernels.plies(keys), sy.astype(np.int64)]
        return keys, outs.astype(np.uint8)

    def decode_rows(self, block: bytes, n: int, first: int) -> tuple[memoryview, int]:
        """Raw table rows of a block and its last key."""
        keys, outs = self.decode(block, n, first)
        return rows_of(keys, outs, self.board.entry_size), int(keys[-1])

    # ------------------------------------------------------------- probe
    def probe_state(self, block: bytes, n: int, first: int) -> RuleProbeState:
        """A block of ``n`` entries split for probing, nothing decoded yet; ValueError if its
        head does not fit."""
        if block[:1] == b"\x00":
            return RuleProbeState([], [], b"", v3=self.v3.probe_state(memoryview(block)[1:], n,
                                                                      first))
        st = self._split(block, n, first)
        total = zstandard.frame_content_size(st.sf)
        if total != n:
            raise ValueError("the symbol frame does not fit the block")
        return st

    def probe(self, st: RuleProbeState, n: int, key: int) -> int:
        """Outcome byte of ``key`` in the block of ``st``, or -1: the run that can hold it (by
        the runs' first keys), walked up to ``key``, then the symbol frame decoded up to its
        entry (kept in ``st`` for the next probe). ValueError or ZstdError if damaged."""
        if st.v3 is not None:
            return self.v3.probe(st.v3, n, key)
        r = bisect.bisect_right(st.firsts, key) - 1
        if r < 0:
            return -1
        R = self.run_entries
        lo, hi = r * R, min(n, (r + 1) * R)
        j = rule_keys(self.board).find(st.bits[r], st.firsts[r], hi - lo, key)
        if j < 0:
            return -1
        i = lo + j
        sy = st.sy = _decoded(st.sy, st.sf, self.sym_dict, i + 1, n)
        return block_codec(self.board).outcome(key, sy[i])
