"""Costs fitted on finished builds (``c4table plan BOARD --calibrate-from DIR``): a build records
its CPU (user + system, tasks and driver) and wall time per stage in ``stats.json``, summed
over the runs that worked on it; the fit recovers the costs a set of builds was made from;
a build of the planned board is never fitted on; bad input is one line and exit 2.
"""
from __future__ import annotations

import json
import resource

import pytest

from c4table.game.board import Board
from c4table.io.storage import open_storage
from c4table.pipeline.planning import fit
from c4table.pipeline.planning.c4zsize import uncounted_codec_cpu_s
from c4table.pipeline.planning.fit import MeasuredBuild, fit_costs, usable
from c4table.pipeline.planning.plan import make_plan
from c4table.pipeline.planning.schedule import FAST_MACHINE
from c4table.pipeline.runtime import counters
from conftest import run_cli

STAGES = ("forward", "backward", "merge")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_a_build_records_its_cpu_and_wall_per_stage(built):
    """Every stage of a finished 2-worker build has CPU, system time and wall time; system
    time is part of the CPU; the machine is named."""
    st = counters.load_stats(open_storage(built("5x4")))
    assert st["machine"].endswith("cores")
    for s in STAGES:
        c = st["stages"][s]
        assert c["cpu_us"] > 0 and c["wall_us"] > 0, (s, c)
        assert 0 <= c["sys_us"] <= c["cpu_us"]


def test_a_c4z_build_counts_its_block_codec_and_the_fit_takes_it_out(tmp_path):
    """A ``--format c4z`` build's merge counts the CPU its tasks spent in the block codec
    (``codec_us``, part of the merge's CPU; a ``.dat`` build counts none), and the fit takes
    that out of the merge, per entry, instead of the codec's fixed figure."""
    from c4table.pipeline.stages.build import build_table
    build_table("5x4", tmp_path / "z", quiet=True, workers=2, table_format="c4z")
    merge = counters.load_stats(open_storage(tmp_path / "z"))["stages"]["merge"]
    assert 0 < merge["codec_us"] < merge["cpu_us"], merge
    b = MeasuredBuild.load(tmp_path / "z")
    assert b.codec is not None and b.merge_extra_s == pytest.approx(merge["codec_us"] / 1e6 / b.total)
    st = counters.load_stats(open_storage(tmp_path / "z"))   # as stats that did not count it
    stages = {s: {k: v for k, v in c.items() if k != "codec_us"} for s, c in st["stages"].items()}
    (tmp_path / "z" / "stats.json").unlink()
    counters.save_stats(open_storage(tmp_path / "z"), "5x4", st["workers"], st["executor"], stages,
                        {"task_memory": st["task_memory"]})
    assert MeasuredBuild.load(tmp_path / "z").merge_extra_s == uncounted_codec_cpu_s(b.codec)
    rc, _, err = run_cli("build", "4x4", "--out", str(tmp_path / "d"), "--workers", "1", "-q")
    assert rc == 0, err
    assert counters.load_stats(open_storage(tmp_path / "d"))["stages"]["merge"]["codec_us"] == 0
    assert MeasuredBuild.load(tmp_path / "d").merge_extra_s == 0


def test_cpu_of_worker_tasks_is_theirs(tmp_path):
    """With two worker processes, the CPU the stats give the build is at least what its
    worker processes used (this process's children once the pool has ended: the build's
    driver is this process), so the workers' CPU is counted, their start included."""
    from c4table.pipeline.stages.build import build_table
    before = children_cpu()
    build_table("5x4", tmp_path / "b", quiet=True, workers=2)
    workers = children_cpu() - before
    st = counters.load_stats(open_storage(tmp_path / "b"))
    counted = sum(st["stages"][s]["cpu_us"] for s in STAGES) / 1e6
    assert workers > 0 and counted >= 0.9 * workers, (counted, workers)


