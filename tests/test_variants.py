"""The registry of board variants (c4table.game.board.VARIANTS): every registered variant
round-trips its name, file name, recorded fields and spec; plays and parses its own move
strings with the keys and game ends of the brute-force oracle (which shares no code with
c4table); decodes its keys with its readers' kernels as the rules do; and has its drawing, its
build's kernels and its plan found by its name. A new variant fails here until it has them all,
and until its oracle is added to ORACLE below."""

import pickle
import random

import numpy as np
import pytest

from c4table.errors import BoardError, IllegalPositionError
from c4table.game.board import FEATURES, VARIANTS, Board, find_variant
from c4table.game.drawing import RENDERERS, render
from c4table.game.rules import Position
from c4table.pipeline.kernels.kernelset import CPU_KERNELS, KernelSet, for_board
from c4table.pipeline.planning.planners import PLANNERS
from c4table.testing import oracle


def _oracle2d(b: Board):
    return (lambda pos: oracle.position_key(pos, b.height, b.k),
            lambda pos: oracle.winners(pos, b.height, b.k))


def _oracle3d(b: Board):
    (X, Y), H, k = b.grid, b.height, b.k
    return (lambda pos: oracle.position_key3d(pos, X, Y, H, k),
            lambda pos: oracle.winners3d(pos, X, Y, H, k))


#: Variant name -> (key of an oracle position, players owning a line in it), per board.
ORACLE = {"2d": _oracle2d, "3d": _oracle3d}


def _boards():
    """Each variant's example board, and the same size with another connect length."""
    out = []
    for name, cls in VARIANTS.items():
        b = cls.example()
        out.append(pytest.param(b, id=b.name))
        other = Board.parse(b.dims, 3 if b.k != 3 else 2)
        out.append(pytest.param(other, id=other.name))
    return out


def test_the_registry_knows_its_variants():
    assert set(VARIANTS) >= {"2d", "3d"}
    for name, cls in VARIANTS.items():
        assert find_variant(name) is cls and cls.variant == name
        assert cls.features <= set(FEATURES)
        assert issubclass(cls, Board)
    with pytest.raises(BoardError, match="unknown board variant 'hex'"):
        find_variant("hex")
    assert set(ORACLE) == set(VARIANTS), "a new variant needs its oracle in ORACLE"


@pytest.mark.parametrize("board", _boards())
def test_a_variant_round_trips_its_names_fields_and_spec(board):
    cls = find_variant(board.variant)
    assert type(board) is cls
    for again in (Board.parse(board.name), Board.parse(board.dims, board.k),
                  Board.of_table_name("tables/" + board.table_filename),
                  Board.from_json({"width": board.width, "height": board.height, "k": board.k,
                                   **board.json_fields()}),
                  Board.from_spec(board.spec), pickle.loads(pickle.dumps(board)),
                  cls.from_dims([int(d) for d in board.dims.split("x")], board.k)):
        assert again == board and type(again) is cls and hash(again) == hash(board)
        assert again.name == board.name
    assert str(board) == board.name and board.name.startswith(board.dims)
    assert board.name.endswith("" if board.k == 4 else f"k{board.k}")
    assert len(board.dims.split("x")) == cls.ndims and len(board.spec) == cls.spec_len
    names = {board.cell_name(c, r) for c in range(board.width) for r in range(board.height)}
    assert len(names) == board.cells   # every cell its own name


@pytest.mark.parametrize("board", _boards())
def test_a_variant_plays_and_parses_its_own_move_strings(board):
    """Random games: the move string parses back to the same position, whose key, end and
    symmetry agree with the oracle, and whose key the variant's readers' kernels decode to the
    same ply and end."""
    key_of, winners = ORACLE[board.variant](board)
    rng = random.Random(board.name)
    keys, expected = [], []
    for _ in range(40):
        pos = Position(board)
        while not pos.is_terminal and (pos.ply < 2 or rng.random() > 0.1):
            pos.play(rng.choice(pos.legal_moves()))
        text = pos.move_string()
        assert board.columns_of_moves(text) == pos.moves
        again = Position.from_moves(board, text)
        assert again.cols == pos.cols and again.winner == pos.winner and again.ply == pos.ply
        chips = tuple(tuple(c) for c in pos.cols)
        assert pos.key() == key_of(chips)
        owners = winners(chips)
        assert owners == ({pos.winner} if pos.winner is not None else set())
        assert pos.is_symmetric() == (len(set(board.readings(pos.codes()))) == 1)
        if pos.winner is not None:
            assert len(pos.winning_cells()) >= board.k
        keys.append(pos.key())
        expected.append((pos.ply, pos.is_terminal))
        assert render(pos).strip()   # its drawing is found and draws something
    codes, plies, term, images = board.decode_keys(np.array(keys, np.uint64), images=True)
    assert list(zip(plies.tolist(), term.tolist())) == expected
    assert [board.key_of_codes(c) for c in codes.tolist()] == keys
    assert (images >= 1).all()
    bad = str(board.width + 1) if board.width < 9 else "0"
    with pytest.raises(IllegalPositionError, match="bad move"):
        board.columns_of_moves("1" + bad)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_a_variant_has_its_drawing_kernels_and_plan(name):
    board = find_variant(name).example()
    assert RENDERERS[name] is not None
    kern = for_board(board)
    assert kern is CPU_KERNELS[name]
    for fn in ("board_tables", "unmove_tables", "expand", "resolve", "emit_parents"):
        assert callable(getattr(kern, fn)), f"{kern.__name__} lacks {fn}"
    assert KernelSet.of(board).board == board and KernelSet.of(board).cpu is kern
    plan = PLANNERS[name](board, 1, 2**30, None, None)
    assert plan.board == board and plan.entries > 0
