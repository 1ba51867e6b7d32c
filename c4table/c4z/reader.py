"""Reading a ``.c4z``: :class:`C4zFile` (header, index, blocks decoded on demand by the block
codec the header names, :mod:`~c4table.c4z.registry`, and kept in an LRU) and
:class:`RawStream` (the original table's bytes, for hashing)."""
from __future__ import annotations

import bisect
import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import numpy as np
import xxhash
import zstandard

from c4table.game.board import Board
from c4table.errors import (CorruptDataError, PositionNotFoundError, TableError)
from c4table.c4z.blocks import rows_of, tune_malloc
from c4table.c4z.format import CACHE_BLOCKS, CACHE_ENTRIES, END_MAGIC, MAGIC, TAIL_BYTES, TRAILER
from c4table.c4z.registry import get_codec
from c4table.table.source import finish_probe
from c4table.lru import LRUCache
from c4table.c4z.sources import LocalSource, cache_dir, open_source


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
        self._lru = LRUCache(self._cache_blocks)    # decoded blocks: (keys, outcome bytes)
        self._slru = LRUCache(self._cache_blocks)   # decompressed streams of probed blocks
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
            self.board = Board.from_json(h)   # its variant's fields (docs/FORMAT.md section 8)
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
        if h.get("format") != "c4z":
            raise TableError(f"{self.where}: unsupported .c4z variant (format "
                             f"{h.get('format')!r}); upgrade c4table")
        try:
            codec = get_codec(h.get("transform"))
        except TableError as e:
            raise TableError(f"{self.where}: {e}") from None
        if self.entry_size != self.board.entry_size or self.part_entries < 1 or \
                self.blocks != -(-self.entries // self.block_entries):
            raise self._bad("header inconsistent (entry size or block count)")
        comp = None
        cache = None
        remote = not isinstance(self.src, LocalSource)
        if cache_index is None:
            cache_index = remote
        if cache_index:
            cache = cache_dir() / f"{h.get('sha256') or h.get('sha256_tree')}-{hdr_xxh:016x}.idx"
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
        self.codec = codec.from_header(h, self.board, self.key_dict, self.sym_dict)

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

    def read_block(self, i: int, copy: bool = False) -> bytes:
        """The compressed bytes of block ``i``, checked against the index (one read): a view of
        the mapped file where there is one, unless ``copy`` (a read into a buffer of its own:
        a scan of the whole file then leaves no pages of it mapped in this process, whose
        resident size stays that of its buffers)."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        view = hasattr(self.src, "view") and not copy
        comp = self.src.view(lo, hi - lo) if view else self.src.read(lo, hi - lo)
        if len(comp) != hi - lo:
            raise self._bad(f"block {i} (bytes {lo:,}..{hi:,}): short read (truncated file)")
        if xxhash.xxh64_intdigest(comp) != int(self.checksums[i]):
            raise self._bad(f"block {i} (bytes {lo:,}..{hi:,}): checksum mismatch (damaged block)")
        return comp

    def decode_block(self, i: int, comp: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of block ``i`` from its compressed bytes, checked."""
        n = self.block_rows(i)
        try:
            keys, outs = self.codec.decode(comp, n, int(self.first_keys[i]))
        except (zstandard.ZstdError, ValueError) as e:
            raise self._bad(f"block {i}: cannot be decoded ({e}); damaged block") from None
        if i + 1 < self.blocks and not keys[-1] < self.first_keys[i + 1]:
            raise self._bad(f"block {i}: keys run past the next block's first key (damaged block)")
        return keys, outs

    def block(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Keys and outcome bytes of block ``i`` (cached)."""
        hit = self._lru.get(i)
        if hit is not None:
            return hit
        got = self.decode_block(i, self.read_block(i))
        self._lru.put(i, got)
        return got

    def iter_blocks(self, start: int = 0, stop: int | None = None, threads: int = 2,
                    raw: bool = False) -> Iterator[tuple]:
        """``(i, keys, outcome bytes)`` of blocks ``start..stop`` in order, read and decoded
        ahead on ``threads`` threads (bounded: at most ``2 * threads`` blocks in flight);
        ``(i, raw table bytes)`` with ``raw`` (made in the threads too: numba kernels and
        zstd release the GIL). Blocks are read into buffers (:meth:`read_block` with ``copy``),
        not viewed in the mapped file: a scan of a large table would otherwise count every
        page it passed in the resident size."""
        stop = self.blocks if stop is None else stop

        def job(i):
            k, o = self.decode_block(i, self.read_block(i, copy=True))
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
        """Outcome byte of ``key`` in block ``i`` or -1, decoding only what it needs
        (the codec's ``probe``); what it decoded stays in a small LRU of its own."""
        n = self.block_rows(i)
        got = self._slru.get(i)
        try:
            if got is None:
                got = self.codec.probe_state(
                    self.read_block(i, copy=getattr(self.codec, "probe_copies", False)), n,
                    int(self.first_keys[i]))
                self._slru.put(i, got)
            return self.codec.probe(got, n, key)
        except (zstandard.ZstdError, ValueError) as e:
            self._slru.pop(i)
            raise self._bad(f"block {i}: cannot be decoded ({e}); damaged block") from None

    def probe_keys(self, keys, default: int | None = None) -> np.ndarray:
        """Outcome bytes of many keys (any order): each needed block is read and decoded once,
        but for a block not decoded yet that holds at most the codec's ``probe_alone`` of the
        keys, whose keys are probed one by one (:meth:`_probe_block`, which decodes a part of
        the block only). Missing keys raise :class:`PositionNotFoundError`, or get ``default``
        (int16 result)."""
        q = np.asarray(keys, dtype=np.uint64).ravel()
        out = np.full(q.shape[0], -1, np.int16)
        if q.size == 0:
            return out if default is not None else out.astype(np.uint8)
        order = np.argsort(q, kind="stable")
        sq = q[order]
        blk = np.searchsorted(self.first_keys, sq, "right").astype(np.int64) - 1
        cuts = np.flatnonzero(np.diff(blk)) + 1
        res = np.full(sq.shape[0], -1, np.int16)
        alone = getattr(self.codec, "probe_alone", 1)
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, sq.shape[0]]):
            i = int(blk[lo])
            if i < 0:
                continue
            if hi - lo <= alone and self._lru.get(i) is None:
                res[lo:hi] = [self._probe_block(i, int(k)) for k in sq[lo:hi]]
                continue
            bk, bo = self.block(i)
            j = np.searchsorted(bk, sq[lo:hi])
            j = np.minimum(j, bk.shape[0] - 1)
            hit = bk[j] == sq[lo:hi]
            res[lo:hi] = np.where(hit, bo[j].astype(np.int16), -1)
        out[order] = res
        return finish_probe(out, q, default, self.where, self.board)

    def clear_cache(self) -> None:
        """Forget every decoded block (benchmarks measure probes without the LRU)."""
        self._lru.clear()
        self._slru.clear()

    def close(self) -> None:
        self.src.close()
        self.clear_cache()

    def __enter__(self) -> "C4zFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
