"""The shuffle's requests: fences read once per process (cached by run record, and counted
apart, so that the other counts do not depend on which process ran which task), and the
two-level shuffle (:mod:`c4table.pipeline.sort.shuffle`) that keeps a shuffle's ranged reads under
a bound, with tables byte-identical to the known ones."""
from __future__ import annotations

import numpy as np

from c4table.pipeline.sort import extsort
from c4table.io.counting import IOCounts, counting
from c4table.io.storage import Storage


def _values(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.unique(rng.integers(0, 1 << 40, size=n, dtype=np.uint64))


def test_fences_are_read_once_per_run_record_and_never_stale(tmp_path):
    """By path, every read of a slice costs a size query and a fence GET; by record, the
    second read of the same run costs neither, and the slices are the same. A run written
    again under the same name (new xxh64) is read with its new fences."""
    st = Storage(tmp_path)
    vals = _values(1, 3 * extsort.FENCE + 77)
    digest = extsort.write_run(st, "r.u64", vals)
    rec = extsort.run_record("r.u64", vals, digest)
    lo, hi = int(vals[1000]), int(vals[2 * extsort.FENCE + 5])
    want = vals[(vals >= np.uint64(lo)) & (vals < np.uint64(hi))]
    by_path, first, second = IOCounts(), IOCounts(), IOCounts()
    with counting(by_path):
        assert np.array_equal(extsort.merge_range(st, ["r.u64"], lo, hi), want)
    with counting(first):
        assert np.array_equal(extsort.merge_range(st, [rec], lo, hi), want)
    with counting(second):
        assert np.array_equal(extsort.merge_range(st, [rec], lo, hi), want)
    assert (by_path.head_requests, by_path.get_requests, by_path.ranged_reads) == (1, 1, 1)
    assert (first.head_requests, first.get_requests, first.ranged_reads) == (0, 1, 1)
    assert (second.head_requests, second.get_requests, second.ranged_reads) == (0, 0, 1)
    blocks = -(-vals.shape[0] // extsort.FENCE)   # the index: 4 header words, fences, offsets
    assert by_path.bytes_read - second.bytes_read == 8 * (4 + 2 * blocks + 1)
    # the read kept for later tasks is counted apart: the rest is the same for either task
    assert (by_path.cached_reads, first.cached_reads, second.cached_reads) == (0, 1, 0)
    assert first.cached_bytes_read == 8 * (4 + 2 * blocks + 1)
    assert first.task_bytes_read == second.task_bytes_read == second.bytes_read
    other = _values(2, 2 * extsort.FENCE + 5)
    rec2 = extsort.run_record("r.u64", other, extsort.write_run(st, "r.u64", other))
    assert rec2["xxh64"] != rec["xxh64"]
    want2 = other[(other >= np.uint64(lo)) & (other < np.uint64(hi))]
    assert np.array_equal(extsort.merge_range(st, [rec2], lo, hi), want2)


# ---------------------------------------------------------------- the two-level shuffle
import json  # noqa: E402

import pytest  # noqa: E402

from conftest import ROOT, interrupt_backward  # noqa: E402

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


def known_sha256(board: str) -> str:
    """The sha256 of the known table (5x4: identical to the brute-force oracle; 4x6:
    cross-checked against Böck's Table 1), from the package's data."""
    return json.loads((ROOT / "c4table" / "data" / "known_tables.json").read_text())[board]["sha256"]


def build_stats(board: str, out, max_reads: int, monkeypatch) -> dict:
    """Build ``board`` on 2 local processes with 2 MiB per task (many small tasks: shuffles
    of up to ~25 x 25 on 5x4) and the shuffle threshold ``max_reads``; return its stats.json."""
    from c4table.pipeline.stages.build import build_table
    from c4table.io.hashes import sha256_of
    monkeypatch.setenv("C4TABLE_SHUFFLE_MAX_READS", str(max_reads))
    path = build_table(board, out, memory="4MiB", workers=2)
    assert sha256_of(path) == known_sha256(board)
    return json.loads((out / "stats.json").read_text())


@pytest.mark.parametrize("board", ["5x4", "4x6"])
def test_two_level_shuffle_is_byte_identical_and_reads_within_its_bound(board, tmp_path, monkeypatch):
    """With the threshold forced down to 30 ranged reads, every shuffle larger than that is
    pre-merged: the table is the known one, and every shuffle's counted run-slice reads are
    within the bound of its layout (direct: tasks x runs; two-level: runs x G + tasks x
    ceil(runs / G)), under half of tasks x runs for the largest. (The backward pass's message
    runs hold only the children read through the mirror: the others are pulled.)"""
    from c4table.pipeline.sort.shuffle import group_size, read_bound
    stats = build_stats(board, tmp_path / "b", 30, monkeypatch)
    shuffles = stats["shuffles"]
    assert stats["shuffle_max_reads"] == 30
    assert {s["stage"] for s in shuffles if s["group"]} == {"forward", "backward"}
    for s in shuffles:
        assert s["group"] == group_size(s["tasks"], s["runs"], 30)
        assert s["bound"] == read_bound(s["tasks"], s["runs"], s["group"])
        # the empty board is symmetric: it pulls every child, no message reaches it
        least = 0 if (s["stage"], s["ply"]) == ("backward", 0) else 1
        assert least <= s["slice_reads"] <= s["bound"], s
    big = max(shuffles, key=lambda s: s["tasks"] * s["runs"])
    assert big["tasks"] * big["runs"] > 400 and big["slice_reads"] < big["tasks"] * big["runs"] / 2
    assert sum(s["slice_reads"] for s in shuffles) == sum(
        stats["stages"][st]["slice_reads"] for st in ("forward", "backward"))


def test_two_level_shuffle_costs_at_most_twice_the_bytes(tmp_path, monkeypatch):
    """5x4 direct and two-level, same tasks: the pre-merge writes the shuffled bytes once more
    (at most 2x the bytes written by forward and backward) and reads fewer of them (each
    direct slice is widened to the fences around it), for fewer run-slice reads."""
    direct = build_stats("5x4", tmp_path / "d", 10**12, monkeypatch)
    two = build_stats("5x4", tmp_path / "t", 30, monkeypatch)
    assert not any(s["group"] for s in direct["shuffles"])
    for st in ("forward", "backward"):
        d, t = direct["stages"][st], two["stages"][st]
        assert d["bytes_written"] < t["bytes_written"] <= 2 * d["bytes_written"], st
        assert t["slice_reads"] < d["slice_reads"] / 2, st
        assert t["bytes_read"] <= 2 * d["bytes_read"], st


def test_premerged_messages_are_reused_after_an_interruption(tmp_path):
    """The backward pass stopped after a pre-merge was recorded, resumed by a new build: the
    recorded pieces are verified and read, not merged again, and the table is the known one."""
    from c4table.pipeline.stages import backward
    from c4table.pipeline.stages import forward
    from c4table.pipeline.sort import shuffle
    from c4table.pipeline.stages.build import open_build, run_build
    from c4table.io.hashes import sha256_of
    out = tmp_path / "b"
    b = open_build("5x4", out, memory="4MiB", workers=1, quiet=True)
    b.shuffle_max_reads = 30
    try:
        forward.run(b)
    except BaseException:
        b.close()
        raise
    m = b.manifest
    # stop at the first annotation that reads pre-merged pieces
    interrupt_backward(b, lambda: any(m.step("backward", p).premerged is not None
                                      for p in m.finished_plies("backward")))
    b = open_build("5x4", out, memory="4MiB", workers=1, quiet=True)
    b.shuffle_max_reads = 30
    calls, real_map = [], b.executor.map
    b.executor.map = lambda fn, tasks: calls.append(fn) or real_map(fn, tasks)
    assert sha256_of(run_build(b)) == known_sha256("5x4")
    assert calls.index(backward.annotate_task) < calls.index(shuffle.premerge_task)


def test_counts_do_not_depend_on_which_process_ran_which_task(tmp_path, monkeypatch):
    """5x4 planned for 2 workers, run once on 2 local processes and once with every task in
    the driver's process (the same tasks, each run index then read once in all): the counts
    per stage are the same but for the reads each process caches for its later tasks (run
    indexes: ``cached_reads``, ``cached_bytes_read``), which are counted apart, and the memory
    measured. (Counted with the rest, the index GETs made forward and backward ``bytes_read``
    depend on the schedule, and so did counting the build's own ``stats.json``, whose size
    depends on the counts it holds: it is not counted.)"""
    from c4table.io.counting import IOCounts
    from c4table.pipeline.runtime.execution import Executor
    from c4table.pipeline.stages import build as build_mod
    pool = build_stats("5x4", tmp_path / "p", 30, monkeypatch)
    monkeypatch.setattr(build_mod, "make_executor",
                        lambda workers, scheduler, start_method: Executor(None, workers, "serial"))
    here = build_stats("5x4", tmp_path / "h", 30, monkeypatch)
    assert (pool["workers"], here["workers"], here["executor"]) == (2, 2, "serial")
    memory = {"peak_task_memory", "task_memory_sum", "first_task_memory",
              "cpu_us", "sys_us", "wall_us", "codec_us"}   # and the times, which no two runs share
    cached = {"cached_reads", "cached_bytes_read", "bytes_read", "get_requests", "requests"}
    for st in ("forward", "backward", "merge"):
        p, h = pool["stages"][st], here["stages"][st]
        assert {k: v for k, v in p.items() if k not in memory | cached} == \
               {k: v for k, v in h.items() if k not in memory | cached}, st
        cp, ch = IOCounts.from_json(p), IOCounts.from_json(h)
        assert cp.task_bytes_read == ch.task_bytes_read, st
        assert cp.get_requests - cp.cached_reads == ch.get_requests - ch.cached_reads, st
        assert cp.cached_reads >= ch.cached_reads, st   # each process reads an index once
    assert here["stages"]["forward"]["cached_reads"] > 0
