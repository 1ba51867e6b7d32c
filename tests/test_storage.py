"""Builds on an object store: an S3 server (moto) on loopback, reached through pyarrow.fs.

The same pipeline writes every shard, run, message, manifest and the table to
``s3://bucket/prefix``; the table must be byte-identical to the local build, resumable, and
reachable by the workers of a local process pool and of a dask LocalCluster.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from c4table.io.treehash import FIELD
from c4table.table.known import known_tables
from conftest import run_cli

moto_server = pytest.importorskip("moto.server")
pafs = pytest.importorskip("pyarrow.fs")

BUCKET = "c4table-test"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 with one bucket; the environment points pyarrow at it
    (and is inherited by worker processes)."""
    srv = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    srv.start()
    host, port = srv.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}",
           "AWS_EC2_METADATA_DISABLED": "true"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    fs = pafs.S3FileSystem(endpoint_override=env["AWS_ENDPOINT_URL"], allow_bucket_creation=True)
    fs.create_dir(BUCKET)
    try:
        yield fs
    finally:
        srv.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def s3_bytes(fs, key: str) -> bytes:
    with fs.open_input_stream(f"{BUCKET}/{key}") as f:
        return f.read()


def test_storage_round_trip_on_s3_and_local(s3, tmp_path):
    from c4table.io.storage import Storage
    for where in (f"s3://{BUCKET}/unit", str(tmp_path / "unit")):
        st = Storage(where)
        st.write_atomic("a/b.bin", bytes(range(256)))
        st.write_atomic("a/c/d.bin", b"xyz")
        assert st.exists("a/b.bin") and not st.exists("a/nope.bin")
        assert st.size("a/b.bin") == 256
        assert st.list_files("a") == ["a/b.bin", "a/c/d.bin"]
        buf = np.empty(4, np.uint8)
        st.read_into("a/b.bin", 10, buf)
        assert buf.tolist() == [10, 11, 12, 13]
        with pytest.raises(EOFError):
            st.read_into("a/b.bin", 254, np.empty(4, np.uint8))
        st.delete_tree("a/c")
        assert st.list_files("a") == ["a/b.bin"]
        st.delete("a/b.bin")
        assert st.list_files("a") == []
        with pytest.raises(FileNotFoundError):
            st.read_bytes("a/b.bin")


def test_block_sums_streamed_to_and_checked_on_s3(s3, tmp_path, monkeypatch):
    """The sidecar streamed to an object store (spooled, then one object) has the bytes of the
    local one, and a check reads it back block by block; a flipped sum there is refused as
    damaged sums."""
    import xxhash
    from c4table.errors import TableDamaged
    from c4table.io.storage import Storage
    from c4table.table import sums as sums_mod
    monkeypatch.setattr(sums_mod, "BATCH", 3)
    rng = np.random.default_rng(11)
    data = rng.integers(0, 256, 7 * (sums_mod.BLOCK_ENTRIES * 9 + 5), np.uint8).tobytes()
    got = {}
    for where in (f"s3://{BUCKET}/sums", str(tmp_path)):
        st = Storage(where)
        with sums_mod.SumsWriter(st, "t.dat") as w:
            s = sums_mod.BlockSums(7, sink=w.take)
            s.update(data)
            w.commit(s)
        got[where] = st.read_bytes("t.dat.sums")
        with sums_mod.open_check(st, "t.dat", len(data), 7) as c:
            s = c.block_sums()
            s.update(data)
            s.finish()
            assert c.finish() is None
    B = 7 * sums_mod.BLOCK_ENTRIES
    body = np.frombuffer(got[str(tmp_path)], "<u8", offset=sums_mod.HEADER_BYTES)
    assert body.tolist() == [xxhash.xxh64_intdigest(data[i: i + B]) for i in range(0, len(data), B)]
    assert got[f"s3://{BUCKET}/sums"] == got[str(tmp_path)]
    st = Storage(f"s3://{BUCKET}/sums")
    bad = bytearray(got[str(tmp_path)])
    bad[sums_mod.HEADER_BYTES + 8 * 4] ^= 1
    st.write_atomic("t.dat.sums", bytes(bad))
    with sums_mod.open_check(st, "t.dat", len(data), 7, shown="t.dat") as c:
        s = c.block_sums()
        with pytest.raises(TableDamaged, match="damaged sums"):
            s.update(data)


