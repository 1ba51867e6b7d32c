"""The one place where the two statements of the game rules are checked against each other:
the plain per-position rules (c4table.game.rules, c4table.game.board) and the numba kernels the build and
the readers use on whole arrays (c4table.pipeline.kernels.cpu, through c4table.analysis.export), on every
reachable position of small boards; and both against the independent oracle's keys and
terminal test (c4table/testing/oracle.py).

For each position: the key, the column codes, the ply, the terminal and mirror-symmetry flags,
the child keys (expand), the parent keys (the un-moves of the backward pass), and the move
order the exporter rebuilds by un-playing."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from c4table.testing import oracle
from c4table.game.board import Board
from c4table.analysis.decode import decode_entries
from c4table.analysis.export import move_orders
from c4table.pipeline.kernels import cpu as kernels
from c4table.pipeline.sort.extsort import sort_runs
from c4table.game.rules import Position

BOARDS = [Board(4, 3), Board(3, 4), Board(5, 2), Board(2, 5), Board(3, 3, k=3), Board(3, 3, k=2)]


def every_position(board: Board) -> list[list[Position]]:
    """Every reachable position by ply (mirror images kept), with the plain rules."""
    levels = [[Position(board)]]
    while True:
        seen, nxt = set(), []
        for p in levels[-1]:
            for c in p.legal_moves():
                q = p.child(c)
                t = tuple(map(tuple, q.cols))
                if t not in seen:
                    seen.add(t)
                    nxt.append(q)
        if not nxt:
            return levels
        levels.append(nxt)


@pytest.mark.slow
@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.name)
def test_plain_rules_and_kernels_agree_on_every_position(board):
    tables = kernels.board_tables(board)
    parent_code, top_owner = kernels.unmove_tables(board)
    w, h, k = board.width, board.height, board.k
    checked = 0
    for ply, level in enumerate(every_position(board)):
        keys = np.array([p.key() for p in level], np.uint64)
        codes, plies, term, sym = decode_entries(board, keys)
        for i, p in enumerate(level):
            pos = tuple(map(tuple, p.cols))
            # the key, against the independent oracle
            assert int(keys[i]) == oracle.position_key(pos, h, k), p
            # the kernel's decoding: canonical orientation, ply, terminal, mirror symmetry
            assert codes[i].tolist() in (p.codes(), p.codes()[::-1]), p
            assert plies[i] == p.ply == ply
            assert bool(term[i]) == p.is_terminal == (oracle.terminal_outcome(pos, h, k) is not None), p
            assert bool(sym[i]) == p.is_symmetric(), p
            # children: expand (nothing for a finished game)
            out = np.empty(w, np.uint64)
            n = kernels.expand(keys[i:i + 1], ply, *tables, out, np.zeros(4, np.int64), np.zeros(1, np.int64))
            assert sorted(out[:n].tolist()) == sorted(p.child(c).key() for c in p.legal_moves()), p
            # parents: the messages of the backward pass go to the un-moves
            msgs = np.empty(w, np.uint64)
            m = kernels.emit_parents(keys[i:i + 1], np.zeros(1, np.uint8), ply, *tables,
                                     parent_code, top_owner, msgs, np.zeros(1, np.int64))
            assert sorted((msgs[:m] >> np.uint64(8)).tolist()) == \
                sorted(p.unplay(c).key() for c in p.unmoves()), p
            checked += 1
        # the exporter's un-play (numpy walk over the Board's un-move tables) reaches each key
        for key, moves in zip(keys.tolist(), move_orders(board, codes, plies)):
            assert Position.from_moves(board, moves).key() == key
    assert checked == sum(r["positions"] for r in oracle.oracle_ply_counts(w, h, k))


def test_unmove_tables_invert_child_code():
    b = Board(7, 6)
    nonempty = np.flatnonzero(b.col_height > 0)
    # taking the top chip back, then dropping it again, gives the same column
    assert (b.child_code[b.parent_code[nonempty], b.top_owner[nonempty]] == nonempty).all()
    assert b.parent_code[0] == b.top_owner[0] == -1 and (b.parent_code[nonempty] >= 0).all()
    assert (b.col_height[b.parent_code[nonempty]] == b.col_height[nonempty] - 1).all()


@pytest.mark.parametrize("board", [Board(2, 2), Board(5, 3), Board(7, 4), Board(5, 5), Board(7, 6),
                                   Board(4, 7), Board(3, 8), Board(4, 4, k=3), Board(5, 5, k=5)],
                         ids=lambda b: b.name)
def test_kernel_key_decoding_equals_python_digits(board):
    """The kernels' key decoding (division by the base written as a constant for the usual
    bases, at run time for the others) against Python's integer ``divmod``, on random keys
    over the whole key range and at its ends; the symmetric flag against the mirror reading."""
    rng = np.random.default_rng(board.base)
    limit = board.key_limit
    keys = [0, 1, limit - 1, limit - 2] + [int(x) for x in rng.integers(0, limit, 2000, dtype=np.uint64)]
    # mirror-symmetric keys too: palindromic digit strings
    for _ in range(50):
        half = [int(d) for d in rng.integers(0, board.base, (board.width + 1) // 2)]
        digits = half + half[: board.width // 2][::-1]
        keys.append(sum(d * board.base**c for c, d in enumerate(digits)))
    codes, _, _, sym = decode_entries(board, np.array(keys, np.uint64))
    for key, row, s in zip(keys, codes.tolist(), sym.tolist()):
        digits, x = [], key
        for _ in range(board.width):
            x, d = divmod(x, board.base)
            digits.append(d)
        assert row == digits, (board, key)
        assert s == (digits == digits[::-1]), (board, key)


def assert_runs_layout(x: np.ndarray, tail: int, w: int) -> None:
    """``x`` is as the 2D kernels promise (``_close_runs``): at most ``w`` sorted runs, one
    per column, then ``tail`` values in no order."""
    assert 0 <= tail <= x.shape[0]
    head = x[: x.shape[0] - tail]
    assert int(np.count_nonzero(head[1:] < head[:-1])) <= w - 1


@pytest.mark.slow
@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.name)
def test_kernels_on_whole_generations_agree_with_plain_rules(board):
    """The build calls the kernels on whole sorted generations, where each key's high columns
    are decoded once for the run of keys that shares them (``_decode_near``): every child and
    parent of a generation expanded or annotated in one call, against the plain rules; and
    ``resolve`` on a whole generation against ``resolve`` called key by key."""
    tables = kernels.board_tables(board)
    untables = kernels.unmove_tables(board)
    w = board.width
    levels = every_position(board)
    for ply, level in enumerate(levels):
        keys = np.unique(np.array([p.key() for p in level], np.uint64))
        by_key = {p.key(): p for p in level}
        ps = [by_key[int(x)] for x in keys]
        out = np.empty(keys.shape[0] * w, np.uint64)
        stats, tail = np.zeros(4, np.int64), np.zeros(1, np.int64)
        n = kernels.expand(keys, ply, *tables, out, stats, tail)
        assert sorted(out[:n].tolist()) == sorted(p.child(c).key() for p in ps for c in p.legal_moves())
        assert_runs_layout(out[:n], int(tail[0]), w)
        assert stats[3] == len(ps) and stats[0] == sum(p.is_terminal for p in ps)
        assert stats[1] == sum(p.is_symmetric() for p in ps)
        sent = np.empty(keys.shape[0] * w, np.uint64)
        outcomes = np.arange(keys.shape[0], dtype=np.uint8) & np.uint8(0x3F)
        m = kernels.emit_parents(keys, outcomes, ply, *tables, *untables, sent, tail)
        assert sorted((sent[:m] >> np.uint64(8)).tolist()) == \
            sorted(p.unplay(c).key() for p in ps for c in p.unmoves())
        assert_runs_layout(sent[:m], int(tail[0]), w)
        if ply + 1 < len(levels):   # messages from the next generation, as the build sends them
            nxt = np.unique(np.array([p.key() for p in levels[ply + 1]], np.uint64))
            msgs = np.empty(nxt.shape[0] * w, np.uint64)
            nm = kernels.emit_parents(nxt, (np.arange(nxt.shape[0]) % 50).astype(np.uint8), ply + 1,
                                      *tables, *untables, msgs, tail)
            msgs = msgs[:nm]
            sort_runs(msgs, int(tail[0]))
            assert np.array_equal(msgs, np.sort(msgs))
        else:
            msgs = np.empty(0, np.uint64)
        whole_o, whole_s = np.empty(keys.shape[0], np.uint8), np.empty(keys.shape[0] * w, np.uint64)
        whole_st = np.zeros(6, np.int64)
        bad, ne = kernels.resolve(keys, msgs, ply, *tables, *untables, whole_o, whole_s, whole_st, tail)
        assert bad == -1
        assert_runs_layout(whole_s[:ne], int(tail[0]), w)
        one_s, one_st, n1 = [], np.zeros(6, np.int64), 0
        for i in range(keys.shape[0]):
            o, s = np.empty(1, np.uint8), np.empty(w, np.uint64)
            b, k = kernels.resolve(keys[i:i + 1], msgs, ply, *tables, *untables, o, s, one_st, tail)
            assert b == -1 and o[0] == whole_o[i]
            one_s += s[:k].tolist()
        assert sorted(whole_s[:ne].tolist()) == sorted(one_s) and (whole_st == one_st).all()
        if ply + 1 < len(levels):
            assert_pull_equals_push(board, ply, keys, ps, nxt, whole_o, whole_st, whole_s[:ne])


def oriented(p: Position) -> Position:
    """``p`` or its mirror image: the one whose own reading is its key."""
    if p.board.readings(p.codes())[0] == p.key():
        return p
    q = p.copy()
    q.cols = q.cols[::-1]
    return q


def assert_pull_equals_push(board, ply, keys, positions, nxt, push_o, push_st, push_sent):
    """``pull_resolve`` (children looked up in the next generation, messages only from the
    mirrored ones) gives what ``resolve`` gives from every child's message, with the same
    (arbitrary) outcomes of the next generation; it sends the mirrored part of ``resolve``'s
    messages; ``column_windows`` bounds the children it looks up."""
    tables, untables, w = kernels.board_tables(board), kernels.unmove_tables(board), board.width
    nxt_o = (np.arange(nxt.shape[0]) % 50).astype(np.uint8)
    tail = np.zeros(1, np.int64)
    msgs = np.empty(nxt.shape[0] * w, np.uint64)
    nm = kernels.emit_mirrored(nxt, nxt_o, ply + 1, *tables, *untables, msgs, tail)
    assert tail[0] == nm
    msgs = np.sort(msgs[:nm])
    msgs = msgs[: kernels.keep_best(msgs)]
    out, sent, st = np.empty(keys.shape[0], np.uint8), np.empty(keys.shape[0] * w, np.uint64), np.zeros(6, np.int64)
    bad, ns = kernels.pull_resolve(keys, msgs, nxt, nxt_o, ply, *tables, *untables, out, sent, st, tail)
    assert bad == -1 and np.array_equal(out, push_o) and np.array_equal(st, push_st)
    assert tail[0] == ns
    mirrored = np.empty(keys.shape[0] * w, np.uint64)
    nmir = kernels.emit_mirrored(keys, out, ply, *tables, *untables, mirrored, tail)
    assert sorted(sent[:ns].tolist()) == sorted(mirrored[:nmir].tolist())
    assert set(sent[:ns].tolist()) <= set(push_sent.tolist())
    lo, hi = np.empty(w, np.uint64), np.empty(w, np.uint64)
    kernels.column_windows(keys, ply, *tables, lo, hi)
    own = [oriented(p) for p in positions]
    for c in range(w):   # each column's window: its children read in their own reading, exactly
        kids = [r for p in own if c in p.legal_moves()
                for r in [board.readings(p.child(c).codes())[0]] if r == p.child(c).key()]
        if kids:
            assert (int(lo[c]), int(hi[c])) == (min(kids), max(kids)), c
        else:
            assert lo[c] > hi[c]
    if ply % 2 == 0 and nm:   # a lost mirrored message is found, not answered
        drop = msgs[msgs.shape[0] // 2] >> np.uint64(8)
        fewer = msgs[(msgs >> np.uint64(8)) != drop]
        bad, _ = kernels.pull_resolve(keys, fewer, nxt, nxt_o, ply, *tables, *untables, out, sent, st, tail)
        at = int(np.searchsorted(keys, drop))
        if at < keys.shape[0] and keys[at] == drop and not positions[at].is_terminal:
            assert bad == at
        else:
            assert bad == -1


@njit
def _decode_all_near(keys, low, w, base, bits_a, bits_b, powers, stride, codes_out, bb_out):
    codes = np.empty(w, np.int64)
    hq, ha, hb, hv = kernels.NO_KEY, np.uint64(0), np.uint64(0), np.uint64(0)
    for i in range(keys.shape[0]):
        a, b, v2, hq, ha, hb, hv = kernels._decode_near(keys[i], low, w, base, codes, bits_a, bits_b,
                                                        powers, stride, hq, ha, hb, hv)
        codes_out[i] = codes
        bb_out[i, 0] = a
        bb_out[i, 1] = b
        bb_out[i, 2] = v2


@pytest.mark.parametrize("board", [Board(3, 4), Board(5, 6), Board(7, 4), Board(6, 5), Board(7, 6),
                                   Board(5, 5, k=5)], ids=lambda b: b.name)
@pytest.mark.slow
def test_decode_near_equals_python_digits_for_every_split(board):
    """``_decode_near`` with every number of low digits, on sorted keys close together (runs
    that share their high digits), far apart and repeated: each key's codes equal Python's
    ``divmod`` digits, its bitboards the columns' chips and its v2 the mirror reading, whatever
    the keys decoded before it."""
    rng = np.random.default_rng(board.base * board.width)
    limit = board.key_limit
    keys = np.concatenate([rng.integers(0, limit, 300, dtype=np.uint64),
                           rng.integers(0, 3 * board.base ** 2, 300, dtype=np.uint64) + np.uint64(limit // 3),
                           np.array([0, 0, limit - 1, limit - 1], np.uint64)])
    keys = np.sort(keys[keys < limit])
    keys = np.concatenate([keys, keys[::-1]])   # descending too: any order is decoded right
    _, _, w, stride, _, base, _, _, bits_a, bits_b, powers = (None, None, *kernels.board_tables(board))
    expect = []
    for key in keys.tolist():
        digits, x = [], key
        for _ in range(w):
            x, d = divmod(x, base)
            digits.append(d)
        a = sum(int(bits_a[d]) << (c * stride) for c, d in enumerate(digits))
        b = sum(int(bits_b[d]) << (c * stride) for c, d in enumerate(digits))
        expect.append((digits, a, b, sum(d * base ** (w - 1 - c) for c, d in enumerate(digits))))
    for low in range(1, w + 1):
        codes = np.empty((keys.shape[0], w), np.int64)
        bbs = np.empty((keys.shape[0], 3), np.uint64)
        _decode_all_near(keys, low, w, base, bits_a, bits_b, powers, stride, codes, bbs)
        got = [(c, int(x[0]), int(x[1]), int(x[2])) for c, x in zip(codes.tolist(), bbs)]
        assert got == expect, (board, low)


def test_low_digits_minimizes_divisions():
    """``low_digits``: all digits for fewer than two keys; for keys about ``gap`` apart the
    number of low digits whose block ``base**low`` holds many keys, not more."""
    u = np.uint64
    assert kernels.low_digits(np.array([5], u), 5, 111) == 5
    assert kernels.low_digits(np.arange(0, 10**6, 10, dtype=u), 5, 111) == 1
    assert kernels.low_digits(np.arange(0, 10**9, 1000, dtype=u), 5, 111) == 2
    assert kernels.low_digits(np.arange(0, 10**12, 10**6, dtype=u), 7, 31) == 5
