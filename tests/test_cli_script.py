"""The command line as a script sees it: exit statuses, error lines and output, through the
real console entry point (``.venv/bin/c4table``, the ``c4table`` script pip installed), not
only click's test runner. Each test names the item of issue 12 it covers."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "c4table"


def c4(*args, stdin: str | bytes | None = None, cwd=None, env=None, timeout=300):
    """Run the installed ``c4table`` script: (exit status, stdout, stderr)."""
    assert SCRIPT.is_file(), f"no console script at {SCRIPT}: pip install -e . first"
    binary = isinstance(stdin, bytes)
    full_env = {k: v for k, v in os.environ.items() if k != "C4TABLE_TABLE"}
    full_env.update(env or {})
    p = subprocess.run([str(SCRIPT), *map(str, args)], input=stdin, capture_output=True,
                       text=not binary, timeout=timeout, cwd=cwd, env=full_env)
    out, err = (p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")) \
        if binary else (p.stdout, p.stderr)
    return p.returncode, out, err


def one_error_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("c4table: error: ") and len(err) < 300 \
        and "Traceback" not in err


@pytest.fixture(scope="module")
def d54(built):
    return built("5x4")


@pytest.fixture(scope="module")
def t54(d54):
    return d54 / "connect4_5x4.dat"


# ----------------------------------------------------------- 1, 10: exit codes and errors
def _copy_manifest(d54: Path, tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(d54 / "manifest.json", tmp / "manifest.json")
    return tmp


def test_crosscheck_mismatch_exits_1_through_the_script(d54, tmp_path):
    """Item 1: two altered values (checksum recomputed, so only the figures are wrong)."""
    from c4table.pipeline.manifest import checksum
    d = _copy_manifest(d54, tmp_path / "m")
    man = json.loads((d / "manifest.json").read_text())
    man["plies"][5]["positions"] += 1
    man["plies"][7]["a_wins"] += 2
    man.pop("xxh64")
    man["xxh64"] = checksum(man)
    (d / "manifest.json").write_text(json.dumps(man))
    rc, out, err = c4("crosscheck", d, "-q")
    assert rc == 1, (out, err)
    assert "MISMATCH, 2 of" in out and "ply 5: positions" in out


def test_crosscheck_of_a_manifest_failing_its_checksum_says_so(d54, tmp_path):
    """Item 1: values edited by hand, checksum left as it was."""
    d = _copy_manifest(d54, tmp_path / "m")
    man = json.loads((d / "manifest.json").read_text())
    man["plies"][5]["positions"] += 1
    (d / "manifest.json").write_text(json.dumps(man))
    rc, out, err = c4("crosscheck", d, "-q")
    assert rc == 1 and one_error_line(err), err
    assert "checksum" in err and out == ""


def test_crosscheck_without_manifest_and_bdd_bad_board_fail(tmp_path):
    """Items 1 and 10: no manifest, an impossible board: exit 2, the common error prefix."""
    rc, out, err = c4("crosscheck", tmp_path)
    assert rc == 2 and one_error_line(err), err
    rc, out, err = c4("bdd", "count", "9x9")
    assert rc == 2 and one_error_line(err), err


def test_crosscheck_of_a_table_file_is_one_clear_line(t54):
    """Item 10: a binary table file instead of a manifest."""
    rc, out, err = c4("crosscheck", t54, "-q")
    assert rc == 2 and one_error_line(err), err
    assert "not a manifest" in err and "codec" not in err


def test_crosscheck_of_a_partial_build_stops_at_its_last_ply(tmp_path):
    """Item 2: forward --max-ply 6 only: compare plies 0-6, say so, and succeed."""
    rc, out, err = c4("forward", "5x4", "--out", tmp_path / "p", "--max-ply", "6", "-q",
                      "--workers", "1")
    assert rc == 0, err
    rc, out, err = c4("crosscheck", tmp_path / "p")      # progress lines on stderr
    assert rc == 0, (out, err)
    assert "partial build" in out and "up to ply 6" in out
    assert "OK, 7 plies" in out
    assert "ply   7" not in err and "ply   6" in err      # the BDD stopped at ply 6


def test_bare_command_prints_help_and_exits_0():
    """Item 17."""
    rc, out, err = c4()
    assert rc == 0 and "Usage: c4table" in out and "lookup" in out and err == ""


# ----------------------------------------------------------------------- 3: plan figures
def _oracle_plies(w: int, h: int, plies: int, k: int = 4) -> list[tuple[int, int]]:
    """(positions, entries) of plies 0..plies-1 by the independent oracle's rules."""
    import oracle
    layer = {tuple(() for _ in range(w))}
    out = []
    for ply in range(plies):
        out.append((len(layer), len({min(p, oracle.mirror(p)) for p in layer})))
        nxt = set()
        for p in layer:
            if oracle.terminal_outcome(p, h, k) is not None:
                continue
            for c in range(w):
                if len(p[c]) < h:
                    nxt.add(oracle.play(p, c, 1 + ply % 2))
        layer = nxt
    return out


@pytest.mark.parametrize("board", ["5x4", "6x5", "7x6"])
def test_plan_small_plies_are_exact(board):
    """Item 3: no zero counts for plies 0-3; the first plies are exact (positions and
    entries), checked against the oracle's rules."""
    w, h = map(int, board.split("x"))
    rc, out, err = c4("plan", board, "--json")
    assert rc == 0, err
    plies = json.loads(out)["plies"]
    want = _oracle_plies(w, h, 7)
    assert [(p["positions"], p["entries"]) for p in plies[:7]] == want
    assert all(p["positions"] > 0 for p in plies)


def test_plan_from_shows_measured_entries(tmp_path):
    """Item 3: --from takes the entries the forward pass counted, not positions / 2."""
    rc, _, err = c4("forward", "5x4", "--out", tmp_path / "f", "--max-ply", "9", "-q",
                    "--workers", "1")
    assert rc == 0, err
    man = json.loads((tmp_path / "f" / "manifest.json").read_text())
    rc, out, err = c4("plan", "5x4", "--from", tmp_path / "f", "--json")
    assert rc == 0, err
    plies = json.loads(out)["plies"]
    for rec in man["plies"]:
        got = plies[rec["ply"]]
        assert (got["positions"], got["entries"], got["source"]) == \
            (rec["positions"], rec["entries"], "measured")
    assert any(rec["entries"] != (rec["positions"] + 1) // 2 for rec in man["plies"])


# ------------------------------------------------------------------------- 6: the ETA
def test_a_small_build_shows_no_eta(tmp_path):
    """Item 6 (and issue 11 item 8): a 4x4 build took seconds and printed ETAs of hours."""
    rc, out, err = c4("build", "4x4", "--out", tmp_path / "b", "--workers", "1")
    assert rc == 0 and "[forward] ply 0/16" in err
    assert "ETA" not in err


def test_eta_appears_once_it_means_something(monkeypatch):
    import io
    from c4table.pipeline import progress
    clock = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    p = progress.Progress("forward", total=1000, stream=out)
    clock[0] += 0.5
    p.step("ply 0", 1)                 # 0.1 % done: no ETA
    clock[0] += 19.5
    p.step("ply 1", 499)               # half done after 20 s: 20 s to go
    lines = out.getvalue().splitlines()
    assert "ETA" not in lines[0]
    assert lines[1].endswith("ETA 20.0s")
