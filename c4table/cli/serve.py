"""The ``c4table serve`` command: options, checks that end in one line, and the start of the
server of :mod:`c4table.serve.app` (which needs the ``serve`` extra: Starlette and uvicorn).

Registered on the ``c4table`` group by :func:`c4table.cli.main._register_commands`; errors follow
:mod:`c4table.cli.main` (one line on stderr, the exit status of :mod:`c4table.errors`: a table
that is missing or of a board served twice, an address that cannot be listened on or a missing
serve extra is bad input, 2).

>>> from click.testing import CliRunner
>>> r = CliRunner().invoke(serve, ["--table", "nosuch/connect4_5x4.dat", "--port", "8001"])
>>> type(r.exception).__name__            # c4table.cli.main.main makes it one line and exit status 2
'MissingTableError'
"""
from __future__ import annotations

import errno
import socket

import click

from c4table.errors import MissingExtraError


def _check_port(host: str, port: int) -> None:
    """Fail with one line if ``host:port`` cannot be listened on (in use, no such address)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise click.BadParameter(f"{host}: {e.strerror or e}", param_hint="--host") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            raise click.BadParameter(f"cannot listen on {host}:{port}: {e.strerror or e}",
                                     param_hint="--port" if e.errno == errno.EADDRINUSE
                                     else "--host") from None


@click.command(short_help="Serve tables over HTTP: a JSON API and a web board")
@click.option("--table", "tables", multiple=True, required=True, type=click.Path(),
              metavar="FILE|DIR", help="table file (or its build directory) to serve (repeat for several boards; keyed by board, e.g. 5x4)")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              metavar="PORT", help="TCP port to listen on")
@click.option("--workers", type=click.IntRange(1, 256), default=1, show_default=True,
              help="server processes sharing the port")
@click.option("--cors", "cors", default=None, metavar="ORIGIN",
              help="allow browser pages of this origin (or *) to call the API; off by default")
@click.option("--cache", "cache", type=click.IntRange(0, 10_000_000), default=20_000, show_default=True,
              help="answers kept in each process's LRU response cache (0: none)")
@click.option("--access-log", is_flag=True, help="log every request on stderr")
def serve(tables, host, port, workers, cors, cache, access_log):
    """Serve tables over HTTP: a JSON API (/api/BOARD?moves=M, /api/BOARD/mainline, POST
    /api/BOARD/batch, /healthz, /metrics, /openapi.json) and the web analysis board at /."""
    try:
        from c4table.serve import app as srv
    except ImportError as e:
        raise MissingExtraError(f"c4table serve needs the serve extra ({e.name} is missing): "
                                "pip install 'c4table[serve]'") from None
    from c4table.cli.options import table_or_build_dir
    tables = [table_or_build_dir(t, "tables") for t in tables]
    try:
        loaded = srv.load_tables(tables)
    except srv.ServeError as e:
        raise click.BadParameter(str(e), param_hint="--table") from None
    boards = ", ".join(f"{name} ({t.entries:,} entries)" for name, t in sorted(loaded.items()))
    try:
        _check_port(host, port)
    except click.UsageError:
        for t in loaded.values():
            t.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"c4table: serving {boards} at http://{shown}:{port}/ ({workers} "
               f"process{'es' if workers > 1 else ''}; Ctrl-C stops)", err=True)
    # the tables opened above are the ones served (each --workers process opens its own)
    srv.run(loaded, host=host, port=port, workers=workers, cors=cors, cache_size=cache,
            access_log=access_log)
