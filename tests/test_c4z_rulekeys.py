"""Formats 4 and 5 of ``.c4z`` (block codecs ``rulekeys-plysym-v4`` and ``rulekeys-frames-v5``,
the keys coded by the rules of the game): their files round-trip to the raw table's bytes,
answer as the raw table does (single probes, ``probe_keys``, absent keys), stay beside
format-3 files written by name, and refuse damage."""
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
from c4table.game.board import Board
from c4table.open import open_table
from c4table.table.source import keys_of_rows

BLOCKS = 8192     # several blocks and several runs per block on 5x4


@pytest.fixture(scope="module")
def pair(built, tmp_path_factory):
    """The 5x4 table, and its .c4z in format 5 (default), format 4 and format 3 (by name)."""
    d = tmp_path_factory.mktemp("rk54")
    dat = d / "connect4_5x4.dat"
    shutil.copy(built("5x4") / "connect4_5x4.dat", dat)
    v5 = compress_table(dat, d / "v5.c4z", block_entries=BLOCKS, quiet=True, threads=2,
                        frame_entries=3000)
    v4 = compress_table(dat, d / "v4.c4z", block_entries=BLOCKS, quiet=True, threads=2,
                        codec=c4z.RULE_CODEC)
    v3 = compress_table(dat, d / "v3.c4z", block_entries=BLOCKS, quiet=True, threads=2,
                        codec=c4z.TRANSFORM)
    return dat, v5, v4, v3


def test_format_5_is_the_default_and_formats_4_5_round_trip_to_the_raw_bytes(pair, tmp_path):
    dat, v5, v4, v3 = pair
    for z, version, name, run in ((v5, 5, c4z.FRAME_CODEC, c4z.SHORT_RUN_ENTRIES),
                                  (v4, 4, c4z.RULE_CODEC, c4z.RUN_ENTRIES)):
        with open_c4z(z) as f:
            assert (f.header["version"], f.header["transform"]) == (version, name)
            assert f.header["run_entries"] == run < f.block_entries
            assert f.header["sha256"] == hashlib.sha256(dat.read_bytes()).hexdigest()
            # every block coded by the rules (mode 1): a game table has no key outside them
            assert all(f.read_block(i)[0] == 1 for i in range(f.blocks))
            assert c4z.RawStream(f).read() == dat.read_bytes()
        back = decompress_table(z, tmp_path / f"back{version}.dat", quiet=True)
        assert back.read_bytes() == dat.read_bytes()
        assert z.stat().st_size < 0.8 * v3.stat().st_size
    assert c4z.DEFAULT_CODEC == c4z.FRAME_CODEC
    with open_c4z(v5) as f:
        assert f.header["frame_entries"] == 3000      # as asked (not a multiple of the runs)
    with open_c4z(v3) as f:
        assert (f.header["version"], f.header["transform"]) == (3, c4z.TRANSFORM)


