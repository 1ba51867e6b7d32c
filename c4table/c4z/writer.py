"""Writing and unwriting ``.c4z`` files: :func:`compress_table` (a ``.dat`` into a ``.c4z``,
resumable, in parallel threads: its blocks through :class:`~c4table.c4z.blockwriter.BlockWriter`)
and :func:`decompress_table` (the original bytes back, resumable)."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from c4table.progress import Meter
from c4table.game.board import Board
from c4table.errors import (CorruptDataError, InputError, MissingTableError,
                            TableError)
from c4table.units import format_seconds, format_size
from c4table.c4z.blocks import train_dicts, tune_malloc
from c4table.c4z.format import CHECKPOINT_SECONDS, DEFAULT_BLOCK_ENTRIES, DEFAULT_LEVEL, KEY_DICT_BYTES, MAGIC, PROGRESS_EVERY, SYM_DICT_BYTES, DEFAULT_CODEC, default_c4z_name
from c4table.c4z.blockwriter import BlockWriter, Resume, WriteProfile, _fsync, idx_path, load_checkpoint, publish_part
from c4table.c4z.reader import open_c4z
from c4table.table.source import board_of_table
from c4table.io.hashes import Hashes
from c4table.table.sums import BlockSums, SumsWriter, open_check, warn_unchecked
from c4table.io.files import fsync_dir
from c4table.io.storage import is_url, open_storage


def _say(quiet: bool, stream, text: str) -> None:
    if not quiet:
        print(text, file=stream or sys.stderr, flush=True)


def _board_of_input(src: Path, out: Path, board: str | Board | None) -> Board:
    """The board of the table file ``src`` to compress into ``out``, after checking that it
    exists, is not ``out`` and holds whole entries."""
    if not src.is_file():
        raise MissingTableError(f"{src}: no such table file")
    if out.resolve() == src.resolve():
        raise InputError(f"{out}: the output would overwrite the input")
    b = board_of_table(src, board)
    E = b.entry_size
    size = src.stat().st_size
    if size == 0 or size % E:
        raise TableError(f"{src}: size {size:,} is not a positive multiple of the {E}-byte entry of "
                         f"board {b} (truncated or wrong board?)")
    return b


def _dicts_of_part(part: Path, state: dict) -> tuple[bytes | None, bytes | None]:
    """The key and symbol dictionaries (``None`` where absent) at the start of the part file
    ``part`` of a resumed run, of the lengths its checkpoint ``state`` records."""
    with open(part, "rb") as f:
        f.seek(len(MAGIC))
        key_dict = f.read(int(state.get("key_dict_bytes", 0))) or None
        sym_dict = f.read(int(state.get("sym_dict_bytes", 0))) or None
    return key_dict, sym_dict


def _check_hashes(src: Path, hashes: dict, digests: dict) -> None:
    """Refuse the input ``src`` whose ``digests`` differ from the expected ``hashes``."""
    for k in ("sha256_tree", "sha256", "md5"):
        if hashes.get(k) and k in digests and hashes[k] != digests[k]:
            raise CorruptDataError(f"{src}: {k} {digests[k]} differs from the "
                                   f"expected {hashes[k]} (file changed while compressed?)")


@contextlib.contextmanager
def _dropped_if_refused(*files: Path):
    """Delete ``files`` (this run's part file and side files) if the input is refused
    (:class:`TableError`: damaged, unsorted, not what the manifest records): nothing of the
    run is kept to resume, and no ``.c4z`` appears."""
    try:
        yield
    except TableError:
        for p in files:
            p.unlink(missing_ok=True)
        raise


def compress_table(src: str | os.PathLike, out: str | os.PathLike | None = None, *,
                   board: str | Board | None = None, level: int = DEFAULT_LEVEL,
                   block_entries: int = DEFAULT_BLOCK_ENTRIES, threads: int | None = None,
                   quiet: bool = False, stream=None, hashes: dict | None = None,
                   root: str | None = None, part_entries: int | None = None,
                   key_dict: bool = True, sym_dict: bool = True, min_match: int = 0,
                   codec: str = DEFAULT_CODEC, frame_entries: int | None = None) -> Path:
    """Compress the table file ``src`` into ``out`` (default: ``src`` with ``.c4z``), streaming,
    on ``threads`` threads (default: all cores), resuming an interrupted run (module
    docstring). ``hashes`` (``sha256``, ``md5`` from a manifest), when given, must equal the
    hashes computed on the way. Each block of the input is checked against its block sums
    (``TABLE.dat.sums``) as it is read; a damaged one is refused (:class:`TableDamaged`, naming
    the block), as is a damaged sidecar, and the run leaves no part file behind; without a
    sidecar, a warning says the input is unchecked. ``part_entries``: the entries of a
    block's first part (and of every further part; default :func:`default_part_entries`),
    which a single probe decodes alone when it holds the key;
    ``key_dict=False`` / ``sym_dict=False`` skip the trained dictionaries; ``min_match``: the
    frames' zstd parameters (:func:`~c4table.c4z.blocks.zstd_params`; 0, the default: the
    level's own); ``codec``: the block codec's name (:mod:`~c4table.c4z.registry`; default
    format 5's); ``frame_entries``: the entries of its symbol frames, for a codec that has
    them (format 5; default :data:`~c4table.c4z.format.FRAME_ENTRIES`). Returns ``out``.

    >>> compress_table("tables/4x4/connect4_4x4.dat", "t44.c4z", quiet=True)
    PosixPath('t44.c4z')
    """
    src = Path(src)
    out = Path(out) if out is not None else default_c4z_name(src)
    b = _board_of_input(src, out, board)
    E = b.entry_size
    size = src.stat().st_size
    prof = WriteProfile.checked(codec, level, block_entries, part_entries, min_match, threads,
                                key_dict, sym_dict, frame_entries)
    threads = prof.threads
    tune_malloc()
    entries = size // E
    nblocks = -(-entries // block_entries)
    part, ckpt = (out.with_name(out.name + s) for s in (".part", ".part.json"))
    settings = {"src": str(src.resolve()), "bytes": size, "mtime_ns": src.stat().st_mtime_ns,
                **prof.settings(b.name)}
    state = load_checkpoint(ckpt, part, settings)
    done = int(state["blocks"]) if state else 0
    # the input's blocks, checked against its sidecar as they are read (None: it has none)
    check = open_check(open_storage(src.parent), src.name, size, E, src)
    if check is None:
        warn_unchecked(src)
    sums = check.block_sums() if check is not None else None
    h = Hashes(sums=sums)
    stream = stream or sys.stderr
    t0 = time.perf_counter()
    chunk = block_entries * E
    if done:   # the dictionary the first run trained, from the part file
        key_dict, sym_dict = _dicts_of_part(part, state)
    else:
        key_dict, sym_dict = train_dicts(src, b, block_entries,
                                         key_size=KEY_DICT_BYTES if prof.key_dict else 0,
                                         sym_size=SYM_DICT_BYTES if prof.sym_dict else 0)
    codec = prof.codec(b, key_dict, sym_dict)
    with _dropped_if_refused(part, idx_path(part), ckpt), check or contextlib.nullcontext(), \
            open(src, "rb") as fin:
        resume = None
        if done:
            _say(quiet, stream, f"[compress] resuming {out.name} at block {done:,} of {nblocks:,}; "
                                f"re-hashing the first {format_size(done * chunk)} of the input")
            for _ in range(done):
                h.update(fin.read(chunk))
            # the last key of the input before this point, for the order check
            resume = Resume(done, int(state["part_bytes"]), int.from_bytes(
                os.pread(fin.fileno(), E, fin.tell() - E)[:E - 1], "big"))
        meter = Meter("compress", (nblocks - done) * chunk, "bytes", quiet, stream, PROGRESS_EVERY)
        with ThreadPoolExecutor(threads) as pool, BlockWriter(
                part, codec, block_entries, resume=resume, pool=pool, ahead=2 * threads,
                hashes=h, bad_block=lambda i, e: TableError(f"{src}: block {i}: {e}"),
                unordered=lambda i, *_: TableError(f"{src}: keys not strictly increasing at "
                                                   f"block {i} (not a sorted table)")) as w:
            for _ in range(done, nblocks):
                w.add_raw(fin.read(chunk))
                now = time.perf_counter()
                if w.due(now):
                    w.checkpoint(ckpt, settings, now)
                meter.update((w.blocks - done) * chunk, now, block=f"{w.blocks:,} of {nblocks:,}",
                             written=format_size(w.part_bytes))
            w.drain()
            if check is not None:
                sums.finish()
                check.finish()   # (raises for a damaged block or sidecar)
            digests = h.result()
            _check_hashes(src, hashes or {}, digests)
            w.finish(entries=entries, raw_bytes=size, digests=digests, file=src.name, root=root)
    publish_part(part, out, ckpt)
    secs = time.perf_counter() - t0
    osize = out.stat().st_size
    _say(quiet, stream, f"[compress] {out}: {format_size(osize)} ({100 * osize / size:.2f}% of "
                        f"{format_size(size)}), {nblocks:,} blocks, {format_seconds(secs)}, "
                        f"{size / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out


# ----------------------------------------------------------------------- decompress
def decompress_table(src, out: str | os.PathLike | None = None, *, threads: int | None = None,
                     quiet: bool = False, stream=None) -> Path:
    """Write the original table of the ``.c4z`` ``src`` (path or URI) to ``out`` (default: the
    name recorded in its header, in the current directory for a URI, beside ``src``
    otherwise), checking its tree hash, sha256 and md5 (those the header records) against it;
    resumes an interrupted run.

    >>> decompress_table("tables/5x4/connect4_5x4.c4z", "copy.dat", quiet=True).name
    'copy.dat'
    """
    stream = stream or sys.stderr
    threads = threads or os.cpu_count() or 1
    with open_c4z(src) as z:
        h = z.header
        if out is None:
            s = str(src)
            out = Path(h["file"]) if is_url(s) else Path(s).with_name(h["file"])
            if out.exists():
                raise TableError(f"{out} already exists; give the output file (-o) to replace it")
        out = Path(out)
        part = out.with_name(out.name + ".part")
        E, B = z.entry_size, z.block_entries
        chunk = B * E
        done = 0
        # the .dat's block checksums, streamed into its sidecar (dropped if this run fails)
        sidecar = SumsWriter(open_storage(out.absolute().parent), out.name)
        sums = BlockSums(E, sink=sidecar.take)
        hashes = Hashes(sums=sums)
        t0 = time.perf_counter()
        if part.exists() and z.blocks:
            done = min(part.stat().st_size // chunk, z.blocks - 1)
        with sidecar:   # its temporary file is dropped unless committed
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
                meter = Meter("decompress", (z.blocks - done) * chunk, "bytes", quiet, stream, PROGRESS_EVERY)
                for i, raw in z.iter_blocks(done, threads=threads, raw=True):
                    hashes.update(raw)
                    f.write(raw)
                    written += len(raw)
                    now = time.perf_counter()
                    if now - last_sync >= CHECKPOINT_SECONDS:
                        _fsync(f)   # what is on disk before this point survives a crash
                        last_sync = now
                    meter.update((i + 1 - done) * chunk, now, block=f"{i + 1:,} of {z.blocks:,}",
                                 written=format_size(written))
                _fsync(f)
            d = hashes.result()
            # the header's hashes, those it records (a build's .c4z: its tree hash alone)
            diffs = [f"{k} {d[k]} != {h[k]}" for k in ("sha256_tree", "sha256", "md5")
                     if k in h and d[k] != h[k]]
            if d["bytes"] != h["raw_bytes"] or diffs:
                part.unlink(missing_ok=True)
                raise CorruptDataError(f"{src}: the decompressed table does not match the header "
                                       f"({', '.join(diffs) or 'size'}); output removed")
            sidecar.commit(sums)
    os.replace(part, out)
    fsync_dir(out.absolute().parent)
    secs = time.perf_counter() - t0
    # the hash the header records that was compared (a build's .c4z: its tree hash alone)
    said = next((f"{k} {d[k]} matches" for k in ("sha256_tree", "sha256", "md5") if k in h),
                f"sha256 {d['sha256']} (the header records no hash)")
    _say(quiet, stream, f"[decompress] {out}: {d['bytes']:,} bytes, {said}, "
                        f"{format_seconds(secs)}, {d['bytes'] / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out
