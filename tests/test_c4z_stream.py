"""Streaming a raw table into a ``.c4z`` (``c4table compress TABLE.dat.xz`` and ``compress -``):
small boards packed with Cadot's exact xz options give ``.c4z`` files whose answers, hashes
and decompressed bytes are the ``.dat``'s; damaged streams are refused with one line; a run
killed with SIGKILL resumes to the same bytes. Also: a ``.c4z`` truncated under an open
reader is an error, not a SIGBUS, in a process and in the server."""
from __future__ import annotations

import hashlib
import lzma
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from c4table.c4z import open_c4z
from c4table.c4z.stream import compress_stream
from c4table.c4z.writer import decompress_table
from c4table.errors import CorruptDataError
from c4table.table.source import keys_of_rows

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


def cadot_xz(raw: bytes, entry_size: int) -> bytes:
    """``raw`` packed as Cadot packs his tables: ``xz --delta=dist=E --lzma2=dict=64MiB,lc=4,
    lp=0,pb=0,mf=bt3,mode=normal,nice=273,depth=0`` (``E`` the entry size)."""
    return lzma.compress(raw, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=[
        {"id": lzma.FILTER_DELTA, "dist": entry_size},
        {"id": lzma.FILTER_LZMA2, "dict_size": 64 << 20, "lc": 4, "lp": 0, "pb": 0,
         "mf": lzma.MF_BT3, "mode": lzma.MODE_NORMAL, "nice_len": 273, "depth": 0}])


def cli(*args, stdin: bytes | None = None, env: dict | None = None):
    p = subprocess.run([sys.executable, "-m", "c4table.cli.main", *args], input=stdin,
                       capture_output=True, timeout=600, env={**os.environ, **(env or {})})
    return p.returncode, p.stdout.decode(), p.stderr.decode()


@pytest.fixture(scope="module")
def packed(built, tmp_path_factory):
    """``(raw bytes, path of the .xz)`` of the 5x4 table (5-byte entries), packed as Cadot's."""
    raw = (built("5x4") / "connect4_5x4.dat").read_bytes()
    d = tmp_path_factory.mktemp("xz")
    xz = d / "connect4_5x4.dat.xz"
    xz.write_bytes(cadot_xz(raw, 5))
    return raw, xz


def test_cadot_options_round_trip_through_xz(packed):
    """The fixture's archive is one that ``xz -dc`` (here liblzma) decodes to the table."""
    raw, xz = packed
    if Path("/usr/bin/xz").exists():
        assert subprocess.run(["/usr/bin/xz", "-dc", str(xz)], capture_output=True).stdout == raw
    assert lzma.decompress(xz.read_bytes()) == raw


def test_both_forms_equal_the_dat(packed, tmp_path):
    raw, xz = packed
    a = compress_stream(xz, tmp_path / "a.c4z", quiet=True, block_entries=8192)
    code, out, err = cli("compress", "-", "--board", "5x4", "--block-entries", "8192", "-q",
                         "-o", str(tmp_path / "b.c4z"), stdin=raw)
    assert code == 0, err
    b = tmp_path / "b.c4z"
    assert a.read_bytes() == b.read_bytes()          # same stream, same file
    rows = np.frombuffer(raw, np.uint8).reshape(-1, 5)
    keys = keys_of_rows(rows, 4)
    with open_c4z(a) as z:
        h = z.header
        assert (h["sha256"], h["md5"], h["raw_bytes"], h["entries"]) == (
            hashlib.sha256(raw).hexdigest(), hashlib.md5(raw).hexdigest(), len(raw), len(keys))
        assert h["file"] == "connect4_5x4.dat"
        assert np.array_equal(z.probe_keys(keys), rows[:, 4])   # every key of the .dat
    back = decompress_table(a, tmp_path / "back.dat", quiet=True)
    assert back.read_bytes() == raw
    code, out, err = cli("verify", str(b))
    assert code == 0 and "known table 5x4" in out, out + err


def refused(args, stdin=None, out=None):
    code, so, se = cli(*args, stdin=stdin)
    assert code == 1, (code, so, se)
    assert len(se.strip().splitlines()) == 1, se
    if out is not None:
        assert not out.exists()
    return se


def test_damaged_archives_refused(packed, tmp_path):
    raw, xz = packed
    data = xz.read_bytes()
    cut = tmp_path / "cut" / "connect4_5x4.dat.xz"
    cut.parent.mkdir()
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert "truncated" in refused(["compress", "-q", str(cut)], out=cut.with_name("connect4_5x4.c4z"))
    flip = tmp_path / "flip" / "connect4_5x4.dat.xz"
    flip.parent.mkdir()
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0x10
    flip.write_bytes(bytes(bad))
    refused(["compress", "-q", str(flip)], out=flip.with_name("connect4_5x4.c4z"))


