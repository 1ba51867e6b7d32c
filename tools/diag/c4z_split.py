"""Where the bytes of a written ``.c4z`` go, per stream, in bits per entry: block heads, key
frames (format 3) or key bits (formats 4 and 5), symbol frames, and the rest (magic,
dictionaries, index, header, trailer), read from the blocks' own heads.

    python -m tools.diag.c4z_split FILE.c4z [...]
"""
from __future__ import annotations

import argparse
import struct
from pathlib import Path

import numpy as np

from c4table.c4z.framecodec import lean_keys, parse_head
from c4table.c4z.reader import open_c4z


def split(path: Path) -> dict:
    """Bytes per part of the file ``path`` (module docstring)."""
    parts = {"heads": 0, "keys": 0, "symbols": 0, "format-3 blocks in format 4": 0}
    with open_c4z(path) as z:
        version = z.header.get("version")
        v4 = version in (4, 5)
        for i in range(z.blocks):
            b = z.read_block(i)
            if v4 and b[0] == 0:
                parts["format-3 blocks in format 4"] += len(b)
                continue
            if version == 5:
                c = z.codec
                _, ks, fs, _, ok = parse_head(np.frombuffer(b, np.uint8), np.uint64(z.first_keys[i]),
                                              z.block_rows(i), c.run_entries, c.frame_entries,
                                              lean_keys(c.board).nprobs)
                assert ok, f"block {i}: head does not fit"
                h, kl, sl = int(ks[0]), int(ks[-1] - ks[0]), int(fs[-1] - fs[0])
            elif v4:
                q, kl, sl = struct.unpack_from("<III", b, 1)
                h = 13 + 12 * (q - 1)
            else:
                p, kl, sl = struct.unpack_from("<HII", b)
                h = 10 + 12 * (p - 1)
            parts["heads"] += h
            parts["keys"] += kl
            parts["symbols"] += sl
        total = path.stat().st_size
        parts["rest"] = total - sum(parts.values())
        return {"entries": z.entries, "total": total, "version": z.header.get("version"),
                "transform": z.header.get("transform"), **parts}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    a = ap.parse_args(argv)
    print("| file | format, codec | bytes | heads | keys | symbols | rest | total (bits per entry) |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|")
    for f in a.files:
        s = split(f)
        n = s["entries"]
        bpe = {k: 8 * s[k] / n for k in ("heads", "keys", "symbols", "rest", "total")}
        extra = s["format-3 blocks in format 4"]
        print(f"| {f.name} | {s['version']}, {s['transform']} | {s['total']:,} | "
              f"{bpe['heads']:.4f} | {bpe['keys']:.4f} | {bpe['symbols']:.4f} | {bpe['rest']:.4f} | "
              f"{bpe['total']:.4f} |" + (f" ({extra:,} bytes in format-3 blocks)" if extra else ""))


if __name__ == "__main__":
    main()
