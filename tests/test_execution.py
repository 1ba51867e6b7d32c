"""The executor's contract with a stage's driver: results come back in task order, and each
is the caller's alone once handed over (the executor keeps no reference: a merge's driver
would otherwise hold every range's result, megabytes each, until the last)."""
from __future__ import annotations

import gc
import weakref

from c4table.pipeline.runtime.execution import make_executor


class Result:
    """A task's result that can be watched for being freed."""

    def __init__(self, i: int):
        self.i = i
        self.payload = bytes(1 << 20)


def make(i: int) -> Result:
    return Result(i)


def test_imap_yields_in_order_and_keeps_no_result_handed_over():
    with make_executor(workers=2) as ex:
        seen, watched = [], []
        for r in ex.imap(make, [(i,) for i in range(6)]):
            seen.append(r.i)
            watched.append(weakref.ref(r))
            del r
            gc.collect()
            assert all(w() is None for w in watched[:-1]), seen   # those before are freed
    assert seen == list(range(6))
