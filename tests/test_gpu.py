"""The GPU path (``--device gpu``) on numba-cuda's simulator (``NUMBA_ENABLE_CUDASIM=1``: the
CUDA kernels run on the CPU, numpy stands in for CuPy): the tables of 4x4, 4x5, 5x4 and a
rooted 3x4 are byte-identical to the CPU build's (the tree hash each build reports) and to the
known tree hash and published sha256 where ``known_tables.json`` lists them; a build killed (SIGKILL) on one device resumes on the other;
without a GPU and without the simulator, ``--device gpu`` is one line and exit status 2."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from c4table.testing import faults as soak
from c4table.io.hashes import sha256_of
from c4table.io.treehash import FIELD, tree_hash_file

pytest.importorskip("numba.cuda")
pytestmark = pytest.mark.slow   # every test here builds through the command line (make check leaves them out)

ROOT = Path(__file__).resolve().parents[1]
KNOWN = json.loads((ROOT / "c4table" / "data" / "known_tables.json").read_text())
SIM = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
NO_SIM = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}


def cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "c4table.cli.main", *args], cwd=ROOT,
                          env=env if env is not None else NO_SIM, capture_output=True, text=True,
                          timeout=300)


def build(board: str, out: Path, gpu: bool, *extra: str) -> str:
    """The tree hash the build's final line reports."""
    args = ["build", board, "--out", str(out), "-q", *extra]
    r = cli(*args, *(["--device", "gpu"] if gpu else ["--workers", "1"] * ("--workers" not in extra)),
            env=SIM if gpu else NO_SIM)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(f"{FIELD} ")[1].split()[0]


@pytest.mark.parametrize("board", ["4x4", "4x5", "5x4"])
def test_gpu_build_is_byte_identical(board, tmp_path):
    gpu = build(board, tmp_path / "gpu", True)
    cpu = build(board, tmp_path / "cpu", False)
    assert gpu == cpu == KNOWN[board][FIELD]
    table = tmp_path / "gpu" / f"connect4_{board}.dat"
    assert tree_hash_file(table)[FIELD] == gpu
    assert sha256_of(table) == KNOWN[board]["sha256"]
    g = json.loads((tmp_path / "gpu" / "manifest.json").read_text())
    c = json.loads((tmp_path / "cpu" / "manifest.json").read_text())
    assert g["plies"] == c["plies"]   # every generation's counts
    for stage in ("forward", "backward"):   # the same shards, file for file
        assert {p: [s["xxh64"] for s in v["shards"]] for p, v in g["steps"][stage].items()} == \
            {p: [s["xxh64"] for s in v["shards"]] for p, v in c["steps"][stage].items()}


def test_gpu_build_with_worker_processes_sharing_the_card(tmp_path):
    """--workers 2: forked workers run the GPU path (CUDA never initialised in the driver); a
    small budget makes several shards per generation."""
    gpu = build("5x4", tmp_path / "gpu", True, "--workers", "2", "--memory", "64MiB")
    assert gpu == KNOWN["5x4"][FIELD]
    assert sha256_of(tmp_path / "gpu" / "connect4_5x4.dat") == KNOWN["5x4"]["sha256"]


def test_rooted_gpu_build_is_byte_identical(tmp_path):
    gpu = build("3x4", tmp_path / "gpu", True, "--root", "12")
    cpu = build("3x4", tmp_path / "cpu", False, "--root", "12")
    assert gpu == cpu
    table = "connect4_3x4_root-12.dat"
    assert (tmp_path / "gpu" / table).read_bytes() == (tmp_path / "cpu" / table).read_bytes()
    assert tree_hash_file(tmp_path / "gpu" / table)[FIELD] == gpu


