"""The shape of the package (docs/architecture.md): the import rules hold, checked by
import-linter's ``lint-imports`` with the contracts in ``pyproject.toml`` (layers import only
downwards; no package's children import each other in a cycle, every import statement counted,
function-level ones included) in the fast tier, about a second; no module is over 800 lines;
every module says what it owns in a docstring at its top."""
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
