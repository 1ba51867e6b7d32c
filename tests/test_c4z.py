""".c4z tables: byte-exact round trips (sha256 of Cadot's published 4x4 table), every key
answered like the independent oracle, every reader on a .c4z, damaged and truncated files
refused naming the block, resumed compression, and remote reads (moto S3, a Range-capable
HTTP server) with one ranged read per probed block and the index cached on disk."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from httpkit import RangeHandler, serving
from conftest import run_cli
from c4table.testing.oracle import oracle_key, oracle_ply_counts, oracle_table

from c4table import c4z
from c4table.c4z.writer import compress_table, decompress_table
from c4table.c4z.reader import open_c4z
from c4table.errors import CorruptDataError, PositionNotFoundError
from c4table.open import open_table

SMALL_BLOCKS = 4096   # many blocks on small tables


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def known(board: str) -> dict:
    from c4table.table.known import known_tables
    return known_tables()[board]


@pytest.fixture(scope="module")
def t44(built, tmp_path_factory):
    """The 4x4 table and a .c4z of it with small blocks (in a directory of its own)."""
    d = tmp_path_factory.mktemp("c4z44")
    dat = d / "connect4_4x4.dat"
    shutil.copy(built("4x4") / "connect4_4x4.dat", dat)
    z = compress_table(dat, block_entries=SMALL_BLOCKS, quiet=True, threads=2)
    return dat, z


@pytest.fixture(scope="module")
def t54(built, tmp_path_factory):
    d = tmp_path_factory.mktemp("c4z54")
    dat = d / "connect4_5x4.dat"
    shutil.copy(built("5x4") / "connect4_5x4.dat", dat)
    z = compress_table(dat, block_entries=SMALL_BLOCKS * 4, quiet=True, threads=2)
    return dat, z


def test_round_trip_reproduces_published_4x4_bytes(t44, tmp_path):
    dat, z = t44
    assert sha(dat) == known("4x4")["sha256"]          # Cadot's published hash (see known_tables)
    with open_c4z(z) as f:
        assert f.header["sha256"] == known("4x4")["sha256"] and f.blocks > 10
        assert f.header["md5"] == hashlib.md5(dat.read_bytes()).hexdigest()
    out = decompress_table(z, tmp_path / "back.dat", quiet=True)
    assert sha(out) == known("4x4")["sha256"]
    assert not list(tmp_path.glob("*.part*"))


@pytest.mark.slow
def test_every_key_matches_the_oracle(t44):
    dat, z = t44
    ref = oracle_table(4, 4)
    keys = np.array(sorted(ref), np.uint64)
    want = np.array([ref[int(k)] for k in keys], np.uint8)
    rng = np.random.default_rng(7)
    perm = rng.permutation(keys.shape[0])
    for path in (dat, z):
        with open_table(path) as t:
            assert (t.probe_keys(keys[perm]) == want[perm]).all()
            assert [t.outcome_byte(int(k)) for k in keys[::997]] == list(want[::997])
            # keys that are not in the table: raise, or the default
            absent = np.setdiff1d(np.arange(0, int(keys[-1]) + 5, 3, dtype=np.uint64), keys)[:50]
            with pytest.raises(PositionNotFoundError):
                t.probe_keys(absent)
            got = t.probe_keys(np.r_[absent[:3], keys[:2]], default=-1)
            assert got.tolist() == [-1, -1, -1, *want[:2].tolist()]
            chunks = list(t.iter_entries(3000, start=100, stop=20000))
            assert np.concatenate([c["key"] for c in chunks]).tolist() == keys[100:20000].tolist()


def test_wdl_many_agrees_with_oracle(t44):
    dat, z = t44
    ref = oracle_table(4, 4)
    moves = ["", "1", "12", "2233", "1122334", "3344", "1213", "444"]
    expect = []
    for m in moves:
        cls = ref[oracle_key(4, 4, m)] & 0xC0
        mover = 0x40 if len(m) % 2 == 0 else 0x80
        expect.append(0 if cls == 0 else (1 if cls == mover else -1))
    for path in (dat, z):
        with open_table(path) as t:
            assert t.wdl_many(moves).tolist() == expect
            assert [t.wdl(m) for m in moves] == expect


@pytest.mark.slow
def test_readers_answer_the_same_on_c4z(t54, tmp_path):
    dat, z = t54
    for cmd in (["lookup", "--json", "--table", "{}", "3344", "", "11"],):
        a = run_cli(*[x.format(dat) for x in cmd])
        b = run_cli(*[x.format(z) for x in cmd])
        assert a[0] == b[0] == 0 and a[1] == b[1] and a[1]
    a = run_cli("stats", "--scan", "-q", str(dat))
    b = run_cli("stats", "-q", str(z))
    assert a[0] == b[0] == 0 and a[1] == b[1]
    rc, out, err = run_cli("play", "--table", str(z), "--side", "B", "--start", "33")
    assert rc == 0 and "ply 2" in out
    import pyarrow.parquet as pq
    from c4table.analysis.export import export_positions
    for src, name in ((dat, "a.parquet"), (z, "b.parquet")):
        assert export_positions(src, tmp_path / name, 6, source="table").rows > 0
    a, b = pq.read_table(tmp_path / "a.parquet"), pq.read_table(tmp_path / "b.parquet")
    assert a.to_pydict() == b.to_pydict()
    rc, out, _ = run_cli("verify", "-q", str(z))
    assert rc == 0 and known("5x4")["sha256_tree"] in out and "known table 5x4" in out
    rc, out, _ = run_cli("verify", "-q", "--sha256", "0" * 64, str(z))
    assert rc == 1 and "MISMATCH" in out


@pytest.mark.slow
def test_cli_compress_decompress_exact(t54, tmp_path):
    dat, _ = t54
    rc, out, err = run_cli("compress", str(dat), "-o", str(tmp_path / "t.c4z"), "--threads", "2")
    assert rc == 0 and "% of" in out and "ETA" not in out
    rc, out, err = run_cli("decompress", "-q", str(tmp_path / "t.c4z"), "-o", str(tmp_path / "t.dat"))
    assert rc == 0, err
    assert sha(tmp_path / "t.dat") == sha(dat) == known("5x4")["sha256"]
    rc, _, err = run_cli("compress", str(tmp_path / "nope.dat"))
    assert rc == 2 and err.startswith("c4table: error:") and "no such table file" in err
    (tmp_path / "connect4_5x4.dat").write_bytes(dat.read_bytes()[:-2])
    rc, _, err = run_cli("compress", str(tmp_path / "connect4_5x4.dat"))
    assert rc == 1 and "multiple" in err and err.count("\n") == 1


def _layout(path):
    data = Path(path).read_bytes()
    idx_off, idx_len, hdr_len, _, _ = c4z.TRAILER.unpack(data[-c4z.TRAILER.size:])
    return data, idx_off, idx_len, hdr_len


@pytest.mark.parametrize("where", ["block", "index", "header", "trailer", "truncate-tail",
                                   "truncate-block"])
@pytest.mark.slow
def test_damaged_c4z_is_refused_naming_the_part(t44, tmp_path, where):
    _, z = t44
    data, idx_off, idx_len, hdr_len = _layout(z)
    d = bytearray(data)
    with open_c4z(z) as f:
        blk = 5
        lo, hi = int(f.offsets[blk]), int(f.offsets[blk + 1])
        key_in_block = int(f.block(blk)[0][10])
    if where == "block":
        d[(lo + hi) // 2] ^= 0x01
    elif where == "index":
        d[idx_off + idx_len // 2] ^= 0x01
    elif where == "header":
        d[idx_off + idx_len + hdr_len // 2] ^= 0x01
    elif where == "trailer":
        d[-c4z.TRAILER.size] ^= 0x01
    elif where == "truncate-tail":
        del d[-7:]
    else:
        del d[lo + 3:]
    bad = tmp_path / "connect4_4x4.c4z"
    bad.write_bytes(bytes(d))
    expect = {"block": f"block {blk}", "index": "index", "header": "header", "trailer": "trailer",
              "truncate-tail": "trailer", "truncate-block": "trailer"}[where]
    with pytest.raises(CorruptDataError, match=expect):
        with open_c4z(bad) as f:
            f.outcome_byte(key_in_block)
    if where in ("block", "truncate-tail"):   # the command line: one line, exit 1
        rc, out, err = run_cli("verify", "-q", str(bad))
        assert rc == 1 and expect in err and err.count("\n") == 1 and "Traceback" not in err
    else:
        from c4table.analysis.verify import verify_table
        with pytest.raises(CorruptDataError, match=expect):
            verify_table(bad, quiet=True)
    if where == "block":   # a probe that needs the block: one line, exit 1, no answer
        with open_table(bad) as t:
            with pytest.raises(CorruptDataError):
                t.probe_keys(np.array([key_in_block], np.uint64))
        ok_key = int(open_c4z(z).first_keys[0])
        assert open_table(bad).outcome_byte(ok_key) == open_table(z).outcome_byte(ok_key)


def test_never_a_wrong_answer_under_random_damage(t44, tmp_path):
    """Flip one random byte anywhere in the data: every probe of every key either answers
    what the intact file answers or raises CorruptDataError."""
    _, z = t44
    data = Path(z).read_bytes()
    ref = oracle_table(4, 4)
    keys = np.array(sorted(ref), np.uint64)
    want = np.array([ref[int(k)] for k in keys], np.uint8)
    rng = np.random.default_rng(3)
    for trial in range(12):
        d = bytearray(data)
        d[int(rng.integers(len(c4z.MAGIC), len(d)))] ^= int(rng.integers(1, 256))
        bad = tmp_path / f"t{trial}.c4z"
        bad.write_bytes(bytes(d))
        try:
            f = open_c4z(bad)
        except CorruptDataError:
            continue
        with f:
            for i in range(f.blocks):
                lo = i * f.block_entries
                try:
                    got = f.probe_keys(keys[lo: lo + f.block_entries])
                except CorruptDataError:
                    continue
                assert (got == want[lo: lo + f.block_entries]).all()


@pytest.mark.slow
def test_compress_resumes_after_interruption(t54, tmp_path, monkeypatch):
    dat, _ = t54
    whole = compress_table(dat, tmp_path / "whole.c4z", block_entries=SMALL_BLOCKS, quiet=True)
    monkeypatch.setattr(c4z.blockwriter, "CHECKPOINT_SECONDS", 0.0)
    real = c4z.blockwriter._encode
    calls = {"n": 0}

    def dies(*a):
        calls["n"] += 1
        if calls["n"] > 200:
            raise KeyboardInterrupt
        return real(*a)
    monkeypatch.setattr(c4z.blockwriter, "_encode", dies)
    out = tmp_path / "resumed.c4z"
    with pytest.raises(KeyboardInterrupt):
        compress_table(dat, out, block_entries=SMALL_BLOCKS, quiet=True, threads=2)
    ck = json.loads((tmp_path / "resumed.c4z.part.json").read_text())
    assert 100 < ck["blocks"] <= 200 and not out.exists()
    monkeypatch.setattr(c4z.blockwriter, "_encode", real)
    lines = []

    class Sink:
        def write(self, s): lines.append(s)
        def flush(self): pass
    compress_table(dat, out, block_entries=SMALL_BLOCKS, quiet=False, stream=Sink(), threads=2)
    assert any(f"resuming resumed.c4z at block {ck['blocks']:,}" in s for s in lines)
    assert out.read_bytes() == whole.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["resumed.c4z", "whole.c4z"]


def test_decompress_resumes_from_a_partial_output(t54, tmp_path):
    dat, z = t54
    out = tmp_path / "x.dat"
    part = tmp_path / "x.dat.part"
    raw = dat.read_bytes()
    part.write_bytes(raw[: len(raw) // 2] + b"garbage")   # a crash mid-way: a torn tail
    decompress_table(z, out, quiet=True)
    assert sha(out) == sha(dat) and not part.exists()


@pytest.mark.slow
def test_build_compress_only(tmp_path):
    d = tmp_path / "b"
    rc, out, err = run_cli("build", "4x4", "--out", str(d), "-q", "--compress-only", "--clean")
    assert rc == 0, err
    assert not (d / "connect4_4x4.dat").exists() and out.split()[0] == str(d / "connect4_4x4.c4z")
    rc, out, err = run_cli("verify", "-q", str(d / "connect4_4x4.c4z"))
    assert rc == 0 and "manifest.json" in out and "known table 4x4" in out
    rc, out2, err = run_cli("build", "4x4", "--out", str(d), "-q", "--compress-only", "--clean")
    assert rc == 0 and out2 == out.splitlines()[0] + "\n" or out2.split()[0] == str(d / "connect4_4x4.c4z")
    rc, out, err = run_cli("merge", "4x4", "--out", str(d), "-q", "--compress-only")
    assert rc == 0 and out.split()[0].endswith(".c4z"), err


# --------------------------------------------------------------------------- remote
@pytest.fixture
def http_dir(tmp_path):
    root = tmp_path / "www"
    root.mkdir()
    with serving(root) as url:
        yield root, url


@pytest.mark.slow
def test_http_one_read_per_block_and_index_cached(t44, http_dir, tmp_path, monkeypatch):
    _, z = t44
    root, url = http_dir
    shutil.copy(z, root / "connect4_4x4.c4z")
    monkeypatch.setenv("C4TABLE_CACHE", str(tmp_path / "cache"))
    data, idx_off, idx_len, hdr_len = _layout(z)
    # a first read that holds the header but not the index
    for m in (c4z.reader, c4z.sources):   # the tail a reader fetches at open, local or remote
        monkeypatch.setattr(m, "TAIL_BYTES", hdr_len + c4z.TRAILER.size + 8)
    ref = oracle_table(4, 4)
    keys = np.array(sorted(ref), np.uint64)
    with open_c4z(f"{url}/connect4_4x4.c4z") as f:
        assert len(RangeHandler.log) == 2          # the tail, then the index
        before = len(RangeHandler.log)
        a, b = int(keys[10]), int(keys[20])        # one block
        assert f.outcome_byte(a) == ref[a] and f.outcome_byte(b) == ref[b]
        assert len(RangeHandler.log) == before + 1
        many = keys[:: 37]
        need = len(set(np.searchsorted(f.first_keys, many, "right") - 1) - set(f._lru)
                   - set(f._slru))          # blocks decoded whole, or parsed for probes
        n0 = len(RangeHandler.log)
        assert f.probe_keys(many).tolist() == [ref[int(k)] for k in many]
        assert len(RangeHandler.log) - n0 == need
    assert list((tmp_path / "cache").glob("*.idx"))
    RangeHandler.log.clear()
    with open_table(f"{url}/connect4_4x4.c4z") as t:
        assert len(RangeHandler.log) == 1          # the tail only: the index came from the cache
        assert t.probe("2233").outcome in "AB" or t.probe("2233").outcome == "draw"
    rc, out, err = run_cli("verify", "-q", f"{url}/connect4_4x4.c4z")
    assert rc == 0 and "known table 4x4" in out, err
    rc, out, err = run_cli("lookup", "--table", f"{url}/connect4_4x4.c4z", "12")
    rc2, out2, _ = run_cli("lookup", "--table", str(z), "12")
    assert rc == rc2 == 0 and out == out2
    rc, _, err = run_cli("lookup", "--table", f"{url}/nope.c4z", "12")
    assert rc == 2 and "no such table file" in err


@pytest.mark.slow
def test_s3_c4z(t44, tmp_path, monkeypatch):
    moto_server = pytest.importorskip("moto.server")
    pafs = pytest.importorskip("pyarrow.fs")
    _, z = t44
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    try:
        host, port = srv.get_host_and_port()
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}",
               "AWS_EC2_METADATA_DISABLED": "true", "C4TABLE_CACHE": str(tmp_path / "cache")}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        fs = pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"], allow_bucket_creation=True)
        fs.create_dir("c4z")
        with fs.open_output_stream("c4z/t/connect4_4x4.c4z") as f:
            f.write(Path(z).read_bytes())
        uri = "s3://c4z/t/connect4_4x4.c4z"
        ref = oracle_table(4, 4)
        keys = np.array(sorted(ref), np.uint64)
        with open_table(uri) as t:
            src = t.c4z.src
            n0 = src.requests
            assert t.probe_keys(keys[:5]).tolist() == [ref[int(k)] for k in keys[:5]]
            assert src.requests - n0 == 1
            assert t.wdl_many(["", "1"]).tolist() == [t.wdl(""), t.wdl("1")]
        rc, out, err = run_cli("verify", "-q", uri)
        assert rc == 0 and known("4x4")["sha256_tree"] in out, err
        from c4table.analysis.stats import ply_stats
        rows = ply_stats(uri)
        counts = oracle_ply_counts(4, 4)                # the independent brute force
        assert [(r.positions, r.entries, r.won, r.drawn, r.lost) for r in rows] == \
            [(c["positions"], c["entries"], c["a_wins"], c["draws"], c["b_wins"]) for c in counts]
        decompress_table(uri, tmp_path / "d.dat", quiet=True)
        assert sha(tmp_path / "d.dat") == known("4x4")["sha256"]
    finally:
        srv.stop()


# Whole .c4z files of the rule-coded formats, copied from their measurement pages: format 4
# (rulekeys-plysym-v4) docs/measurements/2026-11-28-c4z-streams.md, section 3; format 5
# (rulekeys-frames-v5, compress's default) docs/measurements/2026-11-29-c4z-probes.md, its
# first table: codec -> board -> (entries, file bytes).
RULE_FILES = {
    c4z.RULE_CODEC: {"5x5": (34_888_367, 7_498_806), "5x6": (522_196_933, 94_322_263),
                     "6x5": (1_409_488_535, 258_300_840)},
    c4z.FRAME_CODEC: {"5x5": (34_888_367, 7_816_966), "5x6": (522_196_933, 98_961_395),
                      "6x5": (1_409_488_535, 264_697_855),
                      # too big to compress whole here: every hundredth block, SE 0.37% and
                      # 0.36% (docs/measurements/2026-11-29-6x6-format-5.md and
                      # docs/measurements/2026-11-29-c4z-size-anchors.md)
                      "6x6": (34_586_522_319, 5_109_496_995),
                      "7x5": (56_415_101_059, 8_525_252_888)}}
DEFAULT_FILES = RULE_FILES[c4z.DEFAULT_CODEC]
# build --format c4z's own file (format 3, its profile), whole file:
# docs/measurements/2026-11-27-c4z-build-profile.md.
BUILD_FILES = {"5x5": (34_888_367, 11_165_540)}


@pytest.mark.parametrize("codec", [c4z.RULE_CODEC, c4z.FRAME_CODEC])
def test_plan_sizes_the_c4z_of_the_default_codec_on_measured_boards(codec):
    """A board with a measured file of a rule-coded format: the plan's .c4z size is that
    file's within 1%, and says it is measured; a build's own .c4z stays format 3's (its
    measured file within 5%)."""
    from c4table.game.board import Board
    from c4table.pipeline.planning.plan import Plan, PlyPlan, c4z_bytes_per_entry
    for name, (entries, size) in RULE_FILES[codec].items():
        bpe, measured = c4z_bytes_per_entry(Board.parse(name), entries, codec)
        assert measured and abs(entries * bpe / size - 1) < 0.01, name
    for name, (entries, size) in BUILD_FILES.items():
        p = Plan(Board.parse(name), 1, 1 << 30, [PlyPlan(0, entries, entries, "test")],
                 table_format="c4z")
        assert p.c4z_codec == c4z.DEFAULT_CODEC and abs(p.c4z_bytes / DEFAULT_FILES[name][1] - 1) < 0.01
        assert abs(p.table_bytes / size - 1) < 0.05 and p.table_bytes > 1.3 * p.c4z_bytes


@pytest.mark.parametrize("codec", [c4z.RULE_CODEC, c4z.FRAME_CODEC])
def test_the_format4_model_predicts_each_measured_board_from_the_others(monkeypatch, codec):
    """Leave one board's file of a rule-coded format (and its format-3 symbol streams) out of
    the model and predict it: within 8% of the measured file (when written: format 4 -6.2% to
    +7.2%, format 5 -7.6% to +5.1%); 6x6 and 7x5, samples 25 and 40 times the entries of
    the biggest whole file, which the others only extrapolate to, within 13% (format 5 from
    6x5: 6x6 +10.9%, 7x5 +12.8%; ``python -m tools.diag.c4z_size_model``)."""
    from c4table.game.board import Board
    from c4table.pipeline.planning import c4zsize
    tables = ("C4Z4_MEASURED", "C4Z4_BITS") if codec == c4z.RULE_CODEC else \
        ("C4Z5_MEASURED", "C4Z5_BITS")
    files, bits, streams = (dict(getattr(c4zsize, tables[0])), dict(getattr(c4zsize, tables[1])),
                            dict(c4zsize.C4Z_STREAMS))
    assert files.keys() == RULE_FILES[codec].keys()
    for name, (entries, size) in RULE_FILES[codec].items():
        for attr, d in ((tables[0], files), (tables[1], bits), ("C4Z_STREAMS", streams)):
            monkeypatch.setattr(c4zsize, attr, {k: v for k, v in d.items() if k != name})
        e = c4zsize.estimate(Board.parse(name), entries, codec)
        assert not e.measured and e.codec == codec
        bound = 0.13 if name in c4zsize.SAMPLED else 0.08
        assert abs(entries * e.bytes_per_entry / size - 1) < bound, (name, entries * e.bytes_per_entry)


def test_a_board_bigger_than_every_measured_one_takes_the_nearest_shape():
    """6x6 and 7x5 are samples (every hundredth block), the biggest boards of formats 3 and 5:
    their own figures are their samples'; a bigger board takes its format-5 keys and symbol
    ratio from the measured board nearest in shape (7x6: 7x5, the bigger of the two at one
    step), a smaller one from 6x5, the biggest whole file. The plan says "sampled" of it, on
    its line and in its JSON."""
    from c4table.game.board import Board
    from c4table.pipeline.planning import c4zsize
    for name, n, page in (("6x6", 34_586_522_319, "6x6-format-5"),
                          ("7x5", 56_415_101_059, "c4z-size-anchors")):
        for codec in (c4z.FRAME_CODEC, c4z.TRANSFORM):
            e = c4zsize.estimate(Board.parse(name), n, codec)
            assert e.measured and e.how.startswith("sampled") and page in e.source, (name, codec)
    assert c4zsize.estimate(Board.parse("6x5"), 1_409_488_535, c4z.TRANSFORM).how == "measured"
    big = c4zsize.estimate(Board.parse("7x6"), 2_265_994_664_313)
    assert not big.measured and "7x5's" in big.how and "c4z-size-anchors" in big.source
    assert "6x6" not in big.source
    assert c4zsize.keys4_anchor(c4z.FRAME_CODEC, 10**12, (6, 7)) == "6x6"
    assert c4zsize.keys4_anchor(c4z.FRAME_CODEC, 1_974_174, (5, 4)) == "6x5"
    assert c4zsize.keys4_anchor(c4z.RULE_CODEC, 2_265_994_664_313, (7, 6)) == "6x5"
    rc, out, err = run_cli("plan", "6x6", "--json")
    assert rc == 0, err
    j = json.loads(out)
    assert j["c4z_measured"] is True and j["c4z_how"].startswith("sampled")
    rc, out, err = run_cli("plan", "6x6")
    line = next(ln for ln in out.splitlines() if ln.startswith("as .c4z"))
    assert rc == 0 and "sampled" in line and "extrapolated" not in line, line


@pytest.mark.slow
def test_the_plan_predicts_the_c4z_compress_writes_here(t54, tmp_path):
    """5x4 is in no measurement table: the plan's format-5 size of it is within 5% of the file
    compress writes now at its defaults."""
    from c4table.pipeline.planning.plan import make_plan
    dat, _ = t54
    z = compress_table(dat, tmp_path / "d.c4z", quiet=True, threads=2)
    with open_c4z(z) as f:
        assert f.header["transform"] == c4z.DEFAULT_CODEC
    p = make_plan("5x4", workers=1, memory_per_worker=1 << 30)
    assert not p.c4z_measured and abs(p.c4z_bytes / z.stat().st_size - 1) < 0.05


@pytest.mark.slow
def test_plan_estimates_the_c4z_size():
    from c4table.pipeline.planning import c4zsize
    from c4table.pipeline.planning.plan import c4z_bytes_per_entry, make_plan
    p = make_plan("7x6", workers=64, memory_per_worker=16 * 2**30)
    bpe, measured = c4z_bytes_per_entry(p.board, p.entries)
    assert not measured and p.c4z_bytes == int(p.entries * bpe) and 0 < p.c4z_bytes < p.final_bytes
    assert bpe <= min(size / n for n, size in DEFAULT_FILES.values())   # they fall with size
    assert p.c4z_archive_bytes < p.c4z_bytes
    assert any("is an extrapolation" in n and "keys" in n and c4z.DEFAULT_CODEC in n
               and c4zsize.FORMAT5_SOURCE in n for n in p.notes)
    j = p.to_json()
    assert j["c4z_bytes"] == p.c4z_bytes and j["c4z_measured"] is False
    assert j["c4z_codec"] == c4z.DEFAULT_CODEC
    rc, out, err = run_cli("plan", "7x6")
    assert rc == 0 and "extrapolated" in out, err
    line = next(ln for ln in out.splitlines() if ln.startswith("as .c4z"))
    from c4table.units import format_size
    assert format_size(p.c4z_bytes) in line and f"format 5 {c4z.DEFAULT_CODEC}" in line, line
    rc, out, err = run_cli("plan", "5x5", "--format", "c4z")  # a measured board: no such note
    assert rc == 0 and "extrapolat" not in out, err
    assert f"format 5 {c4z.DEFAULT_CODEC}" in out and f"format 3 {c4z.BUILD_CODEC}" in out


def test_the_c4z_size_model_predicts_each_measured_board_from_the_others(monkeypatch):
    """Leave one board out of format 3's two-stream model (pipeline/planning/c4zsize.py) and
    predict it: the model must reproduce what was measured, not only fit it. Measured when
    written: totals within 7%, symbols within 11%, keys (which scatter most) within 25%."""
    from c4table.game.board import Board
    from c4table.pipeline.planning import c4zsize
    streams = dict(c4zsize.C4Z_STREAMS)
    for name, (entries, keys, syms) in streams.items():
        others = {k: v for k, v in streams.items() if k != name}
        monkeypatch.setattr(c4zsize, "C4Z_STREAMS", others)
        monkeypatch.setattr(c4zsize, "C4Z_MEASURED", {})
        e = c4zsize.estimate(Board.parse(name), entries, c4z.TRANSFORM)
        assert not e.measured
        assert abs(e.keys / keys - 1) < 0.3, (name, e.keys, keys)
        assert abs(e.symbols / syms - 1) < 0.12, (name, e.symbols, syms)
        assert abs(e.keys + e.symbols - keys - syms) / (keys + syms) < 0.08, name
    monkeypatch.undo()
    for name, (entries, keys, syms) in c4zsize.C4Z_STREAMS.items():
        if name in c4zsize.C4Z_MEASURED:      # streams measured apart add up to the total
            total = keys + syms + c4zsize.overhead(Board.parse(name), entries)
            assert abs(total / c4zsize.C4Z_MEASURED[name][1] - 1) < 0.03, name


@pytest.mark.slow
def test_compress_archive_profile_round_trips(t44, tmp_path):
    """compress --archive: 16,777,216-entry blocks of one part each; the file is read
    like any .c4z and decompresses to the same bytes."""
    dat, _ = t44
    z = tmp_path / "a.c4z"
    rc, out, err = run_cli("compress", "--archive", "-q", str(dat), "-o", str(z))
    assert rc == 0, err
    with c4z.open_c4z(z) as f:
        assert f.block_entries == c4z.ARCHIVE_BLOCK_ENTRIES == 1 << 24
        assert f.header["part_entries"] == f.block_entries
    with open_table(dat) as a, open_table(z) as b:
        keys = np.concatenate([c["key"] for c in a.iter_entries()])[::97].copy()
        assert keys.shape[0] > 500 and (a.probe_keys(keys) == b.probe_keys(keys)).all()
        assert b.probe("12").outcome in ("A", "B", "draw")
    decompress_table(z, tmp_path / "d.dat", quiet=True)
    assert (tmp_path / "d.dat").read_bytes() == dat.read_bytes()


def test_compress_frame_entries_sets_the_symbol_frames(t44, tmp_path):
    """compress --frame-entries N: format 5's symbol frames of N entries, recorded in the
    header and read back by every reader (probes, decompress: the same bytes); from a .dat,
    and from a .c4z; refused in one line for a codec without frames and beside --archive."""
    dat, z44 = t44
    for src, z in ((dat, tmp_path / "f.c4z"), (z44, tmp_path / "g.c4z")):
        rc, out, err = run_cli("compress", "--frame-entries", "3000", "--block-entries", "8192",
                               "-q", str(src), "-o", str(z))
        assert rc == 0, err
        with c4z.open_c4z(z) as f:
            assert f.header["transform"] == c4z.FRAME_CODEC and f.header["frame_entries"] == 3000
        with open_table(dat) as a, open_table(z) as b:
            keys = np.concatenate([c["key"] for c in a.iter_entries()])[::97].copy()
            assert keys.shape[0] > 500 and (a.probe_keys(keys) == b.probe_keys(keys)).all()
        decompress_table(z, tmp_path / "d.dat", quiet=True)
        assert (tmp_path / "d.dat").read_bytes() == dat.read_bytes()
    for extra in (["--codec", c4z.TRANSFORM], ["--archive"]):
        rc, out, err = run_cli("compress", "--frame-entries", "3000", *extra, "-q", str(dat),
                               "-o", str(tmp_path / "h.c4z"))
        assert rc == 2 and "--frame-entries" in err and not (tmp_path / "h.c4z").exists(), err


def test_a_closed_c4z_table_says_so(t44):
    """As a closed .dat table: a C4Error naming the file, not an AttributeError."""
    from c4table.errors import ClosedTableError
    _, z = t44
    t = open_table(z)
    assert t.probe("12").outcome in ("A", "B", "draw")
    t.close()
    for use in (lambda: t.probe("12"), lambda: t.wdl_many(["1"]), lambda: next(t.iter_entries())):
        with pytest.raises(ClosedTableError, match="closed"):
            use()


def _mapped_kib(path) -> int | None:
    """Resident KiB of this process's mappings of ``path`` (None: no /proc/self/smaps)."""
    smaps = Path("/proc/self/smaps")
    if not smaps.exists():
        return None
    kib, mine = 0, False
    for line in smaps.read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:   # a mapping's first line
            mine = line.endswith(str(path))
        elif mine and line.startswith("Rss:"):
            kib += int(head[1])
    return kib


