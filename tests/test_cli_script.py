"""The command line as a script sees it: exit statuses, error lines and output, through the
real console entry point (``.venv/bin/c4table``, the ``c4table`` script pip installed), not
only click's test runner. Each test names the item of issue 12 it covers."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)

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


# ----------------------------------------------------------- 1, 10: exit codes and errors
def _copy_manifest(d54: Path, tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(d54 / "manifest.json", tmp / "manifest.json")
    return tmp


def test_crosscheck_mismatch_exits_1_through_the_script(d54, tmp_path):
    """Item 1: two altered values (checksum recomputed, so only the figures are wrong)."""
    from c4table.builddir.manifest import checksum
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
    from c4table.testing import oracle
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
    from c4table import progress
    clock = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    out = io.StringIO()
    p = progress.Progress("forward", total=1000, stream=out)
    clock[0] += 0.5
    p.step("ply 0", 1)                 # 0.1 % done: no ETA
    clock[0] += 19.5
    p.step("ply 1", 499)               # half done, 499 in the 19.5 s since the first step:
    lines = out.getvalue().splitlines()   # 500 to go take 19.5 s
    assert "ETA" not in lines[0]
    assert lines[1].endswith("ETA 19.5s")


# ------------------------------------------------------------------ 9: one way of saying it
def test_wording_of_outcomes_and_counts_is_shared(t54):
    """Item 9: "1 ply" (never "1 plies"), move lines with units, "1 worker", "1 row"."""
    rc, out, err = c4("lookup", "--table", t54, "1212121"[:-1] + "3")   # a few plies to go
    assert rc == 0, err
    with_units = [x for x in out.splitlines() if x.startswith("  column")]
    assert with_units and all(x.split(":")[1].strip().endswith(("ply", "plies", "ply  *best",
                                                                  "plies  *best"))
                              for x in with_units), out
    rc, out, err = c4("lookup", "--table", t54, "1212123")
    assert rc == 0 and "B wins in 1 ply  *best" in out and not re.search(r"\b1 plies", out)
    rc, out, err = c4("lookup", "--table", t54, "121212")      # A wins in 1
    assert rc == 0 and "A wins in 1 ply\n" in out and not re.search(r"\b1 plies", out)
    rc, out, err = c4("plan", "5x4")
    assert rc == 0 and "1 worker " in out and "1 workers" not in out
    rc, out, err = c4("plan", "5x4", "--workers", "3")
    assert rc == 0 and "3 workers" in out


def test_export_says_1_row(t54, tmp_path):
    rc, out, err = c4("export", "--table", t54, "--ply", "0", "--out", tmp_path / "p.parquet",
                      "-q")
    assert rc == 0 and ": 1 row (1 table entry, " in out, (out, err)


def test_play_never_says_wins_in_0_plies_and_marks_the_four(t54):
    """Items 9 and 17: the computer's winning move says "A has won"; the final board marks
    the last move's column and brackets the winning line."""
    rc, out, err = c4("play", "--table", t54, "--side", "B", "--start", "3344",
                      stdin="1\n1\n1\n")
    assert rc == 0, err
    assert "in 0 plies" not in out and "A (computer) plays 5: A has won" in out
    final = out[out.rindex("A has won"):].splitlines()[1:7]
    assert final[3] == " B[A A A A]"          # the four of the bottom row, bracketed
    assert final[5] == "         ^"           # under column 5, the last move
    before = out.split("A (computer) plays 2")[1].splitlines()[1:7]
    assert before[5] == "   ^" and "[" not in "".join(before)


# -------------------------------------------------------------- 7: two names for two counts
def test_finished_games_and_won_games_have_different_names(d54):
    """Item 7: stats' column counts every finished game (full-board draws too), BDD mode's
    only the won ones; the same ply 20 of 5x4 gives 63,768 and 26,434."""
    rc, out, err = c4("stats", d54)
    assert rc == 0, err
    head, *rows = [x.split("\t") for x in out.splitlines()]
    assert "finished" in head and "terminal" not in head
    assert rows[20][head.index("finished")] == "63768"
    rc, out, err = c4("bdd", "count", "5x4", "--json", "-q")
    assert rc == 0, err
    last = json.loads(out)["plies"][20]
    assert "terminal" not in last and last["won_games"] == 26434
    rc, out, err = c4("bdd", "count", "4x4", "-q")
    assert "won_games" in out.splitlines()[0] and "terminal" not in out


# --------------------------------------------------------------- 8, 11-14: lookup and best
@pytest.mark.parametrize("text,why", [("33\n", "one line of digits"), (".....\n", "1 row"),
                                      ("", "empty drawing"), ("\n\n", "empty drawing")])
def test_drawing_from_stdin_is_never_taken_for_moves(t54, text, why):
    """Item 8: one-line input, a one-row drawing and empty input are errors."""
    for cmd in ("lookup", "best"):
        rc, out, err = c4(cmd, "--table", t54, "--drawing", "-", stdin=text)
        assert rc == 2 and one_error_line(err) and why in err and out == "", (cmd, text, err)


