"""Re-encoding a ``.c4z``: :func:`recompress_c4z` writes the table of a ``.c4z`` (any format a
reader opens: format 3 ``varint-plysym-v3``, 4 ``rulekeys-plysym-v4``, 5 ``rulekeys-frames-v5``) into a new
``.c4z`` of another block codec, zstd level or block grid. The input's blocks are decoded
ahead on threads (:meth:`~c4table.c4z.reader.C4zFile.iter_blocks`), cut to the output's grid
and fed to the :class:`~c4table.c4z.blockwriter.BlockWriter` every writer uses, so the raw
table never touches the disk. The bytes streamed must hash to the tree hash, sha256 and md5
the input's header records (those it has); an interrupted run resumes from its checkpoint (the input's
blocks before it are decoded and hashed again, not compressed)."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Iterator

from c4table.c4z.blocks import rows_of, train_dicts_on, tune_malloc
from c4table.c4z.blockwriter import BlockWriter, Resume, WriteProfile, idx_path, load_checkpoint, publish_part
from c4table.c4z.format import (DEFAULT_BLOCK_ENTRIES, DEFAULT_CODEC, DEFAULT_LEVEL,
                                KEY_DICT_BYTES, PROGRESS_EVERY, SYM_DICT_BYTES)
from c4table.c4z.reader import C4zFile, open_c4z
from c4table.c4z.sources import LocalSource
from c4table.c4z.writer import _dicts_of_part, _say
from c4table.errors import CorruptDataError, InputError
from c4table.io.hashes import Hashes
from c4table.io.treehash import FIELD
from c4table.progress import Meter
from c4table.units import format_seconds, format_size


def rechunk(blocks: Iterable, chunk: int) -> Iterator[bytes]:
    """The bytes of ``blocks`` (buffers, in order) cut into pieces of ``chunk`` bytes, the last
    one shorter if the total is not a multiple (a buffer of exactly ``chunk`` bytes that starts
    a piece is passed on as it is).

    >>> [bytes(p) for p in rechunk([b"abc", b"defgh", b"ij"], 4)]
    [b'abcd', b'efgh', b'ij']
    """
    carry = bytearray()
    for raw in blocks:
        mv = memoryview(raw).cast("B")
        if not carry and len(mv) == chunk:
            yield raw
            continue
        pos = 0
        if carry:
            pos = min(chunk - len(carry), len(mv))
            carry += mv[:pos]
            if len(carry) < chunk:
                continue
            yield bytes(carry)
            carry = bytearray()
        while len(mv) - pos >= chunk:
            yield bytes(mv[pos: pos + chunk])
            pos += chunk
        carry += mv[pos:]
    if carry:
        yield bytes(carry)


def raw_reader(z: C4zFile):
    """``read(offset, n)``: ``n`` bytes of the raw table of ``z`` from ``offset`` (fewer at its
    end), decoded from the blocks that hold them."""
    E, B = z.entry_size, z.block_entries
    step = B * E

    def read(offset: int, n: int) -> bytes:
        lo, hi = offset // step, min((offset + max(n, 1) - 1) // step, z.blocks - 1)
        data = b"".join(bytes(rows_of(*z.block(i), E)) for i in range(lo, hi + 1))
        start = offset - lo * step
        return data[start: start + n]
    return read


def _identity(src, z: C4zFile, out: Path) -> dict:
    """What a checkpoint records of the input ``src`` (opened as ``z``): its place, size,
    modification time (a local file) and the table's sha256; refuses ``out`` if it is the
    input itself."""
    s = str(src)
    ident = {"input_sha256": z.header.get("sha256") or z.header.get(FIELD),
             "input_bytes": z.src.size}
    if not isinstance(z.src, LocalSource):
        return {"input": s, **ident}
    p = Path(s[len("file://"):] if s.startswith("file://") else s).resolve()
    if out.resolve() == p or (out.exists() and os.path.samefile(out, p)):
        raise InputError(f"{out}: the output would overwrite the input")
    return {"input": str(p), "mtime_ns": p.stat().st_mtime_ns, **ident}


@contextlib.contextmanager
def _dropped_if_damaged(*files: Path):
    """Delete ``files`` (this run's part file and side files) if the input turns out damaged
    (:class:`CorruptDataError`): nothing of the run is kept, and no ``.c4z`` appears. Other
    failures (an interruption, a read that failed) leave the checkpoint to resume from."""
    try:
        yield
    except CorruptDataError:
        for p in files:
            p.unlink(missing_ok=True)
        raise


def _check_digests(where: str, header: dict, digests: dict) -> None:
    """Refuse a stream whose ``digests`` (bytes, tree hash, sha256, md5) differ from the
    input's ``header`` (what it records of them)."""
    if digests["bytes"] != int(header["raw_bytes"]):
        raise CorruptDataError(f"{where}: its blocks decode to {digests['bytes']:,} bytes, the "
                               f"header records {int(header['raw_bytes']):,}; nothing kept")
    for k in (FIELD, "sha256", "md5"):
        if header.get(k) and k in digests and header[k] != digests[k]:
            raise CorruptDataError(f"{where}: its blocks decode to {k} {digests[k]}, the header "
                                   f"records {header[k]} (damaged); nothing kept")


def recompress_c4z(src, out: str | os.PathLike, *, level: int = DEFAULT_LEVEL,
                   block_entries: int = DEFAULT_BLOCK_ENTRIES, part_entries: int | None = None,
                   threads: int | None = None, quiet: bool = False, stream=None,
                   key_dict: bool = True, sym_dict: bool = True, min_match: int = 0,
                   codec: str = DEFAULT_CODEC, frame_entries: int | None = None) -> Path:
    """Write the table of the ``.c4z`` ``src`` (a path or URI) into the ``.c4z`` ``out`` with
    the block codec ``codec`` (default format 5's), zstd ``level``, ``block_entries`` per
    block, ``part_entries`` per part and ``frame_entries`` per symbol frame (as
    :func:`~c4table.c4z.writer.compress_table`; its
    dictionaries trained on the input's decoded blocks), on ``threads`` threads, resuming an
    interrupted run (module docstring). The output's raw table is the input's byte for byte:
    checked against the input header's tree hash, sha256 and md5. A damaged input (a block that
    fails its checksum or does not decode, or a stream that does not hash as the header says) is
    refused with :class:`CorruptDataError` and leaves no part file. Returns ``out``.

    >>> recompress_c4z("tables/5x4/connect4_5x4.c4z", "v3.c4z", quiet=True,
    ...                codec="varint-plysym-v3").name
    'v3.c4z'
    """
    out = Path(out)
    prof = WriteProfile.checked(codec, level, block_entries, part_entries, min_match, threads,
                                key_dict, sym_dict, frame_entries)
    threads = prof.threads
    tune_malloc()
    stream = stream or sys.stderr
    with open_c4z(src) as z:
        h = z.header
        where = z.where
        settings = {**_identity(src, z, out), **prof.settings(z.board.name)}
        E = z.entry_size
        raw_bytes = int(h["raw_bytes"])
        if raw_bytes != z.entries * E:
            raise CorruptDataError(f"{where}: header inconsistent ({raw_bytes:,} raw bytes for "
                                   f"{z.entries:,} entries of {E} bytes)")
        chunk = block_entries * E
        nblocks = -(-z.entries // block_entries)
        part, ckpt = (out.with_name(out.name + s) for s in (".part", ".part.json"))
        state = load_checkpoint(ckpt, part, settings)
        done = int(state["blocks"]) if state else 0
        if done:   # the dictionaries the first run trained, from the part file
            kd, sd = _dicts_of_part(part, state)
        else:
            kd, sd = train_dicts_on(raw_reader(z), raw_bytes, z.board, block_entries,
                                    key_size=KEY_DICT_BYTES if prof.key_dict else 0,
                                    sym_size=SYM_DICT_BYTES if prof.sym_dict else 0)
            z.clear_cache()
        enc = prof.codec(z.board, kd, sd)
        hashes = Hashes()
        t0 = time.perf_counter()
        with _dropped_if_damaged(part, idx_path(part), ckpt):
            chunks = rechunk((raw for _, raw in z.iter_blocks(threads=threads, raw=True)), chunk)
            resume = None
            if done:
                resume = _reread(chunks, hashes, done, chunk, E, int(state["part_bytes"]),
                                 where, out.name, nblocks, quiet, stream)
            meter = Meter("compress", (nblocks - done) * chunk, "bytes", quiet, stream,
                          PROGRESS_EVERY)
            with ThreadPoolExecutor(threads) as pool, BlockWriter(
                    part, enc, block_entries, resume=resume, pool=pool, ahead=2 * threads,
                    hashes=hashes,
                    bad_block=lambda i, e: CorruptDataError(
                        f"{where}: output block {i:,} (entries from {i * block_entries:,}): {e}"),
                    unordered=lambda i, *_: CorruptDataError(
                        f"{where}: keys not strictly increasing at output block {i:,} "
                        "(damaged)")) as w:
                for raw in chunks:
                    w.add_raw(raw)
                    now = time.perf_counter()
                    if w.due(now):
                        w.checkpoint(ckpt, settings, now)
                    meter.update((w.blocks - done) * chunk, now,
                                 block=f"{w.blocks:,} of {nblocks:,}",
                                 written=format_size(w.part_bytes))
                w.drain()
                digests = hashes.result()
                _check_digests(where, h, digests)
                w.finish(entries=z.entries, raw_bytes=raw_bytes, digests=digests,
                         file=h["file"], root=h.get("root"))
        publish_part(part, out, ckpt)
    secs = time.perf_counter() - t0
    osize = out.stat().st_size
    _say(quiet, stream, f"[compress] {out}: {format_size(osize)} ({100 * osize / raw_bytes:.2f}% "
                        f"of {format_size(raw_bytes)} raw), {nblocks:,} blocks of {codec}, "
                        f"from {h.get('transform')}, sha256 {digests['sha256']} as recorded, "
                        f"{format_seconds(secs)}, {raw_bytes / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out


def _reread(chunks: Iterator[bytes], hashes: Hashes, done: int, chunk: int, E: int,
            part_bytes: int, where: str, out_name: str, nblocks: int, quiet: bool,
            stream) -> Resume:
    """Decode and hash the input's first ``done`` output blocks again (a resumed run): where
    the part file continues."""
    _say(quiet, stream, f"[compress] resuming {out_name} at block {done:,} of {nblocks:,}; "
                        f"decoding and hashing the first {format_size(done * chunk)} of the "
                        "input again")
    meter = Meter("re-read", done * chunk, "bytes", quiet, stream, PROGRESS_EVERY)
    raw = b""
    for j in range(done):
        raw = next(chunks, b"")
        if len(raw) != chunk:
            raise CorruptDataError(f"{where}: the table ends before the checkpoint's "
                                   f"{done:,} blocks: not the input the checkpoint was made from")
        hashes.update(raw)
        meter.update((j + 1) * chunk)
    return Resume(done, part_bytes, int.from_bytes(bytes(raw[-E:-1]), "big"))
