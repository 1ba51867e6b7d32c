"""The probe server: a JSON API over one or more tables, and the web analysis board.

This module owns the HTTP side of ``c4table serve``: the Starlette application (routes, error
answers, CORS, the response cache, the Prometheus metrics, the OpenAPI description) and the
function that runs it under uvicorn. The answers themselves come from the same code as the
command line: a position's object is what ``c4table lookup --json`` prints
(:func:`c4table.cli.use.lookup_json`), a bad position gets the CLI's one-line message, and the
mainline is the computer's play of ``c4table play`` (:func:`c4table.analysis.play.choose_move`).

Tables are keyed by board name (``5x4``, ``7x6``). Opening a table only maps its file, so
startup reads nothing but the file sizes and manifests.

Routes (see ``README.md``, section "Serving"):

* ``GET /api/{board}?moves=M``: the ``lookup --json`` object of position ``M``.
* ``GET /api/{board}/mainline?moves=M``: the perfect-play continuation to the end of the game.
* ``POST /api/{board}/batch``: a JSON list of up to 10,000 move strings, answered in order.
* ``GET /solve?pos=M[&board=WxH]``: Pons' web API shape ``{"pos": M, "score": [W ints]}``.
* ``GET /api/boards``, ``/healthz``, ``/metrics`` (Prometheus text), ``/openapi.json``.
* ``GET /``: the web board (``c4table/web/``), plain HTML, CSS and JavaScript.

Errors are JSON ``{"error": "..."}``: 400 bad input, 404 a board that is not served or a
position outside the table (a rooted table), 405 wrong method, 413 a body too large.

>>> from starlette.testclient import TestClient
>>> app = create_app(["tables/5x4/connect4_5x4.dat"])
>>> TestClient(app).get("/api/5x4", params={"moves": "3344"}).json()["distance"]
3
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Iterable
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import c4table.config as config
from c4table.lru import LRUCache
from c4table.table.probe import error_json, lookup_json
from c4table.errors import C4Error, IllegalPositionError, PositionNotFoundError
from c4table.table.fastprobe import FastProber
from c4table.analysis.play import choose_move
from c4table.analysis.pons import add_scores, move_score, probe_score, web_scores
from c4table.table.source import Table
from c4table.open import open_table

WEB_DIR = Path(__file__).resolve().parent / "web"
#: Most positions one ``POST /api/{board}/batch`` may ask for.
MAX_BATCH = 10_000
#: Largest request body accepted (a full batch of 7x6 move strings is about 500 KB).
MAX_BODY = 4 << 20
#: Default number of answers the LRU response cache keeps.
DEFAULT_CACHE = 20_000
#: Upper bounds (seconds) of the latency histogram's buckets.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
JSON_TYPE = "application/json"


class ServeError(C4Error, ValueError):
    """Tables that cannot be served together (two tables of one board, none at all)."""


class ApiError(Exception):
    """An answer other than 200: HTTP ``status`` and the one-line ``message``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


# ------------------------------------------------------------------------------ tables
def load_tables(paths: Iterable[str | os.PathLike | Table]) -> dict[str, Table]:
    """Open every table (or take it as it is) and key it by its board's name.

    >>> sorted(load_tables(["tables/5x4/connect4_5x4.dat", "tables/4x4/connect4_4x4.dat"]))
    ['4x4', '5x4']
    """
    tables: dict[str, Table] = {}
    for p in paths:
        t = p if isinstance(p, Table) else open_table(p)
        name = t.board.name
        if t.board.grid is not None:   # the web board draws 2D boards only
            raise ServeError(f"{t.path}: board {name} is a 3D board; serve knows 2D boards only "
                             "(use lookup, best or play)")
        if name in tables:
            raise ServeError(f"two tables of board {name}: {tables[name].path} and {t.path}; "
                             "serve one table per board")
        tables[name] = t
    if not tables:
        raise ServeError("no table to serve: give at least one --table")
    return tables


