"""The scripts under tools/ (benchmarks, comparisons with other programs, diagnostics) keep
working: each answers ``--help`` with its usage and exit status 0, and writes nothing where it
runs (``pin_package_path.py --help`` once made a folder named ``--help``). Tools and tests share
code only through the installed package (``c4table.testing``): no tool imports from tests/ and
no test imports from tools/."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = sorted((ROOT / "tools").rglob("*.py"))
TESTS = sorted((ROOT / "tests").glob("*.py"))


def test_there_are_tools():
    assert {p.parent.name for p in TOOLS} == {"bench", "compare", "diag"}


@pytest.mark.slow
@pytest.mark.parametrize("tool", TOOLS, ids=lambda p: str(p.relative_to(ROOT / "tools")))
def test_help_works_and_writes_nothing(tool, tmp_path):
    run = subprocess.run([sys.executable, str(tool), "--help"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("usage: "), run.stdout[:200]
    assert list(tmp_path.iterdir()) == []


def imported(path: Path) -> set[str]:
    """Top-level names of the modules ``path`` imports (absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def path_edits(path: Path) -> list[str]:
    """The source of each ``sys.path.insert``/``append`` call in ``path``."""
    text = path.read_text()
    return [ast.get_source_segment(text, node) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("insert", "append") and ast.unparse(node.func.value) == "sys.path"]


def test_tools_and_tests_do_not_import_each_other():
    test_modules = {p.stem for p in TESTS}
    tool_modules = {p.stem for p in TOOLS}
    for tool in TOOLS:
        assert not imported(tool) & test_modules, tool
        assert not [e for e in path_edits(tool) if "tests" in e], tool
    for test in TESTS:
        assert not imported(test) & tool_modules, test
        assert not [e for e in path_edits(test) if "tools" in e], test
