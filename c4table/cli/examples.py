"""The examples every ``c4table`` subcommand shows at the end of its ``--help``.

:func:`add_examples` puts them on the click commands (as epilogs, unwrapped), so
``c4table lookup --help`` ends with lines a user can copy.

>>> "c4table lookup" in EXAMPLES["lookup"][0]
True
"""
from __future__ import annotations

import click

T = "tables/5x4/connect4_5x4.dat"

EXAMPLES: dict[str, list[str]] = {
    "build": ["c4table build 5x4 --out tables/5x4", "c4table build 6x4 --workers 2 --memory 2GiB",
              "c4table build 7x6 --root 66362117563257723363 --out tables/7x6-root",
              "c4table build 5x4 --connect 3 --compress"],
    "forward": ["c4table forward 7x6 --out /data/7x6 --max-ply 12"],
    "backward": ["c4table backward 5x4 --out tables/5x4"],
    "merge": ["c4table merge 5x4 --out tables/5x4"],
    "plan": ["c4table plan 7x6 --workers 64 --memory-per-worker 16GiB",
             "c4table plan 7x6 --from /data/7x6 --json"],
    "lookup": [f"c4table lookup --table {T} 3344 \"\"",
               f"c4table lookup --json --table {T} - < positions.txt",
               f"c4table lookup --table {T} --drawing board.txt --draw",
               f"c4table lookup --table {T} --scores 3344"],
    "best": [f"c4table best --table {T} 3344", f"printf '.....\\n.....\\n..o..\\n.xxo.\\n' | "
             f"c4table best --table {T} --drawing -"],
    "play": [f"c4table play --table {T} --side B", f"c4table play --table {T} --start 3344"],
    "verify": [f"c4table verify {T}", "c4table verify tables/5x4 --sha256 HEX"],
    "stats": ["c4table stats tables/5x4 --format markdown", f"c4table stats {T} --scan --png wdl.png"],
    "export": [f"c4table export --table {T} --ply 8 --out ply8.parquet",
               f"c4table export --table {T} --ply 8 --per-move --planes pettingzoo --out ply8.parquet",
               f"c4table export --table {T} --hf ds --split test=0.02 --decisive --sample 100000 --seed 1"],
    "label": [f"c4table label --table {T} positions.txt --out labels.parquet",
              f"c4table label --table {T} games.parquet --column moves --planes openspiel --out labels.parquet"],
    "bdd": ["c4table bdd count 5x4", "c4table bdd solve 4x4 --json"],
    "bdd count": ["c4table bdd count 6x5 --json -q"],
    "bdd solve": ["c4table bdd solve 5x4"],
    "serve": [f"c4table serve --table {T} --port 8000",
              "c4table serve --table tables/5x4/connect4_5x4.dat --table tables/6x5/connect4_6x5.dat"],
    "compress": [f"c4table compress {T}", f"c4table compress {T} -o /srv/c4/5x4.c4z"],
    "decompress": ["c4table decompress tables/5x4/connect4_5x4.c4z -o connect4_5x4.dat"],
    "crosscheck": ["c4table crosscheck tables/5x4", "c4table crosscheck /data/7x6/manifest.json -q"],
}


#: The examples of ``c4table --help`` itself: a first session.
TOP_EXAMPLES = ["c4table build 5x4 --out tables/5x4", f"c4table lookup --table {T} 3344",
                f"c4table best --table {T} \"\"", f"c4table verify {T}",
                f"c4table serve --table {T}", "c4table plan 7x6"]


def add_examples(group: click.Group, prefix: str = "") -> None:
    """Set the examples of :data:`EXAMPLES` as the epilog of every command of ``group``
    (recursively for subgroups), and :data:`TOP_EXAMPLES` as the top-level group's."""
    if not prefix:
        group.epilog = ("\b\nExamples:\n" + "\n".join(f"  {x}" for x in TOP_EXAMPLES)
                        + "\n\nEach command's --help ends with its own examples; all are in docs/cli.md.")
    for name, cmd in group.commands.items():
        path = f"{prefix}{name}"
        lines = EXAMPLES.get(path)
        if lines:
            cmd.epilog = "\b\nExamples:\n" + "\n".join(f"  {x}" for x in lines)
        if isinstance(cmd, click.Group):
            add_examples(cmd, prefix=f"{path} ")
