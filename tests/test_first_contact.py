"""What a new user meets first, through the real console script: choosing among several
tables, Ctrl-C during a long command, the build's summary, and importing the package."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from c4table.table.known import known_tables

C4TABLE = str(Path(sys.executable).with_name("c4table"))


def c4table(*args, cwd=None, stdin=None, timeout=300):
    p = subprocess.run([C4TABLE, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def two_tables(built, tmp_path_factory):
    """A directory holding tables/5x4 and tables/4x4, as after two builds."""
    home = tmp_path_factory.mktemp("home")
    for board in ("5x4", "4x4"):
        shutil.copytree(built(board), home / "tables" / board)
    return home


@pytest.mark.slow
def test_board_chooses_among_the_tables_found(two_tables):
    rc, out, err = c4table("lookup", "3344", cwd=two_tables)
    assert rc == 2
    assert "tables/4x4" in err and "tables/5x4" in err and "--board" in err
    rc, out, err = c4table("lookup", "--board", "5x4", "3344", cwd=two_tables)
    assert rc == 0, err
    assert out.startswith("3344  board 5x4")
    rc, out, err = c4table("best", "--board", "4x4", "", cwd=two_tables)
    assert rc == 0, err
    assert "board 4x4" in out
    rc, out, err = c4table("lookup", "--board", "6x5", "3344", cwd=two_tables)
    assert rc == 2 and "no table of board 6x5" in err and "tables/5x4" in err


@pytest.mark.parametrize("command", [["lookup", "3344"], ["best", "3344"],
                                     ["export", "--ply", "2", "--out", "p.parquet", "-q"]])
def test_table_may_be_a_build_directory(two_tables, command):
    rc, out, err = c4table(*command[:1], "--table", "tables/5x4", *command[1:], cwd=two_tables)
    assert rc == 0, err


def test_open_table_takes_a_build_directory(built):
    from c4table.open import open_table
    with open_table(built("5x4")) as t:
        assert t.probe("3344").outcome == "A"


def _as_in_the_foreground() -> None:
    """In the child before it runs c4table: SIGINT delivered and not ignored, as for a command
    in a terminal's foreground. A run of the tests started in the background by a shell
    without job control has SIGINT ignored, and an ignored SIGINT is inherited by every
    process it starts (Python then installs no handler of its own for it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _interrupt(args, cwd, marker: str, timeout=120):
    """Run c4table ``args``, send SIGINT once a stderr line holds ``marker``: (rc, stderr)."""
    p = subprocess.Popen([C4TABLE, *args], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=_as_in_the_foreground)
    lines = []
    deadline = time.monotonic() + timeout
    try:
        for line in p.stderr:
            lines.append(line)
            if marker in line:
                p.send_signal(signal.SIGINT)
                break
            assert time.monotonic() < deadline
        _, rest = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, "".join(lines) + rest


def test_ctrl_c_during_a_build_says_to_rerun(tmp_path):
    rc, err = _interrupt(["build", "5x5", "--out", "b", "--workers", "2"], tmp_path, "[forward] ply 6")
    assert rc == 130, err
    last = err.strip().splitlines()[-1]
    assert last == ("c4table: error: interrupted; finished steps are kept, rerun the same "
                    "command to resume"), err
    assert "aborted" not in err


def _interrupt_group(args, cwd, marker: str, timeout=300):
    """Run c4table ``args`` in a process group of its own; once a stderr line holds ``marker``,
    send SIGINT to the whole group, as a terminal's Ctrl-C does (the build's worker processes
    get it too). Returns (rc, stderr after the marker's line, whether the group outlived it)."""
    p = subprocess.Popen([C4TABLE, *args], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=_as_in_the_foreground)
    deadline = time.monotonic() + timeout
    try:
        for line in p.stderr:
            if marker in line:
                os.killpg(p.pid, signal.SIGINT)
                break
            assert time.monotonic() < deadline
        else:
            pytest.fail(f"{marker!r} never appeared")
        _, rest = p.communicate(timeout=timeout)
        time.sleep(0.5)
        try:
            os.killpg(p.pid, 0)
            outlived = True
        except ProcessLookupError:
            outlived = False
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    return p.returncode, rest, outlived


@pytest.mark.slow
def test_ctrl_c_during_the_backward_pass_is_one_line(tmp_path):
    """Ctrl-C reaches the build's worker processes too: the ones idle between tasks exit
    without a word (no "Process ForkProcess-1: Traceback ..."), so stderr ends with the
    one-line message alone."""
    rc, out, err = c4table("forward", "5x5", "--out", "b", "--workers", "2", "-q", cwd=tmp_path)
    assert rc == 0, err
    rc, after, outlived = _interrupt_group(["build", "5x5", "--out", "b", "--workers", "2"],
                                           tmp_path, "[backward] ply 22")
    assert rc == 130, after
    assert "Traceback" not in after and "KeyboardInterrupt" not in after, after
    said = [ln for ln in after.splitlines() if ln.strip() and not ln.startswith("[backward] ")]
    assert said == ["c4table: error: interrupted; finished steps are kept, rerun the same "
                    "command to resume"], after
    assert not outlived   # the workers are gone with the driver


@pytest.mark.slow
def test_ctrl_c_of_a_restart_says_to_rerun_without_it(tmp_path):
    """Rerunning ``build --restart`` would start over: Ctrl-C names the command that resumes,
    and that command does resume (no ply 0 again) and finishes the right table."""
    from c4table.table.known import known_tables
    rc, err = _interrupt(["build", "5x4", "--out", "my b", "--workers", "2", "--restart"],
                         tmp_path, "[forward] ply 6")
    assert rc == 130, err
    last = err.strip().splitlines()[-1]
    hint = "c4table: error: interrupted; finished steps are kept, rerun without --restart to resume: "
    assert last == hint + "c4table build 5x4 --out 'my b' --workers 2", err
    again = shlex.split(last.removeprefix(hint))
    rc, out, err = c4table(*again[1:], cwd=tmp_path)
    assert rc == 0, err
    resumed = re.search(r"\[forward\] resuming at ply (\d+)", err)
    assert resumed and int(resumed[1]) >= 7 and "[forward] ply 0/" not in err, err
    assert out.splitlines()[0].split()[-2:] == ["sha256_tree", known_tables()["5x4"]["sha256_tree"]]


def test_ctrl_c_message_of_every_long_command():
    from c4table.cli import main
    for name in ("build", "forward", "backward", "merge", "compress", "decompress", "export",
                 "verify"):
        assert name in main.cli.list_commands(None)
        assert "rerun the same command" in main.ON_INTERRUPT[name]


@pytest.mark.slow
def test_a_local_build_says_one_line_per_stage_and_what_work_holds(tmp_path):
    from c4table.table.known import known_tables
    rc, out, err = c4table("build", "4x4", "--out", "b", "--workers", "2", cwd=tmp_path)
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].endswith(f"80,541 entries  sha256_tree {known_tables()['4x4']['sha256_tree']}")
    assert "GETs" not in out and "HEAD/LIST" not in out
    assert [ln.split()[:3] for ln in lines[1:4]] == [
        [stage, "80,541", "entries"] for stage in ("forward", "backward", "merge")]
    assert all("entries/s" in ln for ln in lines[1:4])
    assert lines[4].startswith(f"{tmp_path / 'b' / 'work'} holds ")
    assert "--clean" in lines[4]
    rc, out, err = c4table("build", "4x4", "--out", "v", "-v", cwd=tmp_path)
    assert rc == 0, err
    assert "HEAD/LIST" in out
    rc, out, err = c4table("build", "4x4", "--out", "b", "--clean", cwd=tmp_path)
    assert rc == 0, err
    assert "holds" not in out and not (tmp_path / "b" / "work").exists()


