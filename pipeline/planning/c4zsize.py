"""How big a board's ``.c4z`` will be, per block codec: the measured sizes of the boards
compressed here and the models that extrapolate them to boards not built (7x6), used by
``c4table plan``. ``compress`` writes format 5 (:data:`~c4table.c4z.format.DEFAULT_CODEC`,
``rulekeys-frames-v5``), figures from docs/measurements/2026-11-29-c4z-probes.md; format 4
(``rulekeys-plysym-v4``) from docs/measurements/2026-11-28-c4z-streams.md;
``build --format c4z`` writes format 3 by default (:data:`~c4table.c4z.format.BUILD_CODEC`,
``varint-plysym-v3``), figures from the format-3 measurements named at each table below, or
the codec ``C4TABLE_C4Z_CODEC`` names (:func:`build_ratio` of each).

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.c4zsize``).

>>> from c4table.game.board import Board
>>> e = estimate(Board.parse("5x5"), 34888367)
>>> e.codec, e.measured, round(e.bytes_per_entry * 8, 2)
('rulekeys-frames-v5', True, 1.79)
>>> round(estimate(Board.parse("5x5"), 34888367, "rulekeys-plysym-v4").bytes_per_entry * 8, 2)
1.72
>>> e = estimate(Board.parse("5x5"), 34888367, "varint-plysym-v3")
>>> e.measured, round(e.bytes_per_entry, 4)
(True, 0.2961)
>>> e = estimate(Board.parse("7x6"), 2265992609603)
>>> e.measured, 0.10 < e.bytes_per_entry < 0.25
(False, True)
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from c4table.c4z.format import (DEFAULT_CODEC, FRAME_CODEC, KEY_DICT_BYTES, RULE_CODEC,
                                SYM_DICT_BYTES, TRANSFORM)

FORMAT4_SOURCE = "docs/measurements/2026-11-28-c4z-streams.md"
FORMAT5_SOURCE = "docs/measurements/2026-11-29-c4z-probes.md"

# Format 4 (rulekeys-plysym-v4: compress's default, 65,536-entry blocks, zstd 19, a symbol
# dictionary, no key dictionary), whole files: FORMAT4_SOURCE, section 3 (the file sizes of its
# first table; Cadot's xz sizes of the same tables from his solver/connect4-script).
C4Z4_MEASURED = {   # board: (entries, .c4z bytes, Cadot's xz bytes)
    "5x5": (34_888_367, 7_498_806, 10_899_820),
    "5x6": (522_196_933, 94_322_263, 116_887_316),
    "6x5": (1_409_488_535, 258_300_840, 300_771_484)}

# The same files' bits per entry by part (python -m tools.diag.c4z_split FILE.c4z;
# FORMAT4_SOURCE, section 3, second table): run heads, keys, outcome symbols, rest (index and
# dictionary); they add up to 1.720 (5x5), 1.445 (5x6) and 1.466 (6x5).
C4Z4_BITS = {   # board: (heads, keys, symbols, rest)
    "5x5": (0.047, 0.244, 1.419, 0.009), "5x6": (0.047, 0.244, 1.151, 0.002),
    "6x5": (0.047, 0.206, 1.211, 0.002)}

# Format 5 (rulekeys-frames-v5: compress's default, 65,536-entry blocks, key runs of 256,
# symbol frames of 16,384, zstd 19, no dictionary), whole files: FORMAT5_SOURCE, its first
# table (sizes and bits per entry by part from python -m tools.diag.c4z_split FILE.c4z).
# 6x6 and 7x5, too big to compress whole here, are estimates of the file compress writes
# (every hundredth block encoded as compress does: python -m tools.diag.c4z_sampled_size
# FILE.c4z --every 100; standard error 0.37% and 0.36%; the tool read 6x5 0.84% over its whole
# file), from the page SAMPLED_SOURCES names; their bits do not part the run heads from the keys.
SAMPLED_SOURCES = {"6x6": "docs/measurements/2026-11-29-6x6-format-5.md",
                   "7x5": "docs/measurements/2026-11-29-c4z-size-anchors.md"}
SAMPLED = tuple(SAMPLED_SOURCES)   # the boards whose figures (format 3 and 5) are such samples
SAMPLED_HOW = "sampled: every hundredth block encoded as compress does"
C4Z5_MEASURED = {   # board: (entries, .c4z bytes, Cadot's xz bytes)
    "5x5": (34_888_367, 7_816_966, 10_899_820),
    "5x6": (522_196_933, 98_961_395, 116_887_316),
    "6x5": (1_409_488_535, 264_697_855, 300_771_484),
    "6x6": (34_586_522_319, 5_109_496_995, 6_373_063_076),
    "7x5": (56_415_101_059, 8_525_252_888, 10_753_571_804)}
C4Z5_BITS = {   # board: (heads, keys, symbols, rest)
    "5x5": (0.100, 0.113, 1.578, 0.002), "5x6": (0.102, 0.108, 1.305, 0.002),
    "6x5": (0.101, 0.062, 1.338, 0.002), "6x6": (0.0, 0.164, 1.016, 0.002),
    "7x5": (0.0, 0.144, 1.063, 0.002)}

# Format 3 (varint-plysym-v3): whole .c4z bytes per table entry (65,536-entry blocks, zstd 19,
# trained key dictionary), tools/bench/bench_lookup.py (docs/measurements/2026-11-22-c4z-large-boards.md): 4x6, 5x5 and 5x6 whole files; 6x4, 7x4 and 6x5 estimated
# from 200 evenly spread blocks (--sample-blocks; within 1% of the whole file on the other three).
# 6x6 and 7x5: SAMPLED_SOURCES (compress's format 3 estimated from every hundredth block, as
# format 5 above).
C4Z_MEASURED = {   # board: (entries, bytes per entry)
    "4x6": (7_917_955, 0.2813), "5x5": (34_888_367, 0.2961), "6x4": (47_455_869, 0.2777),
    "5x6": (522_196_933, 0.2460), "7x4": (1_132_927_517, 0.2540),
    "6x5": (1_409_488_535, 0.2524), "6x6": (34_586_522_319, 6_882_154_924 / 34_586_522_319),
    "7x5": (56_415_101_059, 12_241_655_588 / 56_415_101_059)}

# Format 3: key frames and symbol frames apart, bytes per entry, 200 evenly spread blocks
# (all blocks of 5x4 and 4x6): python -m tools.diag.c4z_streams FILE.dat --blocks 200 (load 6-7).
# 6x6's sample (0.694 and 0.896 bits per entry) is left out of the fit: with it, 7x5's build
# file is predicted 2.2% under its size, without it 4.1% over, but 5x4 left out of the fit
# moves from 4% to 11% off (docs/measurements/2026-11-29-c4z-size-anchors.md).
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
# The same with C4TABLE_C4Z_CODEC=rulekeys-frames-v5: format 5 at the build's profile (zstd
# level 4, min match 6, 262,144-entry blocks) over compress's format 5 (C4Z5_MEASURED), whole
# files (tools/bench/c4z_build.py; docs/measurements/2026-11-29-build-format-5.md).
BUILD_OVER_COMPRESS_V5 = {"5x5": 8_673_001 / 7_816_966, "6x5": 298_383_205 / 264_697_855}


# CPU per entry a build --format c4z spends in its block codec: its merge's range tasks encode
# every block and decode it again for the tree hash, as the merge counts it (``codec_us``). 6x5,
# 2 workers, 4GiB, the development VM, numba's cache warm (tools/bench/c4z_build.py;
# docs/measurements/2026-11-30-key-walk.md: format 3 21.0 ns, format 5 106.9 ns; over the .dat
# build's whole CPU +18.3 and +102.7 ns); format 4 walks the same rules for its keys and is
# given format 5's figure.
BUILD_CODEC_CPU_S = {TRANSFORM: 21.0e-9, FRAME_CODEC: 106.9e-9, RULE_CODEC: 106.9e-9}
# What the codecs cost the builds whose stats did not count it (no ``codec_us``): the figures
# of the code they ran, over the .dat build's CPU (docs/measurements/2026-11-29-build-format-5.md).
UNCOUNTED_CODEC_CPU_S = {TRANSFORM: 16.2e-9, FRAME_CODEC: 104.0e-9, RULE_CODEC: 104.0e-9}


def build_codec_cpu_s(codec: str | None) -> float:
    """Core-seconds per entry a ``build --format c4z`` in blocks of ``codec`` adds to the
    ``.dat`` build's merge (:data:`BUILD_CODEC_CPU_S`; ``None``, a ``.dat``: 0).

    >>> round(build_codec_cpu_s("rulekeys-frames-v5") * 1e9, 1), build_codec_cpu_s(None)
    (106.9, 0.0)
    """
    return 0.0 if codec is None else BUILD_CODEC_CPU_S.get(codec, BUILD_CODEC_CPU_S[FRAME_CODEC])


def uncounted_codec_cpu_s(codec: str) -> float:
    """Core-seconds per entry the block codec ``codec`` added to the merge of a finished build
    whose stats did not count it (:data:`UNCOUNTED_CODEC_CPU_S`)."""
    return UNCOUNTED_CODEC_CPU_S.get(codec, UNCOUNTED_CODEC_CPU_S[FRAME_CODEC])


def build_ratio(codec: str = TRANSFORM) -> float:
    """How much bigger a ``build --format c4z`` file of the block codec ``codec`` is than
    ``compress``'s with the same codec: the mean of :data:`BUILD_OVER_COMPRESS` (format 3) or
    :data:`BUILD_OVER_COMPRESS_V5` (the rule-coded formats).

    >>> 1.05 < build_ratio() < 1.15
    True
    """
    ratios = BUILD_OVER_COMPRESS if codec == TRANSFORM else BUILD_OVER_COMPRESS_V5
    return sum(ratios.values()) / len(ratios)


@dataclass
class C4zEstimate:
    """A ``.c4z``'s bytes per entry with block codec ``codec``: ``measured`` (a whole file
    of that codec, or for a board of :data:`SAMPLED` a sample of its blocks, which ``how``
    says) or a model's; ``keys`` (with format 4's run heads) and ``symbols`` where the
    figure is split so (bytes per entry), ``how`` it was made and ``source``, the page or the
    data its figures come from."""

    bytes_per_entry: float
    measured: bool
    keys: float | None = None       # the model's streams (None for a measured format-3 board)
    symbols: float | None = None
    how: str = ""
    codec: str = DEFAULT_CODEC
    source: str = ""


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
    """The older model: whole bytes per entry along a line in log10(entries) over the whole
    files of :data:`C4Z_MEASURED` (its samples left out, as when the line was drawn)."""
    pts = [(math.log10(e), v) for b, (e, v) in C4Z_MEASURED.items() if b not in SAMPLED]
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return max(0.0, my + slope * (math.log10(max(entries, 1)) - mx))


def overhead(board, entries: int, block_entries: int = 1 << 16, codec: str = TRANSFORM) -> float:
    """Bytes per entry outside the blocks: the index (24 bytes per block) and the trained
    dictionaries (``c4table.c4z.train_dicts``): format 3's key dictionary (at most 110 KB and
    1/500 of the raw table), format 4's symbol dictionary (at most 32 KB and 1/5000)."""
    raw = entries * board.entry_size
    if codec == FRAME_CODEC:      # format 5: no dictionary
        return INDEX_BYTES_PER_BLOCK / block_entries
    size, share = (KEY_DICT_BYTES, 500) if codec == TRANSFORM else (SYM_DICT_BYTES, 5000)
    d = min(size, raw // share) if raw // share >= 8192 else 0
    return INDEX_BYTES_PER_BLOCK / block_entries + d / max(entries, 1)


def estimate(board, entries: int, codec: str = DEFAULT_CODEC) -> C4zEstimate:
    """The ``.c4z`` bytes per entry of ``board`` compressed with the block codec ``codec``
    (default: ``compress``'s, format 5; :func:`estimate_format4`, :func:`estimate_format3`)."""
    if codec in (RULE_CODEC, FRAME_CODEC):
        return estimate_format4(board, entries, codec)
    if codec == TRANSFORM:
        return estimate_format3(board, entries)
    raise ValueError(f"no size figures for the block codec {codec!r}")


def estimate_format3(board, entries: int) -> C4zEstimate:
    """Format 3 (``varint-plysym-v3``, what ``build --format c4z`` encodes, before its own
    profile's :func:`build_ratio`): measured (:data:`C4Z_MEASURED`), else the two-stream shape
    model (docs/modules.md) plus :func:`overhead`, else (other ``k``, 3D boards) the line of
    the measured totals against log10(entries)."""
    src = "format-3 measurements (C4Z_MEASURED, C4Z_STREAMS)"
    if getattr(board, "k", 4) == 4 and board.name in C4Z_MEASURED:
        sampled = board.name in SAMPLED
        return C4zEstimate(C4Z_MEASURED[board.name][1], True,
                           how=SAMPLED_HOW if sampled else "measured", codec=TRANSFORM,
                           source=SAMPLED_SOURCES[board.name] if sampled else src)
    shape = _shape(board)
    if shape is None:
        return C4zEstimate(_log_fit(entries), False,
                           how="the measured totals along a line in log10(entries)",
                           codec=TRANSFORM, source=src)
    keys, syms = _streams(*shape)
    return C4zEstimate(keys + syms + overhead(board, entries), False, keys, syms,
                       how="key and symbol frames extrapolated apart in width and height",
                       codec=TRANSFORM, source=src)


def _streams(w: int, h: int) -> tuple[float, float]:
    """Format 3's key and symbol frames of a ``w`` x ``h`` board, bytes per entry: the
    two-stream shape model over :data:`C4Z_STREAMS`."""
    keys, syms = (math.exp(a + b * w + c * h) for a, b, c in (_fit(1), _fit(2)))
    return keys, syms


@dataclass(frozen=True)
class RuleFigures:
    """The measured whole files of a rule-coded format (4 or 5): ``measured`` board ->
    (entries, bytes, Cadot's xz bytes), ``bits`` board -> (heads, keys, symbols, rest) bits per
    entry, from ``source``; ``sym_dict``: whether the format stores a symbol dictionary."""

    codec: str
    source: str
    measured: dict
    bits: dict
    sym_dict: bool


def rule_figures(codec: str = DEFAULT_CODEC) -> RuleFigures | None:
    """The figures of a rule-coded format (None for format 3)."""
    if codec == RULE_CODEC:
        return RuleFigures(RULE_CODEC, FORMAT4_SOURCE, C4Z4_MEASURED, C4Z4_BITS, True)
    if codec == FRAME_CODEC:
        return RuleFigures(FRAME_CODEC, FORMAT5_SOURCE, C4Z5_MEASURED, C4Z5_BITS, False)
    return None


def keys4_anchor(codec: str = RULE_CODEC, entries: int | None = None,
                shape: tuple[int, int] | None = None) -> str | None:
    """The board whose keys, run heads and symbol ratio (format 4 or 5) stand for a board of
    ``entries`` (and ``shape``, width and height) not measured: where it has more entries
    than every measured board, the measured one nearest in shape (its distance in width and
    height; a tie, or no ``shape``: the most entries), since the symbol model misses by shape
    (it overshoots 6x6 by 20%, 6x5 by 3%); else the biggest whole file, not a sample
    (:data:`SAMPLED`). None: none measured.

    >>> keys4_anchor(FRAME_CODEC, 2_265_994_664_313, (7, 6)), keys4_anchor(FRAME_CODEC, 10**12, (6, 7))
    ('7x5', '6x6')
    """
    f = rule_figures(codec)
    boards = [b for b in f.bits if b in f.measured]
    if not boards:
        return None
    big = max(boards, key=lambda b: f.measured[b][0])
    if entries is None or entries > f.measured[big][0]:
        if shape is None:
            return big
        return min(boards, key=lambda b: (math.dist(shape, _shape_of(b)), -f.measured[b][0]))
    whole = [b for b in boards if b not in SAMPLED]
    return max(whole, key=lambda b: f.measured[b][0]) if whole else big


def estimate_format4(board, entries: int, codec: str = RULE_CODEC) -> C4zEstimate:
    """A rule-coded format (``rulekeys-plysym-v4``, format 4, or ``rulekeys-frames-v5``,
    format 5, ``compress``'s default), from its measurement page: a board measured there gets
    its whole file's bytes per entry; another k=4 board gets

    - outcome symbols: format 3's symbol model (:func:`_streams`), times the ratio of the
      format's measured symbols to that model on the anchor board (below): 0.96 for format
      4, which codes them as format 3 does; in format 5, 1.07 at 6x5, 0.945 at 6x6 and 7x5;
    - keys and run heads: those of the anchor board (:func:`keys4_anchor`: in format 5 7x5
      for 7x6, else 6x5; in format 4 6x5, its biggest; 0.253 bits in format 4, 0.163 and
      0.144 in format 5), held constant:
      they cost more on the smaller boards, so a bigger board is not expected to cost more;
    - :func:`overhead`: the index, and format 4's symbol dictionary.

    Other ``k`` and 3D boards: format 3's figure (:func:`estimate_format3`) scaled by the
    format's / format 3's ratio of the same measured board."""
    f = rule_figures(codec)
    label = f"format {5 if codec == FRAME_CODEC else 4}"
    if getattr(board, "k", 4) == 4 and board.name in f.measured:
        n, size, _ = f.measured[board.name]
        heads, keys, syms, _ = f.bits.get(board.name, (None, None, None, None))
        sampled = board.name in SAMPLED
        return C4zEstimate(size / n, True, None if keys is None else (heads + keys) / 8,
                           None if syms is None else syms / 8,
                           how=SAMPLED_HOW if sampled else "measured", codec=codec,
                           source=SAMPLED_SOURCES[board.name] if sampled else f.source)
    anchor = keys4_anchor(codec, entries, _shape(board))
    if anchor is None:
        raise ValueError(f"no {label} measurements")
    heads, keys, asyms, _ = f.bits[anchor]
    keys = (heads + keys) / 8
    shape = _shape(board)
    if shape is None:
        f3 = estimate_format3(board, entries)
        r = f.measured[anchor][1] / f.measured[anchor][0] / C4Z_MEASURED[anchor][1]
        return C4zEstimate(f3.bytes_per_entry * r, False, how=(
            f"format 3's {f3.how}, times {anchor}'s {label} / format 3 ratio ({r:.2f})"),
            codec=codec, source=sources(f, anchor))
    ratio = asyms / 8 / _streams(*_shape_of(anchor))[1]
    syms = _streams(*shape)[1] * ratio
    return C4zEstimate(keys + syms + overhead(board, entries, codec=codec), False, keys,
                       syms, how=(f"outcome symbols extrapolated in width and height from "
                                  f"format 3's symbol frames ({', '.join(C4Z_STREAMS)}), times "
                                  f"{anchor}'s {label} / model ratio ({ratio:.3f}), keys and run "
                                  f"heads at {anchor}'s measured {keys * 8:.3f} bits per entry"),
                       codec=codec, source=sources(f, anchor))


def sources(f: RuleFigures, *boards: str) -> str:
    """The pages behind figures of ``boards`` in the format of ``f``: its measurement page,
    and the :data:`SAMPLED_SOURCES` page of each one that is sampled."""
    return ", ".join([f.source] + [SAMPLED_SOURCES[b] for b in boards if b in SAMPLED])


def _shape_of(name: str) -> tuple[int, int]:
    w, h = (int(x) for x in name.split("x"))
    return w, h


def over_cadot_xz(codec: str = DEFAULT_CODEC) -> dict[str, float]:
    """A rule-coded format's ``.c4z`` bytes / Cadot's xz bytes of the same tables."""
    f = rule_figures(codec)
    return {b: size / xz for b, (_, size, xz) in f.measured.items() if xz} if f else {}


def codec_label(codec: str) -> str:
    """``"format 4 rulekeys-plysym-v4"``: the format a block codec writes, and its name.

    >>> codec_label("varint-plysym-v3")
    'format 3 varint-plysym-v3'
    """
    from c4table.c4z.registry import get_codec
    return f"format {get_codec(codec).format_version} {codec}"


def archive_bytes_per_entry(e: C4zEstimate) -> float | None:
    """Bytes per entry of ``compress --archive`` with the codec of ``e`` (None: no ratio
    measured). :data:`ARCHIVE_RATIO` is measured on format 3's whole blocks; formats 4 and 5
    code their keys in runs whatever the block, so there it scales the outcome symbols alone,
    taken back to format 3's 65,536-entry frames first in format 5 (its ratio of
    :func:`estimate_format4`): an assumption, not a measurement of those formats; where ``e``
    is not split into streams, the whole figure."""
    r = archive_ratio()
    if r is None:
        return None
    if e.codec in (RULE_CODEC, FRAME_CODEC) and e.symbols is not None:
        f = rule_figures(e.codec)
        both = [b for b in f.bits if b in C4Z4_BITS]     # boards measured in formats 4 and 5
        base = e.symbols
        if e.codec == FRAME_CODEC and both:
            anchor = max(both, key=lambda b: C4Z4_MEASURED[b][0])
            base = e.symbols * C4Z4_BITS[anchor][2] / f.bits[anchor][2]
        return e.bytes_per_entry - e.symbols + base * r
    return e.bytes_per_entry * r


def archive_ratio() -> float | None:
    """Archive / default bytes, the mean over the boards measured (None: none measured)."""
    return sum(ARCHIVE_RATIO.values()) / len(ARCHIVE_RATIO) if ARCHIVE_RATIO else None
