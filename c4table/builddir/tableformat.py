"""The table formats a build can write (``dat``, ``c4z``): one object each, chosen once.

A build asks its :class:`TableFormat` what the format implies (the file's suffix, whether the
merge writes raw entries, whether spent scratch may be kept for reuse, whether an object store
may hold the build, whether ``DIR/work`` survives the merge); nothing else compares format
names. The manifest records a finished table's format in its
:class:`~c4table.builddir.records.TableRecord`. The merge driver of each format lives in the
pipeline (``c4table.pipeline.stages.build.MERGE_DRIVERS``), keyed by these objects.

>>> get("c4z").suffix, get("dat").raw
('.c4z', True)
>>> get("xz")
Traceback (most recent call last):
...
c4table.errors.BuildInputError: table format 'xz': give dat or c4z
"""
from __future__ import annotations

from dataclasses import dataclass

from c4table.errors import BuildInputError


@dataclass(frozen=True)
class TableFormat:
    """What one table format means for a build."""

    name: str                # as given to ``--format`` and recorded in the manifest
    suffix: str              # of the table's file
    raw: bool                # the merge writes the raw entries (Cadot's bytes on disk)
    keeps_spent: bool        # spent scratch may be kept for reuse (the raw merge needs the room)
    remote: bool             # the build directory may be an object store (a pyarrow.fs URI)
    keeps_work: bool         # ``DIR/work`` may outlive the merge (``keep_work``)
    summary: str             # for ``--help`` and messages

    def __str__(self) -> str:
        return self.name

    def file_name(self, raw_name: str) -> str:
        """This format's file name for the table whose raw file is ``raw_name``
        (``connect4_WxH.dat``).

        >>> get("c4z").file_name("connect4_6x5.dat")
        'connect4_6x5.c4z'
        """
        stem = raw_name[:-len(DAT.suffix)] if raw_name.endswith(DAT.suffix) else raw_name
        return stem + self.suffix


DAT = TableFormat("dat", ".dat", raw=True, keeps_spent=True, remote=True, keeps_work=True,
                  summary="the raw table (.dat)")
C4Z = TableFormat("c4z", ".c4z", raw=False, keeps_spent=False, remote=False, keeps_work=False,
                  summary="straight into a compressed .c4z with no raw file on disk (docs/c4z.md)")
FORMATS: dict[str, TableFormat] = {f.name: f for f in (DAT, C4Z)}
NAMES = tuple(FORMATS)


def get(fmt: "str | TableFormat") -> TableFormat:
    """The format named ``fmt`` (a :class:`TableFormat` is returned as it is)."""
    if isinstance(fmt, TableFormat):
        return fmt
    try:
        return FORMATS[fmt]
    except (KeyError, TypeError):
        raise BuildInputError(f"table format {fmt!r}: give {' or '.join(NAMES)}") from None
