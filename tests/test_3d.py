"""3D gravity boards (``XxYxH``, docs/FORMAT.md section 8): every table entry against the
brute-force oracle (``c4table/testing/oracle.py``, written again for 3D and sharing no code with
c4table), per-ply counts, symmetry of built tables, and the ``Xx1xH`` / ``1xYxH`` boards, which
are the 2D boards ``XxH`` / ``YxH`` and must give their tables byte for byte (the 4x4 one is
Cadot's, sha256 ``b4a8e976...``), built by the 3D kernels."""
from __future__ import annotations

import hashlib
import json
import random

import pytest

from c4table.game.board import Board
from c4table.errors import BoardError
from c4table.game.grid3d import symmetries
from c4table.pipeline.stages.build import build_table
from c4table.game.rules import Position
from c4table.open import open_table
from conftest import published_tables, random_positions, run_cli
from c4table.testing.oracle import oracle_bytes3d, oracle_ply_counts3d

#: Boards of at most 16 cells (X, Y, H, K): square grids (8 symmetries) and oblong ones (4).
ORACLE_BOARDS = [(2, 2, 4, 3), (2, 3, 2, 3), (3, 2, 2, 3), (3, 3, 1, 3), (2, 2, 3, 2),
                 (2, 2, 2, 2), (2, 2, 3, 3)]


@pytest.fixture(scope="module")
def built3d(tmp_path_factory):
    cache = {}

    def get(x, y, h, k):
        if (x, y, h, k) not in cache:
            d = tmp_path_factory.mktemp(f"t{x}x{y}x{h}k{k}")
            cache[(x, y, h, k)] = build_table(Board.grid3d(x, y, h, k), d, quiet=True, workers=1)
        return cache[(x, y, h, k)]
    return get


@pytest.mark.slow
@pytest.mark.parametrize("x,y,h,k", ORACLE_BOARDS, ids=lambda v: str(v))
def test_every_entry_equals_oracle(built3d, x, y, h, k):
    path = built3d(x, y, h, k)
    assert path.name == f"connect{k}_{x}x{y}x{h}.dat"
    assert path.read_bytes() == oracle_bytes3d(x, y, h, k)


@pytest.mark.parametrize("x,y,h,k", [(2, 2, 3, 3), (3, 2, 2, 3)], ids=lambda v: str(v))
def test_per_ply_counts_equal_oracle(built3d, x, y, h, k):
    """Positions count every image (up to 8 per entry), as 2D counts mirror images."""
    d = built3d(x, y, h, k).parent
    plies = json.loads((d / "manifest.json").read_text())["plies"]
    ref = oracle_ply_counts3d(x, y, h, k)
    assert len(plies) == len(ref) == x * y * h + 1
    for mine, theirs in zip(plies, ref):
        for field in ("positions", "entries", "terminal", "a_wins", "draws", "b_wins"):
            assert mine[field] == theirs[field], (mine["ply"], field)
    from c4table.analysis.stats import ply_stats
    assert ply_stats(d) == ply_stats(d / f"connect{k}_{x}x{y}x{h}.dat", scan=True)
    from c4table.pipeline.planning.plan3d import make_plan3d   # small boards: the plan counts them all
    plan = make_plan3d(Board.grid3d(x, y, h, k), 1, 2**30)
    assert [(p.positions, p.entries) for p in plan.plies] == \
        [(r["positions"], r["entries"]) for r in ref]


def test_plan_of_4x4x4_says_what_it_needs():
    """The plan's first plies of 4x4x4 (K = 4) are the oracle's (independent enumeration and
    keys); the keys' 80 bits are said not to fit."""
    from c4table.pipeline.planning.plan3d import make_plan3d
    from c4table.testing.oracle import A as CHIP_A, B as CHIP_B, play, position_key3d
    p = make_plan3d(Board.parse("4x4x4"), 64, 16 * 2**30, limit=400).to_json()
    layer = {tuple(() for _ in range(16))}
    for g in range(4):
        got = p["plies"][g]
        assert (got["positions"], got["entries"], got["source"]) == \
            (len(layer), len({position_key3d(q, 4, 4, 4, 4) for q in layer}), "exact (enumerated)")
        layer = {play(q, c, CHIP_A if g % 2 == 0 else CHIP_B) for q in layer for c in range(16)}
    assert p["final_bytes"] == 11 * p["entries"]      # 80-bit keys: 10 bytes, and the outcome
    assert any("80 bits do not fit in 64" in n for n in p["notes"])


def _image(pos: Position, perm) -> Position:
    """The position reached by the same game played in the mapped columns."""
    return Position.from_columns(pos.board, [perm[c] for c in pos.moves])


@pytest.mark.parametrize("x,y,h,k", [(3, 3, 2, 3), (4, 2, 2, 3), (2, 2, 4, 3)],
                         ids=lambda v: str(v))
def test_every_image_answers_alike(built3d, x, y, h, k):
    """For random positions of a built table and each of the grid's 8 (square) or 4
    symmetries: the image is terminal alike, answers the same outcome, and each move's answer
    is that of the mapped move; the table's answer also follows by one step of minimax from
    the answers of the image's children (so the images are the same game, not just one key)."""
    b = Board.grid3d(x, y, h, k)
    perms = symmetries(b)
    assert len(perms) == (8 if x == y else 4)
    with open_table(built3d(x, y, h, k)) as t:
        for pos in random_positions(b, 150, seed=3):
            p = t.probe(pos)
            for perm in perms:
                img = _image(pos, perm)
                q = t.probe(img)
                assert (q.outcome, q.distance, q.terminal) == (p.outcome, p.distance, p.terminal)
                assert img.winner == pos.winner
                mapped = {perm[m.column - 1] + 1: (m.outcome, m.distance) for m in p.moves}
                assert {m.column: (m.outcome, m.distance) for m in q.moves} == mapped
                if not q.terminal:
                    best = q.best_moves()[0]
                    assert (best.outcome, best.distance) == (q.outcome, q.distance)


