"""The command line as a user runs it: lookup answers (text, JSON, stdin batches), bad input
(one line, exit 2), verify verdicts (exit 0 / 1) on good, wrong and damaged tables."""
import json
import shutil

import pytest

from c4table.builddir.manifest import Manifest
from c4table.open import open_table
from conftest import run_cli

pytestmark = pytest.mark.slow   # every test here takes seconds (make check leaves them out)


run = run_cli


def test_lookup_json_shape_and_consistency(t54):
    code, out, err = run("lookup", "--json", "--table", str(t54), "3344", "")
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["position"] for x in lines] == ["3344", ""]
    for obj in lines:
        assert obj["outcome"] in ("A", "B", "draw")
        assert obj["ply"] == len(obj["position"])
        assert [m["column"] for m in obj["moves"]] == [1, 2, 3, 4, 5]
        mover = "A" if obj["ply"] % 2 == 0 else "B"
        # the position's value is the value of its best move
        wins = [m["distance"] for m in obj["moves"] if m["outcome"] == mover]
        draws = [m for m in obj["moves"] if m["outcome"] == "draw"]
        if wins:
            assert (obj["outcome"], obj["distance"]) == (mover, min(wins))
        elif draws:
            assert obj["outcome"] == "draw"
        else:
            assert obj["distance"] == max(m["distance"] for m in obj["moves"])


def test_lookup_terminal_position(t54):
    code, out, _ = run("lookup", "--json", "--table", str(t54), "1212121")
    obj = json.loads(out)
    assert code == 0 and obj["outcome"] == "A" and obj["distance"] == 0 and obj["moves"] == []
    assert obj["terminal"] is True


def test_lookup_mirror_positions_agree(t54):
    with open_table(t54) as t:
        for s in ["1", "12", "3344", "1525", "2234451"]:
            mirror = "".join(str(6 - int(c)) for c in s)
            a, b = t.probe(s), t.probe(mirror)
            assert (a.outcome, a.distance) == (b.outcome, b.distance)
            assert [(m.outcome, m.distance) for m in a.moves] == \
                   [(m.outcome, m.distance) for m in reversed(b.moves)]


@pytest.mark.parametrize("bad", ["6", "x", "11111", "12121212"])
def test_lookup_bad_position_one_line_exit_2(t54, bad):
    code, out, err = run("lookup", "--table", str(t54), bad)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("c4table: error:") and "Traceback" not in err


def test_lookup_stdin_batch_answers_every_line(t54):
    code, out, err = run("lookup", "--json", "--table", str(t54), "-", stdin="3344\n9\n\n11111\n1\n")
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["position"] for x in lines] == ["3344", "9", "", "11111", "1"]
    assert "error" in lines[1] and "error" in lines[3]
    assert "outcome" in lines[0] and "outcome" in lines[2] and "outcome" in lines[4]
    assert code == 2


def test_lookup_missing_table(tmp_path):
    code, _, err = run("lookup", "--table", str(tmp_path / "connect4_5x4.dat"), "1")
    assert code == 2 and "no such table file" in err


def test_lookup_unknown_board_name(tmp_path, t54):
    """A table not named connect4_WxH.dat: a known table's size tells its board (as verify
    does); a file of no known size needs --board."""
    other = tmp_path / "mytable.dat"
    shutil.copy(t54, other)
    code, out, err = run("lookup", "--table", str(other), "3344")
    assert code == 0 and "board 5x4" in out and "A wins" in out, err
    code, out, _ = run("verify", "-q", str(other))
    assert code == 0 and "board    5x4" in out
    odd = tmp_path / "odd.dat"
    odd.write_bytes(t54.read_bytes()[: 1000 * 4])
    code, _, err = run("lookup", "--table", str(odd), "1")
    assert code == 2 and "--board" in err and "cannot tell the board" in err
    code, out, _ = run("lookup", "--table", str(other), "--board", "5x4", "3344")
    assert code == 0 and "A wins" in out


def test_lookup_stdin_empty_line_is_the_empty_board(t54):
    """An empty (or blank) stdin line is the empty board, as "" is on the command line and as
    the --json output writes it (docs/cli.md)."""
    code, out, err = run("lookup", "--table", str(t54), "-", stdin="33\n\n  \n")
    heads = [line for line in out.splitlines() if "board 5x4" in line]
    assert code == 0 and len(heads) == 3, (out, err)
    assert heads[1].startswith("(empty)  board 5x4, ply 0") and heads[2].startswith("(empty)")
    _, empty, _ = run("lookup", "--table", str(t54), "")
    assert out.split("(empty)")[1] == empty.split("(empty)")[1]
    code, out, _ = run("lookup", "--json", "--table", str(t54), "", "3344")
    code2, again, _ = run("lookup", "--json", "--table", str(t54), "-",
                          stdin="".join(json.loads(x)["position"] + "\n" for x in out.splitlines()))
    assert code == code2 == 0 and again == out          # the output's positions read back


def test_label_missing_input_is_bad_input(tmp_path, t54):
    for src in [tmp_path / "nosuch.txt", tmp_path / "nosuch.parquet", tmp_path]:
        code, _, err = run("label", "--table", str(t54), str(src), "--out", str(tmp_path / "o.parquet"))
        assert code == 2 and err.count("\n") == 1 and str(src) in err and "Traceback" not in err, err
    assert not (tmp_path / "o.parquet").exists()


def test_bad_board_names_every_form_accepted(tmp_path):
    code, _, err = run("build", "9x9x9x9", "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert "7x6" in err and "5x4k3" in err and "3D" in err and "2x2x4" in err


def test_verify_ok_and_given_hash(t54):
    code, out, _ = run("verify", "-q", str(t54))
    assert code == 0 and out.splitlines()[-1].startswith("OK")
    code, out, _ = run("verify", "-q", str(t54), "--sha256", "0" * 64)
    assert code == 1 and out.splitlines()[-1].startswith("MISMATCH")


def test_verify_detects_truncation_and_disorder(tmp_path, t54):
    d = tmp_path / "t"
    d.mkdir()
    data = bytearray(t54.read_bytes())
    (d / "connect4_5x4.dat").write_bytes(data[:-3])
    code, out, _ = run("verify", "-q", str(d / "connect4_5x4.dat"))
    assert code == 1 and "multiple" in out
    swapped = data[:]
    swapped[5000:5005], swapped[5005:5010] = data[5005:5010], data[5000:5005]
    (d / "connect4_5x4.dat").write_bytes(swapped)
    code, out, _ = run("verify", "-q", str(d / "connect4_5x4.dat"))
    assert code == 1 and "not greater" in out


def test_bad_board_and_memory_arguments(tmp_path):
    code, _, err = run("build", "9x9", "--out", str(tmp_path))
    assert code == 2 and "64" in err and "Traceback" not in err
    code, _, err = run("build", "4x4", "--out", str(tmp_path), "--memory", "lots")
    assert code == 2 and "bad size" in err


def test_verify_checks_per_ply_counts_of_known_tables(built, tmp_path):
    d = tmp_path / "t"
    shutil.copytree(built("4x4"), d, ignore=shutil.ignore_patterns("work", ".lock"))
    code, out, _ = run("verify", "-q", str(d / "connect4_4x4.dat"))
    assert code == 0 and "per-ply counts match the known table" in out
    m = json.loads((d / "manifest.json").read_text())
    m.pop("xxh64", None)                      # an edited manifest, its checksum recomputed
    m["plies"][7]["draws"] += 2
    Manifest(d, m).save()
    code, out, _ = run("verify", "-q", str(d / "connect4_4x4.dat"))
    assert code == 1 and "ply 7 draws" in out
