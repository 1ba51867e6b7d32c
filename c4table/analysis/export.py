"""Dataset export: every position of a ply (or of the whole table) as a parquet file, plus the
vectorised decoding of table entries it needs (keys to column codes, cells, plies, lines,
terminal flags, a move string per position), which :mod:`c4table.analysis.stats` reuses, with
the build's own rules (its numba kernels). Design notes: ``docs/modules.md``
(``c4table.analysis.export``).

>>> rep = export_positions("tables/5x4/connect4_5x4.dat", "ply8.parquet", ply=8)
>>> rep.rows
10076
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, TextIO

import numpy as np

from c4table.analysis.decode import (
    bitboards,
    cells_of_codes,
    decode_entries,
    decode_keys,
    has_line,
    plies_of_codes,
)
from c4table.table.sums import check_plies
from c4table.analysis.label import Labeller, entry_labels, label_fields, with_labels
from c4table.analysis.quiet import quiet_mask
from c4table.builddir.reader import BuildDir
from c4table.errors import CorruptDataError, TableError
from c4table.game.board import A, B, Board
from c4table.game.drawing import search_moves
from c4table.open import open_table
from c4table.progress import Meter
from c4table.table.source import Table

MOVE_CHARS = np.frombuffer(b"123456789abcdefghijklmnopqrstuvwxyz", np.uint8)
OUTCOME_NAMES = {0x00: "draw", 0x40: "A", 0x80: "B"}
PROGRESS_EVERY = 2.0




def _code_tables(board: Board) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per column code: its top chip (0 if none, 1 A, 2 B), the chip below it (0 if none) and
    the code left when the top chip is removed (the empty column stays itself): the un-move
    tables :attr:`Board.parent_code` / :attr:`Board.top_owner` in the form the walk needs."""
    got = board._cache.get("unplay_tables")
    if got is None:
        top = np.where(board.top_owner >= 0, board.top_owner + 1, 0).astype(np.uint8)
        pop = np.where(board.parent_code >= 0, board.parent_code, np.arange(board.base))
        below = top[pop]
        got = board._cache["unplay_tables"] = (top, below, pop)
    return got


def _first_candidates(board: Board, codes: np.ndarray, p: int) -> np.ndarray:
    """``(n, w)`` mask of the columns whose top chip may have been the last move: the last
    mover's chip, and removing it leaves no line on the board."""
    top, _, _ = _code_tables(board)
    last = A if p % 2 == 1 else B
    cand = top[codes] == last
    a_bb, b_bb = bitboards(board, codes)
    lined = np.flatnonzero(has_line(board, a_bb) | has_line(board, b_bb))
    if lined.size:
        last_bb = (a_bb if last == A else b_bb)[lined]
        hs = board.col_height[codes[lined]]
        for c in range(board.width):
            bit = (np.maximum(hs[:, c] - 1, 0) + c * board.stride).astype(np.uint64)
            cand[lined, c] &= ~has_line(board, last_bb & ~(np.uint64(1) << bit))
    return cand


