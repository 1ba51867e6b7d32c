"""The probe server's JSON API (c4table serve), through Starlette's TestClient: answers equal to
what ``c4table lookup --json`` prints (run as a subprocess), 4x4 answers checked against the
brute-force oracle, mainlines that really are perfect play to the end, the CLI's error lines,
404s (unserved board, a position absent from a partial table), 1,000 malformed requests
answered 4xx with a JSON error, the cache and metrics, CORS, OpenAPI, the static page, and the
``serve`` command itself (one-line errors, a real uvicorn with two workers)."""
from __future__ import annotations

import json
import random
import shutil
import socket
import subprocess
import sys
import time
import warnings
from urllib.parse import quote
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")
with warnings.catch_warnings():   # Starlette >= 1.x suggests httpx2; httpx still works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient  # noqa: E402

from c4table.game.board import Board  # noqa: E402
from c4table.serve.app import MAX_BATCH, create_app  # noqa: E402
from conftest import describe_table, random_positions, run_cli, tool, tool_env  # noqa: E402


def random_move_strings(board: Board, n: int, seed: int) -> list[str]:
    """Legal move strings of random games cut at random lengths (finished games included)."""
    return [p.move_string() for p in random_positions(board, n, seed)]
from c4table.testing import oracle  # noqa: E402


@pytest.fixture(scope="module")
def t44(built):
    return built("4x4") / "connect4_4x4.dat"


@pytest.fixture(scope="module")
def client(t54, t44):
    with TestClient(create_app([t54, t44], cache_size=1000), raise_server_exceptions=False) as c:
        yield c




def lookup_lines(table: Path, positions: list[str]) -> list[str]:
    code, out, err = run_cli("lookup", "--json", "--table", str(table), "-", stdin="\n".join(positions) + "\n")
    assert err == "" or code == 2, err
    return out.splitlines()


# ------------------------------------------------------------------------------ answers
@pytest.mark.slow
def test_position_is_the_lookup_json_object(client, t54):
    positions = ["", "3344", "33"] + random_move_strings(Board.parse("5x4"), 150, seed=1)
    lines = lookup_lines(t54, positions)
    assert len(lines) == len(positions)
    for moves, line in zip(positions, lines):
        r = client.get("/api/5x4", params={"moves": moves})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.json() == json.loads(line)
        assert r.text == line          # the very text lookup --json prints
    assert client.get("/api/5x4").json() == json.loads(lines[0])   # no moves: the empty board
    drawing = ".....\n.....\n..o..\n.xxo.\n"                       # a drawing, as lookup --drawing
    code, out, err = run_cli("lookup", "--json", "--table", str(t54), "--drawing", "-", stdin=drawing)
    assert code == 0 and client.get("/api/5x4", params={"moves": drawing}).text == out.strip()


def test_batch_is_lookup_json_of_stdin(client, t54):
    positions = random_move_strings(Board.parse("5x4"), 300, seed=2) + ["9", "33333", "3a", ""]
    r = client.post("/api/5x4/batch", json=positions)
    assert r.status_code == 200
    assert r.json() == [json.loads(line) for line in lookup_lines(t54, positions)]
    errors = [o for o in r.json() if "error" in o]
    assert [o["position"] for o in errors] == ["9", "33333", "3a"]


def test_a_batch_item_that_is_not_a_string_is_named_unambiguously(client):
    """The message counts items from 1, as the command line counts characters and columns,
    and gives the JSON index too (a client's list counts from 0)."""
    items = ["3344", "", "33", 33, "1"]
    r = client.post("/api/5x4/batch", json=items)
    assert r.status_code == 400
    assert r.json()["error"] == ("item 4 of the batch (index 3, counting from 0) is int, not a "
                                 "move string")
    assert not isinstance(items[3], str) and all(isinstance(x, str) for x in items[:3])


@pytest.mark.slow
def test_4x4_answers_match_the_oracle(client):
    table = oracle.oracle_table(4, 4)
    kind = {oracle.DRAW: "draw", oracle.A_WINS: "A", oracle.B_WINS: "B"}
    for moves in random_move_strings(Board.parse("4x4"), 120, seed=3):
        got = client.get("/api/4x4", params={"moves": moves}).json()
        byte = table[oracle.oracle_key(4, 4, moves)]
        assert (got["outcome"], got["distance"]) == (kind[byte & 0xC0], byte & 0x3F)
        for m in got["moves"]:
            child = table[oracle.oracle_key(4, 4, moves + str(m["column"]))]
            assert (m["outcome"], m["distance"]) == (kind[child & 0xC0], (child & 0x3F) + 1)