def test_a_scan_leaves_the_file_unmapped_and_probes_still_map_it(t54):
    """A whole-file scan (verify, decompress, iter_entries) reads blocks into buffers of its
    own, so the resident size stays its buffers' (a 13 GB table scanned through the mapping
    counted all 13 GB); probes keep their zero-copy view of the mapped file."""
    dat, z = t54
    from c4table.c4z.reader import C4zFile
    with C4zFile(z) as f:
        before = _mapped_kib(z)
        if before is None:
            pytest.skip("no /proc/self/smaps here")
        n = sum(k.shape[0] for _, k, _ in f.iter_blocks())
        assert n == f.entries
        scanned = _mapped_kib(z)
        for i in range(f.blocks):
            f.block(i)
        probed = _mapped_kib(z)
    size_kib = Path(z).stat().st_size // 1024
    assert scanned - before < size_kib // 4, (before, scanned, size_kib)
    assert probed - before > size_kib // 2, (before, probed, size_kib)


def test_key_dictionary_read_once_and_cached_remotely(t54, http_dir, tmp_path, monkeypatch):
    """A format-3 .c4z of 5x4 (compressed with that codec by name) has a trained key
    dictionary: a remote reader fetches it once with the index, then takes both from its
    cache; answers equal the raw table's."""
    dat, _ = t54
    z = compress_table(dat, tmp_path / "v3.c4z", block_entries=SMALL_BLOCKS * 4, quiet=True,
                       threads=2, codec="varint-plysym-v3")
    root, url = http_dir
    shutil.copy(z, root / "connect4_5x4.c4z")
    monkeypatch.setenv("C4TABLE_CACHE", str(tmp_path / "cache"))
    with open_table(dat) as t:
        keys = np.array([t.key_at(i) for i in range(0, len(t), 9973)], np.uint64)
        want = t.probe_keys(keys)
    for opens in range(2):
        RangeHandler.log.clear()
        with open_c4z(f"{url}/connect4_5x4.c4z") as f:
            assert f.header["version"] == 3 and f.header["transform"] == "varint-plysym-v3"
            assert f.header["key_dict"]["length"] == len(f.key_dict) > 0
            n_open = len(RangeHandler.log)
            assert [f.outcome_byte(int(k)) for k in keys] == want.tolist()
        if opens:
            assert n_open == 1      # the tail only: index and dictionary from the cache
    assert list((tmp_path / "cache").glob("*.dict"))


