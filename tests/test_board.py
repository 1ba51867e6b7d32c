"""Board geometry against the format's own figures: the seed README's 111-column table, the
bases for each height and the key widths listed in FORMAT.md."""

import pytest

from c4table.game.board import Board, column_value
from c4table.errors import BoardError
from conftest import cadot_column_table


def seed_column_table() -> list[tuple[int, int, str]]:
    return [(code, value, drawing) for code, value, _, drawing in cadot_column_table()]


def test_7x6_columns_equal_seed_table():
    rows = seed_column_table()
    assert len(rows) == 111
    b = Board(7, 6)
    for code, value, drawing in rows:
        cells = b.columns[code]
        assert column_value(cells) == value
        top_to_bottom = "".join(".AB"[d] for d in reversed(cells))
        assert top_to_bottom == drawing


@pytest.mark.parametrize("h,base", [(1, 3), (2, 7), (3, 15), (4, 31), (5, 59), (6, 111), (7, 207)])
def test_base_per_height(h, base):
    assert Board(1, h).base == base


def test_codes_are_nested_across_heights():
    small, big = Board(7, 5), Board(7, 6)
    for code, cells in enumerate(small.columns):
        assert big.columns[code][:5] == cells and big.columns[code][5] == 0


@pytest.mark.parametrize("spec,kbytes", [("4x4", 3), ("4x5", 3), ("5x4", 4), ("6x4", 4), ("5x5", 4),
                                         ("4x6", 4), ("7x4", 5), ("6x5", 5), ("5x6", 5), ("7x6", 6)])
def test_key_bytes(spec, kbytes):
    b = Board.parse(spec)
    assert b.key_bytes == kbytes
    assert 256 ** b.key_bytes >= b.base ** b.width > 256 ** (b.key_bytes - 1)


@pytest.mark.parametrize("spec", ["7by6", "0x4", "4x0", "x", "", "16x4", "7x-6"])
def test_bad_board_specs(spec):
    with pytest.raises(BoardError):
        Board.parse(spec)


def test_child_code_drops_chip_on_top():
    b = Board(7, 6)
    for code, cells in enumerate(b.columns):
        n = sum(1 for d in cells if d)
        for p in (0, 1):
            nc = int(b.child_code[code, p])
            if n == 6:
                assert nc == -1
            elif nc >= 0:
                assert b.columns[nc][:n] == cells[:n] and b.columns[nc][n] == p + 1
