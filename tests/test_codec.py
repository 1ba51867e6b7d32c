"""Keys and outcome bytes: round trips, mirror symmetry, the move-string parser's errors."""
import random

import pytest

from c4table.game.board import Board
from c4table.game.codec import codes_of_key, decode_outcome, encode_outcome, key_of_codes, readings
from c4table.errors import IllegalPositionError
from c4table.game.rules import Position


def random_game(board: Board, rng: random.Random) -> Position:
    pos = Position(board)
    for _ in range(rng.randrange(board.cells + 1)):
        moves = pos.legal_moves()
        if not moves:
            break
        pos.play(rng.choice(moves))
    return pos


@pytest.mark.parametrize("spec", ["4x4", "5x4", "7x6", "6x5", "3x7"])
def test_key_round_trip_and_mirror(spec):
    board = Board.parse(spec)
    rng = random.Random(7)
    for _ in range(300):
        pos = random_game(board, rng)
        codes = pos.codes()
        key = pos.key()
        back = codes_of_key(board, key)
        assert back in (codes, codes[::-1])
        assert key_of_codes(board, back) == key
        mirror = Position.from_columns(board, [board.width - 1 - c for c in pos.moves])
        assert mirror.key() == key
        v1, v2 = readings(board, codes)
        assert key == min(v1, v2) < board.key_limit


def test_empty_board_is_key_zero():
    assert Position(Board(7, 6)).key() == 0


@pytest.mark.parametrize("result", ["A", "B", "draw"])
def test_outcome_round_trip(result):
    for d in range(64):
        assert decode_outcome(encode_outcome(result, d)) == (result, d)
    with pytest.raises(ValueError):
        decode_outcome(0xC0)


@pytest.mark.parametrize("moves,why", [("8", "bad move"), ("0", "bad move"), ("4a", "bad move"),
                                       ("11111", "full"), ("12121212", "after the game ended"),
                                       ("4 4", "bad move")])
def test_illegal_move_strings(moves, why):
    with pytest.raises(IllegalPositionError, match=why):
        Position.from_moves(Board(7, 4), moves)


def test_wins_detected_in_all_directions():
    b = Board(7, 6)
    assert Position.from_moves(b, "1213141").winner == 1            # horizontal
    assert Position.from_moves(b, "1212121").winner == 1            # vertical
    assert Position.from_moves(b, "12234334544").winner == 1        # diagonal /
    assert Position.from_moves(b, "76654554344").winner == 1        # diagonal \
    assert Position.from_moves(b, "121314").winner is None
