"""``build --format c4z``: the merge writes the table straight into a ``.c4z``. Checked against
independent evidence: the ``.dat`` build of the same board and the known tables' sha256
(decompressed byte for byte), ``compress`` of that ``.dat`` at the same settings (the same
blocks, whatever ranges the merge cut), ``verify`` and ``lookup`` on the result; no raw table
file appears in the build directory at any moment (polled while the build runs); a rerun
after SIGKILL in the merge writes the same bytes."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from c4table.io.treehash import tree_hash_file
import xxhash

from c4table.testing import faults as soak
from c4table.c4z.format import BUILD_CODEC, FRAME_CODEC, MAGIC, TRAILER, TRANSFORM
from c4table.c4z.writer import compress_table
from c4table.io.hashes import sha256_of
from c4table.table.known import known_tables
from test_faults import ROOT, SEED, cli, one_line_error

C4Z_CMD = ("--format", "c4z")
SMALL_GRID = "16384"   # blocks of the tests' builds: a 5x4 merge range holds whole blocks


@pytest.fixture(scope="module", autouse=True)
def small_grid():
    """The builds here write 16,384-entry blocks (two parts each), so that the merge's ranges
    of small boards compress whole blocks, as a big board's do with the default grid (the
    default profile: :func:`test_default_profile_is_the_build_grid_of_compress`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("C4TABLE_C4Z_BLOCK_ENTRIES", SMALL_GRID)
        yield


class RawWatch:
    """Polls a build directory (every few ms, in a thread) for any raw table file
    (``*.dat``, ``*.dat.tmp``) while a build runs."""

    def __init__(self, root: Path):
        self.root, self.seen, self.polls = root, set(), 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.seen |= {p.name for p in self.root.rglob("*") if ".dat" in p.name}
            except (FileNotFoundError, OSError):   # files go while we walk
                pass
            self.polls += 1
            self._stop.wait(0.002)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def build_c4z(board: str, out: Path, *extra) -> tuple[int, str]:
    code, _, err = cli("build", board, "--out", out, "--workers", 2, "-q", *C4Z_CMD, *extra)
    return code, err


@pytest.fixture(scope="module")
def c4z54(tmp_path_factory):
    """A 5x4 build with --format c4z, polled for raw files while it ran."""
    out = tmp_path_factory.mktemp("c4z54") / "b"
    with RawWatch(out.parent) as w:
        code, err = build_c4z("5x4", out)
    assert code == 0, err
    return out, w


def blocks_region(path: Path) -> bytes:
    """The magic, dictionaries and blocks of a ``.c4z`` (everything before its index)."""
    data = path.read_bytes()
    index_offset = TRAILER.unpack(data[-TRAILER.size:])[0]
    return data[:index_offset]


@pytest.mark.parametrize("board", ["4x4", "5x4", "4x5"])
def test_c4z_build_decompresses_to_the_dat_build_and_known_sha256(board, built, tmp_path, c4z54):
    if board == "5x4":
        out, watch = c4z54
    else:
        out = tmp_path / "b"
        with RawWatch(tmp_path) as watch:
            code, err = build_c4z(board, out)
        assert code == 0, err
    assert watch.polls > 10 and not watch.seen, f"raw table files appeared: {watch.seen}"
    assert not list(out.rglob("*.dat*")), "a raw table file is left"
    z = out / f"connect4_{board}.c4z"
    dat = built(board) / f"connect4_{board}.dat"
    code, _, err = cli("decompress", z, "-o", tmp_path / "back.dat")
    assert code == 0, err
    assert f"sha256_tree {known_tables()[board]['sha256_tree']} matches" in err   # what it compared
    assert (tmp_path / "back.dat").read_bytes() == dat.read_bytes()
    known = known_tables()[board]["sha256"]
    assert sha256_of(tmp_path / "back.dat") == known
    m = json.loads((out / "manifest.json").read_text())["table"]
    assert m["sha256_tree"] == known_tables()[board]["sha256_tree"] == tree_hash_file(dat)["sha256_tree"]
    assert m["format"] == "c4z" and m["c4z"]["file"] == z.name
    assert m["bytes"] == dat.stat().st_size and "md5" not in m and "sha256" not in m
    assert m["c4z"]["sha256_tree"] == tree_hash_file(z)["sha256_tree"] and m["c4z"]["bytes"] == z.stat().st_size
    # the same blocks as compress of the .dat at the build's settings (its codec too): the merge's ranges
    # are stitched onto the file's grid exactly
    from c4table.pipeline.stages.merge_c4z import build_grid, build_level, build_min_match
    B, P = build_grid()
    assert (B, P) == (16384, 9216)
    ref = compress_table(dat, tmp_path / "ref.c4z", level=build_level(), key_dict=False,
                         sym_dict=False, quiet=True, block_entries=B, part_entries=P,
                         min_match=build_min_match(), codec=BUILD_CODEC)
    assert blocks_region(z) == blocks_region(ref)
    assert blocks_region(z).startswith(MAGIC)


