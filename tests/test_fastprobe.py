"""The vectorised prober of the server (c4table.table.fastprobe) gives exactly what Table.probe gives:
answers for legal positions (random games, finished games, full boards), and the same error
class and message for everything else (bad digits, full columns, moves after the end, drawings,
positions missing from a partial table)."""
from __future__ import annotations

import random

import pytest

from c4table.game.board import Board
from c4table.errors import TableError
from c4table.table.fastprobe import FastProber
from c4table.game.rules import Position
from c4table.open import open_table
from conftest import describe_table

EDGE = ["", " 3344 ", "9", "0", "a3", "33333", "12121212", "1" * 30, "3\n4", "١", "3344\x00",
        ".....\n.....\n..o..\n.xxo.\n", "1212121"]


def games(board: Board, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        p = Position(board)
        while not p.is_terminal and rng.random() > 1 / board.cells:
            p.play(rng.choice(p.legal_moves()))
        out.append(p.move_string())
    return out


def same(table, texts):
    fp = FastProber.for_table(table)
    assert fp is not None
    got = fp.probe_many(texts)
    assert len(got) == len(texts)
    for text, g in zip(texts, got):
        try:
            want = table.probe(text)
        except Exception as e:          # noqa: BLE001 - compared below
            want = e
        if isinstance(want, Exception):
            assert type(g) is type(want) and str(g) == str(want), (text, g, want)
        else:
            assert g == want, text
    fp.close()


@pytest.mark.slow
@pytest.mark.parametrize("board", ["4x4", "5x4"])
def test_probe_many_equals_probe(built, board):
    with open_table(built(board) / f"connect4_{board}.dat") as t:
        same(t, EDGE + games(t.board, 3000, seed=11))


def test_positions_missing_from_a_partial_table(built, tmp_path):
    src = built("4x4") / "connect4_4x4.dat"
    data = src.read_bytes()
    E = Board.parse("4x4").entry_size
    part = tmp_path / "connect4_4x4.dat"
    part.write_bytes(data[: len(data) // E // 3 * E])     # the first third of the entries
    with pytest.raises(TableError, match="truncated"):    # bare, it is a truncated 4x4 table
        open_table(part)
    describe_table(part, "4x4")                           # described as what it is
    with open_table(part) as t:
        same(t, games(t.board, 500, seed=12))
