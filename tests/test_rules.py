"""The one place where the two statements of the game rules are checked against each other:
the plain per-position rules (c4table.rules, c4table.board) and the numba kernels the build and
the readers use on whole arrays (c4table.pipeline.kernels, through c4table.export), on every
reachable position of small boards; and both against the independent oracle's keys and
terminal test (tests/oracle.py).

For each position: the key, the column codes, the ply, the terminal and mirror-symmetry flags,
the child keys (expand), the parent keys (the un-moves of the backward pass), and the move
order the exporter rebuilds by un-playing."""
from __future__ import annotations

import numpy as np
import pytest

import oracle
from c4table.board import Board
from c4table.export import decode_entries, move_orders
from c4table.pipeline import kernels
from c4table.rules import Position

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
            n = kernels.expand(keys[i:i + 1], ply, *tables, out, np.zeros(4, np.int64))
            assert sorted(out[:n].tolist()) == sorted(p.child(c).key() for c in p.legal_moves()), p
            # parents: the messages of the backward pass go to the un-moves
            msgs = np.empty(w, np.uint64)
            m = kernels.emit_parents(keys[i:i + 1], np.zeros(1, np.uint8), ply, *tables,
                                     parent_code, top_owner, msgs)
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