@pytest.mark.parametrize("x,y,h,k,flat", [(4, 1, 4, 4, "4x4"), (4, 1, 4, 3, "4x4k3"),
                                          (1, 5, 3, 3, "5x3k3"), (1, 4, 4, 4, "4x4")],
                         ids=lambda v: str(v))
def test_a_row_of_columns_is_the_2d_game(built3d, tmp_path, x, y, h, k, flat):
    """An Xx1xH (or 1xYxH) board is the 2D board XxH (YxH): its 3D lines are the 2D lines and
    its symmetries the mirror, so the 3D kernels must write the 2D table byte for byte."""
    three = built3d(x, y, h, k).read_bytes()
    two = build_table(flat, tmp_path, quiet=True, workers=1).read_bytes()
    assert three == two
    if flat == "4x4":   # and that is Cadot's 4x4 table
        assert hashlib.sha256(three).hexdigest() == published_tables()["4x4"]["sha256"]


def test_boards_and_names():
    b = Board.parse("3x3x3", k=3)
    assert b == Board.parse("3x3x3k3") == Board.grid3d(3, 3, 3, 3) == Board.from_spec(b.spec)
    assert (b.width, b.cells, b.base, b.key_bytes, b.name) == (9, 27, 15, 5, "3x3x3k3")
    assert Board.of_table_name("dir/connect3_3x3x3.dat") == b
    assert Board.parse("9x3k3") != b          # a 2D board of as many columns is another game
    with pytest.raises(BoardError, match="80 bits"):
        Board.parse("4x4x4").check_buildable()      # planned, not built
    with pytest.raises(BoardError, match="no line of 5"):
        Board.parse("3x3x3k5")


@pytest.mark.slow
def test_cli_on_a_3d_board(tmp_path):
    out = tmp_path / "t"
    code, _, err = run_cli("build", "2x2x4", "--connect", "3", "--out", str(out), "--quiet")
    assert code == 0, err
    table = str(out / "connect3_2x2x4.dat")
    code, text, _ = run_cli("lookup", "--json", "--table", table, "1", "")
    assert code == 0
    answers = [json.loads(line) for line in text.splitlines()]
    assert [a["board"] for a in answers] == ["2x2x4k3"] * 2
    assert [len(a["moves"]) for a in answers] == [4, 4]
    code, text, _ = run_cli("lookup", "--draw", "--table", table, "1412")
    assert code == 0 and "layer 4" in text and "columns" in text
    code, text, _ = run_cli("play", "--table", table, "--side", "B", stdin="1\n2\n3\n4\n1\n2\nq\n")
    assert code == 0 and "layer 1" in text
    code, text, _ = run_cli("stats", str(out), "--format", "tsv")
    assert code == 0 and text.splitlines()[-1].startswith("16\t")   # plies 0..16
    pq = tmp_path / "p.parquet"
    code, _, err = run_cli("export", "--table", table, "--ply", "3", "--out", str(pq))
    assert code == 0, err
    import pyarrow.parquet as parquet
    rows = parquet.read_table(pq)
    assert rows.column_names[:3] == ["a1z1", "a1z2", "a1z3"]
    assert rows.num_rows == json.loads((out / "manifest.json").read_text())["plies"][3]["entries"]
    for moves in rows.column("moves").to_pylist():   # each row's move order reaches its cells
        assert Position.from_moves(Board.grid3d(2, 2, 4, 3), moves).ply == 3
    code, _, err = run_cli("build", "4x4x4", "--out", str(tmp_path / "big"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "80 bits, more than the 64" in err
    code, _, err = run_cli("best", "--table", table, "--drawing", "-", stdin="..\n..\n")
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_compressed_3d_table_and_what_3d_boards_refuse(built3d, tmp_path):
    """A .c4z of a 3D table knows its grid; the parts that know 2D boards only (BDD mode,
    rooted builds, the web board) refuse a 3D board in one error rather than misread it."""
    from c4table.bdd import count_positions
    from c4table.c4z.writer import compress_table
    from c4table.errors import C4Error
    from c4table.pipeline.stages.build import open_build
    from c4table.serve.app import load_tables
    path = built3d(2, 2, 4, 3)
    z = compress_table(path, tmp_path / "t.c4z", quiet=True)
    with open_table(path) as t, open_table(z) as tz:
        assert tz.board == t.board == Board.grid3d(2, 2, 4, 3)
        for pos in random_positions(t.board, 30, seed=5):
            assert tz.probe(pos) == t.probe(pos)
    with pytest.raises(BoardError, match="BDD mode knows 2D boards only"):
        count_positions(Board.grid3d(2, 2, 3, 3))
    with pytest.raises(BoardError, match="rooted builds"):
        open_build(Board.grid3d(2, 2, 3, 3), tmp_path / "r", root="1")
    with pytest.raises(C4Error, match="3D board"):
        load_tables([path])
