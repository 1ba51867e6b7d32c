"""The tables whose figures we know: Cadot's published 7x6 and 6x5 hashes, the 4x4 one, and
boards built here (``c4table/data/known_tables.json``), each with where its figures come from;
the tree hash (``sha256_tree``, :mod:`c4table.io.treehash`) of every table computed here, with
its own ``tree_provenance``.
"""
from __future__ import annotations

import datetime
import json
import re
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path

from c4table.errors import TableError
from c4table.builddir.reader import BuildDir
from c4table.io.hashes import Hashes
from c4table.io.treehash import FIELD as TREE

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
                 md5: str | None = None, sha256: str | None = None) -> str:
    """Record the finished build in ``build_dir`` in ``known`` (a copy of :func:`known_tables`,
    changed in place); return a one-line summary. Its figures are marked built (version, date):
    a build's figure is never called published. A board known from a published source keeps
    its figures and provenance and gains the built per-ply counts and tree hash
    (``sha256_tree``, with its own ``tree_provenance``); a board known with another sha256 (or
    tree hash) is a :class:`TableError` unless ``force`` (which replaces it by a built entry).
    The sha256 and md5 are the manifest's, else ``sha256`` and ``md5`` (what ``c4table verify
    --sha256 --md5`` printed for a ``.c4z`` build, which writes no raw file), else hashed from
    the raw table file; a ``.c4z`` build with none of these is recorded without them."""
    build_dir = Path(build_dir)
    bd = BuildDir.load(build_dir)   # checked: a damaged manifest is refused
    table = bd.table
    if table is None:
        raise TableError(f"{build_dir}: no finished table in the manifest")
    board = bd.board.name
    old = known.get(board, {})
    raw = build_dir / table.file
    sha256, md5 = table.sha256 or sha256, table.md5 or md5
    if (sha256 is None or md5 is None) and raw.exists():
        digests = _file_hashes(raw)
        sha256, md5 = sha256 or digests["sha256"], md5 or digests["md5"]
    tree = table.sha256_tree
    pairs = [(old.get(k), mine) for k, mine in (("sha256", sha256), (TREE, tree))
             if old.get(k) and mine]
    same = bool(pairs) and all(a == b for a, b in pairs)
    if old and not same and not force:
        if not pairs:
            raise TableError(f"{board}: the build has no hash the known entry has (give its "
                             "sha256 as c4table verify --file-hashes printed it)")
        a, b = next(p for p in pairs if p[0] != p[1])
        raise TableError(f"{board}: known hash {a} differs from {b} (use --force)")
    built = {"provenance": "built", "c4table_version": c4table_version(),
             "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat()}
    if same and old.get("provenance") == "published":
        entry = dict(old)                    # the published figures stay as they are
    else:
        entry = {**built, **({"note": note} if note else {}),
                 "entries": table.entries, "bytes": table.bytes,
                 **({"sha256": sha256} if sha256 else {}), **({"md5": md5} if md5 else {})}
        if same:                             # keep what an earlier record said beyond the figures
            entry = {**{k: v for k, v in old.items() if k not in entry}, **entry}
    if tree:
        entry[TREE] = tree
        entry["tree_provenance"] = built
    entry["plies_provenance"] = built
    entry["ply_fields"] = list(PLY_FIELDS)
    entry["plies"] = [[p.count(f) for f in PLY_FIELDS] for p in bd.plies]
    known[board] = entry
    return (f"{board}: {table.entries:,} entries, {len(bd.plies)} plies recorded "
            f"({entry['provenance']} figures, built per-ply counts)")


def _file_hashes(path: Path) -> dict:
    """sha256 and md5 of a local file."""
    h = Hashes(tree=False)
    with open(path, "rb") as f:
        while b := f.read(1 << 24):
            h.update(b)
    return h.result()


def dump_known(known: dict) -> str:
    """``known`` as the JSON of ``known_tables.json``: one ply per line."""
    text = json.dumps(known, indent=1)
    text = re.sub(r"\[\n\s+([\d,\s]+?)\n\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    return re.sub(r'"ply_fields": \[\n\s+([^\]]+?)\n\s+\]',
                  lambda m: '"ply_fields": [' + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                  text) + "\n"
