"""Streaming conversion into a ``.c4z``: :func:`compress_stream` turns a raw table that arrives
as a stream (an ``.xz`` archive such as Cadot's ``connect4_7x6.dat.xz``, decoded in-process,
or any byte stream on standard input) into a ``.c4z`` without the raw table ever touching the
disk, in bounded memory.

Design notes: ``docs/modules.md`` (``c4table.c4z.stream``)."""
from __future__ import annotations

import hashlib
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from c4table.c4z.blocks import tune_malloc
from c4table.c4z.blockwriter import BlockWriter, Resume, WriteProfile, idx_path, load_checkpoint, publish_part
from c4table.c4z.format import DEFAULT_CODEC, PROGRESS_EVERY, default_c4z_name
from c4table.c4z.writer import _say
from c4table.errors import CorruptDataError, MissingTableError, TableBoardError, TableError
from c4table.game.board import Board
from c4table.io.treehash import TreeHash
from c4table.progress import Meter
from c4table.units import format_seconds, format_size

STREAM_LEVEL = 9
"""zstd level of the streaming profile: about 80 MB of raw table per CPU-second with the
block codec on 5x5 (level 19: about 7), 6.2% of raw on 5x5 at :data:`STREAM_BLOCK_ENTRIES`."""
STREAM_BLOCK_ENTRIES = 1 << 18
"""Entries per block of the streaming profile (4x the default: the size of level 19 at
65,536-entry blocks at level 9's speed; a single probe decodes up to 4x more)."""

_END = object()


def is_stream_input(src) -> bool:
    """True for the inputs :func:`compress_stream` takes: ``-`` (standard input) or a path
    ending in ``.xz``."""
    return str(src) == "-" or str(src).lower().endswith(".xz")


def stream_names(src, board: str | Board | None, out) -> tuple[Board, str, Path]:
    """``(board, raw file name, output path)`` of a stream input: the board from ``board``
    or the archive's name (``connect4_7x6.dat.xz``); the raw name is the archive's name
    without ``.xz`` (the board's table name for standard input); the output defaults to
    the raw name with ``.c4z`` (beside the archive; in the current directory for stdin).

    >>> b, raw, out = stream_names("dl/connect4_7x6.dat.xz", None, None)
    >>> b.name, raw, str(out)
    ('7x6', 'connect4_7x6.dat', 'dl/connect4_7x6.c4z')
    """
    s = str(src)
    raw_name = Path(s[:-3]).name if s.lower().endswith(".xz") else None
    named = Board.of_table_name(raw_name) if raw_name else None
    if board is not None:
        b = Board.parse(board, named.k) if isinstance(board, str) and named else Board.parse(board)
    elif named is not None:
        b = named
    else:
        raise TableBoardError(f"{s}: cannot tell the board of this stream; give the board "
                              "(--board WxH)")
    raw_name = raw_name or b.table_filename
    if out is None:
        out = default_c4z_name(Path(s[:-3]) if s != "-" else Path(raw_name))
    return b, raw_name, Path(out)


class _Hasher:
    """One hash of the stream on its own thread, block by block; remembers its state after
    each of the last ``keep`` blocks (for checkpoints)."""

    def __init__(self, name: str, keep: int, depth: int):
        self.h = hashlib.new(name)
        self.q: queue.Queue = queue.Queue(depth)
        self.done = 0
        self.states: dict[int, object] = {}
        self.keep = keep
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while (b := self.q.get()) is not _END:
            self.h.update(b)
            with self.cv:
                self.done += 1
                self.states[self.done] = self.h.copy()
                self.states.pop(self.done - self.keep, None)
                self.cv.notify_all()

    def at(self, blocks: int) -> str:
        """The hex digest of the stream's first ``blocks`` blocks (waits for them)."""
        with self.cv:
            self.cv.wait_for(lambda: self.done >= blocks)
            return self.states[blocks].hexdigest()

    def finish(self) -> str:
        self.q.put(_END)
        self.t.join()
        return self.h.hexdigest()


class _TreeFeed:
    """The stream's tree hash (:class:`~c4table.io.treehash.TreeHash`, pieces on threads),
    fed block by block from its own thread."""

    def __init__(self, depth: int):
        self.tree = TreeHash()
        self.q: queue.Queue = queue.Queue(depth)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while (b := self.q.get()) is not _END:
            self.tree.update(b)

    def finish(self) -> str:
        self.q.put(_END)
        self.t.join()
        return self.tree.result()["sha256_tree"]


def _read_full(f, n: int) -> bytes:
    """``n`` bytes of ``f``, fewer only at its end."""
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return parts[0] if len(parts) == 1 else b"".join(parts)


