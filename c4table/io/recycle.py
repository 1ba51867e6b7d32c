"""The recycle bin of a local build directory, and directories deleted in the background.

Writing a new file on some VMs costs far more CPU than writing over one whose pages are still
cached (the guest gives freed memory back to the host, and touching it again faults there).
Spent scratch files (runs, messages) therefore go to a bin (``work/recycle/``) instead of being
unlinked, and a new scratch file of known size is written over a spent one (same inode) and
truncated to its length, unless the storage's options say not to
(``C4TABLE_RECYCLE=0``: :class:`~c4table.io.options.IOOptions`). Deleted directories are renamed
aside and removed by a background thread (:func:`settle_deletes` waits for them).
"""
from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from c4table.io.files import _background, background
from c4table.io.options import RECYCLE_ENV  # noqa: F401  (where the tests and docs look for it)



RECYCLE_DIR = "work/recycle"   # the recycle bin of a local build directory (Storage.recycle_tree)
RECYCLE_MIN_BYTES = 1 << 20    # smaller spent files are unlinked, smaller writes go to new files


_trash_seq = itertools.count()   # names of set-aside directories and binned files


def _bin_sizes(bin_dir: Path) -> dict[str, int]:
    """{name: size} of the files in the recycle bin ``bin_dir`` ({} if there is none)."""
    sizes = {}
    try:
        with os.scandir(bin_dir) as it:
            for e in it:
                try:
                    sizes[e.name] = e.stat(follow_symlinks=False).st_size
                except FileNotFoundError:   # claimed meanwhile
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return sizes


def _is_trash(name: str) -> bool:
    """A directory :meth:`Storage.delete_tree` set aside (``.NAME.deleted-PID-N``): listings skip
    it, since the background thread may be removing it while they walk."""
    return name.startswith(".") and ".deleted-" in name


def _set_aside(d: Path) -> None:
    """Rename the emptied directory ``d`` aside (``.NAME.deleted-PID-N``) and remove it in the
    background (:func:`_remove_later`); where the rename fails, remove it now."""
    trash = d.with_name(f".{d.name}.deleted-{os.getpid()}-{next(_trash_seq)}")
    try:
        os.rename(d, trash)
    except OSError:
        shutil.rmtree(d, ignore_errors=True)
        return
    _remove_later(trash)


def _remove_later(path: Path) -> None:
    """Remove the (emptied) directory tree ``path`` in this process's background thread."""
    background("rmdir").submit(shutil.rmtree, path, ignore_errors=True)


def settle_deletes() -> None:
    """Wait until the directories :meth:`Storage.delete_tree` set aside are removed."""
    got = _background.get("rmdir")
    if got is not None and got[0] == os.getpid():
        got[1].submit(int).result()   # one thread, jobs in order: the earlier ones are done