def test_verify_names_the_known_table_and_lookup_answers(c4z54, built):
    out, _ = c4z54
    z = out / "connect4_5x4.c4z"
    code, stdout, err = cli("verify", z)
    assert code == 0, err
    assert "OK connect4_5x4.c4z" in stdout and "known table 5x4" in stdout
    assert "manifest.json" in stdout
    positions = ["", "3", "33", "1234", "2211"]
    code, from_z, err = cli("lookup", "--table", z, "--json", *positions)
    assert code == 0, err
    code, from_dat, err = cli("lookup", "--table", built("5x4") / "connect4_5x4.dat", "--json",
                              *positions)
    assert code == 0, err
    assert from_z == from_dat and len(from_z.splitlines()) == len(positions)
    code, from_dir, err = cli("lookup", "--table", out, "--json", *positions)
    assert code == 0 and from_dir == from_z, err


def test_rerun_of_a_finished_c4z_build_is_a_no_op_and_damage_is_named(c4z54, tmp_path):
    out = tmp_path / "b"
    shutil.copytree(c4z54[0], out, ignore=shutil.ignore_patterns(".lock"))
    z = out / "connect4_5x4.c4z"
    before = z.read_bytes()
    code, err = build_c4z("5x4", out)
    assert code == 0, err
    assert z.read_bytes() == before
    data = bytearray(before)
    data[len(data) // 2] ^= 0x01
    z.write_bytes(bytes(data))
    code, err = build_c4z("5x4", out)
    assert code != 0 and "connect4_5x4.c4z" in err and "does not match" in err


@pytest.mark.parametrize("damage", [None, "trailer", "block"])
def test_c4z_merge_killed_after_manifest_save_before_rename(c4z54, tmp_path, damage):
    """The manifest records the .c4z before the rename (its merge state and index side file
    go only after it): a .tmp that matches is renamed; one whose index or trailer differs is
    cut back to the merge state and finished again (the same bytes); one whose blocks differ
    is named (its shards are gone: nothing answers from it)."""
    from c4table.pipeline.stages import backward, forward, merge_c4z
    from c4table.pipeline.stages.build import open_build
    out = tmp_path / "b"
    b = open_build("5x4", out, workers=2, quiet=True, table_format="c4z")
    try:
        for stage in (forward, backward):
            stage.run(b)

        def crash(*a):
            raise RuntimeError("crash before the rename")
        b.store.rename = crash
        with pytest.raises(RuntimeError):
            merge_c4z.run(b)
    finally:
        b.close()
    z = out / "connect4_5x4.c4z"
    tmp = out / (z.name + ".tmp")
    assert not z.exists() and sha256_of(tmp) == sha256_of(c4z54[0] / z.name)
    assert (out / (tmp.name + ".state")).exists() and not list((out / "work").rglob("*.shard"))
    ref = sha256_of(tmp)
    if damage:
        data = bytearray(tmp.read_bytes())
        data[777 if damage == "block" else len(data) - 30] ^= 0xFF
        tmp.write_bytes(bytes(data))
    code, err = build_c4z("5x4", out)
    if damage == "block":
        assert code != 0 and one_line_error(err) and tmp.name in err and "--restart" in err
        return
    assert code == 0, err
    assert sha256_of(z) == ref and not tmp.exists()
    assert not list(out.glob("*.tmp*")) and not (out / "work").exists()


KILL_AT = """
import os, runpy, signal, sys
from c4table.c4z.assemble import Assembler
from c4table.pipeline.stages import merge_c4z
where, when, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = [0]
def hooked(orig):
    def f(*a, **k):
        if when == "before":
            seen[0] += 1
            if seen[0] == n:
                os.killpg(0, signal.SIGKILL)
        r = orig(*a, **k)
        if when == "after":
            seen[0] += 1
            if seen[0] == n:
                os.killpg(0, signal.SIGKILL)
        return r
    return f
if where in ("add_block", "finish"):
    setattr(Assembler, where, hooked(getattr(Assembler, where)))
else:
    setattr(merge_c4z, where, hooked(getattr(merge_c4z, where)))
sys.argv = ["c4table", *sys.argv[4:]]
runpy.run_module("c4table.cli.main", run_name="__main__")
"""
SMALL = ("--memory", "4MiB")    # several shards per generation and many merge ranges


@pytest.fixture(scope="module")
def staged54(tmp_path_factory):
    """A 5x4 build directory whose forward and backward passes are done (small shards)."""
    from c4table.pipeline.stages import backward, forward
    from c4table.pipeline.stages.build import open_build
    out = tmp_path_factory.mktemp("staged54") / "b"
    b = open_build("5x4", out, memory=SMALL[1], workers=2, quiet=True, table_format="c4z")
    try:
        forward.run(b)
        backward.run(b)
    finally:
        b.close()
    return out


def merge_killed(staged: Path, out: Path, where: str, when: str, n: int, env=None) -> None:
    """Copy the staged build to ``out`` and run its merge with a SIGKILL of the whole process
    group at the ``n``-th call of ``where`` (``before`` or ``after`` it); ``env``: settings."""
    shutil.copytree(staged, out, ignore=shutil.ignore_patterns(".lock"))
    cmd = [sys.executable, "-c", KILL_AT, where, when, str(n), "build", "5x4", "--out", str(out),
           "-q", "--workers", "2", *SMALL, *C4Z_CMD]
    p = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd=ROOT, env=dict(os.environ, **(env or {})))
    _, err = p.communicate(timeout=300)
    assert p.returncode == -signal.SIGKILL, f"{where} {when} {n}: not killed: {err.decode()}"


