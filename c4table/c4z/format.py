"""The ``.c4z`` container: a table compressed in blocks that can still be probed in place,
locally or over ranged reads from an object store or a web server.

Design notes: ``docs/modules.md`` (``c4table.c4z.format``).

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
FORMAT_VERSION = 5                      # what the writers write (their default codec's)
TRANSFORM = "varint-plysym-v3"          # format 3's codec: zstd of the key deltas
RULE_CODEC = "rulekeys-plysym-v4"       # format 4's: the keys as bits over the rules' candidates
DEFAULT_CODEC = "rulekeys-frames-v5"    # compress (of a .dat) and compress_stream (.xz, stdin)
BUILD_CODEC = TRANSFORM                 # build --format c4z's default (C4TABLE_C4Z_CODEC)
RUN_ENTRIES = 1 << 11                   # format 4: entries of a run of keys a probe walks
FRAME_CODEC = DEFAULT_CODEC             # format 5's: short key runs, small symbol frames
SHORT_RUN_ENTRIES = 1 << 8              # format 5: entries of a run of keys a probe walks ...
FRAME_ENTRIES = 1 << 14                 # ... and of the symbol frame it decodes
DEFAULT_BLOCK_ENTRIES = 1 << 16
ARCHIVE_BLOCK_ENTRIES = 1 << 24         # compress --archive: smaller files, probes in tens of ms
DEFAULT_LEVEL = 19
TAIL_BYTES = 1 << 16                    # bytes a reader fetches from the end of the file at open
CACHE_BLOCKS = 64                       # decoded blocks kept per open file (LRU) ...
CACHE_ENTRIES = 64 << 16                # ... and at most this many entries (big archive blocks)
PART_SHARE = (9, 16)                    # a block's first part: 9/16 of its entries (default)
BUILD_PART_ENTRIES = 1 << 16            # build --format c4z: parts of its blocks (C4TABLE_C4Z_BLOCK_ENTRIES)
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
