"""Build one board with Sidney Cadot's own generator and with c4table; compare the bytes.

Cadot's code is not part of c4table and never enters this repository: this tool takes a
checkout of https://github.com/sidneycadot/connect4 (a work tree, or a git directory read with
``git archive``), copies its ``solver/`` folder into a temporary directory, sets ``H_SIZE``,
``V_SIZE`` and ``CONNECT_Q`` in that copy's ``board_size.h``, compiles it (``make``, needs g++)
and runs his ``connect4-script`` (see :func:`adapt_script` for its one adaptation), which writes ``connect${CONNECT_Q}_${H_SIZE}x${V_SIZE}.dat``.
It then builds the same board with ``c4table build --connect K`` and compares the files.

    python -m tools.compare.cadot_compare --cadot /path/to/connect4 4x4 --connect 3

Prints both sha256 digests and ``IDENTICAL`` (exit 0) or ``DIFFERENT`` (exit 1). Small boards
only: his pipeline shells out to ``sort`` once per ply and is much slower than c4table.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c4table.io.hashes import sha256_of as sha256


def export_solver(checkout: Path, dest: Path) -> Path:
    """Copy Cadot's ``solver/`` folder from a work tree or a git directory into ``dest``."""
    if (checkout / "solver" / "board_size.h").is_file():
        subprocess.run(["cp", "-r", str(checkout / "solver"), str(dest)], check=True)
    else:  # a git directory without a work tree
        archive = subprocess.run(["git", "--git-dir", str(checkout), "archive", "HEAD", "solver"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "solver"


def set_board(solver: Path, w: int, h: int, k: int) -> None:
    """Rewrite the three constants of his ``board_size.h``."""
    p = solver / "board_size.h"
    text = p.read_text()
    for name, value in (("H_SIZE", w), ("V_SIZE", h), ("CONNECT_Q", k)):
        text, n = re.subn(rf"(constexpr int {name}\s*=\s*)\d+", rf"\g<1>{value}", text)
        if n != 1:
            raise SystemExit(f"cannot find {name} in {p}")
    p.write_text(text)


def adapt_script(solver: Path) -> None:
    """His script raises the open-file limit to 1048576 and lets ``sort`` merge 1,000,000 files at
    once; where that limit may not be raised (a container), the temporary copy uses the hard
    limit instead. Only resource settings change: the commands and the data do not."""
    p = solver / "connect4-script"
    text = p.read_text()
    text = text.replace("ulimit -n 1048576", "ulimit -n $(ulimit -Hn)")
    text = text.replace("--batch-size=1000000", "--batch-size=$(( $(ulimit -n) / 2 ))")
    p.write_text(text)


def prepare(checkout: Path, w: int, h: int, k: int, tmp: Path) -> Path:
    """Export his ``solver/`` into ``tmp``, set the board, adapt the script and compile it
    (``make``, not timed by :func:`run_cadot`). Returns the solver directory."""
    solver = export_solver(checkout.resolve(), tmp)
    set_board(solver, w, h, k)
    adapt_script(solver)
    subprocess.run(["make", "-s", "connect4"], cwd=solver, check=True, stdout=subprocess.DEVNULL)
    return solver


def run_cadot(solver: Path, tmp: Path, w: int, h: int, k: int) -> tuple[Path, float]:
    """Run his ``connect4-script`` (data in ``tmp/data``, sort's files in ``tmp/sort``);
    returns the table it wrote and the wall time in seconds."""
    data, sorttmp = tmp / "data", tmp / "sort"
    sorttmp.mkdir(exist_ok=True)
    env = dict(os.environ, DATADIR=str(data), TMPDIR=str(sorttmp), PWD=str(solver))
    t0 = time.perf_counter()
    subprocess.run(["bash", "connect4-script"], cwd=solver, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return data / f"connect{k}_{w}x{h}.dat", time.perf_counter() - t0


def run_c4table(out: Path, w: int, h: int, k: int, workers: int = 1) -> tuple[Path, float]:
    """Run ``c4table build`` (this interpreter, default memory) into ``out``; returns the table
    and the wall time in seconds, interpreter start-up included."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", f"{w}x{h}", "--connect", str(k),
                    "--out", str(out), "--quiet", "--workers", str(workers)], check=True,
                   stdout=subprocess.DEVNULL)
    return out / f"connect{k}_{w}x{h}.dat", time.perf_counter() - t0


def same_bytes(a: Path, b: Path) -> bool:
    """True if the two files hold the same bytes (compared block by block)."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        for block in iter(lambda: fa.read(1 << 20), b""):
            if block != fb.read(len(block)):
                return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board", help="WxH, e.g. 4x4")
    ap.add_argument("--connect", type=int, default=4, help="K in a row wins (default 4)")
    ap.add_argument("--cadot", required=True, type=Path,
                    help="checkout of github.com/sidneycadot/connect4 (work tree or git dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    w, h = (int(x) for x in args.board.lower().split("x"))
    k = args.connect
    tmp = Path(tempfile.mkdtemp(prefix="cadot-"))
    solver = prepare(args.cadot, w, h, k, tmp)
    theirs, t_cadot = run_cadot(solver, tmp, w, h, k)
    ours, t_ours = run_c4table(tmp / "c4table", w, h, k, workers=1)

    a, b = sha256(theirs), sha256(ours)
    print(f"board {w}x{h}, connect {k}")
    print(f"cadot   {theirs.name}  {theirs.stat().st_size:>12,} bytes  sha256 {a}  ({t_cadot:.1f} s)")
    print(f"c4table {ours.name}  {ours.stat().st_size:>12,} bytes  sha256 {b}  ({t_ours:.1f} s)")
    same = same_bytes(theirs, ours)
    print("IDENTICAL" if same else "DIFFERENT")
    if args.keep:
        print(f"kept {tmp}")
    else:
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