def test_mainline_is_perfect_play_to_the_end(client):
    for moves in ["", "3344", "1"] + random_move_strings(Board.parse("5x4"), 25, seed=4):
        r = client.get("/api/5x4/mainline", params={"moves": moves})
        assert r.status_code == 200, r.text
        line = r.json()
        start = client.get("/api/5x4", params={"moves": moves}).json()
        assert (line["outcome"], line["distance"]) == (start["outcome"], start["distance"])
        assert len(line["mainline"]) == start["distance"]
        cur = moves
        for i, step in enumerate(line["mainline"]):
            here = client.get("/api/5x4", params={"moves": cur}).json()
            best = {m["column"]: m for m in here["moves"]}
            assert step == best[step["column"]]                 # the move's own answer
            assert step["outcome"] == start["outcome"] and step["distance"] == start["distance"] - i
            cur += str(step["column"])
        assert line["end"] == cur
        end = client.get("/api/5x4", params={"moves": cur}).json()
        assert end["terminal"] and end["distance"] == 0 and end["outcome"] == start["outcome"]
        assert line["winner"] == start["outcome"]


# ------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("moves", ["9", "0", "3a", "33333", "12121212", "x"])
def test_bad_position_is_400_with_the_cli_message(client, t54, moves):
    code, out, err = run_cli("lookup", "--json", "--table", str(t54), moves)
    assert code == 2 and err.startswith("c4table: error: ")   # the CLI's error answer:
    r = client.get("/api/5x4", params={"moves": moves})
    assert r.status_code == 400
    assert r.json() == {"error": json.loads(out)["error"]}


def test_unserved_board_and_unknown_paths_are_404_json(client):
    for path in ["/api/7x6", "/api/5x4x", "/api/7x6/mainline", "/nothing", "/api/5x4/nothing/else"]:
        r = client.get(path)
        assert r.status_code == 404 and "error" in r.json(), path
    assert "served: 4x4, 5x4" in client.get("/api/7x6").json()["error"]
    assert client.post("/api/7x6/batch", json=["1"]).status_code == 404


def test_the_web_boards_link_check_gets_the_reason_from_the_api(client):
    """The web board checks the position of a link (``/?board=B&moves=M``) by asking
    ``api/B?moves=M`` (both percent-encoded, as ``encodeURIComponent`` does) and shows the error
    it answers: a board not served, a bad move, a full column, each named."""
    page_js = (Path(__file__).resolve().parents[1] / "c4table" / "serve" / "web" / "app.js").read_text()
    assert '"api/" + encodeURIComponent(board) + "?moves=" + encodeURIComponent(moves)' in page_js
    cases = [("7x6", "44", 404, "board '7x6' is not served here (served: 4x4, 5x4)"),
             ("5x4", "99", 400, "bad move '9' (character 1 of '99'): columns are 1..5"),
             ("5x4", "3311111", 400, "move 7 in '3311111': column 1 is full"),
             ("4x4", "12a", 400, "bad move 'a' (character 3 of '12a')"),
             ("<b>", "", 404, "board '<b>' is not served here")]
    for board, moves, status, message in cases:
        r = client.get(f"/api/{quote(board, safe='')}?moves={quote(moves, safe='')}")
        assert r.status_code == status and r.json()["error"].startswith(message), (board, moves, r.text)
    for board, moves in [("5x4", "3344"), ("4x4", ""), ("5x4", "")]:     # a good link: no error
        assert client.get(f"/api/{board}?moves={moves}").status_code == 200


def documented_keys(page: str, marker: str) -> tuple[list[str], list[str]]:
    """The keys a page of docs/ lists after ``marker`` (up to the end of that sentence): those of
    the object, in order, and those of each move's object (in the parentheses after `moves`)."""
    import re
    text = (Path(__file__).resolve().parents[1] / "docs" / page).read_text()
    span = re.split(r"\.(?:\s|$)", text[text.index(marker) + len(marker):], maxsplit=1)[0]
    per_move = re.search(r"`moves` \(([^)]*)\)", span)
    keys = re.findall(r"`([a-z_]+)`", span[:per_move.start(1)] + span[per_move.end(1):])
    return keys, re.findall(r"`([a-z_]+)`", per_move.group(1))