def test_killed_on_gpu_resumes_on_cpu(tmp_path):
    out = tmp_path / "b"
    cmd = [sys.executable, "-m", "c4table.cli.main", "build", "4x5", "--out", str(out), "-q",
           "--device", "gpu"]
    p = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd=ROOT, env=SIM)
    hit = soak.wait_for_stage(p, out, "backward", 4, timeout=120)
    assert soak.kill_group(p) and hit, "the build ended before it was killed"
    assert not (out / "connect4_4x5.dat").exists()
    r = cli("build", "4x5", "--out", str(out), "-q", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert sha256_of(out / "connect4_4x5.dat") == KNOWN["4x5"]["sha256"]


def test_started_on_cpu_resumes_on_gpu(tmp_path):
    out = tmp_path / "b"
    r = cli("forward", "4x4", "--out", str(out), "-q", "--workers", "1", "--max-ply", "9")
    assert r.returncode == 0, r.stderr
    assert build("4x4", out, True) == KNOWN["4x4"][FIELD]
    assert sha256_of(out / "connect4_4x4.dat") == KNOWN["4x4"]["sha256"]


def test_no_gpu_no_simulator_is_one_line_exit_2(tmp_path):
    from c4table.pipeline.kernels.gpu.device import unavailable
    if unavailable() is None:
        pytest.skip("a GPU is here")
    r = cli("build", "4x4", "--out", str(tmp_path / "b"), "--device", "gpu")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--device gpu" in r.stderr
    assert not (tmp_path / "b").exists()


def test_gpu_plan_of_7x6_names_its_assumptions_and_bound():
    from c4table.pipeline.planning.gpuplan import GPU_RATES, make_gpu_plan
    from c4table.pipeline.planning.plan import make_plan
    p = make_gpu_plan("7x6")
    cpu = make_plan("7x6", 1, 40 * 2**30)
    assert (p.entries, p.peak_entries) == (cpu.entries, cpu.peak_entries)
    assert 248.3e9 < p.peak_entries < 248.4e9   # ply 33: Böck's Table 2 (496.6 G positions) halved
    r = cli("plan", "7x6", "--device", "gpu", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["assumptions"] == GPU_RATES and d["bound"] in d["seconds"]
    assert d["wall_seconds"] == max(d["seconds"].values()) and d["gpu_hours"] > 0


def test_gpu_plan_with_format_c4z_writes_no_raw_table():
    """With ``--format c4z`` the merge writes the ``.c4z``: the disk holds and moves less (the
    raw table goes), the host encodes and hashes more, and the same CPU plan's I/O model says so."""
    from c4table.pipeline.planning.gpuplan import make_gpu_plan
    from c4table.pipeline.planning.plan import make_plan
    dat, c4z = make_gpu_plan("6x5"), make_gpu_plan("6x5", table_format="c4z")
    cpu = make_plan("6x5", 1, 40 * 2**30)
    cpu.table_format = "c4z"
    io = cpu.io().to_json()["stages"]
    assert c4z.disk_bytes["peak_stored"] == max(io[s]["peak_stored_bytes"] for s in io)
    assert c4z.disk_bytes["peak_stored"] < dat.disk_bytes["peak_stored"] - cpu.final_bytes // 2
    assert c4z.disk_bytes["written"] < dat.disk_bytes["written"]
    assert c4z.seconds["host"] > dat.seconds["host"] and c4z.seconds["gpu"] == dat.seconds["gpu"]
    r = cli("plan", "6x5", "--device", "gpu", "--format", "c4z")
    assert r.returncode == 0, r.stderr
    assert "writing the .c4z" in r.stdout


def test_gpu_run_script_end_to_end_on_the_simulator(tmp_path):
    """tools/bench/gpu_run.py (run as its docs say, as on the lent machine) on 4x4: both builds,
    the known sha256 checked, one table printed."""
    r = subprocess.run([sys.executable, "-m", "tools.bench.gpu_run", "--boards", "4x4",
                        "--workers", "2", "--gpu-workers", "1,2", "--memory", "1GiB",
                        "--work", str(tmp_path), "--json"],
                       cwd=ROOT, env=SIM, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    rows = json.loads(r.stdout.strip().splitlines()[-1])["rows"]
    assert [(x["device"], x["workers"], x["sha256"]) for x in rows] == \
        [("gpu", 1, KNOWN["4x4"]["sha256"]), ("gpu", 2, KNOWN["4x4"]["sha256"]),
         ("cpu", 2, KNOWN["4x4"]["sha256"])]
    assert rows[0]["gpu_s"]["forward kernel"] > 0 and rows[0]["disk_written"] > 0
    assert "ok (known)" in r.stdout
