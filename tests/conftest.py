"""Shared fixtures: the published figures the tests check against (data files in the repository,
each with its source in its first line) and tables built once per test session.

* ``c4table/data/bock_table1.tsv``: Böck's Table 1 (positions per board);
* ``c4table/data/wdl_by_ply_7x6.tsv``: Böck's Table 2 (7x6 per ply);
* ``tests/data/cadot_columns_h6.tsv``: the 111 column codes of Cadot's README, section 3.1.1;
* ``tests/data/published_tables.tsv``: sizes and hashes of tables published by Cadot (and the
  4x4 figure of the format reference).

The files are read here as plain text, not through the package, so a test compares the
package's results with the published figures and nothing else.
"""
from __future__ import annotations

import csv
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG_DATA = ROOT / "c4table" / "data"
TEST_DATA = ROOT / "tests" / "data"


def read_tsv(path: Path) -> list[dict[str, str]]:
    """Rows of a tab-separated data file whose ``#`` lines are comments (the source)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader((ln for ln in f if not ln.startswith("#")), delimiter="\t"))


def published_totals() -> dict[tuple[int, int], int]:
    """Böck's Table 1: (width, height) -> positions with mirror images."""
    return {(int(r["width"]), int(r["height"])): int(r["positions"])
            for r in read_tsv(PKG_DATA / "bock_table1.tsv")}


def bock_table2() -> dict[int, dict[str, int]]:
    """Böck's Table 2 (7x6): ply -> {won, drawn, lost, total, terminal}."""
    return {int(r["ply"]): {k: int(v) for k, v in r.items()}
            for r in read_tsv(PKG_DATA / "wdl_by_ply_7x6.tsv")}


def cadot_column_table() -> list[tuple[int, int, str, str]]:
    """Cadot's README, section 3.1.1: (code, value, ternary digits, column top to bottom)."""
    return [(int(r["encoded_decimal"]), int(r["column_value_decimal"]),
             r["column_value_ternary"], r["column_top_to_bottom"])
            for r in read_tsv(TEST_DATA / "cadot_columns_h6.tsv")]


def published_tables() -> dict[str, dict[str, str]]:
    """Board -> published figures of its table (file, entries, bytes, md5, sha256, source);
    a field that was not published is the empty string."""
    return {r["board"]: r for r in read_tsv(TEST_DATA / "published_tables.tsv")}


def run_cli(*args, stdin=None):
    """Run the real console entry point in a subprocess: (exit status, stdout, stderr)."""
    p = subprocess.run([sys.executable, "-m", "c4table.cli.main", *args], input=stdin,
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def tool(name: str, *args: str) -> list[str]:
    """The command running tool ``name`` (``"bench.gpu_run"``) as its docs say, ``python -m
    tools.bench.gpu_run ARGS``: run it with ``env=tool_env()`` (or from the checkout's root)."""
    return [sys.executable, "-m", f"tools.{name}", *args]


def tool_env() -> dict[str, str]:
    """The environment of a tool started outside the checkout's root: the root on the import
    path, as starting from it puts it."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """``built("5x4")`` -> build directory of that board, built once per session."""
    from c4table.pipeline.stages.build import build_table
    cache: dict[str, Path] = {}

    def get(board: str) -> Path:
        if board not in cache:
            d = tmp_path_factory.mktemp(f"table_{board}")
            build_table(board, d, quiet=True, workers=2)
            cache[board] = d
        return cache[board]

    return get


@pytest.fixture(scope="session")
def d54(built):
    """The 5x4 build directory (built once per session)."""
    return built("5x4")


@pytest.fixture(scope="session")
def t54(d54):
    """The 5x4 table file."""
    return d54 / "connect4_5x4.dat"


def random_positions(board, n: int, seed: int = 0) -> list:
    """``n`` positions (:class:`c4table.game.rules.Position`) of random games cut at random lengths,
    finished games included."""
    from c4table.game.rules import Position
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        p = Position(board)
        for _ in range(rng.randrange(board.cells + 1)):
            if p.is_terminal:
                break
            p.play(rng.choice(p.legal_moves()))
        out.append(p)
    return out


def describe_table(path: Path, board: str) -> None:
    """Write the manifest of a build directory beside the table file ``path`` describing it as
    it is (entries, bytes, sha256), so that a deliberately partial table opens: without one it
    is refused as a truncated copy of the known table of its board."""
    import hashlib
    from c4table.game.board import Board
    from c4table.builddir.manifest import Manifest
    from c4table.builddir.records import TableRecord
    from c4table.builddir.tableformat import DAT
    b = Board.parse(board)
    m = Manifest.open_or_create(path.parent, b)
    body = path.read_bytes()
    m.record_table(TableRecord.of(DAT, path.name, len(body) // b.entry_size,
                                  {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}))
    m.save()


def interrupt_backward(b, stop) -> None:
    """Run the backward pass of the open build ``b`` and interrupt it (``KeyboardInterrupt``,
    as Ctrl-C would) at the first batch of annotation tasks for which ``stop()`` is true; the
    build is then closed, as a killed command leaves it. Tests resume it with a new build."""
    from c4table.pipeline.stages import backward
    real_map = b.executor.map

    def map_until(fn, tasks):
        if fn is backward.annotate_task and stop():
            raise KeyboardInterrupt
        return real_map(fn, tasks)
    b.executor.map = map_until
    try:
        with pytest.raises(KeyboardInterrupt):
            backward.run(b)
    finally:
        b.close()
