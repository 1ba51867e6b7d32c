"""The exit status rule of docs/cli.md ("Exit status"), command by command: every command of
the ``c4table`` group (found by walking the group, so a new command cannot be left out) given
bad input ends with one ``c4table: error:`` line and exit status 2; a check that fails exits 1.
The commands run through the real entry point, ``c4table.cli.main.main``."""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import click
import pytest

from c4table.cli.main import cli, main

#: (command, arguments): bad input each command must refuse with exit status 2. ``{t54}`` is
#: the 5x4 table, ``{d54}`` a copy of its build directory, ``{tmp}`` a fresh directory.
BAD_INPUT = [
    ("build", ["build", "9by9"]),
    ("build", ["build", "4x4", "--out", "{d54}"]),                 # another board's build
    ("build", ["build", "4x4", "--out", "{tmp}/b", "--memory", "lots"]),
    ("forward", ["forward", "5x4", "--out", "{tmp}/b", "--max-ply", "99"]),
    ("backward", ["backward", "4x4", "--out", "{tmp}/b"]),         # before forward
    ("merge", ["merge", "4x4", "--out", "{tmp}/b"]),               # before backward
    ("plan", ["plan", "9by9"]),
    ("lookup", ["lookup", "--table", "{tmp}/nosuch/connect4_5x4.dat", "33"]),
    ("lookup", ["lookup", "--board", "4x4", "--table", "{t54}", "33"]),   # a 5x4 table
    ("lookup", ["lookup", "--table", "{t54}", "33", "9"]),         # one position refused
    ("best", ["best", "--table", "{t54}", "--drawing", "{tmp}/nosuch.txt"]),
    ("play", ["play", "--table", "{tmp}/nosuch.dat"]),
    ("verify", ["verify", "{tmp}"]),                                # no table there
    ("verify", ["verify", "{t54}", "--sha256", "xyz"]),
    ("stats", ["stats", "{tmp}/nosuch"]),
    ("stats", ["stats", "--board", "4x4", "{t54}"]),
    ("export", ["export", "--table", "{t54}", "--out", "{tmp}/x.csv"]),
    ("label", ["label", "--table", "{t54}", "{tmp}/nosuch.txt", "--out", "{tmp}/x.parquet"]),
    ("compress", ["compress", "{tmp}/nosuch.dat"]),
    ("decompress", ["decompress", "{tmp}/nosuch.c4z"]),
    ("serve", ["serve", "--table", "{tmp}/nosuch.dat"]),
    ("bdd count", ["bdd", "count", "9by9"]),
    ("bdd solve", ["bdd", "solve", "2x2x4"]),                      # a 3D board
    ("crosscheck", ["crosscheck", "{tmp}/nosuch"]),
]


def command_paths(group: click.Group, ctx: click.Context, prefix: str = "") -> list[str]:
    """Every command of ``group`` that runs something (a subgroup's commands, not the
    subgroup), as it is typed: ``build``, ``bdd count``."""
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            out += command_paths(cmd, click.Context(cmd, parent=ctx, info_name=name),
                                 f"{prefix}{name} ")
        else:
            out.append(f"{prefix}{name}")
    return out


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``c4table ARGV`` through the command line's entry point: (status, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    out, err = capsys.readouterr()
    return e.value.code, out, err


def one_error_line(err: str) -> bool:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return (len(lines) == 1 and lines[0].startswith("c4table: error: ")
            and "Traceback" not in err)


def test_every_command_has_a_bad_input_case():
    paths = command_paths(cli, click.Context(cli, info_name="c4table"))
    assert "build" in paths and "bdd count" in paths and "crosscheck" in paths
    missing = sorted(set(paths) - {c for c, _ in BAD_INPUT})
    assert not missing, f"commands with no case in BAD_INPUT: {missing}"
    assert {c for c, _ in BAD_INPUT} <= set(paths)


@pytest.mark.parametrize("command,argv", BAD_INPUT, ids=[" ".join(a) for _, a in BAD_INPUT])
def test_bad_input_is_one_line_and_exit_status_2(command, argv, d54, t54, tmp_path, capsys):
    copy = tmp_path / "d54"
    if "{d54}" in " ".join(argv):
        shutil.copytree(d54, copy)
    args = [a.format(t54=t54, d54=copy, tmp=tmp_path) for a in argv]
    code, out, err = run_main(args, capsys)
    assert code == 2, (code, err)
    assert one_error_line(err), err


