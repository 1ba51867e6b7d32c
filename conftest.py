"""pytest set-up for the whole repository (tests/conftest.py holds the test fixtures).

``--doctest-modules`` collects the docstring examples of ``c4table/`` and ``pipeline/``. The
``pipeline/`` folder is the package ``c4table.pipeline`` (pyproject ``package-dir``), but pytest
would import its files under the folder's own name as a second, top-level ``pipeline`` package
and run every module twice. Here each name ``pipeline.X`` (``pipeline.kernels.cpu`` too) is
pointed at the installed module ``c4table.pipeline.X`` before collection, so each module
exists once, under its real name.
"""
import atexit
import importlib
import os
import pkgutil
import shutil
import sys
import tempfile

# The suite never reads or writes the user's cache (remote tables' indexes, the plan's
# calibration): a calibration cached by `c4table plan --calibrate` on this machine would change
# every plan the tests check. Subprocesses inherit it.
os.environ["C4TABLE_CACHE"] = tempfile.mkdtemp(prefix="c4table-test-cache-")
atexit.register(shutil.rmtree, os.environ["C4TABLE_CACHE"], True)   # removed when the run ends

import c4table.pipeline

sys.modules["pipeline"] = c4table.pipeline
for _m in pkgutil.walk_packages(c4table.pipeline.__path__, "c4table.pipeline."):
    try:
        sys.modules[_m.name.removeprefix("c4table.")] = importlib.import_module(_m.name)
    except ImportError:   # an optional dependency (the GPU's) missing: its doctests skip it
        pass

import pytest  # noqa: E402
from _pytest.doctest import DoctestItem  # noqa: E402


# Docstring examples that take seconds (build plans of large boards, plots, whole exports): the
# slow tier, as the tests marked slow (make check leaves them out).
SLOW_DOCTESTS = ("analysis.decode.decode_entries", "analysis.stats.plot_stats", "analysis.export",
                 "planning.iomodel", "planning.plan", "planning.plan.small_plies",
                 "planning.gpuplan.make_gpu_plan")


def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, DoctestItem) and item.name.endswith(SLOW_DOCTESTS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def doctest_dir(tmp_path_factory):
    """A directory holding what the docstring examples name: ``tables/4x4`` and ``tables/5x4``
    (built once per session, a few seconds), the ``.c4z`` of the 5x4 table, and ``board.txt``
    (a drawing)."""
    from c4table.pipeline.stages.build import build_table
    d = tmp_path_factory.mktemp("doctest")
    from c4table.c4z.writer import compress_table
    for board in ("4x4", "5x4"):
        build_table(board, d / "tables" / board, quiet=True, workers=1)
    compress_table(d / "tables" / "5x4" / "connect4_5x4.dat", quiet=True)   # the .c4z examples
    (d / "board.txt").write_text(".....\n.....\n..B..\n.AAB.\n")
    return d


@pytest.fixture(autouse=True)
def _doctests_run_in_doctest_dir(request, monkeypatch):
    """Docstring examples run with :func:`doctest_dir` as the working directory."""
    if isinstance(request.node, DoctestItem):
        monkeypatch.chdir(request.getfixturevalue("doctest_dir"))
