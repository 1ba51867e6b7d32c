"""The one way a command fails: one line on stderr (``c4table: error: ...``, the text cut to one
line by :func:`c4table.wording.message`) and an exit status (2 for bad input, 1 for bad data or
a failed check; :mod:`c4table.errors` says which error is which)."""
from __future__ import annotations

import sys

import click

from c4table.wording import message


def fail(msg: str, code: int) -> None:
    """Print ``msg`` as the command's one-line error and exit with ``code``."""
    click.echo(f"c4table: error: {message(msg)}", err=True)
    sys.exit(code)
