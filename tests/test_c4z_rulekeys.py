"""Format 4 of ``.c4z`` (block codec ``rulekeys-plysym-v4``): its files round-trip to the raw
table's bytes, answer as the raw table does (single probes, ``probe_keys``, absent keys),
stay beside format-3 files written by name, and refuse damage."""
from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest

from c4table import c4z
from c4table.c4z.reader import open_c4z
from c4table.c4z.rulekeys import RuleKeys
from c4table.c4z.writer import compress_table, decompress_table
from c4table.errors import CorruptDataError, TableError
from c4table.open import open_table
from c4table.table.source import keys_of_rows

BLOCKS = 8192     # several blocks and several runs per block on 5x4


@pytest.fixture(scope="module")
def pair(built, tmp_path_factory):
    """The 5x4 table, and its .c4z in format 4 (default) and in format 3 (by name)."""
    d = tmp_path_factory.mktemp("rk54")
    dat = d / "connect4_5x4.dat"
    shutil.copy(built("5x4") / "connect4_5x4.dat", dat)
    v4 = compress_table(dat, d / "v4.c4z", block_entries=BLOCKS, quiet=True, threads=2)
    v3 = compress_table(dat, d / "v3.c4z", block_entries=BLOCKS, quiet=True, threads=2,
                        codec=c4z.TRANSFORM)
    return dat, v4, v3


def test_format_4_is_the_default_and_round_trips_to_the_raw_bytes(pair, tmp_path):
    dat, v4, v3 = pair
    with open_c4z(v4) as f:
        assert (f.header["version"], f.header["transform"]) == (4, c4z.RULE_CODEC)
        assert f.header["run_entries"] == c4z.RUN_ENTRIES < f.block_entries
        assert f.header["sha256"] == hashlib.sha256(dat.read_bytes()).hexdigest()
        # every block coded by the rules (mode 1): a game table has no key outside them
        assert all(f.read_block(i)[0] == 1 for i in range(f.blocks))
        assert c4z.RawStream(f).read() == dat.read_bytes()
    with open_c4z(v3) as f:
        assert (f.header["version"], f.header["transform"]) == (3, c4z.TRANSFORM)
    back = decompress_table(v4, tmp_path / "back.dat", quiet=True)
    assert back.read_bytes() == dat.read_bytes()
    assert v4.stat().st_size < 0.8 * v3.stat().st_size


def test_format_4_answers_as_the_raw_table(pair):
    """Keys from every run of every block (first, last, middle), keys just past them, probed
    one by one from cold blocks and as a batch, in both formats."""
    dat, v4, v3 = pair
    with open_table(dat) as t:
        n = len(t)
        idx = sorted({i for b in range(0, n, c4z.RUN_ENTRIES)
                      for i in (b, b + 1, b + c4z.RUN_ENTRIES // 2, b - 1) if 0 <= i < n})
        keys = np.array([t.key_at(i) for i in idx], np.uint64)
        want = t.probe_keys(keys)
        near = keys + np.uint64(1)
        near_want = t.probe_keys(near, default=-1)
    assert (near_want == -1).any()
    for z in (v4, v3):
        with open_table(z) as t:
            got = []
            for k in keys:
                t.c4z.clear_cache()
                got.append(t.outcome_byte(int(k)))
            assert got == want.tolist()
            t.c4z.clear_cache()
            assert t.probe_keys(keys).tolist() == want.tolist()
            t.c4z.clear_cache()
            assert t.probe_keys(near, default=-1).tolist() == near_want.tolist()
            t.c4z.clear_cache()
            sparse = keys[:: max(1, len(keys) // 40)]    # few keys per block: probed alone
            assert t.probe_keys(sparse).tolist() == want[:: max(1, len(keys) // 40)].tolist()


def test_rule_keys_round_trip_and_refuse_truncated_bits(built):
    """Runs cut anywhere in the 5x4 table decode back exactly; their bits cut short or a
    key that is no candidate are refused."""
    from c4table.game.board import Board
    b = Board.parse("5x4")
    raw = np.fromfile(built("5x4") / "connect4_5x4.dat", np.uint8).reshape(-1, b.entry_size)
    keys = keys_of_rows(raw, b.key_bytes)
    rk = RuleKeys(b)
    rng = np.random.default_rng(7)
    for start in [0, len(keys) - 300, *rng.integers(0, len(keys) - 3000, 6).tolist()]:
        run = keys[start: start + int(rng.integers(1, 3000))]
        data = rk.encode(run)
        assert rk.decode(data, int(run[0]), len(run)).tolist() == run.tolist()
        if len(run) > 8:
            with pytest.raises(ValueError):
                rk.decode(data[:-3], int(run[0]), len(run))
            j = len(run) // 2
            assert rk.find(data, int(run[0]), len(run), int(run[j])) == j
    # B's chip alone in column 0 (no position: B never moves first) after the empty board
    assert rk.encode(np.array([0, 2], np.uint64)) is None

def test_damaged_format_4_block_is_refused(pair, tmp_path):
    dat, v4, _ = pair
    bad = tmp_path / "bad.c4z"
    data = bytearray(v4.read_bytes())
    with open_c4z(v4) as f:
        at = int(f.offsets[1]) + 20          # inside block 1's head or key bits
        k = int(f.first_keys[1])
    data[at] ^= 0x5A
    bad.write_bytes(bytes(data))
    with open_c4z(bad) as f:
        with pytest.raises(CorruptDataError, match="block 1"):
            f.outcome_byte(k)
        with pytest.raises(CorruptDataError, match="block 1"):
            c4z.RawStream(f).read()


def test_unknown_codec_name_is_one_line(pair, tmp_path):
    dat, _, _ = pair
    with pytest.raises(TableError, match="no .c4z block codec named 'nope'"):
        compress_table(dat, tmp_path / "x.c4z", quiet=True, codec="nope")
    assert not (tmp_path / "x.c4z").exists()
