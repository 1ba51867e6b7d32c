"""Böck's and jh85's solvers and c4table side by side, per-ply win/draw/loss cross-checked.

The other strong solvers and ``c4table build`` in one run, one after the other on the same
boards, their per-ply win/draw/loss counts checked against the table's.

The peers, built from checkouts the user names (their code is copied into a temporary
directory, built there with their own build commands and never enters this repository):

* Böck's BDD solver (https://github.com/markus7800/Connect4-Strong-Solver): ``make solve`` in
  ``src/connect4`` (his makefile's ``CC`` is clang; where there is no clang, ``CC=gcc`` is
  passed to make, nothing else changes), then ``build/solve.out LOG2 W H`` (one thread;
  ``LOG2``: log2 of his node pool, :data:`BOCK_LOG2`, ``--bock-log2``). It writes
  ``results_solve_wW_hH_lsLOG2.csv``: per ply, win/draw/loss counts.
* jh85's ZDD-ranked retrograde solver (https://github.com/jh85/smallgames, ``connect4/``):
  ``make``, then ``c4 solve --board WxH --threads T`` (boards 4..7 x 4..6). Its per-ply lines
  ``[ply k] n=N  W/D/L(stm) = W / D / L`` count its own position space; after it, untimed,
  ``c4 reachtally --board WxH`` walks the reachable positions through its solved slabs and
  prints per ply won/drawn/lost, which is compared exactly.
* c4table: ``c4table build WxH --workers T`` (this interpreter), after an untimed
  ``c4table build 4x4`` that fills numba's on-disk cache (the counterpart of their compiling).

Every count is brought to one convention, the table's (:func:`c4table.analysis.stats.scan_stats`,
counted from the table file's keys): per ply, every position reached by legal play, a finished
game included (won by whoever made the line, a full board without one drawn), a position and
its mirror image counted apart (a table entry stands for both unless its key is its own mirror
image), won / drawn / lost from the first player's (A's) view.

* Böck's CSV counts the same positions (his ``total_count`` is per-ply positions with mirror
  images) from the side to move's view: at an even ply A moves, so his win/draw/loss is A's
  won/drawn/lost; at an odd ply B moves, so his win is A's lost and his loss A's won
  (:func:`bock_to_a_view`). Compared exactly.
* jh85's ``reachtally`` is already in the table's convention. Compared exactly.
* jh85's ``solve`` lines count, from the side to move's view, every stacking with the right
  number of chips of each colour and no line ("pseudo-positions"), reachable or not, finished
  games excluded, plies 0..cells-1. A position's value does not depend on how it was reached,
  so each of the table's unfinished positions' classes is at most his count
  (:func:`check_pseudo`); the surplus is the stackings no game reaches.

A disagreement anywhere fails the run (exit status 1); a peer's run that does not finish
(stopped at ``--peer-timeout``, killed, failed) has no counts to compare and is reported as
such, its figures as lower bounds. Timed per solver: wall, CPU
(user + sys of the whole process tree, ``getrusage(RUSAGE_CHILDREN)`` before and after), the
peak memory of the process tree (the sum of its processes' PSS, sampled every 0.2 s) and the
disk its directory holds (peak sampled every 2 s, and what stays at the end). Other work on
the machine skews wall times: prefer CPU, and ratios from one run.

    python -m tools.compare.bench_peers --bock-src BOCK --jh85-src SMALLGAMES --boards 5x5,6x4
    python -m tools.compare.bench_peers --jh85-src SMALLGAMES --markdown     # jh85 and c4table

``BOCK`` is a clone of markus7800/Connect4-Strong-Solver, ``SMALLGAMES`` one of jh85/smallgames
(work trees or bare git directories). A peer not named is left out; ``--peer-timeout`` stops a
peer's run that takes longer (reported as such, not as a failure).
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from c4table.analysis.peers import (Wdl, bock_to_a_view, check_pseudo, compare_exact,
                                     our_counts, parse_bock_csv, parse_jh85_reachtally,
                                     parse_jh85_solve)
from tools.bench.diskuse import DiskSampler, PeakSampler, disk_bytes

BOARDS = ("5x5", "6x4", "5x6", "6x5", "7x4")
DEFAULT_BOARDS = ("5x5", "6x4")
#: log2 of Böck's node pool per board (his README: 24 for 5x5 and 6x4, under 1 GB; a node is
#: about 64 bytes with its share of the caches); bigger boards get room for a fill below 50%.
BOCK_LOG2 = {"4x4": 20, "5x4": 22, "4x5": 22, "5x5": 24, "6x4": 24, "4x6": 24,
             "7x4": 25, "5x6": 26, "6x5": 26}


@dataclass
class Measured:
    """What one timed run cost. Memory and disk in bytes; ``rc`` None when it was stopped."""
    wall: float
    cpu: float
    peak_mem: int
    disk_peak: int
    disk_final: int
    rc: int | None


@dataclass
class Result:
    """One solver on one board: its cost, and what its per-ply cross-check said."""
    board: str
    solver: str
    measured: Measured | None = None
    check: str = ""
    problems: list[str] = field(default_factory=list)
    positions: int = 0   # the board's positions (the table's, mirror images counted apart)


# ---------------------------------------------------------------- parsing the peers' output

def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (``/proc/PID/task/TID/children``)."""
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    return out