def test_blocks_in_parts_round_trip_and_probe(t44):
    """Blocks of several parts (zstd blocks that end where the parts end, decoded only up to
    the probed part): every key of the 4x4 table probes like the oracle, from any part, with
    and without the decoded prefixes of earlier probes, and a block of 4 parts decodes back
    exactly."""
    dat, z = t44
    with open_c4z(z) as f:
        assert f.part_entries == c4z.default_part_entries(SMALL_BLOCKS) < f.block_entries
        ref = oracle_table(4, 4)
        keys = sorted(ref)[::7]
        assert [f.outcome_byte(k) for k in keys] == [ref[k] for k in keys]
        f.clear_cache()
        for k in keys[::-1][:300]:   # a later part first, then earlier ones of the same block
            assert f.outcome_byte(k) == ref[k]
        with pytest.raises(PositionNotFoundError):
            f.outcome_byte(max(ref) + 1)
        raw = dat.read_bytes()[: f.entry_size * 1000]
        first, block = c4z.encode_block(raw, f.board, part_entries=300)
        k, o = c4z.decode_block_bytes(block, f.board, 1000, first, part_entries=300)
        assert len(c4z.split_block(block)[2]) == 3 and bytes(c4z.rows_of(k, o, f.entry_size)) == raw


@pytest.mark.slow
def test_older_format_versions_are_refused_in_one_line(t44, tmp_path):
    _, z = t44
    data, idx_off, idx_len, hdr_len = _layout(z)
    hdr = json.loads(data[idx_off + idx_len: idx_off + idx_len + hdr_len])
    for version in (1, 2):
        hdr.update(version=version, transform="varint-plysym-v2")
        h = json.dumps(hdr).encode()
        import xxhash
        old = tmp_path / f"v{version}.c4z"
        old.write_bytes(data[: idx_off + idx_len] + h + c4z.TRAILER.pack(
            idx_off, idx_len, len(h), xxhash.xxh64_intdigest(h), c4z.END_MAGIC))
        rc, out, err = run_cli("lookup", "--table", str(old), "1")
        assert rc == 1 and f"format version {version}" in err and "compress the table again" \
            in err and err.count("\n") == 1, err


