"""The programs under tools/ (benchmarks, comparisons with other programs, diagnostics) keep
working, run as their docs say: ``python -m tools.PACKAGE.NAME`` from the checkout's root.
Each answers ``--help`` with its usage and exit status 0, and writes nothing where it runs
(``pin_package_path --help`` once made a folder named ``--help``); every such command in the
guides, the measurement files and the tools' docstrings names a tool that exists. Tools share
code as modules of the ``tools`` package, never by editing ``sys.path``; tools and tests share
only the installed package (``c4table.testing``): no tool imports from tests/ and no test
imports from tools/. The sampler the benchmarks share (``tools.bench.diskuse``) is checked on a
real build through a tool that reports what it sampled."""
from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import tool, tool_env

ROOT = Path(__file__).resolve().parents[1]
TOOLS = sorted(p for p in (ROOT / "tools").rglob("*.py") if p.name != "__init__.py")
TESTS = sorted((ROOT / "tests").glob("*.py"))


def name(path: Path) -> str:
    """A tool's name under ``tools`` (``bench.diskuse``: it runs as ``tools.bench.diskuse``)."""
    return ".".join(path.relative_to(ROOT / "tools").with_suffix("").parts)


def test_there_are_tools():
    assert {p.parent.name for p in TOOLS} == {"bench", "compare", "diag"}
    for d in ("tools", "tools/bench", "tools/compare", "tools/diag"):
        init = ROOT / d / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), init


@pytest.mark.slow
@pytest.mark.parametrize("path", TOOLS, ids=name)
def test_help_works_and_writes_nothing(path, tmp_path):
    run = subprocess.run(tool(name(path), "--help"), cwd=tmp_path,
                         env=tool_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("usage: "), run.stdout[:200]
    assert list(tmp_path.iterdir()) == []


# `python tools/bench/x.py`, `.venv/bin/python tools/...`: the script form, which a tool that
# imports another tool does not run in
SCRIPT_FORM = re.compile(r"(?:^|[\s`(])(?:\S*/)?python3?\s+tools/\w+/\w+\.py\b")
MODULE_FORM = re.compile(r"python3?\s+-m\s+(tools(?:\.\w+)+)")


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md")),
            *TOOLS, *sorted((ROOT / "c4table").rglob("*.py")), *sorted((ROOT / "pipeline").rglob("*.py"))]


def test_documented_commands_run_tools_as_modules():
    """Every ``python -m tools.X.Y`` shown names a tool that exists; none is shown as a script
    (``python tools/X/Y.py``)."""
    shown, scripts, missing = 0, [], []
    for doc in documents():
        text = doc.read_text(encoding="utf-8")
        scripts += [f"{doc.relative_to(ROOT)}: {m.group().strip()}" for m in SCRIPT_FORM.finditer(text)]
        for m in MODULE_FORM.finditer(text):
            if m[1].split(".")[-1].isupper():   # a placeholder: tools.bench.NAME
                continue
            shown += 1
            if not (ROOT / (m[1].replace(".", "/") + ".py")).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {m[1]}")
    assert shown > 50
    assert scripts == [] and missing == [], scripts + missing


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
    for path in TOOLS:
        assert not imported(path) & test_modules, path
        # tools import each other as tools.X.Y, not by a bare name found through sys.path
        assert not imported(path) & tool_modules and path_edits(path) == [], path
    for test in TESTS:
        assert not imported(test) & (tool_modules | {"tools"}), test
        assert not [e for e in path_edits(test) if "tools" in e], test


