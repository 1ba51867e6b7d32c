"""The tables whose figures we know: Cadot's published 7x6 and 6x5 hashes, the 4x4 one, and
boards built here (``c4table/data/known_tables.json``), each with where its figures come from.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import re
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path

from c4table.errors import TableError
from c4table.builddir.reader import BuildDir

PLY_FIELDS = ("positions", "terminal", "a_wins", "draws", "b_wins")


@lru_cache(maxsize=None)
def known_tables() -> dict[str, dict]:
    """Board name -> reference figures (entries, bytes, sha256, md5, ...) and their provenance:
    ``"provenance": "published"`` with the ``source`` (document, section), or ``"built"`` with the
    ``c4table_version`` and ``date`` of the build they were recorded from. Per-ply counts
    (``ply_fields``, ``plies``) carry their own ``plies_provenance``.

    >>> known_tables()["7x6"]["provenance"], known_tables()["7x6"]["entries"]
    ('published', 2265994664313)
    """
    text = resources.files("c4table").joinpath("data/known_tables.json").read_text()
    return json.loads(text)


def provenance(ref: dict) -> str:
    """A short label saying where a known table's figures come from.

    >>> provenance({"provenance": "built", "c4table_version": "0.1.0", "date": "2026-11-21"})
    'built by c4table 0.1.0 on 2026-11-21'
    """
    if ref.get("provenance") == "published":
        return f"published: {ref.get('cite') or ref.get('source', '?')}"
    if ref.get("provenance") == "built":
        return f"built by c4table {ref.get('c4table_version', '?')} on {ref.get('date', '?')}"
    return ref.get("source", "reference")


def c4table_version() -> str:
    """The installed c4table's version (what a recorded build was built with)."""
    try:
        return metadata.version("c4table")
    except metadata.PackageNotFoundError:
        return "unknown"


def record_build(build_dir: Path, note: str | None, known: dict, force: bool = False,
                 md5: str | None = None) -> str:
    """Record the finished build in ``build_dir`` in ``known`` (a copy of :func:`known_tables`,
    changed in place); return a one-line summary. Its figures are marked built (version, date):
    a build's figure is never called published. A board known from a published source keeps
    its figures and provenance and gains the built per-ply counts; a board known with another
    sha256 is a :class:`TableError` unless ``force`` (which replaces it by a built entry).
    The md5 is the manifest's, else ``md5`` (what ``c4table verify`` printed for a ``.c4z``
    build, which writes no raw file), else hashed from the raw table file; a ``.c4z`` build
    with none of these is recorded without one."""
    build_dir = Path(build_dir)
    bd = BuildDir.load(build_dir)   # checked: a damaged manifest is refused
    table = bd.table
    if table is None:
        raise TableError(f"{build_dir}: no finished table in the manifest")
    board = bd.board.name
    old = known.get(board, {})
    same = old.get("sha256") == table.sha256
    if old and not same and not force:
        raise TableError(f"{board}: known sha256 {old.get('sha256')} differs from {table.sha256} (use --force)")
    built = {"provenance": "built", "c4table_version": c4table_version(),
             "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat()}
    if same and old.get("provenance") == "published":
        entry = dict(old)                    # the published figures stay as they are
    else:
        raw = build_dir / table.file
        md5 = table.md5 or md5 or (_md5(raw) if table.format.raw or raw.exists() else None)
        entry = {**built, **({"note": note} if note else {}),
                 "entries": table.entries, "bytes": table.bytes, "sha256": table.sha256,
                 **({"md5": md5} if md5 else {})}
        if same:                             # keep what an earlier record said beyond the figures
            entry = {**{k: v for k, v in old.items() if k not in entry}, **entry}
    entry["plies_provenance"] = built
    entry["ply_fields"] = list(PLY_FIELDS)
    entry["plies"] = [[p.count(f) for f in PLY_FIELDS] for p in bd.plies]
    known[board] = entry
    return (f"{board}: {table.entries:,} entries, {len(bd.plies)} plies recorded "
            f"({entry['provenance']} figures, built per-ply counts)")


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while b := f.read(1 << 24):
            h.update(b)
    return h.hexdigest()


def dump_known(known: dict) -> str:
    """``known`` as the JSON of ``known_tables.json``: one ply per line."""
    text = json.dumps(known, indent=1)
    text = re.sub(r"\[\n\s+([\d,\s]+?)\n\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    return re.sub(r'"ply_fields": \[\n\s+([^\]]+?)\n\s+\]',
                  lambda m: '"ply_fields": [' + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                  text) + "\n"
