#!/usr/bin/env python3
"""Record finished builds in the package's list of known tables (c4table/data/known_tables.json):
entries, bytes, sha256, md5 and per-ply counts, so `c4table verify` recognises the tables and
checks a manifest's per-ply counts against them.

    python tools/record_known.py tables/6x5 tables/5x6 --source "c4table build; ..."

Only boards whose table is finished (manifest with a `table` record) are written; a board that
is already known with another sha256 is refused unless --force.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KNOWN = Path(__file__).resolve().parents[1] / "c4table" / "data" / "known_tables.json"
PLY_FIELDS = ("positions", "terminal", "a_wins", "draws", "b_wins")


def record(build_dir: Path, source: str, known: dict, force: bool) -> str:
    m = json.loads((build_dir / "manifest.json").read_text())
    table = m.get("table")
    if not table:
        raise SystemExit(f"{build_dir}: no finished table in the manifest")
    board = m["board"]
    old = known.get(board, {})
    if old.get("sha256") not in (None, table["sha256"]) and not force:
        raise SystemExit(f"{board}: known sha256 {old['sha256']} differs from {table['sha256']} (use --force)")
    entry = {k: table[k] for k in ("entries", "bytes", "sha256", "md5")}
    entry["source"] = old.get("source", source) if old.get("sha256") == table["sha256"] else source
    entry["ply_fields"] = list(PLY_FIELDS)
    entry["plies"] = [[p[f] for f in PLY_FIELDS] for p in m["plies"]]
    known[board] = {**old, **entry}
    return f"{board}: {table['entries']:,} entries, {len(m['plies'])} plies recorded"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--source", default="c4table build")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    known = json.loads(KNOWN.read_text())
    for d in args.dirs:
        print(record(d, args.source, known, args.force))
    KNOWN.write_text(json.dumps(known, indent=1) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
