"""Human-readable sizes and counts: ``parse_size("4GiB")``, ``format_size(n)``, ``format_count(n)``.

>>> parse_size("1.5GiB")
1610612736
>>> format_count(1234567)
'1,234,567'
"""
from __future__ import annotations

import re

_UNITS = {"": 1, "B": 1, "K": 1000, "KB": 1000, "M": 10**6, "MB": 10**6, "G": 10**9, "GB": 10**9,
          "T": 10**12, "TB": 10**12, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int) -> int:
    """Bytes in ``"512MiB"``, ``"4GiB"``, ``"2G"``, ``"1000000"``; ValueError otherwise."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"bad size {text!r}: expected a number with an optional unit such as 512MiB or 4GiB")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def format_count(n: int) -> str:
    return f"{n:,}"


def format_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
