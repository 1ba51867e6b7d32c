"""The end of the command line's own process: the garbage collector frozen at exit, and
``os._exit`` once a finished build's output is flushed (:func:`c4table.cli.main.main` asks
:func:`skip_finalization`)."""
from __future__ import annotations

_skip_finalization = False
_exit_registered = False


def done_with_interpreter() -> None:
    """Called by a command once everything it wrote is closed (and, for a build, durable):
    if :func:`c4table.cli.main.main` runs as the command line's own process (``argv`` None), it then ends the
    process with ``os._exit`` once the output is flushed, skipping the interpreter's
    finalization (a build's own cost, measured ~20 ms of idle time per build)."""
    global _skip_finalization
    _skip_finalization = _exit_registered


def fast_exit() -> None:
    """Freeze the garbage collector's objects when the interpreter exits (once registered): the
    collections of its shutdown then skip the ~110,000 objects numba and the other libraries
    hold, which took longer than a small build (0.3-1 s; frozen, 0.1 s). Exit handlers and
    flushes still run; cyclic garbage left at exit is not collected (the process ends)."""
    global _exit_registered
    if not _exit_registered:
        import atexit
        import gc
        atexit.register(gc.freeze)
        _exit_registered = True


def skip_finalization() -> bool:
    """Whether a command said it is done with the interpreter (:func:`done_with_interpreter`)
    in a process whose exit :func:`fast_exit` set up."""
    return _skip_finalization