@pytest.mark.slow
def test_a_resumed_build_counts_only_the_work_of_this_run(tmp_path):
    """A build resumed in its backward pass says how many plies this run did and counts
    their entries only (the manifest's per-ply figures), not the whole table's."""
    from conftest import interrupt_backward
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import open_build
    b = open_build("5x4", tmp_path / "b", workers=1, quiet=True)
    forward.run(b)
    m = b.manifest
    interrupt_backward(b, lambda: len(m.finished_plies("backward")) >= 11)   # after plies 20..10
    rc, out, err = c4table("build", "5x4", "--out", "b", "--workers", "2", cwd=tmp_path)
    assert rc == 0, err
    plies = json.loads((tmp_path / "b" / "manifest.json").read_text())["plies"]
    left = sum(plies[p]["entries"] for p in range(10))
    lines = out.splitlines()
    assert not any(ln.split()[0] == "forward" for ln in lines[1:]), out   # nothing ran
    back = next(ln for ln in lines if ln.split()[0] == "backward")
    assert back.startswith(f"  backward  {left:,} entries in "), back
    assert back.endswith("; resumed: 10 of 21 plies this run"), back
    merge = next(ln for ln in lines if ln.split()[0] == "merge")
    assert merge.startswith("  merge     1,974,174 entries in ") and "resumed" not in merge