def _greedy_unplay(board: Board, codes: np.ndarray, p: int, first: np.ndarray,
                   rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
    """One greedy un-play walk of every row; returns (moves (n, p), ok mask)."""
    top_of, below_of, pop_of = _code_tables(board)
    n, w = codes.shape
    cur = codes.copy()
    moves = np.zeros((n, p), np.uint8)
    ok = np.ones(n, bool)
    rows = np.arange(n)
    for s in range(p, 0, -1):
        player, other = (A, B) if s % 2 == 1 else (B, A)
        cand = first if s == p else top_of[cur] == player
        # tallest column first, then one whose next chip down is the other player's
        score = 1.0 + 2 * board.col_height[cur] + (below_of[cur] == other)
        if rng is not None:
            score += rng.random((n, w)) * 3
        score = np.where(cand, score, 0)
        choice = score.argmax(axis=1)
        good = score[rows, choice] > 0
        ok &= good
        moves[:, s - 1] = choice
        g = rows[good]
        cur[g, choice[g]] = pop_of[cur[g, choice[g]]]
    return moves, ok


def _unplay(board: Board, codes: np.ndarray, p: int, retries: int = 20) -> np.ndarray:
    """Move orders ``(n, p)`` (0-based columns) reaching positions of ply ``p`` (see module
    docstring): a greedy walk, randomised retries of the rows that hit a dead end, then the
    exact search for what is left."""
    n, w = codes.shape
    if n == 0 or p == 0:
        return np.zeros((n, p), np.uint8)
    first = _first_candidates(board, codes, p)
    moves, ok = _greedy_unplay(board, codes, p, first, None)
    rng = np.random.default_rng(p)
    for _ in range(retries):
        bad = np.flatnonzero(~ok)
        if not bad.size:
            break
        m2, ok2 = _greedy_unplay(board, codes[bad], p, first[bad], rng)
        moves[bad[ok2]] = m2[ok2]
        ok[bad[ok2]] = True
    bad = np.flatnonzero(~ok)
    if bad.size:
        cells = cells_of_codes(board, codes[bad])
        hs = board.col_height[codes[bad]]
        for j, i in enumerate(bad):
            col_lists = [cells[j, c, : hs[j, c]].tolist() for c in range(w)]
            found = search_moves(board, col_lists, np.flatnonzero(first[i]).tolist())
            if found is None:
                raise CorruptDataError(f"board {board}: a table entry (codes {codes[i].tolist()}) "
                                       "cannot arise in play")
            moves[i] = found
    return moves


def move_orders(board: Board, codes: np.ndarray, ply: np.ndarray | None = None) -> list[str]:
    """One move string per row of column codes (docs/modules.md says how).

    >>> from c4table.game.rules import Position
    >>> b = Board(5, 4)
    >>> codes = np.array([Position.from_moves(b, "3342").codes()])
    >>> s = move_orders(b, codes)[0]; Position.from_moves(b, s).codes() == codes[0].tolist()
    True
    """
    return _move_strings(board, codes, ply).to_pylist()


def _move_strings(board: Board, codes: np.ndarray, ply: np.ndarray | None = None, mirror: bool = False):
    """Move strings as a pyarrow string array (built from buffers, no per-row Python)."""
    import pyarrow as pa  # pyarrow loads in ~0.15 s: only writing needs it
    n = codes.shape[0]
    if ply is None:
        ply = plies_of_codes(board, codes)
    ply = np.asarray(ply, np.int64)
    maxp = int(ply.max()) if n else 0
    moves = np.zeros((n, maxp), np.uint8)
    for p in np.unique(ply):
        idx = np.flatnonzero(ply == p)
        moves[idx, :p] = _unplay(board, codes[idx], int(p))
    if mirror:
        moves = (board.width - 1 - moves.astype(np.int64)).astype(np.uint8)
    chars = MOVE_CHARS[moves]
    data = chars[np.arange(maxp)[None, :] < ply[:, None]]
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(ply, out=offsets[1:])
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes()))


# ------------------------------------------------------------------------ sources
def cell_names(board: Board) -> list[str]:
    """Cell column names in file order: ``a1 .. a{h}, b1 ..`` (letter = column from the left,
    number = row from the bottom).

    >>> cell_names(Board(2, 2))
    ['a1', 'a2', 'b1', 'b2']

    On a 3D board ``{x letter}{y number}z{layer}``, column by column (1-based column ``y*X + x +
    1``), each bottom layer first:

    >>> cell_names(Board.grid3d(2, 1, 2))
    ['a1z1', 'a1z2', 'b1z1', 'b1z2']
    """
    return [board.cell_name(c, r) for c in range(board.width) for r in range(board.height)]


def _build_beside(table) -> "BuildDir | None":
    """The checked build directory of ``table`` when its manifest describes the table."""
    return table.build


def _shard_source(table, ply: int | None, source: str) -> "BuildDir | None":
    """The build directory to read ``ply`` from (its backward shards, all still there), or
    ``None`` to scan the table."""
    if ply is None or source == "table":
        return None
    bd = _build_beside(table)
    return bd if bd is not None and bd.has_backward_files(ply) else None


