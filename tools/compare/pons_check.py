"""A table's answers against Pascal Pons' alpha-beta solver, built for the table's board.

Pons' solver (https://github.com/PascalPons/connect4) fixes its board at compile time
(``Position::WIDTH`` and ``Position::HEIGHT`` in ``Position.hpp``). This tool copies the
checkout the user names into a temporary directory, sets the two constants to the table's
board there, builds it with its own makefile (``make c4solver``) and runs ``c4solver -a -b
NONE`` (no opening book: the 7x6 book fits no other board) on positions reached by random
play from the start, each with its score of every column; the table's answers, turned into
Pons' scores (:func:`c4table.analysis.pons.move_score`), must equal them. The solver never
enters this repository. The start position is always among the positions; the others are
``--samples`` random games cut after a random number of plies in ``--plies LO HI`` (seeded:
the same positions every run), none of them over and none with a move that wins at once (Pons'
solver refuses a line whose move completes a four).

    .venv/bin/python -m tools.compare.pons_check DIR/connect4_7x5.c4z --pons PONS_CHECKOUT \\
        --samples 200 --plies 4 20

Prints each position's scores where they differ, then how many positions and moves agreed
and the solver's CPU time; exits 1 if any differ. A check, not a test: a board larger than
the tests' takes the solver minutes (the start position most of them).
"""
from __future__ import annotations

import argparse
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NO_MOVE = -1000   # Pons' analyze() for a column that cannot be played (INVALID_MOVE)


def build_solver(src: Path, width: int, height: int, work: Path) -> Path:
    """``c4solver`` of the checkout ``src`` compiled for a ``width`` x ``height`` board in
    ``work``."""
    shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git", "*.o", "c4solver"))
    pos = work / "Position.hpp"
    text = pos.read_text()
    text, nw = re.subn(r"(static constexpr int WIDTH\s*=\s*)\d+", rf"\g<1>{width}", text)
    text, nh = re.subn(r"(static constexpr int HEIGHT\s*=\s*)\d+", rf"\g<1>{height}", text)
    if nw != 1 or nh != 1:
        raise SystemExit(f"{src}: Position.hpp has no single WIDTH and HEIGHT constant to set")
    pos.write_text(text)
    p = subprocess.run(["make", "c4solver"], cwd=work, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"make c4solver failed in {work}:\n{p.stderr[-2000:]}")
    return work / "c4solver"


def sample_positions(table, n: int, lo: int, hi: int, seed: int) -> list[str]:
    """The start and ``n`` positions reached by random play (moves as 1-based column digits),
    each cut after a random ply in ``lo..hi``, none over and none with a move that wins at
    once; duplicates dropped."""
    rng = random.Random(seed)
    seen, out = {""}, [""]
    tries = 0
    while len(out) < n + 1 and tries < 50 * (n + 1):
        tries += 1
        target, moves = rng.randint(lo, hi), ""
        while len(moves) < target:
            p = table.probe(moves)
            safe = [m.column for m in p.moves if not (m.distance == 1 and m.outcome == p.to_move)]
            if p.terminal or not safe:
                break
            moves += str(rng.choice(safe))
        p = table.probe(moves)
        if p.terminal or moves in seen or any(m.distance == 1 and m.outcome == p.to_move
                                              for m in p.moves):
            continue
        seen.add(moves)
        out.append(moves)
    return out


def table_scores(table, moves: str, width: int, cells: int) -> list[int]:
    """The table's Pons score of every column of the position ``moves`` (NO_MOVE if full)."""
    from c4table.analysis.pons import move_score
    p = table.probe(moves)
    got = [NO_MOVE] * width
    for m in p.moves:
        got[m.column - 1] = move_score(p, m, cells)
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", help="a table file (.dat or .c4z) of a 2D board")
    ap.add_argument("--pons", type=Path, required=True, help="a checkout of PascalPons/connect4")
    ap.add_argument("--samples", type=int, default=100, help="random positions besides the start")
    ap.add_argument("--plies", type=int, nargs=2, default=(4, 20), metavar=("LO", "HI"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    from c4table.open import open_table
    with open_table(a.table) as t, tempfile.TemporaryDirectory() as tmp:
        board = t.board
        w, cells = board.width, board.cells
        if w * (board.height + 1) > 64:
            raise SystemExit(f"{board.name}: Pons' solver keeps a board in 64 bits "
                             "(width x (height + 1) at most 64)")
        solver = build_solver(a.pons, w, board.height, Path(tmp) / "pons")
        positions = sample_positions(t, a.samples, *a.plies, a.seed)
        print(f"{board.name}: {len(positions)} positions (the start and random games cut at "
              f"plies {a.plies[0]}-{a.plies[1]}, seed {a.seed})", flush=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([str(solver), "-a", "-b", str(Path(tmp) / "no.book")],
                              input="\n".join(positions) + "\n", capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        lines = proc.stdout.splitlines()
        if proc.returncode or len(lines) != len(positions):
            raise SystemExit(f"the solver answered {len(lines)} of {len(positions)} lines "
                             f"(exit {proc.returncode}): {proc.stderr[-500:]}")
        bad = moves = 0
        for pos, line in zip(positions, lines):
            parts = line.split()
            theirs = [int(x) for x in parts[-w:]]
            if (parts[0] if len(parts) > w else "") != pos:
                raise SystemExit(f"the solver's line {line!r} is not about {pos!r}")
            ours = table_scores(t, pos, w, cells)
            moves += sum(s != NO_MOVE for s in ours)
            if ours != theirs:
                bad += 1
                print(f"DIFFERS {pos or '(start)'}: table {ours}, Pons {theirs}")
        start = table_scores(t, "", w, cells)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        print(f"start position, Pons' score of each column: {' '.join(map(str, start))}")
        print(f"{len(positions) - bad} of {len(positions)} positions agree ({moves} moves scored); "
              f"solver {cpu:.1f} s CPU, {wall:.1f} s wall")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
