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
                                                 raw file's sha256 (and md5: not in a build's .c4z
                                                 unless asked for), block size, ...
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
ply); see :mod:`c4table.c4z.codec`. The frames' zstd blocks end where the parts end
(:func:`zstd_frame`), so a single probe of a key in part 0 decodes both frames only up to
the end of part 0 (9/16 of the work) and scans the keys from the part's start (numba).
Files of format versions 1 and 2 are refused with one line saying to compress the table
again (measurements: ``tools/bench/bench_lookup.py``, README).

**Integrity.** The trailer checks the header (xxh64), the header checks the index (xxh64),
the index checks every compressed block (xxh64) and zstd checks every decoded payload; a
decoded block must also fit its neighbours' first keys. Any failure is a
:class:`~c4table.errors.CorruptDataError` naming the block (or header, index, trailer):
never a wrong answer.

**Resumable compression.** :func:`~c4table.c4z.writer.compress_table` writes ``OUT.part`` (blocks in order) and
``OUT.part.idx`` (24 bytes per finished block) and, every :data:`CHECKPOINT_SECONDS`,
fsyncs both and records the count of finished blocks in ``OUT.part.json``. A rerun with the
same input and settings truncates both files to the checkpoint, re-reads (only hashes) the
input up to there, and continues; at the end the index, header and trailer are appended,
fsync'ed, and ``OUT.part`` is renamed to ``OUT``. :func:`~c4table.c4z.writer.decompress_table` resumes the same
way from the length of ``OUT.part`` (whole blocks are kept, the prefix is re-hashed).

>>> from c4table.c4z import compress_table, open_c4z
>>> compress_table("tables/4x4/connect4_4x4.dat", quiet=True).name
'connect4_4x4.c4z'
>>> with open_c4z("tables/5x4/connect4_5x4.c4z") as z:
...     z.outcome_byte(0)
20
"""
from __future__ import annotations

import os
import struct
from pathlib import Path



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