def test_the_documented_json_keys_are_what_lookup_and_the_api_return(client, t54):
    """docs/cli.md (lookup --json) and docs/serve.md (GET /api/{board}) list the keys of a
    position's object, in order, ``winning_cells`` last; a won game has exactly those, a game
    still going or drawn all but ``winning_cells``, each move's object the move keys listed."""
    positions = ["12234334544", "1122334", "3344", "", "44523224314125531531"]   # won x2, going x2, drawn
    code, out, err = run_cli("lookup", "--json", "--table", str(t54), *positions)
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    assert [client.get("/api/5x4", params={"moves": p}).json() for p in positions] == objs
    assert objs[-1]["terminal"] and objs[-1]["outcome"] == "draw"
    assert objs[0]["winning_cells"] == [[1, 1], [2, 2], [3, 3], [4, 4]]     # a diagonal, from the bottom
    assert objs[1]["winning_cells"] == [[1, 1], [2, 1], [3, 1], [4, 1]]     # row 1: the bottom row
    for page, marker in [("cli.md", "`--json` prints one object per position; its keys, in order:"),
                         ("serve.md", "| `GET /api/{board}?moves=M` | exactly the object `c4table "
                                      "lookup --json` prints for `M` (same code, same bytes); its keys, "
                                      "in order:")]:
        keys, move_keys = documented_keys(page, marker)
        assert keys[-1] == "winning_cells", page
        for obj in objs:
            won = obj["terminal"] and obj["outcome"] != "draw"
            assert list(obj) == (keys if won else keys[:-1]), (page, obj["position"])
            assert all(list(m) == move_keys for m in obj["moves"]), page
        assert any(obj["moves"] for obj in objs)