class Metrics:
    """Counters of one server process, written in Prometheus' text format by :meth:`render`."""

    def __init__(self):
        self.requests: dict[tuple[str, str, int], int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0
        self.probes = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.batch_positions = 0
        self._lock = threading.Lock()

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            k = (route, method, status)
            self.requests[k] = self.requests.get(k, 0) + 1
            i = 0
            while i < len(LATENCY_BUCKETS) and seconds > LATENCY_BUCKETS[i]:
                i += 1
            self.buckets[i] += 1
            self.latency_sum += seconds
            self.latency_count += 1

    def render(self, tables: dict[str, Table], cache: LRUCache) -> str:
        out = ["# HELP c4table_requests_total HTTP requests answered, by route, method and status.",
               "# TYPE c4table_requests_total counter"]
        for (route, method, status), n in sorted(self.requests.items()):
            out.append(f'c4table_requests_total{{route="{route}",method="{method}",status="{status}"}} {n}')
        out += ["# HELP c4table_request_duration_seconds Time from request to response.",
                "# TYPE c4table_request_duration_seconds histogram"]
        acc = 0
        for le, n in zip(LATENCY_BUCKETS, self.buckets):
            acc += n
            out.append(f'c4table_request_duration_seconds_bucket{{le="{le}"}} {acc}')
        out.append(f'c4table_request_duration_seconds_bucket{{le="+Inf"}} {self.latency_count}')
        out.append(f"c4table_request_duration_seconds_sum {self.latency_sum:.6f}")
        out.append(f"c4table_request_duration_seconds_count {self.latency_count}")
        for name, help_, value in (
                ("probes", "Positions probed in the tables (cache misses; each probes the position "
                           "and its children).", self.probes),
                ("cache_hits", "Answers taken from the response cache.", self.cache_hits),
                ("cache_misses", "Answers computed because the cache did not hold them.", self.cache_misses),
                ("batch_positions", "Positions asked for in batch requests.", self.batch_positions)):
            out += [f"# HELP c4table_{name}_total {help_}", f"# TYPE c4table_{name}_total counter",
                    f"c4table_{name}_total {value}"]
        out += ["# HELP c4table_cache_entries Answers held in the response cache.",
                "# TYPE c4table_cache_entries gauge", f"c4table_cache_entries {len(cache)}",
                "# HELP c4table_table_entries Entries of each served table.",
                "# TYPE c4table_table_entries gauge"]
        for name, t in sorted(tables.items()):
            out.append(f'c4table_table_entries{{board="{name}"}} {t.entries}')
        out += ["# HELP c4table_process_id Process answering (each --workers process counts alone).",
                "# TYPE c4table_process_id gauge", f"c4table_process_id {os.getpid()}"]
        return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- answers
class ProbeService:
    """The answers of the API, without HTTP: each method returns JSON text or raises
    :class:`ApiError`. One instance per server process.

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
        return json.dumps(add_scores(lookup_json(res, t.board.name), t.board.cells))

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
                raise ApiError(400, f"item {i} of the batch is {type(s).__name__}, not a move string")
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
        ints]}``, each column's score for the side to move if it plays there (:mod:`c4table.pons`),
        100 where the column cannot be played (full, or the game is over). ``board`` defaults to
        the one board served, else 7x6."""
        if board is None:
            board = next(iter(self.tables)) if len(self.tables) == 1 else "7x6"
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

    def boards(self) -> list[dict]:
        return [{"board": name, "width": t.board.width, "height": t.board.height, "k": t.board.k,
                 "entries": t.entries, "root": t.root.moves if t.root is not None else ""}
                for name, t in sorted(self.tables.items())]


# ------------------------------------------------------------------------------- HTTP
def _json(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type=JSON_TYPE)


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _route_label(path: str) -> str:
    if path.startswith("/api/"):
        rest = path[5:]
        if rest == "boards":
            return "/api/boards"
        if rest.endswith("/mainline"):
            return "/api/{board}/mainline"
        if rest.endswith("/batch"):
            return "/api/{board}/batch"
        return "/api/{board}" if "/" not in rest else "other"
    if path.startswith("/static/"):
        return "/static"
    return path if path in ("/", "/solve", "/healthz", "/metrics", "/openapi.json") else "other"


class _FrontDoor:
    """Outermost ASGI layer: counts every HTTP request by route, method and status, with its
    latency; and answers ``GET /api/{board}`` itself when ``direct`` (no CORS layer to pass),
    with the same bytes the Starlette route sends, saving the router's work on the hot path."""

    def __init__(self, app, service: "ProbeService", direct: bool):
        self.app = app
        self.service = service
        self.metrics = service.metrics
        self.direct = direct

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        path, method = scope.get("path", ""), scope.get("method", "")
        if self.direct and method == "GET" and path.startswith("/api/") and path[5:] in self.service.tables:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
            try:
                status, body = 200, self.service.position(path[5:], query.get("moves", "")).encode()
            except ApiError as e:
                status, body = e.status, json.dumps({"error": e.message}, ensure_ascii=False,
                                                    separators=(",", ":")).encode()
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-length", str(len(body)).encode()),
                                    (b"content-type", JSON_TYPE.encode())]})
            await send({"type": "http.response.body", "body": body})
            self.metrics.observe("/api/{board}", method, status, time.perf_counter() - t0)
            return
        status = [500]

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.observe(_route_label(path), method, status[0], time.perf_counter() - t0)


