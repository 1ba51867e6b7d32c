"""The tree hash, a table's identity (``sha256_tree``): defined by the table's bytes alone, and
computed in parallel, or piece by piece by whoever holds which bytes (a build's merge tasks).

Definition (docs/FORMAT.md, "Tree hash"): the ``n`` bytes are cut into consecutive pieces of
:data:`PIECE_BYTES` (64 MiB; the last piece is shorter, or absent when ``n`` is a multiple);
``d_i`` is the 32-byte sha256 of piece ``i``; the tree hash is the lowercase hex of
``sha256(d_0 || d_1 || ... || le64(n) || le64(PIECE_BYTES))``.

:class:`TreeHash` computes it from a stream (pieces hashed on threads: hashlib releases the
GIL), :func:`tree_hash_file` from a local file (pieces read and hashed on threads).
:class:`SpanCut` cuts a span of the table that starts at a known byte offset into units (the
tree's pieces, or any other fixed-size blocks such as the sidecar's xxh64 blocks): it hashes
the whole units inside the span and keeps the bytes at its two edges (:class:`SpanEdges`);
:func:`combine` feeds the spans of consecutive ranges, in order, to a hasher that takes both
raw bytes (``update``) and whole units' digests (``add_pieces``), so only the units that
straddle two spans are hashed where the spans meet.

>>> data = bytes(range(256)) * 1000
>>> cuts = [SpanCut(0, 4096, sha256_piece), SpanCut(100_000, 4096, sha256_piece)]
>>> cuts[0].update(data[:100_000]); cuts[1].update(data[100_000:])
>>> h = TreeHash(piece=4096); combine(h, [c.finish() for c in cuts])
256000
>>> h.result()["sha256_tree"] == tree_hash(data, piece=4096)
True
"""
from __future__ import annotations

import hashlib
import os
import struct
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from c4table.errors import BuildError

PIECE_BYTES = 1 << 26     # 64 MiB: the tree's piece (part of its definition; read when used)
FIELD = "sha256_tree"     # the name records, headers and known tables give it


def sha256_piece(b) -> bytes:
    """The digest of one piece (32 bytes)."""
    return hashlib.sha256(b).digest()


