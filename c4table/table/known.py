"""The tables whose figures we know: Cadot's published 7x6 and 6x5 hashes, the 4x4 one, and
boards built here (``c4table/data/known_tables.json``), each with where its figures come from.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources


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
