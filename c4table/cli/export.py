"""``c4table export``: the positions of a ply (or all) with their outcomes as a parquet file,
or as a Hugging Face dataset directory (``--hf``)."""
from __future__ import annotations

import click

from c4table.cli.options import TABLE_BOARD_OPTION, TABLE_OPTION, parquet_out, table_path_or_default


def _ply_arg(value: str) -> int | None:
    if value == "all":
        return None
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r}: a ply number or 'all'") from None


@click.command(short_help="Write a table's positions to parquet or a HF dataset")
@TABLE_OPTION
@TABLE_BOARD_OPTION
@click.option("--ply", "ply", default="all", show_default=True, help="ply to export (number of chips), or all")
@click.option("--out", "out", required=False, type=click.Path(dir_okay=False),
              callback=lambda ctx, param, value: value if value is None else parquet_out(value),
              help="parquet file to write (.parquet or .pq; its directory must exist)")
@click.option("--per-move", "per_move", is_flag=True,
              help="add value, score (Pons), move_scores, move_distance, legal_mask, best_mask")
@click.option("--planes", type=click.Choice(["pettingzoo", "openspiel"]), default=None,
              help="add obs, the board in that library's layout (implies --per-move)")
@click.option("--hf", "hf", default=None, type=click.Path(file_okay=False),
              help="write a Hugging Face dataset directory (data/*.parquet, README.md) instead of --out; "
                   "always with the per-move columns")
@click.option("--split", "split", default=None, metavar="test=F",
              help="with --hf: the fraction F of positions (by a hash of the key) in the test split")
@click.option("--rows-per-shard", "rows_per_shard", type=click.IntRange(min=1), default=500_000,
              show_default=True, help="with --hf: rows per parquet shard")
@click.option("--decisive", is_flag=True,
              help="with --hf: only positions where the side to move can reach two of win, draw, loss")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="with --hf: a uniform sample of N rows (by a seeded hash), in random order")
@click.option("--seed", type=int, default=0, show_default=True, help="with --sample")
@click.option("--nonterminal", is_flag=True, help="leave out finished games")
@click.option("--mirror", is_flag=True, help="add the mirror image of every asymmetric position")
@click.option("--quiet-positions", "quiet_positions", is_flag=True,
              help="only positions where nobody has won and neither side can win with one move "
                   "(John Tromp's 8-ply selection: 67,557 positions on 7x6 at ply 8)")
@click.option("--source", type=click.Choice(["auto", "table", "shards"]), default="auto", show_default=True,
              help="where entries come from: the build's backward shards if present (auto), or a scan")
@click.option("-q", "--quiet", is_flag=True, help="no progress lines")
def export(table_path, board, ply, out, per_move, planes, hf, split, rows_per_shard, decisive,
           sample, seed, nonterminal, mirror, quiet_positions, source, quiet):
    """Write every position of a ply (or all) to a parquet file: one uint8 column per cell
    (a1..: column letter, row from the bottom; 0 empty, 1 A, 2 B), ply, moves (one move order
    reaching it), outcome, distance, terminal, key (and mirrored with --mirror)."""
    from c4table.analysis.export import export_positions
    from c4table.open import open_table
    ply_n = _ply_arg(ply)
    with open_table(table_path_or_default(table_path, board), board) as table:
        if ply_n is not None and not 0 <= ply_n <= table.board.cells:
            raise click.BadParameter(f"ply {ply_n} does not exist on board {table.board} "
                                     f"(0..{table.board.cells})", param_hint="--ply")
        if hf is not None:
            return _export_hf(table, hf, ply_n, split, rows_per_shard, decisive, sample, seed,
                              planes, nonterminal, mirror, quiet_positions, quiet)
        if out is None:
            raise click.UsageError("give --out FILE.parquet (or --hf DIR)")
        if split or decisive or sample:
            raise click.UsageError("--split, --decisive and --sample go with --hf DIR")
        rep = export_positions(table, out, ply_n, nonterminal=nonterminal, mirror=mirror,
                               quiet_positions=quiet_positions, source=source, quiet=quiet,
                               per_move=per_move or planes is not None, planes=planes)
    from c4table.wording import count
    click.echo(f"{rep.path}: {count(rep.rows, 'row')} ({count(rep.entries, 'table entry')}, from "
               f"{rep.source}) in {rep.seconds:.1f}s, {rep.rate:,.0f} rows/s")


def _export_hf(table, hf, ply, split, rows_per_shard, decisive, sample, seed, planes,
               nonterminal, mirror, quiet_positions, quiet):
    """``export --hf DIR``."""
    from c4table.analysis.dataset import export_hf
    test = 0.0
    if split:
        name, _, frac = split.partition("=")
        try:
            test = float(frac)
        except ValueError:
            test = -1.0
        if name != "test" or not 0 <= test < 1:
            raise click.BadParameter(f"{split!r}: test=F with 0 <= F < 1", param_hint="--split")
    if quiet_positions:
        raise click.UsageError("--quiet-positions does not go with --hf")
    rep = export_hf(table, hf, ply=ply, test=test, rows_per_shard=rows_per_shard, decisive=decisive,
                    sample=sample, seed=seed, planes=planes, nonterminal=nonterminal, mirror=mirror,
                    quiet=quiet)
    rows = ", ".join(f"{name} {n:,} rows in {rep.shards[name]} shard(s)" for name, n in rep.rows.items())
    click.echo(f"{rep.path}: {rows} ({rep.entries:,} table entries) in {rep.seconds:.1f}s")


COMMANDS = [export]
