"""The tree hash (c4table.io.treehash): the combiner over any cut of a table into ranges equals
a plain recomputation; a build's merge records the tree hash of the file it wrote (.dat and
.c4z, also after a resumed merge); verify finds a one-byte change in a piece a range task
hashed and in one two ranges straddle; the known tables' tree hashes are those c4table builds."""
from __future__ import annotations

import hashlib
import json
import random
import shutil
import struct

import pytest
from hypothesis import given, settings, strategies as st

from c4table.io import treehash
from c4table.io.treehash import SpanCut, TreeHash, combine, tree_hash, tree_hash_file
from c4table.table.known import known_tables


def plain(data: bytes, piece: int) -> str:
    """The definition, written out with hashlib alone."""
    ds = b"".join(hashlib.sha256(data[i: i + piece]).digest() for i in range(0, len(data), piece))
    return hashlib.sha256(ds + struct.pack("<QQ", len(data), piece)).hexdigest()


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 5000), piece=st.integers(1, 700), seed=st.integers(0, 2**32 - 1),
       cuts=st.integers(0, 12))
def test_combiner_over_random_range_cuts_equals_the_plain_tree_hash(n, piece, seed, cuts):
    rnd = random.Random(seed)
    data = rnd.randbytes(n)
    bounds = sorted({0, n, *(rnd.randint(0, n) for _ in range(cuts))})
    spans = []
    for lo, hi in zip(bounds, bounds[1:]):
        c = SpanCut(lo, piece)
        at = lo
        while at < hi:   # fed in chunks of random sizes
            step = rnd.randint(1, max(1, hi - lo))
            c.update(data[at: min(hi, at + step)])
            at += step
        e = c.finish()
        assert len(e.head) < piece and len(e.tail) < piece and e.end == hi
        spans.append(e)
    h = TreeHash(threads=rnd.choice([1, 3]), piece=piece)
    assert combine(h, spans) == n
    assert h.result()["sha256_tree"] == plain(data, piece) == tree_hash(data, piece)
    s = TreeHash(threads=2, piece=piece)   # streamed in random chunks
    at = 0
    while at < n:
        step = rnd.randint(1, 3 * piece)
        s.update(data[at: at + step])
        at += step
    assert s.result()["sha256_tree"] == plain(data, piece)


def test_combiner_refuses_a_gap():
    a, b = SpanCut(0, 8), SpanCut(11, 8)
    a.update(b"x" * 10)
    b.update(b"y" * 10)
    with pytest.raises(Exception, match="starts at byte 11"):
        combine(TreeHash(piece=8), [a.finish(), b.finish()])


def test_tree_hash_of_a_file_on_threads(tmp_path):
    data = random.Random(1).randbytes(100_003)
    (tmp_path / "t").write_bytes(data)
    for piece in (1000, 4096, 1 << 20):
        got = tree_hash_file(tmp_path / "t", threads=4, piece=piece)
        assert got == {"sha256_tree": plain(data, piece), "bytes": len(data)}
    assert tree_hash_file(tmp_path / "t")["sha256_tree"] == plain(data, 1 << 26)


PIECE = 1 << 15   # small pieces: 5x4's 9.9 MB are 302 of them, the ranges straddle many


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(treehash, "PIECE_BYTES", PIECE)   # the forked workers inherit it


def _build(board, out, monkeypatch, fmt="dat", seen=None):
    from c4table.pipeline.stages import merge
    from c4table.pipeline.stages.build import build_table
    if seen is not None:   # the ranges as the driver took them
        real = merge.hash_ranges

        def spy(store, rel, E, n, total, written, *a, **k):
            def passing():
                for rw in written:
                    seen.append((rw.offset * E, (rw.offset + rw.count) * E))
                    yield rw
            return real(store, rel, E, n, total, passing(), *a, **k)
        monkeypatch.setattr(merge, "hash_ranges", spy)
    build_table(board, out, memory="64MiB", quiet=True, workers=2, table_format=fmt)
    return json.loads((out / "manifest.json").read_text())["table"]