def iter_ply_entries(table, ply: int | None = None, chunk_entries: int = 1 << 18,
                     source: str = "auto", scanned: list[int] | None = None
                     ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(keys uint64, outcome bytes uint8, codes (n, w))`` chunks of the entries of
    ``ply`` (all plies when ``None``), in key order per ply. ``source``: ``"auto"`` (shards
    when available), ``"table"`` or ``"shards"``. ``scanned[0]``, if given, counts the table
    entries read so far (for progress when a scan filters a ply).

    >>> from c4table import open_table
    >>> with open_table("tables/5x4/connect4_5x4.dat") as t:
    ...     n = sum(len(k) for k, _, _ in iter_ply_entries(t, 8))
    >>> n
    10076
    """
    board = table.board
    bd = _shard_source(table, ply, source)
    if source == "shards" and bd is None:
        raise TableError(f"{table.path}: no backward shards of ply {ply} beside this table")
    if bd is not None:   # each shard's xxh64 is checked before its rows are used
        for keys, outs in bd.read_backward(ply):
            for lo in range(0, keys.shape[0], chunk_entries):
                k = keys[lo: lo + chunk_entries]
                yield k, outs[lo: lo + chunk_entries], decode_keys(board, k)
        return
    for chunk in table.iter_entries(chunk_entries):
        if scanned is not None:
            scanned[0] += chunk.shape[0]
        keys, outs = chunk["key"], chunk["outcome"]
        codes = decode_keys(board, keys)
        plies = plies_of_codes(board, codes)
        check_plies(table.path, board, outs, plies)   # a byte its ply cannot have: damage
        if ply is not None:
            sel = plies == ply
            if not sel.any():
                continue
            keys, outs, codes = keys[sel], outs[sel], codes[sel]
        yield keys, outs, codes


# ------------------------------------------------------------------------- export
@dataclass
class ExportReport:
    """What :func:`export_positions` wrote: ``rows`` (parquet rows), ``entries`` (table entries
    read for them), ``seconds`` and the ``source`` of the entries (``"shards"`` or ``"table"``)."""

    path: Path
    rows: int
    entries: int
    seconds: float
    source: str

    @property
    def rate(self) -> float:
        """Rows written per second."""
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def _schema(board: Board, mirror: bool, meta: dict):
    import pyarrow as pa  # pyarrow loads in ~0.15 s: only writing needs it
    fields = [pa.field(name, pa.uint8()) for name in cell_names(board)]
    fields += [pa.field("ply", pa.uint8()), pa.field("moves", pa.string()),
               pa.field("outcome", pa.string()), pa.field("distance", pa.uint8()),
               pa.field("terminal", pa.bool_()), pa.field("key", pa.uint64())]
    if mirror:
        fields.append(pa.field("mirrored", pa.bool_()))
    return pa.schema(fields, metadata={"c4table": json.dumps(meta)})


def _batch(board: Board, schema, keys, outs, codes, ply, terminal, mirrored: bool | None):
    import pyarrow as pa  # pyarrow loads in ~0.15 s: only writing needs it
    cells = cells_of_codes(board, codes[:, ::-1] if mirrored else codes)
    arrays = [pa.array(np.ascontiguousarray(cells[:, c, r]), pa.uint8())
              for c in range(board.width) for r in range(board.height)]
    names = np.array(["draw", "A", "B", "?"], dtype=object)
    arrays += [pa.array(ply.astype(np.uint8), pa.uint8()),
               _move_strings(board, codes, ply, mirror=bool(mirrored)),
               pa.array(names[outs >> 6], pa.string()),
               pa.array(outs & np.uint8(0x3F), pa.uint8()),
               pa.array(terminal, pa.bool_()),
               pa.array(keys, pa.uint64())]
    if mirrored is not None:
        arrays.append(pa.array(np.full(keys.shape[0], mirrored), pa.bool_()))
    return pa.Table.from_arrays(arrays, schema=schema)


def export_positions(table, out: str | os.PathLike, ply: int | None = None, *,
                     nonterminal: bool = False, mirror: bool = False, quiet_positions: bool = False,
                     board: str | Board | None = None, per_move: bool = False, planes: str | None = None,
                     chunk_entries: int = 1 << 18, source: str = "auto", quiet: bool = True,
                     stream: TextIO | None = None) -> ExportReport:
    """Write every position of ``ply`` (all plies when ``None``) of ``table`` (a
    :class:`~c4table.table.Table` or a path) to the parquet file ``out`` (columns: the module
    docstring). ``nonterminal`` drops finished games, ``mirror`` adds mirror images,
    ``quiet_positions`` keeps the quiet ones (:mod:`c4table.analysis.quiet`), ``per_move`` adds the
    labels of :mod:`c4table.analysis.label`, ``planes`` (``"pettingzoo"`` or ``"openspiel"``) also
    ``obs``. Progress lines go to ``stream`` (stderr) unless ``quiet``.

    >>> export_positions("tables/5x4/connect4_5x4.dat", "p8.parquet", ply=8).rows
    10076
    """
    import pyarrow.parquet as pq  # pyarrow loads in ~0.15 s: only writing needs it
    own = not isinstance(table, Table)
    t = open_table(table, board) if own else table
    labeller = None
    try:
        b = t.board
        if mirror and not b.supports("mirror"):
            raise TableError(f"board {b}: --mirror adds mirror images of 2D boards; a 3D board's "
                             "entry stands for up to 8 images, which export does not write")
        if (per_move and not b.supports("per_move")) or (planes and not b.supports("planes")):
            raise TableError(f"board {b}: --per-move and --planes are for 2D boards")
        if ply is not None and not 0 <= ply <= b.cells:
            raise TableError(f"ply {ply} does not exist on board {b} (0..{b.cells})")
        stream = stream or sys.stderr
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        src = "shards" if _shard_source(t, ply, source) is not None else "table"
        meta = {"board": b.name, "width": b.width, "height": b.height, "k": b.k,
                "ply": "all" if ply is None else ply, "nonterminal": nonterminal, "mirror": mirror,
                "quiet_positions": quiet_positions,
                "table": str(t.path), "root": t.root.moves if t.root is not None else None,
                "cells": "a1..: column letter from the left, row number from "
                "the bottom; 0 empty, 1 A (first player), 2 B",
                "outcome": "A, B or draw, reached in `distance` plies under optimal play"}
        schema = base = _schema(b, mirror, meta)
        if per_move or planes:
            labeller = Labeller(t)
            for f in label_fields(b, planes):
                schema = schema.append(f)
        total = None
        bd = _build_beside(t)
        if bd is not None and ply is not None and len(bd.plies) > ply:
            total = bd.plies[ply].entries
        tmp = out.with_name(out.name + ".tmp")
        rows = entries = 0
        scanned = [0]
        t0 = time.perf_counter()
        meter = Meter("export", len(t), "entries", quiet, stream, every=PROGRESS_EVERY)
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for keys, outs, _ in iter_ply_entries(t, ply, chunk_entries, source, scanned):
                entries += keys.shape[0]
                codes, plies, term, sym = decode_entries(b, keys)
                if nonterminal or quiet_positions:
                    keep = ~term
                    if quiet_positions:
                        keep = quiet_mask(b, codes, plies)
                    keys, outs, codes, plies, term, sym = (keys[keep], outs[keep], codes[keep],
                                                          plies[keep], term[keep], sym[keep])
                if keys.shape[0]:
                    lab = entry_labels(labeller, keys, outs, codes, plies, term, planes) if labeller else None
                    batch = _batch(b, base, keys, outs, codes, plies, term, False if mirror else None)
                    writer.write_table(with_labels(batch, lab, b, planes, False) if lab else batch)
                    rows += keys.shape[0]
                    if mirror:
                        asym = ~sym
                        if asym.any():
                            batch = _batch(b, base, keys[asym], outs[asym], codes[asym],
                                           plies[asym], term[asym], True)
                            if lab:
                                batch = with_labels(batch, {k: v[asym] for k, v in lab.items()},
                                                    b, planes, True)
                            writer.write_table(batch)
                            rows += int(asym.sum())
                if src == "table" or not total:   # a scan: progress through the file
                    meter.update(scanned[0] if src == "table" else entries, entries=entries, rows=rows)
                else:
                    meter.total = total
                    meter.update(entries, rows=rows)
        os.replace(tmp, out)
        secs = time.perf_counter() - t0
        return ExportReport(out, rows, entries, secs, src)
    finally:
        if labeller is not None:
            labeller.close()
        if own:
            t.close()
