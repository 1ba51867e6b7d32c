"""The web board in a real browser: Debian's headless chromium, driven by Playwright (no browser
download: the system binary is passed as ``executable_path``), against a real ``c4table
serve``. It clicks columns, and checks every label the page shows (outcome for the side to
move, distance, best-move mark) against ``c4table lookup --json`` run as a subprocess; then
undo, redo, flip, the board picker, the position in the URL and play against perfect play.

Skipped only when no chromium binary can be found (``.ci/run`` installs Debian's)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli


def find_chromium() -> str | None:
    for name in [os.environ.get("C4TABLE_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CHROMIUM = find_chromium()
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (apt-get install chromium)"),
              pytest.mark.slow]   # a browser: seconds (make check leaves it out)


@pytest.fixture(scope="module")
def tables(built):
    return built("5x4") / "connect4_5x4.dat", built("4x4") / "connect4_4x4.dat"


@pytest.fixture(scope="module")
def server(tables):
    import httpx
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c4 = shutil.which("c4table", path=str(Path(sys.executable).parent)) or "c4table"
    proc = subprocess.Popen([c4, "serve", "--table", str(tables[0]), "--table", str(tables[1]),
                             "--port", str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + "/healthz", timeout=2)
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def page(server):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        pg = browser.new_page(viewport={"width": 420, "height": 800})   # a phone-sized screen
        yield pg
        browser.close()


def lookup(table: Path, moves: str) -> dict:
    code, out, err = run_cli("lookup", "--json", "--table", str(table), moves)
    assert code == 0, err
    return json.loads(out)


def wait_for_ply(page, ply: int) -> None:
    page.wait_for_function(f"document.getElementById('status').textContent.startsWith('ply {ply}')",
                           timeout=15_000)


def shown_labels(page) -> dict[int, dict]:
    """Column -> what its label shows: outcome and distance (data attributes), the visible
    words, whether it is marked best."""
    return page.eval_on_selector_all(".col", """cols => Object.fromEntries(cols.map(c => {
        const l = c.querySelector('.label');
        return [c.dataset.column, {outcome: l.dataset.outcome || null,
                 distance: l.dataset.distance ? Number(l.dataset.distance) : null,
                 text: l.innerText.replace(/\\s+/g, ' ').trim(), best: l.classList.contains('best'),
                 kind: ['win', 'draw', 'loss'].find(k => l.classList.contains(k)) || null,
                 disabled: c.disabled}];
    }))""")


def check_against_lookup(page, table: Path, moves: str) -> dict:
    want = lookup(table, moves)
    labels = shown_labels(page)
    width = len(labels)
    by_col = {m["column"]: m for m in want["moves"]}
    rank = {m["column"]: (0, m["distance"]) if m["outcome"] == want["to_move"] else
            (1, 0) if m["outcome"] == "draw" else (2, -m["distance"]) for m in want["moves"]}
    best = {c for c in rank if rank[c] == min(rank.values())}
    for c in range(1, width + 1):
        got = labels[str(c)]
        if c not in by_col:
            assert got["outcome"] is None and got["disabled"], (moves, c, got)
            continue
        m = by_col[c]
        kind = "draw" if m["outcome"] == "draw" else "win" if m["outcome"] == want["to_move"] else "loss"
        assert (got["outcome"], got["distance"], got["kind"]) == (m["outcome"], m["distance"], kind), (moves, c)
        assert got["text"] == ("\u2605" if c in best else "") + f"{kind} {m['distance']}", (moves, c, got)
        assert got["best"] == (c in best), (moves, c)
    status = page.text_content("#status")
    assert status.startswith(f"ply {want['ply']}")
    if not want["terminal"]:
        head = "draw" if want["outcome"] == "draw" else f"{want['outcome']} wins"
        assert f"{want['to_move']} to move: {head} in {want['distance']} pl" in status
    return want


def test_clicking_columns_shows_the_lookup_answers(page, server, tables):
    t54 = tables[0]
    page.goto(server + "/?board=5x4")
    wait_for_ply(page, 0)
    check_against_lookup(page, t54, "")
    moves = ""
    for c in "33442":
        page.click(f".col[data-column='{c}']")
        moves += c
        wait_for_ply(page, len(moves))
        check_against_lookup(page, t54, moves)
    assert f"moves={moves}" in page.url and "board=5x4" in page.url
    assert page.text_content("#movestr") == moves
    # chips drawn where they fell: column 3 holds A (bottom) then B
    col3 = page.eval_on_selector_all(".col[data-column='3'] .cell", "cs => cs.map(c => c.className)")
    assert col3[-1] == "cell A" and col3[-2] == "cell B"
    page.click("#undo")
    wait_for_ply(page, 4)
    check_against_lookup(page, t54, "3344")
    page.click("#redo")
    wait_for_ply(page, 5)
    check_against_lookup(page, t54, "33442")
    page.click("#flip")
    assert "flipped" in page.get_attribute("#board", "class") and "flip=1" in page.url
    xs = page.eval_on_selector_all(".col", "cs => cs.map(c => [Number(c.dataset.column), c.getBoundingClientRect().x])")
    assert [c for c, _ in sorted(xs, key=lambda p: p[1])] == [5, 4, 3, 2, 1]   # mirrored on screen


def test_shared_url_board_picker_and_perfect_play(page, server, tables):
    t54, t44 = tables
    page.goto(server + "/?board=4x4&moves=2332")
    wait_for_ply(page, 4)
    assert page.is_visible("#board-select")             # two tables served: the picker shows
    assert len(page.query_selector_all(".col")) == 4
    check_against_lookup(page, t44, "2332")
    page.select_option("#board-select", "5x4")
    wait_for_ply(page, 0)
    assert len(page.query_selector_all(".col")) == 5 and "board=5x4" in page.url
    # perfect play takes B: after each move of ours it answers with a best move
    page.select_option("#computer", "B")
    moves = ""
    for c in "31":
        before = lookup(t54, moves + c)
        page.click(f".col[data-column='{c}']")
        moves += c
        wait_for_ply(page, len(moves) + 1)
        reply = page.text_content("#movestr")[-1]
        assert page.text_content("#movestr") == moves + reply
        best = [m for m in before["moves"] if m["outcome"] == before["outcome"] and
                m["distance"] == before["distance"]]
        assert int(reply) in {m["column"] for m in best}, (moves, reply, before)
        moves += reply
        check_against_lookup(page, t54, moves)
    page.click("#undo")                                 # back to our turn: two plies
    wait_for_ply(page, 2)
    assert page.text_content("#movestr") == moves[:2]


def test_a_won_game_marks_its_winning_four(page, server):
    page.goto(server + "/?board=4x4&moves=1213141")
    wait_for_ply(page, 7)
    assert "game over, A has won" in page.text_content("#status")
    won = page.eval_on_selector_all(".col", """cols => cols.flatMap(c =>
        [...c.querySelectorAll('.cell')].map((cell, i, all) =>
            cell.classList.contains('won') ? [Number(c.dataset.column), all.length - i] : null)
        .filter(x => x))""")
    assert sorted(won) == [[1, 1], [1, 2], [1, 3], [1, 4]]


@pytest.mark.parametrize("query, shown, api_path, names", [
    ("board=7x6&moves=44", "4x4", "/api/7x6?moves=44", "board '7x6' is not served here (served: 4x4, 5x4)"),
    ("board=5x4&moves=99", "5x4", "/api/5x4?moves=99", "bad move '9' (character 1 of '99')"),
    ("board=5x4&moves=3311111", "5x4", "/api/5x4?moves=3311111", "column 1 is full"),
    ("moves=55", "4x4", "/api/4x4?moves=55", "bad move '5'"),      # no board: the first served
])
def test_a_link_the_board_cannot_show_says_why(page, server, query, shown, api_path, names):
    """A link to a board not served, or with a bad move, shows the server's message for it
    (the API's error for that board and those moves) above the board, which shows the served
    board's start instead; the notice goes when the user plays."""
    import httpx
    want = httpx.get(server + api_path).json()["error"]
    assert names in want
    page.goto(f"{server}/?{query}")
    wait_for_ply(page, 0)
    assert page.is_visible("#notice")
    assert page.text_content("#notice") == (f"This link's position cannot be shown: {want}. "
                                            f"Showing {shown} from the start instead.")
    assert len(page.query_selector_all(".col")) == int(shown.split("x")[0])
    assert page.eval_on_selector_all(".cell.A, .cell.B", "cs => cs.length") == 0
    assert page.text_content("#movestr") == "(empty board)"
    assert f"board={shown}&moves=" in page.url
    page.click(".col[data-column='1']")
    wait_for_ply(page, 1)
    assert not page.is_visible("#notice")


def test_a_good_link_shows_no_notice(page, server):
    page.goto(server + "/?board=5x4&moves=3344")
    wait_for_ply(page, 4)
    assert not page.is_visible("#notice") and page.text_content("#movestr") == "3344"
