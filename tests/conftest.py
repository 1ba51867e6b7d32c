"""Shared fixtures: paths to ../shared, and tables built once per test session."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REFERENCE = SHARED / "reference"


def published_totals() -> dict[tuple[int, int], int]:
    """Böck's Table 1: (width, height) -> positions with mirror images."""
    out = {}
    with open(REFERENCE / "positions_by_board.tsv") as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
    for r in rows[1:]:
        out[int(r[0]), int(r[1])] = int(r[2])
    return out


def run_cli(*args, stdin=None):
    """Run the real console entry point in a subprocess: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "c4table.cli", *args], input=stdin,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``built("5x4")`` -> build directory of that board, built once per session."""
    from c4table.pipeline.build import build_table
    cache: dict[str, Path] = {}

    def get(board: str) -> Path:
        if board not in cache:
            d = tmp_path_factory.mktemp(f"table_{board}")
            build_table(board, d, quiet=True, workers=2)
            cache[board] = d
        return cache[board]

    return get
