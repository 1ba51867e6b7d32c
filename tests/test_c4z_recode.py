"""``c4table compress TABLE.c4z -o OUT.c4z``: a ``.c4z`` compressed again in another codec
(format 3 <-> format 4) or block grid. The round trip .dat -> format 3 -> format 4 ->
decompress gives the .dat back, and the format-4 file is byte for byte the one ``compress``
writes from the .dat itself; a damaged input (a block, or a header whose sha256 is not the
blocks') is refused in one line with nothing left; a run killed with SIGKILL resumes to the
same bytes; the command line refuses what it cannot do in one line."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import xxhash

from conftest import run_cli
from c4table import c4z
from c4table.c4z.format import DEFAULT_CODEC, FRAME_CODEC, RULE_CODEC, TRANSFORM
from c4table.c4z.reader import open_c4z
from c4table.c4z.recode import recompress_c4z
from c4table.c4z.writer import compress_table, decompress_table
from c4table.errors import CorruptDataError


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def leftovers(d: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name not in keep)


@pytest.fixture(scope="module", params=["4x4", "5x4"])
def v3(request, built, tmp_path_factory):
    """``(the .dat, a format-3 .c4z of it in 4,096-entry blocks)``, in a directory of their own."""
    board = request.param
    d = tmp_path_factory.mktemp(f"recode{board}")
    dat = d / f"connect4_{board}.dat"
    shutil.copy(built(board) / dat.name, dat)
    z = compress_table(dat, d / "v3.c4z", codec=TRANSFORM, block_entries=4096, quiet=True,
                       threads=2)
    return dat, z


def test_round_trip_dat_v3_v4_dat(v3, tmp_path):
    """The raw bytes survive format 3 -> format 5, the default (on another grid) -> format 4
    -> .dat, and the format-5 file equals the one compressed from the .dat with the same
    settings; back to format 3 on its grid gives the first file again."""
    dat, z3 = v3
    z4 = recompress_c4z(z3, tmp_path / "v4.c4z", block_entries=16384, threads=2, quiet=True)
    with open_c4z(z3) as a, open_c4z(z4) as b:
        assert (a.header["transform"], a.header["version"]) == (TRANSFORM, 3)
        assert (b.header["transform"], b.header["version"]) == (FRAME_CODEC, 5) and \
            DEFAULT_CODEC == FRAME_CODEC
        assert b.block_entries == 16384 and b.header["file"] == dat.name
        assert b.header["sha256"] == a.header["sha256"] == sha(dat)
    direct = compress_table(dat, tmp_path / "direct.c4z", block_entries=16384, threads=2,
                            quiet=True)
    assert z4.read_bytes() == direct.read_bytes()
    f4 = recompress_c4z(z4, tmp_path / "f4.c4z", codec=RULE_CODEC, threads=2, quiet=True)
    with open_c4z(f4) as c:
        assert (c.header["transform"], c.header["version"]) == (RULE_CODEC, 4)
    back = decompress_table(f4, tmp_path / "back.dat", quiet=True)
    assert back.read_bytes() == dat.read_bytes()
    again = recompress_c4z(z4, tmp_path / "again.c4z", codec=TRANSFORM, block_entries=4096,
                           threads=2, quiet=True)
    assert again.read_bytes() == z3.read_bytes()
    assert leftovers(tmp_path, set()) == ["again.c4z", "back.dat", "back.dat.sums",
                                          "direct.c4z", "f4.c4z", "v4.c4z"]


@pytest.mark.slow
def test_archive_grid_and_uneven_grids_round_trip(v3, tmp_path):
    """Grids that do not divide each other (4,096-entry blocks into 6,000 and back into 4,096)
    and one block for the whole table (--archive) keep the raw bytes."""
    dat, z3 = v3
    odd = recompress_c4z(z3, tmp_path / "odd.c4z", block_entries=6000, threads=2, quiet=True)
    back = recompress_c4z(odd, tmp_path / "back.c4z", codec=TRANSFORM, block_entries=4096,
                          threads=2, quiet=True)
    assert back.read_bytes() == z3.read_bytes()
    rc, out, err = run_cli("compress", "--archive", "-q", str(odd), "-o", str(tmp_path / "a.c4z"))
    assert rc == 0, err
    with open_c4z(tmp_path / "a.c4z") as f:
        assert f.blocks == 1 and f.header["part_entries"] == f.block_entries == 1 << 24
    decompress_table(tmp_path / "a.c4z", tmp_path / "a.dat", quiet=True)
    assert (tmp_path / "a.dat").read_bytes() == dat.read_bytes()


def _rewrite_header(src: Path, dst: Path, **fields) -> None:
    """``src`` with header fields replaced, its checksum and trailer made right again."""
    data = src.read_bytes()
    idx_off, idx_len, hdr_len, _, end = c4z.TRAILER.unpack(data[-c4z.TRAILER.size:])
    h = json.loads(data[idx_off + idx_len: idx_off + idx_len + hdr_len])
    hdr = json.dumps({**h, **fields}, sort_keys=True).encode()
    dst.write_bytes(data[: idx_off + idx_len] + hdr + c4z.TRAILER.pack(
        idx_off, idx_len, len(hdr), xxhash.xxh64_intdigest(hdr), end))


@pytest.mark.parametrize("damage", ["block", "sha256"])
def test_damaged_input_refused_in_one_line_nothing_left(v3, tmp_path, damage):
    """A block that fails its checksum, or a header whose sha256 is not what the blocks decode
    to (every block intact): one line, exit 1, no output and no part files; an output that
    was there before stays as it was."""
    dat, z3 = v3
    bad = tmp_path / "bad.c4z"
    if damage == "block":
        d = bytearray(z3.read_bytes())
        with open_c4z(z3) as f:
            lo, hi = int(f.offsets[7]), int(f.offsets[8])
        d[(lo + hi) // 2] ^= 0x10
        bad.write_bytes(bytes(d))
    else:
        _rewrite_header(z3, bad, sha256="0" * 64)
        with open_c4z(bad) as f:   # opens: the damage shows only once the blocks are hashed
            assert f.header["sha256"] == "0" * 64
    out = tmp_path / "out.c4z"
    out.write_bytes(b"an older file")
    rc, stdout, err = run_cli("compress", str(bad), "-o", str(out), "--threads", "2")
    assert rc == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("c4table: error: ") and str(bad) in err
    assert ("block 7" in err and "checksum" in err) if damage == "block" else \
        ("sha256" in err and "nothing kept" in err)
    assert out.read_bytes() == b"an older file" and stdout == ""
    assert leftovers(tmp_path, set()) == ["bad.c4z", "out.c4z"]
    with pytest.raises(CorruptDataError):
        recompress_c4z(bad, tmp_path / "api.c4z", threads=2, quiet=True)
    assert not (tmp_path / "api.c4z").exists() and leftovers(tmp_path, set()) == ["bad.c4z", "out.c4z"]


KILLER = textwrap.dedent("""
    import os, signal, sys
    import c4table.c4z.blockwriter as d
    from c4table.c4z.recode import recompress_c4z
    d.CHECKPOINT_SECONDS = 0.0
    real, seen = d._checkpoint, [0]
    def ckpt(*a, **k):
        real(*a, **k)
        seen[0] += 1
        if seen[0] == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
    d._checkpoint = ckpt
    recompress_c4z(sys.argv[1], sys.argv[2], quiet=True, block_entries=2048, threads=2)
