"""Injected faults against the real build: SIGKILL of the whole process group at random points of
forward, backward and merge, then resume (same sha256 as a clean build); damaged shards, table
files, caches and manifests (one-line error naming the file, non-zero exit, verify reports it);
a full disk (patched writes raising ENOSPC in a worker process, a tiny tmpfs, the free-disk
check), a memory budget too small, and malformed command lines (one line, exit 2).

Random kill points are drawn from ``C4_FAULT_SEED`` (printed on failure) so a failing run can
be repeated."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from c4table.errors import BuildError
from c4table.builddir.manifest import Manifest
from c4table.io.treehash import FIELD, tree_hash_file
from c4table.table.known import known_tables
from conftest import interrupt_backward

ROOT = Path(__file__).resolve().parents[1]
BOARD = "5x4"
TABLE = f"connect4_{BOARD}.dat"
SEED = int(os.environ.get("C4_FAULT_SEED", random.randrange(1 << 30)))

from c4table.testing import faults as soak  # noqa: E402


def cli(*args, env=None, stdin=None):
    """Run the real console entry point; (exit status, stdout, stderr)."""
    e = dict(os.environ, **(env or {}))
    p = subprocess.run([sys.executable, "-m", "c4table.cli.main", *map(str, args)], capture_output=True,
                       text=True, timeout=300, cwd=ROOT, env=e, input=stdin)
    return p.returncode, p.stdout, p.stderr


def one_line_error(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("c4table: error:") and "Traceback" not in err


def resume(out: Path, *extra) -> tuple[int, str]:
    code, _, err = cli("build", BOARD, "--out", out, "--workers", 2, *extra)
    return code, err


@pytest.fixture(scope="module")
def reference(built):
    """sha256 of the clean 5x4 table and its build directory."""
    d = built(BOARD)
    return soak.sha256_file(d / TABLE), d


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    """A build directory whose forward pass is finished and backward pass is half done."""
    from c4table.pipeline.stages import forward
    from c4table.pipeline.stages.build import open_build
    d = tmp_path_factory.mktemp("partial")
    b = open_build(BOARD, d, workers=1, quiet=True)
    try:
        forward.run(b)
    except BaseException:
        b.close()
        raise
    m = b.manifest
    interrupt_backward(b, lambda: len(m.finished_plies("backward")) >= 11)   # after plies 20..10
    assert len(json.loads((d / "manifest.json").read_text())["steps"]["backward"]) == 11
    return d


def copy_build(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst


# ----------------------------------------------------------------- SIGKILL + resume
@pytest.mark.parametrize("target,trial", [("forward", 0), ("forward", 1), ("backward", 0),
                                          ("backward", 1), ("merge", 0), ("time", 0)])
@pytest.mark.slow
def test_sigkill_process_group_then_resume_is_byte_identical(reference, tmp_path, target, trial):
    ref_sha, _ = reference
    rng = random.Random(f"{SEED}-{target}-{trial}")
    out = tmp_path / "b"
    cmd = soak.build_cmd(BOARD, out, workers=2)
    cells = soak.cells_of(BOARD)
    desc = ""
    for attempt in range(6):   # a late kill may miss a fast build: draw again, earlier
        shutil.rmtree(out, ignore_errors=True)
        desc = soak.kill_once(cmd, out, rng, cells, target=target, max_delay=8.0 / 2**attempt)
        if desc.startswith("killed"):
            break
    assert desc.startswith("killed"), f"seed {SEED}: never hit a running build ({desc})"
    assert not (out / TABLE).exists() or soak.stage_of(soak.read_manifest(out))[2]
    code, err = resume(out)
    assert code == 0, f"seed {SEED}, {desc}: {err}"
    assert soak.sha256_file(out / TABLE) == ref_sha, f"seed {SEED}: {desc}"


@pytest.mark.slow
def test_repeated_kills_then_resume(reference, tmp_path):
    """Kills in a row at random times, each one hitting the resume of the previous one."""
    ref_sha, _ = reference
    rng = random.Random(f"{SEED}-repeated")
    out = tmp_path / "b"
    cmd = soak.build_cmd(BOARD, out, workers=2)
    descs = [soak.kill_once(cmd, out, rng, soak.cells_of(BOARD), target="time") for _ in range(2)]
    code, err = resume(out)
    assert code == 0, err
    assert soak.sha256_file(out / TABLE) == ref_sha, f"seed {SEED}: {descs}"


@pytest.mark.slow
def test_resume_verifies_finished_shards_and_says_so(partial, reference, tmp_path):
    out = copy_build(partial, tmp_path / "b")
    code, err = resume(out)            # not quiet: progress lines on stderr
    assert code == 0, err
    assert "[backward] resuming at ply 9: verified" in err and "(xxh64)" in err
    assert soak.sha256_file(out / TABLE) == reference[0]


@pytest.mark.slow
def test_restart_starts_over(reference, tmp_path):
    out = copy_build(reference[1], tmp_path / "b")
    (out / "work" / "forward" / "ply_07" / "part-00000.shard").write_bytes(b"junk")
    code, err = resume(out, "-q", "--restart")
    assert code == 0, err
    assert soak.sha256_file(out / TABLE) == reference[0]


# ------------------------------------------------------------------ corruption
def _shard(d: Path, stage: str, ply: int) -> Path:
    return d / "work" / stage / f"ply_{ply:02d}" / "part-00000.shard"


@pytest.mark.parametrize("damage", ["truncate", "flip", "delete"])
@pytest.mark.parametrize("stage,ply", [("forward", 5), ("backward", 15)])
def test_damaged_shard_is_a_one_line_error_naming_it(partial, tmp_path, damage, stage, ply):
    out = copy_build(partial, tmp_path / "b")
    f = _shard(out, stage, ply)
    data = bytearray(f.read_bytes())
    if damage == "truncate":
        f.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        data[len(data) // 2] ^= 0x10
        f.write_bytes(data)
    else:
        f.unlink()
    code, err = resume(out, "-q")
    assert code == 1 and one_line_error(err), err
    assert str(f) in err
    assert ("missing" if damage == "delete" else "checksum") in err
    # nothing finished was lost: the manifest still lists every finished step
    assert len(soak.read_manifest(out).finished_plies("backward")) == 11


def test_verify_reports_damaged_shards_of_a_finished_build(reference, tmp_path):
    out = copy_build(reference[1], tmp_path / "b")
    f = _shard(out, "forward", 9)
    data = bytearray(f.read_bytes())
    data[100] ^= 0x01
    f.write_bytes(data)
    code, stdout, _ = cli("verify", "-q", out / TABLE)
    assert code == 1
    assert any(line.startswith("problem") and str(f) in line for line in stdout.splitlines())
    assert stdout.splitlines()[-1].startswith("MISMATCH")


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate", "flip", "swap", "append"])
def test_damaged_table_file(reference, tmp_path, damage):
    out = copy_build(reference[1], tmp_path / "b")
    f = out / TABLE
    data = bytearray(f.read_bytes())
    if damage == "truncate":      # size not a multiple of the 5-byte entry
        f.write_bytes(data[:-2])
    elif damage == "flip":
        data[123457] ^= 0x04
        f.write_bytes(data)
    elif damage == "swap":        # keys not strictly increasing
        data[5000:5005], data[5005:5010] = data[5005:5010], data[5000:5005]
        f.write_bytes(data)
    else:
        f.write_bytes(data + data[-5:])   # a duplicate last entry
    code, stdout, _ = cli("verify", "-q", f)
    assert code == 1 and stdout.splitlines()[-1].startswith("MISMATCH")
    expect = {"truncate": "multiple", "swap": "not greater", "append": "not greater",
              "flip": "sha256"}[damage]
    assert expect in stdout
    code, err = resume(out, "-q")     # a finished build whose table no longer matches
    assert code == 1 and one_line_error(err) and str(f) in err, err
    if damage == "truncate":
        code, _, err = cli("lookup", "--table", f, "1")
        assert code == 1 and one_line_error(err) and "multiple" in err
    if damage == "flip":   # the remedy the message gives: delete it and rerun
        assert "delete it and rerun" in err
        f.unlink()
        code, err = resume(out, "-q")
        assert code == 0, err
        assert soak.sha256_file(f) == reference[0]


@pytest.mark.parametrize("damage", ["truncated-json", "edited-count", "edited-checksum", "not-object",
                                    "bad-path"])
def test_damaged_manifest(reference, tmp_path, damage):
    out = copy_build(reference[1], tmp_path / "b")
    mpath = out / "manifest.json"
    text = mpath.read_text()
    data = json.loads(text)
    if damage == "truncated-json":
        mpath.write_text(text[: len(text) // 3])
    elif damage == "edited-count":
        data["plies"][7]["entries"] += 1
        mpath.write_text(json.dumps(data))
    elif damage == "edited-checksum":
        data["steps"]["forward"]["5"]["shards"][0]["xxh64"] = "0" * 16
        mpath.write_text(json.dumps(data))
    elif damage == "not-object":
        mpath.write_text("[1, 2, 3]\n")
    else:   # structurally wrong and checksum recomputed, as a careless tool would do
        m = Manifest(out, data)
        data.pop("xxh64")
        data["steps"]["forward"]["5"]["shards"][0]["file"] = "../../etc/passwd"
        m.save()
    code, err = resume(out, "-q")
    assert code == 1 and one_line_error(err) and str(mpath) in err, err
    code, stdout, _ = cli("verify", "-q", out / TABLE)
    assert code == 1 and "manifest.json" in stdout


def test_merge_killed_after_rename_before_manifest_save(reference, tmp_path):
    """A table file with no record in the manifest is not trusted: the merge runs again."""
    out = copy_build(reference[1], tmp_path / "b")
    data = json.loads((out / "manifest.json").read_text())   # the manifest before the merge's save
    for k in ("table", "totals", "xxh64"):
        data.pop(k)
    Manifest(out, data).save()
    f = out / TABLE
    f.write_bytes(f.read_bytes()[:1000])          # whatever the crash left
    code, err = resume(out)
    assert code == 0, err
    assert "not trusted" in err
    assert soak.sha256_file(f) == reference[0]
    tree = tree_hash_file(f)[FIELD]
    assert soak.read_manifest(out).table.sha256_tree == tree == known_tables()[BOARD][FIELD]


@pytest.mark.parametrize("tmp_ok", [True, False])
def test_merge_killed_after_manifest_save_before_rename(reference, tmp_path, tmp_ok):
    """The manifest records the table before the rename: a .tmp that matches is renamed, one
    that does not is rewritten."""
    out = copy_build(reference[1], tmp_path / "b")
    f = out / TABLE
    tmp = out / (TABLE + ".tmp")
    f.rename(tmp)
    if not tmp_ok:
        data = bytearray(tmp.read_bytes())
        data[777] ^= 0xFF
        tmp.write_bytes(data)
    code, err = resume(out)
    assert code == 0, err
    assert ("renamed" in err or "verifying it" in err) if tmp_ok else "merging again" in err
    assert soak.sha256_file(f) == reference[0] and not tmp.exists()


@pytest.mark.parametrize("damage", ["flip", "missing", "orphan-tmp", "older-format"])
def test_damaged_or_partial_messages_are_never_reused(partial, reference, tmp_path, damage):
    """The message runs that generation 10 sent to generation 9 are trusted only if they match
    the manifest and are of this version's run format; otherwise they are sent again from
    generation 10's backward shards."""
    out = copy_build(partial, tmp_path / "b")
    msgs = out / "work" / "messages" / "ply_09"
    run = sorted(msgs.glob("run-*.u64"))[0]
    if damage == "flip":
        data = bytearray(run.read_bytes())
        data[len(data) // 2] ^= 0x01
        run.write_bytes(data)
    elif damage == "missing":
        run.unlink()
    elif damage == "older-format":   # a run written by a version with the bit-packed format
        index = run.with_name(run.name + ".fences")
        index.write_bytes((0xC4_52_55_4E_42_50_00_02).to_bytes(8, "little") + index.read_bytes()[8:])
    else:   # what a crash in the middle of a backward step leaves
        later = out / "work" / "messages" / "ply_08"
        later.mkdir(parents=True)
        (later / "run-00000.u64.tmp").write_bytes(b"half written")
        (later / "run-00001.u64").write_bytes(b"not in the manifest")
        junk = out / "work" / "backward" / "ply_09"
        junk.mkdir(parents=True)
        (junk / "part-00000.shard.tmp").write_bytes(b"partial")
        (junk / "part-00001.shard").write_bytes(b"not in the manifest")
        runs = out / "work" / "runs" / "ply_21"
        runs.mkdir(parents=True)
        (runs / "run-00000.u64").write_bytes(b"stale")
    code, err = resume(out)
    assert code == 0, err
    if damage != "orphan-tmp":
        assert "messages to generation 9 are missing or damaged; sending them again" in err
    else:
        assert "removed 3 scratch files" in err
        assert not (out / "work" / "runs").exists()
        assert not (junk / "part-00001.shard").exists()   # unfinished step's dir was cleared
    assert not list((out / "work" / "messages").rglob("*.u64"))   # every run is deleted once used
    assert soak.sha256_file(out / TABLE) == reference[0]


def test_mirrored_only_messages_are_sent_again_for_kernels_that_do_not_pull(partial, reference,
                                                                              tmp_path, monkeypatch):
    """A pulling backward pass sends only the mirrored children's messages; resumed by kernels
    that read one message per child (the GPU's), the step sends all of them again from its
    backward shards rather than deciding positions from a part of their children."""
    from c4table.pipeline.kernels.kernelset import KernelSet
    from c4table.pipeline.stages import backward
    from c4table.pipeline.stages.build import open_build, run_build
    out = copy_build(partial, tmp_path / "b")
    assert soak.read_manifest(out).step("backward", 10).mirrored_only
    monkeypatch.setattr(KernelSet, "pulls", property(lambda self: False))
    notes = []
    b = open_build(BOARD, out, workers=1, quiet=True)
    real = b.note
    b.note = lambda stage, text: (notes.append(text), real(stage, text))
    run_build(b)
    assert any("the mirrored ones only" in n and "sending all of them again" in n for n in notes)
    assert not soak.read_manifest(out).step("backward", 9).mirrored_only
    assert soak.sha256_file(out / TABLE) == reference[0]


def test_pull_cuts_a_shard_whose_windows_exceed_the_task_memory(reference, tmp_path, monkeypatch):
    """With windows allowed far fewer rows than a shard's children reach, each shard is cut
    into slices of keys, each reading its own windows; a slice as small as a slice gets whose
    windows still span too much reads only its children's blocks: the same outcomes, and
    no slice reads a whole generation."""
    from c4table.pipeline.stages import pull
    from c4table.pipeline.stages.build import open_build, run_build
    monkeypatch.setattr(pull, "MIN_WINDOW_ROWS", 1 << 10)
    monkeypatch.setattr(pull, "MIN_SLICE_KEYS", 1 << 8)
    reads = []
    real = pull.NextGeneration.read

    def read(self, blocks):
        got = real(self, blocks)
        reads.append(got[0].shape[0])
        return got
    monkeypatch.setattr(pull.NextGeneration, "read", read)
    exact = []
    real_holding = pull.NextGeneration.blocks_holding

    def holding(self, kids):
        got = real_holding(self, kids)
        exact.append(sum(len(b) for b in got.values()))
        return got
    monkeypatch.setattr(pull.NextGeneration, "blocks_holding", holding)
    b = open_build(BOARD, tmp_path / "b", workers=1, quiet=True, memory="1MiB")
    run_build(b)
    assert soak.sha256_file(tmp_path / "b" / TABLE) == reference[0]
    plies = len(soak.read_manifest(tmp_path / "b").finished_plies("backward"))
    assert len(reads) > 2 * plies   # cut into slices
    assert max(reads) < 1 << 17     # a slice reads a few blocks, never a whole generation
    assert exact and max(exact) <= 2 * 7 * pull.MIN_SLICE_KEYS   # the children's blocks


def test_pull_cuts_a_slice_whose_windows_spread_far_beyond_its_keys(reference, tmp_path,
                                                                      monkeypatch):
    """Memory to spare, a slice is still cut while its windows reach more than
    ``SPREAD_ROWS`` rows of the next generation per key, and one too small to cut reads the
    blocks of its children where they hold fewer rows: with the rule at its tightest the
    same table, the keys each annotated once (the build's ``pulled_keys``), and at the
    default no more rows read (``pulled_rows``) than with the rule off."""
    import json
    from c4table.pipeline.stages import pull
    from c4table.pipeline.stages.build import open_build, run_build
    monkeypatch.setattr(pull, "MIN_SLICE_KEYS", 1 << 8)
    pulled = {}
    for name, spread in (("off", float("inf")), ("default", pull.SPREAD_ROWS), ("tight", 1)):
        monkeypatch.setattr(pull, "SPREAD_ROWS", spread)
        b = open_build(BOARD, tmp_path / name, workers=1, quiet=True)
        run_build(b)
        assert soak.sha256_file(tmp_path / name / TABLE) == reference[0], name
        st = json.loads((tmp_path / name / "stats.json").read_text())["stages"]["backward"]
        pulled[name] = st["pulled_keys"], st["pulled_rows"]
    keys = {k for k, _ in pulled.values()}
    assert len(keys) == 1 and 0 < keys.pop() <= known_tables()[BOARD]["entries"]
    assert pulled["default"][1] <= pulled["off"][1]


# ------------------------------------------------------------------ full disk
def fault_driver(fault: str) -> str:
    """Source of a CLI run in which a worker process's write of a file whose path contains
    ``sys.argv[1]`` runs ``fault`` first (the CLI's arguments follow)."""
    return r"""
import errno, os, signal, sys
from c4table.io.storage import Storage
parent = os.getpid()
real = Storage.write_atomic
def write_atomic(self, rel, data, *a, **kw):
    if os.getpid() != parent and sys.argv[1] in rel:
        %s
    return real(self, rel, data, *a, **kw)
Storage.write_atomic = write_atomic
from c4table.cli.main import main
main(sys.argv[2:])
""" % fault


# what a write on a full disk raises
ENOSPC_DRIVER = fault_driver(
    'raise OSError(errno.ENOSPC, "No space left on device", str(self.root / rel))')


@pytest.mark.parametrize("stage,ply,finished", [("forward", 13, "forward generations 0-12"),
                                                ("backward", 15, "backward generations 16-20")])
@pytest.mark.slow
def test_enospc_in_a_worker_process_keeps_finished_steps(reference, tmp_path, stage, ply, finished):
    out = tmp_path / "b"
    p = subprocess.run([sys.executable, "-c", ENOSPC_DRIVER, f"work/{stage}/ply_{ply:02d}/",
                        "build", BOARD, "--out", str(out), "-q", "--workers", "2"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 1 and one_line_error(p.stderr), p.stderr
    assert "disk full" in p.stderr and str(out) in p.stderr and finished in p.stderr
    m = soak.read_manifest(out)
    if stage == "forward":
        assert m.finished_plies("forward") == list(range(ply))
    else:
        assert m.finished_plies("backward") == list(range(ply + 1, 21))
    assert not list(out.rglob("*.tmp"))   # the failed write removed its temporary file
    code, err = resume(out, "-q")
    assert code == 0, err
    assert soak.sha256_file(out / TABLE) == reference[0]


def test_file_size_limit_is_reported_like_a_full_disk(built, tmp_path):
    """A build under ``ulimit -f`` smaller than its table (EFBIG, errno 27) says where, what is
    kept and "rerun to resume", as a full disk does; the rerun without the limit finishes."""
    import resource
    out = tmp_path / "b"
    limit = 200 << 10                  # the 4x4 table has 322,164 bytes, its shards less

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    p = subprocess.run([sys.executable, "-m", "c4table.cli.main", "build", "4x4", "--out", str(out), "-q",
                        "--workers", "1"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       preexec_fn=small_files)
    assert p.returncode == 1 and one_line_error(p.stderr), p.stderr
    assert "file size limit reached" in p.stderr and str(out) in p.stderr, p.stderr
    assert "connect4_4x4.dat" in p.stderr and "ulimit -f" in p.stderr and "rerun" in p.stderr, p.stderr
    assert "Errno" not in p.stderr
    code, _, err = cli("build", "4x4", "--out", out, "--workers", 1)
    assert code == 0, err
    assert "[forward] ply" not in err       # the finished generations were kept, not redone
    assert soak.sha256_file(out / "connect4_4x4.dat") == soak.sha256_file(built("4x4") / "connect4_4x4.dat")


WORKER_DEATH_DRIVER = fault_driver("os.kill(os.getpid(), signal.SIGKILL)")   # the OOM killer


@pytest.mark.slow
def test_worker_process_killed_is_one_line_and_resumable(reference, tmp_path):
    out = tmp_path / "b"
    # ply 14: two tasks on 2 workers, run by the pool (a stage of one task runs in the driver)
    p = subprocess.run([sys.executable, "-c", WORKER_DEATH_DRIVER, "work/backward/ply_14/",
                        "build", BOARD, "--out", str(out), "-q", "--workers", "2"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 1 and one_line_error(p.stderr), p.stderr
    assert "worker process died" in p.stderr
    assert soak.read_manifest(out).finished_plies("backward") == list(range(15, 21))
    code, err = resume(out, "-q")
    assert code == 0, err
    assert soak.sha256_file(out / TABLE) == reference[0]


@pytest.mark.slow
def test_free_disk_check_refuses_with_needed_and_free(reference, tmp_path, monkeypatch):
    from c4table.pipeline.runtime import resources
    from c4table.pipeline.stages.build import build_table
    free = {"bytes": 1 << 40}

    def fake_free(path):
        # generation 11 written: the next check is for generation 12 (the manifest on disk
        # may lag: steps are saved at most once a second, and all of them when the build stops)
        if (tmp_path / "work" / "forward" / "ply_11").is_dir():
            free["bytes"] = 300_000
        return free["bytes"]
    monkeypatch.setattr(resources, "free_bytes", fake_free)
    with pytest.raises(resources.DiskFullError) as e:
        build_table(BOARD, tmp_path, workers=1, quiet=True)
    msg = str(e.value)
    assert isinstance(e.value, BuildError) and "\n" not in msg
    assert "not enough free disk" in msg and "forward generation 12" in msg
    assert "300,000 bytes" in msg and "needs about" in msg
    need = int(msg.split("needs about ")[1].split("(")[1].split(" bytes")[0].replace(",", ""))
    assert need > 300_000
    assert len(soak.read_manifest(tmp_path).finished_plies("forward")) == 12
    monkeypatch.setattr(resources, "free_bytes", lambda path: 1 << 40)
    path = build_table(BOARD, tmp_path, workers=1, quiet=True)
    assert soak.sha256_file(path) == reference[0]


def test_forward_disk_estimate_covers_each_step_without_counting_runs_twice(tmp_path, monkeypatch):
    """Each forward step's free-disk estimate covers what that step really wrote (generation
    g+1's shards and the runs of g+2 its merge tasks spill, measured on disk at the next check,
    before anything is deleted), and no longer counts the runs of g+1 that the previous step
    already wrote, nor prices runs at the 8-bytes-a-key bound once their real size is known."""
    from c4table.pipeline.stages import forward
    from c4table.pipeline.runtime import resources
    from c4table.pipeline.stages.build import build_table
    from c4table.io.storage import open_storage
    store = open_storage(str(tmp_path))
    seen = []   # (ply announced by the check, need, need without the measured runs)
    real_need = resources.forward_need

    def spy(m, st, ply, and_next=False, runs_written=None):
        need = real_need(m, st, ply, and_next, runs_written)
        seen.append((ply, need, real_need(m, st, ply, and_next), store.tree_size(forward.gen_dir(ply))
                     + store.tree_size(forward.runs_dir(ply + 1)), runs_written))
        return need
    monkeypatch.setattr(resources, "forward_need", spy)
    build_table(BOARD, tmp_path, workers=1, quiet=True)
    fused = [x for x in seen if x[4] is not None]
    assert len(fused) >= soak.cells_of(BOARD) - 3
    by_ply = {ply: (need, old) for ply, need, old, _, _ in seen}
    assert sum(x[1] for x in fused) < sum(x[2] for x in fused)   # tiny plies: index headers
    for ply, need, old, _, runs_written in fused:
        assert runs_written > 0
        nxt = [w for p, _, _, w, _ in seen if p == ply + 1]
        if nxt:   # written by step ply: generation ply+1's shards and ply+2's runs
            assert by_ply[ply][0] >= nxt[0], (ply, by_ply[ply][0], nxt[0])


def test_backward_disk_estimate_covers_each_step_priced_by_what_was_sent(tmp_path, monkeypatch):
    """Each backward step's free-disk estimate covers what that step really wrote (its
    backward shards and the messages it sent, measured on disk at the next check), and once a
    step has sent, prices the messages by what it sent per position rather than by the bound
    of 8 bytes a position (which stopped a 7x5 build needing 52 GiB for about 12)."""
    from c4table.pipeline.stages import backward
    from c4table.pipeline.runtime import resources
    from c4table.pipeline.stages.build import build_table
    from c4table.io.storage import open_storage
    store = open_storage(str(tmp_path))
    seen = {}   # ply -> (need, need at the bound, bytes now under the last step's output)
    real_need, real_sent = resources.backward_need, resources.sent_bytes

    def at_bound(m, st, ply):
        monkeypatch.setattr(resources, "sent_bytes", lambda m, st, ply: None)
        try:
            return real_need(m, st, ply)
        finally:
            monkeypatch.setattr(resources, "sent_bytes", real_sent)

    def spy(m, st, ply):
        done = ply + 1
        written = store.tree_size(backward.gen_dir(done)) + store.tree_size(backward.messages_dir(ply)) \
            if m.step("backward", done) else None
        seen[ply] = (real_need(m, st, ply), at_bound(m, st, ply), written)
        return seen[ply][0]
    monkeypatch.setattr(resources, "backward_need", spy)
    build_table(BOARD, tmp_path, workers=1, quiet=True)
    cells = soak.cells_of(BOARD)
    assert sorted(seen) == list(range(cells + 1))
    for ply in range(cells):   # the check for ply saw what step ply + 1 wrote
        need_next, _, written = seen[ply]
        assert written is not None and written > 0
        assert seen[ply + 1][0] >= written, (ply + 1, seen[ply + 1][0], written)
    m = resources.MARGIN_BYTES
    big = [p for p in range(1, cells) if seen[p][1] - m > 100_000]
    assert len(big) >= 3
    for p in big:   # priced by what was sent: well under the bound of 8 bytes a position
        assert seen[p][0] - m < (seen[p][1] - m) / 2, (p, seen[p])


def _mount_tmpfs(path: Path, size: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True)
    return r.returncode == 0


@pytest.mark.slow
@pytest.mark.parametrize("skip_check", [True, False])
def test_tiny_filesystem(reference, tmp_path, skip_check):
    """A real full disk: a 10 MiB tmpfs (needs root). With the free-disk check off the writes hit
    ENOSPC; with it on the check refuses first. Either way the finished steps survive and the
    build finishes once there is room."""
    mnt = tmp_path / "mnt"
    if not _mount_tmpfs(mnt, "10m"):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        out = mnt / "b"
        env = {"C4TABLE_SKIP_DISK_CHECK": "1"} if skip_check else {}
        code, _, err = cli("build", BOARD, "--out", out, "-q", "--workers", 2, env=env)
        assert code == 1 and one_line_error(err), err
        assert ("disk full" if skip_check else "not enough free disk") in err
        m = soak.read_manifest(out)
        assert m is not None and len(m.finished_plies("forward")) > 5
        finished = {s.file: s.xxh64 for st in ("forward", "backward")
                    for p in m.finished_plies(st) for s in m.shards(st, p)}
        subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
        code, _, err = cli("build", BOARD, "--out", out, "-q", "--workers", 2, env=env)
        assert code == 0, err
        m2 = soak.read_manifest(out)
        for st in ("forward", "backward"):   # finished steps were kept, not redone differently
            for p in m2.finished_plies(st):
                for s in m2.shards(st, p):
                    assert finished.get(s.file, s.xxh64) == s.xxh64
        assert soak.sha256_file(out / TABLE) == reference[0]
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


# ------------------------------------------------------------------ memory, bad input
def test_memory_budget_too_small(tmp_path):
    code, _, err = cli("build", BOARD, "--out", tmp_path / "b", "--workers", 2, "--memory", "1MiB")
    assert code == 2 and one_line_error(err), err   # bad input, like an unknown board
    assert "too small" in err and "--memory" in err


@pytest.mark.slow
def test_second_build_in_same_directory_is_refused(reference, tmp_path):
    # a build finished in this (pytest) process has given its lock back
    code, _, err = cli("build", BOARD, "--out", reference[1], "-q", "--workers", 1)
    assert code == 0, err
    out = tmp_path / "b"
    # 5x5 (killed below): a 5x4 build can finish before the second process has started
    p = soak.start_build(soak.build_cmd("5x5", out, workers=1))
    try:
        assert soak.wait_for_stage(p, out, "forward", 1)
        code, _, err = cli("build", "5x5", "--out", out, "-q", "--workers", 1)
        assert code == 2 and one_line_error(err) and "another c4table process" in err, err
    finally:
        soak.kill_group(p)


@pytest.mark.parametrize("argv", [
    ["build", "0x4"], ["build", "4x0"], ["build", "9x9"], ["build", "x"], ["build", "5x4x3"],
    ["build", "-5x4"], ["build", "5x4", "--workers", "0"], ["build", "5x4", "--workers", "many"],
    ["build", "5x4", "--memory", "-3GiB"], ["build", "5x4", "--memory", "1.5.2G"],
    ["build", "5x4", "--bogus"], ["forward", "5x4", "--max-ply", "-1"], ["backward", "3by3"],
    ["merge", "1x99"], ["nosuchcommand"], ["lookup"], ["lookup", "--table"],
    ["lookup", "--table", "/nonexistent/connect4_5x4.dat", "1"], ["verify"],
    ["verify", "/nonexistent/connect4_5x4.dat"], ["verify", "--sha256", "xyz", "f.dat"],
    ["--no-such-flag"],
])
def test_malformed_command_lines_one_line_exit_2(argv, tmp_path, capsys):
    from c4table.cli.main import main
    argv = [a if a != "f.dat" else str(tmp_path / "f.dat") for a in argv]
    if argv[0] in ("build", "forward", "backward", "merge") and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2, (argv, err)
    assert one_line_error(err), (argv, err)


@pytest.mark.slow
def test_lookup_bad_input_end_to_end(reference):
    t = reference[1] / TABLE
    for bad in ["0", "66", "1 2", "12a", "111111", "\u0663"]:
        code, _, err = cli("lookup", "--table", t, bad)
        assert code == 2 and one_line_error(err), (bad, err)
    code, out, err = cli("lookup", "--json", "--table", t, "-", stdin="3344\n\u00e9\n1\n")
    assert code == 2 and one_line_error(err) and "1 of 3 positions" in err
    assert [("error" in json.loads(x)) for x in out.splitlines()] == [False, True, False]
