"""The shape of the package (docs/architecture.md): the import rules hold, checked by
import-linter's ``lint-imports`` with the contracts in ``pyproject.toml`` (layers import only
downwards; no package's children import each other in a cycle, every import statement counted,
function-level ones included); no module is over 800 lines; every module says what it owns in
a docstring at its top."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(list((ROOT / "c4table").rglob("*.py")) + list((ROOT / "pipeline").rglob("*.py")))


@pytest.mark.slow
def test_import_contracts_hold(tmp_path):
    """lint-imports on a plain (non-editable) install: ``c4table.pipeline`` lives in the
    ``pipeline/`` folder, which only an installed copy shows under its package name."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed (the test extra)")
    src, target = tmp_path / "src", tmp_path / "site"   # a copy: the build leaves build/ in its tree
    for name in ("c4table", "pipeline"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                    "--target", str(target), str(src)], check=True, capture_output=True)
    run = subprocess.run([str(lint), str(ROOT / "pyproject.toml"), "--no-cache"], cwd=tmp_path,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_module_is_short_and_says_what_it_owns(path):
    text = path.read_text()
    assert len(text.splitlines()) <= 800, f"{path.name}: {len(text.splitlines())} lines"
    if path.name == "__init__.py" and not text.strip():
        return
    assert ast.get_docstring(ast.parse(text)), f"{path}: no module docstring"
