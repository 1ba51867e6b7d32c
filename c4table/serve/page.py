"""The web analysis board: ``GET /`` and ``/static/``, plain HTML, CSS and JavaScript from
``c4table/serve/web/``."""
from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

WEB_DIR = Path(__file__).resolve().parent / "web"


async def index(request: Request) -> Response:
    """The web board's page."""
    return FileResponse(WEB_DIR / "index.html", media_type="text/html")


def static_files() -> Mount:
    """``/static/``: the board's script and style sheet."""
    return Mount("/static", StaticFiles(directory=WEB_DIR), name="static")
