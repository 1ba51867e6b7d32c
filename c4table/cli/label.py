"""``c4table label``: the labels of :mod:`c4table.analysis.label` for positions a user has."""
from __future__ import annotations

import click

from c4table.cli.lookup import finish_answers
from c4table.cli.options import TABLE_BOARD_OPTION, TABLE_OPTION, parquet_out, table_path_or_default


RATE_MIN_SECONDS = 1.0
"""The shortest run whose positions per second the summary gives."""


@click.command(short_help="Label your positions into a parquet file")
@TABLE_OPTION
@TABLE_BOARD_OPTION
@click.argument("source", metavar="IN", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              callback=lambda ctx, param, value: parquet_out(value),
              help="parquet file to write (.parquet or .pq)")
@click.option("--column", default="moves", show_default=True,
              help="the column of move strings when IN is a parquet file")
@click.option("--planes", type=click.Choice(["pettingzoo", "openspiel"]), default=None,
              help="also write obs, the board in that library's layout")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def label(table_path, board, source, out, column, planes, quiet):
    """Label the positions of IN (a text file with one move string a line, - for stdin, or a
    .parquet file and its --column): value, Pons' score, each move's score and distance, the
    legal and best moves. A row that cannot be labelled gets its message in the error column;
    the others are labelled all the same (the exit status is then 2, as for lookup)."""
    from c4table.analysis.label import label_file
    from c4table.open import open_table
    from c4table.wording import count
    with open_table(table_path_or_default(table_path, board), board) as table:
        rep = label_file(table, source, out, column=column, planes=planes, quiet=quiet)
    # a rate over less than a second measures the start-up, not the labelling: none then
    rate = f", {rep.rate:,.0f} positions/s" if rep.seconds >= RATE_MIN_SECONDS else ""
    click.echo(f"{rep.path}: {count(rep.rows, 'position')} labelled ({count(rep.errors, 'error')}) "
               f"in {rep.seconds:.1f}s{rate}")
    finish_answers(rep.errors, rep.rows, "labelled", f"the error column of {rep.path}")


COMMANDS = [label]
