"""The memory budget of a build: what ``--memory`` (``memory=``) asks for, parsed once into a
:class:`MemoryBudget` that the build's settings carry, and its default (:data:`DEFAULT_MEMORY`).

>>> b = MemoryBudget.parse("4GiB")
>>> b.bytes, b.per_task(4), str(b)
(4294967296, 1073741824, '4.0 GiB')
>>> MemoryBudget.parse(b) is b and MemoryBudget.parse(1 << 20).bytes == 1 << 20
True
>>> MemoryBudget.parse("2MiB").check(4)
Traceback (most recent call last):
...
c4table.errors.BudgetError: memory budget 2.0 MiB (2,097,152 bytes) is too small to make progress with 4 workers: each needs at least 1.0 MiB, so give --memory 4.0MiB or more, or fewer --workers
"""
from __future__ import annotations

from dataclasses import dataclass

from c4table.errors import BudgetError
from c4table.units import format_size, parse_size
from c4table.wording import count

#: The budget a build gets when none is given (``--memory``, ``memory=``).
DEFAULT_MEMORY = "4GiB"
#: The least memory one task can make progress with.
MIN_TASK_MEMORY = 1 << 20


@dataclass(frozen=True)
class MemoryBudget:
    """Bytes of memory a build's workers share."""

    bytes: int

    @classmethod
    def parse(cls, value: "str | int | MemoryBudget" = DEFAULT_MEMORY) -> "MemoryBudget":
        """The budget of ``value``: a size (``"512MiB"``, ``"8GiB"``), bytes, or a budget
        (returned as it is). :class:`ValueError` (one line) if it is not a size."""
        if isinstance(value, MemoryBudget):
            return value
        return cls(parse_size(value))

    def per_task(self, workers: int) -> int:
        """Bytes one task may hold when ``workers`` processes share the budget."""
        return self.bytes // workers

    def check(self, workers: int) -> None:
        """Refuse (:class:`BudgetError`, one line saying what to give) a budget that leaves
        each of ``workers`` tasks less than :data:`MIN_TASK_MEMORY`."""
        if self.per_task(workers) < MIN_TASK_MEMORY:
            least = MIN_TASK_MEMORY * workers
            raise BudgetError(f"memory budget {self} ({self.bytes:,} bytes) is too small to make "
                              f"progress with {count(workers, 'worker')}: each needs at least "
                              f"{format_size(MIN_TASK_MEMORY)}, so give --memory "
                              f"{format_size(least).replace(' ', '')} or more, or fewer --workers")

    def __str__(self) -> str:
        return format_size(self.bytes)