def test_first_build_says_the_kernels_compile_and_shows_no_early_eta(tmp_path):
    """With numba's cache empty (a fresh install), the build says it is compiling before it
    sits on ply 0 (no figure promised: seconds to tens of seconds with the machine), then how
    long that took, and shows no ETA extrapolated from that wait; a first ``--format c4z``
    merge says it compiles the block codec. Once compiled, neither says anything of it."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    for i, first in enumerate([True, False]):
        p = subprocess.run([C4TABLE, "build", "4x4", "--out", f"b{i}", "--workers", "2",
                            "--format", "c4z"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        lines = p.stderr.splitlines()
        assert ("compiling the kernels (first run after install only)..." in lines[0]) is first
        if first:
            took = re.fullmatch(r"\[build\] compiled the kernels in ([\d.]+)s \(kept in numba's "
                                r"cache for the next runs\)", lines[1])
            assert took, lines[:3]
            ply0 = re.search(r"time ([\d.]+)s", lines[2])
            assert ply0 and 0 < float(took[1]) <= float(ply0[1]) + 0.05, lines[:3]
        assert lines[2 if first else 0].startswith("[forward] ply 0/16"), lines[:3]
        merge = [ln for ln in lines if ln.startswith("[merge]")]
        assert ("compiling the .c4z block codec" in merge[0]) is first, merge
        assert "ETA" not in p.stderr, p.stderr


def _import_from_above_the_clone(tmp_path, extra_site=None):
    """``import c4table`` in a Python started beside a folder named c4table (the clone, as seen
    from the directory holding it), optionally after adding ``extra_site`` as a site dir."""
    above = tmp_path / "above"
    (above / "c4table" / "tests").mkdir(parents=True)   # the clone: no __init__.py at its root
    code = ("import site\n"
            + (f"site.addsitedir({str(extra_site)!r})\n" if extra_site else "")
            + "import c4table\nprint(c4table.open_table.__name__)\n")
    return subprocess.run([sys.executable, "-c", code], cwd=above, capture_output=True,
                          text=True, timeout=120)


def test_import_from_the_directory_above_the_clone(tmp_path):
    root = Path(__file__).resolve().parent.parent
    site = tmp_path / "site"
    site.mkdir()
    subprocess.run([sys.executable, "-m", "tools.diag.pin_package_path", str(site)], cwd=root,
                   check=True, capture_output=True, timeout=60)
    p = _import_from_above_the_clone(tmp_path, site)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "open_table"
    # the build, which the editable install's hook maps from pipeline/, is still found
    code = f"import site; site.addsitedir({str(site)!r}); import c4table.pipeline.stages.build"
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "above", capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_verify_says_when_the_reference_is_our_own_earlier_build(built):
    rc, out, err = c4table("verify", str(built("5x4")), "-q")
    assert rc == 0, err
    verdict = out.strip().splitlines()[-1]
    assert "sha256_tree matches known table 5x4 (our own earlier build" in verdict
    assert "no published hash" in verdict
    # the tree hash is cited with the date it was recorded, not the date of the file's figures
    ref = known_tables()["5x4"]
    assert f"its sha256_tree built by c4table {ref['tree_provenance']['c4table_version']} on " \
           f"{ref['tree_provenance']['date']}" in verdict
    rc, out, err = c4table("verify", str(built("4x4")), "-q")
    assert rc == 0, err
    assert "known table 4x4 (published" in out and "our own" not in out


def test_drawing_of_move_strings_says_so(built, tmp_path):
    moves = tmp_path / "moves.txt"
    moves.write_text("3344\n4455\n")
    rc, out, err = c4table("lookup", "--table", str(built("5x4")), "--drawing", str(moves))
    assert rc == 2 and out == ""
    assert "looks like move strings" in err and "empty drawing" not in err
    assert "lookup - <" in err


def test_a_won_game_names_its_winning_cells(built):
    """The API and lookup --json add ``winning_cells`` to a won game (the web board marks
    them); every other key, and every other answer, is as before."""
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient
    from c4table.serve.app import create_app
    t44 = built("4x4") / "connect4_4x4.dat"
    rc, out, err = c4table("lookup", "--json", "--table", str(t44), "1213141", "121314", "")
    assert rc == 0, err
    won, going, empty = (json.loads(line) for line in out.splitlines())
    assert won["winning_cells"] == [[1, 1], [1, 2], [1, 3], [1, 4]]
    assert list(won)[:8] == ["board", "position", "ply", "to_move", "outcome", "distance",
                             "terminal", "moves"]
    assert list(won)[-1] == "winning_cells"     # added last: every other key as before
    assert "winning_cells" not in going and "winning_cells" not in empty
    with TestClient(create_app([t44], cache_size=0)) as client:
        r = client.get("/api/4x4", params={"moves": "1213141"})
        assert r.status_code == 200 and r.json() == won
        assert "winning_cells" not in client.get("/api/4x4", params={"moves": "121314"}).json()
    app_js = (Path(__file__).resolve().parent.parent / "c4table" / "serve" / "web" / "app.js").read_text()
    assert "winning_cells" in app_js


@pytest.mark.slow
def test_serve_and_compress_take_a_build_directory(two_tables, tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([C4TABLE, "serve", "--table", "tables/4x4", "--port", str(port)],
                         cwd=two_tables, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert "serving 4x4" in line, line
    finally:
        p.terminate()
        p.wait(timeout=30)
    empty = tmp_path / "empty"
    empty.mkdir()
    rc, out, err = c4table("serve", "--table", str(empty), cwd=two_tables)
    assert rc == 2 and "a directory with no connectK_WxH.dat" in err
    work = tmp_path / "copy"
    shutil.copytree(two_tables / "tables" / "4x4", work)
    rc, out, err = c4table("compress", str(work), "-q")
    assert rc == 0, err
    assert (work / "connect4_4x4.c4z").exists()


def test_label_gives_a_rate_only_for_runs_of_a_second_or_more(t54, tmp_path, monkeypatch):
    """A 3-line label takes a fraction of a second, mostly start-up: its positions per second
    would mean nothing and are not shown; a long run's are."""
    from click.testing import CliRunner
    from c4table.analysis import label as lab
    from c4table.cli.label import label
    src = tmp_path / "in.txt"
    src.write_text("3344\n\n12\n")
    r = CliRunner().invoke(label, ["-q", "--table", str(t54), str(src), "--out",
                                   str(tmp_path / "o.parquet")])
    assert r.exit_code == 0, r.output
    m = re.fullmatch(r".*o\.parquet: 3 positions labelled \(0 errors\) in (\d+\.\d)s(, .*)?\n",
                     r.stdout)
    assert m and (m[2] is None or float(m[1]) >= 0.95), r.stdout   # (a loaded machine: slower)
    for n, secs, rate in ((3, 0.4, ""), (5_000_000, 2.0, ", 2,500,000 positions/s")):
        monkeypatch.setattr(lab, "label_file", lambda *a, n=n, secs=secs, **k: lab.LabelReport(
            tmp_path / "o.parquet", n, 0, secs))
        r = CliRunner().invoke(label, ["-q", "--table", str(t54), str(src), "--out",
                                       str(tmp_path / "o.parquet")])
        assert r.stdout.endswith(f"{n:,} positions labelled (0 errors) in {secs}s{rate}\n"), r.stdout


@pytest.mark.parametrize("argv,named", [
    (["verify", "{d}"], "FILE|DIR"),                              # a positional argument
    (["compress", "{d}"], "TABLE.dat|DIR|TABLE.dat.xz|-|TABLE.c4z"),
    (["lookup", "--table", "{d}", "33"], "--table FILE|DIR"),      # an option
    (["serve", "--table", "{d}"], "--table FILE|DIR"),
    (["export", "--table", "{d}", "--out", "{d}/x.parquet"], "--table FILE|DIR"),
])
def test_a_directory_without_a_table_is_named_as_it_was_given(argv, named, tmp_path, capsys):
    """``verify DIR`` takes its table as an argument: the error names that argument, not an
    option the command does not have."""
    from c4table.cli.main import main
    with pytest.raises(SystemExit) as e:
        main([a.format(d=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert err.startswith(f"c4table: error: Invalid value for {named}: {tmp_path}: a directory "
                          "with no connectK_WxH.dat or .c4z table in it"), err
