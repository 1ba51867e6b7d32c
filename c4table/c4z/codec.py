"""The block codec of ``.c4z`` format 2: how a block of sorted table entries becomes the two
byte streams that zstd compresses, and back (numba kernels).

Design notes: ``docs/modules.md`` (``c4table.c4z.codec``).

>>> import numpy as np
>>> from c4table.game.board import Board
>>> codec = BlockCodec(Board.parse("4x4"))
>>> keys = np.array([0, 1, 3, 40], np.uint64); outs = np.array([16, 0x4f, 0x8e, 0x4d], np.uint8)
>>> kv, sy = codec.encode(keys, outs)
>>> k2, o2 = codec.decode(kv, sy, 0, 4)
>>> k2.tolist(), o2.tolist()
([0, 1, 3, 40], [16, 79, 142, 77])
"""
from __future__ import annotations

import numpy as np
from numba import njit

from c4table.game.board import Board
from c4table.io.varint import decode_deltas, put_varint, varint_at


def symbol_tables(cells: int) -> tuple[np.ndarray, np.ndarray]:
    """``(fwd, inv)``: ``fwd[p, byte]`` is the symbol of an outcome byte at ply ``p``,
    ``inv[p, symbol]`` the byte (module docstring); ``cells + 1`` rows of 256.

    >>> fwd, inv = symbol_tables(16)
    >>> int(fwd[0, 16]), int(fwd[1, 0x40 | 2]), int(inv[1, 2])   # draw; A wins in 2 at ply 1
    (0, 2, 66)
    """
    fwd = np.zeros((cells + 1, 256), np.uint8)
    inv = np.zeros((cells + 1, 256), np.uint8)
    for p in range(cells + 1):
        order = []
        if cells - p < 64:
            order.append(cells - p)                       # the draw
        for top, last in ((0x40, 1), (0x80, 0)):          # A wins: p + d odd; B wins: even
            order += [top | d for d in range(64) if (p + d) % 2 == last]
        seen = set(order)
        order += [b for b in range(256) if b not in seen]
        inv[p] = order
        fwd[p, inv[p]] = np.arange(256)
    return fwd, inv


@njit(cache=True, nogil=True, inline="always")
def _digits(x, digits, base, width, heights):
    """The base-``base`` digits of key ``x`` (column codes, lowest first) into ``digits``;
    returns its ply (chips on the board: ``heights`` of the codes)."""
    ply = 0
    for i in range(width):
        digits[i] = x % base
        x //= base
        ply += heights[digits[i]]
    return ply


@njit(cache=True, nogil=True, inline="always")
def _advance(digits, d0, add, base, width, heights, ply):
    """Add ``add`` (> 0) to the key whose base-``base`` digits (column codes, lowest first)
    are ``d0`` and ``digits[1:]`` (``digits[0]`` is stale: the lowest digit stays in a
    register, the loops' usual case touching no memory) and whose ply is ``ply``, digit by
    digit with carries; return its new ``(d0, ply)`` (``heights`` of the digits). The usual
    delta is below ``base`` and carries nothing."""
    s = d0 + add
    if s < base:            # the usual case (add < base too)
        return s, ply + heights[s] - heights[d0]
    digits[0] = d0
    i = 0
    while add > 0 and i < width:
        if add < base:
            s = digits[i] + add
            add = 0
        else:
            s = digits[i] + add % base
            add //= base
        if s >= base:
            s -= base
            add += 1
        ply += heights[s] - heights[digits[i]]
        digits[i] = s
        i += 1
    return digits[0], ply


@njit(cache=True, nogil=True)
def _plies(keys, base, width, heights, out):
    """Ply (chips on the board) of every key: its base-``base`` digits are the column codes.
    The digits of the first key are divided out; after that each key is the previous one plus
    a (usually small) delta, added digit by digit with carries."""
    n = keys.shape[0]
    if n == 0:
        return
    digits = np.zeros(width + 1, np.int64)
    ply = _digits(np.int64(keys[0]), digits, base, width, heights)
    d0 = digits[0]
    out[0] = ply
    for j in range(1, n):
        d0, ply = _advance(digits, d0, np.int64(keys[j] - keys[j - 1]), base, width, heights, ply)
        out[j] = ply


