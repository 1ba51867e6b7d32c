"""Labelling positions a user has: the value, Pons' score and per-move labels of each move
string, from any table c4table reads (``.dat``, ``.c4z`` local or remote, rooted tables).

Whole arrays at a time: one numba kernel replays the move strings, one sorted search looks the
keys up, :func:`c4table.analysis.pons.label_kernel` makes the labels; a row the kernels do not
take alone goes through :meth:`Table.probe` (its answer, or the message of its ``error``
column). The columns and the design: ``docs/modules.md`` (``c4table.analysis.label``).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from c4table.errors import C4Error, InputError, TableError
from c4table.table.fastprobe import NO_KEY, OVER, SLOW, replay
from c4table.table.search import search_packed, search_sorted
from c4table.table.sums import check_rows
from c4table.analysis.pons import label_arrays
from c4table.analysis.decode import cells_of_codes
from c4table.open import open_table
from c4table.table.dat import DatTable
from c4table.table.source import Table

PLANES = ("pettingzoo", "openspiel")
CHUNK = 1 << 18
PROGRESS_EVERY = 2.0


@njit(cache=True)
def grid_kernel(cols, offsets, rows, w, h, grid):
    """``grid[j, c, r]`` (0 empty, 1 A, 2 B; ``r`` from the bottom) of move string ``rows[j]``."""
    heights = np.empty(w, np.int64)
    for j in range(rows.shape[0]):
        i = rows[j]
        for c in range(w):
            heights[c] = 0
            for r in range(h):
                grid[j, c, r] = 0
        p = 0
        for t in range(offsets[i], offsets[i + 1]):
            c = cols[t]
            grid[j, c, heights[c]] = 1 + p % 2
            heights[c] += 1
            p += 1


def observation_planes(grid: np.ndarray, plies: np.ndarray, kind: str) -> np.ndarray:
    """Boards ``grid`` (n, W, H; 0 empty, 1 A, 2 B, row 0 at the bottom) in a library's layout,
    for the side to move (A at even plies):

    * ``"pettingzoo"`` (``connect_four_v3``'s ``observation``): shape (n, H, W, 2); row 0 is the
      **top** row; plane 0 the side to move's chips, plane 1 the opponent's.
    * ``"openspiel"`` (``connect_four``'s ``observation_tensor``, reshaped to its
      ``observation_tensor_shape`` [3, H, W]): shape (n, 3, H, W); row 0 is the **bottom** row;
      plane 0 A's chips (player 0, ``x``), plane 1 B's (player 1, ``o``), plane 2 the empty
      cells, whoever is to move (OpenSpiel's tensor does not depend on the player).
    """
    g = np.asarray(grid)
    if kind == "pettingzoo":
        mover = (1 + plies % 2).astype(np.uint8)[:, None, None]
        other = 3 - mover
        top = g.transpose(0, 2, 1)[:, ::-1, :]          # (n, H, W), row 0 the top
        return np.stack([top == mover, top == other], axis=-1).astype(np.uint8)
    if kind == "openspiel":
        rows = g.transpose(0, 2, 1)                      # (n, H, W), row 0 the bottom
        return np.stack([rows == 1, rows == 2, rows == 0], axis=1).astype(np.uint8)
    raise ValueError(f"planes {kind!r}: one of {', '.join(PLANES)}")


# ------------------------------------------------------------------------------ engine
class Labeller:
    """Labels of move strings from one table (any :class:`~c4table.table.Table`)."""

    def __init__(self, table, planes: str | None = None):
        b = table.board
        if planes is not None and planes not in PLANES:
            raise ValueError(f"planes {planes!r}: one of {', '.join(PLANES)}")
        if planes is not None and not b.supports("planes"):
            raise TableError(f"board {b}: observation planes are for 2D boards")
        self.table, self.board, self.planes = table, b, planes
        self.fast = b.width <= 9 and b.supports("per_move")
        self.data = None
        if self.fast and isinstance(table, DatTable):
            self.data = table.entries_array().view(np.uint8)   # searched with the table's guard
            self.guard = table.guard
        self.args = (b.width, b.height, b.stride, b.k, b.cells, b.code_of[(0,) * b.height],
                     b.child_code, b.powers) if self.fast else None

    def close(self) -> None:
        """Let go of the view of the table's file (before the table is closed)."""
        self.data = None

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Outcome byte of each key (int64): -1 for ``NO_KEY``, -2 absent."""
        if self.data is not None and self.board.key_limit <= (1 << 48):
            out = np.empty(keys.shape[0], np.int64)
            search_packed(self.data, self.table.entries, self.board.entry_size, self.board.key_bytes,
                          np.ascontiguousarray(keys, np.uint64), out, 1 << 16, *self.guard.args())
            self.guard.raise_found(self.data)
            return out
        order = np.argsort(keys)
        sk = keys[order]
        res = np.empty(sk.shape[0], np.int64)
        if self.data is not None:
            search_sorted(self.data, self.table.entries, self.board.entry_size, self.board.key_bytes,
                          sk, res, *self.guard.args())
            self.guard.raise_found(self.data)
        else:
            real = sk != NO_KEY
            res[:] = -1
            if real.any():
                got = self.table.probe_keys(sk[real], default=-2)
                res[real] = got
        out = np.empty_like(res)
        out[order] = res
        return out

    def label(self, cols: np.ndarray, offsets: np.ndarray, text) -> dict:
        """Labels of the move strings ``cols[offsets[i]:offsets[i+1]]`` (0-based columns, int64);
        ``text(i)`` gives row ``i``'s original text for the slow path. Returns the arrays of
        :func:`c4table.analysis.pons.label_arrays` plus ``ply``, ``terminal``, ``error`` (a list: None or
        the message) and ``obs`` when planes are asked for."""
        b = self.board
        w = b.width
        n = offsets.shape[0] - 1
        found = np.full((n, w + 1), -1, np.int64)
        plies = np.zeros(n, np.int64)
        status = np.full(n, SLOW, np.int64)
        if self.fast and n:
            keys = np.empty(n * (w + 1), np.uint64)
            replay(cols, offsets, *self.args, keys, plies, status)
            found = self.lookup(keys).reshape(n, w + 1)
            check_rows(self.table.path, b, found, plies)   # a byte its ply cannot have
        slow = np.flatnonzero((status == SLOW) | (found[:, 0] < 0))
        errors: list = [None] * n if slow.size else None
        slow_pos = {}
        for i in slow.tolist():
            src = text(i)
            if src is None:
                errors[i] = "no move string (a null)"
                found[i] = -1
                continue
            try:
                pos = self.table.position(src)
                probe = self.table.probe(pos)
            except C4Error as e:
                errors[i] = str(e)
                found[i] = -1
                continue
            slow_pos[i] = pos
            plies[i] = probe.ply
            status[i] = OVER if probe.terminal else 0
            found[i] = _byte_row(probe, w)
        lab = label_arrays(found, plies, b.cells, w)
        if errors is not None:
            for i in np.flatnonzero(~lab["ok"]).tolist():
                if errors[i] is None:
                    errors[i] = "a child position is missing from the table"
        lab["ply"] = plies
        lab["terminal"] = status == OVER
        lab["error"] = errors
        if self.planes is not None:
            grid = np.zeros((n, w, b.height), np.uint8)
            fast_rows = np.setdiff1d(np.arange(n), slow)
            if fast_rows.size:
                grid_kernel(cols, offsets, fast_rows, w, b.height, grid)
            for i, pos in slow_pos.items():
                for c in range(w):
                    for r in range(b.height):
                        grid[i, c, r] = pos.cell(c, r)
            lab["obs"] = observation_planes(grid, plies, self.planes)
        return lab


def _byte_row(probe, w: int) -> np.ndarray:
    """The row of outcome bytes :func:`c4table.analysis.pons.label_kernel` takes, from a Probe."""
    code = {"draw": 0, "A": 1, "B": 2}
    row = np.full(w + 1, -1, np.int64)
    row[0] = (code[probe.outcome] << 6) | probe.distance
    for m in probe.moves:
        row[m.column] = (code[m.outcome] << 6) | (m.distance - 1)
    return row


# ------------------------------------------------------------------------------ arrow
def label_fields(board, planes: str | None = None) -> list:
    """pyarrow fields of the per-move columns (``value`` .. ``best_mask``, and ``obs``)."""
    import pyarrow as pa
    w = board.width
    fields = [pa.field("value", pa.int8()), pa.field("score", pa.int16()),
              pa.field("move_scores", pa.list_(pa.int16(), w)),
              pa.field("move_distance", pa.list_(pa.uint8(), w)),
              pa.field("legal_mask", pa.list_(pa.bool_(), w)),
              pa.field("best_mask", pa.list_(pa.bool_(), w))]
    if planes is not None:
        fields.append(pa.field("obs", obs_type(board, planes)))
    return fields


def obs_shape(board, planes: str) -> tuple[int, ...]:
    return (board.height, board.width, 2) if planes == "pettingzoo" else (3, board.height, board.width)


def obs_type(board, planes: str):
    import pyarrow as pa
    t = pa.uint8()
    for d in reversed(obs_shape(board, planes)):
        t = pa.list_(t, d)
    return t


def _fixed(values: np.ndarray, typ, mask=None):
    """A (nested) fixed-size list array from an (n, ...) numpy array."""
    import pyarrow as pa
    dims = values.shape[1:]
    arr = pa.array(np.ascontiguousarray(values).reshape(-1), typ_leaf(typ))
    for d in reversed(dims[1:]):
        arr = pa.FixedSizeListArray.from_arrays(arr, d)
    if mask is not None and mask.any():
        return pa.FixedSizeListArray.from_arrays(arr, dims[0], mask=pa.array(mask))
    return pa.FixedSizeListArray.from_arrays(arr, dims[0])


def typ_leaf(typ):
    import pyarrow as pa
    while pa.types.is_fixed_size_list(typ):
        typ = typ.value_type
    return typ


def label_columns(lab: dict, board, planes: str | None = None, mask=None, flip=None) -> list:
    """pyarrow arrays of :func:`label_fields` from :meth:`Labeller.label`'s (or export's) arrays.
    ``mask``: rows to write as null; ``flip``: rows whose per-move columns (and board) are read
    mirrored (export's mirror images)."""
    import pyarrow as pa
    fields = label_fields(board, planes)
    names = ["move_scores", "move_distance", "legal_mask", "best_mask"] + (["obs"] if planes else [])
    per = {k: lab[k] for k in names}
    if flip is not None and flip.any():
        per = {k: v.copy() for k, v in per.items()}
        for k in names[:4]:
            per[k][flip] = per[k][flip][:, ::-1]
        if planes:
            per["obs"][flip] = per["obs"][flip][..., ::-1, :] if planes == "pettingzoo" \
                else per["obs"][flip][..., ::-1]
    m = None if mask is None or not mask.any() else mask
    out = [pa.array(lab["value"], pa.int8(), mask=m), pa.array(lab["score"], pa.int16(), mask=m)]
    for f, k in zip(fields[2:], names):
        out.append(_fixed(per[k], f.type, m))
    return out


# ------------------------------------------------------------------------------ entries
def child_keys(board, keys: np.ndarray, codes: np.ndarray, plies: np.ndarray,
               terminal: np.ndarray) -> np.ndarray:
    """``(n, w)`` keys of the children of each entry (canonical codes ``codes``, key ``keys``):
    ``NO_KEY`` where the column cannot be played."""
    w = board.width
    powers = np.asarray(board.powers, np.uint64)
    v1 = np.asarray(keys, np.uint64)
    with np.errstate(over="ignore"):
        v2 = (codes[:, ::-1].astype(np.uint64) * powers[None, :]).sum(axis=1, dtype=np.uint64)
        mover = (plies % 2).astype(np.int64)
        nc = board.child_code[codes, mover[:, None]]
        ok = (nc >= 0) & ~terminal[:, None]
        delta = np.where(ok, nc - codes, 0).astype(np.uint64)
        c1 = v1[:, None] + delta * powers[None, :]
        c2 = v2[:, None] + delta * powers[None, ::-1]
    out = np.minimum(c1, c2)
    out[~ok] = NO_KEY
    return out


def entry_labels(labeller, keys, outs, codes, plies, terminal, planes: str | None = None) -> dict:
    """Per-move labels (:func:`c4table.analysis.pons.label_arrays`) of table entries, and
    ``obs`` (canonical orientation) when ``planes``."""
    b = labeller.board
    if not b.supports("per_move"):
        raise TableError(f"board {b}: per-move labels of table entries are for 2D boards "
                         "(c4table label answers 3D positions one by one)")
    ck = child_keys(b, keys, codes, plies, terminal)
    found = np.empty((keys.shape[0], b.width + 1), np.int64)
    found[:, 0] = outs
    found[:, 1:] = labeller.lookup(ck.ravel()).reshape(ck.shape)
    check_rows(labeller.table.path, b, found, plies)   # a byte its ply cannot have
    lab = label_arrays(found, plies, b.cells, b.width)
    if not lab["ok"].all():
        raise TableError(f"{labeller.table.path}: a child of a table entry is missing from the table")
    if planes is not None:
        lab["obs"] = observation_planes(cells_of_codes(b, codes), plies, planes)
    return lab


def with_labels(batch, lab: dict, board, planes: str | None, mirrored: bool | None):
    """``batch`` (export's pyarrow table) with the label columns appended; a mirror image's
    per-move columns are read right to left."""
    n = batch.num_rows
    flip = np.full(n, bool(mirrored))
    cols = label_columns(lab, board, planes, None, flip if mirrored else None)
    for f, a in zip(label_fields(board, planes), cols):
        batch = batch.append_column(f, a)
    return batch


def decisive_mask(lab: dict) -> np.ndarray:
    """Rows where the legal moves reach at least two of win, draw, loss."""
    s = np.sign(lab["move_scores"].astype(np.int64))
    legal = lab["legal_mask"]
    win = (legal & (s > 0)).any(axis=1)
    draw = (legal & (s == 0)).any(axis=1)
    loss = (legal & (s < 0)).any(axis=1)
    return (win.astype(int) + draw + loss) >= 2


# ------------------------------------------------------------------------------ inputs
def text_chunks(path: str | Path, chunk: int = CHUNK):
    """``(cols, offsets, texts, raw_strings)`` chunks of a text file of move strings, one a line
    (a trailing ``\\r`` is dropped; an empty line is the empty board)."""
    import pyarrow as pa
    raw = np.fromfile(path, np.uint8) if str(path) != "-" else \
        np.frombuffer(sys.stdin.buffer.read(), np.uint8)
    nl = np.flatnonzero(raw == 10)
    starts = np.r_[0, nl + 1]
    ends = np.r_[nl, raw.shape[0]]
    if raw.shape[0] and raw[-1] == 10:          # no line after the last newline
        starts, ends = starts[:-1], ends[:-1]
    elif raw.shape[0] == 0:
        starts, ends = starts[:0], ends[:0]
    cr = (ends > starts) & (raw[np.maximum(ends - 1, 0)] == 13)
    ends = ends - cr
    keep = np.ones(raw.shape[0], np.bool_)            # every byte but newlines and trailing CRs
    keep[nl] = False
    keep[(ends[cr]).astype(np.int64)] = False
    data = raw[keep]
    lens = ends - starts
    offsets = np.zeros(starts.shape[0] + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    for lo in range(0, starts.shape[0], chunk):
        off = offsets[lo: lo + chunk + 1]
        part = data[off[0]: off[-1]]
        off = off - off[0]
        strings = pa.StringArray.from_buffers(off.shape[0] - 1, pa.py_buffer(off.astype(np.int32).tobytes()),
                                              pa.py_buffer(part.tobytes()))
        yield part.astype(np.int64) - 49, off, strings


def arrow_chunks(column, chunk: int = CHUNK):
    """The same chunks from a pyarrow string column (nulls become errors)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
        col = pc.cast(col, pa.string())
    for lo in range(0, len(col), chunk):
        orig = col.slice(lo, chunk)
        part = pc.if_else(pc.is_null(orig), "\x00", orig)   # a null: an error row (text None)
        part = part.combine_chunks() if isinstance(part, pa.ChunkedArray) else part
        off_dtype = np.int64 if pa.types.is_large_string(part.type) else np.int32
        bufs = part.buffers()
        offs = np.frombuffer(bufs[1], off_dtype)[part.offset: part.offset + len(part) + 1].astype(np.int64)
        data = np.frombuffer(bufs[2], np.uint8)[offs[0]: offs[-1]] if bufs[2] is not None else np.zeros(0, np.uint8)
        yield data.astype(np.int64) - 49, offs - offs[0], orig


# ------------------------------------------------------------------------------ command
@dataclass
class LabelReport:
    path: Path
    rows: int
    errors: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def label_schema(board, planes: str | None, meta: dict):
    import json
    import pyarrow as pa
    fields = [pa.field("moves", pa.string()), pa.field("ply", pa.uint8()),
              pa.field("outcome", pa.string()), pa.field("distance", pa.uint8()),
              pa.field("terminal", pa.bool_())] + label_fields(board, planes) + \
             [pa.field("error", pa.string())]
    return pa.schema(fields, metadata={"c4table": json.dumps(meta)})


def label_batch(lab: dict, strings, board, planes, schema):
    """One pyarrow record batch of :func:`label_schema` from a chunk's labels."""
    import pyarrow as pa
    errs = lab["error"]
    mask = None if errs is None else np.array([e is not None for e in errs])
    m = mask if mask is not None and mask.any() else None
    names = pa.array(["draw", "A", "B", "?"], pa.string())
    outcome = names.take(pa.array(lab["outcome"] & 3, mask=m))
    if strings.type != pa.string():
        strings = strings.cast(pa.string())
    arrays = [strings, pa.array(lab["ply"].astype(np.uint8), pa.uint8(), mask=m), outcome,
              pa.array(lab["distance"], pa.uint8(), mask=m),
              pa.array(lab["terminal"], pa.bool_(), mask=m)]
    arrays += label_columns(lab, board, planes, m)
    arrays.append(pa.array(errs, pa.string()) if errs is not None else pa.nulls(len(strings), pa.string()))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def label_file(table, source: str | Path, out: str | Path, column: str = "moves",
               planes: str | None = None, quiet: bool = True, stream=None) -> LabelReport:
    """Label every position of ``source`` (a text file of move strings, one a line, ``-`` for
    stdin; or a ``.parquet`` file and its string ``column``) into the parquet file ``out``."""
    import pyarrow.parquet as pq
    own = not isinstance(table, Table)
    t = open_table(table) if own else table
    stream = stream or sys.stderr
    try:
        b = t.board
        lab_ = Labeller(t, planes)
        src = str(source)
        total = None
        if src.endswith((".parquet", ".pq")):
            pf = pq.ParquetFile(src)
            if column not in pf.schema_arrow.names:
                raise InputError(f"{src}: no column {column!r} (columns: {', '.join(pf.schema_arrow.names)})")
            total = pf.metadata.num_rows
            chunks = (c for batch in pf.iter_batches(batch_size=CHUNK, columns=[column])
                      for c in arrow_chunks(batch.column(0)))
        else:
            chunks = text_chunks(src)
        meta = {"board": b.name, "table": str(t.path), "planes": planes,
                "root": t.root.moves if t.root is not None else None,
                "labels": "value/score/move_scores for the side to move; score: Pons' convention"}
        schema = label_schema(b, planes, meta)
        out = Path(out)
        tmp = out.with_name(out.name + ".tmp")
        rows = errors = 0
        t0 = last = time.perf_counter()
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for cols, offsets, strings in chunks:
                texts = strings

                def text(i, texts=texts):
                    return texts[i].as_py()
                lab = lab_.label(cols, offsets, text)
                writer.write_batch(label_batch(lab, strings, b, planes, schema))
                rows += len(strings)
                if lab["error"] is not None:
                    errors += sum(e is not None for e in lab["error"])
                now = time.perf_counter()
                if not quiet and now - last >= PROGRESS_EVERY:
                    last = now
                    pct = f" of {total:,} ({100 * rows / total:.0f}%)" if total else ""
                    print(f"[label] {rows:,} positions{pct}, {errors:,} errors, "
                          f"{rows / (now - t0):,.0f} positions/s", file=stream, flush=True)
        import os
        os.replace(tmp, out)
        return LabelReport(out, rows, errors, time.perf_counter() - t0)
    finally:
        if "lab_" in locals():
            lab_.close()
        if own:
            t.close()
