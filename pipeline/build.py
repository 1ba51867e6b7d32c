"""A build: one board, one build directory, a memory budget and an executor; runs the stages.

>>> from pipeline.build import build_table
>>> path = build_table("4x4", "/tmp/c4-4x4", quiet=True)   # doctest: +SKIP
>>> path.name                                               # doctest: +SKIP
'connect4_4x4.dat'

Stages (each resumable, each recorded in ``DIR/manifest.json``):
``forward`` -> ``backward`` -> ``merge`` (see :mod:`pipeline.forward`, :mod:`pipeline.backward`,
:mod:`pipeline.merge`). ``DIR/work/`` holds the generations' shards and scratch files;
``DIR/connect4_WxH.dat`` is the table.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from c4table.board import Board
from c4table.errors import BuildError
from c4table.units import parse_size
from pipeline import backward, forward, merge
from pipeline.execution import Executor, default_workers, make_executor
from pipeline.kernels import key_bits
from pipeline.manifest import Manifest
from pipeline.progress import Progress

DEFAULT_MEMORY = "4GiB"
MAX_SHARD_ROWS = 1 << 24
MIN_TASK_MEMORY = 1 << 20


@dataclass
class Build:
    """State shared by the stages of one build."""

    board: Board
    root: Path
    memory: int
    executor: Executor
    quiet: bool = False
    manifest: Manifest = field(init=False)

    def __post_init__(self) -> None:
        if key_bits(self.board) > 56:
            raise BuildError(f"board {self.board}: keys need {key_bits(self.board)} bits; the "
                             "pipeline packs key and outcome in 64 bits, so at most 56")
        self.root = Path(self.root)
        self.root.mkdir(parents=True, exist_ok=True)
        if self.task_memory < MIN_TASK_MEMORY:
            raise BuildError(f"memory budget {self.memory} bytes is too small for "
                             f"{self.executor.workers} workers (at least "
                             f"{MIN_TASK_MEMORY * self.executor.workers} bytes)")
        self.manifest = Manifest.open_or_create(self.root, self.board)

    @property
    def task_memory(self) -> int:
        """Bytes one task may hold: the budget shared by the workers."""
        return self.memory // self.executor.workers

    @property
    def shard_rows(self) -> int:
        """Largest generation shard: an expand task holds the shard and its children."""
        return max(1, min(MAX_SHARD_ROWS, self.task_memory // (8 * (self.board.width + 1))))

    @property
    def min_parallel_rows(self) -> int:
        """Below this many keys a stage runs as one task (splitting would cost more)."""
        return 1 << 16

    def progress(self, stage: str, total: int | None = None) -> Progress:
        return Progress(stage, quiet=self.quiet, total=total)


def open_build(board: str | Board, out: str | Path, memory: str | int = DEFAULT_MEMORY,
               workers: int | None = None, scheduler: str | None = None, quiet: bool = False,
               restart: bool = False) -> Build:
    """Prepare a build of ``board`` in directory ``out`` (resuming what is there)."""
    board = Board.parse(board)
    root = Path(out)
    if restart and root.exists():
        for name in ("work", "manifest.json", board.table_filename):
            p = root / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()
    executor = make_executor(workers or default_workers(), scheduler)
    try:
        return Build(board, root, parse_size(memory), executor, quiet)
    except BaseException:
        executor.close()
        raise


def build_table(board: str | Board, out: str | Path, memory: str | int = DEFAULT_MEMORY,
                workers: int | None = None, scheduler: str | None = None, quiet: bool = False,
                restart: bool = False, keep_work: bool = True) -> Path:
    """Build (or finish building) the table of ``board`` in ``out``; return the table's path."""
    b = open_build(board, out, memory, workers, scheduler, quiet, restart)
    try:
        forward.run(b)
        backward.run(b)
        path = merge.run(b)
    finally:
        b.executor.close()
    if not keep_work:
        shutil.rmtree(b.root / "work", ignore_errors=True)
    return path
