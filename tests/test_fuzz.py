"""Property-based fuzzing (hypothesis) of position parsing and lookup: thousands of random move
strings (arbitrary text, digit strings, real games) and drawings against ``Board.parse``,
``Position.from_moves``, ``Table.probe``, ``drawing.parse_drawing`` and the ``lookup`` command
line; and random argument lists (with piped stdin) for every other subcommand (``bdd``,
``crosscheck``, ``plan``, ``stats``, ``export``, ``verify``, ``play``, ``best``) against the
CLI's promise: exit 0/1/2, no traceback, one error line under 300 characters on failure. Nothing may escape but
the documented errors (:class:`BoardError`, :class:`IllegalPositionError`), and every answer
must be consistent (ply, side to move, best move = position's value)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from c4table.game import drawing
from c4table.game.board import Board
from c4table.errors import BoardError, IllegalPositionError
from c4table.game.rules import Position
from c4table.open import open_table
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


@pytest.mark.slow
@FAST
@given(st.one_of(st.text(max_size=20), board_specs))
def test_board_parse_only_board_errors(spec):
    try:
        b = Board.parse(spec)
    except BoardError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert 1 <= b.width and 1 <= b.height and b.width * (b.height + 1) <= 64


@pytest.mark.slow
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


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(move_text)
def test_probe_random_strings(table, text):
    try:
        p = table.probe(text)
    except IllegalPositionError as e:
        assert str(e) and "\n" not in str(e)
        return
    _check_probe(p, table.board)


@pytest.mark.slow
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
    p = subprocess.run([sys.executable, "-m", "c4table.cli.main", "lookup", "--json", "--table",
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
    from c4table.cli.main import main
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


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(alphabet=".ABxXoO \n|#12345*^\t-", max_size=60), any_text))
def test_parse_drawing_random_text_only_documented_errors(text):
    try:
        pos = drawing.parse_drawing(text, "5x4")
    except IllegalPositionError as e:
        assert str(e)
        return
    assert Position.from_moves(pos.board, pos.move_string()).key() == pos.key()


@pytest.mark.slow
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


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_drawings_of_real_games_parse_and_probe_alike(table, data):
    moves = data.draw(games(table.board))
    pos = Position.from_moves(table.board, moves)
    again = drawing.parse_drawing(drawing.render(pos, marks=[1]), table.board)
    assert again.cols == pos.cols
    a, b = table.probe(pos), table.probe(again)
    assert (a.outcome, a.distance, a.terminal) == (b.outcome, b.distance, b.terminal)


# ------------------------------------------------- every subcommand: random argument lists
# Each command gets random argument lists drawn from its options, good and bad values and
# random text; the invariant is the CLI's promise: exit 0, 1 or 2; no traceback; a failure
# ends with one "c4table: error:" line under 300 characters; success prints no error line.
# In-process through c4table.cli.main.main (the console script's function) to stay cheap;
# tests/test_cli_script.py runs the real script.

@pytest.fixture(scope="module")
def fuzz_files(built, tmp_path_factory):
    """Paths the argument lists draw from: a 3x3 build, damaged and foreign files."""
    import shutil
    d = built("3x3")
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "text.txt").write_text("hello\n")
    (tmp / "connect4_3x3.dat").write_bytes(b"")                  # empty table
    (tmp / "odd").mkdir()
    (tmp / "odd" / "connect4_3x3.dat").write_bytes(b"\x00" * 7)  # not whole entries
    (tmp / "list").mkdir()
    (tmp / "list" / "manifest.json").write_text("[]")
    tampered = tmp / "tampered"
    tampered.mkdir()
    man = json.loads((d / "manifest.json").read_text())
    man["plies"][2]["positions"] += 1                            # checksum no longer holds
    (tampered / "manifest.json").write_text(json.dumps(man))
    shutil.copy(d / "connect4_3x3.dat", tampered / "connect4_3x3.dat")
    (tmp / "board.txt").write_text("...\n...\nAB.\n")
    return {"dir": str(d), "table": str(d / "connect4_3x3.dat"), "manifest": str(d / "manifest.json"),
            "text": str(tmp / "text.txt"), "empty": str(tmp / "connect4_3x3.dat"),
            "odd": str(tmp / "odd" / "connect4_3x3.dat"), "list": str(tmp / "list"),
            "tampered": str(tampered), "missing": str(tmp / "nope" / "x"), "tmp": str(tmp),
            "drawing": str(tmp / "board.txt")}


def _spec(files: dict, command: str) -> tuple[list[list[str]], dict[str, list[str]]]:
    """(positional argument lists, option -> values; a flag has no values) of a command,
    good and bad mixed."""
    f = files
    paths = [f["dir"], f["table"], f["manifest"], f["text"], f["empty"], f["odd"], f["list"],
             f["tampered"], f["missing"], ""]
    boards = ["3x3", "2x2", "1x1", "0x3", "9x9", "x", "3by3", "-3x3"]
    engine = {"--encoding": ["plain", "compressed", "zz"], "--bdd-nodes": ["1024", "2K", "lots", "0"],
              "--threads": ["1", "0"], "--engine": ["bdd", "bcdd", "zz"],
              "--terminal": ["union", "lines"], "--image": ["mono", "part", "x"], "-q": []}
    return {
        "bdd": ([[c, b] for c in ("count", "solve") for b in ("3x3", "2x2", "3x2", "1x1")]
                + [[c, b] for c in ("count", "x") for b in boards] + [["count"]],
                {**engine, "--json": []}),
        "crosscheck": ([[p] for p in paths + [f["tmp"]]], engine),
        "plan": ([[b] for b in boards + ["7x6", "5x4"]],
                 {"--workers": ["1", "0", "64", "x"], "--memory-per-worker": ["4GiB", "0", "-1", "1.5.2G"],
                  "--from": [f["dir"], f["missing"], f["text"], f["list"]], "--json": []}),
        "stats": ([[p] for p in paths],
                  {"--format": ["tsv", "markdown", "zz"], "--scan": [], "--board": boards[:2] + ["x"],
                   "--png": [f["missing"] + ".png"], "-q": []}),
        "export": ([["--table", f["table"], "--out", f["tmp"] + "/y.parquet"]] * 3 + [[]],
                   {"--table": paths, "--ply": ["0", "3", "9", "10", "-1", "x", "all"],
                          "--out": [f["tmp"] + "/x.parquet", f["tmp"] + "/x.csv", f["missing"] + ".pq"],
                          "--nonterminal": [], "--mirror": [], "--source": ["auto", "table", "shards", "zz"],
                          "--board": ["3x3", "5x4", "x"], "-q": []}),
        "verify": ([[p] for p in paths], {"--sha256": ["0" * 64, "g" * 64, "abc"],
                                          "--board": ["3x3", "5x4", "x"], "-q": []}),
        "play": ([["--table", f["table"]]] * 3 + [[]], {"--table": [f["table"], f["empty"], f["odd"], f["missing"]],
                        "--side": ["A", "B", "b", "C"], "--start": ["1", "11", "1111", "x", "", "9" * 400],
                        "--drawing": [f["drawing"], "-", f["missing"], f["text"]],
                        "--board": ["3x3", "5x4"]}),
        "best": ([["--table", f["table"], p] for p in ("1", "22", "1111", "", "x", "-", "\x00" * 3)],
                 {"--table": [f["table"], f["odd"], f["empty"]], "--board": ["3x3", "4x4"],
                  "--draw": [], "--json": [], "--drawing": [f["drawing"], f["text"], "-"]}),
    }[command]


@st.composite
def argument_lists(draw, spec):
    """A positional choice plus a few options with values from ``spec``; now and then a
    random token."""
    positional, options = spec
    args = list(draw(st.sampled_from(positional)))
    for opt in draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True)):
        args.append(opt)
        if options[opt]:
            args.append(draw(st.sampled_from(options[opt])))
    if draw(st.integers(0, 4)) == 0:
        args.insert(draw(st.integers(0, len(args))), draw(st.one_of(
            st.text(max_size=8), st.sampled_from(["--bogus", "-h", "--", "\u00e9", "9" * 400]))))
    return args


def _run_main(argv: list[str], stdin: str, capsys) -> tuple[int, str, str]:
    import io
    from c4table.cli.main import main
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with pytest.raises(SystemExit) as e:
            main(argv)
    finally:
        sys.stdin = old
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def _check_promise(argv, code, out, err) -> None:
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err and "Traceback" not in out, (argv, err)
    errors = [x for x in err.splitlines() if x.startswith("c4table: error:")]
    assert all(len(x) < 300 for x in errors), (argv, errors)
    if code == 0:
        assert not errors, (argv, err)
    else:
        assert err.splitlines() and err.splitlines()[-1].startswith("c4table: error: "), \
            (argv, code, err)
        assert len(errors) == 1, (argv, err)


COMMANDS_FUZZED = ["bdd", "crosscheck", "plan", "stats", "export", "verify", "play", "best"]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS_FUZZED)
def test_every_subcommand_keeps_the_error_promise(fuzz_files, capsys, command):
    spec = _spec(fuzz_files, command)
    stdin_lines = st.lists(st.one_of(st.sampled_from(["1", "2", "3", "h", "u", "q", "9", ""]),
                                     st.text(max_size=6)), max_size=12)

    @settings(max_examples=25 if command in ("bdd", "crosscheck") else 40, deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=True)
    @given(argument_lists(spec), stdin_lines)
    def run(args, lines):
        argv = [command, *args]
        code, out, err = _run_main(argv, "".join(x + "\n" for x in lines), capsys)
        _check_promise(argv, code, out, err)
        seen[code] = seen.get(code, 0) + 1

    seen: dict[int, int] = {}
    for good in _GOOD[command](fuzz_files):    # runs that must succeed, then random ones
        code, out, err = _run_main([command, *good], "q\n", capsys)
        assert code == 0, (good, err)
    run()
    assert set(seen) - {0}, seen          # the random lists did reach failures


_GOOD = {
    "bdd": lambda f: [["count", "3x3", "-q"], ["solve", "2x2", "--json", "-q"]],
    "crosscheck": lambda f: [[f["dir"], "-q"]],
    "plan": lambda f: [["3x3", "--from", f["dir"]], ["5x4", "--json"]],
    "stats": lambda f: [[f["dir"]], [f["table"], "--scan", "-q"]],
    "export": lambda f: [["--table", f["table"], "--ply", "3", "--out", f["tmp"] + "/g.parquet", "-q"]],
    "verify": lambda f: [[f["table"], "-q"], [f["dir"], "-q"]],
    "play": lambda f: [["--table", f["table"]], ["--table", f["table"], "--drawing", f["drawing"]]],
    "best": lambda f: [["--table", f["table"], "1", "--draw"]],
}
