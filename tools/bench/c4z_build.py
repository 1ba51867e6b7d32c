"""Build a board once per format (``.dat``, then ``--format c4z`` at each given level), side
by side in one run, and print for each: wall time, CPU (user+sys of the build and its
workers; each round also user and sys apart, and split where the merge starts: the passes,
identical code in both formats, and the merge, where they differ), the peak disk of the
build directory (sampled every ``--every`` seconds in a thread while the build runs), the
table's size as a share of the raw size, whether any raw table file appeared during a c4z
build, and the CPU its merge counted in the block codec (``codec_us`` of ``stats.json``: an
older checkout run with ``@CODE`` may not count it). Also, from the finished ``.dat`` build,
the bytes per entry of each kind of intermediate file it keeps (key shards, outcome shards) and
the peak bytes per entry of each kind of scratch file (child runs, backward messages),
sampled as they come and go.

    .venv/bin/python -m tools.bench.c4z_build 5x5 --workers 2 --levels 3:65536 5m0 4m6 [--repeat 3]

Each level is ``LEVEL[mMINMATCH][:BLOCK_ENTRIES][/CODEC][@CODE]`` (``C4TABLE_C4Z_LEVEL``,
``C4TABLE_C4Z_MIN_MATCH``, ``C4TABLE_C4Z_BLOCK_ENTRIES``, ``C4TABLE_C4Z_CODEC``; unset: the
defaults), e.g. ``4m6/rulekeys-frames-v5`` for format 5's blocks at the build's level. ``@CODE``
runs that build with another checkout's code first on ``PYTHONPATH`` (the code before a
change, side by side with it): a directory holding ``c4table/`` with a link
``c4table/pipeline -> ../pipeline``, e.g. ``git archive COMMIT c4table pipeline | tar -x -C
DIR && ln -s ../pipeline DIR/c4table/pipeline``.

``--repeat N`` builds every format N times, round by round (.dat, then each level), and
compares the least CPU of each format (a loaded machine adds to CPU time, seldom takes away).

``--blocks TABLE.dat`` builds nothing: it samples ``--samples`` stretches of the finished
table, evenly spread, and prints for each block profile (``--profiles``, each
``ENTRIES:PART:LEVEL[:SYMLEVEL][/CODEC]``, e.g. ``262144:65536:5`` or ``262144:65536:5:1``: the key frame
at ``LEVEL``, the symbol frame at ``SYMLEVEL``, default ``LEVEL``; a level ``4m6`` is level 4
with min match 6, :func:`c4table.c4z.blocks.zstd_params`; ``/CODEC``: another block codec by
name, e.g. ``262144:65536:4m6/rulekeys-frames-v5``, its blocks made by its ``encode_words``
and its sizes as a whole) the size as a share of the raw
entries (both frames, and each apart) and the CPU (one core, ``process_time``) of what a c4z build does per block: encode (the merge's range
tasks, from ``key << 8 | outcome`` words) and decode back to raw rows (the driver, before
hashing them), in ns per entry.

    .venv/bin/python -m tools.bench.c4z_build 5x5 --blocks tables/5x5/connect4_5x5.dat
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from c4table.builddir.reader import BuildDir
from c4table.io.storage import open_storage
from c4table.pipeline.runtime.counters import load_stats
from tools.bench.big_build import tree_times
from tools.bench.diskuse import KINDS, DiskSampler


def profile_env(spec: str) -> dict:
    """The environment a c4z build or merge runs under for a level spec
    ``LEVEL[mMINMATCH][:BLOCK_ENTRIES][/CODEC][@CODE]`` (``@CODE``: another checkout's code
    first on ``PYTHONPATH``).

    >>> sorted(profile_env("4m6:65536@/src"))
    ['C4TABLE_C4Z_BLOCK_ENTRIES', 'C4TABLE_C4Z_LEVEL', 'C4TABLE_C4Z_MIN_MATCH', 'PYTHONPATH']
    >>> profile_env("4/rulekeys-frames-v5")["C4TABLE_C4Z_CODEC"]
    'rulekeys-frames-v5'
    """
    spec, _, code = spec.partition("@")
    spec, _, codec = spec.partition("/")
    lv, _, block = spec.partition(":")
    lv, _, mm = lv.partition("m")
    env = {"C4TABLE_C4Z_LEVEL": lv}
    if mm:
        env["C4TABLE_C4Z_MIN_MATCH"] = mm
    if block:
        env["C4TABLE_C4Z_BLOCK_ENTRIES"] = block
    if codec:
        env["C4TABLE_C4Z_CODEC"] = codec
    if code:
        env["PYTHONPATH"] = code
    return env


def passes_cpu(p: subprocess.Popen, out: Path, every: float = 0.2) -> tuple[float, float]:
    """Sample the build ``p``'s CPU until its merge starts (its part files' directory or the
    table's temporary file appears in ``out``): the ``(user, sys)`` of the passes before it,
    to a sampling period (``(nan, nan)`` if the merge was never seen). Waits for ``p``."""
    last = (0.0, 0.0)
    while p.poll() is None:
        now = tree_times(p.pid)
        if sum(now) >= sum(last):
            last = now
        if (out / "work" / "merge").exists() or any(
                f.name.startswith("connect4_") and f.name.endswith(".tmp") for f in out.iterdir()):
            p.wait()
            return last
        time.sleep(every)
    return (float("nan"), float("nan"))


def run_build(board: str, out: Path, workers: int, memory: str, fmt: str, level: str | None,
              every: float) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    env = dict(os.environ)
    if level is not None:
        env.update(profile_env(level))
    cmd = [str(Path(sys.executable).with_name("c4table")), "build", board, "--out", str(out),
           "--workers", str(workers), "--memory", memory, "-q", "--format", fmt]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with DiskSampler(out, every) as disk, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        at_merge = passes_cpu(p, out)
        rc = p.wait()
        err.seek(0)
        stderr = err.read()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc:
        raise SystemExit(f"{' '.join(cmd)} failed: {stderr}")
    user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    t = BuildDir.load(out).table
    entries = t.entries
    size = t.container.bytes if t.container is not None else t.bytes
    work = {k: sum(f.stat().st_size for f in (out / d).rglob("*") if f.is_file())
            for k, d in (("key shards", "work/forward"), ("outcome shards", "work/backward"))}
    merge = load_stats(open_storage(out))["stages"].get("merge", {})
    return {"format": fmt if level is None else f"{fmt} (level {level})", "entries": entries,
            "wall_s": wall, "cpu_s": user + sys_, "user_s": user, "sys_s": sys_,
            "passes_user_s": at_merge[0], "passes_sys_s": at_merge[1],
            "peak_disk": disk.peak, "peak_kind": disk.peak_kind, "table_bytes": size,
            "raw_bytes": t.bytes, "raw_seen": sorted(disk.raw_seen), "sha256": t.sha256,
            "kept": work, "codec_s": merge.get("codec_us", 0) / 1e6}


DEFAULT_PROFILES = ["65536:36864:3", "65536:36864:5", "65536:36864:9", "262144:65536:3",
                    "262144:65536:4", "262144:65536:5", "262144:65536:6", "262144:65536:7",
                    "1048576:65536:5", "262144:65536:4m6", "262144:65536:5m6"]


def block_profiles(board_name: str, dat: Path, profiles: list[str], samples: int) -> None:
    """The ``--blocks`` mode (module docstring)."""
    import numpy as np

    from c4table.c4z.blocks import decode_block_rows, encode_words, split_block
    from c4table.c4z.registry import get_codec
    from c4table.game.board import Board
    from c4table.table.source import keys_of_rows
    board = Board.parse(board_name)
    E = board.entry_size
    n_all = dat.stat().st_size // E
    span = max(int(p.split(":")[0]) for p in profiles)
    starts = np.linspace(0, n_all - span, samples).astype(np.int64) // span * span
    words = []
    with open(dat, "rb") as f:
        for s in starts.tolist():
            rows = np.frombuffer(os.pread(f.fileno(), span * E, s * E), np.uint8).reshape(-1, E)
            words.append((keys_of_rows(rows, E - 1) << np.uint64(8)) | rows[:, E - 1].astype(np.uint64))
    w0 = words[0][:16]
    first, b0 = encode_words(w0, board, 1, 8)      # compile or load the kernels outside the timings
    decode_block_rows(b0, board, w0.shape[0], first, 8)
    print(f"{board_name}: {samples} stretches of {span:,} entries ({samples * span:,} of "
          f"{n_all:,}), load {os.getloadavg()[0]:.1f}")
    print(f"{'block':>9} {'part':>7} {'level':>5} {'sym':>5} {'% of raw':>9} {'keys %':>7} "
          f"{'syms %':>7} {'encode ns':>10} {'decode ns':>10}")
    for prof in profiles:
        prof, _, codec_name = prof.partition("/")
        B, P, lv, *sl = prof.split(":")
        B, P = int(B), int(P)
        level, _, mm = lv.partition("m")
        level, mm = int(level), int(mm or 0)
        sym_level = int(sl[0]) if sl else level
        codec = get_codec(codec_name)(board, P, level, mm) if codec_name else None
        if codec is not None:          # compile or load its kernels outside the timings
            codec.decode_rows(codec.encode_words(w0)[1], w0.shape[0], int(w0[0]) >> 8)
        size = ksize = ssize = enc = dec = 0.0
        for w in words:
            blocks = []
            t = time.process_time()
            for o in range(0, span, B):
                blocks.append(encode_words(w[o: o + B], board, level, P, mm, sym_level)
                              if codec is None else codec.encode_words(w[o: o + B]))
            enc += time.process_time() - t
            size += sum(len(b) for _, b in blocks)
            for _, b in blocks if codec is None else ():
                kf, sf, _, _ = split_block(b)
                ksize += len(kf)
                ssize += len(sf)
            t = time.process_time()
            for first, b in blocks:
                if codec is None:
                    decode_block_rows(b, board, B, first, P)
                else:
                    codec.decode_rows(b, B, first)
            dec += time.process_time() - t
        raw = samples * span * E
        parts = ("-", "-") if codec is not None else \
            (f"{100 * ksize / raw:.3f}", f"{100 * ssize / raw:.3f}")
        print(f"{B:9,} {P:7,} {lv:>5} {sym_level:5} {100 * size / raw:9.3f} "
              f"{parts[0]:>7} {parts[1]:>7} {1e9 * enc * E / raw:10.1f} "
              f"{1e9 * dec * E / raw:10.1f}" + (f"  {codec_name}" if codec_name else ""),
              flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("board")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", default="4GiB")
    ap.add_argument("--levels", nargs="*", default=["5"],
                    help="zstd levels of the c4z builds, each LEVEL or LEVEL:BLOCK_ENTRIES")
    ap.add_argument("--every", type=float, default=0.2, help="disk sampling period (s)")
    ap.add_argument("--dir", default="/tmp/c4z-bench")
    ap.add_argument("--json", dest="as_json", help="also write the results to this file")
    ap.add_argument("--no-dat", action="store_true",
                    help="only the c4z builds (when a .dat run goes on in another process)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of builds (least CPU kept)")
    ap.add_argument("--blocks", type=Path, help="a finished .dat: compare block profiles instead")
    ap.add_argument("--profiles", nargs="*", default=DEFAULT_PROFILES,
                    help="with --blocks: ENTRIES:PART:LEVEL each")
    ap.add_argument("--samples", type=int, default=15, help="with --blocks: stretches sampled")
    a = ap.parse_args(argv)
    if a.blocks:
        return block_profiles(a.board, a.blocks, a.profiles, a.samples)
    root = Path(a.dir)
    runs = ([] if a.no_dat else [("dat", None)]) + [("c4z", lv) for lv in a.levels]
    res, rounds = [], []
    for rnd in range(a.repeat):
        rounds.append([])
        for i, (fmt, lv) in enumerate(runs):
            out = root / f"{a.board}-{fmt}{i}"
            r = run_build(a.board, out, a.workers, a.memory, fmt, lv, a.every)
            r["load"] = os.getloadavg()[0]
            rounds[-1].append(r)
            shutil.rmtree(out, ignore_errors=True)
            merge = (r["user_s"] - r["passes_user_s"], r["sys_s"] - r["passes_sys_s"])
            print(f"round {rnd + 1}: {r['format']:<16} cpu {r['cpu_s']:7.1f}s (user {r['user_s']:6.1f} "
                  f"sys {r['sys_s']:5.1f}; passes {r['passes_user_s']:6.1f} + {r['passes_sys_s']:4.1f}, "
                  f"merge {merge[0]:5.1f} + {merge[1]:4.1f})  wall {r['wall_s']:7.1f}s  "
                  f"load {r['load']:.1f}  table {r['table_bytes']:,}"
                  + (f"  codec {r['codec_s']:.1f}s ({r['codec_s'] / r['entries'] * 1e9:.1f} ns "
                     "per entry, counted by the merge)" if r.get("codec_s") else ""), flush=True)
    for i in range(len(runs)):   # per format, the round of least CPU
        res.append(min((rd[i] for rd in rounds), key=lambda r: r["cpu_s"]))
    for r in res:
        fmt = r["format"].split()[0]
        print(f"{r['format']:<16} wall {r['wall_s']:7.1f}s  cpu {r['cpu_s']:7.1f}s  "
              f"peak disk {r['peak_disk'] / 2**20:9.1f} MiB ({r['peak_disk'] / r['entries']:.2f} B/entry)  "
              f"table {r['table_bytes']:,} ({100 * r['table_bytes'] / r['raw_bytes']:.2f}% of raw)  "
              f"raw files seen: {len(r['raw_seen']) if fmt == 'c4z' else '-'}", flush=True)
    base = res[0]
    if a.as_json:
        Path(a.as_json).write_text(json.dumps({"best": res, "rounds": rounds}, indent=1))
    if a.no_dat:
        return
    print(f"\nCPU against the .dat build (least of {a.repeat}): " + ", ".join(
        f"{r['format']} {r['cpu_s'] / base['cpu_s']:.3f}x" for r in res[1:]))
    if a.repeat > 1:
        print("per round: " + "; ".join(", ".join(
            f"{r['format']} {r['cpu_s'] / rd[0]['cpu_s']:.3f}x" for r in rd[1:]) for rd in rounds))
    print(f"all sha256 equal: {len({r['sha256'] for r in res}) == 1} ({base['sha256']})")
    n = base["entries"]
    print(f"\nbytes per entry of each file kind ({a.board}, .dat build, {n:,} entries):")
    for k in KINDS:
        kept = base["kept"].get(k)
        print(f"  {k:<24} peak {base['peak_kind'][k] / n:6.3f}" +
              (f"   kept at the end {kept / n:6.3f}" if kept is not None else ""))


if __name__ == "__main__":
    main()
