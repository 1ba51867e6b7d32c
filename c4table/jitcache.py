"""Where numba keeps the compiled kernels: one cache directory per version of the source of
every module of the package that uses numba.

numba's on-disk cache (``@njit(cache=True)``) checks only the source file of the function it
compiled, yet that compiled code holds every numba function it calls, from other modules too:
changing ``game/lines.py`` alone would leave the kernels of other modules running its old line
test. So :func:`configure` (run when ``c4table`` is imported, before numba is) points numba at
a directory named after a hash of those modules' source (:func:`source_key`): a change to any
of them compiles everything once, into a new directory.

The directory is ``NUMBA_CACHE_DIR/c4table-KEY`` when the user sets ``NUMBA_CACHE_DIR``, else
``__pycache__/numba/c4table-KEY`` in the package (older keys there are removed) or, where the
package cannot be written, ``numba/c4table-KEY`` under ``C4TABLE_CACHE``'s directory
(``docs/settings.md``). Processes started by c4table inherit it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import c4table.config as config

PREFIX = "c4table-"


def package_roots() -> list[Path]:
    """The folders of the package's modules: ``c4table`` and ``c4table.pipeline`` (its own
    folder, ``pipeline/``, in a checkout)."""
    here = Path(__file__).resolve().parent
    roots = [here]
    pipeline = here.parent / "pipeline"
    if not (here / "pipeline").is_dir() and (pipeline / "stages").is_dir():
        roots.append(pipeline)
    return roots


def source_key(roots: list[Path]) -> str:
    """A hash of the source of every module under ``roots`` that mentions numba (its path
    under its root, then its bytes): 16 hex digits.
    """
    h = hashlib.sha256()
    for root in roots:
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files += [Path(folder, n) for n in names if n.endswith(".py")]
        for path in sorted(files):
            data = path.read_bytes()
            if b"numba" in data:
                h.update(path.relative_to(root).as_posix().encode() + b"\0")
                h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def cache_dir(environ=os.environ) -> Path:
    """The directory numba should cache the package's kernels in (module docstring)."""
    key = PREFIX + source_key(package_roots())
    given = environ.get("NUMBA_CACHE_DIR")
    if given:   # one set by c4table (a process it started, or another version's) or the user's
        path = Path(given)
        if path.name == key:
            return path
        return (path.parent if path.name.startswith(PREFIX) else path) / key
    base = Path(__file__).resolve().parent / "__pycache__" / "numba"
    if _writable(base):
        for old in base.glob(PREFIX + "*"):
            if old.name != key:
                shutil.rmtree(old, ignore_errors=True)
        return base / key
    return config.cache_dir() / "numba" / key


def configure() -> Path | None:
    """Point numba's cache at :func:`cache_dir` (through ``NUMBA_CACHE_DIR``, and numba's
    configuration if numba is already imported). None, and nothing changed, in a frozen
    program or where the package's source cannot be read."""
    if getattr(sys, "frozen", False):
        return None
    try:
        path = cache_dir()
    except OSError:
        return None
    os.environ["NUMBA_CACHE_DIR"] = str(path)
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = str(path)
    return path