def test_a_resumed_build_sums_its_runs(tmp_path):
    """A build run stage by stage (forward in one run, the rest in another) sums each stage
    over its runs: the forward stage's CPU is what the first run counted."""
    d = tmp_path / "b"
    rc, _, err = run_cli("forward", "4x4", "--out", str(d), "--workers", "1", "-q")
    assert rc == 0, err
    first = counters.load_stats(open_storage(d))["stages"]["forward"]
    rc, _, err = run_cli("build", "4x4", "--out", str(d), "--workers", "1", "-q")
    assert rc == 0, err
    st = counters.load_stats(open_storage(d))["stages"]
    assert st["forward"]["cpu_us"] == first["cpu_us"] and st["forward"]["runs"] == 1
    assert all(st[s]["cpu_us"] > 0 for s in ("backward", "merge"))
    b = MeasuredBuild.load(d)
    assert b.runs == 1 and b.cpu_s["forward"] == first["cpu_us"] / 1e6


def synthetic(board: str, workers: int, per_entry: dict, fixed: float, slope_ns: float,
              x_ref: float) -> MeasuredBuild:
    """A build of ``board`` (the plan's entries per generation) whose stages cost exactly
    ``fixed`` seconds per worker plus, per entry, ``per_entry[stage] + slope * (log2 task
    keys - x_ref)`` (the merge without the slope)."""
    p = make_plan(board, workers, 1 << 30)
    entries = tuple(r.entries for r in p.plies)
    b = MeasuredBuild(root=f"synthetic/{board}", board=Board.parse(board), table_format="dat",
                      workers=workers, task_memory=1 << 30, entries=entries,
                      cpu_s={}, sys_s={s: 0.0 for s in STAGES}, wall_s={s: 1.0 for s in STAGES},
                      tasks={s: 1 for s in STAGES}, runs=1, machine="test machine, 2 cores")
    x = b.log2_task_keys()
    E = b.total
    for s in STAGES:
        grow = slope_ns * 1e-9 * (x - x_ref) if s != "merge" else 0.0
        b.cpu_s[s] = fixed * workers + E * (per_entry[s] + grow)
    return b


def test_fit_recovers_the_costs_the_builds_were_made_of():
    """Builds made from known costs (a fixed cost per worker, a cost per entry and stage, a
    growth with the task size) give those costs back; the plan of another board is then
    priced with them."""
    per = {"forward": 40e-9, "backward": 60e-9, "merge": 12e-9}
    boards = ["5x4", "5x5", "6x4", "6x5"]
    probe = [synthetic(b, 2, per, 0.0, 0.0, 0.0) for b in boards]
    x_ref = max(b.log2_task_keys() for b in probe)
    builds = [synthetic(b, 2, per, 0.5, 3.0, x_ref) for b in boards]
    c = fit_costs(builds, FAST_MACHINE)
    sha = FAST_MACHINE.hash_ns_per_byte[0] * 1e-9 * Board.parse("6x5").entry_size
    assert c.forward_s == pytest.approx(per["forward"], rel=1e-6)
    assert c.backward_s == pytest.approx(per["backward"], rel=1e-6)
    assert c.merge_s == pytest.approx(per["merge"] - sha, rel=1e-6)
    assert c.measured["slope_ns_per_doubling"] == pytest.approx(3.0, rel=1e-3)
    # per_entry at the largest build's task size is its intercept; twice the keys, 3 ns more
    keys = 2 ** x_ref
    assert c.per_entry("forward", keys) == pytest.approx(per["forward"], rel=1e-6)
    assert c.per_entry("forward", 2 * keys) == pytest.approx(per["forward"] + 3e-9, rel=1e-4)
    assert "fitted on 4 build(s)" in c.source and c.machine == "test machine, 2 cores"


