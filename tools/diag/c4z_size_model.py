"""How well the ``.c4z`` size model of ``plan`` (``c4table.pipeline.planning.c4zsize``)
predicts the boards it knows: each measured board left out of the model and predicted from the
others, per block codec, and what it predicts for bigger boards; ``--fit-6x6`` puts 6x6's
sampled format-3 streams into the format-3 fit, which the model leaves out.

    python -m tools.diag.c4z_size_model [--fit-6x6] [--built 7x5=13377241709]

``--built BOARD=BYTES``: a ``build --format c4z`` file (format 3) of a board the model does not
hold, compared with the model's format-3 figure times the build's profile ratio.
"""
from __future__ import annotations

import argparse
import contextlib

from c4table.c4z.format import FRAME_CODEC, RULE_CODEC, TRANSFORM
from c4table.game.board import Board
from c4table.pipeline.planning import c4zsize

SIXBYSIX_STREAMS = (34_586_522_319, 0.694 / 8, 0.896 / 8)   # c4zsize.SAMPLED_SOURCES["6x6"]
BIG = {"7x5": 56_415_101_059, "7x6": 2_265_994_664_313}     # entries (known_tables.json)
RULE_TABLES = {RULE_CODEC: ("C4Z4_MEASURED", "C4Z4_BITS"),
               FRAME_CODEC: ("C4Z5_MEASURED", "C4Z5_BITS")}


@contextlib.contextmanager
def patched(**tables):
    """``c4zsize``'s tables replaced for the block, then put back."""
    old = {k: getattr(c4zsize, k) for k in tables}
    try:
        for k, v in tables.items():
            setattr(c4zsize, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(c4zsize, k, v)


def left_out_format3() -> dict[str, tuple[float, float, float]]:
    """Each board of the format-3 fit predicted from the others: (keys, symbols, total)
    relative errors."""
    out = {}
    streams = dict(c4zsize.C4Z_STREAMS)
    for name, (n, k, s) in streams.items():
        with patched(C4Z_STREAMS={b: v for b, v in streams.items() if b != name},
                     C4Z_MEASURED={}):
            e = c4zsize.estimate(Board.parse(name), n, TRANSFORM)
        out[name] = (e.keys / k - 1, e.symbols / s - 1, (e.keys + e.symbols - k - s) / (k + s))
    return out


def left_out_rule(codec: str) -> dict[str, float]:
    """Each measured file of a rule-coded format predicted from the others: relative error."""
    mt, bt = RULE_TABLES[codec]
    files, bits = dict(getattr(c4zsize, mt)), dict(getattr(c4zsize, bt))
    streams = dict(c4zsize.C4Z_STREAMS)
    out = {}
    for name, (n, size, _) in files.items():
        with patched(**{mt: {b: v for b, v in files.items() if b != name},
                        bt: {b: v for b, v in bits.items() if b != name},
                        "C4Z_STREAMS": {b: v for b, v in streams.items() if b != name}}):
            e = c4zsize.estimate(Board.parse(name), n, codec)
        out[name] = n * e.bytes_per_entry / size - 1
    return out


def report(built: dict[str, int]) -> None:
    """Print the left-out errors and the big boards' figures with the tables as they are."""
    f3 = left_out_format3()
    print("format 3, left out (keys / symbols / total): " + "; ".join(
        f"{b} {k:+.3f} / {s:+.3f} / {t:+.3f}" for b, (k, s, t) in f3.items()))
    for codec in RULE_TABLES:
        print(f"{codec}, left out: " + "; ".join(
            f"{b} {x:+.3f}" for b, x in left_out_rule(codec).items()))
    for name, n in BIG.items():
        b = Board.parse(name)
        line = ", ".join(f"{codec} {n * c4zsize.estimate(b, n, codec).bytes_per_entry / 1e9:,.2f} GB"
                         for codec in (FRAME_CODEC, TRANSFORM))
        print(f"{name}: {line}")
    for name, size in built.items():
        n = BIG.get(name)
        if n is None:
            raise SystemExit(f"no entry count for {name}")
        e = c4zsize.estimate(Board.parse(name), n, TRANSFORM)
        pred = n * e.bytes_per_entry * c4zsize.build_ratio(TRANSFORM)
        print(f"{name} build --format c4z: predicted {pred:,.0f} bytes, built {size:,}: "
              f"{pred / size - 1:+.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit-6x6", action="store_true",
                    help="fit format 3's streams with 6x6's sample too")
    ap.add_argument("--built", nargs="*", default=[], metavar="BOARD=BYTES")
    a = ap.parse_args(argv)
    built = {k: int(v) for k, v in (x.split("=", 1) for x in a.built)}
    if a.fit_6x6:
        with patched(C4Z_STREAMS={**c4zsize.C4Z_STREAMS, "6x6": SIXBYSIX_STREAMS}):
            report(built)
    else:
        report(built)


if __name__ == "__main__":
    main()
