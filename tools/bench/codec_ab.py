"""A ``.c4z`` block codec's encode and decode, one checkout's code against another's, side by
side in one run: the same stretches of a finished table, evenly spread, cut into blocks and
encoded (``encode_entries``, from keys and outcome bytes) then decoded (``decode_rows``, to raw
rows) by the codec each side registers under ``--codec``; each side runs in its own process
(``PYTHONPATH`` first: the other checkout), the sides alternated round by round, and the
least CPU (``process_time``, one core) of the rounds kept per side. Prints ns per entry of
each, the blocks' share of the raw size, and whether both sides wrote the same bytes (a
digest of every block).

    python -m tools.bench.codec_ab TABLE.dat --old-code DIR [--codec rulekeys-frames-v5]
        [--block-entries 65536] [--level 19] [--samples 8] [--span 1048576] [--rounds 3]

``DIR`` holds the other checkout's ``c4table/`` (``git worktree add DIR COMMIT``). The sides
import nothing of each other: this file is run as a script by both.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def measure(table: str, board_name: str, codec_name: str, block_entries: int, level: int,
            samples: int, span: int) -> dict:
    """One side's round, in this process: CPU of encoding and decoding the sampled stretches."""
    import numpy as np
    import xxhash

    import c4table.c4z  # noqa: F401  (registers the codecs)
    from c4table.c4z.registry import get_codec
    from c4table.game.board import Board
    from c4table.table.source import keys_of_rows
    board = Board.parse(board_name)
    E = board.entry_size
    n_all = os.path.getsize(table) // E
    span = min(span, n_all // samples)        # a small table: shorter stretches
    starts = np.linspace(0, n_all - span, samples).astype(np.int64)
    codec = get_codec(codec_name)(board, part_entries=block_entries, level=level)
    stretches = []
    with open(table, "rb") as f:
        for s in starts.tolist():
            rows = np.frombuffer(os.pread(f.fileno(), span * E, s * E), np.uint8).reshape(-1, E)
            stretches.append((keys_of_rows(rows, E - 1), rows[:, E - 1].copy()))
    k0, o0 = stretches[0][0][:300], stretches[0][1][:300]
    first, b0 = codec.encode_entries(k0, o0)      # compile or load the kernels: untimed
    codec.decode_rows(b0, k0.shape[0], first)
    enc = dec = 0.0
    size = 0
    digest = xxhash.xxh64()
    for keys, outs in stretches:
        blocks = []
        t = time.process_time()
        for o in range(0, span, block_entries):
            blocks.append(codec.encode_entries(keys[o: o + block_entries], outs[o: o + block_entries]))
        enc += time.process_time() - t
        for first, b in blocks:
            size += len(b)
            digest.update(b)
        t = time.process_time()
        for o, (first, b) in zip(range(0, span, block_entries), blocks):
            codec.decode_rows(b, min(block_entries, span - o), first)
        dec += time.process_time() - t
    n = samples * span
    return {"entries": n, "encode_ns": 1e9 * enc / n, "decode_ns": 1e9 * dec / n,
            "share": size / (n * E), "digest": digest.hexdigest()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("--board", help="the board (default: from the file name connect4_WxH.dat)")
    ap.add_argument("--old-code", type=Path, required=True)
    ap.add_argument("--codec", default="rulekeys-frames-v5")
    ap.add_argument("--block-entries", type=int, default=65536)
    ap.add_argument("--level", type=int, default=19)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--span", type=int, default=1 << 20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)   # a side's round
    a = ap.parse_args(argv)
    board = a.board or a.table.stem.split("_")[-1]
    args = [str(a.table), board, a.codec, a.block_entries, a.level, a.samples, a.span]
    if a.one:
        print(json.dumps(measure(*args)))
        return
    here = Path(__file__).resolve().parents[2]
    sides = {"old": str(a.old_code.resolve()), "new": str(here)}
    best: dict = {}
    print(f"{a.table.name}: {a.codec}, blocks of {a.block_entries:,} at level {a.level}, "
          f"{a.samples} stretches of {a.span:,} entries; load {os.getloadavg()[0]:.1f}")
    for r in range(a.rounds):
        for side in (("old", "new") if r % 2 == 0 else ("new", "old")):
            env = dict(os.environ, PYTHONPATH=sides[side])
            out = subprocess.run([sys.executable, __file__, "--one", str(a.table), "--board", board,
                                  "--old-code", str(a.old_code), "--codec", a.codec,
                                  "--block-entries", str(a.block_entries), "--level", str(a.level),
                                  "--samples", str(a.samples), "--span", str(a.span)],
                                 env=env, capture_output=True, text=True, check=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"round {r + 1} {side}: encode {res['encode_ns']:7.1f} ns  decode "
                  f"{res['decode_ns']:7.1f} ns per entry", flush=True)
            b = best.setdefault(side, res)
            for k in ("encode_ns", "decode_ns"):
                b[k] = min(b[k], res[k])
    o, n = best["old"], best["new"]
    print(f"least of {a.rounds}: encode old {o['encode_ns']:.1f} new {n['encode_ns']:.1f} ns "
          f"({o['encode_ns'] / n['encode_ns']:.2f}x); decode old {o['decode_ns']:.1f} new "
          f"{n['decode_ns']:.1f} ns ({o['decode_ns'] / n['decode_ns']:.2f}x); "
          f"{100 * n['share']:.3f}% of raw; same bytes: {o['digest'] == n['digest']}; "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
