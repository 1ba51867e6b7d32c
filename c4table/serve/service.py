"""The answers of the JSON API without HTTP (:class:`ProbeService`): positions, batches,
mainlines and Pons' ``/solve``, each as JSON text or an :class:`ApiError`; the response
cache and the batch limit. A position's object is what ``c4table lookup --json`` prints
(:func:`c4table.table.probe.lookup_json`), a bad position gets the CLI's one-line message, and
the mainline is the computer's play of ``c4table play``
(:func:`c4table.analysis.play.choose_move`)."""
from __future__ import annotations

import json

from c4table.analysis.play import choose_move
from c4table.analysis.pons import add_scores, move_score, probe_score, web_scores
from c4table.errors import C4Error, IllegalPositionError, PositionNotFoundError
from c4table.lru import LRUCache
from c4table.serve.metrics import Metrics
from c4table.table.fastprobe import FastProber
from c4table.table.probe import error_json, lookup_json, with_winning_cells
from c4table.table.source import Table

#: Most positions one ``POST /api/{board}/batch`` may ask for.
MAX_BATCH = 10_000
#: Default number of answers the LRU response cache keeps.
DEFAULT_CACHE = 20_000


class ApiError(Exception):
    """An answer other than 200: HTTP ``status`` and the one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class ProbeService:
    """The answers of the API, without HTTP: each method returns JSON text or raises
    :class:`ApiError`. One instance per server process.

    >>> from c4table.serve.tables import load_tables
    >>> s = ProbeService(load_tables(["tables/5x4/connect4_5x4.dat"]))
    >>> json.loads(s.position("5x4", "3344"))["outcome"]
    'A'
    """

    def __init__(self, tables: dict[str, Table], cache_size: int = DEFAULT_CACHE, fast: bool = True):
        self.tables = tables
        # kernels compiled (first run after install) or loaded from numba's cache at startup
        self.fast = {name: FastProber.for_table(t) if fast else None for name, t in tables.items()}
        self.cache = LRUCache(cache_size)
        self.metrics = Metrics()

    def table(self, board: str) -> Table:
        t = self.tables.get(board)
        if t is None:
            served = ", ".join(sorted(self.tables))
            raise ApiError(404, f"board {board[:40]!r} is not served here (served: {served})")
        return t

    def _check(self, t: Table, text: str) -> None:
        """Refuse input no position of the board can have, before echoing it in a message."""
        b = t.board
        if "\n" in text.strip():
            if len(text) > 4 * (b.width + 2) * b.height + 64:
                raise ApiError(400, f"drawing of {len(text)} characters is too long for board {b}")
        elif len(text.strip()) > 2 * b.cells + 16:   # shorter ones get the CLI's own message
            raise ApiError(400, f"{len(text.strip())} moves: board {b} has only {b.cells} cells")

    def _not_found(self, t: Table, board: str, e: Exception) -> ApiError:
        return ApiError(404, str(e).replace(str(t.path), f"table {board}"))

    def _probe(self, board: str, t: Table, texts: list[str]) -> list:
        """Probe or error of each text: :class:`FastProber` when the table allows it, else
        :meth:`Table.probe` one by one (the same answers)."""
        fp = self.fast[board]
        self.metrics.probes += len(texts)
        if fp is not None:
            return fp.probe_many(texts)
        out = []
        for s in texts:
            try:
                out.append(t.probe(s))
            except C4Error as e:
                out.append(e)
        return out

    def _body(self, t: Table, board: str, res) -> str:
        """JSON text of one probe result, or the :class:`ApiError` of one error."""
        if isinstance(res, PositionNotFoundError):   # first: a position outside a rooted table
            raise self._not_found(t, board, res)      # is also an IllegalPositionError
        if isinstance(res, IllegalPositionError):
            raise ApiError(400, str(res))
        if isinstance(res, Exception):
            raise res
        return json.dumps(with_winning_cells(add_scores(lookup_json(res, t.board.name),
                                                        t.board.cells), t, res))

    def _cached(self, key) -> str | None:
        """The cached answer for ``key``, or None; counted as a cache hit or miss."""
        hit = self.cache.get(key)
        if hit is not None:
            self.metrics.cache_hits += 1
        else:
            self.metrics.cache_misses += 1
        return hit

    def position(self, board: str, text: str) -> str:
        """JSON text of ``lookup --json`` for one position (cached)."""
        t = self.table(board)
        key = (board, text)
        hit = self._cached(key)
        if hit is not None:
            return hit
        self._check(t, text)
        body = self._body(t, board, self._probe(board, t, [text])[0])
        self.cache.put(key, body)
        return body

    def batch(self, board: str, items: list) -> str:
        """JSON list answering each move string in order: its ``lookup --json`` object, or
        ``{"board": ..., "position": ..., "error": ...}`` as ``lookup --json -`` prints for a bad line (here
        also for a position absent from the table)."""
        t = self.table(board)
        if len(items) > MAX_BATCH:
            raise ApiError(400, f"batch of {len(items):,} positions: at most {MAX_BATCH:,} per request")
        for i, s in enumerate(items):
            if not isinstance(s, str):
                raise ApiError(400, f"item {i + 1} of the batch (index {i}, counting from 0) is "
                                    f"{type(s).__name__}, not a move string")
        self.metrics.batch_positions += len(items)
        parts: list[str | None] = [None] * len(items)
        todo: list[int] = []
        for i, s in enumerate(items):
            hit = self._cached((board, s))
            if hit is not None:
                parts[i] = hit
                continue
            try:
                self._check(t, s)
                todo.append(i)
            except ApiError as e:
                parts[i] = json.dumps(error_json(s, e.message, t.board.name))   # cut, escaped
        for i, res in zip(todo, self._probe(board, t, [items[i] for i in todo])):
            try:
                parts[i] = self._body(t, board, res)
                self.cache.put((board, items[i]), parts[i])
            except ApiError as e:
                parts[i] = json.dumps(error_json(items[i], e.message, t.board.name))
        return "[" + ", ".join(parts) + "]"

    def mainline(self, board: str, text: str) -> str:
        """JSON text of the perfect-play continuation from a position to the end of the game:
        the moves ``c4table play`` would make for both sides (an optimal move, nearest the
        centre among equals), each with its outcome and distance."""
        t = self.table(board)
        key = (board, text, "mainline")
        hit = self._cached(key)
        if hit is not None:
            return hit
        self._check(t, text)

        def probe(cur: str):
            res = self._probe(board, t, [cur])[0]
            if isinstance(res, Exception):
                self._body(t, board, res)      # raises its ApiError
            return res

        first = probe(text)
        start, cur, res, line = lookup_json(first), first.position, first, []
        while not res.terminal:
            m = choose_move(res, t.board.width)
            line.append({"column": m.column, "outcome": m.outcome, "distance": m.distance,
                         "score": move_score(res, m, t.board.cells)})
            cur += str(m.column)
            res = probe(cur)
        body = json.dumps({"position": start["position"], "outcome": start["outcome"],
                           "distance": start["distance"], "mainline": line,
                           "end": cur, "winner": res.outcome, "score": probe_score(first, t.board.cells)})
        self.cache.put(key, body)
        return body

    def solve(self, pos: str, board: str | None = None) -> str:
        """Pons' web API (connect4.gamesolver.org ``/solve?pos=``): ``{"pos": ..., "score": [W
        ints]}``, each column's score for the side to move if it plays there (:mod:`c4table.analysis.pons`),
        100 where the column cannot be played (full, or the game is over). ``board``: see
        :meth:`solve_board`."""
        board = self.solve_board(board)
        t = self.table(board)
        key = (board, pos, "solve")
        hit = self._cached(key)
        if hit is not None:
            return hit
        self._check(t, pos)
        if "\n" in pos.strip():
            raise ApiError(400, "pos is a move string of 1-based columns")
        res = self._probe(board, t, [pos])[0]
        if isinstance(res, Exception):
            self._body(t, board, res)      # raises its ApiError
        body = json.dumps({"pos": pos, "score": web_scores(res, t.board.width, t.board.cells)})
        self.cache.put(key, body)
        return body

    def solve_board(self, board: str | None) -> str:
        """The board ``/solve`` answers from: ``board`` when given; else 7x6 (Pons' board) when
        it is served, else the only board served; with several other boards, a 400 that names
        them and the ``board=`` parameter."""
        if board is not None:
            return board
        if "7x6" in self.tables:
            return "7x6"
        if len(self.tables) == 1:
            return next(iter(self.tables))
        served = sorted(self.tables)
        raise ApiError(400, f"several boards are served ({', '.join(served)}) and 7x6 is not "
                            f"among them: name one with the board parameter, e.g. &board={served[0]}")

    def boards(self) -> list[dict]:
        return [{"board": name, "width": t.board.width, "height": t.board.height, "k": t.board.k,
                 "entries": t.entries, "root": t.root.moves if t.root is not None else ""}
                for name, t in sorted(self.tables.items())]
