"""Bytes per value and encode/decode time of candidate codecs for sorted runs (forward child
runs, backward messages, shuffle pieces), measured on real runs captured from a build.

Capture: ``--capture DIR -- c4table build ...`` runs the build with a hook in every process
(a ``sitecustomize`` on ``PYTHONPATH``) that saves the raw values of each run it writes as
``DIR/<run path with ~ for />.<pid>.<xxh64>.npy`` (up to ``--max-bytes``). Measure: the
remaining arguments are capture directories; every run in them is encoded block by block
(blocks of :data:`runcodec.BLOCK` values, each on its own, as the run format needs for range
reads) with each codec, and the table gives, per kind of run (child runs, messages), bytes per
value and ns per value to encode and to decode (CPU time of one thread, best of ``--repeat``).

Codecs: ``bp`` the bit-packed codec of run format v2 (delta + bit-packing per 64-value
miniblock, ``runcodec_v2.py`` beside this file); ``bp+zN`` the same with each block's words
through zstd level N; ``vi`` LEB128 varint deltas, ``vi+zN`` those through zstd (the ``.c4z``
codec's way); ``vk``, ``vk+zN`` (messages) the varint deltas of the keys ``v >> 8`` and the
low bytes as a second stream; ``v3`` the codec of today's run format as the build calls it
(``vi+z1`` for child runs, ``vk+z1`` for messages, with its checks). Sizes only (no timing): ``ef`` Elias-Fano per
block; ``bp-keys+pay`` (messages) the key deltas bit-packed and the payload byte packed on its
own per miniblock; ``bp32`` miniblocks of 32; ``bound`` log2 C(range, n) per block, the
information in a set of n values in its range (what no codec without a model beats).

    .venv/bin/python -m tools.bench.run_codecs --capture /tmp/cap5 -- build 5x5 --out /tmp/b5 --workers 2 --format c4z
    .venv/bin/python -m tools.bench.run_codecs /tmp/cap5 --sample 40
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import zstandard
from numba import njit

from c4table.pipeline.sort import runcodec
from tools.bench import runcodec_v2   # the bit-packed codec of run format v2

BLOCK = runcodec.BLOCK
HOOK = '''
import os
_dir = os.environ.get("C4CAP_DIR")
if _dir:
    import numpy as np
    from c4table.pipeline.sort import extsort
    _orig, _cap = extsort.write_run, int(os.environ["C4CAP_MAX_BYTES"])

    def write_run(store, rel, keys, *args, **kwargs):
        digest = _orig(store, rel, keys, *args, **kwargs)
        if sum(e.stat().st_size for e in os.scandir(_dir) if e.is_file()) < _cap:
            np.save(os.path.join(_dir, rel.replace("/", "~") + f".{os.getpid()}.{digest}.npy"),
                    np.ascontiguousarray(keys, dtype=np.uint64))
        return digest
    extsort.write_run = write_run
'''


def kind_of(name: str) -> str:
    """The kind of a captured run from its path in the build directory."""
    rel = name.replace("~", "/")
    if rel.startswith("work/messages/"):
        return "message pieces" if "/pre/" in rel else "messages"
    if rel.startswith("work/runs/"):
        return "child pieces" if "/pre/" in rel else "child runs"
    return "other"


# ------------------------------------------------------------------ varint deltas
@njit(cache=True)
def _vi_encode(v, s, e, out):
    """First value (8 bytes) then LEB128 deltas of ``v[s:e]`` into ``out``; bytes written."""
    x = v[s]
    for i in range(8):
        out[i] = np.uint8((x >> np.uint64(8 * i)) & np.uint64(0xFF))
    p = 8
    for j in range(s + 1, e):
        d = v[j] - v[j - 1]
        while d >= np.uint64(0x80):
            out[p] = np.uint8((d & np.uint64(0x7F)) | np.uint64(0x80))
            d >>= np.uint64(7)
            p += 1
        out[p] = np.uint8(d)
        p += 1
    return p


@njit(cache=True)
def _vi_decode(buf, n, out):
    x = np.uint64(0)
    for i in range(8):
        x |= np.uint64(buf[i]) << np.uint64(8 * i)
    out[0] = x
    p = 8
    for j in range(1, n):
        d = np.uint64(0)
        sh = np.uint64(0)
        while True:
            b = np.uint64(buf[p])
            p += 1
            d |= (b & np.uint64(0x7F)) << sh
            if b < np.uint64(0x80):
                break
            sh += np.uint64(7)
        x += d
        out[j] = x


@njit(cache=True)
def _vk_encode(v, s, e, out):
    """Messages: first value (8 bytes), the length of the key stream (4 bytes), LEB128 deltas
    of the keys ``v >> 8``, then the payload bytes ``v & 0xFF`` of values 1.. on their own."""
    x = v[s]
    for i in range(8):
        out[i] = np.uint8((x >> np.uint64(8 * i)) & np.uint64(0xFF))
    p = 12
    for j in range(s + 1, e):
        d = (v[j] >> np.uint64(8)) - (v[j - 1] >> np.uint64(8))
        while d >= np.uint64(0x80):
            out[p] = np.uint8((d & np.uint64(0x7F)) | np.uint64(0x80))
            d >>= np.uint64(7)
            p += 1
        out[p] = np.uint8(d)
        p += 1
    m = p - 12
    for i in range(4):
        out[8 + i] = np.uint8((m >> (8 * i)) & 0xFF)
    for j in range(s + 1, e):
        out[p] = np.uint8(v[j] & np.uint64(0xFF))
        p += 1
    return p


@njit(cache=True)
def _vk_decode(buf, n, out):
    x = np.uint64(0)
    for i in range(8):
        x |= np.uint64(buf[i]) << np.uint64(8 * i)
    out[0] = x
    m = 0
    for i in range(4):
        m |= np.int64(buf[8 + i]) << (8 * i)
    p = 12
    q = 12 + m
    k = x >> np.uint64(8)
    for j in range(1, n):
        d = np.uint64(0)
        sh = np.uint64(0)
        while True:
            b = np.uint64(buf[p])
            p += 1
            d |= (b & np.uint64(0x7F)) << sh
            if b < np.uint64(0x80):
                break
            sh += np.uint64(7)
        k += d
        out[j] = (k << np.uint64(8)) | np.uint64(buf[q])
        q += 1


# ------------------------------------------------------------------ size-only models
def _width(x: np.ndarray) -> np.ndarray:
    """Bits needed for each of the uint64 values ``x`` (0 for 0)."""
    out = np.zeros(x.shape, np.int64)
    nz = x > 0
    out[nz] = np.floor(np.log2(x[nz].astype(np.float64))).astype(np.int64) + 1
    big = x >= np.uint64(1 << 52)   # float rounding near powers of two: exact for big ones
    if big.any():
        out[big] = [int(y).bit_length() for y in x[big]]
    return out


def bp_bytes(v: np.ndarray, mini: int) -> int:
    """Bytes of the bit-packed format with miniblocks of ``mini`` (a width byte each)."""
    total = 0
    for s in range(0, v.shape[0], BLOCK):
        b = v[s:s + BLOCK]
        d = np.diff(b)
        m = -(-d.shape[0] // mini)
        pad = np.zeros(m * mini, np.uint64)
        pad[:d.shape[0]] = d
        w = _width(pad.reshape(m, mini).max(axis=1)) if m else np.zeros(0, np.int64)
        total += 8 + m + int((w * mini).sum() + 7) // 8
    return total


def ef_bytes(v: np.ndarray) -> int:
    """Bytes of Elias-Fano per block: first value, n*L low bits, n + (range >> L) high bits."""
    total = 0
    for s in range(0, v.shape[0], BLOCK):
        b = v[s:s + BLOCK]
        n = b.shape[0] - 1
        if n <= 0:
            total += 8
            continue
        u = int(b[-1] - b[0])
        low = max(0, int(math.floor(math.log2(u / n)))) if u > n else 0
        total += 8 + 1 + (n * low + n + (u >> low) + 7) // 8
    return total


def bound_bytes(v: np.ndarray) -> float:
    """log2 C(range, n) per block (values distinct; 0 for a block with repeats' extra)."""
    total = 0.0
    for s in range(0, v.shape[0], BLOCK):
        b = v[s:s + BLOCK]
        n = b.shape[0] - 1
        u = int(b[-1] - b[0])
        if n > 0 and u >= n:
            total += (math.lgamma(u + 1) - math.lgamma(n + 1) - math.lgamma(u - n + 1)) / math.log(2)
        total += 64
    return total / 8


def split_bytes(v: np.ndarray) -> int:
    """Messages: key deltas (``v >> 8``) bit-packed per miniblock of 64, plus the payload byte
    (``v & 0xFF``) bit-packed per miniblock at its own width."""
    keys = v >> np.uint64(8)
    pay = (v & np.uint64(0xFF)).astype(np.uint64)
    total = bp_bytes(keys, 64)
    m = -(-pay.shape[0] // 64)
    pad = np.zeros(m * 64, np.uint64)
    pad[:pay.shape[0]] = pay
    w = _width(pad.reshape(m, 64).max(axis=1))
    return total + m + int((w * 64).sum() + 7) // 8


def entropy_bits(x: np.ndarray) -> float:
    """Empirical entropy (bits per symbol) of the values ``x``."""
    _, c = np.unique(x, return_counts=True)
    p = c / c.sum()
    return float(-(p * np.log2(p)).sum())


# ------------------------------------------------------------------ timed codecs
def _best(f, repeat: int) -> float:
    """The least CPU time (this thread's: the machine may be shared) of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t = time.thread_time()
        f()
        best = min(best, time.thread_time() - t)
    return best


def time_bp(v: np.ndarray, levels: list[int], repeat: int) -> dict:
    """Today's codec, and it with each block's words through zstd at ``levels``."""
    res = {}
    nb = -(-v.shape[0] // BLOCK)
    widths, offsets = runcodec_v2.plan(v)
    words = np.empty(int(offsets[-1]), np.uint64)
    out = np.empty(v.shape[0], np.uint64)
    fences = v[::BLOCK].copy()

    def enc():
        w, o = runcodec_v2.plan(v)
        runcodec_v2.encode_blocks(v, w, o, 0, nb, words)

    def dec():
        assert runcodec_v2.decode_blocks(words, fences, offsets, 0, nb, v.shape[0], out) == -1

    te, td = _best(enc, repeat), _best(dec, repeat)
    res["bp"] = (8 * int(offsets[-1]), te, td)
    raw = [words[offsets[b]:offsets[b + 1]].tobytes() for b in range(nb)]
    for lvl in levels:
        c = zstandard.ZstdCompressor(level=lvl)
        d = zstandard.ZstdDecompressor()
        comp = [c.compress(r) for r in raw]

        def zenc():
            enc()
            for b in range(nb):
                c.compress(memoryview(words[offsets[b]:offsets[b + 1]]))

        def zdec():
            for b in range(nb):
                words[offsets[b]:offsets[b + 1]] = np.frombuffer(d.decompress(comp[b]), np.uint64)
            dec()
        res[f"bp+z{lvl}"] = (sum(len(x) for x in comp), _best(zenc, repeat), _best(zdec, repeat))
    return res


def time_vi(v: np.ndarray, levels: list[int], repeat: int, split: bool = False) -> dict:
    """Varint deltas per block, alone and through zstd at ``levels``; with ``split``
    (messages) the key deltas and the payload bytes as two streams."""
    res = {}
    _enc, _dec, tag = (_vk_encode, _vk_decode, "vk") if split else (_vi_encode, _vi_decode, "vi")
    n = v.shape[0]
    nb = -(-n // BLOCK)
    buf = np.empty(12 + 11 * BLOCK, np.uint8)
    out = np.empty(n, np.uint64)
    blobs = []

    def enc():
        blobs.clear()
        for b in range(nb):
            m = _enc(v, b * BLOCK, min(n, (b + 1) * BLOCK), buf)
            blobs.append(buf[:m].tobytes())

    te = _best(enc, repeat)
    enc()

    def dec():
        for b in range(nb):
            _dec(np.frombuffer(blobs[b], np.uint8), min(n, (b + 1) * BLOCK) - b * BLOCK,
                       out[b * BLOCK:])
    td = _best(dec, repeat)
    assert np.array_equal(out, v)
    res[tag] = (sum(len(x) for x in blobs), te, td)
    for lvl in levels:
        c = zstandard.ZstdCompressor(level=lvl)
        d = zstandard.ZstdDecompressor()

        def zenc():
            for b in range(nb):
                m = _enc(v, b * BLOCK, min(n, (b + 1) * BLOCK), buf)
                c.compress(memoryview(buf[:m]))
        comp = [c.compress(x) for x in blobs]

        def zdec():
            for b in range(nb):
                _dec(np.frombuffer(d.decompress(comp[b]), np.uint8),
                           min(n, (b + 1) * BLOCK) - b * BLOCK, out[b * BLOCK:])
        res[f"{tag}+z{lvl}"] = (sum(len(x) for x in comp), _best(zenc, repeat), _best(zdec, repeat))
    return res


def time_v3(v: np.ndarray, low_bits: int, repeat: int) -> dict:
    """The codec of run format v3 (:mod:`c4table.pipeline.sort.runcodec`) as the build calls
    it: ``vi+z1`` (child runs) or ``vk+z1`` (messages, ``low_bits`` 8) with its checks."""
    n = v.shape[0]
    got = []
    te = _best(lambda: got.append(runcodec.encode_blocks(v, low_bits)), repeat)
    blobs = got[-1]
    offsets = np.zeros(len(blobs) + 1, np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    data = np.frombuffer(b"".join(blobs), np.uint8)
    fences, out = v[::BLOCK].copy(), np.empty(n, np.uint64)
    td = _best(lambda: runcodec.decode_blocks(data, fences, offsets, 0, len(blobs), n, low_bits,
                                              out), repeat)
    assert np.array_equal(out, v)
    return {"v3": (int(offsets[-1]), te, td)}


def measure(files: list[Path], levels: list[int], repeat: int) -> dict:
    """Per kind: totals of values, bytes and seconds per codec, and the message statistics."""
    kinds: dict = {}
    warm = np.arange(0, 3 * BLOCK, 3, dtype=np.uint64)   # compile the numba codecs first
    time_bp(warm, levels, 1)
    time_vi(warm, levels, 1)
    time_vi(warm, levels, 1, split=True)
    runcodec.warm()
    for f in files:
        v = np.load(f)
        if v.shape[0] < 2:
            continue
        k = kinds.setdefault(kind_of(f.name), {"values": 0, "runs": 0, "codecs": {}, "dups": 0,
                                               "pay": []})
        k["values"] += v.shape[0]
        k["runs"] += 1
        got = {**time_bp(v, levels, repeat), **time_vi(v, levels, repeat),
               "ef": (ef_bytes(v), None, None), "bp32": (bp_bytes(v, 32), None, None),
               "bound": (bound_bytes(v), None, None),
               **time_v3(v, 8 if kind_of(f.name).startswith("message") else 0, repeat)}
        if kind_of(f.name).startswith("message"):
            got["bp-keys+pay"] = (split_bytes(v), None, None)
            got.update(time_vi(v, levels, repeat, split=True))
            keys = v >> np.uint64(8)
            k["dups"] += int((keys[1:] == keys[:-1]).sum())
            k["pay"].append((v & np.uint64(0xFF)).astype(np.uint8))
        else:
            k["dups"] += int((v[1:] == v[:-1]).sum())
        for name, (nbytes, te, td) in got.items():
            c = k["codecs"].setdefault(name, [0, 0.0, 0.0])
            c[0] += nbytes
            if te is not None:
                c[1] += te
                c[2] += td
    return kinds


def report(kinds: dict) -> None:
    for kind, k in sorted(kinds.items()):
        n = k["values"]
        print(f"\n{kind}: {k['runs']} runs, {n:,} values, repeated keys {k['dups'] / n:.4%}")
        if k["pay"]:
            pay = np.concatenate(k["pay"])
            print(f"  payload byte: entropy {entropy_bits(pay):.2f} bits, "
                  f"{len(np.unique(pay))} distinct values")
        base = k["codecs"]["bp"][0]
        print("  | codec | bytes/value | vs bp | encode ns/value | decode ns/value |")
        print("  |---|---:|---:|---:|---:|")
        for name, (nbytes, te, td) in k["codecs"].items():
            tim = (f"{1e9 * te / n:.1f} | {1e9 * td / n:.1f}" if te else "- | -")
            print(f"  | {name} | {nbytes / n:.3f} | {nbytes / base:.3f} | {tim} |")


def capture(dirpath: Path, build_args: list[str], max_bytes: int) -> int:
    """Run ``c4table BUILD_ARGS`` with the capture hook; return its exit status."""
    dirpath.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="runcap-hook-") as hook:
        (Path(hook) / "sitecustomize.py").write_text(HOOK)
        env = dict(os.environ, C4CAP_DIR=str(dirpath.resolve()), C4CAP_MAX_BYTES=str(max_bytes),
                   PYTHONPATH=os.pathsep.join(filter(None, [hook, os.environ.get("PYTHONPATH")])))
        exe = Path(sys.executable).with_name("c4table")
        return subprocess.run([str(exe), *build_args], env=env).returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("dirs", nargs="*", type=Path, help="capture directories to measure")
    ap.add_argument("--capture", type=Path, help="run the build after -- and save its runs here")
    ap.add_argument("--max-bytes", type=int, default=4 << 30, help="capture at most this much")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 3], help="zstd levels")
    ap.add_argument("--sample", type=int, default=0,
                    help="measure every k-th run only, k chosen to keep this many (0: all)")
    ap.add_argument("--repeat", type=int, default=2, help="timings: best of this many")
    argv = sys.argv[1:] if argv is None else list(argv)
    build = argv[argv.index("--") + 1:] if "--" in argv else []
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.capture:
        if not build:
            ap.error("--capture needs the build's arguments after --")
        return capture(args.capture, build, args.max_bytes)
    if build or not args.dirs:
        ap.error("give capture directories, or --capture DIR -- BUILD ARGS")
    for d in args.dirs:
        files = sorted(d.glob("*.npy"))
        if args.sample and len(files) > args.sample:
            files = files[::-(-len(files) // args.sample)]
        print(f"# {d}: {len(files)} runs")
        report(measure(files, args.levels, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