@pytest.mark.parametrize("damage", ["inside an entry", "at an entry", "outcome", "key order",
                                    "bit"])
def test_damaged_raw_streams_refused(packed, tmp_path, damage):
    raw, _ = packed
    E = 5
    n = len(raw) // E
    b = bytearray(raw)
    if damage == "inside an entry":
        b = b[: len(b) // 2 + 2]
    elif damage == "at an entry":
        b = b[: (n // 2) * E]
    elif damage == "outcome":      # a draw byte that is impossible at its ply (0x3f)
        b[(n // 3) * E + 4] = 0x3f
    elif damage == "key order":    # an entry moved before its predecessor
        i = n // 2
        b[i * E: (i + 1) * E], b[(i + 1) * E: (i + 2) * E] = raw[(i + 1) * E: (i + 2) * E], raw[i * E: (i + 1) * E]
    else:                          # one bit of a key's low byte: still increasing, maybe
        b[(n // 2) * E + 3] ^= 0x01
    out = tmp_path / "x.c4z"
    err = refused(["compress", "-", "--board", "5x4", "-q", "-o", str(out)], stdin=bytes(b), out=out)
    expect = {"inside an entry": ["inside an entry"], "at an entry": ["truncated"],
              "outcome": ["impossible at its ply"], "key order": ["increasing"],
              "bit": ["increasing", "impossible", "not the complete 5x4 table"]}[damage]
    assert any(x in err for x in expect), err


KILLER = textwrap.dedent("""
    import json, os, signal, sys
    import c4table.c4z.blockwriter as d
    import c4table.c4z.stream as s
    d.CHECKPOINT_SECONDS = 0.0
    real, seen = d._checkpoint, [0]
    def ckpt(*a, **k):
        real(*a, **k)
        seen[0] += 1
        if seen[0] == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
    d._checkpoint = ckpt
    s.compress_stream(sys.argv[1], sys.argv[2], quiet=True, block_entries=4096, threads=2,
                      **json.loads(sys.argv[4]))
""")


def test_kill9_and_resume_identical(packed, tmp_path, monkeypatch):
    raw, xz = packed
    whole = compress_stream(xz, tmp_path / "whole.c4z", quiet=True, block_entries=4096)
    out = tmp_path / "r.c4z"
    p = subprocess.run([sys.executable, "-c", KILLER, str(xz), str(out), "60", "{}"],
                       capture_output=True, timeout=600)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()
    assert not out.exists() and out.with_name("r.c4z.part.json").exists()
    import c4table.c4z.blockwriter as w
    calls = []
    real = w._encode
    monkeypatch.setattr(w, "_encode", lambda *a: calls.append(1) or real(*a))
    import io
    msg = io.StringIO()
    compress_stream(xz, out, block_entries=4096, stream=msg)
    assert "resuming r.c4z at block" in msg.getvalue()
    nblocks = -(-len(raw) // (5 * 4096))
    assert 0 < len(calls) <= nblocks - 60 + 1       # the done blocks were not compressed again
    assert out.read_bytes() == whole.read_bytes()
    assert not out.with_name("r.c4z.part").exists()


def test_resume_on_stdin_checks_the_prefix(packed, tmp_path):
    raw, xz = packed
    out = tmp_path / "s.c4z"
    p = subprocess.run([sys.executable, "-c", KILLER, "-", str(out), "30", '{"board": "5x4"}'],
                       input=raw,
                       capture_output=True, timeout=600)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()
    other = bytearray(raw)
    other[100] ^= 0x01     # the prefix differs: refused, the checkpoint kept
    err = refused(["compress", "-", "--board", "5x4", "--block-entries", "4096", "--threads", "2",
                   "-q", "-o", str(out)], stdin=bytes(other), out=out)
    assert "checkpoint" in err
    code, so, se = cli("compress", "-", "--board", "5x4", "--block-entries", "4096",
                       "--threads", "2", "-o", str(out), stdin=raw)
    assert code == 0 and "resuming" in se, se
    whole = compress_stream(xz, tmp_path / "w.c4z", quiet=True, block_entries=4096, threads=2)
    assert out.read_bytes() == whole.read_bytes()


# ------------------------------------------------------- a .c4z truncated under a reader
READER = textwrap.dedent("""
    import os, sys
    import numpy as np
    from c4table.c4z import open_c4z
    from c4table.errors import C4Error
    path = sys.argv[1]
    with open_c4z(path) as z:
        keys = np.array([int(k) for k in sys.argv[2:]], np.uint64)
        z.probe_keys(keys[:1])
        os.truncate(path, os.path.getsize(path) // 3)
        try:
            z.probe_keys(keys[1:])
        except C4Error as e:
            print(e, file=sys.stderr)
            sys.exit(1)
    print("no error")
""")


def _spread_keys(raw: bytes, E: int, n: int = 5) -> list[int]:
    rows = np.frombuffer(raw, np.uint8).reshape(-1, E)
    idx = np.linspace(0, rows.shape[0] - 1, n).astype(int)
    return [int(k) for k in keys_of_rows(rows[idx], E - 1)]


#: The codecs by how a reader gets a block: format 5's probes read it into a buffer of their own
#: (a short read past the cut), format 4's map the file (each read checks the file's size first).
READS = [("rulekeys-frames-v5", "short read (truncated file)"),
         ("rulekeys-plysym-v4", "shrank")]


@pytest.mark.parametrize("codec,says", READS)
def test_truncated_under_a_reader_is_an_error_not_sigbus(packed, tmp_path, codec, says):
    raw, xz = packed
    z = compress_stream(xz, tmp_path / "t.c4z", quiet=True, block_entries=4096, codec=codec)
    p = subprocess.run([sys.executable, "-c", READER, str(z), *map(str, _spread_keys(raw, 5))],
                       capture_output=True, timeout=300)
    assert p.returncode == 1, (p.returncode, p.stderr.decode())   # -7 would be SIGBUS
    assert says in p.stderr.decode() and "truncated" in p.stderr.decode()


@pytest.mark.parametrize("codec", [c for c, _ in READS])
def test_truncated_under_the_server_is_a_5xx(packed, tmp_path, codec):
    """Cut inside the first block: every block the server has not read yet lies past the cut.
    What still answers (from blocks read before the cut) answers as the ``.dat`` does."""
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient
    from c4table.serve.app import create_app
    raw, xz = packed
    z = compress_stream(xz, tmp_path / "connect4_5x4.c4z", quiet=True, block_entries=4096,
                        codec=codec)
    dat = tmp_path / "dat" / "connect4_5x4.dat"
    dat.parent.mkdir()
    dat.write_bytes(raw)
    moves = ("1", "12", "55", "5", "4", "444")
    with TestClient(create_app([dat], cache_size=0)) as c:
        right = {m: c.get("/api/5x4", params={"moves": m}).json() for m in moves}
    with open_c4z(z) as f:
        cut = int(f.offsets[1]) - 1
    with TestClient(create_app([z], cache_size=0), raise_server_exceptions=False) as c:
        assert c.get("/api/5x4", params={"moves": "3"}).status_code == 200
        os.truncate(z, cut)
        answers = {m: c.get("/api/5x4", params={"moves": m}) for m in moves}
        assert any(r.status_code >= 500 for r in answers.values())
        assert all(r.status_code in (200, 500, 503) for r in answers.values())
        assert all(r.json() == right[m] for m, r in answers.items() if r.status_code == 200)
        assert c.get("/api/5x4", params={"moves": "3"}).status_code in (200, 500, 503)   # alive


# ------------------------------------------------------------ progress and the plan's count
def test_progress_counts_against_the_known_size(packed, tmp_path, monkeypatch):
    import io
    import c4table.c4z.stream as s
    raw, xz = packed
    monkeypatch.setattr(s, "PROGRESS_EVERY", 0.0)
    msg = io.StringIO()
    compress_stream(xz, tmp_path / "p.c4z", block_entries=65536, stream=msg)
    lines = [ln for ln in msg.getvalue().splitlines() if ln.startswith("[compress] ") and " / " in ln]
    assert lines and all(" / 9.4 MiB (" in ln for ln in lines), lines   # 9,870,870 bytes known


def test_plan_counts_the_entries_of_cadots_file(built):
    """7x6: his file's size over 7; 5x4: the table built here."""
    from c4table.pipeline.planning.plan import make_plan
    from c4table.table.known import known_tables
    assert make_plan("7x6", 64, 16 << 30).entries == 15_861_962_650_191 // 7 == \
        known_tables()["7x6"]["entries"]
    assert make_plan("5x4", 2, 4 << 30).entries == \
        (built("5x4") / "connect4_5x4.dat").stat().st_size // 5