def test_command_line_positions_behave_like_stdin(t54):
    """Item 11: one bad position does not stop the rest; in JSON the error is an object;
    exit 2 at the end, with one error line."""
    rc, out, err = c4("lookup", "--json", "--table", t54, "3344", "6", "12")
    assert rc == 2 and one_error_line(err), err
    answers = [json.loads(x) for x in out.splitlines()]
    assert [a["position"] for a in answers] == ["3344", "6", "12"]
    assert "error" in answers[1] and "outcome" in answers[0] and "outcome" in answers[2]
    rc2, out2, err2 = c4("lookup", "--json", "--table", t54, "-", stdin="3344\n6\n12\n")
    assert (rc2, out2, err2) == (rc, out, err)
    rc, out, err = c4("best", "--table", t54, "66", "3344")
    assert rc == 2 and out.splitlines()[0].startswith("66: error: bad move '6' (character 1")
    assert out.splitlines()[1].startswith("3344  board 5x4")


def test_quoted_bad_input_is_cut_and_escaped(t54):
    """Item 12: a 1,000,000-character line and binary input."""
    rc, out, err = c4("lookup", "--json", "--table", t54, "-", stdin="9" * 1_000_000 + "\n")
    assert rc == 2 and len(out) < 500 and one_error_line(err)
    assert "1,000,000 characters" in json.loads(out)["error"]
    rc, out, err = c4("lookup", "--table", t54, "-", stdin=b"\x1b[2J\x93\x00\n33\n")
    assert rc == 2 and "\x1b" not in out and "\x00" not in out and "\\x1b" in out
    assert out.splitlines()[1].startswith("33  board 5x4")      # the rest still answers
    rc, out, err = c4("lookup", "--table", t54, "1" * 5000)
    assert rc == 2 and len(out) < 400


def test_empty_stdin_is_no_output_and_success(t54):
    """Item 13."""
    for cmd in ("lookup", "best"):
        assert c4(cmd, "--table", t54, "-", stdin="") == (0, "", "")
        assert c4(cmd, "--json", "--table", t54, "-", stdin="") == (0, "", "")


def test_answers_name_the_board(t54):
    """Item 14: text and JSON of lookup and best carry the board."""
    for cmd in ("lookup", "best"):
        rc, out, err = c4(cmd, "--table", t54, "3344")
        assert rc == 0 and out.startswith("3344  board 5x4, ply 4"), out
        rc, out, err = c4(cmd, "--json", "--table", t54, "3344")
        assert rc == 0 and json.loads(out)["board"] == "5x4"


def test_table_defaults_to_env_or_the_one_table_under_tables(t54, tmp_path):
    """Item 14: --table from $C4TABLE_TABLE, else the single table under tables/."""
    rc, out, err = c4("lookup", "3344", env={"C4TABLE_TABLE": str(t54)}, cwd=tmp_path)
    assert rc == 0 and out.startswith("3344  board 5x4"), err
    rc, out, err = c4("best", "3344", cwd=tmp_path)
    assert rc == 2 and one_error_line(err) and "C4TABLE_TABLE" in err
    (tmp_path / "tables" / "5x4").mkdir(parents=True)
    (tmp_path / "tables" / "5x4" / "connect4_5x4.dat").symlink_to(t54)
    rc, out, err = c4("best", "3344", cwd=tmp_path)
    assert rc == 0 and out.startswith("3344  board 5x4"), err
    (tmp_path / "tables" / "4x4").mkdir()
    (tmp_path / "tables" / "4x4" / "connect4_4x4.dat").write_bytes(b"")
    rc, out, err = c4("lookup", "3344", cwd=tmp_path)
    assert rc == 2 and "2 tables under tables/" in err


# ------------------------------------------------------------------ 15: verify and export
def test_verify_lists_each_problem_once_and_takes_a_directory(d54, tmp_path):
    rc, out, err = c4("verify", d54, "-q")
    assert rc == 0 and out.splitlines()[-1].startswith("OK connect4_5x4.dat"), err
    bad = tmp_path / "connect4_5x4.dat"
    data = bytearray((d54 / "connect4_5x4.dat").read_bytes())
    data[1000] ^= 1
    bad.write_bytes(bytes(data))
    rc, out, err = c4("verify", bad, "-q")
    assert rc == 1 and one_error_line(err)
    known = [x for x in out.splitlines() if "known table 5x4" in x]
    assert len(known) == 1, out
    assert out.splitlines()[-1].startswith("MISMATCH connect4_5x4.dat: ")
    rc, out, err = c4("verify", tmp_path / "nothing-here")
    assert rc == 2 and one_error_line(err)


