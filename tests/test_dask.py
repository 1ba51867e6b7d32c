"""The same pipeline on dask.distributed: a LocalCluster with 2 workers builds tables
byte-identical to the local build, also when a worker process dies in the middle of a stage."""
import hashlib
import os
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("dask.distributed")

from c4table.pipeline.stages.build import build_table  # noqa: E402

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def cluster():
    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0")
    yield cl
    cl.close()


@pytest.fixture(scope="module")
def client(cluster):
    c = distributed.Client(cluster)
    yield c
    c.close()


@pytest.mark.parametrize("board", ["4x5", "5x4"])
def test_localcluster_build_is_byte_identical(built, client, tmp_path, board):
    ref = built(board) / f"connect4_{board}.dat"
    path = build_table(board, tmp_path, scheduler=client, quiet=True, memory="8MiB")
    assert sha(path) == sha(ref)


def test_scheduler_local_string(built, tmp_path):
    path = build_table("4x4", tmp_path, scheduler="local", workers=2, quiet=True)
    assert sha(path) == sha(built("4x4") / "connect4_4x4.dat")


def test_worker_killed_mid_stage_same_result(built, cluster, client, tmp_path):
    """Kill one worker process (its Nanny restarts it) while stages run: dask reruns the lost
    tasks, and the tasks' outputs are idempotent files, so the table is unchanged."""
    ref = built("5x4") / "connect4_5x4.dat"
    killed = []

    def killer():
        time.sleep(1.0)
        nanny = next(iter(cluster.workers.values()))
        pid = nanny.process.process.pid  # the worker process under this Nanny
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    t = threading.Thread(target=killer)
    t.start()
    path = build_table("5x4", tmp_path, scheduler=client, quiet=True, memory="4MiB")
    t.join()
    assert killed, "the worker was not killed"
    assert sha(path) == sha(ref)


def test_localcluster_rooted_build_is_byte_identical(client, tmp_path):
    ref = build_table("5x4", tmp_path / "local", quiet=True, workers=1, root="33")
    path = build_table("5x4", tmp_path / "dask", scheduler=client, quiet=True, memory="8MiB",
                       root="33")
    assert path.name == ref.name == "connect4_5x4_root-33.dat"
    assert sha(path) == sha(ref)
