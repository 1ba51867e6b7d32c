"""Built tables against independent evidence: the published 4x4 hash, Böck's position totals,
an independent brute-force minimax (c4table/testing/oracle.py), and byte-identity across memory budgets,
worker counts and interrupted builds."""
import hashlib
import json
import shutil

import numpy as np
import pytest

from c4table.game.board import Board
from c4table.analysis.verify import verify_table
from c4table.io.treehash import SpanCut, tree_hash, tree_hash_file
from c4table.table.known import known_tables
from conftest import published_tables, published_totals, run_cli
from c4table.testing.oracle import oracle_bytes, oracle_ply_counts
from c4table.pipeline.stages.build import build_table, open_build

def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(d) -> dict:
    return json.loads((d / "manifest.json").read_text())


def test_4x4_matches_published_sha256(built):
    d = built("4x4")
    path = d / "connect4_4x4.dat"
    ref = published_tables()["4x4"]
    assert path.stat().st_size == int(ref["bytes"]) == 322_164
    assert sha256(path) == ref["sha256"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["4x4", "5x4", "4x5"])
def test_counts_match_published_totals(built, spec):
    board = Board.parse(spec)
    m = manifest(built(spec))
    entries = m["table"]["entries"]
    symmetric = sum(p["symmetric"] for p in m["plies"])
    assert entries == sum(p["entries"] for p in m["plies"])
    assert 2 * entries - symmetric == published_totals()[board.width, board.height]
    assert m["table"]["bytes"] == entries * board.entry_size


@pytest.mark.parametrize("spec", ["4x4", "5x4", "4x5"])
def test_table_sorted_unique_and_hash_recorded(built, spec):
    board = Board.parse(spec)
    path = built(spec) / board.table_filename
    rep = verify_table(path, quiet=True)
    assert rep.ok, rep.problems
    assert rep.sha256_tree == manifest(built(spec))["table"]["sha256_tree"] == \
        tree_hash_file(path)["sha256_tree"]
    assert sha256(path) == known_tables()[spec]["sha256"]   # byte-identical


@pytest.mark.slow
@pytest.mark.parametrize("w,h", [(3, 3), (4, 3), (3, 4), (4, 4), (2, 5), (5, 2), (1, 6)])
def test_every_entry_equals_bruteforce_minimax(tmp_path, w, h):
    path = build_table(f"{w}x{h}", tmp_path, quiet=True, workers=1)
    assert path.read_bytes() == oracle_bytes(w, h)


@pytest.mark.slow
@pytest.mark.parametrize("w,h", [(3, 4), (4, 4)])
def test_per_ply_counts_equal_bruteforce(tmp_path, w, h):
    build_table(f"{w}x{h}", tmp_path, quiet=True, workers=1)
    plies = manifest(tmp_path)["plies"]
    ref = oracle_ply_counts(w, h)
    for mine, theirs in zip(plies, ref):
        for field in ("positions", "entries", "terminal", "a_wins", "draws", "b_wins"):
            assert mine[field] == theirs[field], (mine["ply"], field)
    assert len(plies) == len(ref)


@pytest.mark.slow
def test_spilling_external_sort_gives_same_bytes(built, tmp_path):
    """A tiny memory budget forces many shards, runs and merge ranges: same bytes."""
    ref = built("5x4") / "connect4_5x4.dat"
    path = build_table("5x4", tmp_path, memory="2MiB", workers=2, quiet=True)
    m = manifest(tmp_path)
    assert max(len(s["shards"]) for s in m["steps"]["forward"].values()) > 4
    assert path.read_bytes() == ref.read_bytes()


def test_one_worker_equals_two(built, tmp_path):
    ref = built("4x5") / "connect4_4x5.dat"
    path = build_table("4x5", tmp_path, workers=1, quiet=True)
    assert sha256(path) == sha256(ref)


def test_resume_after_forward_only(built, tmp_path):
    from c4table.pipeline.stages import forward
    b = open_build("5x4", tmp_path, workers=1, quiet=True)
    forward.run(b, max_ply=9)
    b.close()
    m = manifest(tmp_path)
    assert "backward" in m["steps"] and m["steps"]["backward"] == {}
    assert len(m["plies"]) == 10
    path = build_table("5x4", tmp_path, workers=2, quiet=True)
    assert sha256(path) == sha256(built("5x4") / "connect4_5x4.dat")


def test_mirror_symmetric_keys_and_first_entry(built):
    board = Board.parse("5x4")
    data = np.fromfile(built("5x4") / board.table_filename, np.uint8).reshape(-1, board.entry_size)
    assert not data[0, :board.key_bytes].any()          # empty board = key 0 comes first
    assert (data[0, -1] & 0xC0) in (0x00, 0x40, 0x80)


