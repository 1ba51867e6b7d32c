"""Block sums streamed: the merge writes a ``.dat``'s sidecar (``TABLE.dat.sums``) as the table
is hashed, and ``c4table verify`` and ``c4table compress`` check each block against it as they
read it, without holding the table's sums in memory. The evidence: the sidecar rebuilt from the
table's bytes with the xxhash package and the layout of docs/FORMAT.md section 9; damage made
by flipping a byte of a copy, which must be refused naming its block (index and byte range),
with nothing left behind.
"""
from __future__ import annotations

import io
import os
import shutil
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import xxhash

from c4table.analysis.verify import verify_table
from c4table.c4z.reader import open_c4z
from c4table.c4z.writer import compress_table, decompress_table
from c4table.errors import TableDamaged
from c4table.io.storage import open_storage
from c4table.table import sums as sums_mod
from c4table.table.sums import BLOCK_ENTRIES, BlockSums, SumsWriter, open_check, sums_path
from conftest import run_cli
from test_damage import copy_table


def sidecar_oracle(data: bytes, entry_size: int) -> bytes:
    """The sidecar of ``data`` built from the layout alone: the xxh64 of each block of 4096
    entries (the last one shorter), after a header of magic, version, entries per block, entry
    size, 0, table bytes, blocks, xxh64 of the sums, 0 and the xxh64 of those 56 bytes."""
    step = BLOCK_ENTRIES * entry_size
    body = b"".join(struct.pack("<Q", xxhash.xxh64(data[i: i + step]).intdigest())
                    for i in range(0, len(data), step))
    head = struct.pack("<8sIIIIQQQQ", b"C4SUMS\r\n", 1, BLOCK_ENTRIES, entry_size, 0, len(data),
                       len(body) // 8, xxhash.xxh64(body).intdigest(), 0)
    return head + struct.pack("<Q", xxhash.xxh64(head).intdigest()) + body


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ 0x01]))


def block_text(block: int, table_bytes: int, entry_size: int) -> str:
    """How an error names block ``block``: its index and byte range."""
    B = BLOCK_ENTRIES * entry_size
    return f"block {block:,} (bytes {block * B:,} to {min((block + 1) * B, table_bytes) - 1:,}"


# ------------------------------------------------------------------------- written
@pytest.mark.parametrize("board", ["4x4", "5x4"])
def test_merged_sidecar_is_the_blocks_xxh64(built, board):
    """The sidecar a build's merge streams out is byte for byte the one rebuilt from the
    table's bytes, and the one the in-memory :class:`BlockSums` makes of them."""
    dat = built(board) / f"connect4_{board}.dat"
    data = dat.read_bytes()
    E = {"4x4": 4, "5x4": 5}[board]
    want = sidecar_oracle(data, E)
    assert sums_path(dat).read_bytes() == want
    kept = BlockSums(E)
    kept.update(data)
    assert kept.to_bytes() == want
    assert not sums_path(dat).with_name(sums_path(dat).name + ".tmp").exists()


def test_merge_in_small_batches_writes_the_same_sidecar(built, tmp_path, monkeypatch):
    """A build whose merge hands the sums on three at a time (many batches, and a sidecar
    written piece by piece before its header) writes the same bytes."""
    from c4table.pipeline.stages.build import build_table
    monkeypatch.setattr(sums_mod, "BATCH", 3)
    build_table("4x4", tmp_path, quiet=True, workers=1)
    got = sums_path(tmp_path / "connect4_4x4.dat").read_bytes()
    assert got == sums_path(built("4x4") / "connect4_4x4.dat").read_bytes()
    assert got == sidecar_oracle((tmp_path / "connect4_4x4.dat").read_bytes(), 4)