""")


@pytest.mark.slow
def test_kill9_then_resume_writes_the_same_bytes(v3, tmp_path, monkeypatch):
    """Killed (SIGKILL) at its 40th checkpoint, the rerun continues there (the blocks
    before it are not compressed again), says so, and writes the uninterrupted run's bytes."""
    dat, z3 = v3
    whole = recompress_c4z(z3, tmp_path / "whole.c4z", block_entries=2048, threads=2, quiet=True)
    out = tmp_path / "r.c4z"
    p = subprocess.run([sys.executable, "-c", KILLER, str(z3), str(out), "40"],
                       capture_output=True, timeout=600)
    assert p.returncode == -signal.SIGKILL, p.stderr.decode()
    ck = json.loads((tmp_path / "r.c4z.part.json").read_text())
    nblocks = -(-dat.stat().st_size // (open_c4z(z3).entry_size * 2048))
    assert 0 < ck["blocks"] < nblocks and not out.exists()
    import c4table.c4z.blockwriter as w
    calls = []
    real = w._encode
    monkeypatch.setattr(w, "_encode", lambda *a: calls.append(1) or real(*a))
    msg = io.StringIO()
    recompress_c4z(z3, out, block_entries=2048, threads=2, stream=msg)
    assert f"resuming r.c4z at block {ck['blocks']:,}" in msg.getvalue()
    assert 0 < len(calls) == nblocks - ck["blocks"]       # the done blocks were not encoded again
    assert out.read_bytes() == whole.read_bytes()
    assert leftovers(tmp_path, set()) == ["r.c4z", "whole.c4z"]


def test_a_changed_input_is_not_resumed_into(v3, tmp_path, monkeypatch):
    """A checkpoint made from another input (here: another file at the same path) is not
    continued: the run starts again and writes the new input's table."""
    dat, z3 = v3
    src = tmp_path / "in.c4z"
    shutil.copy(z3, src)
    import c4table.c4z.blockwriter as w
    monkeypatch.setattr(w, "CHECKPOINT_SECONDS", 0.0)
    real, n = w._encode, [0]

    def dies(*a):
        n[0] += 1
        if n[0] > 5:
            raise KeyboardInterrupt
        return real(*a)
    monkeypatch.setattr(w, "_encode", dies)
    out = tmp_path / "o.c4z"
    with pytest.raises(KeyboardInterrupt):
        recompress_c4z(src, out, block_entries=2048, threads=2, quiet=True)
    assert (tmp_path / "o.c4z.part.json").exists()     # an interruption keeps the checkpoint
    monkeypatch.setattr(w, "_encode", real)
    other = compress_table(dat, tmp_path / "other.c4z", block_entries=8192, threads=2, quiet=True)
    os.replace(other, src)      # the same table, another file: the checkpoint is not its
    msg = io.StringIO()
    recompress_c4z(src, out, block_entries=2048, threads=2, stream=msg)
    assert "resuming" not in msg.getvalue()
    decompress_table(out, tmp_path / "o.dat", quiet=True)
    assert (tmp_path / "o.dat").read_bytes() == dat.read_bytes()


def test_cli_refusals_are_one_line(v3, tmp_path):
    dat, z3 = v3
    src = tmp_path / "in.c4z"
    shutil.copy(z3, src)
    (tmp_path / "link.c4z").symlink_to(src)
    cases = [  # (arguments, exit status, what the line says)
        ([str(src), "-o", str(src)], 2, "would overwrite the input"),
        ([str(src), "-o", str(tmp_path / "link.c4z")], 2, "would overwrite the input"),
        ([str(src)], 2, "needs the output file (-o OUT.c4z)"),
        ([str(src), "-o", str(tmp_path / "x.c4z"), "--board", "5x4"], 2, "records its board"),
        ([str(tmp_path / "nope.c4z"), "-o", str(tmp_path / "x.c4z")], 2, "no such table file"),
        ([str(src), "-o", str(tmp_path / "x.c4z"), "--codec", "nope"], 2, "no .c4z block codec"),
    ]
    (tmp_path / "raw.c4z").write_bytes(dat.read_bytes())        # a .dat under a .c4z name
    cases.append(([str(tmp_path / "raw.c4z"), "-o", str(tmp_path / "x.c4z")], 1, "trailer"))
    for args, status, says in cases:
        rc, out, err = run_cli("compress", *args)
        assert (rc, out) == (status, "") and err.count("\n") == 1 and says in err, (args, rc, err)
    assert sha(src) == sha(z3) and leftovers(tmp_path, set()) == ["in.c4z", "link.c4z", "raw.c4z"]


@pytest.mark.slow
def test_cli_progress_and_result_line(v3, tmp_path):
    """The command's progress lines (rate, then the summary naming both codecs and the
    sha256 it checked) and its one result line on stdout."""
    dat, z3 = v3
    out = tmp_path / "v4.c4z"
    p = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        import c4table.c4z.recode as r
        r.PROGRESS_EVERY = 0.0
        from c4table.cli.main import main
        sys.exit(main(sys.argv[1:]))
        """), "compress", str(z3), "-o", str(out), "--threads", "2"],
        capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert any(s.startswith("[compress] ") and "MiB/s" in s and "%" in s and "of" in s
               for s in lines[:-1]), lines
    assert f"{DEFAULT_CODEC}, from {TRANSFORM}, sha256 {sha(dat)} as recorded" in lines[-1]
    size, raw = out.stat().st_size, dat.stat().st_size
    assert p.stdout == f"{out}  {size:,} bytes ({100 * size / raw:.2f}% of {raw:,})\n"
