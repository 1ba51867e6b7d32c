"""Calibration (pipeline/planning/calibrate.py): the process-tree CPU it reads from /proc, a real
short calibration run, its cache per machine and version, and the plan command using it."""
import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from c4table.cli.main import cli
from c4table.pipeline.planning import calibrate as cal
from c4table.pipeline.planning.schedule import FAST_MACHINE, MachineCosts

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("C4TABLE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_tree_cpu_counts_a_busy_child():
    # the child spins 0.6 s of CPU, then sleeps: its own getrusage is the evidence
    code = ("import time, resource\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
            "r = resource.getrusage(resource.RUSAGE_SELF)\nprint(r.ru_utime + r.ru_stime, flush=True)\n"
            "time.sleep(30)\n")
    before = cal.tree_cpu() - cal.own_cpu()
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        spent = float(child.stdout.readline())
        time.sleep(0.05)
        seen = cal.tree_cpu() - cal.own_cpu() - before
        assert spent >= 0.6
        assert spent - 0.05 <= seen <= spent + 0.1   # clock ticks of 10 ms
    finally:
        child.kill()
        child.wait()


def test_sort_fit_is_a_line_through_the_measurements():
    (a, b), per = cal.sort_fit(sizes=(1 << 12, 1 << 14, 1 << 16))
    assert set(per) == {1 << 12, 1 << 14, 1 << 16} and all(v > 0 for v in per.values())
    for n, v in per.items():   # three points, two parameters: close, not exact
        assert abs(a + b * (n.bit_length() - 1) - v) <= max(per.values())


def test_calibrate_small_boards_and_cache(tmp_path, cache, monkeypatch):
    from c4table.table.known import known_tables
    monkeypatch.setattr(cal, "SORT_SIZES", (1 << 12, 1 << 16))
    monkeypatch.setattr(cal, "HASH_BYTES", 1 << 22)
    monkeypatch.setattr(cal, "DISK_BYTES", 1 << 22)
    c = cal.calibrate(board="5x4", step_board="4x4", workers=2, memory="64MiB", where=tmp_path)
    assert c.measured["entries"] == known_tables()["5x4"]["entries"]
    assert c.measured["tasks"]["merge"] >= 1 and c.cores >= 1
    assert c.forward_s > 0 and c.backward_s > 0 and c.merge_s > 0
    assert all(x > 0 for x in c.hash_ns_per_byte) and c.disk_bytes_per_s > 0
    assert c.step_s >= 0.002 and c.startup_s > 0
    assert cal.cpu_model().split(",")[0] in c.machine and not cal.stale(c)
    assert list(tmp_path.glob("c4table_calibrate_*")) == []   # the temporary builds are gone
    assert cal.cached() is None
    where = cal.save(c)
    assert where.parent == cache and cal.version() in where.name
    assert cal.cached() == c


def test_plan_uses_the_cached_calibration(cache):
    mine = MachineCosts(machine="a test machine", source="by hand", forward_s=1e-6,
                        backward_s=1e-6, merge_s=1e-7, version=f"0 code {cal.code_digest()}")
    cal.save(mine)
    r = CliRunner().invoke(cli, ["plan", "5x4", "--workers", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["costs"]["machine"] == "a test machine"
    # 1.97 M entries at 2.1 us of CPU each, and the fixed costs per task
    cpu = d["schedule"]["cpu_s"]
    assert 2.1e-6 * d["entries"] - 0.01 <= cpu <= 2.1e-6 * d["entries"] + 10
    assert d["core_seconds"] == round(cpu)
    assert d["schedule"]["bound"] in ("cores", "waves", "driver", "disk")
    fast = json.loads(CliRunner().invoke(cli, ["plan", "5x4", "--workers", "2", "--json",
                                               "--fast-costs"]).output)
    assert fast["costs"]["machine"] == FAST_MACHINE.machine
    text = CliRunner().invoke(cli, ["plan", "5x4", "--workers", "2"]).output
    assert "costs of a test machine (by hand)" in text and "the wall time is mostly" in text


def test_plan_without_calibration_names_the_fast_machine(cache):
    text = CliRunner().invoke(cli, ["plan", "5x4", "--workers", "2"]).output
    assert f"costs of {FAST_MACHINE.machine}" in text