def test_sums_writer_any_chunking_and_abort(tmp_path, monkeypatch):
    """Fed in chunks of any size, with batches of any size, the writer makes the oracle's
    sidecar; an aborted one leaves nothing."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, 7 * (BLOCK_ENTRIES * 5 + 123), np.uint8).tobytes()
    want = sidecar_oracle(data, 7)
    store = open_storage(tmp_path)
    for batch, sizes in ((1, [len(data)]), (2, [1, 7, 28672, 5, 100000]), (1 << 16, [9999] * 30)):
        monkeypatch.setattr(sums_mod, "BATCH", batch)
        with SumsWriter(store, "t.dat") as w:
            s = BlockSums(7, sink=w.take)
            at = 0
            for n in sizes + [len(data)]:
                s.update(data[at: at + n])
                at = min(at + n, len(data))
            w.commit(s)
        assert (tmp_path / "t.dat.sums").read_bytes() == want
    with SumsWriter(store, "u.dat") as w:
        BlockSums(7, sink=w.take).update(data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.dat.sums"]


def test_sums_memory_does_not_grow_with_the_table(tmp_path, monkeypatch):
    """Writing and checking the sums of 200,000 blocks holds one batch of them at a time
    (traced peak), where keeping them would hold all 1.6 MB."""
    monkeypatch.setattr(sums_mod, "BATCH", 512)
    monkeypatch.setattr(sums_mod, "BLOCK_ENTRIES", 1)    # one 8-byte entry a block
    monkeypatch.setattr(sums_mod, "READ_BYTES", 4096)
    n = 200_000
    data = np.arange(n, dtype="<u8").tobytes()
    store = open_storage(tmp_path)
    (tmp_path / "t.dat").write_bytes(data)

    def feed(s: BlockSums) -> None:
        for at in range(0, len(data), 1 << 16):
            s.update(data[at: at + (1 << 16)])

    tracemalloc.start()
    try:
        with SumsWriter(store, "t.dat") as w:
            s = BlockSums(8, 1, sink=w.take)
            feed(s)
            w.commit(s)
        written = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        with open_check(store, "t.dat", len(data), 8, stop=True) as c:
            s = c.block_sums()
            feed(s)
            s.finish()
            assert c.finish() is None
        checked = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        kept = BlockSums(8, 1)
        feed(kept)
        assert kept.finish().shape == (n,)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held > 8 * n
    assert written < 8 * n / 8 and checked < 8 * n / 8, (written, checked, held)


# ------------------------------------------------------------------------- verify
def test_verify_names_the_damaged_blocks(built, tmp_path, monkeypatch):
    """``verify`` reports the first block that does not match its sum, by index and bytes, and
    how many differ; the sidecar read in odd pieces gives the same answer."""
    src = built("5x4") / "connect4_5x4.dat"
    size = src.stat().st_size
    B = BLOCK_ENTRIES * 5
    copy = copy_table(src, tmp_path)
    flip(copy, 7 * B + 11)
    flip(copy, 9 * B)
    rc, out, err = run_cli("verify", "-q", str(copy))
    assert rc == 1, out + err
    assert f"block sums: {block_text(7, size, 5)}" in out and "(2 block(s) differ)" in out
    monkeypatch.setattr(sums_mod, "READ_BYTES", 20)   # reads that split sums
    monkeypatch.setattr(sums_mod, "BATCH", 2)
    rep = verify_table(copy, quiet=True)
    assert f"block sums: {block_text(7, size, 5)}" in " ".join(rep.problems)
    assert rep.sums.endswith("(2 block(s) differ)")
    assert sorted(p.name for p in tmp_path.iterdir()) == [copy.name, sums_path(copy).name]


def test_verify_refuses_damaged_sums_and_rewrites_them(built, tmp_path):
    """A flipped sum (the table intact) is damaged sums, not a damaged table; ``--write-sums``
    writes the right sidecar over it (the table matches its known hash), and a matching one is
    left as it is."""
    src = built("4x4") / "connect4_4x4.dat"
    copy = copy_table(src, tmp_path)
    flip(sums_path(copy), sums_mod.HEADER_BYTES + 8 * 3 + 2)
    rc, out, err = run_cli("verify", "-q", str(copy))
    assert rc == 1 and "damaged sums" in out, out + err
    rc, out, err = run_cli("verify", "-q", "--write-sums", str(copy))
    assert rc == 0 and "sums     written" in out, out + err
    assert sums_path(copy).read_bytes() == sums_path(src).read_bytes()
    before = sums_path(copy).stat().st_mtime_ns
    rc, out, err = run_cli("verify", "-q", "--write-sums", str(copy))
    assert rc == 0 and "sums     match" in out, out + err
    assert sums_path(copy).stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [copy.name, sums_path(copy).name]


# ------------------------------------------------------------------------- compress
def test_compress_refuses_a_damaged_block_naming_it(built, tmp_path):
    """A flipped byte in block 11 of a copy of the 5x4 table: ``compress`` exits 1 with one
    line naming the table and the block (index and byte range), after compressing the blocks
    before it; no ``.c4z`` and no part file is left, and a ``.c4z`` already there (``-o``) is
    untouched."""
    src = built("5x4") / "connect4_5x4.dat"
    size = src.stat().st_size
    copy = copy_table(src, tmp_path / "t")
    flip(copy, 11 * BLOCK_ENTRIES * 5 + 3)
    rc, out, err = run_cli("compress", "-q", "--block-entries", "4096", "--threads", "1",
                           str(copy))
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1, err
    assert str(copy) in lines[0] and block_text(11, size, 5) in lines[0], err
    assert "damaged" in lines[0] and "Traceback" not in err
    assert sorted(p.name for p in copy.parent.iterdir()) == [copy.name, sums_path(copy).name]
    old = tmp_path / "old.c4z"
    old.write_bytes(b"a .c4z made before")
    rc, out, err = run_cli("compress", "-q", str(copy), "-o", str(old))
    assert rc == 1 and block_text(11, size, 5) in err, err
    assert old.read_bytes() == b"a .c4z made before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.c4z", "t"]
    assert sorted(p.name for p in copy.parent.iterdir()) == [copy.name, sums_path(copy).name]


def test_compress_refuses_damaged_sums(built, tmp_path):
    """A damaged sidecar is refused as such (rewrite it with verify --write-sums); one that
    describes another table too; neither leaves a ``.c4z``."""
    src = built("4x4") / "connect4_4x4.dat"
    copy = copy_table(src, tmp_path)
    flip(sums_path(copy), sums_mod.HEADER_BYTES + 8 * 5)
    with pytest.raises(TableDamaged, match=r"damaged sums; rewrite it with c4table verify"):
        compress_table(copy, quiet=True, threads=1)
    shutil.copy(sums_path(built("5x4") / "connect4_5x4.dat"), sums_path(copy))
    with pytest.raises(TableDamaged, match="describes a table of"):
        compress_table(copy, quiet=True, threads=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [copy.name, sums_path(copy).name]


def test_compress_checks_a_resumed_run_from_its_start(built, tmp_path, monkeypatch):
    """A resumed compress re-reads the blocks it compressed before: damage there is refused
    too, and the part files of the interrupted run are dropped."""
    from c4table.c4z import blockwriter
    src = built("5x4") / "connect4_5x4.dat"
    copy = copy_table(src, tmp_path)
    out = tmp_path / "t.c4z"
    real = blockwriter.BlockWriter.checkpoint

    class Stop(Exception):
        pass

    def checkpoint_then_stop(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if self.blocks >= 3:
            raise Stop

    with monkeypatch.context() as m:
        m.setattr(blockwriter.BlockWriter, "due", lambda self, now: True)
        m.setattr(blockwriter.BlockWriter, "checkpoint", checkpoint_then_stop)
        with pytest.raises(Stop):
            compress_table(copy, out, quiet=True, threads=1, block_entries=4096)
    assert (tmp_path / "t.c4z.part").exists()
    st = copy.stat()
    flip(copy, 4)   # in block 0, compressed by the first run
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))   # (the checkpoint still applies)
    said = io.StringIO()
    with pytest.raises(TableDamaged, match=r"block 0 \(bytes 0 to"):
        compress_table(copy, out, threads=1, block_entries=4096, stream=said)
    assert "resuming t.c4z at block" in said.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == [copy.name, sums_path(copy).name]


def test_compress_without_sums_warns_and_round_trips(built, tmp_path):
    """A table without a sidecar (like a reader, compress warns once that it is unchecked)
    is compressed; the ``.c4z`` decompresses to the same bytes, with the sidecar rebuilt."""
    src = built("4x4") / "connect4_4x4.dat"
    copy = copy_table(src, tmp_path / "in", with_sums=False)
    rc, out, err = run_cli("compress", "-q", str(copy))
    assert rc == 0, err
    assert err.count("\n") == 1 and "no block checksums" in err and str(copy) in err
    z = copy.with_suffix(".c4z")
    with open_c4z(z) as f:
        assert f.header["raw_bytes"] == src.stat().st_size
    back = decompress_table(z, tmp_path / "back.dat", quiet=True)
    assert back.read_bytes() == src.read_bytes()
    assert sums_path(back).read_bytes() == sidecar_oracle(src.read_bytes(), 4)
    rc, out, err = run_cli("compress", "-q", str(src), "-o", str(tmp_path / "checked.c4z"))
    assert rc == 0 and err == "", err


def test_decompress_streams_the_sidecar(built, tmp_path, monkeypatch):
    """``decompress`` streams the ``.dat``'s sidecar as it writes the table (here three sums a
    batch): a whole run and a run resumed from a torn partial output both leave the sidecar
    rebuilt from the bytes; a run whose output does not match the header leaves neither the
    table nor a sidecar (nor its temporary file)."""
    monkeypatch.setattr(sums_mod, "BATCH", 3)
    src = built("5x4") / "connect4_5x4.dat"
    data = src.read_bytes()
    z = tmp_path / "t.c4z"
    compress_table(src, z, threads=1, block_entries=4096, quiet=True)
    out = tmp_path / "whole.dat"
    decompress_table(z, out, quiet=True)
    assert out.read_bytes() == data
    assert sums_path(out).read_bytes() == sidecar_oracle(data, 5)
    torn = tmp_path / "torn.dat"
    torn.with_name("torn.dat.part").write_bytes(data[: len(data) // 2] + b"garbage")
    decompress_table(z, torn, quiet=True)
    assert sums_path(torn).read_bytes() == sidecar_oracle(data, 5)
    from c4table.c4z import writer as writer_mod
    monkeypatch.setattr(writer_mod.Hashes, "result",
                        lambda self: {"bytes": 0, "sha256_tree": "0" * 64, "sha256": "0" * 64,
                                      "md5": "0" * 32})
    with pytest.raises(Exception, match="does not match the header"):
        decompress_table(z, tmp_path / "bad.dat", quiet=True)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("bad.dat")]
