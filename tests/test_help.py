"""What ``--help`` shows, for every command of the ``c4table`` group (walked, so a new one is
checked too): a summary that fits in ``c4table --help`` without being cut, help text for every
option, the build's options in order of importance, and docs/cli.md's synopses naming every
option. And the ``rl`` extra brings what docs/ml.md's examples import."""
from __future__ import annotations

import re
import tomllib

import click
import pytest
from click.testing import CliRunner

from c4table.cli.main import cli
from conftest import ROOT

SUMMARY_MAX = 60
"""Characters of a command's summary: ``c4table --help`` on 80 columns shows 62 beside the
longest command name."""


def commands(group: click.Group = cli, ctx: click.Context | None = None, prefix: str = ""):
    """``(path, command)`` of every command and subgroup under ``group`` (``"bdd count"``)."""
    ctx = ctx or click.Context(group, info_name="c4table")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield prefix + name, cmd
        if isinstance(cmd, click.Group):
            yield from commands(cmd, click.Context(cmd, parent=ctx, info_name=name),
                                f"{prefix}{name} ")


def test_every_command_has_a_summary_that_fits():
    found = dict(commands())
    assert {"build", "bdd", "bdd count", "serve"} <= set(found)
    for path, cmd in found.items():
        assert cmd.short_help, f"{path}: no short_help"
        assert len(cmd.short_help) <= SUMMARY_MAX, (path, cmd.short_help)
        assert not cmd.short_help.endswith("."), (path, cmd.short_help)
    for group, prefix in ((cli, ""), (found["bdd"], "bdd ")):
        out = CliRunner().invoke(group, ["--help"], terminal_width=80).output
        cut = [ln for ln in out.splitlines() if ln.endswith("...") and "Usage:" not in ln]
        assert not cut, cut
        for path, cmd in found.items():
            if path.startswith(prefix) and " " not in path[len(prefix):]:
                assert f"  {path[len(prefix):]} " in out and cmd.short_help in out, (path, out)


def test_every_option_has_help():
    missing = [(path, p.opts) for path, cmd in commands() for p in cmd.params
               if isinstance(p, click.Option) and not p.hidden and not p.help]
    assert not missing


def test_serve_help_says_what_port_is():
    out = CliRunner().invoke(cli, ["serve", "--help"], terminal_width=100).output
    assert re.search(r"--port PORT\s+TCP port to listen on", out), out


@pytest.mark.parametrize("stage", ["build", "forward", "backward", "merge"])
def test_build_options_come_in_order_of_importance(stage):
    out = CliRunner().invoke(cli, [stage, "--help"], terminal_width=100).output
    listed = re.findall(r"^  (?:-\w, )?(--[\w-]+)", out, re.M)
    want = [o for o in ("--out", "--format", "--workers", "--memory", "--restart") if o in listed]
    assert listed[:len(want)] == want, listed
    assert listed[-1] == "--help" and listed.index("--scheduler") > listed.index("--memory")


def synopses() -> dict[str, str]:
    """docs/cli.md's synopsis of each command: the lines of its plain fenced blocks from
    ``c4table COMMAND`` on; ``[same options]`` stands for those of the block's first one."""
    out, fence, first, cur = {}, None, None, None
    for line in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence, first, cur = (None if fence is not None else line[3:].strip()), None, None
            continue
        if fence != "":
            continue
        m = re.match(r"c4table ((?:bdd )?[a-z]+)\b", line)
        if m:
            cur = m.group(1)
            first = first or cur
            out.setdefault(cur, "")
        if cur:
            out[cur] += " " + line.replace("[same options]", out[first])
    return out


def test_cli_md_synopses_name_every_option():
    syn = synopses()
    for path, cmd in commands():
        if isinstance(cmd, click.Group):
            continue
        assert path in syn, f"docs/cli.md has no synopsis of {path}"
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.hidden:
                assert any(re.search(re.escape(o) + r"(?![\w-])", syn[path])
                           for o in p.opts + p.secondary_opts), (path, p.opts)


def test_the_rl_extra_brings_what_the_ml_examples_import():
    """docs/ml.md section 6 says ``pip install 'c4table[rl]'``: that extra holds Gymnasium (the
    environment) and the libraries whose observations the examples feed ``PerfectAgent``
    (PettingZoo, OpenSpiel); every library an example of the page imports is a dependency
    or in an extra the page names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    names = {e: {re.match(r"[\w-]+", d)[0].lower().replace("_", "-") for d in deps}
             for e, deps in extras.items()}
    assert {"gymnasium", "pettingzoo", "open-spiel"} <= names["rl"]
    text = (ROOT / "docs" / "ml.md").read_text(encoding="utf-8")
    named = set(re.findall(r"pip install 'c4table\[(\w+)\]'", text))
    assert "rl" in named
    available = {re.match(r"[\w-]+", d)[0].lower() for d in project["dependencies"]}
    available |= {"c4table"} | set().union(*(names[e] for e in named))
    dist = {"pyarrow": "pyarrow", "numpy": "numpy", "datasets": "datasets",
            "pettingzoo": "pettingzoo", "gymnasium": "gymnasium", "pyspiel": "open-spiel",
            "c4table": "c4table"}
    imported = set(re.findall(r">>> (?:from|import) (\w+)", text))
    imported |= set(re.findall(r">>> import [\w.]+ as \w+, (\w+)", text))
    assert "pettingzoo" in imported
    for module in imported:
        assert dist[module] in available, module