def test_runs_read_by_range_through_fences(s3):
    """A run's slice is found from its fences and read with one ranged GET; a slice equals
    numpy's own selection for ranges across, inside and outside the run."""
    from c4table.pipeline.sort import extsort
    from c4table.io.storage import Storage
    st = Storage(f"s3://{BUCKET}/runs")
    rng = np.random.default_rng(7)
    vals = np.unique(rng.integers(0, 1 << 40, size=3 * extsort.FENCE + 123, dtype=np.uint64))
    extsort.write_run(st, "r.u64", vals)
    for lo, hi in [(0, 1 << 64), (int(vals[5]), int(vals[-5])), (int(vals[100]) + 1, int(vals[100]) + 2),
                   (1 << 41, 1 << 42), (int(vals[extsort.FENCE]), int(vals[2 * extsort.FENCE]) + 1)]:
        got = extsort.merge_range(st, ["r.u64"], lo, hi)
        want = vals[(vals >= np.uint64(lo)) & ((vals < np.uint64(hi)) if hi < 1 << 64 else True)]
        assert np.array_equal(got, want), (lo, hi)


@pytest.mark.slow
def test_s3_build_is_byte_identical_to_local(s3, built):
    """4x5 on S3 with two spawned worker processes, stage by stage through the CLI (each
    stage resumes from the manifest on S3), then the whole build again (nothing to do)."""
    from c4table.pipeline.stages.build import build_table
    uri = f"s3://{BUCKET}/b45"
    for stage in ("forward", "backward", "merge"):
        code, out, err = run_cli(stage, "4x5", "--out", uri, "-q", "--workers", "2")
        assert code == 0, err
    local = (built("4x5") / "connect4_4x5.dat").read_bytes()
    remote = s3_bytes(s3, "b45/connect4_4x5.dat")
    assert remote == local
    assert hashlib.sha256(remote).hexdigest().startswith("8802c6f9")
    assert build_table("4x5", uri, quiet=True, workers=1) == f"{uri}/connect4_4x5.dat"
    names = {i.path for i in s3.get_file_info(pafs.FileSelector(f"{BUCKET}/b45", recursive=True))}
    assert f"{BUCKET}/b45/manifest.json" in names
    assert not [n for n in names if "/work/messages/" in n and n.endswith(".u64")]  # spent runs deleted
    code, out, err = run_cli("verify", f"{uri}/connect4_4x5.dat", "-q")
    assert code == 0, out + err
    assert "OK connect4_4x5.dat" in out and f"{FIELD} matches manifest.json" in out
    assert "known table 4x5" in out and known_tables()["4x5"][FIELD] in out


@pytest.mark.slow
def test_s3_build_on_a_dask_cluster(s3, built):
    """A dask LocalCluster's workers (started with this environment) build 5x4 on S3."""
    pytest.importorskip("dask.distributed")
    from c4table.pipeline.stages.build import build_table
    uri = f"s3://{BUCKET}/b54"
    build_table("5x4", uri, quiet=True, workers=2, scheduler="local")
    assert s3_bytes(s3, "b54/connect4_5x4.dat") == (built("5x4") / "connect4_5x4.dat").read_bytes()


