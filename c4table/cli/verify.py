"""``c4table verify``: a table's hashes and structure against its manifest, the known tables
and ``--sha256``; exit status 0 on a match, 1 on a mismatch."""
from __future__ import annotations

import sys

import click

from c4table.cli.fail import fail as _fail
from c4table.errors import EXIT_FAILED
from c4table.cli.options import table_or_build_dir


@click.command(short_help="Check a table: hashes, structure, known tables, sums")
@click.argument("table_path", metavar="FILE|DIR", type=click.Path())
@click.option("--board", default=None, help="board of the table if its name does not say")
@click.option("--sha256", "sha256", default=None, help="expected sha256 (hex)")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
@click.option("--file-hashes", is_flag=True,
              help="also compute the whole-file sha256 and md5 (one core each; done anyway when "
                   "a reference records a sha256 and no tree hash, e.g. Cadot's 7x6)")
@click.option("--write-sums", is_flag=True,
              help="write the block checksums FILE.sums that readers check (a table that came "
                   "without them), if FILE passes every other check")
def verify(table_path, board, sha256, quiet, file_hashes, write_sums):
    """Hash FILE (its tree hash sha256_tree, the table's identity, in parallel; sha256 and md5
    with --file-hashes or --sha256, or when a reference has only those), check its structure
    and compare it with the manifest beside it, the known tables shipped with c4table, --sha256
    and its block checksums (FILE.sums). DIR: the table of a build directory. Exit 0 on match,
    1 on mismatch."""
    from c4table.analysis.verify import verify_table
    from c4table.wording import count
    if sha256 is not None and (len(sha256.strip()) != 64 or
                               any(c not in "0123456789abcdefABCDEF" for c in sha256.strip())):
        raise click.BadParameter("expected 64 hex digits", param_hint="--sha256")
    rep = verify_table(table_or_build_dir(table_path), board, sha256, quiet, write_sums=write_sums,
                       file_hashes=file_hashes)
    click.echo(f"file     {rep.path}\nboard    {rep.board}\nentries  {rep.entries:,}\n"
               f"bytes    {rep.bytes:,}\ntree     {rep.sha256_tree}")
    if rep.sha256:
        click.echo(f"sha256   {rep.sha256}\nmd5      {rep.md5}")
    if rep.sums in ("match", "absent", "written"):
        click.echo(f"sums     {rep.sums}")
    for p in rep.problems:
        click.echo(f"problem  {p}")
    if rep.ok:
        click.echo(rep.verdict())
        sys.exit(0)
    # the problems are listed once, above; the verdict counts them
    click.echo(f"MISMATCH {rep.path.name}: {count(len(rep.problems), 'problem')}")
    _fail(f"{rep.path}: failed verification ({count(len(rep.problems), 'problem')})", EXIT_FAILED)


COMMANDS = [verify]
