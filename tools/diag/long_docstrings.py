"""List the docstrings of at least N lines (default 12) in c4table/ and pipeline/: modules,
classes and functions, longest first, then their count. The project keeps docstrings to what
and why in a few lines; design notes go to docs/modules.md. ``--prose`` leaves the examples
(doctests: a ``>>>`` line to the next blank line) out of the count.

    python -m tools.diag.long_docstrings [--min 12] [--prose] [--count] [PATH ...]
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def prose_lines(doc: str) -> int:
    """Lines of ``doc`` outside its examples (a ``>>>`` line up to the next blank line)."""
    n, example = 0, False
    for line in doc.split("\n"):
        s = line.strip()
        example = s.startswith(">>>") or (example and s != "")
        n += not example
    return n


def long_docstrings(paths: list[Path], least: int, prose: bool = False) -> list[tuple[int, str, str]]:
    """(lines, file, name) of each docstring of at least ``least`` lines under ``paths``
    (``prose``: lines outside the examples)."""
    out = []
    for base in paths:
        for f in sorted(base.rglob("*.py")) if base.is_dir() else [base]:
            tree = ast.parse(f.read_text(encoding="utf-8"))
            nodes = [tree] + [n for n in ast.walk(tree) if isinstance(
                n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
            for n in nodes:
                doc = ast.get_docstring(n, clean=False)
                if doc is None:
                    continue
                lines = prose_lines(doc) if prose else doc.count("\n") + 1
                if lines >= least:
                    name = getattr(n, "name", "<module>")
                    out.append((lines, str(f.relative_to(ROOT) if f.is_relative_to(ROOT) else f), name))
    return sorted(out, key=lambda r: (-r[0], r[1], r[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", type=Path, help="files or folders (default: c4table/ and pipeline/)")
    ap.add_argument("--min", type=int, default=12, dest="least", help="the least lines counted (default 12)")
    ap.add_argument("--prose", action="store_true", help="leave the examples (doctests) out")
    ap.add_argument("--count", action="store_true", help="print the count alone")
    a = ap.parse_args()
    rows = long_docstrings(a.paths or [ROOT / "c4table", ROOT / "pipeline"], a.least, a.prose)
    if not a.count:
        for lines, f, name in rows:
            print(f"{lines:4d}  {f}  {name}")
    print(len(rows))


if __name__ == "__main__":
    main()