@njit(cache=True, nogil=True)
def _encode(src, outs, packed, base, width, heights, fwd, kv, syms):
    """Both streams of a block in one pass: the LEB128 key deltas into ``kv`` (large enough;
    returns their length) and each entry's symbol ``fwd[ply, outcome]`` into ``syms``, the ply
    followed key by key as :func:`_plies` does. ``packed``: ``src`` holds ``key << 8 |
    outcome`` words (as a build's merge does) and ``outs`` is unused; else ``src`` holds the
    keys and ``outs`` their outcome bytes. The same bytes as
    :func:`~c4table.io.varint.encode_deltas` of the keys and :func:`_plies` through ``fwd``,
    without their temporary arrays."""
    n = src.shape[0]
    if n == 0:
        return 0
    sh = np.uint64(8) if packed else np.uint64(0)
    digits = np.zeros(width + 1, np.int64)
    prev = src[0] >> sh
    ply = _digits(np.int64(prev), digits, base, width, heights)
    d0 = digits[0]
    syms[0] = fwd[ply, (src[0] & np.uint64(255)) if packed else outs[0]]
    pos = 0
    for j in range(1, n):
        key = src[j] >> sh
        d = key - prev
        prev = key
        pos = put_varint(kv, pos, d)
        d0, ply = _advance(digits, d0, np.int64(d), base, width, heights, ply)
        syms[j] = fwd[ply, (src[j] & np.uint64(255)) if packed else outs[j]]
    return pos


@njit(cache=True, nogil=True)
def _encode_symbols(src, kv, syms):
    """:func:`_encode` of ``key << 8 | symbol`` words, whose low bytes are already the
    symbols (a build's merge maps each generation's outcome bytes as it gathers them, the ply
    being the generation's): the key deltas' LEB128 into ``kv`` (returns its length) and the
    low bytes into ``syms``, with no ply to follow."""
    n = src.shape[0]
    if n == 0:
        return 0
    eight, low = np.uint64(8), np.uint64(255)
    prev = src[0] >> eight
    syms[0] = src[0] & low
    pos = 0
    for j in range(1, n):
        key = src[j] >> eight
        pos = put_varint(kv, pos, key - prev)
        prev = key
        syms[j] = src[j] & low
    return pos


@njit(cache=True, nogil=True)
def _decode(kv, syms, first, n, base, width, heights, inv, keys, outs):
    """Keys and outcome bytes of a block from its two decompressed streams; 0 if they fit
    ``n`` entries exactly, else -1 (a damaged block)."""
    if syms.shape[0] != n or decode_deltas(kv, first, keys) < 0:
        return -1
    _plies(keys, base, width, heights, outs)    # outs holds the plies for a moment
    for j in range(n):
        p = outs[j]
        outs[j] = inv[p, syms[j]]
    return 0


@njit(cache=True, nogil=True)
def _decode_rows(kv, syms, first, n, base, width, heights, inv, key_bytes, rows):
    """:func:`_decode` of a part straight into raw table rows (big-endian key, outcome byte;
    ``rows`` holds ``n`` of them), the ply followed key by key as :func:`_encode` does, with no
    key or outcome array; returns the last key, or -1 if the streams do not fit ``n`` entries
    exactly (a damaged block). The entry sizes of the 2D boards (4-7 bytes) are passed to
    :func:`_decode_rows_of` as constants, so that LLVM merges each row's byte stores (8.3 ->
    5.6 ns per 5-byte entry)."""
    if syms.shape[0] != n or n < 1:
        return -1
    e = key_bytes + 1
    if e == 6:
        return _decode_rows_of(kv, syms, first, n, base, width, heights, inv, 6, rows)
    if e == 5:
        return _decode_rows_of(kv, syms, first, n, base, width, heights, inv, 5, rows)
    if e == 7:
        return _decode_rows_of(kv, syms, first, n, base, width, heights, inv, 7, rows)
    if e == 4:
        return _decode_rows_of(kv, syms, first, n, base, width, heights, inv, 4, rows)
    return _decode_rows_of(kv, syms, first, n, base, width, heights, inv, e, rows)


