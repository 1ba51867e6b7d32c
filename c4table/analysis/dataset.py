"""Training sets from a table: the per-move labels of table entries (``export --per-move``,
``--planes``) and the Hugging Face layout (``export --hf DIR``).

Design notes: ``docs/modules.md`` (``c4table.analysis.dataset``).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from c4table.errors import TableError
from c4table.analysis.decode import decode_entries
from c4table.analysis.export import _batch, _schema, iter_ply_entries
from c4table.analysis.label import Labeller, decisive_mask, entry_labels, label_fields, with_labels
from c4table.open import open_table
from c4table.table.source import Table

SPLIT_SALT = 0x5EED5A17C4AB1E00
MASK64 = (1 << 64) - 1


def splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 (wrapping arithmetic).

    >>> int(splitmix64(np.array([0], np.uint64))[0])
    0
    """
    z = np.asarray(x, np.uint64).copy()
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def in_test_split(keys: np.ndarray, fraction: float) -> np.ndarray:
    """Rows (by table key) that go to the test split: hash below ``fraction`` of the range."""
    if fraction <= 0:
        return np.zeros(keys.shape[0], np.bool_)
    h = splitmix64(np.asarray(keys, np.uint64) ^ np.uint64(SPLIT_SALT))
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53) < fraction


def _take(lab: dict, sel) -> dict:
    return {k: (v[sel] if isinstance(v, np.ndarray) else v) for k, v in lab.items()}


# ------------------------------------------------------------------------------- HF layout
@dataclass
class HFReport:
    path: Path
    rows: dict
    shards: dict
    entries: int
    seconds: float


class _ShardWriter:
    """Parquet shards of one split, ``rows_per_shard`` rows each, renamed ``-of-NNNNN`` at the end."""

    def __init__(self, data: Path, split: str, schema, rows_per_shard: int):
        self.data, self.split, self.schema, self.per = data, split, schema, rows_per_shard
        self.files: list[Path] = []
        self.writer = None
        self.in_shard = 0
        self.rows = 0
        self.bytes = 0

    def write(self, table) -> None:
        import pyarrow.parquet as pq
        while table.num_rows:
            if self.writer is None:
                p = self.data / f".{self.split}-{len(self.files):05d}.parquet.tmp"
                self.files.append(p)
                self.writer = pq.ParquetWriter(p, self.schema, compression="zstd")
                self.in_shard = 0
            take = min(table.num_rows, self.per - self.in_shard)
            part = table.slice(0, take)
            self.writer.write_table(part)
            self.bytes += part.nbytes
            table = table.slice(take)
            self.in_shard += take
            self.rows += take
            if self.in_shard >= self.per:
                self.writer.close()
                self.writer = None

    def finish(self) -> int:
        if self.writer is not None:
            self.writer.close()
        n = len(self.files)
        for i, p in enumerate(self.files):
            os.replace(p, self.data / f"{self.split}-{i:05d}-of-{n:05d}.parquet")
        return n


def _yaml_feature(field) -> list[str]:
    import pyarrow as pa
    t = field.type
    if pa.types.is_fixed_size_list(t):
        dims = []
        while pa.types.is_fixed_size_list(t):
            dims.append(t.list_size)
            t = t.value_type
        return [f"  - name: {field.name}"] + _yaml_list(t, dims, 4)
    return [f"  - name: {field.name}", f"    dtype: {_dtype(t)}"]


def _yaml_list(leaf, dims, indent) -> list[str]:
    pad = " " * indent
    if len(dims) == 1:
        return [f"{pad}list: {_dtype(leaf)}", f"{pad}length: {dims[0]}"]
    return [f"{pad}list:"] + _yaml_list(leaf, dims[1:], indent + 2) + [f"{pad}length: {dims[0]}"]


def _dtype(t) -> str:
    import pyarrow as pa
    return {pa.bool_(): "bool", pa.string(): "string"}.get(t, str(t))


def dataset_card(board, schema, rows: dict, meta: dict, nbytes: dict | None = None) -> str:
    """``README.md`` of the Hugging Face layout: YAML ``configs`` and ``dataset_info``, then a
    short description of the columns."""
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in rows:
        lines += [f"  - split: {split}", f"    path: data/{split}-*"]
    lines += ["dataset_info:", "  features:"]
    for f in schema:
        lines += _yaml_feature(f)
    lines += ["  splits:"]
    for split, n in rows.items():
        lines += [f"  - name: {split}", f"    num_bytes: {(nbytes or {}).get(split, 0)}",
                  f"    num_examples: {n}"]
    lines += ["---", "", f"# Connect-4 {board.name}: perfect-play labels", "",
              f"Every row is a position of the {board.width}x{board.height} board (k = {board.k}) "
              "labelled from a complete lookup table in Sidney Cadot's format, exported by "
              "c4table (`c4table export --hf`).", "",
              "* cells `a1..`: column letter from the left, row number from the bottom; "
              "0 empty, 1 A (first player), 2 B", "* `ply`, `moves` (one move order, 1-based "
              "columns), `outcome` (A, B, draw), `distance` (plies to it), `terminal`, `key` "
              "(shared with the mirror image)",
              "* `value` (+1/0/-1) and `score` (Pascal Pons' convention: for the side to move, "
              "larger the sooner it wins) of the position; `move_scores` (-1000: column cannot be "
              "played), `move_distance` (255: cannot be played), `legal_mask`, `best_mask` per column",
              "", "Split: a hash of `key` (a position and its mirror image share a split).", "",
              "```json", json.dumps(meta, indent=1), "```", ""]
    return "\n".join(lines)


