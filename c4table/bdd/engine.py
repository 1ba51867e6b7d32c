"""The BDD engine: creating an oxidd manager and keeping it alive under its hard node cap.

Design notes: ``docs/modules.md`` (``c4table.bdd.engine``).

    >>> eng = Engine(nodes=1 << 16)
    >>> eng.manager.add_named_vars(["x", "y"])
    range(0, 2)
    >>> f = eng.manager.var(0) & eng.manager.var(1)
    >>> f.sat_count(2)
    1
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from c4table.errors import C4Error

try:  # oxidd is a declared dependency; keep the import error readable if it is missing
    import oxidd.bcdd as _bcdd  # oxidd loads only when BDD mode runs
    import oxidd.bdd as _bdd
    from oxidd.util import BooleanOperator, DDMemoryError
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("BDD mode needs the 'oxidd' package: pip install 'oxidd>=0.13,<0.14'") from exc

__all__ = ["BddCapacityError", "BooleanOperator", "DDMemoryError", "DEFAULT_NODES", "Engine",
           "FLAVOURS", "make_manager"]

DEFAULT_NODES = 1 << 27
"""Default node capacity (134M nodes). oxidd commits memory lazily, so a large cap costs little
until it is used; a 200M-node manager was measured at about 340 MiB RSS at creation."""

FLAVOURS = ("bdd", "bcdd")

T = TypeVar("T")


class BddCapacityError(C4Error):
    """The BDD manager ran out of nodes (``--bdd-nodes`` too small)."""


def make_manager(nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
                 cache: int | None = None):
    """Create an oxidd manager.

    ``nodes`` is the hard cap on inner nodes, ``cache`` the apply-cache size (default:
    ``nodes // 32``, clamped to [2^16, 2^22]), ``threads`` oxidd's worker threads, ``flavour``
    ``"bdd"`` or ``"bcdd"`` (complement edges; its cap is at most 2^31 nodes).

    >>> make_manager(1 << 12).num_inner_nodes()
    0
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown BDD flavour {flavour!r}; expected one of {FLAVOURS}")
    if nodes < 1024:
        raise ValueError(f"node capacity {nodes} is too small (at least 1024)")
    nodes = min(nodes, (1 << 31) - 1 if flavour == "bcdd" else (1 << 32) - 1)
    if cache is None:
        cache = max(1 << 16, min(nodes // 32, 1 << 22))
    threads = max(1, int(threads))
    cls = _bdd.BDDManager if flavour == "bdd" else _bcdd.BCDDManager
    return cls(nodes, cache, threads)


class Engine:
    """An oxidd manager with the peak-node bookkeeping of one run.

    ``peak_nodes`` is the largest number of live inner nodes seen just before a collection
    (sampled between operations, so a peak inside one operation can be higher, and it includes
    garbage not collected yet); ``peak_live`` the largest count right after a collection.
    """

    def __init__(self, nodes: int = DEFAULT_NODES, threads: int = 1, flavour: str = "bdd",
                 cache: int | None = None):
        self.capacity = nodes
        self.flavour = flavour
        self.threads = threads
        self.manager = make_manager(nodes, threads, flavour, cache)
        self.peak_nodes = 0
        self.peak_live = 0
        self.gc_runs = 0
        self._floor = min(max(1 << 20, nodes // 64), nodes // 2)
        self._trigger = self._floor

    def live_nodes(self) -> int:
        """Inner nodes currently stored (live or not yet collected)."""
        return self.manager.num_inner_nodes()

    def collect(self, force: bool = False) -> int:
        """Record the node count and garbage-collect if ``force`` or if the stored nodes have
        grown past the trigger (twice the live nodes after the previous collection, at least
        ``max(2^20, capacity/64)``, at most 3/4 of the capacity). A collection also empties
        oxidd's apply cache, which costs time proportional to the cache size, hence not after
        every ply. Returns the nodes still stored."""
        n = self.manager.num_inner_nodes()
        self.peak_nodes = max(self.peak_nodes, n)
        if force or n >= self._trigger:
            self.manager.gc()
            self.gc_runs += 1
            n = self.manager.num_inner_nodes()
            self.peak_live = max(self.peak_live, n)
            self._trigger = min(max(self._floor, 2 * n), self.capacity * 3 // 4)
        return n

    def capacity_message(self) -> str:
        return (f"BDD node capacity of {self.capacity:,} nodes exhausted; "
                f"rerun with a larger --bdd-nodes (e.g. {self.capacity * 4})")

    @contextmanager
    def guard(self) -> Iterator["Engine"]:
        """Turn an ``oxidd.util.DDMemoryError`` raised anywhere inside the block into
        :class:`BddCapacityError`."""
        try:
            yield self
        except DDMemoryError:
            raise BddCapacityError(self.capacity_message()) from None

    def retry(self, op: Callable[[], T]) -> T:
        """Run ``op``; if it runs out of nodes, collect garbage and run it once more. A second
        failure raises :class:`BddCapacityError` naming the capacity."""
        try:
            return op()
        except DDMemoryError:
            self.collect(force=True)
            try:
                return op()
            except DDMemoryError:
                raise BddCapacityError(self.capacity_message()) from None