def test_export_refuses_a_csv_name_and_a_missing_directory(t54, tmp_path):
    rc, out, err = c4("export", "--table", t54, "--ply", "3", "--out", tmp_path / "x.csv")
    assert rc == 2 and one_error_line(err) and "parquet" in err
    assert not (tmp_path / "x.csv").exists()
    rc, out, err = c4("export", "--table", t54, "--ply", "3", "--out",
                      tmp_path / "nonexistent" / "dir" / "p.parquet")
    assert rc == 2 and one_error_line(err) and "does not exist" in err
    assert not (tmp_path / "nonexistent").exists()


# ------------------------------------------------------------------- 16: building from Python
def test_build_table_signature_quiet_by_default_and_no_lock_left(tmp_path, capfd):
    import inspect
    import c4table
    params = inspect.signature(c4table.build_table).parameters
    assert list(params)[:2] == ["board", "out"] and params["quiet"].default is True
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values())
    path = c4table.build_table("3x3", tmp_path / "b", workers=1)
    assert path.name == "connect4_3x3.dat"
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
    assert not (tmp_path / "b" / ".lock").exists()
    rc, out, err = c4("build", "3x3", "--out", tmp_path / "c", "--workers", "1", "-q")
    assert rc == 0 and not (tmp_path / "c" / ".lock").exists()


def test_the_lock_still_keeps_a_second_build_out(tmp_path):
    from c4table.pipeline.runtime import resources
    resources.lock_build_dir(tmp_path)
    try:
        assert (tmp_path / ".lock").exists()
        code = ("import sys; from c4table.pipeline.runtime import resources\n"
                f"resources.lock_build_dir({str(tmp_path)!r})")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert p.returncode == 1 and "another c4table process" in p.stderr
    finally:
        resources.unlock_build_dir(tmp_path)
    assert not (tmp_path / ".lock").exists()


# ------------------------------------------------------------------------------ 17: help
def test_every_subcommand_help_shows_an_example():
    from c4table.cli.main import cli
    import click
    paths = []
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):   # bdd and crosscheck load when listed
        cmd = cli.get_command(ctx, name)
        paths.append([name])
        if isinstance(cmd, click.Group):
            paths += [[name, sub] for sub in cmd.commands]
    assert len(paths) >= 15
    for path in paths:
        rc, out, err = c4(*path, "--help")
        assert rc == 0 and "Examples:" in out, path
        example = out.split("Examples:")[1].splitlines()[1].strip()
        assert example.startswith("c4table " + " ".join(path)), (path, example)


def test_top_level_help_has_examples_and_sets_the_stages_apart():
    """``c4table --help``: every command once, in sections; the stages a build runs (forward,
    backward, merge) in a section of their own after the others, build not among them; and
    examples, each a command of this CLI."""
    from c4table.cli.main import cli
    import click
    rc, out, err = c4("--help")
    assert rc == 0 and "Examples:" in out, out
    body, examples = out.split("Examples:")
    titles = [ln for ln in body.splitlines() if ln.endswith(":") and not ln.startswith(" ")]
    assert titles[0] == "Options:" and titles[-1].startswith("Stages of a build"), titles
    sections = {t: [] for t in titles}
    current = None
    for ln in body.splitlines():
        if ln in sections:
            current = ln
        elif current and ln.startswith("  ") and ln.strip():
            sections[current].append(ln.split()[0])
    assert sections[titles[-1]] == ["forward", "backward", "merge"]
    listed = [n for t in titles[1:] for n in sections[t]]
    assert sorted(listed) == sorted(cli.list_commands(click.Context(cli)))   # each once
    assert "build" in sections[titles[1]]
    commands = [ln.strip() for ln in examples.splitlines() if ln.strip().startswith("c4table ")]
    assert len(commands) >= 4 and all(c.split()[1] in listed for c in commands)


def test_a_build_ends_its_process_with_all_its_output_and_files(tmp_path):
    """Issue 16 (fourth session): ``c4table build`` run as a command ends its process with
    ``os._exit`` once done, skipping the interpreter's finalization. Its stdout, a pipe here
    (block-buffered), still carries every line; the table is recorded in the manifest with its
    known tree hash, and the file has its known sha256 (``c4table/data/known_tables.json``,
    published), and no lock is left."""
    from importlib.resources import files
    known = json.loads(files("c4table.data").joinpath("known_tables.json").read_text())
    rc, out, err = c4("build", "4x4", "--out", tmp_path / "b", "--workers", "2", "-v")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].endswith(f"sha256_tree {known['4x4']['sha256_tree']}")
    assert lines[1].startswith("storage and tasks of this run")
    assert [ln.split()[0] for ln in lines[3:6]] == ["forward", "backward", "merge"]
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["table"]["sha256_tree"] == known["4x4"]["sha256_tree"]
    table = (tmp_path / "b" / manifest["table"]["file"]).read_bytes()
    assert hashlib.sha256(table).hexdigest() == known["4x4"]["sha256"]
    assert not (tmp_path / "b" / ".lock").exists()
