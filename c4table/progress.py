"""Progress lines on stderr for long stages: per generation the ply, entries, positions, rate,
elapsed time and an ETA. One plain line per event, so logs of detached or cluster runs stay
readable (no carriage-return animation); ``quiet`` turns it off.

Design notes: ``docs/modules.md`` (``c4table.progress``).

>>> import io
>>> out = io.StringIO()
>>> p = Progress("forward", total=1_000_000, stream=out)
>>> p.step("ply 0", 1, now=p.start + 20.0)                 # 20 s of start-up
>>> p.step("ply 1", 99_999, now=p.start + 20.5)            # 10% done, but in 0.5 s of work
>>> "ETA" in out.getvalue()
False
>>> p.step("ply 2", 100_000, now=p.start + 30.0)           # 20% done, 10 s after the first step
>>> out.getvalue().splitlines()[-1].endswith("ETA 40.0s")
True
"""
from __future__ import annotations

import sys
import time
from functools import lru_cache
from importlib import resources

from c4table.units import format_count, format_seconds, format_size

ETA_MIN_FRACTION = 0.05
"""Share of the total work done before an ETA is shown."""
ETA_MIN_SECONDS = 10.0
"""Seconds elapsed before an ETA is shown."""


@lru_cache(maxsize=None)
def published_totals() -> dict[tuple[int, int], int]:
    """(width, height) -> total positions with mirror images, from Böck's Table 1."""
    text = resources.files("c4table").joinpath("data/bock_table1.tsv").read_text()
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or line.startswith("width"):
            continue
        w, h, n = line.split("\t")[:3]
        out[int(w), int(h)] = int(n)
    return out


def published_total(board_name: str) -> int | None:
    """Total positions with mirror images of the board named ``board_name`` (a board's
    ``name``), where Böck's Table 1 has it: the connect-4 2D boards ``WxH`` only.

    >>> published_total("7x6"), published_total("7x6k3"), published_total("2x2x4")
    (4531985219092, None, None)
    """
    return {f"{w}x{h}": n for (w, h), n in published_totals().items()}.get(board_name)


class Progress:
    """Reports stage progress; ``total`` (units of work, e.g. positions) enables an ETA."""

    def __init__(self, stage: str, quiet: bool = False, total: int | None = None, stream=None):
        self.stage = stage
        self.quiet = quiet
        self.total = total
        self.done = 0
        self.start = time.perf_counter()
        self.stream = stream or sys.stderr
        self._first: tuple[float, int] | None = None   # (time, work done) at the first step

    def step(self, label: str, units: int, now: float | None = None, **fields) -> None:
        """Record ``units`` more work done and print one line."""
        self.done += units
        now = time.perf_counter() if now is None else now
        if self._first is None:
            self._first = (now, self.done)
        if self.quiet:
            return
        elapsed = now - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        parts = [f"[{self.stage}] {label}"]
        parts += [f"{k} {format_count(v) if isinstance(v, int) else v}" for k, v in fields.items()]
        parts.append(f"{rate / 1e6:.2f} M/s")
        parts.append(f"elapsed {format_seconds(elapsed)}")
        eta = self.eta(now)
        if eta is not None:
            parts.append(f"ETA {format_seconds(eta)}")
        print("  ".join(parts), file=self.stream, flush=True)

    def eta(self, now: float) -> float | None:
        """Seconds left at the rate since the first step, or None while that means nothing
        yet (see the module docstring)."""
        if not self.total or self._first is None or not 0 < self.done <= self.total:
            return None
        t0, done0 = self._first
        work, seconds = self.done - done0, now - t0
        if work < ETA_MIN_FRACTION * self.total or seconds < ETA_MIN_SECONDS or work <= 0:
            return None
        return (self.total - self.done) * seconds / work

    def note(self, text: str) -> None:
        if not self.quiet:
            print(f"[{self.stage}] {text}", file=self.stream, flush=True)


class Meter:
    """Progress of one long scan or copy (verify, stats, export, compress, decompress): call
    :meth:`update` as often as you like with the work done so far; at most one line per
    ``every`` seconds is printed, ``[stage] DONE / TOTAL (P%)  RATE  ETA T`` (the ETA under
    the rules of :class:`Progress`). ``unit`` ``"bytes"`` shows sizes and MiB/s, else counts.

    >>> import io
    >>> out = io.StringIO()
    >>> m = Meter("verify", total=4 << 20, unit="bytes", stream=out, every=0.0)
    >>> m.update(1 << 20, now=m.start + 20.0)
    >>> out.getvalue()
    '[verify] 1.0 MiB / 4.0 MiB (25%)  0 MiB/s  ETA 1m00s\\n'
    """

    def __init__(self, stage: str, total: int, unit: str = "entries", quiet: bool = False,
                 stream=None, every: float = 5.0):
        self.stage, self.total, self.unit, self.quiet = stage, total, unit, quiet
        self.stream = stream or sys.stderr
        self.every = every
        self.start = time.perf_counter()
        self.last = self.start

    def update(self, done: int, now: float | None = None, **fields) -> None:
        """Record ``done`` units of work so far; print a line if ``every`` seconds passed."""
        if self.quiet:
            return
        now = time.perf_counter() if now is None else now
        if now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        show = format_size if self.unit == "bytes" else format_count
        parts = [f"[{self.stage}] {show(done)} / {show(self.total)}"
                 + (f" ({100 * done / self.total:.0f}%)" if self.total else "")]
        parts += [f"{k} {format_count(v) if isinstance(v, int) else v}" for k, v in fields.items()]
        parts.append(f"{rate / 2**20:.0f} MiB/s" if self.unit == "bytes" else f"{rate / 1e6:.2f} M/s")
        if self.total and 0 < done <= self.total and done >= ETA_MIN_FRACTION * self.total \
                and elapsed >= ETA_MIN_SECONDS and rate > 0:
            parts.append(f"ETA {format_seconds((self.total - done) / rate)}")
        print("  ".join(parts), file=self.stream, flush=True)