@pytest.mark.parametrize("fmt", [5, 4])
def test_formats_4_5_answer_as_the_raw_table(pair, fmt):
    """Keys from every run and every frame of every block (first, last, middle), keys just
    past them, probed one by one from cold blocks and as a batch, beside format 3."""
    dat, v5, v4, v3 = pair
    run = c4z.SHORT_RUN_ENTRIES if fmt == 5 else c4z.RUN_ENTRIES
    cuts = sorted(set(range(0, BLOCKS * 64, run)) | set(range(0, BLOCKS * 64, 3000)))
    with open_table(dat) as t:
        n = len(t)
        idx = sorted({i for b in cuts for i in (b, b + 1, b + run // 2, b - 1) if 0 <= i < n})
        keys = np.array([t.key_at(i) for i in idx], np.uint64)
        want = t.probe_keys(keys)
        near = keys + np.uint64(1)
        near_want = t.probe_keys(near, default=-1)
    assert (near_want == -1).any()
    for z in ((v5 if fmt == 5 else v4), v3):
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
    """Runs cut anywhere in the 5x4 table decode back exactly (format 4's framing, and
    format 5's lean one with trained starting probabilities, however far off they are); the
    bits cut short or a key that is no candidate are refused; a run's tally counts its
    candidates and keys."""
    from c4table.game.board import Board
    b = Board.parse("5x4")
    raw = np.fromfile(built("5x4") / "connect4_5x4.dat", np.uint8).reshape(-1, b.entry_size)
    keys = keys_of_rows(raw, b.key_bytes)
    rk, lean = RuleKeys(b), RuleKeys(b, lean=True)
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
        counts = np.zeros((2, lean.nprobs), np.int64)
        assert lean.tally(run, counts)
        assert counts[1].sum() == len(run) - 1 <= counts[0].sum()
        for init in (None, rng.integers(8, 2041, lean.nprobs).astype(np.int64)):
            ld = lean.encode(run, init)
            assert lean.decode(ld, int(run[0]), len(run), init).tolist() == run.tolist()
            if len(run) > 8:
                j = int(rng.integers(0, len(run)))
                assert lean.find(ld, int(run[0]), len(run), int(run[j]), init) == j
                assert lean.find(ld, int(run[0]), len(run), int(run[j]) + 1, init) in (-1, j + 1)
        if len(run) > 64:         # the lean framing: no leading zero byte, at most 2 to end
            assert len(lean.encode(run)) < len(data) - 3
    # B's chip alone in column 0 (no position: B never moves first) after the empty board
    assert rk.encode(np.array([0, 2], np.uint64)) is None
    assert not lean.tally(np.array([0, 2], np.uint64), np.zeros((2, lean.nprobs), np.int64))

def test_a_block_walked_once_codes_the_bytes_of_its_runs_walked_twice(built):
    """:meth:`RuleKeys.encode_runs` (format 5's encoder: the block walked once, its candidates
    recorded, then coded; or, past its cap of recorded bytes, walked twice) gives each run the
    bytes :meth:`RuleKeys.encode` gives it from the odds of the counts :meth:`RuleKeys.tally`
    gives the block, for blocks cut anywhere in the 5x4 table, runs of one key included."""
    from c4table.game.board import Board
    b = Board.parse("5x4")
    raw = np.fromfile(built("5x4") / "connect4_5x4.dat", np.uint8).reshape(-1, b.entry_size)
    keys = keys_of_rows(raw, b.key_bytes)
    lean = RuleKeys(b, lean=True)
    rng = np.random.default_rng(11)
    odds_seen = []

    def odds(counts):                  # any function of the counts: here, random but fixed
        odds_seen.append(counts.copy())
        return np.random.default_rng(int(counts.sum())).integers(8, 2041, lean.nprobs)

    for start, size, run in [(0, 5000, 256), (len(keys) - 700, 700, 256), (123, 2049, 1),
                             *[(int(s), int(rng.integers(1, 9000)), int(rng.choice([7, 256, 4096])))
                               for s in rng.integers(0, len(keys) - 9000, 5)]]:
        block = keys[start: start + size]
        counts = np.zeros((2, lean.nprobs), np.int64)
        for o in range(0, len(block), run):
            assert lean.tally(block[o: o + run], counts)
        init = odds(counts)
        want = [lean.encode(block[o: o + run], init) for o in range(0, len(block), run)]
        for cap in (None, len(block) // 3, 0):         # recorded, or walked twice past the cap
            bits = lean.encode_runs(block, run, odds)  if cap is None else \
                lean.encode_runs(block, run, odds, cap)
            assert np.array_equal(bits.counts, counts) and np.array_equal(odds_seen[-1], counts)
            assert [bits.run(r) for r in range(len(want))] == want
        walked = lean.record(block, run, 4 * len(block) + 1024)
        assert walked.ends[-1] == counts[0].sum()          # one record per candidate
    bad = np.array([0, 2], np.uint64)      # B's chip alone: no candidate
    assert lean.encode_runs(bad, 256, odds) is None and lean.encode_runs(bad, 256, odds, 0) is None
    with pytest.raises(ValueError):
        RuleKeys(b).record(keys[:10], 256, 1024)     # format 4's framing is not recorded


def test_every_codec_encodes_a_build_s_words_as_its_raw_rows(built):
    """``encode_words`` of ``key << 8 | outcome`` words, and of ``key << 8 | symbol`` words
    (``symbols=True``, as a build's merge gathers them), is each codec's ``encode`` of the
    same raw rows."""
    from c4table.c4z.blocks import block_codec
    from c4table.c4z.registry import codec_names, get_codec
    from c4table.game.board import Board
    b = Board.parse("5x4")
    raw = np.fromfile(built("5x4") / "connect4_5x4.dat", np.uint8).reshape(-1, b.entry_size)
    part = raw[500_000: 500_000 + 5000]
    keys = keys_of_rows(part, b.key_bytes)
    words = (keys << np.uint64(8)) | part[:, -1].astype(np.uint64)
    syms = block_codec(b).symbol_words(words)
    assert len(codec_names()) == 3
    for name in codec_names():
        codec = get_codec(name)(b, 1024, 4)
        want = codec.encode(part.tobytes())
        assert codec.encode_words(words) == want == codec.encode_words(syms, symbols=True), name


@pytest.mark.parametrize("fmt,where", [(4, 20), (5, 3), (5, 40), (5, -30)])
def test_damaged_format_4_5_block_is_refused(pair, tmp_path, fmt, where):
    """A byte changed in block 1's head, key bits or last frame: the block's checksum
    refuses it for a probe and for a scan."""
    dat, v5, v4, _ = pair
    z = v5 if fmt == 5 else v4
    bad = tmp_path / "bad.c4z"
    data = bytearray(z.read_bytes())
    with open_c4z(z) as f:
        at = (int(f.offsets[1]) if where > 0 else int(f.offsets[2])) + where
        k = int(f.first_keys[1])
    data[at] ^= 0x5A
    bad.write_bytes(bytes(data))
    with open_c4z(bad) as f:
        with pytest.raises(CorruptDataError, match="block 1"):
            f.outcome_byte(k)
        with pytest.raises(CorruptDataError, match="block 1"):
            c4z.RawStream(f).read()


def test_format_5_heads_that_do_not_fit_are_refused(pair):
    """Behind the checksum: a format-5 block whose head or frames do not fit its entries is
    refused by the codec itself (ValueError), never answered from."""
    dat, v5, _, _ = pair
    with open_c4z(v5) as f:
        blk, n, first = bytes(f.read_block(1)), f.block_rows(1), int(f.first_keys[1])
        codec = f.codec
    for bad in (blk[:-1], blk + b"\0", blk[:1] + b"\x7f" + blk[2:]):
        with pytest.raises(ValueError):
            codec.probe(codec.probe_state(bad, n, first), n, first)
        with pytest.raises(ValueError):
            codec.decode(bad, n, first)
    with pytest.raises(ValueError):
        codec.decode(blk, n - 1, first)


def test_unknown_codec_name_is_one_line(pair, tmp_path):
    dat, _, _, _ = pair
    with pytest.raises(TableError, match="no .c4z block codec named 'nope'"):
        compress_table(dat, tmp_path / "x.c4z", quiet=True, codec="nope")
    assert not (tmp_path / "x.c4z").exists()


def _candidates_by_the_rules(board) -> np.ndarray:
    """Every key of ``board``'s key space that is a candidate by the rules as written in
    :mod:`c4table.c4z.rulekeys`' docstring, decided key by key with the readers' kernels
    (:mod:`c4table.game.lines`), not the walk: chips balanced, the mirror-canonical reading,
    no k in a row of the player who did not move last, and if the last mover has one, some top
    chip of theirs whose removal leaves none."""
    from c4table.game import lines
    w, stride = board.width, board.stride
    bits_a = np.asarray(board.col_bits_a, np.uint64)
    bits_b = np.asarray(board.col_bits_b, np.uint64)
    height = np.asarray(board.col_height, np.int64)
    powers = np.asarray(board.powers, np.uint64)
    out = []
    for lo in range(0, board.key_limit, 1 << 22):
        keys = np.arange(lo, min(board.key_limit, lo + (1 << 22)), dtype=np.uint64)
        codes = np.empty((keys.shape[0], w), np.int64)
        x = keys.copy()
        for c in range(w):                          # column 0 is the key's lowest digit
            codes[:, c] = (x % np.uint64(board.base)).astype(np.int64)
            x //= np.uint64(board.base)
        mirror = sum(codes[:, w - 1 - c].astype(np.uint64) * powers[c] for c in range(w))
        a = np.zeros(keys.shape[0], np.uint64)
        b = np.zeros(keys.shape[0], np.uint64)
        for c in range(w):
            a |= bits_a[codes[:, c]] << np.uint64(c * stride)
            b |= bits_b[codes[:, c]] << np.uint64(c * stride)
        na = np.array([bin(int(v)).count("1") for v in bits_a])[codes].sum(1)
        nb = np.array([bin(int(v)).count("1") for v in bits_b])[codes].sum(1)
        ply = na + nb
        last_a = ply % 2 == 1
        last = np.where(last_a, a, b)
        other = np.where(last_a, b, a)
        has = np.empty(keys.shape[0], np.bool_)
        lines.has_lines(other, stride, board.k, has)
        ok = ((na == nb) | (na == nb + 1)) & (keys <= mirror) & ~(has & (ply > 0))
        lines.has_lines(last, stride, board.k, has)
        won = ok & has & (ply > 0)
        undo = np.zeros(keys.shape[0], np.bool_)
        for c in range(w):
            h = height[codes[:, c]]
            bit = np.where(h > 0, np.uint64(1) << (np.uint64(c * stride) + np.maximum(h - 1, 0).astype(np.uint64)), np.uint64(0))
            lines.has_lines(last & ~bit, stride, board.k, has)
            undo |= (h > 0) & ((last & bit) != 0) & ~has
        out.append(keys[ok & (~won | undo)])
    return np.concatenate(out)


@pytest.mark.parametrize("name", ["3x3k3", "4x4", "4x4k3", "5x3k3", "4x5", "5x4k5"])
def test_the_walk_lists_the_candidates_the_rules_define(name):
    """The key walk (format 4 and 5's keys) against the rules decided key by key over the whole
    key space of small boards of several shapes and connect lengths: walked from the first
    candidate, every candidate it lists is one of the rules' and it lists them all (all records
    are members, one per key)."""
    b = Board.parse(name)
    cand = _candidates_by_the_rules(b)
    rk = RuleKeys(b, lean=True)
    walked = rk.record(cand, cand.shape[0], 2 * cand.shape[0] + 1024)
    assert walked is not None and int(walked.ends[-1]) == cand.shape[0] - 1, name
    assert (walked.rec[: cand.shape[0] - 1] & 128).all(), name
