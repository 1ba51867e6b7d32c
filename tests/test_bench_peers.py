"""The peers' cross-check without the peers (c4table.analysis.peers, which
tools/compare/bench_peers.py uses): its parsers and per-ply cross-checks on the peers' real 4x4 output (tests/data/peers_4x4/, each file with its source in its first line)
against our 4x4 table, and on fake peer output written from our 5x4 table, with a count moved
to see a disagreement caught. No peer checkout, no network."""
from __future__ import annotations

import subprocess

import pytest

from conftest import TEST_DATA, tool, tool_env

import c4table.analysis.peers as bp

PEERS = TEST_DATA / "peers_4x4"


def peer_output(name: str) -> str:
    """A captured output file without its provenance line."""
    return "".join(ln for ln in (PEERS / name).read_text().splitlines(True) if not ln.startswith("#"))


@pytest.fixture(scope="module")
def ours44(built):
    return bp.our_counts(built("4x4") / "connect4_4x4.dat")


def test_bock_4x4_output_agrees_with_our_table_ply_by_ply(ours44):
    ours, _ = ours44
    theirs = bp.bock_to_a_view(bp.parse_bock_csv(peer_output("bock_results_solve_w4_h4.csv")))
    assert sorted(theirs) == list(range(17))
    assert bp.compare_exact(ours, theirs, "Böck") == []
    assert sum(w.total for w in theirs.values()) == 161_029   # Böck's Table 1, 4x4
    # his side-to-move view: at odd plies (B to move) his win is A's loss
    raw = bp.parse_bock_csv(peer_output("bock_results_solve_w4_h4.csv"))
    assert raw[15] == bp.Wdl(2298, 10692, 5086) and ours[15] == bp.Wdl(5086, 10692, 2298)
    assert raw[16] == ours[16] == bp.Wdl(0, 5336, 1908)


def test_jh85_4x4_output_agrees_with_our_table(ours44):
    ours, finished = ours44
    tally = bp.parse_jh85_reachtally(peer_output("jh85_reachtally_4x4.txt"))
    assert bp.compare_exact(ours, tally, "jh85") == []
    pseudo = bp.parse_jh85_solve(peer_output("jh85_solve_4x4.txt"))
    assert sorted(pseudo) == list(range(16)) and pseudo[4] == bp.PseudoPly(210, bp.Wdl(0, 193, 17))
    bad, surplus = bp.check_pseudo(ours, finished, 16, pseudo)
    assert bad == []
    # his space: 141,963 stackings without a line below a full board; the table's unfinished
    # positions there: 161,029 less 26,740 finished games, all of them in his space
    assert sum(finished.values()) == 26_740
    assert surplus == sum(p.n for p in pseudo.values()) - (161_029 - 26_740) == 7_674


def bock_csv_of(ours: dict[int, bp.Wdl], w: int, h: int) -> str:
    """Our counts written as Böck's solve.out writes its CSV (side to move's view)."""
    lines = ["width,height,ply,win_count,draw_count,loss_count,term_count,total_count,"
             "win_nodecount,draw_nodecount,loss_nodecount,total_nodecount,time"]
    for p in sorted(ours, reverse=True):
        a = ours[p]
        s = a if p % 2 == 0 else bp.Wdl(a.lost, a.drawn, a.won)
        lines.append(f"{w}, {h}, {p}, {s.won}, {s.drawn}, {s.lost}, 0, {s.total}, 1, 1, 1, 1, 0.001")
    return "\n".join(lines) + "\n"


def reachtally_of(ours: dict[int, bp.Wdl]) -> str:
    rows = ["ply |            won |          drawn |           lost |          total | terminal"]
    rows += [f"{p:3d} | {w.won:>14,} | {w.drawn:>14,} | {w.lost:>14,} | {w.total:>14,} | 0"
             for p, w in sorted(ours.items()) if w.total]
    return "\n".join(rows) + "\nSUM | 1 | 1 | 1 | 3 |\n"


def test_fake_peer_outputs_of_5x4_agree_and_a_moved_count_is_caught(t54):
    ours, _ = bp.our_counts(t54)
    assert sum(w.total for w in ours.values()) == 3_945_711   # Böck's Table 1, 5x4
    bock = bp.bock_to_a_view(bp.parse_bock_csv(bock_csv_of(ours, 5, 4)))
    jh85 = bp.parse_jh85_reachtally(reachtally_of(ours))
    assert bp.compare_exact(ours, bock, "Böck") == bp.compare_exact(ours, jh85, "jh85") == []
    a = ours[9]
    moved = dict(ours)
    moved[9] = bp.Wdl(a.won - 1, a.drawn, a.lost + 1)
    bad = bp.compare_exact(ours, bp.parse_jh85_reachtally(reachtally_of(moved)), "jh85")
    assert len(bad) == 1 and bad[0].startswith("ply 9: ")
    # the same move in Böck's view at an odd ply lands on the other side of his columns
    bad = bp.compare_exact(ours, bp.bock_to_a_view(bp.parse_bock_csv(bock_csv_of(moved, 5, 4))), "Böck")
    assert len(bad) == 1 and bad[0].startswith("ply 9: ")


def test_pseudo_check_catches_a_class_above_his_space(ours44):
    ours, finished = ours44
    pseudo = bp.parse_jh85_solve(peer_output("jh85_solve_4x4.txt"))
    p7 = pseudo[7]
    pseudo[7] = bp.PseudoPly(p7.n, bp.Wdl(p7.stm.won, 10, p7.stm.lost))
    bad, _ = bp.check_pseudo(ours, finished, 16, pseudo)
    assert len(bad) == 1 and bad[0].startswith("ply 7: ") and "drawn" in bad[0]


def test_malformed_peer_output_is_refused():
    with pytest.raises(ValueError, match="total"):
        bp.parse_bock_csv("ply,win_count,draw_count,loss_count,total_count\n3, 1, 1, 1, 4\n")
    with pytest.raises(ValueError, match="Böck"):
        bp.parse_bock_csv("a,b,c\n1,2,3\n")
    with pytest.raises(ValueError, match="reachtally"):
        bp.parse_jh85_reachtally("[zdd] loaded: 1 nodes\n")
    with pytest.raises(ValueError, match="W\\+D\\+L"):
        bp.parse_jh85_solve("[ply  3] n=10   W/D/L(stm) = 1 / 2 / 3   0.0s\n")


def test_report_and_command_line(tmp_path):
    """The tool run without peers: c4table alone on 4x4, its markdown table, and bad input."""
    def run(*args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(tool("compare.bench_peers", *args), env=tool_env(), capture_output=True,
                              text=True, **kw)
    p = run("--help")
    assert p.returncode == 0 and "--bock-src" in p.stdout and "--markdown" in p.stdout
    p = run("--boards", "5by5")
    assert p.returncode == 2 and p.stderr.strip() == "c4table: error: bad board '5by5' (want WxH)"
    p = run("--jh85-src", "/nonexistent/peer")
    assert p.returncode == 2 and "no such checkout" in p.stderr
    p = run("--boards", "4x4", "--markdown", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    md = [ln for ln in p.stdout.splitlines() if ln.startswith("|")]
    assert md[0].startswith("| board | solver |") and md[1].startswith("| --- | --- | ---: |")
    assert md[2].startswith("| 4x4 | c4table |") and md[2].endswith("| (the reference) |")
