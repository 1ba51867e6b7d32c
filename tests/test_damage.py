"""A damaged ``.dat`` never answers wrongly: random bytes and random bits of copies of the 4x4 and
5x4 tables are flipped, with and without their block sums (``TABLE.dat.sums``), and the
positions around each flip are asked of every reader -- the ``lookup`` and ``best`` commands,
:func:`c4table.open_table` (probe, best moves, wdl), :class:`~c4table.table.fastprobe.FastProber`
(the server's), ``label``, ``export --per-move`` and ``stats``. The evidence is the undamaged
table: each answer must be identical to its answer, or a refusal with
:class:`~c4table.errors.TableDamaged` (exit 1 and a one-line error naming the file on the
command line). Without sums, an outcome byte its ply cannot have is still refused, and the
table says once that it is unchecked.

``C4TABLE_DAMAGE_TRIALS`` sets the flips per table and mode (default 6); with
``C4TABLE_DAMAGE_REPORT=FILE`` the tallies are appended to FILE as JSON lines (the figures of
docs/measurements/2026-11-27-dat-sums.md).
"""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash

from c4table.analysis.decode import decode_entries
from c4table.analysis.export import export_positions, move_orders
from c4table.analysis.label import label_file
from c4table.analysis.stats import scan_stats
from c4table.errors import C4Error, TableDamaged
from c4table.game.rules import Position
from c4table.open import open_table
from c4table.table.fastprobe import FastProber
from c4table.table.search import xxh64
from c4table.table.sums import BLOCK_ENTRIES, BlockSums, impossible, sums_path
from conftest import run_cli

TRIALS = int(os.environ.get("C4TABLE_DAMAGE_TRIALS", "6"))
DAMAGED = "DAMAGED"


# ------------------------------------------------------------------------------ evidence
def test_xxh64_kernel_is_xxhash():
    """The readers' numba xxh64 gives the digest of the xxhash package that writes the sums."""
    rng = np.random.default_rng(7)
    for n in [0, 1, 3, 4, 7, 8, 31, 32, 33, 63, 64, 1000, BLOCK_ENTRIES * 7 + 5]:
        for off in (0, 3, 8):
            d = rng.integers(0, 256, n + off).astype(np.uint8)
            assert int(xxh64(d, off, n + off)) == xxhash.xxh64_intdigest(d[off:].tobytes())


def test_block_sums_any_chunking():
    """The sums of a stream fed in chunks of any size are the xxh64 of each block."""
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 4 * (3 * 16 + 5)).astype(np.uint8).tobytes()
    want = [xxhash.xxh64_intdigest(data[i: i + 64]) for i in range(0, len(data), 64)]
    for sizes in ([len(data)], [1] * len(data), [5, 64, 63, 1000], [64] * 4 + [100]):
        s = BlockSums(4, block_entries=16)
        at = 0
        for n in sizes:
            s.update(data[at: at + n])
            at += n
        assert s.finish().tolist() == want


@pytest.mark.parametrize("board", ["4x4", "5x4"])
def test_ply_rule_holds_on_whole_tables(built, board):
    """No entry of a whole table is refused by the outcome-byte rule (it refuses only damage)."""
    with open_table(built(board) / f"connect4_{board}.dat") as t:
        for chunk in t.iter_entries():
            _, plies, _, _ = decode_entries(t.board, chunk["key"])
            assert not impossible(chunk["outcome"], plies, t.board.cells, t.board.k).any()


def test_merge_and_verify_write_the_same_sums(built, tmp_path):
    """The merge writes the sidecar; ``verify --write-sums`` writes the same bytes for a table
    that came without it (e.g. Cadot's), and ``verify`` then says they match."""
    src = built("4x4") / "connect4_4x4.dat"
    merged = sums_path(src).read_bytes()
    copy = tmp_path / "connect4_4x4.dat"
    shutil.copy(src, copy)
    rc, out, err = run_cli("verify", "-q", str(copy))
    assert rc == 0 and "sums     absent" in out
    rc, out, err = run_cli("verify", "-q", "--write-sums", str(copy))
    assert rc == 0 and "sums     written" in out, out + err
    assert sums_path(copy).read_bytes() == merged
    rc, out, err = run_cli("lookup", "--table", str(copy), "3344")
    assert rc == 0 and err == ""          # checked: no warning
    rc, out, err = run_cli("verify", "-q", str(copy))
    assert rc == 0 and "sums     match" in out


def test_unchecked_table_warns_once(built, tmp_path, capsys):
    copy = tmp_path / "connect4_4x4.dat"
    shutil.copy(built("4x4") / "connect4_4x4.dat", copy)
    for _ in range(2):
        with open_table(copy) as t:
            assert t.probe("2233").outcome == "draw"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unchecked" in err and str(copy) in err