def test_position_missing_from_a_partial_table_is_404(tmp_path, t44):
    """A table that lacks positions (as a rooted table does) answers 404, not 500, and does not
    show the server's file path."""
    from c4table.open import open_table
    data = t44.read_bytes()
    with open_table(t44) as t:
        E, key_bytes = t.entry_size, t.key_bytes
    n = len(data) // E
    part = tmp_path / "connect4_4x4.dat"
    part.write_bytes(data[: (n // 2) * E])
    describe_table(part, "4x4")     # a partial table, described as what it is, opens
    last_key = int.from_bytes(data[(n // 2 - 1) * E: (n // 2 - 1) * E + key_bytes], "big")
    with TestClient(create_app([part]), raise_server_exceptions=False) as c:
        missing = [m for m in random_move_strings(Board.parse("4x4"), 300, seed=5)
                   if oracle.oracle_key(4, 4, m) > last_key and not m.startswith("1")][:20]
        assert missing
        for m in missing:
            r = c.get("/api/4x4", params={"moves": m})
            assert r.status_code == 404, (m, r.text)
            assert "not in the table" in r.json()["error"] and str(tmp_path) not in r.text
        batch = c.post("/api/4x4/batch", json=missing[:3]).json()
        assert all("not in the table" in o["error"] for o in batch)
        assert c.get("/api/4x4/mainline", params={"moves": missing[0]}).status_code == 404
        assert c.get("/api/4x4").status_code == 200        # key 0 is kept


def malformed_requests(rng: random.Random) -> list[tuple[str, str, dict]]:
    """About 1,000 (method, path, kwargs) requests that must all be refused with 4xx."""
    junk = ["", " ", "%", "\x00", "é", "💥", "../../etc/passwd", "5x4;", "5X4", "5x4 ", "x",
            "5x04", "-5x4", "99999999999999999999x4", "5x4\n", "a" * 5000, "<script>"]
    bad_moves = ["0", "6", "9", "a", "-1", "3.0", "33333", "1" * 5, "12" * 4, "44444",
                 "12121212", "1" * 30_000, "2" * 21, "3344\x00", "١٢", "++", "3\n4\n5",
                 "....\n....\n....\nAAAA\n", "x" * 3000 + "\n" + "y" * 3000]
    out: list[tuple[str, str, dict]] = []
    for _ in range(120):                                       # bad boards
        b = rng.choice(junk) + rng.choice(["", "1", "/x"])
        out.append(("GET", "/api/" + quote(b, safe="/"), {"params": {"moves": "1"}}))
    for _ in range(200):                                       # bad moves
        m = rng.choice(bad_moves)
        if rng.random() < 0.5:
            m = "".join(rng.choice("0123456789abc") for _ in range(rng.randrange(1, 60)))
            if all(c in "12345" for c in m):
                m += "0"
        path = rng.choice(["/api/5x4", "/api/5x4/mainline", "/api/4x4"])
        out.append(("GET", path, {"params": {"moves": m}}))
    for _ in range(60):                                        # huge query strings
        out.append(("GET", "/api/5x4?moves=" + rng.choice("19x") * rng.randrange(10_000, 50_000), {}))
    for _ in range(200):                                       # wrong methods
        method = rng.choice(["POST", "PUT", "DELETE", "PATCH"])
        path = rng.choice(["/api/5x4", "/api/5x4/mainline", "/healthz", "/metrics", "/openapi.json",
                           "/api/boards"])
        out.append((method, path, {"content": b"[]"}))
        out.append((rng.choice(["GET", "PUT", "DELETE"]), "/api/5x4/batch", {}))
    bodies = [b"", b"[", b"{}", b'{"positions": ["1"]}', b"null", b"1", b'"33"', b"[1, 2]",
              b'["1", null]', b'[["1"]]', b"\xff\xfe\x00", b'["1",]', b"[" * 10_000, b"NaN",
              json.dumps(["1"] * (MAX_BATCH + 1)).encode(), b'["1"' + b', "1"' * 20_000 + b"]",
              b"x" * (5 << 20)]
    for _ in range(220):                                       # bad JSON
        out.append(("POST", "/api/" + rng.choice(["5x4", "4x4"]) + "/batch",
                    {"content": rng.choice(bodies), "headers": {"content-type": "application/json"}}))
    return out


@pytest.mark.slow
def test_a_thousand_malformed_requests_are_4xx_json(client):
    reqs = malformed_requests(random.Random(6))
    assert len(reqs) >= 1000
    statuses: dict[int, int] = {}
    for method, path, kw in reqs:
        r = client.request(method, path, **kw)
        assert 400 <= r.status_code < 500, (method, path[:80], r.status_code, r.text[:200])
        err = r.json()["error"]
        assert isinstance(err, str) and err and "\n" not in err
        assert len(r.content) < 20_000, (method, path[:80])      # no echo of a huge input
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
    assert set(statuses) >= {400, 404, 405, 413}
    assert client.get("/api/5x4", params={"moves": "3344"}).json()["distance"] == 3   # still serving
    metrics = client.get("/metrics").text
    assert 'status="500"' not in metrics


# ------------------------------------------------------------------------ the rest of it
def test_cache_and_metrics(t54):
    with TestClient(create_app([t54], cache_size=2)) as c:
        for moves in ["1", "1", "2", "3", "1"]:
            c.get("/api/5x4", params={"moves": moves})
        m = {line.split(" ")[0]: line.split(" ")[1] for line in c.get("/metrics").text.splitlines()
             if not line.startswith("#")}
    # "1" miss, "1" hit, "2" miss, "3" miss (evicts "1"), "1" miss
    assert m["c4table_cache_hits_total"] == "1" and m["c4table_cache_misses_total"] == "4"
    assert m["c4table_probes_total"] == "4" and m["c4table_cache_entries"] == "2"
    assert m['c4table_requests_total{route="/api/{board}",method="GET",status="200"}'] == "5"
    assert m["c4table_request_duration_seconds_count"] == "5"
    assert m['c4table_request_duration_seconds_bucket{le="+Inf"}'] == "5"
    assert m['c4table_table_entries{board="5x4"}'] == "1974174"


def test_cors_off_by_default_and_one_origin_when_asked(t54):
    origin = {"Origin": "https://example.org"}
    with TestClient(create_app([t54])) as c:
        assert "access-control-allow-origin" not in c.get("/api/5x4", headers=origin).headers
    with TestClient(create_app([t54], cors="https://example.org")) as c:
        assert c.get("/api/5x4", headers=origin).headers["access-control-allow-origin"] == "https://example.org"
        # with CORS the Starlette route answers, without it the front door: the same bytes
        with TestClient(create_app([t54])) as plain:
            for q in ["3344", "9", "", "33333"]:
                a, b = c.get("/api/5x4", params={"moves": q}), plain.get("/api/5x4", params={"moves": q})
                assert (a.status_code, a.content, a.headers["content-type"]) == \
                    (b.status_code, b.content, b.headers["content-type"])
        assert "access-control-allow-origin" not in c.get("/api/5x4", headers={"Origin": "https://evil.test"}).headers


def test_openapi_healthz_boards(client):
    spec = client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.") and {"/api/{board}", "/api/{board}/mainline",
                                                  "/api/{board}/batch"} <= set(spec["paths"])
    assert client.get("/healthz").json() == {"status": "ok", "boards": ["4x4", "5x4"]}
    assert [b["board"] for b in client.get("/api/boards").json()] == ["4x4", "5x4"]


def test_web_page_is_served_and_self_contained(client):
    r = client.get("/")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert 'src="static/app.js"' in r.text and 'href="static/style.css"' in r.text
    for name in ["app.js", "style.css"]:
        assert client.get(f"/static/{name}").status_code == 200
    web = Path(__file__).resolve().parents[1] / "c4table" / "serve" / "web"
    for f in web.iterdir():   # works offline: nothing is fetched from another host
        text = f.read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, f.name


@pytest.mark.slow
def test_two_tables_of_one_board_refused(t54):
    code, out, err = run_cli("serve", "--table", str(t54), "--table", str(t54))
    assert code == 2 and err.count("\n") == 1 and "two tables of board 5x4" in err
    code, out, err = run_cli("serve", "--table", "/nonexistent/connect4_5x4.dat")
    assert code == 2 and err.count("\n") == 1 and "no such table file" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_serve_command_runs_uvicorn_with_workers(t54, t44):
    import httpx
    port = _free_port()
    c4 = shutil.which("c4table", path=str(Path(sys.executable).parent)) or "c4table"
    proc = subprocess.Popen([c4, "serve", "--table", str(t54), "--table", str(t44), "--port", str(port),
                             "--workers", "2"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
        assert r.json()["boards"] == ["4x4", "5x4"]
        assert httpx.get(f"http://127.0.0.1:{port}/api/5x4?moves=3344").json()["distance"] == 3
        # the port is taken now: a second server says so in one line
        code, out, err = run_cli("serve", "--table", str(t54), "--port", str(port))
        assert code == 2 and err.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in err
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in proc.stderr.read()


@pytest.mark.slow
def test_load_tool_runs_briefly_without_errors(t54):
    p = subprocess.run(tool("bench.load_serve", "--table", str(t54), "--clients", "2", "--seconds", "1",
                            "--pool", "200", "--batch", "50", "--batch-repeats", "1"),
                       env=tool_env(), capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    assert "errors: 0" in p.stdout and "batch of 50 positions: HTTP 200" in p.stdout, p.stdout
    assert "server RSS: before" in p.stdout


def test_a_rooted_table_is_served_from_its_root(tmp_path, t44):
    """/api/boards names the root (the page starts there); positions of the subtree answer as
    in the full table, the empty board is outside it: 404 with a JSON error."""
    from c4table.pipeline.stages.build import build_table
    rooted = build_table("4x4", tmp_path / "r", root="2132", workers=1)
    with TestClient(create_app([rooted]), raise_server_exceptions=False) as c, \
            TestClient(create_app([t44]), raise_server_exceptions=False) as full:
        assert c.get("/api/boards").json()[0]["root"] == "2132"
        assert full.get("/api/boards").json()[0]["root"] == ""
        for moves in ("2132", "21323", "213241"):
            assert c.get(f"/api/4x4?moves={moves}").json() == \
                full.get(f"/api/4x4?moves={moves}").json()
        r = c.get("/api/4x4?moves=")
        assert r.status_code == 404 and "not reachable from the root" in r.json()["error"]


# -------------------------------------------------- edges: disconnects, headers, schema, /solve
def _metrics(client) -> dict[str, str]:
    return {line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1] for line in client.get("/metrics").text.splitlines()
            if not line.startswith("#")}


def test_client_gone_mid_batch_body_is_499_not_500(t54):
    """A client that disconnects while its batch's body is arriving: the app raises nothing (no
    traceback in the server's log), answers nothing, and /metrics counts a 499, not a 500."""
    import asyncio
    app = create_app([t54])
    sent = []
    events = iter([{"type": "http.request", "body": b'["33", "3', "more_body": True},
                   {"type": "http.disconnect"}])

    async def receive():
        return next(events)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/5x4/batch", "raw_path": b"/api/5x4/batch",
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 5000),
             "headers": [(b"content-type", b"application/json"), (b"content-length", b"100000")]}
    asyncio.run(app(scope, receive, send))          # raises nothing
    assert [m["status"] for m in sent if m["type"] == "http.response.start"] == [499]
    with TestClient(app) as c:
        m = _metrics(c)
    assert m['c4table_requests_total{route="/api/{board}/batch",method="POST",status="499"}'] == "1"
    assert not any('status="500"' in k for k in m)


def test_headers_over_the_limit_are_431(client):
    from c4table.serve.app import MAX_HEADER_BYTES
    r = client.get("/api/5x4", params={"moves": "3344"}, headers={"x-big": "a" * (MAX_HEADER_BYTES + 1)})
    assert r.status_code == 431 and f"at most {MAX_HEADER_BYTES:,}" in r.json()["error"]
    ok = client.get("/api/5x4", params={"moves": "3344"}, headers={"x-big": "a" * (MAX_HEADER_BYTES // 2)})
    assert ok.status_code == 200 and ok.json()["distance"] == 3


def test_real_server_survives_a_disconnect_and_refuses_a_2mb_header(t54, tmp_path):
    """A real uvicorn (one process, httptools as installed): a batch whose client goes away
    half-way through the body leaves no traceback and no 500; a 2 MB header is a 431."""
    import httpx
    port = _free_port()
    c4 = shutil.which("c4table", path=str(Path(sys.executable).parent)) or "c4table"
    log = (tmp_path / "stderr").open("w+")
    proc = subprocess.Popen([c4, "serve", "--table", str(t54), "--port", str(port)], stderr=log, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
                time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"POST /api/5x4/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100000\r\n\r\n" + b'["33", ' * 100)
            time.sleep(0.5)
        r = httpx.get(f"{base}/api/5x4?moves=3344", headers={"x-big": "a" * (2 << 20)}, timeout=30)
        assert r.status_code == 431 and "request headers of" in r.json()["error"]
        deadline = time.monotonic() + 30
        while 'status="499"' not in (metrics := httpx.get(f"{base}/metrics").text):
            assert time.monotonic() < deadline, metrics
            time.sleep(0.2)
        assert 'route="/api/{board}/batch",method="POST",status="499"} 1' in metrics
        assert 'status="431"} 1' in metrics and 'status="500"' not in metrics
        assert httpx.get(f"{base}/api/5x4?moves=3344").json()["distance"] == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    log.seek(0)
    err = log.read()
    assert "Traceback" not in err and "ClientDisconnect" not in err, err


def _start_server(argv: list[str], port: int, log) -> subprocess.Popen:
    """A server process started with ``argv``, once it answers /healthz on ``port``."""
    import httpx
    proc = subprocess.Popen(argv, stderr=log, text=True)
    deadline = time.monotonic() + 90
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return proc
        except httpx.TransportError:
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.3)


def _raw_request(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the answer to ``request``, sent as it is on one connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        try:
            s.sendall(request)
        except (BrokenPipeError, ConnectionResetError):   # answered and closed before it all went
            pass
        data = b""
        try:
            while chunk := s.recv(1 << 16):
                data += chunk
        except ConnectionResetError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict((k.lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


@pytest.mark.slow
def test_every_answer_of_a_real_server_is_json_even_for_over_long_requests(t54, tmp_path):
    """Real servers, ``c4table serve`` (httptools, uvicorn's choice when installed) and one on
    h11: a position of 40,000 or 65,000 characters gets the application's own message; one of
    70,000 (past what httptools can split) a 414, a 2 MB header a 431, bytes that are not HTTP
    a 400; every answer JSON ``{"error": ...}``, and the server goes on answering."""
    import httpx
    from c4table.serve.app import MAX_TARGET
    ports = {"httptools": _free_port(), "h11": _free_port()}
    c4 = shutil.which("c4table", path=str(Path(sys.executable).parent)) or "c4table"
    argv = {"httptools": [c4, "serve", "--table", str(t54), "--port", str(ports["httptools"])],
            "h11": [sys.executable, "-c", "import sys; from c4table.serve.app import run; "
                    "run([sys.argv[1]], port=int(sys.argv[2]), http='h11')", str(t54), str(ports["h11"])]}
    logs = {h: (tmp_path / f"{h}.log").open("w+") for h in ports}
    procs = {}
    try:
        for h in ports:
            procs[h] = _start_server(argv[h], ports[h], logs[h])
        for h, port in ports.items():
            base = f"http://127.0.0.1:{port}"
            for n in (40_000, 65_000):
                r = httpx.get(f"{base}/api/5x4?moves={'1' * n}", timeout=30)
                assert r.status_code == 400 and r.headers["content-type"] == "application/json", (h, n)
                assert r.json() == {"error": f"{n} moves: board 5x4 has only 20 cells"}, (h, n)
            for n in (70_000, 2_000_000):
                target = f"/api/5x4?moves={'1' * n}"
                status, headers, body = _raw_request(port, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert status == 414 and headers["content-type"] == "application/json", (h, n, body[:200])
                msg = json.loads(body)["error"]
                assert f"at most {MAX_TARGET:,}" in msg and "request target" in msg, (h, n, msg)
                if n == 70_000:
                    assert f"of {len(target):,} bytes" in msg, (h, msg)
            r = httpx.get(f"{base}/api/5x4?moves=3344", headers={"x-big": "a" * (2 << 20)}, timeout=30)
            assert r.status_code == 431 and "request head" in r.json()["error"], (h, r.text)
            for garbage in (b"NOT HTTP AT ALL\r\n\r\n", b"GET / HTTP/1.1\r\nHost x\r\n\r\n",
                            b"\x00\x01\x02\r\n\r\n"):
                status, headers, body = _raw_request(port, garbage)
                assert status == 400 and headers["content-type"] == "application/json", (h, garbage, body)
                assert "not a valid HTTP/1.1 request" in json.loads(body)["error"], (h, body)
            assert httpx.get(f"{base}/api/5x4?moves=3344").json()["distance"] == 3
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait(timeout=30)
    for h, log in logs.items():
        log.seek(0)
        assert "Traceback" not in log.read(), h


def test_a_request_target_over_the_limit_is_414_json_in_the_application(client):
    """Under h11 (which buffers up to its limit), the application itself refuses a target over
    MAX_TARGET bytes, with the status and message httptools' refusal gets."""
    from c4table.serve.app import MAX_TARGET
    from c4table.serve.limits import target_error
    fill = MAX_TARGET - len("/api/5x4?moves=")
    r = client.get("/api/5x4?moves=" + "1" * fill)
    assert r.status_code == 400 and r.json()["error"] == f"{fill} moves: board 5x4 has only 20 cells"
    r = client.get("/api/5x4?moves=" + "1" * (fill + 1))
    assert r.status_code == 414 and r.json() == {"error": target_error(MAX_TARGET + 1)}


def test_openapi_describes_move_strings_and_the_server_keeps_to_it(client):
    """``moves``/``pos`` have a pattern and a maximum length; strings of that form are answered
    200 (a game of the board) or 400 with the reason (no game of the board), strings not of that
    form 400; never anything else."""
    import re
    spec = client.get("/openapi.json").json()
    schemas = [p["schema"] for path in ("/api/{board}", "/api/{board}/mainline", "/solve")
               for p in spec["paths"][path]["get"]["parameters"] if p["name"] in ("moves", "pos")]
    assert len(schemas) == 3 and all(s == {"type": "string", "pattern": "^[1-5]*$", "maxLength": 20}
                                     for s in schemas)
    pattern, longest = schemas[0]["pattern"], schemas[0]["maxLength"]
    rng = random.Random(7)
    statuses = {200: 0, 400: 0}
    for i in range(300):
        s = "".join(rng.choice("12345") for _ in range(rng.randrange(0, longest + 1)))
        if i % 3 == 0:   # legal games too, not just noise
            s = random_move_strings(Board.parse("4x4" if i % 2 else "5x4"), 1, seed=i)[0]
        assert re.fullmatch(pattern, s) and len(s) <= longest
        for url, params in (("/api/5x4", {"moves": s}), ("/api/4x4", {"moves": s}),
                            ("/api/5x4/mainline", {"moves": s}), ("/solve", {"pos": s, "board": "5x4"})):
            r = client.get(url, params=params)
            assert r.status_code in (200, 400), (url, s, r.status_code, r.text)
            statuses[r.status_code] += 1
            if r.status_code == 400:
                msg = r.json()["error"]
                assert msg and "\n" not in msg and "internal" not in msg
    assert statuses[200] > 100 and statuses[400] > 100
    for s in ["0", "a", "3 3", "-1", "3.", "٣"]:          # not of the form: 400 with the reason
        r = client.get("/api/5x4", params={"moves": s})
        assert r.status_code == 400 and "bad move" in r.json()["error"], (s, r.text)


def test_solve_without_a_board(t54, t44):
    """/solve without board=: 7x6 when served, else the only board, else 400 naming the boards."""
    from c4table.open import open_table
    with TestClient(create_app([t54])) as c:
        assert c.get("/solve?pos=3344").json() == c.get("/solve?pos=3344&board=5x4").json() == \
            {"pos": "3344", "score": [-1, 7, -1, -1, -1]}
    with TestClient(create_app([t54, t44])) as c:
        r = c.get("/solve?pos=3344")
        assert r.status_code == 400
        assert r.json()["error"].startswith("several boards are served (4x4, 5x4)") and "board" in r.json()["error"]
    # 7x6 is chosen when served (a stand-in table keyed 7x6: only the choice is tested here)
    with TestClient(create_app({"7x6": open_table(t44), "5x4": open_table(t54)})) as c:
        assert c.get("/solve?pos=22").json() == c.get("/solve?pos=22&board=7x6").json()
        assert c.get("/solve?pos=22").json() != c.get("/solve?pos=22&board=5x4").json()


def test_the_examples_of_docs_serve_md_are_true(t54):
    """Each ``$ curl -s 'http://127.0.0.1:8000/...'`` of docs/serve.md, with its 5x4 and 5x5
    served, answers the line below it. (The 5x5 table is a stand-in keyed 5x5: no example asks it.)"""
    import re
    from c4table.open import open_table
    text = (Path(__file__).resolve().parents[1] / "docs" / "serve.md").read_text()
    examples = re.findall(r"^\$ curl -s 'http://127\.0\.0\.1:8000(\S+)'\n(.+)$", text, re.M)
    assert len(examples) >= 4 and any(p == "/solve?pos=3344" for p, _ in examples)
    t = open_table(t54)
    with TestClient(create_app({"5x4": t, "5x5": t})) as c:
        for path, expected in examples:
            assert "5x5" not in path
            assert c.get(path).json() == json.loads(expected), path


def test_serve_opens_each_table_once_and_passes_its_settings(t54, t44, monkeypatch):
    """``c4table serve`` opens each table once and serves those very objects; with --workers,
    the settings reach the workers as the factory's arguments, not through the environment."""
    import os
    import functools
    import uvicorn
    import uvicorn.supervisors
    import c4table.serve.tables as tables_mod
    from click.testing import CliRunner
    from c4table.cli.serve import serve
    opened, served = [], {}
    real_open = tables_mod.open_table
    monkeypatch.setattr(tables_mod, "open_table", lambda p: opened.append(p) or real_open(p))
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.update(app=app, kw=kw))
    env = dict(os.environ)
    r = CliRunner().invoke(serve, ["--table", str(t54), "--table", str(t44), "--port", str(_free_port()),
                                   "--cache", "7"])
    assert r.exit_code == 0, r.output
    assert len(opened) == 2
    svc = served["app"].service
    assert sorted(svc.tables) == ["4x4", "5x4"] and svc.cache.size == 7
    assert sorted(str(t.path) for t in svc.tables.values()) == sorted([str(t44), str(t54)])
    assert dict(os.environ) == env

    class FakeMultiprocess:
        def __init__(self, config, sockets, target=None):
            served.update(config=config)
            for s in sockets:
                s.close()

        def run(self):
            pass
    opened.clear()
    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", FakeMultiprocess)
    r = CliRunner().invoke(serve, ["--table", str(t54), "--port", str(_free_port()), "--workers", "3",
                                   "--cors", "*"])
    assert r.exit_code == 0, r.output
    assert len(opened) == 1 and dict(os.environ) == env
    factory = served["config"].app
    assert isinstance(factory, functools.partial) and served["config"].workers == 3
    assert factory.args == ([str(t54)], "*", 20_000)
    app = factory()        # what each worker runs: its own tables, the same settings
    assert sorted(app.service.tables) == ["5x4"]