class _Reader:
    """The stream read in chunks on a thread, ``depth`` chunks ahead; errors of the decoder
    (a damaged or truncated ``.xz``) come out of :meth:`get` as one-line errors."""

    def __init__(self, f, name: str, chunk: int, depth: int):
        self.f, self.name, self.chunk = f, name, chunk
        self.q: queue.Queue = queue.Queue(depth)
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        import lzma
        try:
            while not self.stop:
                b = _read_full(self.f, self.chunk)
                self.q.put(b)
                if len(b) < self.chunk:
                    return
        except (lzma.LZMAError, EOFError) as e:
            self.q.put(CorruptDataError(f"{self.name}: damaged or truncated xz stream ({e})"))
        except (OSError, ValueError) as e:   # ValueError: closed under us after an error
            self.q.put(TableError(f"{self.name}: cannot read ({e})"))

    def get(self) -> bytes:
        b = self.q.get()
        if isinstance(b, Exception):
            raise b
        return b

    def close(self, wait: float | None = None) -> None:
        """Stop reading: unblock the thread if it waits on a full queue and wait for it to
        end (at most ``wait`` seconds: a thread blocked reading a pipe that stalls is left,
        a daemon, to the process's end)."""
        self.stop = True
        end = None if wait is None else time.monotonic() + wait
        while self.t.is_alive() and (end is None or time.monotonic() < end):
            try:
                self.q.get(timeout=0.05)
            except queue.Empty:
                pass


def _open_input(src):
    s = str(src)
    if s == "-":
        return sys.stdin.buffer, "standard input", {"input": "-"}
    p = Path(s)
    if not p.is_file():
        raise MissingTableError(f"{p}: no such file")
    import lzma
    st = p.stat()
    ident = {"input": str(p.resolve()), "input_bytes": st.st_size, "mtime_ns": st.st_mtime_ns}
    return lzma.open(p, "rb"), str(p), ident


def _reread(reader: _Reader, hashers, name: str, done: int, chunk: int, quiet: bool, stream,
            out_name: str) -> int:
    """Read (and hash) the stream's first ``done`` blocks again to resume at the checkpoint;
    returns the bytes read."""
    _say(quiet, stream, f"[compress] resuming {out_name} at block {done:,}; reading the "
                        f"first {format_size(done * chunk)} of the stream again")
    meter = Meter("re-read", done * chunk, "bytes", quiet, stream, PROGRESS_EVERY)
    total = 0
    for _ in range(done):
        raw = reader.get()
        if len(raw) < chunk:
            raise CorruptDataError(f"{name}: the stream ends ({format_size(total + len(raw))}) "
                                   f"before the checkpoint ({format_size(done * chunk)}): "
                                   "not the stream the checkpoint was made from")
        total += len(raw)
        for h in hashers:
            h.q.put(raw)
        meter.update(total)
    return total


def _check_known(name: str, b: Board, ref: dict, total: int, sha256: str, paths) -> None:
    """Refuse a stream of a board with a known complete table (``ref``) that is not that
    table (``total`` bytes, ``sha256``), removing the part files ``paths``."""
    known_bytes = int(ref.get("bytes") or 0)
    if known_bytes and (total != known_bytes or sha256 != ref.get("sha256")):
        for p in paths:
            p.unlink(missing_ok=True)
        what = (f"{total:,} bytes, the known table has {known_bytes:,} (truncated?)"
                if total != known_bytes else
                f"sha256 {sha256} is not the known table's {ref.get('sha256')}")
        raise CorruptDataError(f"{name}: not the complete {b} table: {what}; nothing kept")


def _stop(reader: _Reader, hashers, f, own: bool) -> None:
    """Stop the reader and hash threads; close the input ``f`` if ``own`` (ours to close: not
    standard input nor a caller's file object, whose reader is given at most 2 s)."""
    reader.close(wait=None if own else 2.0)
    for h in hashers:
        if h.t.is_alive():
            h.q.put(_END)
    if own:
        f.close()


