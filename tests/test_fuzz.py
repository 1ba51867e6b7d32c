"""Property-based fuzzing (hypothesis) of position parsing and lookup: thousands of random move
strings (arbitrary text, digit strings, real games) and drawings against ``Board.parse``,
``Position.from_moves``, ``Table.probe``, ``drawing.parse_drawing`` and the ``lookup`` command
line. Nothing may escape but
the documented errors (:class:`BoardError`, :class:`IllegalPositionError`), and every answer
must be consistent (ply, side to move, best move = position's value)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from c4table.board import Board
from c4table.errors import BoardError, IllegalPositionError
from c4table.rules import Position
from c4table.table import open_table
from c4table.wording import clip

FAST = settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
BOARDS = [Board.parse(s) for s in ("5x4", "4x4", "7x6", "1x1", "9x6", "10x4", "2x3")]

# arbitrary text, biased toward digits, whitespace and near-miss characters
near_digits = st.text(alphabet="0123456789 \t\n\r-+x.\u0663\uff11\u00b2", max_size=40)
any_text = st.text(max_size=40)
move_text = st.one_of(near_digits, any_text, st.text(alphabet="123456789", max_size=60))


_dim = st.one_of(st.integers(-3, 70).map(str), st.sampled_from(["", "07", "1.5", "\u0667", "1e1"]))
board_specs = st.builds(lambda pad, a, sep, b: f"{pad}{a}{sep}{b}{pad}",
                        st.sampled_from(["", " ", "\t"]), _dim,
                        st.sampled_from(["x", "X", "*", "by", "", " x ", "xx"]), _dim)


@st.composite
def games(draw, board: Board, max_len: int | None = None):
    """A legal move string (random play until the game ends or ``max_len`` moves)."""
    pos = Position(board)
    n = draw(st.integers(0, max_len if max_len is not None else board.cells))
    for _ in range(n):
        moves = pos.legal_moves()
        if not moves:
            break
        pos.play(draw(st.sampled_from(moves)))
    return pos.move_string()


@FAST
@given(st.one_of(st.text(max_size=20), board_specs))
def test_board_parse_only_board_errors(spec):
    try:
        b = Board.parse(spec)
    except BoardError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert 1 <= b.width and 1 <= b.height and b.width * (b.height + 1) <= 64


@FAST
@given(st.sampled_from(BOARDS), move_text)
def test_from_moves_only_illegal_position_errors(board, text):
    try:
        pos = Position.from_moves(board, text)
    except IllegalPositionError as e:
        assert str(e) and "\n" not in str(e)
        return
    moves = text.strip()
    assert pos.ply == len(moves) == len(pos.moves)
    assert pos.move_string() == moves
    assert pos.to_move == "AB"[pos.ply % 2]
    assert all(len(c) <= board.height for c in pos.cols)
    assert 0 <= pos.key() < board.key_limit
    if pos.is_terminal:
        assert pos.legal_moves() == []


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_real_games_parse_and_extending_past_the_end_is_illegal(data):
    board = data.draw(st.sampled_from(BOARDS[:4]))
    moves = data.draw(games(board))
    pos = Position.from_moves(board, moves)
    assert pos.move_string() == moves
    if pos.is_terminal:
        col = data.draw(st.integers(1, board.width))
        with pytest.raises(IllegalPositionError):
            Position.from_moves(board, moves + str(col))


@pytest.fixture(scope="module")
def table(built):
    t = open_table(built("5x4") / "connect4_5x4.dat")
    yield t
    t.close()


def _check_probe(p, board):
    assert p.outcome in ("A", "B", "draw")
    assert 0 <= p.distance <= board.cells - p.ply
    assert p.to_move == "AB"[p.ply % 2]
    if p.terminal:
        assert p.moves == [] and p.distance == 0
        return
    assert p.moves and p.best_moves()
    best = p.best_moves()[0]
    assert (best.outcome, best.distance) == (p.outcome, p.distance)


@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(move_text)
def test_probe_random_strings(table, text):
    try:
        p = table.probe(text)
    except IllegalPositionError as e:
        assert str(e) and "\n" not in str(e)
        return
    _check_probe(p, table.board)


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_probe_real_games(table, data):
    moves = data.draw(games(table.board))
    _check_probe(table.probe(moves), table.board)


def test_lookup_cli_batch_of_random_lines(table):
    """3000 random lines through one ``lookup --json -``: every line answers, in order,
    with a result or an error, and the process ends with status 0 or 2, never a traceback."""
    import random
    rng = random.Random(20240611)
    alphabet = "0123456789 \t-x\u0663\u00e9\u4e2d"
    lines = []
    for i in range(3000):
        k = rng.random()
        if k < 0.4:
            s = "".join(rng.choice("12345") for _ in range(rng.randint(0, 22)))
        elif k < 0.8:
            s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        else:
            s = "".join(chr(rng.randint(0x20, 0x2FFF)) for _ in range(rng.randint(0, 8)))
        lines.append(s.replace("\r", "").replace("\n", ""))
    stdin = "".join(line + "\n" for line in lines)
    p = subprocess.run([sys.executable, "-m", "c4table.cli", "lookup", "--json", "--table",
                        str(table.path), "-"], input=stdin, capture_output=True, text=True,
                       timeout=300)
    answers = [json.loads(x) for x in p.stdout.splitlines()]
    failed = sum("error" in a for a in answers)
    assert p.returncode == (2 if failed else 0) and "Traceback" not in p.stderr
    assert p.stderr == (f"c4table: error: {failed:,} of 3,000 positions could not be answered "
                        "(see the error answers)\n" if failed else "")
    assert len(answers) == len(lines)
    for line, a in zip(lines, answers):
        assert a["position"] == clip(line.strip()) and a["board"] == "5x4"
        if "error" in a:
            with pytest.raises(IllegalPositionError):
                Position.from_moves(table.board, line)
        else:
            assert a["outcome"] in ("A", "B", "draw")


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(move_text, st.sampled_from(["--json", "--board", "5x4", "4x4", "--x",
                                                      "-h", "--", "9x9"])), max_size=4))
def test_lookup_cli_arguments(table, capsys, args):
    """Random argument lists for ``lookup`` (in-process): exit 0 or 2, or 1 for a table that
    does not fit the given board; one error line; a refused position is an error answer."""
    from c4table.cli import main
    assume("-" not in args)          # "-" reads stdin
    with pytest.raises(SystemExit) as e:
        main(["lookup", "--table", str(table.path), *args])
    out = capsys.readouterr()
    assert e.value.code in (0, 1, 2), (args, out.err)
    if e.value.code:
        assert out.err.count("\n") == 1 and out.err.startswith("c4table: error:"), (args, out.err)
        assert len(out.err) < 300, out.err
        if e.value.code == 1:
            assert "--board" in args, (args, out.err)
    else:
        assert out.err == ""


# ------------------------------------------------------------------ drawings
try:
    from c4table import drawing
except ImportError:  # drawings are optional here: only these tests skip
    drawing = None
needs_drawing = pytest.mark.skipif(drawing is None, reason="c4table.drawing is not there")


@st.composite
def grids(draw, max_w: int = 5, max_h: int = 5):
    """Random pictures: ``h`` rows of ``w`` cells from ``.AB`` (mostly stacked, some floating)."""
    w, h = draw(st.integers(1, max_w)), draw(st.integers(1, max_h))
    cols = []
    for _ in range(w):
        n = draw(st.integers(0, h))
        cells = [draw(st.sampled_from("AB")) for _ in range(n)] + ["."] * (h - n)
        if draw(st.integers(0, 9)) == 0:          # a floating chip now and then
            cells[draw(st.integers(0, h - 1))] = draw(st.sampled_from(".AB"))
        cols.append(cells)
    sep = draw(st.sampled_from(["", " ", "|"]))
    return "\n".join(sep.join(cols[c][r] for c in range(w)) for r in range(h - 1, -1, -1))


@needs_drawing
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(alphabet=".ABxXoO \n|#12345*^\t-", max_size=60), any_text))
def test_parse_drawing_random_text_only_documented_errors(text):
    try:
        pos = drawing.parse_drawing(text, "5x4")
    except IllegalPositionError as e:
        assert str(e)
        return
    assert Position.from_moves(pos.board, pos.move_string()).key() == pos.key()


@needs_drawing
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(grids())
def test_parse_drawing_random_grids_round_trip(text):
    try:
        pos = drawing.parse_drawing(text)
    except (IllegalPositionError, BoardError) as e:
        assert str(e)
        return
    # the move order found replays to the very same picture, and the picture parses back
    replay = Position.from_moves(pos.board, pos.move_string())
    assert replay.cols == pos.cols
    cells = [line.replace(" ", "").replace("|", "") for line in text.splitlines()]
    assert drawing.render(replay, numbers=False).replace(" ", "").splitlines() == cells
    assert drawing.parse_drawing(drawing.render(pos)).key() == pos.key()


@needs_drawing
@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_drawings_of_real_games_parse_and_probe_alike(table, data):
    moves = data.draw(games(table.board))
    pos = Position.from_moves(table.board, moves)
    again = drawing.parse_drawing(drawing.render(pos, marks=[1]), table.board)
    assert again.cols == pos.cols
    a, b = table.probe(pos), table.probe(again)
    assert (a.outcome, a.distance, a.terminal) == (b.outcome, b.distance, b.terminal)