def root_of(digests, size: int, piece: int | None = None) -> str:
    """The tree hash of ``size`` bytes whose pieces have ``digests`` (in order).

    >>> root_of([], 0) == hashlib.sha256(bytes(8) + (1 << 26).to_bytes(8, "little")).hexdigest()
    True
    """
    piece = piece or PIECE_BYTES
    want = -(-size // piece)
    if len(digests) != want:
        raise BuildError(f"tree hash of {size:,} bytes: {len(digests):,} piece digests, "
                         f"expected {want:,}")
    h = hashlib.sha256()
    for d in digests:
        h.update(d)
    h.update(struct.pack("<QQ", size, piece))
    return h.hexdigest()


def tree_hash(data, piece: int | None = None) -> str:
    """The tree hash of ``data`` (bytes-like), plainly: one piece after the other."""
    piece = piece or PIECE_BYTES
    mv = memoryview(data).cast("B")
    return root_of([sha256_piece(mv[i: i + piece]) for i in range(0, len(mv), piece)],
                   len(mv), piece)


def _threads(threads: int | None) -> int:
    return max(1, threads or min(16, os.cpu_count() or 1))


def tree_hash_file(path, threads: int | None = None, piece: int | None = None,
                   start: int = 0, size: int | None = None) -> dict:
    """``{"sha256_tree", "bytes"}`` of a local file (or of its ``size`` bytes from byte
    ``start``), its pieces read and hashed on ``threads`` threads (default: the cores, at
    most 16); memory: a piece per thread."""
    piece = piece or PIECE_BYTES
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        n = os.fstat(fd).st_size - start if size is None else size

        def one(i: int) -> bytes:
            want = min(piece, n - i * piece)
            b = os.pread(fd, want, start + i * piece)
            while len(b) < want:   # a short read: the rest
                more = os.pread(fd, want - len(b), start + i * piece + len(b))
                if not more:
                    raise OSError(f"{path}: ends inside piece {i:,}")
                b += more
            return sha256_piece(b)

        k = -(-n // piece)
        with ThreadPoolExecutor(_threads(threads)) as pool:
            digests = list(pool.map(one, range(k)))
    return {FIELD: root_of(digests, n, piece), "bytes": n}


class TreeHash:
    """The tree hash of a stream of chunks (:meth:`update`, in order, any sizes), whole
    pieces hashed on ``threads`` threads while the stream goes on (at most a piece per thread
    in flight); :meth:`add_pieces` takes the digests of whole pieces hashed elsewhere (the
    stream must then stand on a piece boundary)."""

    def __init__(self, threads: int | None = None, piece: int | None = None):
        self.piece, self.size = piece or PIECE_BYTES, 0
        self._threads = _threads(threads)
        self._pool: ThreadPoolExecutor | None = None
        self._digests: list = []        # bytes, or futures of them, in order
        self._inflight: deque = deque()
        self._buf = bytearray()         # the piece being filled

    def _submit(self, b) -> None:
        if self._threads == 1:
            self._digests.append(sha256_piece(b))
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._threads)
        while len(self._inflight) >= self._threads + 1:
            self._inflight.popleft().result()
        fut = self._pool.submit(sha256_piece, b)
        self._inflight.append(fut)
        self._digests.append(fut)

    def update(self, b) -> None:
        mv = memoryview(b).cast("B")
        self.size += len(mv)
        P, at = self.piece, 0
        if self._buf:
            take = min(len(mv), P - len(self._buf))
            self._buf += mv[:take]
            at = take
            if len(self._buf) == P:
                self._submit(bytes(self._buf))
                self._buf = bytearray()
        while len(mv) - at >= P:
            self._submit(bytes(mv[at: at + P]))   # a copy: the caller may reuse its buffer
            at += P
        if at < len(mv):
            self._buf += mv[at:]

    def add_pieces(self, digests) -> None:
        """Whole pieces' digests that follow the bytes so far (on a piece boundary)."""
        if self._buf or self.size % self.piece:
            raise BuildError(f"tree hash: whole pieces given at byte {self.size:,}, inside a "
                             "piece")
        self._digests.extend(digests)
        self.size += len(digests) * self.piece

    def digests(self) -> list[bytes]:
        """The digests of the whole pieces so far (waits for those in flight)."""
        return [d if isinstance(d, bytes) else d.result() for d in self._digests]

    def result(self) -> dict:
        """``{"sha256_tree", "bytes"}``; the object is finished after this."""
        if self._buf:
            self._digests.append(sha256_piece(bytes(self._buf)))
            self._buf = bytearray()
        digests = self.digests()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        return {FIELD: root_of(digests, self.size, self.piece), "bytes": self.size}


@dataclass
class SpanEdges:
    """A span of the table starting at byte ``start``, cut into ``unit``-byte units on the
    table's grid: ``head``, its bytes before its first unit boundary (all of them if it
    reaches none; fewer than ``unit``), ``pieces``, the digests of the whole units inside it
    (a list, or an array), and ``tail``, its bytes after the last whole unit (fewer than
    ``unit``)."""

    start: int
    unit: int
    head: bytes = b""
    pieces: object = field(default_factory=list)
    tail: bytes = b""

    @property
    def end(self) -> int:
        """The byte after the span."""
        return self.start + len(self.head) + len(self.pieces) * self.unit + len(self.tail)


class SpanCut:
    """Cuts the bytes of a span fed in order (:meth:`update`) from byte ``start`` of the
    table into :class:`SpanEdges` of ``unit``-byte units, each whole unit hashed by
    ``digest`` (e.g. :func:`sha256_piece`; ``collect`` makes the list of digests into what
    :attr:`SpanEdges.pieces` holds). Memory: the partial unit and the head (each under a unit)."""

    def __init__(self, start: int, unit: int, digest: Callable = sha256_piece,
                 collect: Callable = list):
        self.start, self.unit, self.digest, self.collect = start, unit, digest, collect
        self.pos = start
        self.boundary = -(-start // unit) * unit   # the first unit boundary at or after start
        self.head = bytearray()
        self.buf = bytearray()
        self.pieces: list = []

    def update(self, b) -> None:
        mv = memoryview(b).cast("B")
        at, U = 0, self.unit
        if self.pos < self.boundary:
            at = min(len(mv), self.boundary - self.pos)
            self.head += mv[:at]
        if self.buf and at < len(mv):
            take = min(len(mv) - at, U - len(self.buf))
            self.buf += mv[at: at + take]
            at += take
            if len(self.buf) == U:
                self.pieces.append(self.digest(self.buf))
                self.buf = bytearray()
        while len(mv) - at >= U:
            self.pieces.append(self.digest(mv[at: at + U]))
            at += U
        if at < len(mv):
            self.buf += mv[at:]
        self.pos += len(mv)

    def finish(self) -> SpanEdges:
        return SpanEdges(self.start, self.unit, bytes(self.head), self.collect(self.pieces),
                         bytes(self.buf))


def combine(hasher, spans) -> int:
    """Feed the :class:`SpanEdges` of consecutive spans (in order, the first starting where
    ``hasher`` stands: ``hasher.size``) to ``hasher`` (a :class:`TreeHash`, or any object with
    ``update(bytes)``, ``add_pieces(digests)`` and ``size``); return the byte after the last.
    :class:`BuildError` if a span does not start where the one before it ended."""
    at = hasher.size
    for s in spans:
        if s.start != at:
            raise BuildError(f"a span starts at byte {s.start:,} where the spans before it "
                             f"end at {at:,}")
        add_span(hasher, s)
        at = s.end
    return at


def add_span(hasher, s: SpanEdges) -> None:
    """Feed one span's edges and whole units to ``hasher`` (see :func:`combine`)."""
    if s.head:
        hasher.update(s.head)
    if len(s.pieces):
        hasher.add_pieces(s.pieces)
    if s.tail:
        hasher.update(s.tail)