def _with_header(z, tmp_path, name: str, **changes):
    """A copy of the ``.c4z`` ``z`` whose header has ``changes`` (consistent trailer)."""
    import xxhash
    data, idx_off, idx_len, hdr_len = _layout(z)
    hdr = json.loads(data[idx_off + idx_len: idx_off + idx_len + hdr_len])
    hdr.update(changes)
    h = json.dumps(hdr).encode()
    out = tmp_path / name
    out.write_bytes(data[: idx_off + idx_len] + h + c4z.TRAILER.pack(
        idx_off, idx_len, len(h), xxhash.xxh64_intdigest(h), c4z.END_MAGIC))
    return out


def test_an_unknown_block_codec_is_refused_in_one_line(t44, tmp_path):
    _, z = t44
    other = _with_header(z, tmp_path, "other.c4z", transform="varint-plysym-v9")
    rc, out, err = run_cli("lookup", "--table", str(other), "1")
    assert rc == 1 and err.count("\n") == 1, err
    assert "no .c4z block codec named 'varint-plysym-v9'" in err and "varint-plysym-v3" in err


def test_the_reader_takes_the_codec_the_header_names(t44, tmp_path, monkeypatch):
    """A codec registered under another name, named in a file's header, is the one the reader
    decodes and probes with."""
    from c4table.c4z import registry
    from c4table.testing.oracle import oracle_table
    used = []

    class Counting(c4z.get_codec(c4z.DEFAULT_CODEC)):     # the codec t44 was written with
        def decode(self, block, n, first):
            used.append("decode")
            return super().decode(block, n, first)

        def probe(self, st, n, key):
            used.append("probe")
            return super().probe(st, n, key)
    monkeypatch.setitem(registry._CODECS, "test-counting", Counting)
    Counting.name = "test-counting"
    _, z = t44
    other = _with_header(z, tmp_path, "other.c4z", transform="test-counting")
    ref = oracle_table(4, 4)
    keys = sorted(ref)[::97]
    with open_c4z(other) as f:
        assert type(f.codec) is Counting
        assert [f.outcome_byte(k) for k in keys] == [ref[k] for k in keys]
        assert c4z.RawStream(f).read() == t44[0].read_bytes()
    assert "probe" in used and "decode" in used
