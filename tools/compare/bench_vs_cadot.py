"""Time Sidney Cadot's own pipeline and ``c4table build`` side by side, on one machine, in one run.

For each board: builds his generator from a checkout of https://github.com/sidneycadot/connect4
(work tree or git directory; his code is copied into a temporary directory and never enters this
repository), runs his ``connect4-script`` (C++ generator + Unix ``sort``; the open-file limit and
``sort --batch-size`` adapted to this machine's hard limit, see ``cadot_compare.adapt_script``),
then ``c4table build`` of the same board (``--workers 2`` by default, default memory), one after
the other. Prints both wall times, the ratio Cadot / c4table, both sha256 digests and whether the
bytes are identical, plus the 1-minute load average before and after each board (other work on the
machine skews the figures: compare ratios from one run, not times from different runs).

    python -m tools.compare.bench_vs_cadot --cadot-src /path/to/connect4 5x4 4x6

Compiling his generator is not timed, and neither is an untimed ``c4table build 4x4`` made first
to fill numba's on-disk cache (c4table's counterpart of his ``make``); both timed runs include
their process start-up, and each starts after an untimed ``sync`` (his run leaves gigabytes of
sort files to be written back, which would otherwise land in the next run's time). Exit
status 1 if any board's bytes differ. Reuses ``tools/compare/cadot_compare.py`` for every step.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
from pathlib import Path

from tools.compare.cadot_compare import prepare, run_c4table, run_cadot, same_bytes, sha256


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as ``uptime`` shows them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench(checkout: Path, w: int, h: int, k: int, workers: int) -> bool:
    """Time both pipelines for one board and print one block of results; True if identical."""
    tmp = Path(tempfile.mkdtemp(prefix="cadot-bench-"))
    try:
        solver = prepare(checkout, w, h, k, tmp)
        before = load()
        os.sync()   # untimed: neither run pays for writing back the other's (or earlier) files
        theirs, t_cadot = run_cadot(solver, tmp, w, h, k)
        os.sync()
        ours, t_ours = run_c4table(tmp / "c4table", w, h, k, workers=workers)
        after = load()
        same = same_bytes(theirs, ours)
        print(f"board {w}x{h}, connect {k}  (load before {before}, after {after})")
        print(f"  cadot   {t_cadot:8.1f} s  sha256 {sha256(theirs)}")
        print(f"  c4table {t_ours:8.1f} s  sha256 {sha256(ours)}  (--workers {workers})")
        print(f"  ratio   {t_cadot / t_ours:8.1f}x  {'IDENTICAL' if same else 'DIFFERENT'}"
              f"  ({ours.stat().st_size:,} bytes)", flush=True)
        return same
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+", metavar="BOARD", help="WxH, e.g. 5x4")
    ap.add_argument("--cadot-src", required=True, type=Path,
                    help="checkout of github.com/sidneycadot/connect4 (work tree or git dir)")
    ap.add_argument("--connect", type=int, default=4, help="K in a row wins (default 4)")
    ap.add_argument("--workers", type=int, default=2, help="c4table build workers (default 2)")
    args = ap.parse_args(argv)
    if not args.cadot_src.exists():
        print(f"c4table: error: no such checkout: {args.cadot_src}", file=sys.stderr)
        return 2
    if shutil.which("g++") is None or shutil.which("make") is None:
        print("c4table: error: building Cadot's generator needs g++ and make", file=sys.stderr)
        return 2
    print(f"{os.cpu_count()} cores, open-file hard limit "
          f"{resource.getrlimit(resource.RLIMIT_NOFILE)[1]}")
    with tempfile.TemporaryDirectory(prefix="c4table-warm-") as warm:
        run_c4table(Path(warm), 4, 4, args.connect, workers=args.workers)
    ok = True
    for board in args.boards:
        try:
            w, h = (int(x) for x in board.lower().split("x"))
        except ValueError:
            print(f"c4table: error: bad board {board!r} (want WxH)", file=sys.stderr)
            return 2
        ok &= bench(args.cadot_src, w, h, args.connect, args.workers)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
