#!/usr/bin/env python3
"""Record finished builds in the package's list of known tables (c4table/data/known_tables.json):
entries, bytes, sha256, md5 and per-ply counts, so `c4table verify` recognises the tables and
checks a manifest's per-ply counts against them.

    python -m tools.diag.record_known tables/6x5 tables/5x6 --note "positions equal Boeck's Table 1"

Everything written here has provenance "built", with the c4table version and today's date
(UTC): a figure from our own build is never called published. A board already known from a
published source keeps its published figures and provenance; only its per-ply counts are added,
marked built (``plies_provenance``). Only boards whose table is finished (manifest with a
`table` record) are written; a board already known with another sha256 is refused unless
--force (which replaces the entry by a built one). The recording is
:func:`c4table.table.known.record_build`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWN = ROOT / "c4table" / "data" / "known_tables.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--note", help="what the build was cross-checked against")
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--md5", help="the raw table's md5 as `c4table verify` printed it (a build "
                    "--format c4z writes no raw file to hash)")
    ap.add_argument("--sha256", help="the raw table's sha256 as `c4table verify --file-hashes` "
                    "printed it (for a build --format c4z whose manifest has none)")
    args = ap.parse_args()
    from c4table.errors import C4Error
    from c4table.table.known import dump_known, record_build
    known = json.loads(KNOWN.read_text())
    for d in args.dirs:
        try:
            print(record_build(d, args.note, known, args.force, args.md5, args.sha256))
        except C4Error as e:
            raise SystemExit(str(e))
    text = dump_known(known)
    assert json.loads(text) == known
    KNOWN.write_text(text)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
