"""Every setting c4table reads from the environment, in one registry (:data:`SETTINGS`): name,
default, meaning and parser of each ``C4TABLE_*`` variable. Code reads a setting through
:func:`get`, never ``os.environ``, so each is parsed one way and documented once
(``docs/settings.md``, checked by ``tests/test_settings.py``). Switches: unset or empty is the
default; ``0``, ``no``, ``off`` and ``false`` (any case) are off; any other value is on.

>>> get("C4TABLE_SHUFFLE_MAX_READS", {"C4TABLE_SHUFFLE_MAX_READS": "2_000"})
2000
>>> get("C4TABLE_RECYCLE", {"C4TABLE_RECYCLE": "OFF"}), get("C4TABLE_RECYCLE", {})
(False, True)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from c4table.errors import BuildInputError, InputError

OFF_WORDS = ("0", "no", "off", "false")


def switch(value: str) -> bool:
    """A switch's value: ``False`` for ``0``/``no``/``off``/``false`` (any case), else ``True``."""
    return value.strip().lower() not in OFF_WORDS


def zstd_level(value: str) -> int:
    """A zstd compression level, 1 to 22."""
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 22:
        raise ValueError("give a zstd level from 1 to 22")
    return n


def zstd_min_match(value: str) -> int:
    """A zstd min match, 3 to 7, or 0 (the level's own)."""
    try:
        n = int(value)
    except ValueError:
        n = -1
    if not (n == 0 or 3 <= n <= 7):
        raise ValueError("give a zstd min match from 3 to 7, or 0 (the level's own)")
    return n


def positive_count(value: str) -> int:
    """A positive whole number; ``_`` and ``,`` may group digits."""
    try:
        n = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError("give a positive number")
    return n


def c4z_block_entries(value: str) -> int:
    """Entries of a ``.c4z`` block written by a build: 1,024 to 16,777,216."""
    n = positive_count(value)
    if not 1024 <= n <= 1 << 24:
        raise ValueError("give a block size from 1,024 to 16,777,216 entries")
    return n


def codec_name(value: str) -> str:
    """A ``.c4z`` block codec's name (checked against the registered ones where it is used)."""
    name = value.strip()
    if not name or not all(c.isalnum() or c == "-" for c in name):
        raise ValueError("give a block codec's name, such as rulekeys-frames-v5")
    return name


@dataclass(frozen=True)
class Setting:
    """One environment variable: its ``name``, the ``default`` it takes when unset or empty
    (already parsed), what it means, and the parser of a value that is set."""

    name: str
    default: Any
    meaning: str
    parse: Callable[[str], Any] = str
    error: type[InputError] = InputError


SETTINGS: dict[str, Setting] = {s.name: s for s in (
    Setting("C4TABLE_TABLE", None, "The table the readers' commands open when no --table is given "
            "(a .dat or .c4z path or URI, or a build directory)."),
    Setting("C4TABLE_CACHE", None, "Where the block indexes of remote .c4z tables and this "
            "machine's calibrated build costs (plan --calibrate) are cached, and the compiled kernels "
            "where the package's own folder cannot be written "
            "(default $XDG_CACHE_HOME/c4table, else ~/.cache/c4table)."),
    Setting("C4TABLE_DIRECT_IO", True, "Switch: write the final table and read it back for "
            "hashing with O_DIRECT where the file system allows it (off: through the page cache).",
            switch),
    Setting("C4TABLE_RECYCLE", True, "Switch: write new scratch files of a local build over spent "
            "ones kept in work/recycle/ (off: unlink spent files, write new ones).", switch),
    Setting("C4TABLE_MALLOC", "tuned", "'default' leaves glibc's malloc as it is; otherwise the "
            "build keeps freed memory (trim and mmap thresholds) and uses one arena."),
    Setting("C4TABLE_SHUFFLE_MAX_READS", 1_000_000, "Ranged reads a backward step may make before "
            "its messages go through the two-level shuffle (a positive number).", positive_count,
            BuildInputError),
    Setting("C4TABLE_TABLE_SHA256", False, "Switch: a build also records its table's whole-file "
            "sha256 (a pass over the table in key order, one core, in the merge's driver: on a "
            "large table the longest serial part of the build). The table's identity, its tree "
            "hash, is recorded always; `c4table verify --file-hashes` prints the sha256 of any "
            "table.", switch),
    Setting("C4TABLE_TABLE_MD5", False, "Switch: a build also records its table's md5 (a second "
            "pass over the table in key order, one core, beside the sha256: on a large table "
            "it is the merge's longest serial part). `c4table verify` prints the md5 anyway.",
            switch),
    Setting("C4TABLE_C4Z_LEVEL", 4, "zstd level (1-22) of the blocks a `build --format c4z` "
            "writes (262,144 entries each; higher: smaller and slower; `c4table compress` uses "
            "19).", zstd_level,
            BuildInputError),
    Setting("C4TABLE_C4Z_MIN_MATCH", 6, "zstd min match (3-7) of the blocks a `build --format "
            "c4z` writes: the level's parameters for a 256 KiB input with matches of at least "
            "that many bytes (with 6, level 4 is as small as level 5 with zstd's own, for less "
            "CPU); 0: zstd's own parameters for the level.", zstd_min_match, BuildInputError),
    Setting("C4TABLE_C4Z_CODEC", "varint-plysym-v3", "Block codec, by name, of the `.c4z` a "
            "`build --format c4z` writes unless its `--codec` names one: `varint-plysym-v3` (format "
            "3, the default), "
            "`rulekeys-frames-v5` (format 5, what `c4table compress` writes: 0.77x the size "
            "on 6x5, for 1.43x the build's CPU) or `rulekeys-plysym-v4` (format 4).", codec_name,
            BuildInputError),
    Setting("C4TABLE_C4Z_BLOCK_ENTRIES", 1 << 18, "Entries of the blocks a `build --format c4z` "
            "writes (default 262,144, in parts of 65,536: bigger blocks, smaller files, slower "
            "single probes).", c4z_block_entries, BuildInputError),
    Setting("C4TABLE_SKIP_DISK_CHECK", False, "Switch: skip the free-disk checks of a local build "
            "(tests and file systems whose free space is not what statvfs says).", switch),
    Setting("C4TABLE_TRACEBACK", False, "Switch: let an internal error show its Python traceback "
            "instead of the one-line message.", switch),
)}


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The value of setting ``name`` from ``environ`` (default ``os.environ``): its default when
    unset or empty, else the parsed value; a value that does not parse is the setting's error
    class (one line naming the variable)."""
    s = SETTINGS[name]
    raw = (os.environ if environ is None else environ).get(name, "")
    if raw == "":
        return s.default
    try:
        return s.parse(raw)
    except ValueError as e:
        raise s.error(f"{name}={raw!r}: {e}") from None


def cache_dir() -> Path:
    """Where remote tables' block indexes and the calibrated build costs are cached:
    ``$C4TABLE_CACHE``, else ``$XDG_CACHE_HOME/c4table``, else ``~/.cache/c4table``."""
    if get("C4TABLE_CACHE"):
        return Path(get("C4TABLE_CACHE"))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "c4table"