def shard_files(out: Path) -> set[str]:
    return {str(p.relative_to(out)) for p in (out / "work").rglob("*.shard")}


def test_c4z_merge_counts_its_part_files_and_container(tmp_path, monkeypatch):
    """The merge's counters see the files it writes by plain file I/O: the part files the
    tasks write (their sizes on disk, taken as the driver receives each range), read back and
    deleted by the driver, and the ``.c4z`` it writes: bytes written at least the container and
    the parts, read at least the parts and the container (hashed once finished), and the
    peak stored at least the container."""
    from c4table.pipeline.stages import merge_c4z
    from c4table.pipeline.stages.build import build_table
    parts, real = [], merge_c4z.assemble

    def sizing(store, part, board, total, n, level, results, *a, **k):
        def tee():
            for r in results:
                parts.append((store.root / r.part).stat().st_size)
                yield r
        return real(store, part, board, total, n, level, tee(), *a, **k)
    monkeypatch.setattr(merge_c4z, "assemble", sizing)
    out = tmp_path / "b"
    path = build_table("5x4", out, workers=2, memory=SMALL[1], table_format="c4z")
    size = path.stat().st_size
    st = json.loads((out / "stats.json").read_text())
    mg = st["stages"]["merge"]
    assert st["c4z_counted"] and len(parts) == mg["tasks"] > 1 and sum(parts) > size / 2
    assert mg["bytes_written"] >= size + sum(parts)
    assert mg["bytes_read"] >= sum(parts) + size
    assert mg["bytes_deleted"] >= sum(parts)
    assert mg["peak_stored_bytes"] >= size
    assert st["stored_bytes"] == sum(p.stat().st_size for p in out.iterdir()
                                     if p.name != "stats.json")   # the ledger: what is left


def test_c4z_merge_killed_and_resumed_counts_both_runs(staged54, tmp_path):
    """SIGKILL of the merge after its second range is recorded, then a rerun: the merge's
    counts are of both runs (``runs`` 2), the container and its parts counted."""
    out = tmp_path / "b"
    merge_killed(staged54, out, "save_state", "after", 2)
    killed = json.loads((out / "stats.json").read_text())["stages"]["merge"]
    code, err = build_c4z("5x4", out, *SMALL)
    assert code == 0, err
    mg = json.loads((out / "stats.json").read_text())["stages"]["merge"]
    size = (out / "connect4_5x4.c4z").stat().st_size
    assert (killed["runs"], mg["runs"]) == (1, 2)
    assert mg["tasks"] > killed["tasks"] > 0 and mg["bytes_written"] >= killed["bytes_written"] + size / 2
    assert mg["peak_stored_bytes"] >= size


@pytest.mark.parametrize("where,when,n", [("add_block", "before", 9), ("save_state", "after", 2),
                                          ("drop_shards", "after", 5), ("finish", "after", 1),
                                          ("save_state", "before", 1)])
def test_sigkill_at_points_of_the_c4z_merge_then_resume_writes_the_same_bytes(
        c4z54, staged54, tmp_path, where, when, n):
    """SIGKILL of the merge at a chosen point (inside a range, after its state is saved and
    before or after its shards are dropped, after the trailer is written), then a rerun (with
    another memory budget: the recorded ranges are kept): the same .c4z bytes as a build that
    was never stopped, and no shard, side file or work directory left."""
    out = tmp_path / "b"
    merge_killed(staged54, out, where, when, n)
    with RawWatch(out) as watch:
        code, err = build_c4z("5x4", out)
    assert code == 0, f"{where} {when} {n}: {err}"
    assert not watch.seen, f"raw table files appeared: {watch.seen}"
    assert sha256_of(out / "connect4_5x4.c4z") == sha256_of(c4z54[0] / "connect4_5x4.c4z")
    assert not list(out.glob("*.tmp*")) and not (out / "work").exists()