def export_hf(table, out_dir: str | os.PathLike, *, ply: int | None = None, test: float = 0.0,
              rows_per_shard: int = 500_000, decisive: bool = False, sample: int | None = None,
              seed: int = 0, planes: str | None = None, nonterminal: bool = False,
              mirror: bool = False, chunk_entries: int = 1 << 18, quiet: bool = True,
              stream=None) -> HFReport:
    """Write the Hugging Face layout (docs/modules.md) of ``table``'s positions with the
    per-move labels into ``out_dir`` (which must not hold a dataset already)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    own = not isinstance(table, Table)
    t = open_table(table) if own else table
    stream = stream or sys.stderr
    try:
        b = t.board
        if not b.supports("per_move"):
            raise TableError(f"board {b}: --hf writes 2D boards (its per-move labels)")
        out = Path(out_dir)
        data = out / "data"
        if data.exists() and any(data.iterdir()):
            raise TableError(f"{out}: already holds a dataset (data/ is not empty)")
        data.mkdir(parents=True, exist_ok=True)
        meta = {"board": b.name, "table": str(t.path), "root": t.root.moves if t.root else None,
                "ply": "all" if ply is None else ply, "test": test, "decisive": decisive,
                "sample": sample, "seed": seed, "planes": planes, "nonterminal": nonterminal,
                "mirror": mirror}
        base = _schema(b, mirror, {})
        schema = base
        for f in label_fields(b, planes):
            schema = schema.append(f)
        schema = schema.with_metadata({"c4table": json.dumps(meta)})
        splits = {"train": _ShardWriter(data, "train", schema, rows_per_shard)}
        if test > 0:
            splits["test"] = _ShardWriter(data, "test", schema, rows_per_shard)
        lab_ = Labeller(t)
        kept = None      # --sample: the candidate rows, with their hash
        entries = 0
        t0 = last = time.perf_counter()
        for keys, outs, _ in iter_ply_entries(t, ply, chunk_entries):
            entries += keys.shape[0]
            codes, plies, term, sym = decode_entries(b, keys)
            lab = entry_labels(lab_, keys, outs, codes, plies, term, planes)
            keep = np.ones(keys.shape[0], np.bool_)
            if nonterminal:
                keep &= ~term
            if decisive:
                keep &= decisive_mask(lab)
            sel = np.flatnonzero(keep)
            if not sel.size:
                continue
            keys, outs, codes, plies, term, sym = (keys[sel], outs[sel], codes[sel], plies[sel],
                                                  term[sel], sym[sel])
            lab = _take(lab, sel)
            parts = [(with_labels(_batch(b, base, keys, outs, codes, plies, term, False if mirror else None),
                                  lab, b, planes, False if mirror else None), keys, False)]
            if mirror and (~sym).any():
                a = np.flatnonzero(~sym)
                parts.append((with_labels(_batch(b, base, keys[a], outs[a], codes[a], plies[a], term[a], True),
                                          _take(lab, a), b, planes, True), keys[a], True))
            for tbl, k, mir in parts:
                tbl = tbl.cast(schema)
                if sample is not None:
                    h = splitmix64(k ^ splitmix64(np.full(k.shape[0], seed, np.uint64) + np.uint64(1)))
                    h = h ^ np.uint64(1 if mir else 0)
                    tbl = tbl.append_column("__h", pa.array(h, pa.uint64()))
                    kept = tbl if kept is None else pa.concat_tables([kept, tbl])
                    if kept.num_rows > 2 * sample + chunk_entries:
                        kept = kept.take(pc.sort_indices(kept, [("__h", "ascending")])[:sample])
                    continue
                _route(splits, tbl, k, test)
            now = time.perf_counter()
            if not quiet and now - last >= 2.0:
                last = now
                print(f"[export --hf] {entries:,} entries of {len(t):,} read, "
                      f"{sum(s.rows for s in splits.values()):,} rows", file=stream, flush=True)
        if kept is not None:
            kept = kept.take(pc.sort_indices(kept, [("__h", "ascending")])[:sample])
            keys = kept.column("key").to_numpy()
            _route(splits, kept.drop_columns(["__h"]), keys, test)
        shards = {name: s.finish() for name, s in splits.items()}
        rows = {name: s.rows for name, s in splits.items()}
        (out / "README.md").write_text(dataset_card(b, schema, rows, meta,
                                                        {name: s.bytes for name, s in splits.items()}))
        return HFReport(out, rows, shards, entries, time.perf_counter() - t0)
    finally:
        if "lab_" in locals():
            lab_.close()
        if own:
            t.close()


def _route(splits: dict, tbl, keys: np.ndarray, test: float) -> None:
    """Write the rows of ``tbl`` to their split (by the hash of their key)."""
    import pyarrow as pa
    if "test" not in splits:
        splits["train"].write(tbl)
        return
    m = in_test_split(keys, test)
    splits["test"].write(tbl.filter(pa.array(m)))
    splits["train"].write(tbl.filter(pa.array(~m)))

