"""The sizes of a request ``c4table serve`` accepts: its body, its headers and its request
target (path and query). The application answers a larger one with a JSON error (413, 431,
414), and so does the HTTP protocol (:mod:`c4table.serve.transport`) when its parser refuses it
first."""
from __future__ import annotations

#: Largest request body accepted (a full batch of 7x6 move strings is about 500 KB).
MAX_BODY = 4 << 20
#: Most bytes of request headers accepted (names and values together; nginx's default buffers
#: hold 32 KiB): more is answered 431.
MAX_HEADER_BYTES = 32 << 10
#: Most bytes of a request target (path and query; httptools splits no longer URL): more is
#: answered 414. A position is far shorter: the application refuses one longer than its board
#: can hold with a message of its own.
MAX_TARGET = 65_535


def target_error(target: int, whole: bool = True) -> str:
    """The message of a request target of ``target`` bytes (at least, unless ``whole``), over
    :data:`MAX_TARGET`."""
    return f"request target (path and query) of {'' if whole else 'over '}{target:,} bytes: " \
           f"at most {MAX_TARGET:,}"
