#!/usr/bin/env python3
"""Peak memory of a ``.dat``'s block sums: writing the sidecar as the merge does (the table's
bytes fed to :class:`~c4table.table.sums.BlockSums`, then the sidecar written) and checking it
as ``c4table verify`` does (the bytes fed again, the sums compared with the sidecar), for this
checkout and, with ``--before REV``, for the ``c4table`` package of git revision REV of this
repository (extracted with ``git archive`` into a temporary directory; nothing else is read
or written).

    python -m tools.bench.sums_memory [--blocks 1000000,8000000] [--before main]

The table is synthetic: 1-byte entries, so a block of 4,096 entries is 4,096 bytes, fed from
one reused buffer (a 7x6 table has 553 million blocks of 28 KiB; the sums' memory depends only
on the count of blocks). Each measurement runs in a fresh process, which reports the growth of
its peak resident set (``VmHWM`` of ``/proc/self/status``, reset after its imports) over the
work: the sums it holds, not the interpreter. The sidecar bytes of the two revisions are
compared (they must be equal). A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FEED = 1 << 24     # bytes fed at a time


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _reset_peak() -> bool:
    """Reset ``VmHWM`` to the current resident set (Linux: ``clear_refs`` 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _feed(s, blocks: int, block_bytes: int, buf: memoryview) -> None:
    left = blocks * block_bytes
    while left:
        n = min(left, len(buf))
        s.update(buf[:n])
        left -= n


def child(what: str, blocks: int, where: str) -> dict:
    """One measurement in this process: ``write`` the sidecar of ``where``/t.dat, or ``check``
    the one there, with the API of the ``c4table`` this process imports."""
    from c4table.io.storage import open_storage
    from c4table.table import sums as S
    E = 1
    block_bytes = E * S.BLOCK_ENTRIES
    table_bytes = blocks * block_bytes
    store = open_storage(where)
    buf = memoryview(bytearray(FEED))
    streamed = hasattr(S, "SumsWriter")
    reset = _reset_peak()
    base = _status("VmRSS") if reset else _status("VmHWM")
    t = time.perf_counter()
    if what == "write":
        if streamed:
            with S.SumsWriter(store, "t.dat") as w:
                s = S.BlockSums(E, sink=w.take)
                _feed(s, blocks, block_bytes, buf)
                w.commit(s)
        else:
            s = S.BlockSums(E)
            _feed(s, blocks, block_bytes, buf)
            S.write_sums(store, "t.dat", s)
        result = "written"
    else:
        if streamed:
            with S.open_check(store, "t.dat", table_bytes, E, stop=False) as c:
                s = c.block_sums()
                _feed(s, blocks, block_bytes, buf)
                s.finish()
                result = c.finish()
        else:
            s = S.BlockSums(E)
            _feed(s, blocks, block_bytes, buf)
            result = S.sums_problem(store, "t.dat", table_bytes, E, s.finish())
    secs = time.perf_counter() - t
    return {"what": what, "blocks": blocks, "peak_growth": _status("VmHWM") - base,
            "seconds": round(secs, 2), "result": result or "match", "streamed": streamed}


def extract(rev: str, into: Path) -> Path:
    """The ``c4table`` package of git revision ``rev`` of this repository, under ``into``."""
    tar = into / "pkg.tar"
    with open(tar, "wb") as f:
        subprocess.run(["git", "-C", str(ROOT), "archive", rev, "c4table"], stdout=f, check=True)
    with tarfile.open(tar) as t:
        t.extractall(into / "src", filter="data")
    return into / "src"


def run_child(pkg: Path | None, what: str, blocks: int, where: Path) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if pkg is not None:
        env["PYTHONPATH"] = str(pkg)
    out = subprocess.run([sys.executable, __file__, "--child", what, str(blocks), str(where)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", default="1000000,8000000",
                    help="comma-separated counts of blocks (default 1000000,8000000)")
    ap.add_argument("--before", metavar="REV", default=None,
                    help="also measure the c4table package of this git revision (e.g. main)")
    ap.add_argument("--child", nargs=3, metavar=("WHAT", "BLOCKS", "DIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), a.child[2])))
        return
    with tempfile.TemporaryDirectory(prefix="sums-memory-") as tmp:
        tmp = Path(tmp)
        installs = [("this checkout", None)]
        if a.before:
            installs.insert(0, (a.before, extract(a.before, tmp)))
        print(f"{'code':<16} {'blocks':>12} {'sums MiB':>9} {'write: peak +MiB':>17} "
              f"{'s':>6} {'check: peak +MiB':>17} {'s':>6}  result")
        for blocks in (int(b) for b in a.blocks.split(",")):
            digests = set()
            for label, pkg in installs:
                d = tmp / f"{blocks}-{len(digests)}-{label.replace(' ', '-').replace('/', '-')}"
                d.mkdir()
                w = run_child(pkg, "write", blocks, d)
                digests.add(hashlib.sha256((d / "t.dat.sums").read_bytes()).hexdigest())
                c = run_child(pkg, "check", blocks, d)
                (d / "t.dat.sums").unlink()
                print(f"{label:<16} {blocks:>12,} {8 * blocks / 2**20:>9.1f} "
                      f"{w['peak_growth'] / 2**20:>17.1f} {w['seconds']:>6.1f} "
                      f"{c['peak_growth'] / 2**20:>17.1f} {c['seconds']:>6.1f}  {c['result']}",
                      flush=True)
            print(f"{'':<16} sidecar bytes {'identical' if len(digests) == 1 else 'DIFFER'}")


if __name__ == "__main__":
    main()
