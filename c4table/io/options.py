"""The switches of the file layer, read once: ``C4TABLE_DIRECT_IO`` (the final table written
and read around the page cache) and ``C4TABLE_RECYCLE`` (spent scratch files written over).

A :class:`~c4table.io.storage.Storage` carries the :class:`IOOptions` it was opened with, so
nothing below it reads the environment. A build reads them when it opens and makes them this
process's options while it is open (:func:`use`): its workers, forked from it, open their
storages with the same ones.

>>> IOOptions.from_config({"C4TABLE_DIRECT_IO": "off"})
IOOptions(direct=False, recycle=True)
"""
from __future__ import annotations

from dataclasses import dataclass

import c4table.config as config

DIRECT_ENV = "C4TABLE_DIRECT_IO"   # "off": every write and read through the page cache
RECYCLE_ENV = "C4TABLE_RECYCLE"    # "0": spent scratch files are deleted, not written over


@dataclass(frozen=True)
class IOOptions:
    """How a storage's local files are written and read."""

    direct: bool = True    # O_DIRECT where the system and file system take it
    recycle: bool = True   # spent scratch files go to the recycle bin for later writes

    @classmethod
    def from_config(cls, environ=None) -> "IOOptions":
        """The options the environment (default ``os.environ``) asks for."""
        return cls(direct=config.get(DIRECT_ENV, environ), recycle=config.get(RECYCLE_ENV, environ))


_in_use: IOOptions | None = None   # those of the build open in this process (or its parent)


def use(options: IOOptions | None) -> IOOptions | None:
    """Make ``options`` this process's options (None: read from the environment again at each
    open); return the previous ones, for the caller to put back."""
    global _in_use
    previous, _in_use = _in_use, options
    return previous


def current() -> IOOptions:
    """The options a storage opened without any gets: those of the build open in this process
    (:func:`use`), else the environment's now."""
    return _in_use if _in_use is not None else IOOptions.from_config()