def test_damaged_or_foreign_sums_refused(built, tmp_path):
    """A sidecar whose header is damaged, or that describes another table, is refused."""
    copy = tmp_path / "connect4_4x4.dat"
    shutil.copy(built("4x4") / "connect4_4x4.dat", copy)
    good = sums_path(built("4x4") / "connect4_4x4.dat").read_bytes()
    sums_path(copy).write_bytes(good[:20] + bytes([good[20] ^ 1]) + good[21:])
    with pytest.raises(TableDamaged, match="header"):
        open_table(copy)
    sums_path(copy).write_bytes(sums_path(built("5x4") / "connect4_5x4.dat").read_bytes())
    with pytest.raises(TableDamaged, match="for 5-byte entries"):
        open_table(copy)


def test_impossible_byte_named_on_the_command_line(built, tmp_path):
    """The issue's ``0xf7``: without sums refused as an impossible byte, with sums as a damaged
    block; both one line naming the file, exit 1."""
    src = built("4x4") / "connect4_4x4.dat"
    with open_table(src) as t:
        key = Position.from_moves(t.board, "2233").key()
        i = int(np.searchsorted(keys_of(t), np.uint64(key)))
    for with_sums in (False, True):
        d = tmp_path / f"s{int(with_sums)}"
        copy = copy_table(src, d, with_sums)
        flip_at(copy, i * 4 + 3, 0xF7)
        rc, out, err = run_cli("lookup", "--table", str(copy), "2233")
        last = err.strip().splitlines()[-1]
        assert rc == 1 and str(copy) in last and "damaged" in last, err
        assert "internal error" not in err


# ------------------------------------------------------------------------------ trials
def keys_of(t) -> np.ndarray:
    return np.concatenate([c["key"] for c in t.iter_entries()])


def copy_table(src: Path, d: Path, with_sums: bool = True) -> Path:
    """A copy of the table ``src`` in ``d`` (made if missing), with its block sums unless not
    ``with_sums``."""
    d.mkdir(parents=True, exist_ok=True)
    out = d / src.name
    shutil.copy(src, out)
    if with_sums:
        shutil.copy(sums_path(src), sums_path(out))
    return out


def flip_at(path: Path, offset: int, value: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes([value]))


def around(t, keys: np.ndarray, i: int) -> list[str]:
    """Move strings of entry ``i``, its neighbours in the file, a parent and the children."""
    lo, hi = max(i - 1, 0), min(i + 2, len(keys))
    codes, plies, _, _ = decode_entries(t.board, keys[lo:hi])
    strings = move_orders(t.board, codes, plies)
    me = strings[i - lo]
    out = list(strings)
    if me:
        out.append(me[:-1])
    pos = Position.from_moves(t.board, me)
    if not pos.is_terminal:
        out += [me + str(c + 1) for c in pos.legal_moves()]
    return out


def answers(path: Path, positions: list[str], ply: int, work: Path) -> dict:
    """Each reader's answers about ``positions`` (and ply ``ply`` for export), or DAMAGED."""
    out: dict = {}

    def run(name, fn):
        try:
            out[name] = fn()
        except TableDamaged:
            out[name] = DAMAGED
        except C4Error as e:     # another refusal: compared with the undamaged table's
            out[name] = f"{type(e).__name__}: {e}".replace(str(path), "T")
    try:
        t = open_table(path)
    except TableDamaged:
        return {k: DAMAGED for k in ("probe", "best", "wdl", "fast", "label", "export", "stats")}
    with t:
        def probes():
            res = []
            for p in positions:
                try:
                    res.append(t.probe(p).to_json())
                except TableDamaged:
                    raise
                except C4Error as e:
                    res.append(f"{type(e).__name__}: {e}".replace(str(path), "T"))
            return res

        def fast():
            fp = FastProber.for_table(t)
            try:
                return [r.to_json() if not isinstance(r, Exception) else
                        f"{type(r).__name__}: {r}".replace(str(path), "T")
                        for r in fp.probe_many(positions)]
            finally:
                fp.close()

        run("probe", probes)
        run("best", lambda: [[m.column for m in t.best_moves(p)] for p in positions])
        run("wdl", lambda: t.wdl_many(positions).tolist())
        run("fast", fast)
        src = work / "positions.txt"
        src.write_text("\n".join(positions) + "\n")

        def label():
            label_file(t, src, work / "label.parquet")
            return pq.read_table(work / "label.parquet").drop(["error"]).to_pylist()

        def export():
            export_positions(t, work / "export.parquet", ply, per_move=True, source="table")
            return pq.read_table(work / "export.parquet").to_pylist()

        run("label", label)
        run("export", export)
        run("stats", lambda: [s.__dict__ for s in scan_stats(t)])
    return out