def compress_stream(src, out=None, *, board: str | Board | None = None,
                    level: int = STREAM_LEVEL, block_entries: int = STREAM_BLOCK_ENTRIES,
                    part_entries: int | None = None, threads: int | None = None,
                    quiet: bool = False, stream=None, infile=None, min_match: int = 0,
                    codec: str = DEFAULT_CODEC, frame_entries: int | None = None) -> Path:
    """Convert the raw table stream ``src`` (a ``.xz`` path, or ``-`` for standard input;
    ``infile``: a binary file object to read instead of standard input) into the ``.c4z``
    ``out`` (default: :func:`stream_names`), resuming an interrupted run (module docstring).
    ``min_match``: the frames' zstd parameters (:func:`~c4table.c4z.blocks.zstd_params`; 0,
    the default: the level's own); ``codec``: the block codec's name (default format 5's);
    ``frame_entries``: its symbol frames' entries (format 5; default its own). Returns ``out``."""
    from c4table.table.known import known_tables
    b, raw_name, out = stream_names(src, board, out)
    prof = WriteProfile.checked(codec, level, block_entries, part_entries, min_match, threads,
                                key_dict=False, sym_dict=False, frame_entries=frame_entries)
    threads = prof.threads
    tune_malloc()
    E = b.entry_size
    chunk = block_entries * E
    ref = known_tables().get(b.name) or {}
    known_bytes = int(ref.get("bytes") or 0)
    stream = stream or sys.stderr
    part, ckpt = (out.with_name(out.name + s) for s in (".part", ".part.json"))
    f, name, ident = _open_input(src)
    if infile is not None:
        f = infile
    settings = {**ident, **prof.settings(b.name), "stream": True}
    state = load_checkpoint(ckpt, part, settings) or {}
    done = int(state["blocks"]) if state else 0
    codec = prof.codec(b)
    t0 = time.perf_counter()
    depth = 2 * threads + 2
    reader = _Reader(f, name, chunk, depth)
    sha = _Hasher("sha256", 6 * threads + 16, depth)
    md5 = _Hasher("md5", 1, depth)
    tree = _TreeFeed(depth)
    total = 0
    try:
        resume = None
        if done:
            total = _reread(reader, (sha, md5, tree), name, done, chunk, quiet, stream, out.name)
            if sha.at(done) != state.get("prefix_sha256"):
                raise CorruptDataError(f"{name}: the first {format_size(done * chunk)} of the stream "
                                       f"differ from those the checkpoint was made from; remove "
                                       f"{part.name}* to start again")
            resume = Resume(done, int(state["part_bytes"]), int(state["last_key"]))
        meter = Meter("compress", max(0, known_bytes - total), "bytes", quiet, stream,
                      PROGRESS_EVERY)
        with ThreadPoolExecutor(threads) as pool, BlockWriter(
                part, codec, block_entries, resume=resume, pool=pool, ahead=2 * threads,
                check_outcomes=True,
                bad_block=lambda i, e: CorruptDataError(
                    f"{name}: block {i:,} (entries from {i * block_entries:,}): {e}"),
                unordered=lambda i, *_: CorruptDataError(
                    f"{name}: keys not strictly increasing at block {i:,} "
                    "(not a sorted table, or damaged)")) as w:
            start = total
            while True:
                raw = reader.get()
                if not raw:
                    break
                if len(raw) % E:
                    raise CorruptDataError(f"{name}: the stream ends inside an entry ({total + len(raw):,} "
                                           f"bytes, not a multiple of the {E}-byte entry of board {b}: "
                                           "truncated?)")
                total += len(raw)
                sha.q.put(raw)
                md5.q.put(raw)
                tree.q.put(raw)
                w.add_raw(raw)
                now = time.perf_counter()
                if w.due(now) and w.blocks > done and len(raw) == chunk:
                    w.checkpoint(ckpt, settings, now, prefix_sha256=sha.at(w.blocks),
                                 last_key=w.last_key)
                meter.update(total - start, now, block=f"{w.blocks:,}",
                             written=format_size(w.part_bytes))
                if len(raw) < chunk:
                    break
            w.drain()
            if total == 0:
                raise CorruptDataError(f"{name}: empty stream, no table")
            digests = {"sha256_tree": tree.finish(), "sha256": sha.finish(), "md5": md5.finish()}
            _check_known(name, b, ref, total, digests["sha256"], (part, idx_path(part), ckpt))
            w.finish(entries=total // E, raw_bytes=total, digests=digests, file=raw_name)
        publish_part(part, out, ckpt)
    finally:
        _stop(reader, (sha, md5, tree), f, own=f is not sys.stdin.buffer and infile is None)
    secs = time.perf_counter() - t0
    osize = out.stat().st_size
    _say(quiet, stream, f"[compress] {out}: {format_size(osize)} ({100 * osize / total:.2f}% of "
                        f"{format_size(total)} raw), {w.blocks:,} blocks, sha256 {digests['sha256']}, "
                        f"{format_seconds(secs)}, {total / max(secs, 1e-9) / 2**20:.0f} MiB/s")
    return out
