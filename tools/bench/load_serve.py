"""Load test of ``c4table serve`` on loopback: N concurrent keep-alive clients for T seconds.

Starts a server on 127.0.0.1 (or uses one already running there, ``--url``; other hosts are
refused), sends single-position GETs of random legal positions from N clients for T seconds
(bounded: at most 600 s, every request times out after 10 s, then it stops by itself), and
prints requests/s, latency percentiles, errors, and the server's RSS (all its processes) before,
during (every 10 s) and after. ``--batch`` also times POST /api/BOARD/batch of 10,000 positions.

    python -m tools.bench.load_serve --table tables/5x4/connect4_5x4.dat --clients 16 --seconds 60
    python -m tools.bench.load_serve --table T --cache 0          # every request probes the table
    python -m tools.bench.load_serve --table T --batch 10000 --seconds 0

The clients speak HTTP/1.1 over raw asyncio streams (no client library) so that they cost the
machine, which they share with the server, as little as possible.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from c4table.game.rules import Position
from c4table.open import open_table

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def positions(board, n: int, seed: int) -> list[str]:
    """``n`` distinct legal move strings of random games cut at random plies."""
    rng = random.Random(seed)
    out: set[str] = set()
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        p = Position(board)
        for _ in range(rng.randrange(board.cells)):
            if p.is_terminal:
                break
            p.play(rng.choice(p.legal_moves()))
        out.add(p.move_string())
    return sorted(out)


def server_cpu(pid: int | None) -> float:
    """CPU seconds (user + system) used so far by a process and its children."""
    if not pid:
        return float("nan")
    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.NoSuchProcess:
        return float("nan")
    total = 0.0
    for q in procs:
        try:
            t = q.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def server_rss(pid: int) -> int:
    """Resident memory of a process and its children (uvicorn's workers), bytes."""
    try:
        p = psutil.Process(pid)
        procs = [p] + p.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


class Client:
    """One keep-alive HTTP/1.1 connection."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def request(self, method: str, target: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (f"{method} {target} HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Content-Length: {len(body)}\r\n" + ("Content-Type: application/json\r\n" if body else "")
                + "\r\n").encode()
        self.writer.write(head + body)
        try:
            lines = await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            self.close()
            raise
        status = int(lines[9:12])
        length = 0
        for line in lines.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        data = await self.reader.readexactly(length)
        return status, data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


async def run_clients(host: str, port: int, board: str, pool: list[str], clients: int,
                      seconds: float, pid: int | None) -> dict:
    lat: list[float] = []
    errors: dict[str, int] = {}
    rss_samples: list[tuple[float, int]] = []
    t0 = time.perf_counter()
    deadline = t0 + seconds

    async def one(i: int) -> None:
        rng = random.Random(i)
        c = Client(host, port)
        while time.perf_counter() < deadline:
            target = f"/api/{board}?moves={rng.choice(pool)}"
            s = time.perf_counter()
            try:
                status, _ = await asyncio.wait_for(c.request("GET", target), 10)
                if status != 200:
                    errors[f"HTTP {status}"] = errors.get(f"HTTP {status}", 0) + 1
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
                errors[type(e).__name__] = errors.get(type(e).__name__, 0) + 1
                c.close()
                continue
            lat.append(time.perf_counter() - s)
        c.close()

    async def sample() -> None:
        while time.perf_counter() < deadline:
            await asyncio.sleep(min(10, max(0.0, deadline - time.perf_counter())))
            if pid:
                rss_samples.append((time.perf_counter() - t0, server_rss(pid)))

    await asyncio.gather(*(one(i) for i in range(clients)), sample())
    return {"latencies": lat, "errors": errors, "wall": time.perf_counter() - t0, "rss": rss_samples}


async def time_batch(host: str, port: int, board: str, pool: list[str], n: int, repeats: int,
                     pid: int | None) -> list[tuple]:
    out = []
    c = Client(host, port)
    for r in range(repeats):
        items = pool[r * n: (r + 1) * n] if len(pool) >= (r + 1) * n else pool[:n]
        body = json.dumps(items).encode()
        s, cpu = time.perf_counter(), server_cpu(pid)
        status, data = await asyncio.wait_for(c.request("POST", f"/api/{board}/batch", body), 120)
        dt, cpu = time.perf_counter() - s, server_cpu(pid) - cpu
        answers = json.loads(data) if status == 200 else []
        out.append((len(items), status, dt, cpu, sum("error" in a for a in answers), len(data)))
    c.close()
    return out


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


def start_server(args) -> tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c4 = shutil.which("c4table", path=str(Path(sys.executable).parent)) or "c4table"
    cmd = [c4, "serve", "--table", args.table, "--port", str(port), "--workers", str(args.workers),
           "--cache", str(args.cache)]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("load_serve: the server did not start")
            time.sleep(0.2)
    time.sleep(0.5 + 0.5 * args.workers)      # let every worker process come up
    return proc, port


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", help="table to serve (a server is started on 127.0.0.1)")
    ap.add_argument("--url", help="a running server on loopback instead, e.g. http://127.0.0.1:8000")
    ap.add_argument("--board", help="board to ask for (default: the table's)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workers", type=int, default=1, help="server processes (with --table)")
    ap.add_argument("--cache", type=int, default=20_000, help="server's response cache (with --table)")
    ap.add_argument("--pool", type=int, default=100_000, help="distinct positions to draw requests from")
    ap.add_argument("--batch", type=int, default=0, help="also time a POST batch of this many positions")
    ap.add_argument("--batch-repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if not 0 <= args.seconds <= 600 or not 1 <= args.clients <= 1024:
        ap.error("--seconds must be 0..600 and --clients 1..1024")
    if bool(args.table) == bool(args.url):
        ap.error("give --table (start a server) or --url (a running one)")
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    proc = None
    if args.table:
        with open_table(args.table) as t:
            board = t.board
        proc, port = start_server(args)
        host, pid = "127.0.0.1", proc.pid
    else:
        u = urlsplit(args.url)
        if u.hostname not in LOOPBACK:
            ap.error("--url must be a loopback address (127.0.0.1, localhost, ::1)")
        host, port, pid = u.hostname, u.port or 80, None
        from c4table.game.board import Board
        board = Board.parse(args.board or "5x4")
    name = args.board or board.name
    try:
        pool = positions(board, max(args.pool, args.batch * args.batch_repeats), args.seed)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{os.cpu_count()} cores; pool of {len(pool):,} positions of {name}")
        rss0 = server_rss(pid) if pid else 0
        if args.seconds > 0:
            cpu0 = server_cpu(pid)
            res = asyncio.run(run_clients(host, port, name, pool, args.clients, args.seconds, pid))
            cpu = server_cpu(pid) - cpu0
            lat, n = res["latencies"], len(res["latencies"])
            print(f"{args.clients} clients, {res['wall']:.1f} s, server workers {args.workers}, "
                  f"cache {args.cache}: {n:,} requests, {n / res['wall']:,.0f} requests/s")
            print(f"latency ms: p50 {pct(lat, 50) * 1e3:.2f}  p90 {pct(lat, 90) * 1e3:.2f}  "
                  f"p99 {pct(lat, 99) * 1e3:.2f}  max {max(lat, default=float('nan')) * 1e3:.1f}")
            print(f"errors: {sum(res['errors'].values())} {res['errors'] or ''}".rstrip())
            if pid:
                print(f"server CPU: {cpu:.1f} s in {res['wall']:.1f} s "
                      f"({cpu / max(n, 1) * 1e6:.0f} us a request)")
            if res["rss"]:
                print("server RSS during the run: " + ", ".join(f"{t:.0f}s {r / 2**20:.1f} MiB" for t, r in res["rss"]))
        for items, status, dt, cpu, errs, size in (asyncio.run(time_batch(
                host, port, name, pool, args.batch, args.batch_repeats, pid)) if args.batch else []):
            print(f"batch of {items:,} positions: HTTP {status}, {dt:.3f} s (server CPU {cpu:.2f} s), "
                  f"{errs} error answers, {size / 2**20:.1f} MiB answer")
        if pid:
            print(f"server RSS: before {rss0 / 2**20:.1f} MiB, after {server_rss(pid) / 2**20:.1f} MiB")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
