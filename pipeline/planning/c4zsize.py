"""How big a board's ``.c4z`` will be: the measured sizes of the boards built here and the model
that extrapolates them to boards not built (7x6), used by ``c4table plan``.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.c4zsize``).

>>> from c4table.game.board import Board
>>> e = estimate(Board.parse("5x5"), 34888367)
>>> e.measured, round(e.bytes_per_entry, 4)
(True, 0.2961)
>>> e = estimate(Board.parse("7x6"), 2265992609603)
>>> e.measured, 0.15 < e.bytes_per_entry < 0.3
(False, True)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from c4table.c4z.format import KEY_DICT_BYTES

# Whole .c4z bytes per table entry, default format (65,536-entry blocks, zstd 19, trained key
# dictionary), tools/bench/bench_lookup.py: 4x6, 5x5 and 5x6 whole files; 6x4, 7x4 and 6x5 estimated
# from 200 evenly spread blocks (--sample-blocks; within 1% of the whole file on the other three).
C4Z_MEASURED = {   # board: (entries, bytes per entry)
    "4x6": (7_917_955, 0.2813), "5x5": (34_888_367, 0.2961), "6x4": (47_455_869, 0.2777),
    "5x6": (522_196_933, 0.2460), "7x4": (1_132_927_517, 0.2540),
    "6x5": (1_409_488_535, 0.2524)}

# Key frames and symbol frames apart, bytes per entry, default format, 200 evenly spread blocks
# (all blocks of 5x4 and 4x6): python -m tools.diag.c4z_streams FILE.dat --blocks 200 (load 6-7).
C4Z_STREAMS = {   # board: (entries, keys, symbols)
    "5x4": (1_974_174, 0.1060, 0.1977), "4x6": (7_917_955, 0.0960, 0.1733),
    "5x5": (34_888_367, 0.1137, 0.1801), "6x4": (47_455_869, 0.0881, 0.1863),
    "5x6": (522_196_933, 0.1026, 0.1451), "7x4": (1_132_927_517, 0.0860, 0.1673),
    "6x5": (1_409_488_535, 0.0979, 0.1538)}

INDEX_BYTES_PER_BLOCK = 24

# .c4z bytes / Cadot's xz bytes on the same bytes of our tables (tools/compare/c4z_xz_anchor.py; whole
# files for 4x6 and 5x5, the middle 100 MB for the others; load 7-12): xz's 64 MiB window gains
# on the bigger boards, so the ratio rises with size.
C4Z_OVER_CADOT_XZ = {"4x6": 0.834, "5x5": 0.948, "5x6": 1.046, "7x4": 1.159, "6x5": 1.316}
CADOT_XZ_7X6 = 350_251_723_872   # Cadot, 7x6/README.txt, section 2.2

# Archive profile against the default on the same regions (tools/diag/c4z_streams.py --compare-blocks).
ARCHIVE_BLOCK_ENTRIES = 1 << 24     # c4table.c4z.ARCHIVE_BLOCK_ENTRIES
# compress --archive (16,777,216-entry blocks, one symbol frame each) / the default, as the
# product of two measured ratios (tools/diag/c4z_streams.py --compare-blocks, load 8-14):
# 1,048,576 / 65,536-entry blocks on the same 8 evenly spread regions of 1 M entries
# (5x5 0.820, 5x6 0.796, 7x4 0.766, 6x5 0.791; whole 5x5 file 0.814), times
# 16,777,216 / 1,048,576 on the middle 16 M entries (5x6 0.845, 6x5 0.860, 7x4 0.761).
ARCHIVE_RATIO = {"5x6": 0.796 * 0.845, "6x5": 0.791 * 0.860, "7x4": 0.766 * 0.761}


# A build's own .c4z (build --format c4z: zstd level 5 on 262,144-entry blocks, no
# dictionaries) over compress's default (level 19, dictionaries), whole files of the same
# table (tools/bench/c4z_build.py; docs/measurements/2026-11-27-c4z-build-profile.md).
BUILD_OVER_COMPRESS = {"5x5": 11_165_540 / (34_888_367 * 0.2961),
                       "6x5": 383_818_864 / (1_409_488_535 * 0.2524)}


def build_ratio() -> float:
    """How much bigger a ``build --format c4z`` file is than ``compress``'s: the mean of
    :data:`BUILD_OVER_COMPRESS`.

    >>> 1.05 < build_ratio() < 1.15
    True
    """
    return sum(BUILD_OVER_COMPRESS.values()) / len(BUILD_OVER_COMPRESS)


@dataclass
class C4zEstimate:
    bytes_per_entry: float
    measured: bool
    keys: float | None = None       # the model's streams (None for a measured board)
    symbols: float | None = None
    how: str = ""


def _fit(stream: int) -> list[float]:
    """Least squares of ``log(stream bytes per entry) = a + b * width + c * height`` over
    :data:`C4Z_STREAMS` (stream 1: keys, 2: symbols): ``[a, b, c]``."""
    rows = []
    for name, v in C4Z_STREAMS.items():
        w, h = (int(x) for x in name.split("x"))
        rows.append((1.0, float(w), float(h), math.log(v[stream])))
    # normal equations, 3x3, by Gaussian elimination
    m = [[sum(r[i] * r[j] for r in rows) for j in range(3)] + [sum(r[i] * r[3] for r in rows)]
         for i in range(3)]
    for i in range(3):
        p = max(range(i, 3), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(3):
            if r != i:
                f = m[r][i] / m[i][i]
                m[r] = [a - f * b for a, b in zip(m[r], m[i])]
    return [m[i][3] / m[i][i] for i in range(3)]


def _shape(board) -> tuple[int, int] | None:
    m = re.fullmatch(r"(\d+)x(\d+)", board.name)
    return (int(m[1]), int(m[2])) if m and getattr(board, "k", 4) == 4 else None


def _log_fit(entries: int) -> float:
    """The older model: whole bytes per entry along a line in log10(entries)."""
    pts = [(math.log10(e), v) for e, v in C4Z_MEASURED.values()]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return max(0.0, my + slope * (math.log10(max(entries, 1)) - mx))


def overhead(board, entries: int, block_entries: int = 1 << 16) -> float:
    """Bytes per entry outside the blocks: the index (24 bytes per block) and the key
    dictionary (at most 110 KB and 1/500 of the raw table; ``c4table.c4z.train_key_dict``)."""
    raw = entries * board.entry_size
    kd = min(KEY_DICT_BYTES, raw // 500) if raw // 500 >= 8192 else 0
    return INDEX_BYTES_PER_BLOCK / block_entries + kd / max(entries, 1)


def estimate(board, entries: int) -> C4zEstimate:
    """The ``.c4z`` bytes per entry of ``board`` (default format): measured, else the
    two-stream shape model (docs/modules.md) plus :func:`overhead`, else (other ``k``, 3D boards) the line of the
    measured totals against log10(entries)."""
    if getattr(board, "k", 4) == 4 and board.name in C4Z_MEASURED:
        return C4zEstimate(C4Z_MEASURED[board.name][1], True, how="measured")
    shape = _shape(board)
    if shape is None:
        return C4zEstimate(_log_fit(entries), False,
                           how="the measured totals along a line in log10(entries)")
    w, h = shape
    keys, syms = (math.exp(a + b * w + c * h) for a, b, c in (_fit(1), _fit(2)))
    return C4zEstimate(keys + syms + overhead(board, entries), False, keys, syms,
                       how="key and symbol frames extrapolated apart in width and height")


def archive_ratio() -> float | None:
    """Archive / default bytes, the mean over the boards measured (None: none measured)."""
    return sum(ARCHIVE_RATIO.values()) / len(ARCHIVE_RATIO) if ARCHIVE_RATIO else None
