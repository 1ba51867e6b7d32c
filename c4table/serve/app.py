"""The probe server's HTTP side: the Starlette application of ``c4table serve`` (the JSON API's
routes, error answers, CORS, the request body limit, the outermost layer that counts requests
and answers the hot path) and the function that runs it under uvicorn. The answers come from
:class:`~c4table.serve.service.ProbeService`, the tables from :mod:`c4table.serve.tables`.
Routes and error answers: ``README.md`` ("Serving") and ``docs/modules.md`` (``c4table.serve.app``).

>>> from starlette.testclient import TestClient
>>> app = create_app(["tables/5x4/connect4_5x4.dat"])
>>> TestClient(app).get("/api/5x4", params={"moves": "3344"}).json()["distance"]
3
"""
from __future__ import annotations

import functools
import inspect
import json
import os
import time
import sys
from typing import Iterable
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from c4table.errors import TableDamaged
from c4table.serve import page
from c4table.serve.limits import MAX_BODY, MAX_HEADER_BYTES, MAX_TARGET, target_error
from c4table.serve.metrics import route_label
from c4table.serve.openapi import JSON_TYPE, openapi
from c4table.serve.service import DEFAULT_CACHE, MAX_BATCH, ApiError, ProbeService  # noqa: F401 (MAX_BATCH: the limit clients read here)
from c4table.serve.tables import ServeError, load_tables  # noqa: F401 (ServeError: what load_tables raises)
from c4table.table.source import Table

#: The status a request counts under in ``/metrics`` when its client went away before the
#: answer (nginx's "client closed request"); nothing is sent.
CLIENT_CLOSED = 499


def _json(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type=JSON_TYPE)


def _error(status: int, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


#: What a client reads when its answer lies in a damaged block of a table (refused, never answered).
DAMAGED = ("the table is damaged where this answer lies (its block checksums disagree): answer "
           "refused; the server's log names the file")


def _log_damage(exc: TableDamaged) -> None:
    print(f"c4table serve: {exc}", file=sys.stderr, flush=True)


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
        size = sum(len(k) + len(v) for k, v in scope.get("headers", ()))
        if size > MAX_HEADER_BYTES:
            await _send_json(send, 431, {"error": f"request headers of {size:,} bytes: at most "
                                                  f"{MAX_HEADER_BYTES:,}"})
            self.metrics.observe(route_label(path), method, 431, time.perf_counter() - t0)
            return
        qs = scope.get("query_string", b"")
        target = len(scope.get("raw_path") or path.encode()) + (len(qs) + 1 if qs else 0)
        if target > MAX_TARGET:     # as httptools refuses it (c4table.serve.transport), for h11
            await _send_json(send, 414, {"error": target_error(target)})
            self.metrics.observe(route_label(path), method, 414, time.perf_counter() - t0)
            return
        if self.direct and method == "GET" and path.startswith("/api/") and path[5:] in self.service.tables:
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
            try:
                status, body = 200, self.service.position(path[5:], query.get("moves", "")).encode()
            except ApiError as e:
                status, body = e.status, json.dumps({"error": e.message}, ensure_ascii=False,
                                                    separators=(",", ":")).encode()
            except TableDamaged as e:
                _log_damage(e)
                status, body = 500, json.dumps({"error": DAMAGED}, separators=(",", ":")).encode()
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
            self.metrics.observe(route_label(path), method, status[0], time.perf_counter() - t0)


async def _send_json(send, status: int, obj) -> None:
    """Answer an HTTP request from the raw ASGI ``send`` with the JSON of ``obj``."""
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()),
                            (b"content-type", JSON_TYPE.encode())]})
    await send({"type": "http.response.body", "body": body})


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
    spec = json.dumps(openapi({name: t.board for name, t in service.tables.items()}))

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
        except ClientDisconnect:   # gone before its body arrived: no one to answer
            return Response(status_code=CLIENT_CLOSED)
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

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return _error(exc.status_code, exc.detail, getattr(exc, "headers", None))

    async def server_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, TableDamaged):   # refused, never answered: the log names the file
            _log_damage(exc)
            return _error(500, DAMAGED)
        return _error(500, f"internal error: {type(exc).__name__}")

    routes = [
        Route("/", page.index, methods=["GET", "HEAD"]),
        Route("/healthz", healthz, methods=["GET", "HEAD"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/api/boards", boards, methods=["GET"]),
        Route("/solve", solve, methods=["GET"]),
        Route("/api/{board}", position, methods=["GET"]),
        Route("/api/{board}/mainline", mainline, methods=["GET"]),
        Route("/api/{board}/batch", batch, methods=["POST"]),
        page.static_files(),
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
def worker_app(paths: list[str], cors: str | None, cache_size: int):
    """The application of one ``--workers`` process: it opens the tables itself (a memory map
    is not handed from process to process). uvicorn calls it (a factory) in each worker."""
    return create_app(paths, cors, cache_size)


def run(tables: dict[str, Table] | list[str], host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
        cors: str | None = None, cache_size: int = DEFAULT_CACHE, access_log: bool = False,
        http: str = "auto") -> None:
    """Serve ``tables`` with uvicorn until interrupted. ``tables``: open tables keyed by board
    (as :func:`~c4table.serve.tables.load_tables` gives them; served as they are), or paths.
    With ``workers`` > 1, that many processes share the port and each opens the tables once
    (from their paths); the settings reach them as arguments of :func:`worker_app`. ``http``:
    uvicorn's HTTP parser, ``httptools``, ``h11`` or ``auto`` (httptools when installed); a
    request it refuses is answered in JSON all the same (:mod:`c4table.serve.transport`)."""
    import uvicorn  # the [serve] extra
    from c4table.serve import transport
    kw = dict(host=host, port=port, access_log=access_log, log_level="info" if access_log else "warning",
              server_header=False, http=transport.protocol(http),
              h11_max_incomplete_event_size=transport.H11_BUFFER)
    if workers <= 1:
        app = create_app(tables, cors, cache_size)
        uvicorn.run(app, **kw)
        return
    paths = [str(t.path) for t in tables.values()] if isinstance(tables, dict) else \
        [os.fspath(t) for t in tables]
    if isinstance(tables, dict):
        for t in tables.values():   # the workers open their own
            t.close()
    factory = functools.partial(worker_app, paths, cors, cache_size)
    config = uvicorn.Config(factory, factory=True, workers=workers, **kw)
    from uvicorn.supervisors import Multiprocess
    sock = config.bind_socket()
    if "target" in inspect.signature(Multiprocess).parameters:   # uvicorn < 0.36
        Multiprocess(config, target=uvicorn.Server(config).run, sockets=[sock]).run()
    else:
        Multiprocess(config, sockets=[sock]).run()