def test_build_records_the_tree_hash_of_its_file(small_pieces, monkeypatch, tmp_path):
    """A .dat build with pieces much smaller than its ranges: the recorded tree hash is the
    file's, the file is the known one (sha256), its block sums sidecar checks, and a one-byte
    change in a piece a task hashed, or in a piece two ranges straddle, fails verify."""
    from c4table.analysis.verify import verify_table
    seen = []
    rec = _build("5x4", tmp_path / "b", monkeypatch, seen=seen)
    dat = tmp_path / "b" / "connect4_5x4.dat"
    data = dat.read_bytes()
    assert len(seen) > 1 and "sha256" not in rec
    assert rec["sha256_tree"] == plain(data, PIECE) == tree_hash_file(dat)["sha256_tree"]
    assert hashlib.sha256(data).hexdigest() == known_tables()["5x4"]["sha256"]
    rep = verify_table(dat, quiet=True)   # (the known table's tree is of 64 MiB pieces)
    assert rep.sums == "match" and rep.sha256_tree == rec["sha256_tree"]
    assert "sha256_tree matches manifest.json" in rep.matched, rep.problems
    cuts = [lo for lo, _ in seen[1:] if lo % PIECE]
    inner = next(k * PIECE for lo, hi in seen for k in range(-(-lo // PIECE), hi // PIECE)
                 if (k + 1) * PIECE <= hi)
    assert cuts, "no range boundary inside a piece"
    for where in (inner + 12_345 % PIECE, cuts[0] - 3):   # a piece inside a range; a straddled one
        d = tmp_path / f"c{where}"
        shutil.copytree(tmp_path / "b", d, ignore=shutil.ignore_patterns("work"))
        t = d / "connect4_5x4.dat"
        E, row = 5, where // 5
        at = row * E + 4                                   # an outcome byte: still a valid one
        b = bytearray(t.read_bytes())
        b[at] ^= 1 if (b[at] & 0x3F) < 20 else 3
        t.write_bytes(bytes(b))
        rep = verify_table(t, quiet=True, shards=False)
        assert not rep.ok and any("sha256_tree" in p and "manifest.json" in p for p in rep.problems), \
            rep.problems


def test_c4z_build_and_its_resume_record_the_tree_hash(small_pieces, monkeypatch, tmp_path):
    """A .c4z build records the raw table's tree hash (the .dat build's), its container's own
    tree hash, and its header carries it; a merge stopped after its second range and rerun
    records the same."""
    from c4table.c4z.reader import open_c4z
    from c4table.pipeline.stages import merge_c4z
    ref = _build("5x4", tmp_path / "d", monkeypatch)["sha256_tree"]
    rec = _build("5x4", tmp_path / "z", monkeypatch, "c4z")
    z = tmp_path / "z" / "connect4_5x4.c4z"
    assert rec["sha256_tree"] == ref and rec["c4z"]["sha256_tree"] == tree_hash_file(z)["sha256_tree"]
    with open_c4z(z) as f:
        assert f.header["sha256_tree"] == ref and "sha256" not in f.header
    # stopped after the second range's state is saved, then continued
    real, calls = merge_c4z.save_state, []

    def stop(store, tmp, st):
        real(store, tmp, st)
        calls.append(st)
        if len(calls) == 2:
            raise KeyboardInterrupt
    monkeypatch.setattr(merge_c4z, "save_state", stop)
    with pytest.raises(KeyboardInterrupt):
        _build("5x4", tmp_path / "r", monkeypatch, "c4z")
    assert calls[-1].tree_pieces > 0 and (tmp_path / "r" / "connect4_5x4.c4z.tmp.tree").exists()
    monkeypatch.setattr(merge_c4z, "save_state", real)
    again = _build("5x4", tmp_path / "r", monkeypatch, "c4z")
    assert again["sha256_tree"] == ref
    assert (tmp_path / "r" / "connect4_5x4.c4z").read_bytes() == z.read_bytes()


@pytest.mark.parametrize("board", ["4x4", "5x4"])
def test_known_tree_hashes_are_those_c4table_builds(board, tmp_path):
    from c4table.pipeline.stages.build import build_table
    build_table(board, tmp_path / "b", quiet=True, workers=2)
    dat = tmp_path / "b" / f"connect4_{board}.dat"
    rec = json.loads((tmp_path / "b" / "manifest.json").read_text())["table"]
    k = known_tables()[board]
    assert rec["sha256_tree"] == k["sha256_tree"] == tree_hash_file(dat)["sha256_tree"]
    assert hashlib.sha256(dat.read_bytes()).hexdigest() == k["sha256"]
    assert k["tree_provenance"]["provenance"] == "built"
