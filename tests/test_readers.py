"""Readers never trust damaged data (issue 11 item 5, issue 12 items 4, 5, 16): the build
directory reader (c4table.builddir) refuses damaged manifests and shards; a table is checked
against its manifest or the known tables when it opens; the Python API raises C4Error
subclasses; and the bit-flip experiment: every single-bit flip of a small build's shards and
manifest is detected or provably harmless (output byte-identical)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import c4table
from c4table.game.board import Board
from c4table.builddir.reader import BuildDir
from c4table.errors import C4Error, ClosedTableError, CorruptDataError, IllegalPositionError, TableError
from c4table.open import open_table
from conftest import run_cli

run = run_cli


def copy_table(src_dir: Path, dst: Path, name: str = "connect4_5x4.dat", manifest: bool = False) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src_dir / name, dst / name)
    if manifest:
        shutil.copy(src_dir / "manifest.json", dst / "manifest.json")
    return dst / name


def one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("c4table: error:") and "Traceback" not in err


# ------------------------------------------------------------------ damaged manifests
@pytest.mark.parametrize("command, text", [
    *((c, t) for c in ("lookup", "stats", "export", "crosscheck") for t in ("[]", "{not json")),
    ("lookup", '"a string"'), ("stats", "{}")])
def test_manifest_that_is_not_a_manifest_is_one_line_exit_1(d54, tmp_path, command, text):
    t = copy_table(d54, tmp_path / "t")
    m = t.parent / "manifest.json"
    m.write_text(text)
    args = {"lookup": ["lookup", "--table", str(t), "3344"],
            "stats": ["stats", str(t.parent)],
            "export": ["export", "--table", str(t), "--ply", "4", "--out", str(tmp_path / "o.parquet"), "-q"],
            "crosscheck": ["crosscheck", str(t.parent), "-q"]}[command]
    code, out, err = run(*args)
    assert code == 1 and one_line(err) and str(m) in err, (code, out, err)
    assert out == "" and not (tmp_path / "o.parquet").exists()


def test_verify_reports_a_manifest_that_is_not_an_object(d54, tmp_path):
    t = copy_table(d54, tmp_path / "t")
    (t.parent / "manifest.json").write_text("[]")
    code, out, err = run("verify", "-q", str(t))
    assert code == 1 and "manifest.json: not a manifest" in out and "Traceback" not in err


def test_crosscheck_refuses_a_manifest_edited_without_its_checksum(d54, tmp_path):
    d = tmp_path / "b"
    d.mkdir()
    data = json.loads((d54 / "manifest.json").read_text())
    data["plies"][7]["a_wins"] += 1
    data["plies"][8]["draws"] -= 1
    (d / "manifest.json").write_text(json.dumps(data))
    code, out, err = run("crosscheck", str(d), "-q")
    assert code == 1 and one_line(err) and "checksum" in err and "MISMATCH" not in out


def test_export_refuses_a_damaged_backward_shard(d54, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(d54, d, ignore=shutil.ignore_patterns(".lock"))
    (shard,) = sorted((d / "work" / "backward" / "ply_08").glob("*.shard"))[:1]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x10
    shard.write_bytes(data)
    out = tmp_path / "p8.parquet"
    code, _, err = run("export", "--table", str(d / "connect4_5x4.dat"), "--ply", "8", "--out", str(out), "-q")
    assert code == 1 and one_line(err) and str(shard) in err and "checksum" in err
    assert not out.exists()


# ---------------------------------------------------------------- tables checked at open
@pytest.mark.slow
def test_table_truncated_on_an_entry_boundary_is_refused_at_open(d54, tmp_path):
    for with_manifest in (False, True):
        t = copy_table(d54, tmp_path / f"t{with_manifest}", manifest=with_manifest)
        data = t.read_bytes()
        t.write_bytes(data[: len(data) - 5 * 1000])        # 1,000 whole entries fewer
        ref = "its manifest" if with_manifest else "known table 5x4"
        code, out, err = run("lookup", "--table", str(t), "-", stdin="3344\n\n12345\n" * 50)
        assert code == 1 and out == "" and one_line(err), (out, err)
        assert "truncated" in err and ref in err
        code, out, err = run("stats", str(t), "--scan", "-q")
        assert code == 1 and out == "" and one_line(err) and "truncated" in err
        with pytest.raises(TableError, match="truncated"):
            open_table(t)


@pytest.mark.slow
def test_table_renamed_to_another_board_is_refused_and_named(built, tmp_path):
    t45 = built("4x5") / "connect4_4x5.dat"
    d = tmp_path / "r"
    d.mkdir()
    t = d / "connect4_5x4.dat"                  # a 4x5 table under the 5x4 name
    shutil.copy(t45, t)
    assert t.stat().st_size % 5 == 0            # whole 5-byte entries: the size test alone passes
    code, out, err = run("lookup", "--table", str(t), "3344")   # another board's: bad input
    assert code == 2 and out == "" and one_line(err)
    assert "known table 5x4" in err and "known table 4x5" in err
    code, out, err = run("stats", str(t), "-q")
    assert code == 2 and out == "" and one_line(err) and "known table 4x5" in err
    code, out, _ = run("verify", "-q", str(t))
    assert code == 1 and "this file is known table 4x5" in out
    code, out, _ = run("verify", "-q", str(t), "--board", "4x5")   # named right: it is that table
    assert code == 0 and "sha256_tree matches known table 4x5" in out
    anon = d / "mystery.dat"                    # no board in the name: size and hash say which
    shutil.copy(t45, anon)
    code, out, _ = run("verify", "-q", str(anon))
    assert code == 0 and "board    4x5" in out and "sha256_tree matches known table 4x5" in out


def test_table_with_a_wrong_first_key_is_refused(tmp_path):
    t = tmp_path / "connect4_3x3.dat"
    t.write_bytes(bytes([0, 1, 0x09, 0, 2, 0x08]))      # 2-byte keys: the first is 1, not 0
    with pytest.raises(TableError, match="first key is 1, not 0"):
        open_table(t)


# ------------------------------------------------------------------------ Python API
def test_probe_of_a_non_string_and_after_close_raise_c4errors(d54):
    t = c4table.open_table(d54 / "connect4_5x4.dat")
    with pytest.raises(IllegalPositionError, match="move string"):
        t.probe(3344)
    with pytest.raises(IllegalPositionError, match="move string"):
        t.probe(None)
    t.close()
    for call in (lambda: t.probe("3344"), lambda: t.wdl(""), lambda: next(t.iter_entries()),
                 lambda: t.key_at(0)):
        with pytest.raises(ClosedTableError, match="closed") as e:
            call()
        assert isinstance(e.value, C4Error)
    t.close()   # closing twice is harmless


def test_table_docstring_example_is_what_the_table_says(d54):
    import c4table.table.dat as mod
    with open_table(d54 / "connect4_5x4.dat") as t:
        p = t.probe("3344")
        got = (p.outcome, p.distance, [m.column for m in p.best_moves()])
    assert got == ("A", 3, [2])
    assert repr(got) in mod.__doc__


# --------------------------------------------------------------------- the bit flips
BOARD = "3x2"      # 7 plies, 14 shards: about 110,000 flips


REFUSED = "refused"


def _outputs(d: Path, tmp: Path) -> dict:
    """What each reader of the build directory ``d`` outputs, run in process, each on its own:
    stats from the manifest, crosscheck's manifest, lookups, export of every ply from the
    shards, verify's verdict. A reader that refuses the data (C4Error) gives ``REFUSED``."""
    from c4table.bdd.crosscheck import load_manifest
    from c4table.analysis.export import export_positions
    from c4table.analysis.stats import format_table, ply_stats
    from c4table.analysis.verify import verify_table
    table = d / f"connect4_{BOARD}.dat"

    def lookup():
        with open_table(table) as t:
            return repr([t.probe(m) for m in ("", "2", "21", "2132")])

    def export(ply):
        f = tmp / f"p{ply}.parquet"
        export_positions(table, f, ply=ply, source="shards")
        return f.read_bytes()

    def verify():
        rep = verify_table(table, quiet=True)
        return REFUSED if rep.problems else (rep.sha256, rep.matched)

    readers = {"stats": lambda: format_table(ply_stats(d), "tsv"),
               "crosscheck": lambda: json.dumps([str(load_manifest(d)[0].board),
                                                  [r.to_json() for r in load_manifest(d)[0].plies]],
                                                 sort_keys=True),
               "lookup": lookup, "verify": verify}
    readers.update({f"export {p}": (lambda p=p: export(p)) for p in range(Board.parse(BOARD).cells + 1)})
    out = {}
    for name, fn in readers.items():
        try:
            out[name] = fn()
        except C4Error:
            out[name] = REFUSED
    return out


