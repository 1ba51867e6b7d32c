"""The shape of the package (docs/architecture.md): the import rules hold, checked by
import-linter's ``lint-imports`` with the contracts in ``pyproject.toml`` (layers import only
downwards; no package's children import each other in a cycle, every import statement counted,
function-level ones included) in the fast tier, about a second; no module is over 800 lines;
every module says what it owns in a docstring at its top; no test skips itself when a module of
the package fails to import (only third-party extras may be missing)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(list((ROOT / "c4table").rglob("*.py")) + list((ROOT / "pipeline").rglob("*.py")))


def package_tree(dest: Path) -> Path:
    """The package's modules laid out under ``dest`` as an install lays them out: each folder of
    ``pyproject.toml``'s ``package-dir`` (``pipeline/``) under its package name
    (``c4table/pipeline/``), which the editable install's import hook hides from import-linter."""
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {"c4table": "c4table", **setup.get("package-dir", {})}
    py_only = shutil.ignore_patterns("__pycache__", "*.pyc", "*.json", "*.tsv", "*.html", "*.js", "*.css")
    for package, folder in sorted(folders.items()):   # c4table first, then the packages inside it
        shutil.copytree(ROOT / folder, dest.joinpath(*package.split(".")), ignore=py_only)
    return dest


def test_import_contracts_hold(tmp_path):
    """``lint-imports`` (the test extra installs it) on a copy of the package's modules."""
    lint = Path(sys.executable).with_name("lint-imports")
    assert lint.exists(), "import-linter is missing: the suite needs the test extra (make install-test)"
    site = package_tree(tmp_path / "site")
    run = subprocess.run([str(lint), str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tmp_path,
                         env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout
    analyzed = int(run.stdout.split("Analyzed ")[1].split(" files")[0])
    assert analyzed == len(MODULES), (analyzed, len(MODULES))   # every module of both folders


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_is_short_and_says_what_it_owns(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 800, f"{path.name}: {len(text.splitlines())} lines"
    if path.name == "__init__.py" and not text.strip():
        return
    assert ast.get_docstring(ast.parse(text)), f"{path}: no module docstring"


def own_import_guards(path: Path) -> list[str]:
    """The places in ``path`` where a failed import of c4table would skip instead of fail:
    ``pytest.importorskip("c4table...")``, and ``try``/``except ImportError`` around an import
    of c4table."""
    tree = ast.parse(path.read_text())
    hits = [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("importorskip") and n.args
            and isinstance(n.args[0], ast.Constant) and str(n.args[0].value).startswith("c4table")]
    for n in ast.walk(tree):
        if isinstance(n, ast.Try) and any(h.type is not None and "ImportError" in ast.unparse(h.type)
                                          for h in n.handlers):
            names = [a.name for s in n.body for i in ast.walk(s) if isinstance(i, ast.Import) for a in i.names]
            names += [i.module or "" for s in n.body for i in ast.walk(s) if isinstance(i, ast.ImportFrom)]
            if any(m.split(".")[0] == "c4table" for m in names):
                hits.append(f"{path.name}:{n.lineno}")
    return hits


def test_a_broken_import_of_the_package_fails_its_tests():
    tests = sorted((ROOT / "tests").glob("*.py")) + [ROOT / "conftest.py"]
    assert [h for p in tests for h in own_import_guards(p)] == []