def test_a_resumed_c4z_merge_keeps_the_grid_it_began_on(staged54, tmp_path, built):
    """Killed after two ranges of a merge on 32,768-entry blocks at zstd's own parameters
    (min match 0), then rerun with another block size and the default min match set: the rerun
    continues on the recorded grid and parameters, and the file is compress's of the .dat with
    them (its raw sha256 the known one)."""
    from c4table.c4z.reader import open_c4z
    from c4table.pipeline.stages.merge_c4z import build_level, build_min_match
    assert build_min_match() != 0
    out = tmp_path / "b"
    merge_killed(staged54, out, "save_state", "after", 2,
                 env={"C4TABLE_C4Z_BLOCK_ENTRIES": "32768", "C4TABLE_C4Z_MIN_MATCH": "0"})
    state = json.loads((out / "connect4_5x4.c4z.tmp.state").read_text())
    assert state["version"] == 5 and (state["block_entries"], state["part_entries"]) == (32768, 18432)
    assert state["min_match"] == 0 and state["codec"] == BUILD_CODEC
    code, err = build_c4z("5x4", out)   # C4TABLE_C4Z_BLOCK_ENTRIES=16384 here
    assert code == 0, err
    z = out / "connect4_5x4.c4z"
    with open_c4z(z) as f:
        assert (f.block_entries, f.part_entries) == (32768, 18432)
        assert f.header["sha256_tree"] == known_tables()["5x4"]["sha256_tree"]
        assert "min_match" not in f.header
    ref = compress_table(built("5x4") / "connect4_5x4.dat", tmp_path / "ref.c4z",
                         level=build_level(), block_entries=32768, part_entries=18432,
                         key_dict=False, sym_dict=False, quiet=True, codec=BUILD_CODEC)
    assert blocks_region(z) == blocks_region(ref)
    other = compress_table(built("5x4") / "connect4_5x4.dat", tmp_path / "other.c4z",
                           level=build_level(), block_entries=32768, part_entries=18432,
                           key_dict=False, sym_dict=False, quiet=True, min_match=build_min_match(),
                           codec=BUILD_CODEC)
    assert blocks_region(other) != blocks_region(ref)


def test_a_format_5_merge_resumed_keeps_its_codec_and_is_compress_s_file(staged54, tmp_path,
                                                                         built):
    """``C4TABLE_C4Z_CODEC=rulekeys-frames-v5``: the merge writes format 5. Killed after two
    ranges, then rerun with the setting unset: the rerun continues in format 5, and the file is
    ``compress``'s of the .dat with the same codec and settings (the ranges stitched onto the
    grid exactly), its tree hash the known table's, and it decompresses to the .dat."""
    from c4table.c4z.reader import open_c4z
    from c4table.pipeline.stages.merge_c4z import build_level, build_min_match
    out = tmp_path / "b"
    merge_killed(staged54, out, "save_state", "after", 2, env={"C4TABLE_C4Z_CODEC": FRAME_CODEC})
    state = json.loads((out / "connect4_5x4.c4z.tmp.state").read_text())
    assert state["codec"] == FRAME_CODEC != BUILD_CODEC
    code, err = build_c4z("5x4", out)
    assert code == 0, err
    z = out / "connect4_5x4.c4z"
    with open_c4z(z) as f:
        assert (f.header["version"], f.header["transform"]) == (5, FRAME_CODEC)
        assert f.header["sha256_tree"] == known_tables()["5x4"]["sha256_tree"]
        assert all(f.read_block(i)[0] == 1 for i in range(f.blocks))   # coded by the rules
    dat = built("5x4") / "connect4_5x4.dat"
    ref = compress_table(dat, tmp_path / "ref.c4z", level=build_level(), key_dict=False,
                         sym_dict=False, quiet=True, block_entries=int(SMALL_GRID),
                         part_entries=9216, min_match=build_min_match(), codec=FRAME_CODEC)
    assert blocks_region(z) == blocks_region(ref)
    code, _, err = cli("decompress", z, "-o", tmp_path / "back.dat")
    assert code == 0, err
    assert (tmp_path / "back.dat").read_bytes() == dat.read_bytes()
    v3 = compress_table(dat, tmp_path / "v3.c4z", level=build_level(), key_dict=False,
                        sym_dict=False, quiet=True, block_entries=int(SMALL_GRID),
                        part_entries=9216, min_match=build_min_match(), codec=TRANSFORM)
    assert z.stat().st_size < 0.85 * v3.stat().st_size


@pytest.mark.parametrize("value,says", [("nope", "no .c4z block codec named 'nope'"),
                                        ("a b", "give a block codec's name")])
def test_a_bad_codec_setting_stops_the_build_before_it_starts(tmp_path, value, says):
    from c4table import config
    assert config.SETTINGS["C4TABLE_C4Z_CODEC"].default == BUILD_CODEC    # one default
    out = tmp_path / "b"
    code, _, err = cli("build", "4x4", "--out", out, "-q", *C4Z_CMD,
                       env={"C4TABLE_C4Z_CODEC": value})
    assert code == 2 and one_line_error(err) and says in err and "C4TABLE_C4Z_CODEC" in err
    assert not out.exists()


def test_the_codec_option_names_the_block_codec_and_a_bad_one_stops_the_build(tmp_path):
    """``build --format c4z --codec rulekeys-frames-v5`` writes format 5 whatever
    ``C4TABLE_C4Z_CODEC`` says (the option wins), the known table's tree hash; an unknown name,
    or ``--codec`` with a ``.dat`` build, is one line, exit status 2, and no directory."""
    from c4table.c4z.reader import open_c4z
    out = tmp_path / "b"
    code, _, err = cli("build", "4x4", "--out", out, "-q", *C4Z_CMD, "--codec", FRAME_CODEC,
                       env={"C4TABLE_C4Z_CODEC": TRANSFORM})
    assert code == 0, err
    with open_c4z(out / "connect4_4x4.c4z") as f:
        assert (f.header["version"], f.header["transform"]) == (5, FRAME_CODEC)
        assert f.header["sha256_tree"] == known_tables()["4x4"]["sha256_tree"]
    for args, says in ((("--codec", "nope", *C4Z_CMD), "--codec: no .c4z block codec named 'nope'"),
                       (("--codec", FRAME_CODEC), "a block codec is for --format c4z")):
        bad = tmp_path / "bad"
        code, _, err = cli("build", "4x4", "--out", bad, "-q", *args)
        assert code == 2 and one_line_error(err) and says in err, err
        assert not bad.exists()