def test_two_builds_fit_no_growth_and_one_build_its_own_cost():
    per = {"forward": 50e-9, "backward": 70e-9, "merge": 20e-9}
    two = [synthetic(b, 2, per, 0.3, 0.0, 0.0) for b in ("5x4", "6x4")]
    c = fit_costs(two, FAST_MACHINE)
    assert c.forward_s == pytest.approx(per["forward"], rel=1e-6)
    assert c.measured["slope_ns_per_doubling"] == 0.0
    one = fit_costs([synthetic("6x4", 2, per, 0.0, 0.0, 0.0)], FAST_MACHINE)
    assert one.backward_s == pytest.approx(per["backward"], rel=1e-6)


def test_the_planned_board_is_left_out(built):
    d = built("5x4")
    with pytest.raises(Exception, match="no build to fit"):
        usable([d], Board.parse("5x4"))
    builds, notes = usable([d], Board.parse("5x5"))
    assert [b.board for b in builds] == [Board.parse("5x4")] and notes == []


def test_plan_calibrate_from_cli(built, tmp_path):
    """``plan 5x5 --calibrate-from`` the 4x4 and 5x4 builds prices the plan with their fitted
    costs (named in its JSON and its note); the 5x4 build given for a 5x4 plan, or a build
    whose stats have no CPU figures, is one line and exit 2."""
    d44, d54 = built("4x4"), built("5x4")
    rc, out, err = run_cli("plan", "5x5", "--workers", "2", "--json",
                           "--calibrate-from", str(d44), "--calibrate-from", str(d54))
    assert rc == 0, err
    p = json.loads(out)
    assert p["costs"]["source"].startswith("fitted on 2 build(s): 4x4 (dat, 2 workers")
    assert p["core_seconds"] > 0 and p["wall_seconds"] > 0
    rc, out, err = run_cli("plan", "5x4", "--calibrate-from", str(d54))
    assert rc == 2 and err.count("\n") == 1 and "no build to fit" in err, err
    old = tmp_path / "old"
    old.mkdir()
    for name in ("manifest.json", "connect4_5x4.dat"):
        (old / name).symlink_to(d54 / name)
    st = counters.load_stats(open_storage(d54))
    stages = {s: {k: v for k, v in c.items() if k not in ("cpu_us", "sys_us", "wall_us")}
              for s, c in st["stages"].items()}
    counters.save_stats(open_storage(old), "5x4", st["workers"], st["executor"], stages,
                        {"task_memory": st["task_memory"]})
    rc, out, err = run_cli("plan", "5x5", "--calibrate-from", str(old))
    assert rc == 2 and err.count("\n") == 1 and "no CPU figures" in err, err


def test_describe_names_each_build(built):
    lines = fit.describe([MeasuredBuild.load(built("5x4"))])
    assert len(lines) == 1 and "5x4" in lines[0] and "ns per entry" in lines[0]


def test_fit_recovers_the_wall_the_tasks_do_not_fill():
    """Builds whose wall time is the schedule's with a known driver step (50 ms) and tasks that
    compute 80% of their wall give both back; the plan priced with them is that much longer
    than with tasks that never wait, and says where the time goes (``waits``)."""
    from dataclasses import replace
    from c4table.pipeline.planning.schedule import simulate
    per = {"forward": 40e-9, "backward": 60e-9, "merge": 12e-9}
    boards = ["5x4", "5x5", "6x4", "6x5"]
    builds = [synthetic(b, 2, per, 0.0, 0.0, 0.0) for b in boards]
    truth = replace(fit_costs(builds, FAST_MACHINE), step_s=0.05, busy=0.8)
    for b in builds:
        sim = simulate(list(b.entries), b.board.width, b.board.cells, b.workers, b.task_memory,
                       truth, b.board.entry_size)
        b.wall_s.update({s: sim.stages[s]["wall_s"] for s in STAGES})
    c = fit_costs(builds, FAST_MACHINE)
    assert c.step_s == pytest.approx(0.05, rel=0.02)
    assert c.busy == pytest.approx(0.8, rel=0.01) and c.measured["busy_share"] == pytest.approx(0.8, rel=0.01)
    p = make_plan("6x6", 2, 6 << 30, costs=c)
    s, never = p.schedule(), make_plan("6x6", 2, 6 << 30, costs=replace(c, busy=1.0)).schedule()
    assert s.cpu_s == pytest.approx(never.cpu_s)
    assert 1.2 < s.wall_s / never.wall_s < 1.26        # 1 / 0.8, less the driver's share
    assert s.parts()["waits"] > 0 == never.parts()["waits"]
    for sched in (s, never):   # the parts cut the wall, no more
        assert sum(sched.parts().values()) == pytest.approx(sched.wall_s, rel=1e-9)
        assert min(sched.parts().values()) >= 0
    # one or two builds: the driver's step alone, as before (two fit two parameters exactly)
    for few in (builds[-1:], builds[-2:]):
        c = fit_costs(few, FAST_MACHINE)
        assert c.busy == 1.0 and c.step_s > 0.05


