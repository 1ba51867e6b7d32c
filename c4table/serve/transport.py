"""The HTTP/1.1 protocols ``c4table serve`` runs under uvicorn: uvicorn's own (httptools, else
h11), whose answer to a request its parser refuses is JSON like every other error of the
server, not uvicorn's plain text. A request target over :data:`MAX_TARGET` bytes is a 414 (it
never reaches the application: httptools cannot split a longer URL), a request head over the
h11 buffer a 431, anything else the parser cannot read a 400. This module imports uvicorn (the
``[serve]`` extra); :func:`c4table.serve.app.run` names its classes by import path."""
from __future__ import annotations

import json
from http import HTTPStatus

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from c4table.serve.limits import MAX_HEADER_BYTES, MAX_TARGET, target_error

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:        # no httptools: h11 serves
    HttpToolsProtocol = None

#: Bytes of request head h11 buffers before it gives up: a request target of
#: :data:`MAX_TARGET` bytes and headers of :data:`MAX_HEADER_BYTES` both reach the application,
#: which answers them (414, 431) as under httptools.
H11_BUFFER = MAX_TARGET + MAX_HEADER_BYTES + (16 << 10)


def refusal(target: int, head: int, whole: bool = True) -> tuple[int, str]:
    """Status and message for a request the parser refused, given the bytes of its request
    target (``whole``: all of it received) and of its head received.

    >>> refusal(70_019, 70_060)
    (414, 'request target (path and query) of 70,019 bytes: at most 65,535')
    >>> refusal(20, 30)[0]
    400
    """
    if target > MAX_TARGET:
        return 414, target_error(target, whole)
    if head > H11_BUFFER:
        return 431, f"request head of {head:,} bytes: headers of at most {MAX_HEADER_BYTES:,}"
    return 400, "not a valid HTTP/1.1 request (the server's HTTP parser refused it)"


def json_body(message: str) -> bytes:
    return json.dumps({"error": message}, ensure_ascii=False, separators=(",", ":")).encode()


if HttpToolsProtocol is not None:
    class HttpToolsJSON(HttpToolsProtocol):
        """uvicorn's httptools protocol; a request its parser refuses is answered in JSON."""

        def send_400_response(self, msg: str) -> None:
            url = getattr(self, "url", b"")
            status, message = refusal(len(url), len(url))
            body = json_body(message)
            head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode()]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head += [b"content-type: application/json\r\n",
                     b"content-length: " + str(len(body)).encode() + b"\r\n",
                     b"connection: close\r\n\r\n"]
            self.transport.write(b"".join(head) + body)
            self.transport.close()


class H11JSON(H11Protocol):
    """uvicorn's h11 protocol; a request its parser refuses is answered in JSON."""

    def send_400_response(self, msg: str) -> None:
        data = self.conn.trailing_data[0]
        line_end = data.find(b"\r\n")
        line = data if line_end < 0 else data[:line_end]        # "GET /target HTTP/1.1"
        parts = line.split(b" ")
        target = len(parts[1]) if len(parts) > 1 else 0
        status, message = refusal(target, len(data), whole=len(parts) > 2)
        body = json_body(message)
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"connection", b"close")]
        try:
            out = self.conn.send(h11.Response(status_code=status, headers=headers,
                                              reason=HTTPStatus(status).phrase))
            out += self.conn.send(h11.Data(data=body)) + self.conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError:   # h11 cannot answer in this state: the raw bytes
            out = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
                   f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body
        self.transport.write(out)
        self.transport.close()


def protocol(http: str = "auto") -> str:
    """Import path of the protocol class for uvicorn's ``http`` setting: ``httptools``,
    ``h11``, or ``auto`` (httptools when installed, as uvicorn chooses)."""
    if http == "h11" or (http == "auto" and HttpToolsProtocol is None):
        return f"{__name__}:H11JSON"
    if http in ("auto", "httptools"):
        if HttpToolsProtocol is None:
            raise ValueError("httptools is not installed")
        return f"{__name__}:HttpToolsJSON"
    raise ValueError(f"unknown HTTP protocol {http!r}: auto, httptools or h11")