@njit(cache=True, nogil=True, inline="always")
def _decode_rows_of(kv, syms, first, n, base, width, heights, inv, e, rows):
    """:func:`_decode_rows` for ``e``-byte rows."""
    digits = np.zeros(width + 1, np.int64)
    key = first
    ply = _digits(np.int64(first), digits, base, width, heights)
    d0 = digits[0]
    pos = 0
    m = kv.shape[0]
    for j in range(n):
        if j:
            if pos < m and kv[pos] < 128:      # the usual case: a one-byte delta
                d = np.uint64(kv[pos])
                pos += 1
            else:
                d, pos = varint_at(kv, pos, m)
                if pos < 0:
                    return -1
            if d == 0:
                return -1
            key += d
            d0, ply = _advance(digits, d0, np.int64(d), base, width, heights, ply)
        v = (key << np.uint64(8)) | np.uint64(inv[ply, syms[j]])
        at = j * e
        for b in range(e - 1, -1, -1):
            rows[at + b] = v & np.uint64(255)
            v >>= np.uint64(8)
    if pos != m:
        return -1
    return np.int64(key)


@njit(cache=True, nogil=True)
def _find(kv, first, n, key):
    """Index of ``key`` in a block (keys from the varint stream, stopping at ``key``), or -1
    if absent; -2 if the stream is damaged (ends early). Eight one-byte deltas at a time when
    none of them has its high bit set (the common case): their sum says whether ``key`` lies
    beyond them without decoding them one by one."""
    if key == first:
        return 0
    if key < first:
        return -1
    k = first
    pos = 0
    j = 1
    m = kv.shape[0]
    hi = np.uint64(0x8080808080808080)
    lo16 = np.uint64(0x00FF00FF00FF00FF)
    ones16 = np.uint64(0x0001000100010001)
    words = kv[: m - m % 8].view(np.uint64)
    while j < n:
        if pos % 8 == 0 and pos + 8 <= m and j + 8 <= n:
            w = words[pos // 8]
            if w & hi == 0:
                s = (w & lo16) + ((w >> np.uint64(8)) & lo16)
                s = (s * ones16) >> np.uint64(48)
                if k + s < key:
                    k += s
                    pos += 8
                    j += 8
                    continue
        x, pos = varint_at(kv, pos, m)
        if pos < 0:
            return -2
        k += x
        if k >= key:
            return j if k == key else -1
        j += 1
    return -1


@njit(cache=True, nogil=True)
def _rows(keys, outs, key_bytes, rows):
    """Raw table bytes (big-endian key, outcome byte) of a block into ``rows``."""
    e = key_bytes + 1
    for j in range(keys.shape[0]):
        x = keys[j]
        base = j * e
        for b in range(key_bytes - 1, -1, -1):
            rows[base + b] = x & np.uint64(255)
            x >>= np.uint64(8)
        rows[base + key_bytes] = outs[j]


_NO_OUTS = np.zeros(1, np.uint8)


class BlockCodec:
    """Encoder and decoder of blocks of one board (module docstring)."""

    def __init__(self, board: Board):
        self.board = board
        self.base = board.base
        self.width = board.width
        self.heights = np.asarray(board.col_height, np.int64)
        self.fwd, self.inv = symbol_tables(board.cells)
        self.key_bytes = board.key_bytes

    def plies(self, keys: np.ndarray) -> np.ndarray:
        """Ply of every key of an increasing uint64 array.

        >>> BlockCodec(Board.parse("4x4")).plies(np.array([0, 1, 3, 40], np.uint64)).tolist()
        [0, 1, 2, 4]
        """
        out = np.empty(keys.shape[0], np.int64)
        _plies(keys, self.base, self.width, self.heights, out)
        return out

    def encode(self, keys: np.ndarray, outs: np.ndarray) -> tuple[bytes, bytes]:
        """The key stream and the symbol stream of increasing keys and their outcome bytes."""
        return self._encode(np.ascontiguousarray(keys, np.uint64),
                            np.ascontiguousarray(outs, np.uint8), False)

    def encode_words(self, words: np.ndarray) -> tuple[bytes, bytes]:
        """:meth:`encode` of entries given as ``key << 8 | outcome`` words (uint64).

        >>> codec = BlockCodec(Board.parse("4x4"))
        >>> w = np.array([16, 1 << 8 | 0x4f, 3 << 8 | 0x8e, 40 << 8 | 0x4d], np.uint64)
        >>> codec.encode_words(w) == codec.encode(w >> np.uint64(8), (w & np.uint64(255)).astype(np.uint8))
        True
        """
        return self._encode(np.ascontiguousarray(words, np.uint64), _NO_OUTS, True)

    def encode_symbol_words(self, words: np.ndarray) -> tuple[bytes, bytes]:
        """:meth:`encode_words` of ``key << 8 | symbol`` words (the symbol of each outcome at
        its key's ply already in the low byte, :meth:`symbol_words`): the same bytes, with no
        ply followed.

        >>> codec = BlockCodec(Board.parse("4x4"))
        >>> w = np.array([16, 1 << 8 | 0x4f, 3 << 8 | 0x8e, 40 << 8 | 0x4d], np.uint64)
        >>> codec.encode_symbol_words(codec.symbol_words(w)) == codec.encode_words(w)
        True
        """
        src = np.ascontiguousarray(words, np.uint64)
        n = src.shape[0]
        kv = np.empty(max(1, 10 * (n - 1)), np.uint8)
        syms = np.empty(n, np.uint8)
        m = _encode_symbols(src, kv, syms)
        return kv[:m].tobytes(), syms.tobytes()

    def symbol_words(self, words: np.ndarray) -> np.ndarray:
        """``key << 8 | outcome`` words as ``key << 8 | symbol`` words (each key's ply from its
        digits)."""
        return self._map_low_bytes(words, self.fwd)

    def outcome_words(self, words: np.ndarray) -> np.ndarray:
        """The inverse of :meth:`symbol_words`: ``key << 8 | outcome`` words."""
        return self._map_low_bytes(words, self.inv)

    def _map_low_bytes(self, words: np.ndarray, table: np.ndarray) -> np.ndarray:
        """``key << 8 | table[ply of key, low byte]`` of each word."""
        keys = words >> np.uint64(8)
        low = table[self.plies(keys), (words & np.uint64(255)).astype(np.int64)]
        return (keys << np.uint64(8)) | low.astype(np.uint64)

    def _encode(self, src: np.ndarray, outs: np.ndarray, packed: bool) -> tuple[bytes, bytes]:
        n = src.shape[0]
        kv = np.empty(max(1, 10 * (n - 1)), np.uint8)
        syms = np.empty(n, np.uint8)
        m = _encode(src, outs, packed, self.base, self.width, self.heights, self.fwd, kv, syms)
        return kv[:m].tobytes(), syms.tobytes()

    def decode(self, kv: bytes, syms: bytes, first: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of a block; ValueError if the streams do not fit ``n``."""
        keys = np.empty(n, np.uint64)
        outs = np.empty(n, np.int64)
        if n < 1 or _decode(np.frombuffer(kv, np.uint8), np.frombuffer(syms, np.uint8),
                            np.uint64(first), n, self.base, self.width, self.heights,
                            self.inv, keys, outs) < 0:
            raise ValueError(f"the streams do not hold {n} entries")
        return keys, outs.astype(np.uint8)

    def find(self, kv: bytes, first: int, n: int, key: int) -> int:
        """Index of ``key`` in a block's key stream, -1 if absent; ValueError if damaged."""
        j = _find(np.frombuffer(kv, np.uint8), np.uint64(first), n, np.uint64(key))
        if j == -2:
            raise ValueError("the key stream ends early")
        return int(j)

    def outcome(self, key: int, sym: int) -> int:
        """The outcome byte of symbol ``sym`` of ``key``."""
        ply, x = 0, key
        for _ in range(self.width):
            x, c = divmod(x, self.base)
            ply += int(self.heights[c])
        return int(self.inv[ply, sym])

    def rows(self, keys: np.ndarray, outs: np.ndarray) -> memoryview:
        """Raw table bytes of a block's keys and outcome bytes."""
        e = self.key_bytes + 1
        rows = np.empty(keys.shape[0] * e, np.uint8)
        _rows(keys, outs, self.key_bytes, rows)
        return memoryview(rows)