@pytest.mark.parametrize("direct", [False, True])
def test_hash_ranges_hashes_each_range_once_written(tmp_path, direct, monkeypatch):
    """The merge hashes the table while later ranges are still being written: each range's
    bytes are read only once its task reported them (no read-ahead into a range still being
    filled), so the hashes equal those of the finished file; a range that does not start where
    the one before it ended, ranges that do not add up to the table, or a missing range, fail.
    Read around the page cache (``direct``), the bytes the tasks left dirty in it are those
    hashed too (the kernel writes them back before such a read)."""
    from c4table.errors import BuildError
    from c4table.pipeline.stages.merge import RangeWritten, hash_ranges
    from c4table.io.storage import open_storage
    rng = np.random.default_rng(7)
    E, counts = 5, [3, 1000, 1, 2000, 7]   # ranges far smaller than a read buffer
    below = np.concatenate([[0], np.cumsum(counts)]).tolist()
    data = rng.integers(0, 256, below[-1] * E, dtype=np.uint8).tobytes()
    path = tmp_path / "t.dat"
    path.write_bytes(bytes(len(data)))   # the truncated file, filled range by range
    n, total = len(counts), below[-1]

    def tasks(wrong=None, last_wrong=False):
        with open(path, "r+b") as f:
            for r, c in enumerate(counts):
                f.seek(below[r] * E)
                span = data[below[r] * E: below[r + 1] * E]
                f.write(span)
                f.flush()
                cuts = [SpanCut(below[r] * E, u) for u in (1000, 4096 * E)]
                for cut in cuts:
                    cut.update(span)
                yield RangeWritten(below[r], c + (r == wrong) + (last_wrong and r == n - 1),
                                   *(cut.finish() for cut in cuts))

    from c4table.io import treehash
    monkeypatch.setattr(treehash, "PIECE_BYTES", 1000)   # the tasks' pieces above
    tree = tree_hash(data, 1000)
    got = hash_ranges(open_storage(tmp_path), "t.dat", E, n, total, tasks(), direct, md5=True,
                      sha256=True)
    assert got == {"sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest(),
                   "sha256_tree": tree, "bytes": len(data)}
    got = hash_ranges(open_storage(tmp_path), "t.dat", E, n, total, tasks(), direct)
    assert got == {"sha256_tree": tree, "bytes": len(data)}
    path.write_bytes(bytes(len(data)))
    with pytest.raises(BuildError, match="merge range 2: its hashed bytes end at 5,020, its entries at byte 5,025"):
        hash_ranges(open_storage(tmp_path), "t.dat", E, n, total, tasks(wrong=2))
    with pytest.raises(BuildError, match="merge range 4: its hashed bytes end at 15,055, its entries at byte 15,060"):
        hash_ranges(open_storage(tmp_path), "t.dat", E, n, total, tasks(last_wrong=True))
    with pytest.raises(BuildError, match="finished 2 of 5 ranges"):
        hash_ranges(open_storage(tmp_path), "t.dat", E, n, total, iter(list(tasks())[:2]))


def test_md5_recorded_when_asked(built, tmp_path, monkeypatch):
    """The manifest holds the table's tree hash; its sha256 and md5 (serial passes) only with
    C4TABLE_TABLE_SHA256 and C4TABLE_TABLE_MD5, and then those of the bytes on disk; verify
    prints them with --file-hashes."""
    path = built("4x4") / "connect4_4x4.dat"
    data = path.read_bytes()
    assert "md5" not in manifest(built("4x4"))["table"] and "sha256" not in manifest(built("4x4"))["table"]
    assert verify_table(path, quiet=True, file_hashes=True).md5 == hashlib.md5(data).hexdigest()
    monkeypatch.setenv("C4TABLE_TABLE_MD5", "1")
    monkeypatch.setenv("C4TABLE_TABLE_SHA256", "1")
    again = build_table("4x4", tmp_path, workers=2, quiet=True)
    rec = manifest(tmp_path)["table"]
    assert again.read_bytes() == data
    assert rec["md5"] == hashlib.md5(data).hexdigest() and rec["sha256"] == sha256(path)


@pytest.mark.slow
def test_restart_leaves_no_file_of_the_old_table(built, tmp_path):
    """``build --restart`` into a directory holding a finished ``.dat`` (with its block sums)
    and the temporary files of an interrupted ``--compress``, rebuilding as a ``.c4z``: none of
    the old table's files is left beside the new one; a file of the user's stays."""
    out = tmp_path / "b"
    shutil.copytree(built("4x4"), out)
    assert (out / "connect4_4x4.dat.sums").is_file()
    for junk in ("connect4_4x4.c4z.part", "connect4_4x4.c4z.part.idx",
                 "connect4_4x4.c4z.part.json", "connect4_4x4.dat.sums.tmp"):
        (out / junk).write_bytes(b"left by an interrupted run")
    (out / "notes.txt").write_text("mine")
    code, stdout, err = run_cli("build", "4x4", "--out", str(out), "--restart", "--format", "c4z",
                                "--workers", "2", "-q")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "connect4_4x4.c4z", "manifest.json", "notes.txt", "stats.json"]
    assert verify_table(out / "connect4_4x4.c4z", quiet=True, file_hashes=True).sha256 == \
        published_tables()["4x4"]["sha256"]