def _classify(fn) -> str:
    try:
        fn()
    except C4Error:
        return "detected"
    return "passed"


@pytest.mark.slow
def test_every_single_bit_flip_is_detected_or_harmless(tmp_path):
    """Flip every bit of every shard and of the manifest of a small build, one at a time. For
    each flip, the reader entry points every command goes through (BuildDir.load for the
    manifest, BuildDir.read_backward / read_shard for a backward shard, BuildDir.shard_problems
    for a forward shard, which only verify reads) must refuse it, or else every reader's output
    must be byte-identical to the clean run. A sample of flips also runs every reader end to
    end, to show they do go through those entry points."""
    from c4table.pipeline.stages.build import build_table
    d = tmp_path / "b"
    build_table(BOARD, d, quiet=True, workers=1)
    scratch = tmp_path / "o"
    scratch.mkdir()
    clean = _outputs(d, scratch)
    assert clean == _outputs(d, scratch)            # the outputs are deterministic
    assert REFUSED not in clean.values()

    files = [d / "manifest.json"] + sorted((d / "work").rglob("*.shard"))
    bits = 8 * sum(f.stat().st_size for f in files)
    tally = {"flips": 0, "detected": 0, "harmless": 0}
    end_to_end = 0
    for f in files:
        orig = f.read_bytes()
        rel = f.relative_to(d).parts
        if rel[0] == "manifest.json":
            quick = lambda: BuildDir.load(d)                                   # noqa: E731
        else:   # the manifest is intact while a shard is flipped: load it once
            bd, stage, ply = BuildDir.load(d), rel[1], int(rel[2].split("_")[1])
            if stage == "backward":     # what export reads
                quick = lambda: list(bd.read_backward(ply))                   # noqa: E731
            else:                       # only verify reads forward shards
                def quick():
                    problems = bd.shard_problems(steps=[(stage, ply)])
                    if problems:
                        raise CorruptDataError(problems[0])
        fd = os.open(f, os.O_RDWR)       # flips are written in place (rewriting is slow)
        for i in range(len(orig) * 8):
            os.pwrite(fd, bytes([orig[i >> 3] ^ (1 << (i & 7))]), i >> 3)
            tally["flips"] += 1
            verdict = _classify(quick)
            if verdict == "passed" or i % 9001 == 0:   # a sample runs every reader end to end
                end_to_end += 1
                got = _outputs(d, scratch)
                wrong = [r for r in got if got[r] not in (REFUSED, clean[r])]
                assert not wrong, f"flip of bit {i} of {f}: {wrong} gave different output, exit 0"
                refused = [r for r in got if got[r] == REFUSED]
                if verdict == "passed":
                    verdict = "detected" if refused else "harmless"   # harmless: all identical
                else:
                    assert refused, (f, i)
            tally[verdict] += 1
            os.pwrite(fd, orig[i >> 3: (i >> 3) + 1], i >> 3)
        os.close(fd)
        assert f.read_bytes() == orig
    assert bits == tally["flips"] == tally["detected"] + tally["harmless"] > 50_000
    assert end_to_end >= 10
    print(f"\nbit flips of a {BOARD} build ({len(files)} files): {tally}, "
          f"{end_to_end} also run through every reader end to end")
