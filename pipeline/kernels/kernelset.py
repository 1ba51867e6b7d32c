"""Which kernels a board's build calls (:func:`for_board`: those :data:`CPU_KERNELS` names for
the board's variant, the 2D ones of :mod:`c4table.pipeline.kernels.cpu` or the 3D ones of
:mod:`c4table.pipeline.kernels.cpu3d`;
:class:`KernelSet`: those, or the GPU's, as chosen once when the build opens and passed to each
task), and loading them into the driver before the workers fork (:func:`warm`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from c4table.errors import BoardError
from c4table.game.board import Board
from c4table.pipeline.kernels import cpu as kernels
from c4table.pipeline.kernels import cpu3d as kernels3d
from c4table.pipeline.kernels.cpu import (dedup_sorted, keep_best, merge_two, pack_entries, pack_mapped,
                                      strictly_increasing_keys, take_below, words_to_entries)


#: Board variant name (:data:`c4table.game.board.VARIANTS`) -> its build's CPU kernel module.
CPU_KERNELS = {"2d": kernels, "3d": kernels3d}


def for_board(board: Board):
    """The kernel module of ``board``'s variant (:data:`CPU_KERNELS`). Each offers ``board_tables``, ``unmove_tables``,
    ``expand``, ``resolve`` and ``emit_parents`` with the same calling convention
    (``kernel(data..., *board_tables(board), [*unmove_tables(board)], out...)``; ``expand``,
    ``resolve`` and ``emit_parents`` end with ``tail``, an int64[1] that gets how many of their
    output values, at its end, are in no order).

    >>> for_board(Board(5, 4)).__name__, for_board(Board.grid3d(2, 2, 2)).__name__
    ('c4table.pipeline.kernels.cpu', 'c4table.pipeline.kernels.cpu3d')
    """
    try:
        return CPU_KERNELS[board.variant]
    except KeyError:
        raise BoardError(f"board {board}: the build has no kernels for {board.variant} boards") from None


def compiled(board: Board) -> bool | None:
    """Whether numba's on-disk cache holds the build kernels of ``board`` for their current
    source (False on the first run after install or after an edit: :func:`warm` compiles them
    then, in seconds to tens of seconds depending on the machine); None when numba's cache
    cannot be asked.

    >>> warm(Board(4, 4))   # compiles them into the cache if it does not hold them yet
    >>> compiled(Board(4, 4))
    True
    """
    kern = for_board(board)
    return in_cache(kern.expand, kern.resolve)


def in_cache(*kernels) -> bool | None:
    """Whether numba's on-disk cache holds compiled code of each of ``kernels`` (``@njit(cache=
    True)`` functions) for their current source; None when numba's cache cannot be asked."""
    try:
        return all(bool(k._cache._cache_file._load_index()) for k in kernels)
    except Exception:   # noqa: BLE001 - numba's private cache API: unknown, say nothing
        return None


class KernelSet(NamedTuple):
    """The kernels of one build, passed to its tasks: the board's (:func:`for_board`) on the
    device chosen when the build opened (``"cpu"``, or ``"gpu"``:
    :mod:`c4table.pipeline.kernels.gpu.device`). Picklable, so a task receives it as an argument.

    >>> ks = KernelSet.of(Board(5, 4))
    >>> ks.board.name, ks.on_gpu, ks.cpu.__name__
    ('5x4', False, 'c4table.pipeline.kernels.cpu')
    """
    board_spec: tuple
    device: str = "cpu"

    @classmethod
    def of(cls, board: Board, device: str = "cpu") -> "KernelSet":
        return cls(board.spec, device)

    @property
    def board(self) -> Board:
        return Board.from_spec(self.board_spec)

    @property
    def on_gpu(self) -> bool:
        """Whether the tasks run their kernels and sorts on the GPU."""
        return self.device == "gpu"

    @property
    def pulls(self) -> bool:
        """Whether the backward pass pulls children's outcomes from the next generation
        (:func:`c4table.pipeline.kernels.cpu.pull_resolve`: the 2D kernels on the CPU) rather
        than getting a message from every child (the GPU's and the 3D boards')."""
        return not self.on_gpu and hasattr(self.cpu, "pull_resolve")

    @property
    def cpu(self):
        """The CPU kernel module of the board (:func:`for_board`)."""
        return for_board(self.board)

    @property
    def gpu(self):
        """The GPU's kernels and sorts (:mod:`c4table.pipeline.kernels.gpu.device`)."""
        from c4table.pipeline.kernels.gpu import device
        return device


def warm(board: Board) -> None:
    """Load the compiled kernels a build of ``board`` calls (from numba's on-disk cache) into
    this process, each called once on empty arrays of the types the stages pass. The build's
    driver does it before its first task: worker processes forked afterwards inherit them
    instead of each loading them again in its first tasks (numba's first use in a process,
    about 0.2 s, and a few ms per kernel, several times that under the tasks' tracemalloc).

    >>> warm(Board(4, 4))
    """
    kern = for_board(board)
    tabs, untabs = kern.board_tables(board), kern.unmove_tables(board)
    u64, u8 = np.empty(0, np.uint64), np.empty(0, np.uint8)
    one = np.zeros(1, np.int64)
    kern.expand(u64, 0, *tabs, u64, np.zeros(4, np.int64), one)
    kern.resolve(u64, u64, 0, *tabs, *untabs, u8, u64, np.zeros(6, np.int64), one)
    if hasattr(kern, "pull_resolve"):
        w = np.empty(board.width, np.uint64)
        kern.column_windows(u64, 0, *tabs, w, w.copy())
        kern.pull_resolve(u64, u64, u64, u8, 0, *tabs, *untabs, u8, u64, np.zeros(6, np.int64), one)
    dedup_sorted(u64)
    merge_two(u64, u64, u64, True)
    take_below(u64, np.zeros(0, np.int64), np.zeros(0, np.int64), np.uint64(0), u64)
    keep_best(u64)
    pack_entries(u64, u8, u64)
    pack_mapped(u64, u8, np.zeros(256, np.uint8), u64)
    strictly_increasing_keys(u64)
    words_to_entries(u64, board.entry_size, u8)