def test_a_c4z_build_s_codec_is_taken_out_of_the_merge_and_priced_back():
    """Builds written as format 5 ``.c4z`` (their merge dearer by the codec's CPU, as their
    stats counted it, or for stats without a count the codec's figure of then) fit the same
    merge cost as ``.dat`` builds; a plan of a format-5 build costs the codec's CPU per entry
    more than the same plan as ``.dat``, a format-3 build less."""
    from dataclasses import replace
    from c4table.pipeline.planning.c4zsize import build_codec_cpu_s
    per = {"forward": 40e-9, "backward": 60e-9, "merge": 12e-9}
    boards = ["5x4", "5x5", "6x4", "6x5"]
    dat = fit_costs([synthetic(b, 2, per, 0.2, 0.0, 0.0) for b in boards], FAST_MACHINE)
    for counted in (None, 77e-9):
        v5 = []
        for b in (synthetic(b, 2, per, 0.2, 0.0, 0.0) for b in boards):
            b = replace(b, table_format="c4z", codec="rulekeys-frames-v5")
            if counted is None:
                b.cpu_s["merge"] += b.total * uncounted_codec_cpu_s(b.codec)
            else:
                b = replace(b, codec_s=b.total * counted)
                b.cpu_s["merge"] += b.codec_s
            v5.append(b)
        c = fit_costs(v5, FAST_MACHINE)
        assert c.merge_s == pytest.approx(dat.merge_s, rel=1e-6), counted
    cpu = {}
    for fmt, codec in (("dat", None), ("c4z", "varint-plysym-v3"), ("c4z", "rulekeys-frames-v5")):
        p = make_plan("6x5", 2, 2 << 30, costs=c)
        p.table_format, p.codec_name = fmt, codec
        cpu[codec] = p.schedule().cpu_s
    n = make_plan("6x5", 2, 2 << 30).entries
    for codec in ("varint-plysym-v3", "rulekeys-frames-v5"):
        assert cpu[codec] - cpu[None] == pytest.approx(n * build_codec_cpu_s(codec), rel=1e-6)


def test_a_c4z_build_s_codec_is_read_from_its_header_and_a_guess_is_said(tmp_path):
    """The fit prices a ``.c4z`` build's merge by the block codec its header names; a table
    file that is gone since is taken to be the build's default codec, and the plan's notes
    say so instead of guessing silently."""
    from c4table.c4z.format import BUILD_CODEC
    from c4table.pipeline.stages.build import build_table
    path = build_table("4x4", tmp_path / "b", workers=1, quiet=True, table_format="c4z",
                       c4z_codec="rulekeys-frames-v5")
    b = MeasuredBuild.load(tmp_path / "b")
    assert (b.codec, b.codec_note) == ("rulekeys-frames-v5", None)
    path.unlink()
    b = MeasuredBuild.load(tmp_path / "b")
    assert b.codec == BUILD_CODEC and path.name in b.codec_note
    builds, notes = usable([tmp_path / "b"], Board.parse("5x4"))
    assert builds[0].codec_note in notes
