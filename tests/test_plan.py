"""7x6 evidence from our own code (forward pass to a small ply against Böck's Table 2) and
build plans from published and measured per-ply counts."""
import json

import pytest

from c4table.game.board import Board
from conftest import bock_table2
from c4table.pipeline.stages.build import open_build
from c4table.pipeline.stages import forward
from c4table.pipeline.planning.plan import make_plan


def table2() -> dict[int, dict]:
    return bock_table2()


def test_7x6_forward_to_ply_10_matches_paper(tmp_path):
    b = open_build("7x6", tmp_path, workers=2, quiet=True, memory="64MiB")
    try:
        forward.run(b, max_ply=10)
    finally:
        b.close()
    plies = json.loads((tmp_path / "manifest.json").read_text())["plies"]
    ref = table2()
    assert len(plies) == 11
    for p in plies:
        assert p["positions"] == ref[p["ply"]]["total"], p["ply"]
        assert p["terminal"] == ref[p["ply"]]["terminal"], p["ply"]


def test_plan_7x6_from_published_counts():
    p = make_plan("7x6", workers=64, memory_per_worker=16 * 2**30)
    assert len(p.plies) == 43
    published_entries = 2_265_994_664_313   # Cadot's file: entries = positions up to mirroring
    assert abs(p.entries - published_entries) / published_entries < 1e-5
    assert p.final_bytes == p.entries * Board(7, 6).entry_size
    assert p.wall_seconds > 0 and p.peak_disk > p.final_bytes


@pytest.mark.slow
def test_plan_uses_measured_forward_run(built):
    d = built("5x4")
    p = make_plan("5x4", workers=2, memory_per_worker=2**30, from_dir=d)
    m = json.loads((d / "manifest.json").read_text())
    assert [x.positions for x in p.plies] == [x["positions"] for x in m["plies"]]
    assert all(x.source == "measured" for x in p.plies)


def test_io_plan_matches_a_real_c4z_build(tmp_path):
    """The I/O model (run format v3's bytes per value, the shards', the .c4z merge's) against
    the counters of a real 2-worker ``--format c4z`` build of 5x4: bytes written, bytes read
    and the peak stored, each within 30% (5x5 to 6x6 within 15%: tools/diag/plan_vs_measured.py,
    docs/measurements/2026-11-27-plan-refit.md). The .c4z merge's part files and container
    are counted (``c4z_counted``): parts written and read, the container written, the parts
    and container in the stored bytes."""
    from c4table.pipeline.stages.build import build_table
    from c4table.pipeline.planning.iomodel import STAGES, predict_io
    path = build_table("5x4", tmp_path, workers=2, table_format="c4z")
    st = json.loads((tmp_path / "stats.json").read_text())
    size = (tmp_path / "connect4_5x4.c4z").stat().st_size
    assert str(path).endswith(".c4z") and size > 0
    plan = make_plan("5x4", st["workers"], st["task_memory"])
    plan.table_format = "c4z"
    io = predict_io(plan, st["workers"], st["task_memory"], remote=False,
                    max_reads=st["shuffle_max_reads"])
    meas = st["stages"]
    assert st["c4z_counted"] and meas["merge"]["peak_stored_bytes"] >= size
    written = sum(meas[s]["bytes_written"] for s in STAGES)
    read = sum(meas[s]["bytes_read"] for s in STAGES)
    peak = max(meas[s]["peak_stored_bytes"] for s in STAGES)
    planned = {"written": sum(io.stages[s]["bytes_written"] for s in STAGES),
               "read": sum(io.stages[s]["bytes_read"] for s in STAGES),
               "peak": max(io.stages[s]["peak_stored_bytes"] for s in STAGES)}
    for name, m in (("written", written), ("read", read), ("peak", peak)):
        assert 0.7 <= planned[name] / m <= 1.3, (name, planned[name], m)


# What the 2-worker .c4z builds of 6x5 and 6x6 measured on the 2-core development machine,
# each in one run, whose counters (DIR/stats.json, ``c4z_counted``) hold the .c4z's parts and
# container, and the ledger's peak: 6x5 in format 3 (docs/measurements/2026-11-30-key-walk.md),
# 6x6 in format 5 (docs/measurements/2026-11-29-6x6-format-5.md).
MEASURED_BUILDS = {
    "6x5": {"memory": 2 * 2**30, "peak": 528_807_140,
            "forward": (575_366_127, 384_124_084), "backward": (426_651_195, 1_283_935_691),
            "merge": (781_178_956, 899_985_120)},
    "6x6": {"memory": 6 * 2**30, "codec": "rulekeys-frames-v5", "peak": 9_786_923_786,
            "forward": (14_458_425_786, 10_433_728_844), "backward": (9_444_404_719, 29_635_785_201),
            "merge": (11_783_647_138, 15_894_109_840)},
}


@pytest.mark.parametrize("board", sorted(MEASURED_BUILDS))
def test_io_plan_within_25_percent_of_big_c4z_builds(board):
    """The I/O model, fed the board's per-ply entries, against what its real build measured:
    bytes written and read per stage, and the peak disk."""
    from c4table.pipeline.planning.iomodel import STAGES, predict_io
    m = MEASURED_BUILDS[board]
    plan = make_plan(board, 2, m["memory"])
    plan.table_format, plan.codec_name = "c4z", m.get("codec")
    io = predict_io(plan, 2, m["memory"], remote=False, max_reads=1 << 62)
    for stage in STAGES:
        written, read = m[stage]
        assert 0.75 <= io.stages[stage]["bytes_written"] / written <= 1.25, (stage, "written")
        assert 0.75 <= io.stages[stage]["bytes_read"] / read <= 1.25, (stage, "read")
    peak = max(io.stages[s]["peak_stored_bytes"] for s in STAGES)
    assert 0.75 <= peak / m["peak"] <= 1.25, ("peak", peak, m["peak"])