def _pss(pid: int) -> int:
    """A process's proportional set size in bytes (its RSS where smaps_rollup is unreadable)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for ln in f:
                if ln.startswith("Pss:"):
                    return int(ln.split()[1]) * 1024
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def measure(cmd: list[str], cwd: Path, log: Path, watch: Path,
            timeout: float | None = None) -> Measured:
    """Run ``cmd`` in ``cwd`` (output to ``log``), timing its process tree; a run over
    ``timeout`` seconds is killed (its process group) and has ``rc`` None."""
    os.sync()   # untimed: no run pays for writing back an earlier run's files
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "wb") as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        tree = PeakSampler(lambda: sum(_pss(q) for q in _descendants(p.pid)), 0.2)
        with tree, DiskSampler(watch, 2.0) as disk:
            try:
                rc: int | None = p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                rc = None
            wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    final = disk_bytes(watch)
    return Measured(wall, cpu, tree.peak, max(disk.peak, final), final, rc)


# ---------------------------------------------------------------- the three solvers

def export_tree(checkout: Path, sub: str, dest: Path) -> Path:
    """Copy folder ``sub`` of a checkout (work tree or bare git directory) into ``dest``."""
    checkout = checkout.resolve()
    if (checkout / sub).is_dir():
        shutil.copytree(checkout / sub, dest / sub)
    else:
        archive = subprocess.run(["git", "--git-dir", str(checkout), "archive", "HEAD", sub],
                                 check=True, capture_output=True).stdout
        dest.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / sub


def commit_of(checkout: Path) -> str:
    """The checkout's HEAD commit, or ``?``."""
    for args in (["-C", str(checkout)], ["--git-dir", str(checkout)]):
        r = subprocess.run(["git", *args, "rev-parse", "HEAD"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
    return "?"


def build_bock(checkout: Path, tmp: Path) -> Path:
    """Böck's ``make solve`` in a copy of his ``src/``; returns ``solve.out``."""
    src = export_tree(checkout, "src", tmp / "bock")
    make = ["make", "-s", "solve"]
    if shutil.which("clang") is None:
        make.append("CC=gcc")
    subprocess.run(make, cwd=src / "connect4", check=True, stdout=subprocess.DEVNULL)
    return src / "connect4" / "build" / "solve.out"


def build_jh85(checkout: Path, tmp: Path) -> Path:
    """jh85's ``make`` in a copy of his ``connect4/``; returns ``c4``."""
    src = export_tree(checkout, "connect4", tmp / "jh85")
    subprocess.run(["make", "-s"], cwd=src, check=True, stdout=subprocess.DEVNULL)
    return src / "c4"


def jh85_supports(w: int, h: int) -> bool:
    return 4 <= w <= 7 and 4 <= h <= 6


def unfinished(rc: int | None) -> str:
    """What the table says of a peer's run that did not finish: no count to compare."""
    if rc is None:
        return "stopped at --peer-timeout"
    if rc == -signal.SIGKILL:
        return "killed (SIGKILL: out of memory?)"
    return f"failed (exit status {rc})"


def run_bock(exe: Path, board: str, tmp: Path, log2: int, timeout: float | None,
             ours: dict[int, Wdl]) -> Result:
    w, h = board.split("x")
    d = tmp / f"bock-{board}"
    d.mkdir()
    r = Result(board, "Böck (BDD)")
    r.measured = measure([str(exe), str(log2), w, h], d, d / "stdout.txt", d, timeout)
    if r.measured.rc != 0:
        r.check = unfinished(r.measured.rc)
        return r
    csv = (d / f"results_solve_w{w}_h{h}_ls{log2}.csv").read_text()
    r.problems = compare_exact(ours, bock_to_a_view(parse_bock_csv(csv)), "Böck")
    r.check = "every ply equal" if not r.problems else f"{len(r.problems)} plies differ"
    return r


def run_jh85(exe: Path, board: str, tmp: Path, threads: int, timeout: float | None,
             ours: dict[int, Wdl], finished: dict[int, int]) -> Result:
    w, h = (int(x) for x in board.split("x"))
    d = tmp / f"jh85-{board}"
    d.mkdir()
    r = Result(board, "jh85 (ZDD)")
    r.measured = measure([str(exe), "solve", "--board", board, "--threads", str(threads)],
                         d, d / "solve.txt", d, timeout)
    if r.measured.rc != 0:
        r.check = unfinished(r.measured.rc)
        return r
    t0 = time.perf_counter()
    tally = subprocess.run([str(exe), "reachtally", "--board", board, "--threads", str(threads)],
                           cwd=d, capture_output=True, text=True)
    print(f"  {board}: jh85's reachtally (the check, not timed) took {time.perf_counter() - t0:.1f} s",
          flush=True)
    (d / "reachtally.txt").write_text(tally.stdout)
    if tally.returncode == 0:
        r.problems = compare_exact(ours, parse_jh85_reachtally(tally.stdout), "jh85")
    bad, surplus = check_pseudo(ours, finished, w * h, parse_jh85_solve((d / "solve.txt").read_text()))
    r.problems += bad
    if r.problems:
        r.check = f"{len(r.problems)} disagreements"
    elif tally.returncode != 0:   # only the pseudo-position bound was checked
        r.check = f"reachtally {unfinished(tally.returncode)}; within its space on every ply"
    else:
        r.check = f"every ply equal (+{surplus:,} unreachable in its space)"
    return r


def run_ours(board: str, tmp: Path, workers: int) -> tuple[Result, Path]:
    d = tmp / f"c4table-{board}"
    d.mkdir()
    cmd = [sys.executable, "-m", "c4table.cli.main", "build", board, "--out", str(d),
           "--quiet", "--workers", str(workers)]
    r = Result(board, "c4table")
    r.measured = measure(cmd, tmp, tmp / f"c4table-{board}.log", d)
    if r.measured.rc != 0:
        raise SystemExit(f"c4table: error: c4table build {board} failed (see {tmp}/c4table-{board}.log)")
    return r, d / f"connect4_{board}.dat"


# ---------------------------------------------------------------- the report

HEAD = ("board", "solver", "wall", "CPU (user+sys)", "CPU / c4table's", "CPU per position",
        "peak memory", "disk peak / kept", "per-ply W/D/L vs c4table")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB" if n >= 2**20 else f"{n / 1024:,.0f} KiB"


def row(r: Result, ours_cpu: float) -> list[str]:
    """One line of the table (strings)."""
    m = r.measured
    if m is None:
        return [r.board, r.solver, "", "", "", "", "", "", r.check]
    stopped = m.rc != 0   # stopped, killed or failed: its figures are lower bounds
    cpu = f"> {m.cpu:,.1f} s" if stopped else f"{m.cpu:,.1f} s"
    return [r.board, r.solver, f"{'> ' if stopped else ''}{m.wall:,.1f} s", cpu,
            "" if stopped else f"{m.cpu / ours_cpu:.2f}x",
            "" if stopped else f"{m.cpu / r.positions * 1e9:,.0f} ns",
            _mib(m.peak_mem), f"{_mib(m.disk_peak)} / {_mib(m.disk_final)}", r.check or "-"]


def format_table(rows: list[list[str]], markdown: bool) -> str:
    """The results as a markdown table or as aligned plain text."""
    if markdown:
        right = [i for i in range(2, 8)]
        sep = ["---:" if i in right else "---" for i in range(len(HEAD))]
        return "\n".join("| " + " | ".join(r) + " |" for r in [list(HEAD), sep, *rows])
    widths = [max(len(r[i]) for r in [list(HEAD), *rows]) for i in range(len(HEAD))]
    return "\n".join("  ".join(c.ljust(wd) if i in (0, 1, 8) else c.rjust(wd)
                               for i, (c, wd) in enumerate(zip(r, widths))).rstrip()
                     for r in [list(HEAD), *rows])


def growth(results: list[Result], boards: list[str]) -> list[str]:
    """Per solver, its CPU on each board as a multiple of its CPU on the first board."""
    out = []
    for solver in dict.fromkeys(r.solver for r in results):
        mine = {r.board: r.measured for r in results if r.solver == solver and r.measured}
        base = next((mine[b] for b in boards if b in mine and mine[b].rc == 0), None)
        if base is None:
            continue
        steps = [f"{b} {m.cpu / base.cpu:.1f}x" for b in boards
                 if (m := mine.get(b)) is not None and m.rc == 0]
        out.append(f"{solver}: CPU " + ", ".join(steps))
    return out


# ---------------------------------------------------------------- the run

def bench_board(board: str, tools: dict[str, Path], args, tmp: Path) -> list[Result]:
    """c4table, then each peer that supports the board, on ``board``; checks against the table."""
    w, h = (int(x) for x in board.split("x"))
    mine, table = run_ours(board, tmp, args.workers)
    t0 = time.perf_counter()
    ours, finished = our_counts(table)
    print(f"  {board}: the table's per-ply counts scanned in {time.perf_counter() - t0:.1f} s",
          flush=True)
    results = [mine]
    mine.check = "(the reference)"
    if "bock" in tools:
        log2 = args.bock_log2 or BOCK_LOG2.get(board, 26)
        results.append(run_bock(tools["bock"], board, tmp, log2, args.peer_timeout, ours))
    if "jh85" in tools:
        if jh85_supports(w, h):
            results.append(run_jh85(tools["jh85"], board, tmp, args.workers, args.peer_timeout,
                                    ours, finished))
        else:
            results.append(Result(board, "jh85 (ZDD)", check="board not supported (4..7 x 4..6)"))
    positions = sum(x.total for x in ours.values())
    for r in results:
        r.positions = positions
        for p in r.problems[:10]:
            print(f"  {board} {r.solver}: {p}", file=sys.stderr)
    return results


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  bench_peers.py --bock-src BOCK --jh85-src SMALLGAMES --boards 5x5,6x4\n"
               "  bench_peers.py --jh85-src SMALLGAMES --markdown\n"
               "exit status: 0 every count agrees, 1 a per-ply disagreement, 2 bad input")
    ap.add_argument("--bock-src", type=Path, metavar="DIR",
                    help="checkout of github.com/markus7800/Connect4-Strong-Solver")
    ap.add_argument("--jh85-src", type=Path, metavar="DIR",
                    help="checkout of github.com/jh85/smallgames")
    ap.add_argument("--boards", default=",".join(DEFAULT_BOARDS),
                    help=f"comma-separated WxH (default {','.join(DEFAULT_BOARDS)}; "
                         f"the issue's set: {','.join(BOARDS)})")
    ap.add_argument("--workers", type=int, default=2,
                    help="c4table build workers and jh85's threads (default 2; Böck's is one thread)")
    ap.add_argument("--bock-log2", type=int, metavar="N",
                    help="log2 of Böck's node pool on every board (default per board: "
                         + ", ".join(f"{b} {n}" for b, n in BOCK_LOG2.items()) + ")")
    ap.add_argument("--peer-timeout", type=float, metavar="S",
                    help="stop a peer's run after S seconds (reported as stopped)")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    boards = [b.strip().lower() for b in args.boards.split(",") if b.strip()]
    for b in boards:
        if not re.fullmatch(r"\d+x\d+", b):
            print(f"c4table: error: bad board {b!r} (want WxH)", file=sys.stderr)
            return 2
    srcs = {name: p for name, p in (("bock", args.bock_src), ("jh85", args.jh85_src)) if p}
    for name, p in srcs.items():
        if not p.exists():
            print(f"c4table: error: no such checkout: {p}", file=sys.stderr)
            return 2
    if srcs and (shutil.which("make") is None or shutil.which("g++") is None):
        print("c4table: error: building the peers needs make and g++", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="c4table-peers-"))
    try:
        builders = {"bock": build_bock, "jh85": build_jh85}
        tools = {name: builders[name](p, tmp) for name, p in srcs.items()}
        for name, p in srcs.items():
            print(f"{name}: {p} at {commit_of(p)}")
        print(f"{os.cpu_count()} cores; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
              flush=True)
        warm = tmp / "warm"
        subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", "4x4", "--out",
                        str(warm), "--quiet", "--workers", str(args.workers)],
                       check=True, stdout=subprocess.DEVNULL)
        results: list[Result] = []
        for board in boards:
            res = bench_board(board, tools, args, tmp)
            ours_cpu = res[0].measured.cpu
            for r in res:
                print("  " + "  ".join(row(r, ours_cpu)), flush=True)
            print(f"  load after {board}: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            results += res
        rows = []
        for board in boards:
            res = [r for r in results if r.board == board]
            rows += [row(r, res[0].measured.cpu) for r in res]
        print()
        print(format_table(rows, args.markdown))
        for line in growth(results, boards) if len(boards) > 1 else ():
            print(line)
        return 1 if any(r.problems for r in results) else 0
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