def test_a_table_of_another_board_names_it(t54, capsys):
    code, out, err = run_main(["lookup", "--board", "4x4", "--table", str(t54), "33"], capsys)
    assert code == 2 and "board 5x4" in err and out == "", err


def test_serve_on_a_busy_port_is_bad_input(t54, capsys):
    pytest.importorskip("starlette")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        code, out, err = run_main(["serve", "--table", str(t54), "--port", str(port)], capsys)
    assert code == 2 and one_error_line(err), err
    assert "--port" in err and "cannot listen" in err


def test_label_with_refused_rows_writes_the_file_and_exits_2(t54, tmp_path, capsys):
    import pyarrow.parquet as pq
    src = tmp_path / "in.txt"
    src.write_text("3344\n9\n\n")
    out_file = tmp_path / "l.parquet"
    code, out, err = run_main(["label", "-q", "--table", str(t54), str(src), "--out",
                               str(out_file)], capsys)
    assert code == 2 and one_error_line(err), err
    assert "1 of 3 positions could not be labelled" in err and str(out_file) in err
    rows = pq.read_table(out_file).to_pylist()
    assert [r["error"] is None for r in rows] == [True, False, True]
    assert rows[0]["outcome"] == "A" and rows[0]["distance"] == 3   # lookup 3344 says so


def test_a_failed_check_is_exit_status_1(d54, tmp_path, capsys):
    d = tmp_path / "b"
    shutil.copytree(d54, d)
    table = d / "connect4_5x4.dat"
    data = bytearray(table.read_bytes())
    data[len(data) // 2] ^= 0x01
    table.write_bytes(bytes(data))
    code, out, err = run_main(["verify", "-q", str(table)], capsys)
    assert code == 1 and one_error_line(err) and "MISMATCH" in out, err


def _without(modules: list[str], *args, cwd=None) -> subprocess.CompletedProcess:
    """``c4table ARGS`` in a Python where importing ``modules`` fails, as in an install
    without the extra that brings them."""
    code = (f"import sys; sys.modules.update(dict.fromkeys({modules!r})); "
            "from c4table.cli.main import main; main(sys.argv[1:])")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("modules,args,extra", [
    (["starlette", "uvicorn"], ["serve", "--table", "{t54}"], "c4table[serve]"),
    (["matplotlib"], ["stats", "{t54}", "--png", "p.png", "-q"], "c4table[plot]"),
    (["dask", "distributed"], ["build", "4x4", "--out", "b", "--scheduler", "local"],
     "c4table[dask]"),
])
def test_a_missing_extra_is_bad_input(modules, args, extra, t54, tmp_path):
    p = _without(modules, *(a.format(t54=t54) for a in args), cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert one_error_line(p.stderr) and extra in p.stderr, p.stderr
    assert list(tmp_path.iterdir()) == []   # the build made no --out directory


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_build_that_fails_before_it_starts_leaves_no_directory(tmp_path, capsys):
    """``--out`` is not left behind, empty, by a build that could not start (an unreachable
    scheduler, a stage run before the one it needs), with the directories above it that the
    run made; a directory that was there before stays."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("distributed")
    new = tmp_path / "new" / "b"
    mine = tmp_path / "mine"
    mine.mkdir()
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        for out in (new, mine):
            code, _, err = run_main(["build", "4x4", "--out", str(out), "--scheduler",
                                     f"tcp://127.0.0.1:{_closed_port()}"], capsys)
            assert code == 2 and one_error_line(err) and "--scheduler" in err, err
    for argv in (["merge", "4x4"], ["backward", "4x4"]):
        code, _, err = run_main([*argv, "--out", str(new)], capsys)
        assert code == 2 and one_error_line(err), err
        code, _, err = run_main([*argv, "--out", str(mine)], capsys)
        assert code == 2 and one_error_line(err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]
    assert list(mine.iterdir()) == []