def test_a_resumed_merge_says_it_keeps_its_codec_over_the_option(staged54, tmp_path):
    """A merge begun in format 3 and resumed with ``--codec rulekeys-frames-v5`` continues in
    format 3 (its ranges must match) and says so."""
    from c4table.c4z.reader import open_c4z
    out = tmp_path / "b"
    merge_killed(staged54, out, "save_state", "after", 2)
    code, _, err = cli("merge", "5x4", "--out", out, "--workers", 2, *SMALL, *C4Z_CMD,
                       "--codec", FRAME_CODEC)
    assert code == 0, err
    assert f"resuming the merge in {TRANSFORM} blocks, as it began (--codec {FRAME_CODEC}" in err
    with open_c4z(out / "connect4_5x4.c4z") as f:
        assert f.header["transform"] == TRANSFORM


def test_a_merge_state_of_the_first_version_is_continued_on_its_grid():
    """A state written before the grid was recorded (version 1: 65,536-entry blocks, 36,864-entry
    parts) reads with that grid, and its digest of the shards is the one it was written with;
    one written before the min match was (versions 1 and 2) reads with zstd's own parameters
    (min match 0); one written before the codec was (versions 1 to 4), with format 3's."""
    from c4table.pipeline.stages.merge_c4z import MergeState, shards_digest

    class Rec:
        def __init__(self, i):
            self.i = i

        def to_json(self):
            return {"file": f"part-{self.i}.shard", "rows": 10}

    recs = [Rec(0), Rec(1)]
    from c4table.game.board import Board
    board = Board.parse("5x4")
    v1 = xxhash.xxh64(json.dumps([board.name, 65536, [r.to_json() for r in recs]],
                                 sort_keys=True).encode()).hexdigest()
    assert shards_digest(recs, board, 65536, 36864) == v1
    assert shards_digest(recs, board, 262144, 65536) != v1
    st = MergeState.from_json(json.dumps({
        "version": 1, "shards": v1, "bounds": [0, 5, 9], "level": 3, "done": 1,
        "at": {"entries": 5, "blocks": 0, "part_bytes": 8, "last_key": -1, "pending": ""}}).encode())
    assert (st.block_entries, st.part_entries, st.level, st.min_match) == (65536, 36864, 3, 0)
    assert st.codec == TRANSFORM            # before version 5: format 3's blocks
    again = MergeState.from_json(st.to_json())
    assert again == st and json.loads(st.to_json())["version"] == 5
    v2 = json.loads(st.to_json())
    v2["version"] = 2
    del v2["min_match"]
    assert MergeState.from_json(json.dumps(v2).encode()) == st


def test_default_profile_is_the_build_grid_of_compress(tmp_path, built, monkeypatch):
    """Without the tests' setting: 262,144-entry blocks in parts of 65,536 at zstd level 4 with
    min match 6, the same bytes as compress of the .dat with those settings, and decompress
    gives the .dat."""
    from c4table.c4z.reader import open_c4z
    monkeypatch.delenv("C4TABLE_C4Z_BLOCK_ENTRIES")
    monkeypatch.delenv("C4TABLE_C4Z_LEVEL", raising=False)
    monkeypatch.delenv("C4TABLE_C4Z_MIN_MATCH", raising=False)
    out = tmp_path / "b"
    code, err = build_c4z("5x4", out)
    assert code == 0, err
    z = out / "connect4_5x4.c4z"
    with open_c4z(z) as f:
        assert (f.block_entries, f.part_entries, f.header["level"], f.header["min_match"]) == \
            (262144, 65536, 4, 6)
    dat = built("5x4") / "connect4_5x4.dat"
    ref = compress_table(dat, tmp_path / "ref.c4z", level=4, block_entries=262144,
                         part_entries=65536, key_dict=False, sym_dict=False, quiet=True,
                         min_match=6, codec=BUILD_CODEC)
    assert blocks_region(z) == blocks_region(ref)
    code, _, err = cli("decompress", z, "-o", tmp_path / "back.dat")
    assert code == 0, err
    assert sha256_of(tmp_path / "back.dat") == sha256_of(dat)


