#!/usr/bin/env python3
"""Record finished builds in the package's list of known tables (c4table/data/known_tables.json):
entries, bytes, sha256, md5 and per-ply counts, so `c4table verify` recognises the tables and
checks a manifest's per-ply counts against them.

    python tools/diag/record_known.py tables/6x5 tables/5x6 --note "positions equal Boeck's Table 1"

Everything written here has provenance "built", with the c4table version and today's date
(UTC): a figure from our own build is never called published. A board already known from a
published source keeps its published figures and provenance; only its per-ply counts are added,
marked built (``plies_provenance``). Only boards whose table is finished (manifest with a
`table` record) are written; a board already known with another sha256 is refused unless
--force (which replaces the entry by a built one).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KNOWN = ROOT / "c4table" / "data" / "known_tables.json"
PLY_FIELDS = ("positions", "terminal", "a_wins", "draws", "b_wins")


def c4table_version() -> str:
    """The version in pyproject.toml (the tree whose build is recorded)."""
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    return m.group(1) if m else "unknown"


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while b := f.read(1 << 24):
            h.update(b)
    return h.hexdigest()


def record(build_dir: Path, note: str | None, known: dict, force: bool) -> str:
    m = json.loads((build_dir / "manifest.json").read_text())
    table = m.get("table")
    if not table:
        raise SystemExit(f"{build_dir}: no finished table in the manifest")
    board = m["board"]
    old = known.get(board, {})
    same = old.get("sha256") == table["sha256"]
    if old and not same and not force:
        raise SystemExit(f"{board}: known sha256 {old.get('sha256')} differs from {table['sha256']} (use --force)")
    built = {"provenance": "built", "c4table_version": c4table_version(),
             "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat()}
    if same and old.get("provenance") == "published":
        entry = dict(old)                    # the published figures stay as they are
    else:
        md5 = table.get("md5") or _md5(build_dir / table["file"])   # builds record it on request
        entry = {**built, **({"note": note} if note else {}),
                 **{k: table[k] for k in ("entries", "bytes", "sha256")}, "md5": md5}
        if same:                             # keep what an earlier record said beyond the figures
            entry = {**{k: v for k, v in old.items() if k not in entry}, **entry}
    entry["plies_provenance"] = built
    entry["ply_fields"] = list(PLY_FIELDS)
    entry["plies"] = [[p[f] for f in PLY_FIELDS] for p in m["plies"]]
    known[board] = entry
    return (f"{board}: {table['entries']:,} entries, {len(m['plies'])} plies recorded "
            f"({entry['provenance']} figures, built per-ply counts)")


def dump(known: dict) -> str:
    """JSON with one ply per line."""
    text = json.dumps(known, indent=1)
    text = re.sub(r"\[\n\s+([\d,\s]+?)\n\s+\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    return re.sub(r'"ply_fields": \[\n\s+([^\]]+?)\n\s+\]',
                  lambda m: '"ply_fields": [' + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
                  text) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--note", help="what the build was cross-checked against")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    known = json.loads(KNOWN.read_text())
    for d in args.dirs:
        print(record(d, args.note, known, args.force))
    text = dump(known)
    assert json.loads(text) == known
    KNOWN.write_text(text)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
