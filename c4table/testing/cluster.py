"""A real dask cluster on loopback for tests and tools: a moto S3 server, one ``dask scheduler``
process and separate ``dask worker`` processes (``--nworkers 1 --nthreads 1 --memory-limit``,
no nanny, so killing one kills that worker), all on 127.0.0.1 with free ports. The workers
get the S3 endpoint and credentials through their environment, as real ones would.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BUCKET = "c4table-cluster"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bin(name: str) -> str:
    p = Path(sys.executable).with_name(name)
    return str(p) if p.exists() else name


class Cluster:
    """Start with :meth:`start`, stop with :meth:`stop` (kills only the processes it started)."""

    def __init__(self, workers: int = 4, memory_limit: str = "1GiB", log_dir: str | None = None):
        self.n = workers
        self.memory_limit = memory_limit
        self.log_dir = Path(log_dir or f"/tmp/c4cluster-{os.getpid()}")
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self.moto = None
        self.env: dict[str, str] = {}

    def start(self) -> "Cluster":
        import pyarrow.fs as pafs
        self.log_dir.mkdir(parents=True, exist_ok=True)
        host, port = "127.0.0.1", free_port()
        # its own process: the S3 server then competes with no build for a GIL
        self.moto = self._spawn("moto", [_bin("moto_server"), "-H", host, "-p", str(port)])
        self.procs.append(self.moto)
        _wait_port(host, port)
        self.env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}",
                    "AWS_EC2_METADATA_DISABLED": "true"}
        os.environ.update(self.env)
        fs = pafs.S3FileSystem(endpoint_override=self.env["AWS_ENDPOINT_URL"], allow_bucket_creation=True)
        fs.create_dir(BUCKET)
        self.fs = fs
        self.address = f"tcp://127.0.0.1:{free_port()}"
        port = self.address.rsplit(":", 1)[1]
        self.procs.append(self._spawn("scheduler", [_bin("dask"), "scheduler", "--host", "127.0.0.1",
                                                    "--port", port, "--no-dashboard"]))
        for i in range(self.n):
            self.add_worker(i)
        from dask.distributed import Client
        self.client = Client(self.address, timeout=60)
        self.client.wait_for_workers(self.n, timeout=120)
        return self

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        if name == "moto":
            log.close()
            log = subprocess.DEVNULL   # one line per request
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)

    def add_worker(self, i: int) -> subprocess.Popen:
        p = self._spawn(f"worker-{i}", [_bin("dask"), "worker", self.address, "--nworkers", "1",
                                        "--nthreads", "1", "--memory-limit", self.memory_limit,
                                        "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                                        "--name", f"w{i}-{len(self.procs)}"])
        self.procs.append(p)
        self.workers.append(p)
        return p

    def kill_worker(self, i: int) -> int:
        """SIGKILL worker ``i`` (its process alone); return its pid."""
        p = self.workers[i]
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        return p.pid

    def restart_worker(self, i: int) -> None:
        """Start a new worker process in place of worker ``i``."""
        self.workers[i] = self.add_worker(i)

    def worker_count(self) -> int:
        return len(self.client.scheduler_info()["workers"])

    def s3_bytes(self, key: str) -> bytes:
        with self.fs.open_input_stream(f"{BUCKET}/{key}") as f:
            return f.read()

    def stop(self) -> None:
        try:
            self.client.close()
        except Exception:
            pass
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.time() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _wait_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            if time.time() > deadline:
                raise RuntimeError(f"nothing listens on {host}:{port} after {timeout:.0f}s")
            time.sleep(0.05)