def cli_answers(path: Path, positions: list[str]) -> dict:
    out = {}
    for cmd in ("lookup", "best"):
        rc, stdout, err = run_cli(cmd, "--json", "--table", str(path), *positions)
        lines = err.strip().splitlines()
        if rc == 1 and lines and "damaged" in lines[-1] and str(path) in lines[-1]:
            out[cmd] = DAMAGED
        else:
            assert "internal error" not in err, err
            out[cmd] = (rc, stdout)
    return out


def same_or_refused(got, want) -> bool:
    return got == DAMAGED or got == want


@pytest.mark.slow
@pytest.mark.parametrize("board", ["4x4", "5x4"])
@pytest.mark.parametrize("mode", ["byte", "bit"])
def test_flips_never_answer_wrongly(built, tmp_path, board, mode, capsys):
    src = built(board) / f"connect4_{board}.dat"
    rng = random.Random(f"{board}-{mode}")
    tally = {"board": board, "mode": mode, "sums": {"tried": 0, "refused": 0, "answered": 0, "wrong": 0},
             "none": {"tried": 0, "refused": 0, "answered": 0, "wrong": 0, "impossible": 0}}
    with open_table(src) as ref:
        keys = keys_of(ref)
        E = ref.entry_size
        for trial in range(TRIALS):
            i = rng.randrange(len(keys))
            at = rng.randrange(E)
            old = int(np.fromfile(src, np.uint8, 1, offset=i * E + at)[0])
            new = old ^ (1 << rng.randrange(8)) if mode == "bit" else \
                rng.choice([v for v in range(256) if v != old])
            positions = around(ref, keys, i)
            ply = int(decode_entries(ref.board, keys[i:i + 1])[1][0])
            work = tmp_path / f"w{trial}"
            work.mkdir()
            want = answers(src, positions, ply, work)
            cli = trial % 3 == 0
            want_cli = cli_answers(src, positions) if cli else {}
            bad_byte = at == E - 1 and bool(impossible([new], [ply], ref.board.cells, ref.board.k)[0])
            for with_sums in (True, False):
                copy = copy_table(src, tmp_path / f"t{trial}-{int(with_sums)}", with_sums)
                flip_at(copy, i * E + at, int(new))
                capsys.readouterr()
                got = answers(copy, positions, ply, work)
                if cli:
                    got_cli = cli_answers(copy, positions)
                    got.update(got_cli)
                err = capsys.readouterr().err
                t = tally["sums" if with_sums else "none"]
                for reader, g in got.items():
                    w = want_cli[reader] if reader in want_cli else want[reader]
                    t["tried"] += 1
                    t["refused"] += g == DAMAGED
                    t["answered"] += g != DAMAGED and g == w
                    t["wrong"] += not same_or_refused(g, w)
                    if with_sums:
                        assert same_or_refused(g, w), (reader, board, i, at, old, new)
                if not with_sums:
                    assert "unchecked" in err
                    if bad_byte:      # the flipped entry's own position is refused by every reader
                        t["impossible"] += 1
                        assert got["probe"] == DAMAGED and got["fast"] == DAMAGED
                        assert got["label"] == DAMAGED and got["export"] == DAMAGED
                        assert got["stats"] == DAMAGED
    report = os.environ.get("C4TABLE_DAMAGE_REPORT")
    if report:
        with open(report, "a") as f:
            f.write(json.dumps(tally) + "\n")


def test_the_server_refuses_a_damaged_block_in_words(built, tmp_path):
    """Over HTTP: a damaged table is refused when the server opens it, or every position around
    the flipped byte is the undamaged table's answer or a 500 that says the table is damaged
    (never a wrong answer, never an anonymous internal error)."""
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    from starlette.testclient import TestClient
    from c4table.serve.app import create_app
    src = built("4x4") / "connect4_4x4.dat"
    rng = random.Random("serve")
    with open_table(src) as ref:
        keys = keys_of(ref)
        E = ref.entry_size
        refused = 0
        for trial in range(4):
            i = rng.randrange(len(keys))
            positions = around(ref, keys, i)
            copy = copy_table(src, tmp_path / f"t{trial}", with_sums=True)
            flip_at(copy, i * E + E - 1, int(np.fromfile(src, np.uint8, 1, offset=i * E + E - 1)[0]) ^ 0x10)
            try:
                app = create_app([copy])
            except TableDamaged as e:   # the server's index reads every block: refused at start
                assert copy.name in str(e)
                refused += 1
                continue
            hit = False
            with TestClient(create_app([src]), raise_server_exceptions=False) as good, \
                    TestClient(app, raise_server_exceptions=False) as bad:
                for p in positions:
                    want = good.get("/api/4x4", params={"moves": p})
                    got = bad.get("/api/4x4", params={"moves": p})
                    if got.status_code == 500:
                        hit = True
                        assert "damaged" in got.text, got.text
                    else:
                        assert (got.status_code, got.json()) == (want.status_code, want.json()), p
            refused += hit
        assert refused == 4   # at start, or at least the flipped entry's own position