def test_shards_go_as_the_c4z_merge_passes_them(staged54, tmp_path):
    """Killed after the merge appended some of its ranges: the shards (key and outcome) whose
    keys lie below the next range are deleted, the others are all there and intact; the
    state names the ranges done and the .tmp holds exactly the bytes it records."""
    out = tmp_path / "b"
    before = shard_files(staged54)
    merge_killed(staged54, out, "drop_shards", "after", 4)
    state = json.loads((out / "connect4_5x4.c4z.tmp.state").read_text())
    assert state["done"] == 4 and len(state["bounds"]) > 6
    m = json.loads((out / "manifest.json").read_text())
    recs = [s for step in m["steps"]["backward"].values() for s in step["shards"] if s["rows"]]
    below = state["bounds"][state["done"]]
    gone = {f for s in recs if s["last"] < below for f in (s["file"], s["keys"])}
    kept = {f for s in recs if s["last"] >= below for f in (s["file"], s["keys"])}
    left = shard_files(out)
    assert gone and kept and not gone & left and kept <= left and left < before
    for s in recs:   # what is left is intact
        if s["last"] >= below:
            assert xxhash.xxh64((out / s["file"]).read_bytes()).hexdigest() == s["xxh64"]
    assert (out / "connect4_5x4.c4z.tmp").stat().st_size >= state["at"]["part_bytes"]


@pytest.mark.slow
@pytest.mark.parametrize("target,trial", [("forward", 0), ("backward", 0), ("merge", 0),
                                          ("merge", 1), ("time", 0)])
def test_sigkill_in_a_c4z_build_then_resume_writes_the_same_bytes(c4z54, tmp_path, target, trial):
    """SIGKILL of the whole process group at a random point of a stage (spent files are
    deleted, not binned, in a c4z build), then a rerun: the same .c4z, and no raw file."""
    ref = sha256_of(c4z54[0] / "connect4_5x4.c4z")
    rng = random.Random(f"{SEED}-c4z-{target}-{trial}")
    out = tmp_path / "b"
    cmd = soak.build_cmd("5x4", out, workers=2, extra=C4Z_CMD)
    desc = ""
    for attempt in range(6):   # a late kill may miss a fast merge: draw again, earlier
        shutil.rmtree(out, ignore_errors=True)
        desc = soak.kill_once(cmd, out, rng, soak.cells_of("5x4"), target=target,
                              max_delay=8.0 / 2**attempt)
        if desc.startswith("killed"):
            break
    assert desc.startswith("killed"), f"seed {SEED}: never hit a running build ({desc})"
    with RawWatch(out) as watch:
        code, err = build_c4z("5x4", out)
    assert code == 0, f"seed {SEED}, {desc}: {err}"
    assert not watch.seen, f"raw table files appeared: {watch.seen}"
    assert sha256_of(out / "connect4_5x4.c4z") == ref, f"seed {SEED}: {desc}"
    assert not (out / "connect4_5x4.c4z.tmp").exists() and not (out / "work").exists()


def test_header_has_no_md5_unless_asked(c4z54, tmp_path, built):
    import hashlib
    from c4table.c4z.reader import open_c4z
    with open_c4z(c4z54[0] / "connect4_5x4.c4z") as z:
        assert "md5" not in z.header and "sha256" not in z.header
        assert z.header["sha256_tree"] == known_tables()["5x4"]["sha256_tree"]
    out = tmp_path / "b"
    code, _, err = cli("build", "4x4", "--out", out, "--workers", 2, "-q", *C4Z_CMD,
                       env={"C4TABLE_TABLE_MD5": "1"})
    assert code == 0, err
    with open_c4z(out / "connect4_4x4.c4z") as z:
        dat = built("4x4") / "connect4_4x4.dat"
        assert z.header["md5"] == hashlib.md5(dat.read_bytes()).hexdigest()


def test_format_c4z_with_compress_is_a_usage_error(tmp_path):
    code, _, err = cli("build", "4x4", "--out", tmp_path / "b", *C4Z_CMD, "--compress")
    assert code == 2 and err.count("\n") == 1 and "--format c4z" in err


def test_entries_split_anywhere_make_the_same_file(tmp_path, built):
    """The Assembler alone: a table fed as raw pieces cut at random places (partial blocks
    compressed by the assembler) and as whole blocks gives the bytes compress gives."""
    import numpy as np
    from c4table.c4z.assemble import Assembler
    from c4table.c4z.blocks import encode_block
    from c4table.game.board import Board
    from c4table.pipeline.stages.merge_c4z import build_level, build_min_match
    dat = built("4x4") / "connect4_4x4.dat"
    board = Board.parse("4x4")
    E, B = board.entry_size, 4096
    raw = dat.read_bytes()
    n = len(raw) // E
    mm = build_min_match()
    ref = compress_table(dat, tmp_path / "ref.c4z", level=build_level(), block_entries=B,
                         key_dict=False, sym_dict=False, quiet=True, min_match=mm,
                         codec=BUILD_CODEC)
    rng = np.random.default_rng(SEED % (1 << 32))
    a = Assembler(tmp_path / "a.c4z", board, B, build_level(), min_match=mm)
    at = 0
    while at < n:
        if at % B == 0 and at + B <= n and rng.random() < 0.5:   # a whole block, compressed
            first, comp = encode_block(raw[at * E: (at + B) * E], board, build_level(),
                                       a.part_entries, min_match=mm)
            a.add_block(comp, first)
            at += B
        else:
            step = int(rng.integers(1, 3 * B))
            step = min(step, n - at)
            a.add_raw(raw[at * E: (at + step) * E])
            at += step
    d = a.finish(file=dat.name)
    assert d["sha256"] == sha256_of(dat) and d["bytes"] == len(raw)
    assert blocks_region(tmp_path / "a.c4z") == blocks_region(ref)
    back = tmp_path / "back.dat"
    code, _, err = cli("decompress", tmp_path / "a.c4z", "-o", back)
    assert code == 0, err
    assert back.read_bytes() == raw