@pytest.mark.slow
def test_disk_sampler_sees_a_real_build(tmp_path):
    """``big_build`` samples a 4x4 ``.c4z`` build's directory (``DiskSampler``, every 50 ms and
    once more at the end) into its log; ``--report`` gives the peak, which is at least what the
    finished directory holds (table and manifest included), and each kind's peak is at most it."""
    out = tmp_path / "b44"
    run = subprocess.run(tool("bench.big_build", "4x4", str(out), "--workers", "1", "--memory", "1GiB",
                              "--every", "0.05"), env=tool_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    log = [json.loads(line) for line in out.with_name("b44.log.jsonl").read_text().splitlines()]
    samples = [s for s in log if "run" not in s]
    assert samples and [r["run"]["rc"] for r in log if "run" in r] == [0]
    report = subprocess.run(tool("bench.big_build", "4x4", str(out), "--report"), env=tool_env(),
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr[-2000:]
    r = json.loads(report.stdout)
    held = sum(f.stat().st_blocks * 512 for f in out.rglob("*") if f.is_file())
    assert r["finished"] and r["samples"] == len(samples)
    assert r["peak_disk_bytes"] == max(s["bytes"] for s in samples) >= held > 0
    assert 0 < r["peak_kinds_bytes"]["table"] <= r["peak_disk_bytes"]


def test_sampled_size_equals_compress_when_it_samples_every_block(t54, tmp_path):
    """``diag.c4z_sampled_size`` encodes blocks as ``compress`` does: sampling every block of
    the 5x4 table (read from the ``.dat``, and decoded from a ``.c4z`` of another block grid)
    gives the block bytes of the file ``compress`` writes, exactly, and a one-in-three sample
    estimates that file's size within its own error bars (five standard errors, at most 5%)."""
    from c4table.c4z.reader import open_c4z
    from c4table.c4z.writer import compress_table
    out = compress_table(t54, tmp_path / "t.c4z", block_entries=4096, quiet=True)
    with open_c4z(out) as z:
        blocks_bytes, nblocks = int(z.offsets[-1] - z.offsets[0]), z.blocks
    other = compress_table(t54, tmp_path / "grid.c4z", block_entries=10_000, level=3, quiet=True)

    def sampled(src, *args):
        run = subprocess.run(tool("diag.c4z_sampled_size", str(src), "--block-entries", "4096",
                                  "--threads", "2", "--json", *args),
                             env=tool_env(), capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        return json.loads(run.stdout)
    for src in (t54, other):
        r = sampled(src, "--every", "1", "--stretch", "5")
        assert (r["sampled_bytes"], r["sampled_blocks"], r["stderr_bytes"]) == (blocks_bytes, nblocks, 0)
        assert abs(r["file_bytes"] - out.stat().st_size) < 0.01 * out.stat().st_size
        assert r["key_bits"] > 0 and r["symbol_bits"] > 0
    r = sampled(t54, "--every", "3", "--stretch", "2")
    assert r["sampled_blocks"] < nblocks and r["stderr_bytes"] > 0
    err = abs(r["file_bytes"] - out.stat().st_size)
    assert err <= min(5 * r["stderr_bytes"], 0.05 * out.stat().st_size), (err, r)
    # format 3 trains dictionaries: the sample trains compress's own, on the same blocks
    v3 = compress_table(t54, tmp_path / "v3.c4z", block_entries=4096, quiet=True,
                        codec="varint-plysym-v3")
    with open_c4z(v3) as z3:
        assert z3.key_dict is not None
        want = int(z3.offsets[-1] - z3.offsets[0])
    r = sampled(other, "--every", "1", "--codec", "varint-plysym-v3")
    assert r["sampled_bytes"] == want and r["symbol_bits"] > 0
    assert abs(r["file_bytes"] - v3.stat().st_size) < 0.01 * v3.stat().st_size


def test_size_model_tool_predicts_the_7x5_build_file_it_never_saw():
    """``diag.c4z_size_model``: every measured board left out and predicted from the others,
    and the 7x5 ``build --format c4z`` file, which no table of the model holds (13,377,241,709
    bytes, docs/measurements/2026-11-29-7x5-fixed-flags.md): within 8% either way, with the
    6x6 sample in format 3's fit or not (when written: +4.1% without, -2.2% with)."""
    for extra in ([], ["--fit-6x6"]):
        run = subprocess.run(tool("diag.c4z_size_model", "--built", "7x5=13377241709", *extra),
                             env=tool_env(), capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        lines = run.stdout.splitlines()
        five = next(ln for ln in lines if ln.startswith("rulekeys-frames-v5, left out"))
        assert "6x6" in five and "5x5" in five
        err = float(re.search(r"built 13,377,241,709: ([-+][0-9.]+)", lines[-1])[1])
        assert abs(err) < 0.08, lines[-1]
