"""The schedule model (pipeline/planning/schedule.py) against hand-worked schedules: task counts as
the build cuts them, waves, stragglers, the driver's steps and the merge's hash tail."""
import math

import pytest

from c4table.pipeline.sort.partition import forward_ranges
from c4table.pipeline.planning.schedule import (STRAGGLER, FAST_MACHINE, MachineCosts, forward_shards,
                                       simulate, sort_ns)

BIG = 1 << 40   # task memory: no task is cut for memory


def costs(**kw) -> MachineCosts:
    base = dict(machine="test", source="by hand", forward_s=1e-6, backward_s=2e-6, merge_s=0.0,
                hash_ns_per_byte=(0.0, 0.0), step_s=0.1, task_s=0.0, driver_task_s=0.0,
                startup_s=0.0)
    base.update(kw)
    return MachineCosts(**base)


def test_forward_shards_follow_the_builds_range_counts():
    e = [1, 1_000_000, 2_000_000]
    # generation 1: 1,000,000 run keys from one task (no repeats between runs) -> 2 ranges on 2
    # workers; generation 2: 2,000,000 entries x 1.2 (two tasks' runs repeat some keys)
    assert forward_shards(e, 5, 2, BIG) == [1, forward_ranges(1_000_000, BIG, 5, 2),
                                            forward_ranges(2_400_000, BIG, 5, 2)] == [1, 2, 2]
    assert forward_shards([1, 10, 1000], 5, 16, BIG) == [1, 1, 1]   # below MIN_PARALLEL_ROWS
    # a small generation is cut into tasks of MIN_TASK_KEYS keys at the least, not one a worker
    assert forward_shards([1, 150_000, 3_000_000], 5, 16, BIG) == [1, 2, 16]


def test_two_workers_by_hand():
    s = simulate([1, 1_000_000, 2_000_000], 5, 2, 2, BIG, costs(), entry_size=5)
    # forward: step 0 writes generation 1 (2 tasks of 500,000 entries at 1 us), step 1 writes
    # generation 2 (2 x 1,000,000); each list waits for its largest task (STRAGGLER x the mean);
    # the last generation's step has no tasks. Every step costs the driver 0.1 s.
    fwd = STRAGGLER * 0.5 + STRAGGLER * 1.0 + 3 * 0.1
    # backward: generation 2 (2 x 1,000,000 at 2 us), 1 (2 x 500,000), 0 (one entry)
    bwd = STRAGGLER * 2.0 + STRAGGLER * 1.0 + 2e-6 + 3 * 0.1
    assert s.stages["forward"]["wall_s"] == pytest.approx(fwd)
    assert s.stages["backward"]["wall_s"] == pytest.approx(bwd)
    assert s.stages["merge"]["wall_s"] == pytest.approx(0.1)   # no merge cost, no hashing
    assert s.cpu_s == pytest.approx(3_000_000 * 1e-6 + 3_000_001 * 2e-6)
    assert s.wall_s == pytest.approx(fwd + bwd + 0.1)


def test_one_worker_wall_is_cpu_plus_steps():
    e = [1, 7, 300, 9_000, 120_000, 700_000, 400_000, 20_000]
    c = costs(task_s=0.003, driver_task_s=0.001)
    s = simulate(e, 7, len(e) - 1, 1, BIG, c, entry_size=5)
    tasks = s.stages["forward"]["tasks"] + s.stages["backward"]["tasks"]
    steps = 2 * len(e) + 1   # forward and backward per generation, the merge's
    assert s.wall_s == pytest.approx(s.cpu_s + steps * 0.1 + tasks * 0.001)
    assert s.parts()["waves"] == pytest.approx(0.0, abs=1e-9)   # one worker never idles


def test_the_hash_tail_bounds_a_merge_on_many_workers():
    # 100 M entries of 5 bytes, hashed at 2 ns per byte (md5, the slower digest): 1 s, while
    # 64 workers merge them in 0.16 s: the merge waits on the driver's hashing. Ranges of 7.8 MB
    # straddle the 64 MiB pieces of the tree hash: the driver hashes them all (0.5 s at 1 ns per
    # byte), on the tree hash's threads beside the md5
    c = costs(forward_s=0.0, backward_s=0.0, merge_s=1e-7, hash_ns_per_byte=(1.0, 2.0), step_s=0.0)
    s = simulate([0] * 9 + [100_000_000], 5, 9, 64, 1 << 30, c, entry_size=5, md5=True)
    m = s.stages["merge"]
    assert 1.0 <= m["wall_s"] <= 1.0 + 100_000_000 * 1e-7 / 64 * 1.01
    assert m["cpu_s"] == pytest.approx(10.0 + 1.5, rel=1e-3)   # tasks + the tree hash + md5
    assert s.bound()[0] == "driver"
    # the build's default hashes the tree hash alone: the straddled pieces' half of the tail,
    # and its CPU alone
    s = simulate([0] * 9 + [100_000_000], 5, 9, 64, 1 << 30, c, entry_size=5, md5=False,
                 sha256=False)
    m = s.stages["merge"]
    assert 0.5 <= m["wall_s"] <= 0.5 + 100_000_000 * 1e-7 / 64 * 1.01
    assert m["cpu_s"] == pytest.approx(10.0 + 0.5, rel=1e-3)