@pytest.mark.slow
def test_plan_with_format_c4z_prints_the_smaller_peak_and_traffic():
    """plan --format c4z: the merge writes the .c4z (a few % of the raw table), so the peak
    disk and the bytes written and read are below the .dat build's by about the raw table."""
    plans = {}
    for fmt in ("dat", "c4z"):
        code, out, err = cli("plan", "6x5", "--workers", 2, "--memory-per-worker", "2GiB",
                             "--format", fmt, "--json")
        assert code == 0, err
        plans[fmt] = json.loads(out)
    d, z = plans["dat"], plans["c4z"]
    assert z["table_format"] == "c4z" and d["table_bytes"] == d["final_bytes"]
    assert 0.03 * d["final_bytes"] < z["table_bytes"] < 0.10 * d["final_bytes"]
    assert z["peak_disk_bytes"] < d["peak_disk_bytes"] - 0.5 * d["final_bytes"]
    written = {f: sum(s["bytes_written"] for s in p["io"]["stages"].values())
               for f, p in plans.items()}
    assert written["c4z"] < written["dat"] - 0.5 * d["final_bytes"]
    code, out, err = cli("plan", "6x5", "--workers", 2, "--format", "c4z")
    assert code == 0 and "built as .c4z" in out and "disk traffic" in out, err


def test_c4z_merge_disk_check_covers_what_the_merge_grows(staged54, tmp_path, monkeypatch):
    """The free disk the .c4z merge asks for before it starts covers how much the build
    directory grows while it runs (sampled after each range is appended, before its shards
    go), and is less than the table's share of the raw size that it asked before, since the
    shards it deletes free about as much as it writes."""
    from c4table.io.storage import open_storage
    from c4table.pipeline.runtime import resources
    from c4table.pipeline.stages import merge_c4z
    from c4table.pipeline.stages.build import open_build
    out = tmp_path / "b"
    shutil.copytree(staged54, out, ignore=shutil.ignore_patterns(".lock"))
    store = open_storage(str(out))
    seen = {"sizes": []}
    real_check, real_save = resources.check_free, merge_c4z.save_state

    def check(root, need, what):
        if what.startswith("the table"):
            seen["need"], seen["base"] = need, store.tree_size("")
        return real_check(root, need, what)

    def save(st_store, tmp, st):
        seen["sizes"].append(store.tree_size(""))
        return real_save(st_store, tmp, st)
    monkeypatch.setattr(resources, "check_free", check)
    monkeypatch.setattr(merge_c4z, "save_state", save)
    b = open_build("5x4", out, memory=SMALL[1], workers=2, quiet=True, table_format="c4z")
    try:
        merge_c4z.run(b)
        raw = b.manifest.table.bytes
    finally:
        b.close()
    assert len(seen["sizes"]) > 4
    grew = max(seen["sizes"]) - seen["base"]
    need = (seen["need"] - resources.MARGIN_BYTES) / (1 + resources.MARGIN_FRACTION)
    assert need >= grew, (need, grew)
    assert need < raw * 0.10


