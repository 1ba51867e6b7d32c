"""The README and docs/ stay true: their shape (README length, its first commands, every page
linked, no history wording in a guide) and their examples, which run here.

A checked example is a fenced ``console`` block: each line starting with ``$ `` is a command
(run by bash, with the ``c4table`` script installed beside this interpreter first on the
PATH), and the lines up to the next command are what it prints: its stdout, then its stderr.
``...`` in the expected text stands for anything (``doctest.ELLIPSIS``): timings, or lines
left out. A fenced ``pycon`` block is a doctest (``>>>`` lines, ELLIPSIS), run in the same
directory. Blocks of other kinds (``sh``, ``python``, plain) are not run.

The commands run in one directory per test session holding ``tables/5x4``, ``tables/4x4``,
``tables/4x4k3`` (connect 3) and ``tables/7x6_root-66362117563257723363`` (a rooted 7x6 table
of 4.1 M entries), built once; the blocks of one page run in order, in that directory.
"""
from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ROOTED = "66362117563257723363"


def doc_pages() -> list[Path]:
    """Every markdown page of docs/, measurement files included."""
    return sorted(DOCS.rglob("*.md"))


def all_pages() -> list[Path]:
    return [README, *doc_pages()]


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


# ------------------------------------------------------------------------------ shape
def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 300, f"README.md has {n} lines (at most 300)"


def test_readme_starts_with_the_two_commands():
    """The first block of the README sets up (builds a small table and queries it) and tests;
    CI runs the test command written there, ``make test``."""
    text = README.read_text(encoding="utf-8")
    m = re.search(r"```\w*\n(.*?)```", text, re.S)
    assert m and text[:m.start()].strip().startswith("# "), "README must open with a code block"
    lines = [ln.split("#")[0].strip() for ln in m.group(1).splitlines() if ln.strip()]
    assert len(lines) == 2, lines
    assert lines[0].startswith("make table") and "c4table lookup" in lines[0], lines[0]
    assert lines[1] == "make test", lines[1]


def _links(page: Path) -> set[Path]:
    """Local pages a markdown page links to, resolved (anchors dropped)."""
    out = set()
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        out.add(path)
    return out


def test_every_docs_page_is_linked():
    """Each page under docs/, measurement files included, is linked from README.md or
    docs/index.md."""
    linked = _links(README) | _links(DOCS / "index.md")
    missing = [_rel(p) for p in doc_pages()
               if p.resolve() not in linked and p != DOCS / "index.md"]
    assert not missing, f"not linked from README.md or docs/index.md: {missing}"


def test_links_resolve():
    broken = [(_rel(p), str(t)) for p in all_pages() for t in _links(p) if not t.exists()]
    assert not broken, broken


def test_named_files_exist():
    """Files of the repository that README.md and the guides name (``c4table/...py``,
    ``tools/...py``, ...) exist: a module that moves takes its docs along. Measurement files
    are records of their day and keep the names of then."""
    guides = [README, *[p for p in doc_pages() if "measurements" not in p.parts]]
    pattern = re.compile(r"\b(?:c4table|pipeline|tools|tests)/[\w/]+\.(?:py|json|tsv)\b")
    missing = [f"{_rel(p)}: {name}" for p in guides
               for name in sorted(set(pattern.findall(p.read_text(encoding="utf-8"))))
               if not (ROOT / name).exists()]
    assert not missing, missing


HISTORY = re.compile(r"issue \d+|session", re.I)


def test_no_history_wording():
    """Guides say how things are; measurement files what was measured. Neither speaks of
    issue numbers or sessions."""
    bad = [f"{_rel(p)}:{i}: {ln.strip()}" for p in [*all_pages(), ROOT / "CHANGELOG.md"]
           for i, ln in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
           if HISTORY.search(ln)]
    assert not bad, "\n".join(bad)


def test_every_setting_is_documented():
    """Each C4TABLE_* variable read by the code has its own section in docs/settings.md."""
    names = set()
    for d in ("c4table", "pipeline"):
        for f in (ROOT / d).rglob("*.py"):
            names |= set(re.findall(r"\bC4TABLE_[A-Z_]+[A-Z]\b", f.read_text(encoding="utf-8")))
    assert names, "no C4TABLE_ variable found"
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    headed = set(re.findall(r"^## (C4TABLE_[A-Z_]+)\s*$", text, re.M))
    assert not names - headed, f"undocumented: {sorted(names - headed)}"


def test_measurement_files_are_dated():
    files = sorted((DOCS / "measurements").glob("*.md"))
    assert files
    for f in files:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", f.name), f.name