def _moves_param(request: Request) -> str:
    return request.query_params.get("moves", "")


async def _read_body(request: Request) -> bytes:
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_BODY:
        raise ApiError(413, f"request body of {size:,} bytes: at most {MAX_BODY:,}")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            raise ApiError(413, f"request body over {MAX_BODY:,} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def openapi(boards: list[str]) -> dict:
    """The OpenAPI 3.1 description of the API (served at ``/openapi.json``)."""
    err = {"description": "error", "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Error"}}}}
    board_param = {"name": "board", "in": "path", "required": True,
                   "schema": {"type": "string", "enum": boards}, "description": "board name, e.g. 5x4"}
    moves_param = {"name": "moves", "in": "query", "required": False, "schema": {"type": "string"},
                   "description": "1-based columns played from the empty board (empty: the empty board)"}
    move = {"type": "object", "properties": {"column": {"type": "integer"},
                                             "outcome": {"enum": ["A", "B", "draw"]},
                                             "distance": {"type": "integer"},
                                             "score": {"type": "integer"}}}
    probe = {"type": "object", "properties": {
        "board": {"type": "string"}, "position": {"type": "string"}, "ply": {"type": "integer"}, "to_move": {"enum": ["A", "B"]},
        "outcome": {"enum": ["A", "B", "draw"]}, "distance": {"type": "integer"},
        "terminal": {"type": "boolean"}, "moves": {"type": "array", "items": move},
        "score": {"type": "integer", "description": "Pons' score for the side to move"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "c4table probe API", "version": "1",
                 "description": "Outcome and distance of Connect-4 positions from complete tables. "
                                "Distances count plies; a move's distance counts from the position "
                                "before it, the move included."},
        "paths": {
            "/api/boards": {"get": {"summary": "Boards served", "responses": {"200": {"description": "list"}}}},
            "/api/{board}": {"get": {
                "summary": "One position: the object `c4table lookup --json` prints",
                "parameters": [board_param, moves_param],
                "responses": {"200": {"description": "the position and each legal move",
                                      "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Probe"}}}},
                              "400": err, "404": err}}},
            "/api/{board}/mainline": {"get": {
                "summary": "Perfect-play continuation to the end of the game",
                "parameters": [board_param, moves_param],
                "responses": {"200": {"description": "start outcome, moves played, end position",
                                      "content": {JSON_TYPE: {"schema": {"type": "object", "properties": {
                                          "position": {"type": "string"}, "outcome": {"type": "string"},
                                          "distance": {"type": "integer"},
                                          "mainline": {"type": "array", "items": move},
                                          "end": {"type": "string"}, "winner": {"type": "string"}}}}}},
                              "400": err, "404": err}}},
            "/api/{board}/batch": {"post": {
                "summary": f"Up to {MAX_BATCH} positions, answered in order",
                "parameters": [board_param],
                "requestBody": {"required": True, "content": {JSON_TYPE: {"schema": {
                    "type": "array", "maxItems": MAX_BATCH, "items": {"type": "string"}}}}},
                "responses": {"200": {"description": "one object per position; a bad one is "
                                                     "{position, error}",
                                      "content": {JSON_TYPE: {"schema": {"type": "array", "items": {
                                          "$ref": "#/components/schemas/Probe"}}}}},
                              "400": err, "404": err, "413": err}}},
            "/solve": {"get": {
                "summary": "Pons' web API: each column's score for the side to move (100: cannot be played)",
                "parameters": [{"name": "pos", "in": "query", "required": False, "schema": {"type": "string"},
                                "description": "1-based columns played from the empty board"},
                               {"name": "board", "in": "query", "required": False,
                                "schema": {"type": "string", "enum": boards},
                                "description": "board (default: the one served, else 7x6)"}],
                "responses": {"200": {"description": "{pos, score: [one int per column]}"},
                              "400": err, "404": err}}},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "ok"}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (text format)",
                                 "responses": {"200": {"description": "metrics"}}}},
        },
        "components": {"schemas": {
            "Probe": probe,
            "Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}}},
    }


def create_app(tables: Iterable[str | os.PathLike | Table] | dict[str, Table], cors: str | None = None,
               cache_size: int = DEFAULT_CACHE) -> Starlette:
    """The Starlette application serving ``tables`` (paths, open :class:`Table` objects, or a
    ``{board: Table}`` map). ``cors``: one origin (or ``*``) allowed to call the API from a
    browser; none by default.

    >>> from starlette.testclient import TestClient
    >>> TestClient(create_app(["tables/5x4/connect4_5x4.dat"])).get("/healthz").json()
    {'status': 'ok', 'boards': ['5x4']}
    """
    service = ProbeService(tables if isinstance(tables, dict) else load_tables(tables), cache_size)
    spec = json.dumps(openapi(sorted(service.tables)))

    def answer(fn, *args) -> Response:
        try:
            return _json(fn(*args))
        except ApiError as e:
            return _error(e.status, e.message)

    async def position(request: Request) -> Response:
        return answer(service.position, request.path_params["board"], _moves_param(request))

    async def mainline(request: Request) -> Response:
        return answer(service.mainline, request.path_params["board"], _moves_param(request))

    async def batch(request: Request) -> Response:
        board = request.path_params["board"]
        try:
            service.table(board)
            body = await _read_body(request)
            try:
                items = json.loads(body)
            except (ValueError, UnicodeDecodeError) as e:
                raise ApiError(400, f"body is not valid JSON: {' '.join(str(e).split())}") from None
            except RecursionError:
                raise ApiError(400, "body is not valid JSON: nested too deeply") from None
            if not isinstance(items, list):
                raise ApiError(400, "body must be a JSON list of move strings")
            text = await run_in_threadpool(service.batch, board, items)
        except ApiError as e:
            return _error(e.status, e.message)
        return _json(text)

    async def solve(request: Request) -> Response:
        return answer(service.solve, request.query_params.get("pos", ""),
                      request.query_params.get("board"))

    async def boards(request: Request) -> Response:
        return JSONResponse(service.boards())

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "boards": sorted(service.tables)})

    async def metrics(request: Request) -> Response:
        return Response(service.metrics.render(service.tables, service.cache),
                        media_type="text/plain; version=0.0.4")

    async def openapi_json(request: Request) -> Response:
        return _json(spec)

    async def index(request: Request) -> Response:
        return FileResponse(WEB_DIR / "index.html", media_type="text/html")

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return _error(exc.status_code, exc.detail, getattr(exc, "headers", None))

    async def server_error(request: Request, exc: Exception) -> Response:
        return _error(500, f"internal error: {type(exc).__name__}")

    routes = [
        Route("/", index, methods=["GET", "HEAD"]),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/api/boards", boards, methods=["GET"]),
        Route("/solve", solve, methods=["GET"]),
        Route("/api/{board}", position, methods=["GET"]),
        Route("/api/{board}/mainline", mainline, methods=["GET"]),
        Route("/api/{board}/batch", batch, methods=["POST"]),
        Mount("/static", StaticFiles(directory=WEB_DIR), name="static"),
    ]
    middleware = []
    if cors:
        middleware.append(Middleware(CORSMiddleware, allow_origins=[cors], allow_methods=["GET", "POST"],
                                     allow_headers=["Content-Type"]))
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={HTTPException: http_error, Exception: server_error})
    app.state.service = service
    return _FrontDoor(app, service, direct=not cors)


