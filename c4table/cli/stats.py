"""``c4table stats``: per-ply counts of a build directory or a table (Table 2 of Böck's
paper), as TSV or markdown, and their plot."""
from __future__ import annotations

import re
from pathlib import Path

import click


@click.command(short_help="Per-ply counts: won, drawn and lost positions")
@click.argument("path", metavar="DIR|FILE", type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["tsv", "markdown"]), default="tsv", show_default=True,
              help="tab-separated values, or a markdown table")
@click.option("--png", "png", type=click.Path(dir_okay=False), default=None,
              help="also plot the counts per ply (log scale) into this PNG file")
@click.option("--scan", is_flag=True, help="count by scanning the table file even if a manifest is there")
@click.option("--board", "board", default=None, help="board of the table if its name does not say")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines while scanning")
def stats(path, fmt, png, scan, board, quiet):
    """Per ply: won_by_A / drawn / lost_by_A (positions the first player, A, wins, draws or
    loses with perfect play, whoever is to move), positions (mirror images
    counted), table entries, and finished games (a line of k or a full board; BDD mode's
    won_games counts the lines only), as in Table 2 of Böck's paper. DIR is a build
    directory (its manifest.json) or FILE a table, which is scanned if no manifest describes
    it."""
    from c4table.analysis.stats import format_table, plot_stats, ply_stats, pyplot
    if png:
        pyplot()   # a missing [plot] extra is one line before any work
    rows = ply_stats(path, scan=scan, board=board, quiet=quiet)
    click.echo(format_table(rows, fmt))
    if png:
        p = Path(path)
        title = p.name if p.is_dir() else p.stem
        named = re.match(r"connect(\d+)_(.+)$", title)   # connect3_5x4 -> Connect-3 5x4
        label = f"Connect-{named[1]} {named[2]}" if named else f"Connect-4 {title}"
        plot_stats(rows, png, f"{label}: positions per ply")
        click.echo(f"plot written to {png}", err=True)


COMMANDS = [stats]
