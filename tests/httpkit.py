"""A static HTTP server with single-range ``Range`` support on loopback, counting its GETs: the
web server the ``.c4z`` tests and the reader contract read tables from."""
from __future__ import annotations

import http.server
import threading
from contextlib import contextmanager
from pathlib import Path


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Static files with single ``Range: bytes=a-b`` / ``bytes=-n`` support; counts GETs."""
    log: list = []

    def log_message(self, *a):
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        rng = self.headers.get("Range")
        type(self).log.append((self.path, rng))
        if not rng:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        a, b = rng.split("=")[1].split("-")
        lo, hi = (len(data) - int(b), len(data) - 1) if a == "" else (int(a), min(int(b), len(data) - 1))
        lo = max(lo, 0)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {lo}-{hi}/{len(data)}")
        self.send_header("Content-Length", str(hi - lo + 1))
        self.end_headers()
        self.wfile.write(data[lo: hi + 1])


@contextmanager
def serving(root: Path):
    """Serve the directory ``root`` on a free loopback port; yields the base URL."""
    RangeHandler.log = []
    handler = lambda *a, **k: RangeHandler(*a, directory=str(root), **k)   # noqa: E731
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