# ------------------------------------------------------------------------------ examples
def fenced(page: Path, kind: str) -> list[tuple[int, list[str]]]:
    """The fenced blocks of one kind (```kind) of a page: (line number, lines)."""
    blocks = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```" + kind:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((start, body))
        i += 1
    return blocks


def console_blocks(page: Path) -> list[tuple[int, list[tuple[str, str]]]]:
    """The ``console`` blocks of a page: (line number, [(command, expected output), ...])."""
    blocks = []
    for start, body in fenced(page, "console"):
        steps: list[tuple[str, list[str]]] = []
        for ln in body:
            if ln.startswith("$ "):
                steps.append((ln[2:], []))
            else:
                assert steps, f"{_rel(page)}:{start}: output before the first command"
                steps[-1][1].append(ln)
        blocks.append((start, [(c, "\n".join(o)) for c, o in steps]))
    return blocks


PAGES_WITH_EXAMPLES = [p for p in all_pages() if console_blocks(p)]
PAGES_WITH_PYCON = [p for p in all_pages() if fenced(p, "pycon")]


@pytest.fixture(scope="session")
def docs_dir(tmp_path_factory, built):
    """The directory the examples run in: ``tables/5x4`` and ``tables/4x4`` (the session's
    shared builds, linked), ``tables/4x4k3`` and the rooted 7x6 table, built here once."""
    from c4table import build_table
    d = tmp_path_factory.mktemp("docs")
    tables = d / "tables"
    tables.mkdir()
    for board in ("5x4", "4x4"):
        (tables / board).symlink_to(built(board), target_is_directory=True)
    build_table("4x4k3", tables / "4x4k3", quiet=True, workers=1)
    build_table("7x6", tables / f"7x6_root-{ROOTED}", quiet=True, workers=2, root=ROOTED)
    return d


def _checker_matches(expected: str, got: str) -> bool:
    norm = lambda s: "\n".join(ln.rstrip() for ln in s.strip("\n").splitlines()) + "\n"  # noqa: E731
    return doctest.OutputChecker().check_output(norm(expected), norm(got), doctest.ELLIPSIS)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=_rel)
def test_examples(page, docs_dir):
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "C4TABLE_TABLE"}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "100"
    assert (Path(bindir) / "c4table").exists(), f"no c4table script beside {sys.executable}"
    failures = []
    for line, steps in console_blocks(page):
        for cmd, expected in steps:
            p = subprocess.run(["bash", "-c", cmd], cwd=docs_dir, env=env, capture_output=True,
                               text=True, timeout=300)
            got = p.stdout + p.stderr
            if not _checker_matches(expected, got):
                failures.append(f"{_rel(page)}, block at line {line}: $ {cmd}\n"
                                f"--- expected\n{expected}\n--- got (exit {p.returncode})\n{got}")
    assert not failures, "\n\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES_WITH_PYCON, ids=_rel)
def test_python_examples(page, docs_dir, monkeypatch):
    """The ``pycon`` blocks of a page, as one doctest per block (names carry over)."""
    monkeypatch.chdir(docs_dir)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs: dict = {}
    failures: list[str] = []
    for line, body in fenced(page, "pycon"):
        test = parser.get_doctest("\n".join(body) + "\n", globs, f"{_rel(page)}:{line}",
                                  str(page), line)
        runner.run(test, out=failures.append, clear_globs=False)
        globs.update(test.globs)   # names carry over to the next block
    assert not runner.failures, "".join(failures)


def test_readme_examples_use_tables_its_steps_build():
    """A reader who follows the README top to bottom has each table a console example uses:
    5x4 from ``make table`` (the first block), any other from an earlier ``make table BOARD=``
    or ``c4table build B --out tables/B``."""
    text = README.read_text(encoding="utf-8")
    made = {"5x4"}
    for block in re.finditer(r"```(\w*)\n(.*?)```", text, re.S):
        kind, body = block.groups()
        if kind == "console":
            for cmd in (ln[2:] for ln in body.splitlines() if ln.startswith("$ ")):
                for board in re.findall(r"tables/([0-9xk]+)/", cmd):
                    assert board in made, f"README uses tables/{board} before a step builds it: {cmd}"
        made |= set(re.findall(r"make table BOARD=([0-9xk]+)", body))
        made |= set(re.findall(r"c4table build ([0-9xk]+) [^\n#]*--out tables/\1\b", body))


def test_readme_7x6_figures_are_what_plan_prints():
    """The README's 7x6 storage and core-hours are those ``c4table plan 7x6`` prints (its
    core-hours within the README's range)."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    m = re.search(r"`c4table plan 7x6` says what 7x6 would take: ([\d.]+ TiB) peak storage and "
                  r"about (\d+)-(\d+) core-hours", text)
    assert m, "README's sentence on plan 7x6 changed: update this test with it"
    bindir = Path(sys.executable).parent
    p = subprocess.run([str(bindir / "c4table"), "plan", "7x6"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert re.search(rf"^peak disk\s+{re.escape(m.group(1))}$", p.stdout, re.M), p.stdout
    h, mins = re.search(r"^compute\s+(\d+)h(\d+)m of one core", p.stdout, re.M).groups()
    assert int(m.group(2)) <= int(h) + int(mins) / 60 <= int(m.group(3)), (h, mins)


def test_makefile_and_readme_agree_on_the_test_time():
    readme = re.search(r"make test\s+# the test suite \(about (\d+) minutes", README.read_text()).group(1)
    make = re.search(r"make test\s+the whole suite.*?about (\d+) minutes", (ROOT / "Makefile").read_text())
    assert make and make.group(1) == readme