def test_bound_is_cores_for_big_work_on_few_workers():
    s = simulate([1, 100_000_000, 180_000_000, 80_000_000], 7, 3, 2, BIG, FAST_MACHINE, entry_size=5)
    assert s.bound()[0] == "cores"


def test_sort_correction_grows_with_the_task():
    c = costs(sort_ns=(2.0, 1.5), ref_sort_ns={"forward": 2.0 + 1.5 * 20})
    assert sort_ns(c.sort_ns, 2**20) == pytest.approx(32.0)
    assert c.per_entry("forward", 2**20) == pytest.approx(1e-6)
    # 2**4 times longer arrays: 6 ns per key more, 2.15 keys sorted per entry
    assert c.per_entry("forward", 2**24) == pytest.approx(1e-6 + 2.15 * 6e-9)
    assert c.per_entry("merge", 2**24) == 0.0   # the merge sorts cache-sized pieces
    assert c.per_entry("backward", 2**24) == 2e-6   # no reference measured: no correction


def test_costs_round_trip_through_json():
    c = costs(sort_ns=(1.0, 2.0), ref_sort_ns={"forward": 3.0}, measured={"load": 1.5})
    assert MachineCosts.from_json({**c.to_json(), "unknown": 1}) == c
    assert math.isclose(MachineCosts.from_json(c.to_json()).per_entry("forward", 1e6),
                        c.per_entry("forward", 1e6))


@pytest.mark.parametrize("hash_ns", [(0.1, 0.2), (5.0, 9.0)])   # the hash keeps up, or not
def test_huge_merges_in_closed_form_agree_with_the_list(monkeypatch, hash_ns):
    import c4table.pipeline.planning.schedule as sch
    c = costs(forward_s=0.0, backward_s=0.0, merge_s=2e-7, hash_ns_per_byte=hash_ns, step_s=0.0,
              task_s=0.01)
    e = [0] * 5 + [3_000_000_000]
    listed = simulate(e, 5, 5, 16, 1 << 26, c, entry_size=6, local=False)
    assert listed.stages["merge"]["tasks"] > 16 * 10   # many waves
    monkeypatch.setattr(sch, "MERGE_LIST_MAX", 0)
    closed = simulate(e, 5, 5, 16, 1 << 26, c, entry_size=6, local=False)
    for k in ("wall_s", "cpu_s", "tasks"):
        assert closed.stages["merge"][k] == pytest.approx(listed.stages["merge"][k], rel=0.02), k


def test_a_board_too_big_to_list_its_merge_ranges():
    s = simulate([1] + [10**20] * 3, 4, 3, 64, 16 << 30, FAST_MACHINE, entry_size=11)
    assert s.wall_s > s.cpu_s / 64 > 0


@pytest.mark.parametrize("workers,cores,busy", [(2, 2, 1.0), (2, 2, 0.8), (4, 2, 1.0), (4, 2, 0.7),
                                                (64, 64, 0.85)])
def test_the_parts_cut_the_wall(workers, cores, busy):
    """Whatever the workers, cores and busy share, the schedule's parts (cores, waits, waves,
    driver, disk) add up to its wall time and none is negative; tasks that never wait have
    no ``waits``, and with waiting tasks the wall grows, the CPU not."""
    e = [1, 7, 300, 9_000, 120_000, 700_000, 400_000, 20_000]
    kw = dict(task_s=0.003, driver_task_s=0.001, merge_s=5e-8, hash_ns_per_byte=(0.65, 1.0))
    s = simulate(e, 7, len(e) - 1, workers, 1 << 22, costs(busy=busy, **kw), entry_size=5,
                 cores=cores)
    p = s.parts()
    assert sum(p.values()) == pytest.approx(s.wall_s, rel=1e-9) and min(p.values()) >= 0, p
    never = simulate(e, 7, len(e) - 1, workers, 1 << 22, costs(**kw), entry_size=5, cores=cores)
    assert never.parts()["waits"] == pytest.approx(0.0, abs=1e-12)
    assert s.cpu_s == pytest.approx(never.cpu_s)
    assert (s.wall_s > never.wall_s) if busy < 1 and workers <= cores else s.wall_s >= never.wall_s
