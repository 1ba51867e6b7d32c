"""A real multi-process dask cluster on object storage: one ``dask scheduler`` process, 4
separate ``dask worker`` processes (1 process, 1 thread, a memory limit each) and a moto S3
server, all on loopback (``c4table/testing/cluster.py``, started once for the module).

4x6 and 5x4 are built onto ``s3://`` and compared with the sha256 and tree hash of the tables
known to this project (``c4table/data/known_tables.json``: 5x4 identical to the brute-force
oracle, 4x6 cross-checked against Böck's Table 1) and with the sizes Cadot published. While the 4x6
build runs, one worker is killed (SIGKILL) and a new one started, and a second build (5x4,
from another process) writes into another prefix at the same time.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from c4table.io.treehash import FIELD, tree_hash
from conftest import ROOT, published_tables

pytest.importorskip("dask.distributed")
pytest.importorskip("moto.server")
from c4table.testing.cluster import BUCKET, Cluster  # noqa: E402

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


def known_sha256(board: str, field: str = "sha256") -> str:
    """The known table's sha256 (or its ``field``: the tree hash, ``FIELD``)."""
    data = json.loads((ROOT / "c4table" / "data" / "known_tables.json").read_text())
    return data[board][field]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cl = Cluster(workers=4, memory_limit="1GiB", log_dir=str(tmp_path_factory.mktemp("cluster"))).start()
    try:
        yield cl
    finally:
        cl.stop()


def table_bytes(cl: Cluster, prefix: str, board: str) -> bytes:
    return cl.s3_bytes(f"{prefix}/connect4_{board}.dat")


def test_builds_on_a_real_cluster_survive_a_killed_worker_beside_a_concurrent_build(cluster):
    from c4table.pipeline.stages.build import build_table
    from c4table.pipeline.runtime.counters import STATS
    uri_a, uri_b = f"s3://{BUCKET}/a46", f"s3://{BUCKET}/b54"
    # the second build: another process, another prefix, the same scheduler and workers
    second = subprocess.Popen([sys.executable, "-m", "c4table.cli.main", "build", "5x4", "--out", uri_b,
                               "--scheduler", cluster.address, "--memory", "128MiB", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed: list[int] = []

    def killer():
        # kill worker 0 once the 4x6 build has finished a few forward generations
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                m = json.loads(cluster.s3_bytes("a46/manifest.json"))
                if len(m["steps"]["forward"]) >= 6:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.1)
        killed.append(cluster.kill_worker(0))
        cluster.restart_worker(0)

    t = threading.Thread(target=killer)
    t.start()
    path = build_table("4x6", uri_a, scheduler=cluster.client, quiet=True, memory="128MiB")
    t.join()
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert killed, "no worker was killed"
    assert path == f"{uri_a}/connect4_4x6.dat"
    pub = published_tables()
    for prefix, board in (("a46", "4x6"), ("b54", "5x4")):
        data = table_bytes(cluster, prefix, board)
        assert len(data) == int(pub[board]["bytes"])
        assert hashlib.sha256(data).hexdigest() == known_sha256(board)
        assert tree_hash(data) == known_sha256(board, FIELD)
    assert f"{FIELD} {known_sha256('5x4', FIELD)}" in out   # the build's final line
    # the replacement worker joined the cluster
    deadline = time.time() + 60
    while cluster.worker_count() < 4 and time.time() < deadline:
        time.sleep(0.2)
    assert cluster.worker_count() == 4
    # each build recorded its own counts beside its manifest
    for prefix in ("a46", "b54"):
        stats = json.loads(cluster.s3_bytes(f"{prefix}/{STATS}"))
        assert set(stats["stages"]) == {"forward", "backward", "merge"}
        # a build counts the workers when it connects: 3 if one was being replaced then
        assert stats["workers"] in (3, 4)


def test_counts_on_the_cluster_equal_a_local_run(cluster, tmp_path, monkeypatch):
    """The counters are one code path: a 5x4 build on S3 through the cluster and one on a
    local disk through 4 local processes (the same task sizes, and every shuffle past 2 ranged
    reads made two-level: pipeline/sort/shuffle.py) count the same tasks, objects, bytes written
    and read, GETs and ranged reads per stage; and the S3 table is byte-identical. Reads of
    run indexes are made once per worker process and run (cached), so how many depends on which
    worker ran which task: they are counted apart (``cached_reads``, ``cached_bytes_read``) and
    left out of the bytes and GETs compared, which are then equal exactly."""
    from c4table.pipeline.stages.build import build_table
    from c4table.pipeline.runtime.counters import STATS, IOCounts
    monkeypatch.setenv("C4TABLE_SHUFFLE_MAX_READS", "2")
    uri = f"s3://{BUCKET}/c54"
    build_table("5x4", uri, scheduler=cluster.client, quiet=True, memory="128MiB")
    assert hashlib.sha256(table_bytes(cluster, "c54", "5x4")).hexdigest() == known_sha256("5x4")
    build_table("5x4", tmp_path, workers=4, quiet=True, memory="128MiB")
    remote = json.loads(cluster.s3_bytes(f"c54/{STATS}"))["stages"]
    local = json.loads((Path(tmp_path) / STATS).read_text())["stages"]
    for stage in ("forward", "backward"):
        for k in ("tasks", "objects_written", "ranged_reads", "slice_reads", "bytes_written",
                  "peak_stored_bytes"):
            assert remote[stage][k] == local[stage][k], (stage, k, remote[stage], local[stage])
        r, lo = IOCounts.from_json(remote[stage]), IOCounts.from_json(local[stage])
        assert r.task_bytes_read == lo.task_bytes_read, (stage, r, lo)
        assert r.get_requests - r.cached_reads == lo.get_requests - lo.cached_reads, (stage, r, lo)
        assert remote[stage]["ranged_reads"] > 0 and remote[stage]["peak_task_memory"] > 0
    # The merge differs by design (pipeline/stages/merge.py): locally, each range task counts the
    # entries below its range (its offset) and writes the table in place; on S3 they write
    # parts, which the driver appends as the table (one more object, the table's bytes written
    # twice).
    r, lo = remote["merge"], local["merge"]
    table = 1_974_174 * 5
    assert r["tasks"] > 1 and lo["tasks"] == r["tasks"]
    assert lo["objects_written"] == r["objects_written"] - 1
    assert r["bytes_written"] - table == lo["bytes_written"], (r, lo)
    assert r["ranged_reads"] > 0 and r["peak_task_memory"] > 0
    shuffles = json.loads(cluster.s3_bytes(f"c54/{STATS}"))["shuffles"]
    assert any(s["group"] for s in shuffles) and all(s["slice_reads"] <= s["bound"] for s in shuffles)
