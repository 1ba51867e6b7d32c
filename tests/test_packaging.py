"""Packaging: the core install is what a table builder needs, optional parts are extras whose
absence is one line naming the extra, and the repository stands on its own (no file reaches
outside it). The wheel itself is checked by .ci/run (built, installed outside the tree, used)."""
import re
import sys
import tomllib

import pytest

from c4table.errors import MissingExtraError
from conftest import ROOT


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_optional_dependencies_are_extras():
    project = pyproject()["project"]
    core = " ".join(project["dependencies"])
    for name in ("matplotlib", "psutil", "dask", "pytest"):
        assert name not in core
    extras = project["optional-dependencies"]
    assert any("matplotlib" in d for d in extras["plot"])
    assert any("psutil" in d for d in extras["bench"])
    assert any("dask" in d for d in extras["dask"])
    for needed in ("pytest", "matplotlib", "dask"):      # what the suite exercises
        assert any(needed in d for d in extras["test"]), needed


def test_packages_are_under_one_name():
    tool = pyproject()["tool"]["setuptools"]
    assert {p.split(".")[0] for p in tool["packages"]} == {"c4table"}
    assert {"c4table.bdd", "c4table.pipeline", "c4table.data"} <= set(tool["packages"])


def test_stats_png_without_matplotlib_is_one_line(built, tmp_path, monkeypatch, capsys):
    from c4table.cli.main import main
    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import matplotlib -> ImportError
    with pytest.raises(SystemExit) as e:
        main(["stats", str(built("4x4")), "--png", str(tmp_path / "w.png")])
    err = capsys.readouterr().err
    assert e.value.code == 2 and not (tmp_path / "w.png").exists()
    assert err.count("\n") == 1 and err.startswith("c4table: error: ")
    assert "pip install 'c4table[plot]'" in err


def test_dask_scheduler_without_dask_names_the_extra(monkeypatch):
    from c4table.pipeline.runtime.execution import make_executor
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(MissingExtraError, match=r"c4table\[dask\]"):
        make_executor(workers=1, scheduler="local")


def test_repository_reads_nothing_outside_itself():
    """No file of the project names the reference desk beside the repository."""
    pattern = re.compile(r"\.\./shared|/\s*\"shared\"|/work/shared")
    hits = []
    files = [ROOT / n for n in ("README.md", "Makefile", "pyproject.toml", "conftest.py")]
    for sub in ("c4table", "pipeline", "tests", "tools", "docs", ".ci"):
        files += [p for p in (ROOT / sub).rglob("*")
                  if p.is_file() and p.suffix in (".py", ".md", ".json", ".tsv", "")]
    for p in files:
        if p != ROOT / "tests" / "test_packaging.py" and pattern.search(p.read_text(errors="replace")):
            hits.append(str(p.relative_to(ROOT)))
    assert hits == []


def test_make_install_silences_setuptools_editable_warning():
    """``make install`` runs pip with a warning filter for setuptools' boxed "Editable
    installation" warning, which pip re-emits from the build backend as a
    ``BuildBackendWarning``: the environment the Makefile really gives pip (``make -n``) hides
    that warning, and without it the same warning shows."""
    import os
    import shlex
    import shutil
    import subprocess
    if shutil.which("make") is None:
        pytest.skip("no make")
    dry = subprocess.run(["make", "-n", "-B", "install", "VENV=.venv-none"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60).stdout
    line = next(ln for ln in dry.splitlines() if "pip install --quiet -e ." in ln)
    words = shlex.split(line)
    given = dict(w.split("=", 1) for w in words[:words.index(".venv-none/bin/pip")])
    assert "PYTHONWARNINGS" in given, line
    pytest.importorskip("pip._vendor.pyproject_hooks")
    emit = ("import warnings\n"
            "from pip._vendor.pyproject_hooks import BuildBackendWarning\n"
            "warnings.warn_explicit(message='Editable installation.\\n!!\\n\\n  ****\\n  Please "
            "be careful with folders in your working directory with the same name as your "
            "package', category=BuildBackendWarning, filename='editable_wheel.py', lineno=354)\n")
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    shown = subprocess.run([sys.executable, "-c", emit], capture_output=True, text=True,
                           env=plain, timeout=60)
    assert "Editable installation" in shown.stderr
    hidden = subprocess.run([sys.executable, "-c", emit], capture_output=True, text=True,
                            env={**plain, **given}, timeout=60)
    assert hidden.returncode == 0 and hidden.stderr == "", hidden.stderr