def test_range_tasks_gathering_symbols_write_the_same_blocks(staged54, tmp_path):
    """A range task given its shards' generations maps their outcomes to symbols as it gathers
    them, and its encoder follows no ply: the same blocks, head and tail as a task that
    follows each key's ply."""
    from c4table.builddir.manifest import Manifest
    from c4table.game.board import Board
    from c4table.pipeline.stages.merge_c4z import range_blocks_task
    board = Board.parse("5x4")
    m = Manifest.load(staged54)
    recs = [(p, s) for p in range(board.cells + 1) for s in m.shards("backward", p) if s.rows]
    shards, plies = [s.to_json() for _, s in recs], [p for p, _ in recs]
    keys = sorted({s.first for _, s in recs} | {s.last for _, s in recs})
    lo, hi = keys[len(keys) // 3], keys[2 * len(keys) // 3]   # a range inside, ends off the grid
    below = sum(s.rows for _, s in recs if s.last < lo)
    (tmp_path / "p").mkdir()
    got = {}
    for name, pl in (("words", None), ("symbols", plies)):
        got[name] = range_blocks_task(str(staged54), shards, lo, hi, below,
                                      str(tmp_path / "p" / name), board, 1024, 4, 512, 6, pl)
    a, b = got["words"], got["symbols"]
    assert a.firsts and (a.offset, a.count, a.head, a.tail) == (b.offset, b.count, b.head, b.tail)
    assert (a.firsts, a.lengths, a.xxh64s) == (b.firsts, b.lengths, b.xxh64s)
    assert (tmp_path / "p" / "words").read_bytes() == (tmp_path / "p" / "symbols").read_bytes()


def test_a_shard_recorded_under_another_generation_stops_the_c4z_merge(staged54, tmp_path):
    """The range tasks take each shard's symbols from the generation the manifest records it
    under: shards recorded under the wrong one stop the merge in one line, naming a shard."""
    from c4table.builddir.manifest import checksum
    out = tmp_path / "b"
    shutil.copytree(staged54, out, ignore=shutil.ignore_patterns(".lock"))
    mf = out / "manifest.json"
    data = json.loads(mf.read_text())
    back = data["steps"]["backward"]
    back["7"], back["8"] = back["8"], back["7"]
    data.pop("xxh64", None)
    data["xxh64"] = checksum(data)   # a consistent manifest, only the generations swapped
    mf.write_text(json.dumps(data))
    code, _, err = cli("merge", "5x4", "--out", out, "-q", "--workers", "2", *C4Z_CMD)
    assert code != 0 and one_line_error(err)
    assert "generation 7" in err and "not of that ply" in err, err


def test_the_three_writers_write_the_same_file(tmp_path, built):
    """build --format c4z (the merge's range tasks and driver, many ranges), compress of the
    .dat and compress of the raw table as an .xz stream, at one grid, level and min match:
    the same .c4z byte for byte (one block writer and one codec behind all three), which
    decompresses to the .dat."""
    import lzma
    from c4table.c4z.stream import compress_stream
    from c4table.pipeline.stages.merge_c4z import build_grid, build_level, build_min_match
    out = tmp_path / "b"
    code, _, err = cli("build", "5x4", "--out", out, "--workers", 2, "-q", *C4Z_CMD, *SMALL,
                       env={"C4TABLE_TABLE_MD5": "1", "C4TABLE_TABLE_SHA256": "1"})
    # (the other two record the sha256 and md5 too)
    assert code == 0, err
    built_z = out / "connect4_5x4.c4z"
    dat = built("5x4") / "connect4_5x4.dat"
    (B, P), level, mm = build_grid(), build_level(), build_min_match()
    xz = tmp_path / "connect4_5x4.dat.xz"
    xz.write_bytes(lzma.compress(dat.read_bytes(), preset=0))
    z_dat = compress_table(dat, tmp_path / "dat.c4z", level=level, block_entries=B,
                           part_entries=P, key_dict=False, sym_dict=False, min_match=mm,
                           quiet=True, threads=2, codec=BUILD_CODEC)
    z_xz = compress_stream(xz, tmp_path / "xz.c4z", level=level, block_entries=B,
                           part_entries=P, min_match=mm, quiet=True, threads=2,
                           codec=BUILD_CODEC)
    data = built_z.read_bytes()
    assert z_dat.read_bytes() == data and z_xz.read_bytes() == data
    hdr = json.loads(data[-TRAILER.size - TRAILER.unpack(data[-TRAILER.size:])[2]: -TRAILER.size])
    assert (hdr["blocks"], hdr["block_entries"], hdr["min_match"]) == (-(-hdr["entries"] // B), B, mm)
    code, _, err = cli("decompress", built_z, "-o", tmp_path / "back.dat")
    assert code == 0, err
    assert (tmp_path / "back.dat").read_bytes() == dat.read_bytes()


def test_plan_codec_option_prices_the_named_codec():
    """``plan --format c4z --codec rulekeys-frames-v5`` prices the build's file in format 5
    (about 0.77x format 3's on 6x5: ``C4TABLE_C4Z_CODEC``'s figures); ``--codec`` of a
    ``.dat`` plan is one line and exit status 2."""
    sizes = {}
    for codec in (TRANSFORM, FRAME_CODEC):
        code, out, err = cli("plan", "6x5", "--workers", 2, "--format", "c4z", "--codec", codec,
                             "--json")
        assert code == 0, err
        sizes[codec] = json.loads(out)["table_bytes"]
    assert 0.7 < sizes[FRAME_CODEC] / sizes[TRANSFORM] < 0.85, sizes
    code, _, err = cli("plan", "6x5", "--codec", FRAME_CODEC)
    assert code == 2 and one_line_error(err) and "--format c4z" in err, err


@pytest.mark.parametrize("fmt", ["c4z", "dat"])
def test_the_merge_shows_progress_as_its_ranges_come_in(fmt, tmp_path, monkeypatch, capsys):
    """A merge's range tasks report ranges and entries done, with a rate, as they come in
    (at most one line each ``PROGRESS_EVERY`` seconds, set to 0 here; the last counts every
    entry of the table)."""
    from c4table.pipeline.stages import merge
    from c4table.pipeline.stages.build import build_table
    monkeypatch.setattr(merge, "PROGRESS_EVERY", 0.0)
    build_table("5x4", tmp_path / "b", workers=2, quiet=False, table_format=fmt)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("[merge] range ")]
    assert lines, "no progress line"
    k, n = lines[-1].split()[2].split("/")
    assert k == n and "  entries 1,974,174  " in lines[-1] and " M/s  elapsed " in lines[-1], lines
