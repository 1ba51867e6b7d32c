"""``DIR/stats.json`` over interrupted runs: a build killed (SIGKILL of its process group) in
the middle of a stage and resumed reports, per stage, the counts of both runs summed
(``runs`` 2), exactly what the killed run had saved plus what the resuming run counted; the
stages the killed run never reached count the same as in a build that was never stopped; a
rerun of a finished build leaves the file as it was, and ``--restart`` starts it over."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from c4table.io.counting import IOCounts
from c4table.pipeline.runtime.counters import STATS, STATS_FORMAT, add_run, load_stats
from c4table.io.storage import open_storage
from test_faults import ROOT

SMALL = "4MiB"   # many shards and tasks per generation on 5x4

KILL_AFTER_SAVES = """
import os, runpy, signal, sys
from c4table.pipeline.stages.ledger import RunLedger
n, seen, real = int(sys.argv[1]), [0], RunLedger.save
def save_then_kill(self):
    real(self)
    seen[0] += 1
    if seen[0] == n:
        os.killpg(0, signal.SIGKILL)
RunLedger.save = save_then_kill
sys.argv = ["c4table", *sys.argv[2:]]
runpy.run_module("c4table.cli.main", run_name="__main__")
"""

# counts that do not depend on which process ran which task (tests/test_shuffle.py)
SCHEDULED = ("bytes_written", "objects_written", "tasks", "slice_reads", "ranged_reads",
             "delete_requests", "bytes_deleted")


def killed_after_saves(out: Path, n: int) -> None:
    """Build 5x4 into ``out`` (2 workers, small tasks) and SIGKILL the whole process group
    right after the ``n``-th save of its counts."""
    cmd = [sys.executable, "-c", KILL_AFTER_SAVES, str(n), "build", "5x4", "--out", str(out),
           "-q", "--workers", "2", "--memory", SMALL]
    p = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd=ROOT)
    _, err = p.communicate(timeout=600)
    assert p.returncode == -signal.SIGKILL, f"not killed: {err.decode()}"


def test_a_build_killed_mid_stage_and_resumed_reports_both_runs(tmp_path):
    from c4table.pipeline.stages.build import build_table, open_build, run_build
    ref = tmp_path / "ref"
    build_table("5x4", ref, memory=SMALL, workers=2)
    whole = json.loads((ref / STATS).read_text())["stages"]

    out = tmp_path / "b"
    killed_after_saves(out, 8)   # the 8th generation of the forward pass
    killed = load_stats(open_storage(out))["stages"]
    assert set(killed) == {"forward"} and killed["forward"]["runs"] == 1
    assert 0 < killed["forward"]["tasks"] < whole["forward"]["tasks"]

    b = open_build("5x4", out, memory=SMALL, workers=2, quiet=True)
    run_build(b)
    mine = b.ledger.executor_counts   # the resuming run's own counts
    st = json.loads((out / STATS).read_text())
    assert st["format"] == STATS_FORMAT
    total = st["stages"]
    assert {s: v["runs"] for s, v in total.items()} == {"forward": 2, "backward": 1, "merge": 1}
    # nothing counted twice, nothing lost: the killed run's saved counts plus this run's
    assert total["forward"] == add_run(killed["forward"], mine["forward"])
    f, w = IOCounts.from_json(total["forward"]), IOCounts.from_json(whole["forward"])
    # the killed run's unrecorded work is done again: more than a build never stopped, by at
    # most what the killed run did
    assert w.bytes_written <= f.bytes_written <= w.bytes_written + killed["forward"]["bytes_written"]
    assert f.tasks > w.tasks
    # the stages the killed run never reached: the same work as the build never stopped,
    # and the same peak stored (the resumed ledger starts from what the directory held)
    for stage in ("backward", "merge"):
        assert {k: total[stage][k] for k in SCHEDULED} == {k: whole[stage][k] for k in SCHEDULED}, stage
        assert abs(total[stage]["peak_stored_bytes"] - whole[stage]["peak_stored_bytes"]) \
            <= 0.02 * whole[stage]["peak_stored_bytes"], stage

    # a rerun of the finished build has nothing to do and adds no run
    before = (out / STATS).read_bytes()
    b = open_build("5x4", out, memory=SMALL, workers=2, quiet=True)
    run_build(b)
    assert (out / STATS).read_bytes() == before

    # --restart starts the counts over too: one run of each stage, as the build never stopped
    build_table("5x4", out, memory=SMALL, workers=2, restart=True)
    again = json.loads((out / STATS).read_text())["stages"]
    for stage, v in again.items():
        assert v["runs"] == 1 and {k: v[k] for k in SCHEDULED} == \
            {k: whole[stage][k] for k in SCHEDULED}, stage


def test_stats_of_the_first_format_read_as_one_run_each(tmp_path):
    """A ``stats.json`` of format 1 (the last run's counts) is read as one run per stage that
    did not count a ``.c4z`` merge's files; a resumed build sums onto it."""
    from c4table.builddir.manifest import checksum
    stage = {**IOCounts(bytes_written=10, tasks=1).to_json(), "peak_stored_bytes": 10}
    data = {"format": "c4table-stats/1", "board": "5x4", "workers": 1, "executor": "x",
            "stages": {"forward": stage}}
    data["xxh64"] = checksum(data)
    (tmp_path / STATS).write_text(json.dumps(data))
    st = load_stats(open_storage(tmp_path))
    assert st["stages"]["forward"]["runs"] == 1 and st["c4z_counted"] is False
    assert add_run(st["stages"]["forward"], stage)["bytes_written"] == 20