@pytest.mark.slow
def test_damaged_shard_on_s3_is_reported(s3, built):
    """A shard altered on the object store is one line naming its URI, and exit 1."""
    uri = f"s3://{BUCKET}/bad"
    code, _, err = run_cli("forward", "4x4", "--out", uri, "-q", "--workers", "1")
    assert code == 0, err
    key = f"{BUCKET}/bad/work/forward/ply_05/part-00000.shard"
    data = bytearray(s3_bytes(s3, key.split("/", 1)[1]))
    data[len(data) // 2] ^= 0xFF
    with s3.open_output_stream(key) as f:
        f.write(bytes(data))
    code, _, err = run_cli("backward", "4x4", "--out", uri, "-q", "--workers", "1")
    assert code == 1
    assert len(err.strip().splitlines()) == 1
    assert "s3://" in err and "ply_05/part-00000.shard" in err


@pytest.mark.slow
def test_verify_reports_a_damaged_shard_of_a_build_on_s3(s3):
    uri = f"s3://{BUCKET}/v44"
    code, _, err = run_cli("build", "4x4", "--out", uri, "-q", "--workers", "1")
    assert code == 0, err
    code, out, _ = run_cli("verify", f"{uri}/connect4_4x4.dat", "-q")
    assert code == 0 and f"{FIELD} matches" in out and "published" in out
    assert known_tables()["4x4"][FIELD] in out
    key = f"{BUCKET}/v44/work/backward/ply_07/part-00000.shard"
    data = bytearray(s3_bytes(s3, key.split("/", 1)[1]))
    data[-100] ^= 0xFF
    with s3.open_output_stream(key) as f:
        f.write(bytes(data))
    code, out, _ = run_cli("verify", f"{uri}/connect4_4x4.dat", "-q")
    assert code == 1
    assert "MISMATCH" in out and f"{uri}/work/backward/ply_07/part-00000.shard" in out


def test_unusable_storage_uri_is_one_line(s3):
    code, _, err = run_cli("build", "4x4", "--out", "nosuchscheme://x/y", "-q")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "nosuchscheme://x/y" in err


@pytest.mark.slow
def test_rooted_build_on_s3_equals_local(s3, tmp_path):
    """A rooted build (c4table.game.root) on the object store: same bytes as the local one, under
    the rooted name, and verify finds its root in the manifest there."""
    from c4table.pipeline.stages.build import build_table
    from c4table.analysis.verify import verify_table
    ref = build_table("4x4", tmp_path, quiet=True, workers=1, root="23")
    uri = build_table("4x4", f"s3://{BUCKET}/rooted", quiet=True, workers=1, root="23")
    assert str(uri).endswith("/connect4_4x4_root-23.dat")
    assert s3_bytes(s3, "rooted/connect4_4x4_root-23.dat") == ref.read_bytes()
    rep = verify_table(f"s3://{BUCKET}/rooted/connect4_4x4_root-23.dat", quiet=True)
    assert rep.ok, rep.problems


# ------------------------------------------------------------------ local durability and deletes
def test_local_delete_tree_is_immediate_and_leaves_nothing(tmp_path):
    """A deleted tree's files are gone at once (a listing no longer shows them, the same path
    can be written again), and once the background removal settles nothing of it is left."""
    from c4table.io.storage import Storage
    from c4table.io.recycle import settle_deletes
    st = Storage(tmp_path)
    for rel in ("w/runs/ply_01/run-00000.u64", "w/runs/ply_01/pre/p-000.u64", "w/keep/a.bin"):
        st.write_atomic(rel, b"x" * 100, durable=False)
    st.delete_tree("w/runs/ply_01")
    assert st.list_files("w") == ["w/keep/a.bin"]
    st.write_atomic("w/runs/ply_01/run-00000.u64", b"again", durable=False)
    assert st.read_bytes("w/runs/ply_01/run-00000.u64") == b"again"
    st.delete_tree("w/runs")
    st.delete_tree("w/nothing-here")
    settle_deletes()
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert left == ["w", "w/keep", "w/keep/a.bin"]


def _manifest_shards(body) -> list[str]:
    import json
    m = json.loads(bytes(body))
    return [s["file"] for stage in m["steps"].values() for step in stage.values()
            for s in step["shards"]]


def test_a_saved_manifest_records_only_fsynced_shards(tmp_path, monkeypatch):
    """Shards are written without fsync; every manifest a build writes (checkpoints saved in
    the background included: one per step here) records only shards fsync'ed before it."""
    from c4table.builddir import manifest
    from c4table.io import storage
    from c4table.pipeline.stages.build import build_table
    from conftest import published_tables
    synced, saves = set(), []
    real_fsync, real_write = storage.fsync_path, storage.Storage.write_atomic

    def fsync(path):
        synced.add(os.path.abspath(path))
        real_fsync(path)

    def write_atomic(self, rel, data, durable=True):
        if rel == "manifest.json":
            files = _manifest_shards(data)
            saves.append((len(files), [f for f in files if str(self.root / f) not in synced]))
        return real_write(self, rel, data, durable)

    monkeypatch.setattr(storage, "fsync_path", fsync)
    monkeypatch.setattr(storage.Storage, "write_atomic", write_atomic)
    monkeypatch.setattr(manifest, "CHECKPOINT_ENTRIES", 1)
    table = build_table("4x4", tmp_path / "b", workers=1)
    assert len(saves) > 2 * 17 and saves[-1][0] == 2 * 17   # a save per step; 17 plies
    assert all(not missing for _, missing in saves), [m for _, m in saves if m][:1]
    assert hashlib.sha256(table.read_bytes()).hexdigest() == published_tables()["4x4"]["sha256"]


def test_a_failed_background_save_fails_the_build(tmp_path, monkeypatch):
    """A checkpoint saved in the background that fails (here: an I/O error writing the
    manifest) is raised in the build, not lost; the build then resumes to the same table."""
    import errno
    from c4table.builddir import manifest
    from c4table.io import storage
    from c4table.pipeline.stages.build import build_table
    from conftest import published_tables
    real_write, n = storage.Storage.write_atomic, []

    def write_atomic(self, rel, data, durable=True):
        if rel == "manifest.json":
            n.append(1)
            if len(n) == 4:
                raise OSError(errno.EIO, "Input/output error", str(self.root / rel))
        return real_write(self, rel, data, durable)

    monkeypatch.setattr(storage.Storage, "write_atomic", write_atomic)
    monkeypatch.setattr(manifest, "CHECKPOINT_ENTRIES", 1)
    with pytest.raises(OSError, match="Input/output error"):
        build_table("4x4", tmp_path / "b", workers=1)
    monkeypatch.setattr(storage.Storage, "write_atomic", real_write)
    table = build_table("4x4", tmp_path / "b", workers=1)
    assert hashlib.sha256(table.read_bytes()).hexdigest() == published_tables()["4x4"]["sha256"]