# ------------------------------------------------------------------------------ running
ENV_CONFIG = "C4TABLE_SERVE_CONFIG"


def app_from_env():
    """Application factory for uvicorn's worker processes: the configuration comes from the
    environment variable ``C4TABLE_SERVE_CONFIG`` (JSON: tables, cors, cache)."""
    cfg = json.loads(config.get(ENV_CONFIG))
    return create_app(cfg["tables"], cfg.get("cors"), cfg.get("cache", DEFAULT_CACHE))


def run(tables: list[str], host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
        cors: str | None = None, cache_size: int = DEFAULT_CACHE, access_log: bool = False) -> None:
    """Serve ``tables`` with uvicorn until interrupted (``workers`` processes share the port)."""
    import uvicorn  # the [serve] extra
    load_tables(tables)   # fail early, with one line, on a bad table set
    cfg = {"tables": [str(Path(t).resolve()) for t in tables], "cors": cors, "cache": cache_size}
    os.environ[ENV_CONFIG] = json.dumps(cfg)
    kw = dict(host=host, port=port, access_log=access_log, log_level="info" if access_log else "warning",
              server_header=False)
    if workers > 1:
        uvicorn.run("c4table.serve.app:app_from_env", factory=True, workers=workers, **kw)
    else:
        uvicorn.run(app_from_env(), **kw)
