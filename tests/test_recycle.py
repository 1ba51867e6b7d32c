"""The recycle bin of spent scratch files (:meth:`c4table.io.storage.Storage.recycle_tree`):
later writes go over a spent file (same inode, its cached pages) and the result is exactly the
bytes written; the bin is bounded, counted as free disk, never seen as data, removed when a
build ends and when a crashed build resumes; builds that recycle write the recorded tables.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from c4table.io import recycle, storage
from c4table.io.recycle import RECYCLE_DIR
from c4table.io.storage import Storage

ROOT = Path(__file__).resolve().parents[1]
KNOWN = json.loads((ROOT / "c4table" / "data" / "known_tables.json").read_text())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def small_files(monkeypatch):
    """Recycle files of any size (a small board's runs are far under the 1 MiB default);
    forked worker processes inherit the setting."""
    monkeypatch.setattr(storage, "RECYCLE_MIN_BYTES", 1)
    monkeypatch.delenv(recycle.RECYCLE_ENV, raising=False)


def _bin(root: Path) -> list[Path]:
    d = root / RECYCLE_DIR
    return sorted(d.iterdir()) if d.is_dir() else []


def test_a_write_goes_over_a_spent_file_and_is_exact(tmp_path, small_files):
    st = Storage(tmp_path)
    st.write_atomic("w/runs/ply_01/run-00000.u64", b"a" * 5000, durable=False)
    st.write_atomic("w/runs/ply_01/run-00001.u64", b"b" * 300, durable=False)
    inodes = {os.stat(tmp_path / f"w/runs/ply_01/run-0000{i}.u64").st_ino for i in (0, 1)}
    st.recycle_tree("w/runs/ply_01")
    assert st.list_files("w") == [] and not (tmp_path / "w/runs/ply_01").exists()
    assert st.recycle_bytes() == 5300 and len(_bin(tmp_path)) == 2
    # the smallest spent file at least as long: the 5000-byte one, cut to 1000 bytes
    st.write_atomic("w/forward/ply_02/part-00000.shard", b"x" * 1000, durable=False)
    got = tmp_path / "w/forward/ply_02/part-00000.shard"
    assert got.read_bytes() == b"x" * 1000 and got.stat().st_ino in inodes
    # none long enough: the longest left (300 bytes), extended
    chunks = [np.arange(100, dtype=np.uint64), b"tail"]
    st.write_atomic_chunks("w/runs/ply_02/run-00000.u64", chunks, durable=False, size=804)
    got = tmp_path / "w/runs/ply_02/run-00000.u64"
    assert got.read_bytes() == np.arange(100, dtype=np.uint64).tobytes() + b"tail"
    assert got.stat().st_ino in inodes
    assert _bin(tmp_path) == [] and st.recycle_bytes() == 0
    # an empty bin: a new file, as without recycling
    st.write_atomic("w/runs/ply_02/run-00001.u64", b"new", durable=False)
    assert st.read_bytes("w/runs/ply_02/run-00001.u64") == b"new"
    assert not list(tmp_path.rglob("*.tmp"))


def test_the_bin_holds_one_spent_directory_and_is_emptied(tmp_path, small_files):
    st = Storage(tmp_path)
    for d in ("a", "b"):
        for i in range(3):
            st.write_atomic(f"w/{d}/f{i}", bytes(100 * (i + 1)), durable=False)
    st.recycle_tree("w/a")
    st.recycle_tree("w/b")   # what no write took of w/a is surplus: unlinked
    assert st.recycle_bytes() == 600 and len(_bin(tmp_path)) == 3
    assert st.empty_recycle_bin() == 600
    assert st.recycle_bytes() == 0 and not (tmp_path / RECYCLE_DIR).exists()
    st.recycle_tree("w/nothing-here")
    recycle.settle_deletes()
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["w", "work"]


def test_small_files_and_recycling_off_are_plain_deletes(tmp_path, monkeypatch):
    st = Storage(tmp_path)
    st.write_atomic("w/a/small", b"s" * 100, durable=False)   # under RECYCLE_MIN_BYTES
    st.recycle_tree("w/a")
    assert st.recycle_bytes() == 0 and not (tmp_path / "w/a").exists()
    monkeypatch.setattr(storage, "RECYCLE_MIN_BYTES", 1)
    monkeypatch.setenv(recycle.RECYCLE_ENV, "0")
    st = Storage(tmp_path)   # the switch is read when a storage opens
    st.write_atomic("w/b/f", b"b" * 100, durable=False)
    st.recycle_tree("w/b")
    assert st.recycle_bytes() == 0 and not (tmp_path / "w/b").exists()


def test_free_disk_check_counts_the_bin_and_empties_it_when_short(tmp_path, small_files, monkeypatch):
    from c4table.pipeline.runtime import resources
    st = Storage(tmp_path)
    st.write_atomic("w/a/f", b"z" * 4096, durable=False)
    st.recycle_tree("w/a")
    real = resources.free_bytes(tmp_path)
    monkeypatch.delenv(resources.SKIP_ENV, raising=False)
    # enough without the bin: it is kept for the step's writes
    resources.check_free(st, real - 8192, "a step")
    assert st.recycle_bytes() == 4096
    # short: the bin's files are given back first, then the check is made again
    seen = []

    def free(path):   # the bin's blocks come back when its files are unlinked
        seen.append(path)
        return 1000 + (0 if st.recycle_bytes() else 4096)

    monkeypatch.setattr(resources, "free_bytes", free)
    resources.check_free(st, 5000, "a step")
    assert st.recycle_bytes() == 0 and len(seen) == 2
    st.write_atomic("w/b/f", b"z" * 4096, durable=False)
    st.recycle_tree("w/b")
    monkeypatch.setattr(resources, "free_bytes", lambda p: 1000)
    with pytest.raises(resources.DiskFullError, match="needs about"):
        resources.check_free(st, 5000, "a step")


@pytest.mark.slow
def test_builds_that_recycle_write_the_recorded_tables(tmp_path, small_files, monkeypatch):
    """Every spent run and message file is recycled (any size) and a small memory budget makes
    many of them: the tables are the recorded ones, writes really went over spent files (in
    the worker processes too), and nothing of the bin is left."""
    from c4table.pipeline.stages.build import build_table
    log = tmp_path / "claims"
    real = Storage._claim_recycled

    def claim(self, tmp, size):
        ok = real(self, tmp, size)
        if ok:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {tmp.name}\n")
        return ok

    monkeypatch.setattr(Storage, "_claim_recycled", claim)
    for board, workers, memory in (("5x4", 2, "2MiB"), ("4x5", 1, "4GiB")):
        out = tmp_path / board
        path = build_table(board, out, memory=memory, workers=workers, quiet=True)
        assert sha256(path) == KNOWN[board]["sha256"], board
        assert not (out / RECYCLE_DIR).exists()
    claims = log.read_text().splitlines()
    names = {c.split()[1] for c in claims}
    assert any(n.endswith(".u64.tmp") for n in names)        # runs and messages
    assert any(n.endswith(".shard.tmp") for n in names)    # shards
    assert len({c.split()[0] for c in claims}) >= 2          # the pool's workers claimed too


@pytest.mark.slow
@pytest.mark.parametrize("why", ["c4z", "disk short"])
def test_c4z_builds_and_builds_short_of_disk_keep_no_spent_file(tmp_path, small_files,
                                                                monkeypatch, why):
    """With --format c4z, or when the free disk would not hold the raw table, a spent run or
    message directory is deleted at once (nothing kept past its last reader), never binned:
    the table is still the recorded one."""
    from c4table.pipeline.runtime import resources
    from c4table.pipeline.stages.build import build_table
    binned = []
    monkeypatch.setattr(Storage, "recycle_tree", lambda self, rel: binned.append(rel))
    if why == "disk short":
        monkeypatch.setattr(resources, "free_bytes", lambda path: 0)
        monkeypatch.setenv("C4TABLE_SKIP_DISK_CHECK", "1")
    fmt = "c4z" if why == "c4z" else "dat"
    out = tmp_path / "b"
    path = build_table("5x4", out, memory="2MiB", workers=2, quiet=True, table_format=fmt)
    assert binned == []
    assert not (out / RECYCLE_DIR).exists()
    assert not [f for f in (out / "work" / "messages").rglob("*") if f.is_file()]
    if fmt == "dat":
        assert sha256(path) == KNOWN["5x4"]["sha256"]
    else:
        from c4table.c4z.reader import RawStream, open_c4z
        from c4table.io.treehash import FIELD, tree_hash
        with open_c4z(path) as z:
            assert z.header[FIELD] == KNOWN["5x4"][FIELD]
            with RawStream(z) as raw:
                data = raw.read()
        assert tree_hash(data) == KNOWN["5x4"][FIELD]
        assert hashlib.sha256(data).hexdigest() == KNOWN["5x4"]["sha256"]
        assert not (out / "work").exists()   # the shards' last reader was the merge


@pytest.mark.slow
def test_resume_after_forward_only_with_recycling(tmp_path, small_files):
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import build_table, open_build
    b = open_build("5x4", tmp_path, workers=2, quiet=True, memory="2MiB")
    forward.run(b, max_ply=11)
    b.close()
    assert not (tmp_path / RECYCLE_DIR).exists()   # a stage's end gives the bin back
    path = build_table("5x4", tmp_path, workers=2, quiet=True, memory="2MiB")
    assert sha256(path) == KNOWN["5x4"]["sha256"]


KILL_DRIVER = r"""
import os, signal, sys
from c4table.io import storage
storage.RECYCLE_MIN_BYTES = 1
real = storage.Storage.write_atomic_chunks
def write(self, rel, chunks, *a, **kw):
    if sys.argv[1] in rel and list((self.root / storage.RECYCLE_DIR).glob("*")):
        os.killpg(0, signal.SIGKILL)   # the whole build, as the OOM killer or a power cut
    return real(self, rel, chunks, *a, **kw)
storage.Storage.write_atomic_chunks = write
from c4table.cli.main import main
main(sys.argv[2:])
"""


@pytest.mark.slow
@pytest.mark.parametrize("where", ["work/forward/ply_12/", "work/messages/ply_09/"])
def test_a_bin_left_by_a_killed_build_is_removed_on_resume(tmp_path, where):
    """A build killed while its bin holds spent files (and a write may be going over one)
    resumes: the bin is scratch, removed at the start, and the table is the recorded one."""
    out = tmp_path / "b"
    p = subprocess.run([sys.executable, "-c", KILL_DRIVER, where, "build", "5x4", "--out",
                        str(out), "-q", "--workers", "2", "--memory", "2MiB"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       start_new_session=True)
    assert p.returncode == -signal.SIGKILL, p.stderr
    assert _bin(out), "killed before anything was recycled"
    assert not (out / "connect4_5x4.dat").exists()
    r = subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", "5x4", "--out", str(out),
                        "--workers", "2"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "scratch file" in r.stderr and "left by an interrupted run" in r.stderr
    assert sha256(out / "connect4_5x4.dat") == KNOWN["5x4"]["sha256"]
    assert not (out / RECYCLE_DIR).exists()


def test_a_refused_rename_falls_back_to_a_new_file(tmp_path, small_files, monkeypatch):
    """A file system that refuses to move a spent file (any error but "gone") costs only the
    reuse: the write makes a new file, as without recycling."""
    import errno
    st = Storage(tmp_path)
    st.write_atomic("w/a/f", b"a" * 4096, durable=False)
    st.recycle_tree("w/a")
    real = os.rename

    def refuse(src, dst, *a, **kw):
        if RECYCLE_DIR in str(src):
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst, *a, **kw)

    monkeypatch.setattr(os, "rename", refuse)
    st.write_atomic("w/b/f", b"b" * 1000, durable=False)
    assert st.read_bytes("w/b/f") == b"b" * 1000
    assert st.recycle_bytes() == 4096   # still in the bin, untouched
