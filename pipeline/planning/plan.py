"""Build plans: how many entries each generation of a board holds, and what a build of it will
need in disk, shuffle volume, memory and time on a given number of workers.

Design notes: ``docs/modules.md`` (``c4table.pipeline.planning.plan``).

>>> p = make_plan("7x6", workers=64, memory_per_worker=16 * 2**30)
>>> p.entries            # Cadot's file: 15,861,962,650,191 bytes / 7
2265994664313
"""
from __future__ import annotations

import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import c4table.config as config
from c4table.game.board import Board
from c4table.errors import BuildInputError
from c4table.pipeline.planning import c4zsize
from c4table.pipeline.planning.c4zsize import C4Z_MEASURED  # noqa: F401  (re-exported)
from c4table.c4z.format import DEFAULT_CODEC
from c4table.progress import published_total
from c4table.wording import count
from c4table.game.root import root_argument
from c4table.pipeline.planning.iomodel import predict_io
from c4table.game.rules import Position
from c4table.table.known import known_tables
from c4table.builddir.reader import BuildDir
from c4table.pipeline.sort.partition import shard_rows_for
from c4table.pipeline.stages import forward
from c4table.pipeline.stages.build import open_build
from c4table.game.codec import codes_of_key
from c4table.builddir.manifest import Manifest
from c4table.builddir import tableformat

# Measured with tools/bench/bench_build.py on the 2-core development machine: 7x4 build, 1,132.9 M
# entries, 2 workers, --memory 4GiB, CPU time of the process tree per stage / entries, in
# core-seconds per table entry (issue 16, fifth session, idle machine, load 1.7-2.1: forward
# 59.7 s, backward 83.9 s, merge 28.1 s, the merge's hashing included; the code before issue
# 16, a3170e0, right before it: 119.1 s, 150.4 s, 64.9 s, which would be 0.105 / 0.133 / 0.057
# us). The fourth session's were 0.058 / 0.085 / 0.043 us, the third's 0.069 / 0.095 / 0.045
# us; the second session's, under load
# 5-13, 0.091 / 0.107 / 0.036 us; before
# that, stage wall time x 2 / entries of an idle 7x4 build (0.169 / 0.215 / 0.131 us: the wall
# time also counted cores waiting, such as the merge's serial append); bytes per entry on disk
# (runs and messages as raw 8-byte values: an upper bound, they are bit-packed since the third
# session; pipeline/planning/iomodel.py models their stored size).
# messages_per_entry: 1.15-1.17 kept per sending entry on 5x5 and 6x4 with 2 workers; each task
# keeps one message per parent, so more, smaller tasks keep more: 2.0 allows for that.
# parallel_efficiency is an assumption for a cluster, not a measurement.
# The kernels now write sorted runs per column and a timsort merges them (2026-11-27): the
# fast machine's figures above scaled by the ratio of the same benchmark on the 2-core VM,
# old code (3b80bbc) against new (bb72ceb), tools/bench/stage_cpu.py 6x4, serial, best of 2
# each, alternated, load 5-7 (docs/measurements/2026-11-27-plan-vs-builds.md): forward 249 ->
# 97 ns (2.57x), backward 268 -> 101 (2.65x), merge 59 -> 19 (3.1x; its hashing, about 10 ns
# of the 25, left as it was). Not measured on the fast machine itself: the VM ran the old
# code 3.6-4.7x slower per stage than these figures (a loaded VM, and older code behind them).
COSTS = {
    "forward_core_s": 0.0206e-6,
    "backward_core_s": 0.0279e-6,
    "merge_core_s": 0.0148e-6,
    "children_per_entry": 2.15,   # child keys emitted per distinct next-generation entry (5x5)
    "forward_shard_bytes": 3.2,   # parquet delta+zstd per key, 48-bit keys (engineering notes;
    # forward shards are no longer compressed: the I/O model, pipeline/planning/iomodel.py, says more)
    "backward_shard_bytes": 0.25,  # outcomes only (zstd), measured on 5x4, 4x6, 5x5
    "messages_per_entry": 2.0,
    "message_bytes": 8.0,         # parent_key << 8 | score, raw runs
    "parallel_efficiency": 0.8,
}


def c4z_bytes_per_entry(board: Board, entries: int, codec: str = DEFAULT_CODEC) -> tuple[float, bool]:
    """``(bytes per entry, measured)`` of a board's ``.c4z`` with the block codec ``codec``
    (default: ``compress``'s, format 5): the measured figure, else the model of
    :mod:`c4table.pipeline.planning.c4zsize` (``measured`` False: an extrapolation; the boards
    measured have 35 M to 1.4 G entries in whole files of formats 4 and 5, 2 M to 1.4 G in
    format 3, and 6x6's 34.6 G were sampled in formats 3 and 5; 7x6 has 2.3 T).

    >>> round(c4z_bytes_per_entry(Board.parse("5x5"), 34888367)[0] * 8, 2)
    1.79
    >>> c4z_bytes_per_entry(Board.parse("5x5"), 34888367, "varint-plysym-v3")
    (0.2961, True)
    """
    e = c4zsize.estimate(board, entries, codec)
    return e.bytes_per_entry, e.measured


# Fixed costs of a rooted build on the development machine (2 cores, loaded): a 7x6 build from
# a ply-28 root of a few thousand entries took 7-9 s, so per generation and stage about 0.15 s
# (manifest writes, task dispatch), plus about 3 s to start (imports, numba cache, pool).
ROOTED_OVERHEAD = {"startup_s": 3.0, "per_step_s": 0.15}


@dataclass
class PlyPlan:
    ply: int
    positions: int
    entries: int
    source: str


@dataclass
class Plan:
    board: Board
    workers: int
    memory_per_worker: int
    plies: list[PlyPlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    overhead_seconds: float = 0.0   # fixed costs beyond the schedule model's
    shuffle_max_reads: int | None = None   # None: the build's default (pipeline/sort/shuffle.py)
    costs: object = None   # a schedule.MachineCosts (None: FAST_MACHINE, plan.COSTS)
    table_format: str = "dat"   # what the merge writes: "dat", or "c4z" (build --format c4z)
    codec_name: str | None = None   # the block codec of build --format c4z --codec (None: the setting)

    @property
    def entries(self) -> int:
        return sum(p.entries for p in self.plies)

    @property
    def final_bytes(self) -> int:
        return self.entries * self.board.entry_size

    @property
    def c4z_codec(self) -> str:
        """The block codec of :attr:`c4z_bytes`: ``compress``'s default."""
        return DEFAULT_CODEC

    @property
    def c4z_bytes(self) -> int:
        """Estimated size of the table as a ``.c4z`` written by ``compress`` (its default codec,
        :attr:`c4z_codec`; see :func:`c4z_bytes_per_entry`)."""
        return int(self.entries * c4z_bytes_per_entry(self.board, self.entries)[0])

    @property
    def build_codec(self) -> str:
        """The block codec a ``build --format c4z`` writes (:attr:`codec_name`, else
        ``C4TABLE_C4Z_CODEC``)."""
        return self.codec_name or config.get("C4TABLE_C4Z_CODEC")

    @property
    def table_bytes(self) -> int:
        """Bytes of the file the merge writes: the raw table, or with ``table_format`` "c4z"
        the build's ``.c4z``: its codec (:attr:`build_codec`) at compress's profile
        (:func:`c4z_bytes_per_entry`) times
        :func:`c4table.pipeline.planning.c4zsize.build_ratio` (the build's faster profile)."""
        if not tableformat.get(self.table_format).raw:
            bpe = c4z_bytes_per_entry(self.board, self.entries, self.build_codec)[0]
            return int(self.entries * bpe * c4zsize.build_ratio(self.build_codec))
        return self.final_bytes

    @property
    def c4z_measured(self) -> bool:
        """Whether :attr:`c4z_bytes` is a measured figure (else an extrapolation)."""
        return c4z_bytes_per_entry(self.board, self.entries)[1]

    @property
    def c4z_archive_bytes(self) -> int | None:
        """Estimated size as a ``.c4z`` written by ``compress --archive`` (None: no ratio
        measured; :func:`c4table.pipeline.planning.c4zsize.archive_bytes_per_entry`)."""
        bpe = c4zsize.archive_bytes_per_entry(c4zsize.estimate(self.board, self.entries))
        return int(self.entries * bpe) if bpe is not None else None

    @property
    def peak_entries(self) -> int:
        return max(p.entries for p in self.plies)

    @property
    def shuffle_bytes(self) -> int:
        """Bytes that tasks write for tasks of other key ranges to read: the forward pass's
        child-key runs, the backward pass's messages and their pre-merged pieces, as stored
        (run format v3: the I/O model, :meth:`io`)."""
        return int(self.io().run_bytes)

    @property
    def peak_disk(self) -> int:
        """The most bytes stored at once during the build (scratch and final file), from the
        I/O model that the builds' measured counters check (:meth:`io`). Against the temporary
        disk peaks that ``tools/bench/bench_build.py`` measured (README, Performance; 2 workers, 4 GiB):
        6x5 10.1 GiB predicted / 10.7 measured, 7x4 8.0 / 8.8, 5x6 3.7 / 4.3, 5x5 0.21 / 0.27."""
        io = self.io()
        return int(max(io.stages[s]["peak_stored_bytes"] for s in io.stages))

    def schedule(self):
        """The build's simulated schedule on :attr:`workers` workers at :attr:`costs`
        (:func:`c4table.pipeline.planning.schedule.simulate`)."""
        from c4table.pipeline.planning.schedule import FAST_MACHINE, simulate
        codec = None if tableformat.get(self.table_format).raw else self.build_codec
        return simulate([p.entries for p in self.plies], self.board.width, self.board.cells,
                        self.workers, self.memory_per_worker, self.costs or FAST_MACHINE,
                        self.board.entry_size, disk_bytes={"merge": self.table_bytes},
                        merge_extra_s=c4zsize.build_codec_cpu_s(codec))

    @property
    def core_seconds(self) -> float:
        return self.schedule().cpu_s

    @property
    def wall_seconds(self) -> float:
        return self.schedule().wall_s + self.overhead_seconds

    def io(self):
        """The predicted storage requests, bytes, tasks and task memory per stage
        (:func:`c4table.pipeline.planning.iomodel.predict_io`)."""
        return predict_io(self)

    def to_json(self) -> dict:
        return {"board": self.board.name, "workers": self.workers, "io": self.io().to_json(),
                "memory_per_worker": self.memory_per_worker, "entries": self.entries,
                "final_bytes": self.final_bytes, "c4z_bytes": self.c4z_bytes,
                "table_format": self.table_format, "table_bytes": self.table_bytes,
                "c4z_archive_bytes": self.c4z_archive_bytes, "c4z_measured": self.c4z_measured,
                "c4z_how": c4zsize.estimate(self.board, self.entries).how,
                "c4z_codec": self.c4z_codec,
                "peak_generation_entries": self.peak_entries,
                "shuffle_bytes": self.shuffle_bytes, "peak_disk_bytes": self.peak_disk,
                "core_seconds": round(self.core_seconds), "wall_seconds": round(self.wall_seconds),
                "costs": (self.costs or _fast()).to_json(), "schedule": self.schedule().to_json(),
                "plies": [p.__dict__ for p in self.plies], "notes": self.notes}


def _fast():
    from c4table.pipeline.planning.schedule import FAST_MACHINE
    return FAST_MACHINE


def _profile_7x6() -> list[int]:
    text = resources.files("c4table").joinpath("data/wdl_by_ply_7x6.tsv").read_text()
    rows = [ln.split("\t") for ln in text.splitlines() if ln and not ln.startswith(("#", "ply"))]
    return [int(r[4]) for r in rows]


def _rescaled_profile(n_plies: int) -> list[float]:
    prof = _profile_7x6()
    out = []
    for i in range(n_plies):
        x = i * (len(prof) - 1) / max(1, n_plies - 1)
        lo = int(x)
        hi = min(lo + 1, len(prof) - 1)
        out.append(prof[lo] + (prof[hi] - prof[lo]) * (x - lo))
    s = sum(out)
    return [v / s for v in out]


SMALL_PLY_LIMIT = 20_000
"""Enumerate plies exactly while a ply has at most this many table entries."""


def small_plies(board: Board, limit: int = SMALL_PLY_LIMIT) -> list[tuple[int, int]]:
    """``(positions, entries)`` of plies 0, 1, ... of ``board``, enumerated exactly (mirror
    images counted in positions, shared in entries), for as long as a ply has at most
    ``limit`` entries.

    >>> small_plies(Board.parse("7x6"))[:4]
    [(1, 1), (7, 4), (49, 25), (238, 121)]
    """
    layer = {Position(board).key(): Position(board)}
    out = []
    while layer and len(layer) <= limit:
        sym = sum(p.is_symmetric() for p in layer.values())
        out.append((2 * len(layer) - sym, len(layer)))
        nxt: dict[int, Position] = {}
        for p in layer.values():
            for c in p.legal_moves():
                child = p.child(c)
                nxt.setdefault(child.key(), child)
        layer = nxt
    return out


def _known_positions(board: Board) -> list[int]:
    ref = known_tables().get(board.name) or {}
    fields = ref.get("ply_fields") or []
    if "positions" not in fields:
        return []
    i = fields.index("positions")
    return [row[i] for row in ref.get("plies", [])]


def _fit_known_entries(plan: Plan) -> None:
    """Make the plan's entries add up to the known table's count, where one is known.

    A table has one entry per pair of mirror images, so a ply with ``p`` positions of which
    ``s`` are left-right symmetric has ``(p + s) / 2`` entries. Where only ``p`` is published
    (Böck's Table 2, the known tables' per-ply positions) the plan counts ``(p + 1) // 2``,
    i.e. as if at most one position were symmetric: 2,054,710 entries short on 7x6 (it said
    2,265,992,609,603; Cadot's file has 15,861,962,650,191 bytes = 2,265,994,664,313
    entries of 7 bytes), 6,434 short on 5x5. The missing symmetric half is spread over the
    estimated plies in proportion to their entries (the enumerated and measured plies are
    exact already), so the total, the file size and what follows from them are exact."""
    from c4table.table.known import known_tables
    b = plan.board
    ref = known_tables().get(b.name)
    if not ref or not ref.get("entries"):
        return
    short = int(ref["entries"]) - plan.entries
    est = [p for p in plan.plies if not p.source.startswith(("exact", "measured"))]
    base = sum(p.entries for p in est)
    if short <= 0 or not base:
        return
    add = [short * p.entries // base for p in est]
    add[max(range(len(est)), key=lambda i: est[i].entries)] += short - sum(add)
    for p, a in zip(est, add):
        p.entries += a
    plan.notes.append(f"entries: {short:,} added to the per-ply estimates (p + 1) // 2 so that "
                      f"they add up to the known table's {int(ref['entries']):,}: symmetric "
                      "positions have an entry of their own (docs/cadot-7x6.md)")


def make_plan(board: str | Board, workers: int, memory_per_worker: int,
              from_dir: str | Path | None = None, shuffle_max_reads: int | None = None,
              costs=None) -> Plan:
    """Estimate a build of ``board`` on ``workers`` workers (see docs/modules.md);
    ``shuffle_max_reads`` is the build's threshold of a two-level shuffle; ``costs`` a
    :class:`c4table.pipeline.planning.schedule.MachineCosts` (default: the fast machine's, ``COSTS``)."""
    board = Board.parse(board)
    plan = Plan(board, workers, memory_per_worker, shuffle_max_reads=shuffle_max_reads,
                costs=costs)
    n = board.cells + 1
    exact: dict[int, tuple[int, int, str]] = {}    # ply -> (positions, entries, source)
    for g, pos in enumerate(_known_positions(board)[:n]):
        exact[g] = (pos, (pos + 1) // 2, "known table (positions)")
    for g, (pos, ent) in enumerate(small_plies(board)[:n]):
        exact[g] = (pos, ent, "exact (enumerated)")
    if from_dir is not None:
        m = BuildDir.load(from_dir)      # checked: a damaged manifest is refused
        if m.board.name != board.name:
            raise BuildInputError(f"{from_dir}: manifest is for board {m.board.name}, not {board}")
        for p in m.plies:
            if p.positions is not None and p.entries is not None:
                exact[p.ply] = (p.positions, p.entries, "measured")
    published = _profile_7x6() if (board.width, board.height, board.k) == (7, 6, 4) else None
    total = published_total(board.name)
    if published is None and total is None and len(exact) < n:
        if board.k != 4:   # nothing published to spread the rest of the plies over
            raise BuildInputError(f"no published figures for board {board}: run the whole forward "
                                  f"pass, `c4table forward {board.width}x{board.height} --connect "
                                  f"{board.k} --out DIR`, and pass --from DIR")
        raise BuildInputError(f"no published figures for board {board}: run `c4table forward {board} "
                              "--max-ply N --out DIR` and pass --from DIR")
    if published is None and total is not None:
        rest = total - sum(v[0] for v in exact.values())
        shape = _rescaled_profile(n)
        weight = sum(shape[i] for i in range(n) if i not in exact) or 1.0
    for g in range(n):
        if g in exact:
            pos, ent, src = exact[g]
        elif published is not None:
            pos, src = published[g], "Böck Table 2"
            ent = (pos + 1) // 2
        else:
            pos, src = max(0, int(round(rest * shape[g] / weight))), "Table 1 total, 7x6 profile"
            ent = (pos + 1) // 2
        plan.plies.append(PlyPlan(g, pos, ent, src))
    _fit_known_entries(plan)
    if any(p.source.startswith("Table 1") for p in plan.plies):
        plan.notes.append("per-ply figures spread Böck's Table 1 total with the 7x6 profile: "
                          "measure a forward run (--from) for better figures")
    rows = shard_rows_for(memory_per_worker, board.width)
    tasks = -(-plan.peak_entries // max(1, rows))
    io = predict_io(plan)
    worst = max(io.shuffles, key=lambda s: s[4]) if io.shuffles else None
    plan.notes.append(
        f"shards of at most {count(rows, 'entry')} per task (sized from the worker's memory): "
        f"the largest generation is {count(tasks, 'task')} per stage; read directly, every task "
        "reads one slice of every run of the step before (tasks x runs ranged reads); past "
        f"{io.max_reads:,} the runs are first pre-merged in groups (two-level shuffle)"
        + (f": the largest shuffle is the {worst[0]} step of ply {worst[1]}, {worst[2]:,} tasks x "
           f"{worst[3]:,} runs, {count(worst[4], 'ranged read')}"
           + (f" (pre-merged in groups of {worst[5]})" if worst[5] else "")
           if worst and worst[1] is not None else ""))
    plan.notes.extend(c4z_notes(board, plan.entries))
    return plan


def c4z_notes(board: Board, entries: int) -> list[str]:
    """What the plan's ``.c4z`` line (``compress``'s default codec) rests on, when it is not a
    measured figure; figures and their sources: :mod:`c4table.pipeline.planning.c4zsize`."""
    e = c4zsize.estimate(board, entries)
    if e.measured:
        return []
    size = _about(entries * e.bytes_per_entry)
    what = f"the .c4z size ({c4zsize.codec_label(e.codec)})"
    if e.keys is None:
        return [f"{what} ({e.bytes_per_entry:.3f} bytes per entry, about {size}) "
                f"extrapolates {e.how}; not measured on a board like this one ({e.source})"]
    notes = [f"{what} is an extrapolation, not a measurement: {e.how} ({e.source}): keys and "
             f"run heads {e.keys:.3f} + outcome symbols {e.symbols:.3f} + index and dictionary = "
             f"{e.bytes_per_entry:.3f} bytes per entry ({8 * e.bytes_per_entry:.3f} bits), about "
             f"{size}"]
    r = c4zsize.over_cadot_xz(e.codec)
    figs = c4zsize.rule_figures(e.codec)
    if board.name == "7x6" and r:
        big = max(r, key=lambda b: figs.measured[b][0])
        lo, hi = min(r, key=r.get), max(r, key=r.get)
        x = c4zsize.CADOT_XZ_7X6 / 1e9
        notes.append(f"cross-check: Cadot's 7x6 xz archive is {x:,.0f} GB; the .c4z of his "
                     f"tables is {r[lo]:.2f} ({lo}) to {r[hi]:.2f} ({hi}) times his xz file "
                     f"({c4zsize.sources(figs, big, lo, hi)}): at the ratio of the biggest board measured ({big}, "
                     f"{r[big]:.2f}) the 7x6 .c4z would be about {r[big] * x:,.0f} GB, at "
                     f"{hi}'s {r[hi] * x:,.0f} GB")
    a = c4zsize.archive_bytes_per_entry(e)
    if a is not None:
        cmp = ""
        if board.name == "7x6":
            x = c4zsize.CADOT_XZ_7X6
            cmp = (f", {'under' if entries * a < x else 'above'} Cadot's xz archive of "
                   f"{x / 1e9:,.0f} GB ({x / 2**30:,.1f} GiB)")
        notes.append(f"compress --archive ({c4zsize.ARCHIVE_BLOCK_ENTRIES:,}-entry blocks, probes "
                     f"in tens of milliseconds): the outcome symbols at {c4zsize.archive_ratio():.2f} "
                     f"times the default's, format 3's ratio on the boards measured "
                     f"({', '.join(c4zsize.ARCHIVE_RATIO)}; the keys, coded in runs, do "
                     f"not gain): also an extrapolation, about {_about(entries * a)}{cmp}")
    return notes


def _about(nbytes: float) -> str:
    """A size for a note: whole GB from 1 GB (as Cadot's figures), else in binary units.

    >>> _about(3.45e11), _about(2.2e8)
    ('345 GB', '209.8 MiB')
    """
    from c4table.units import format_size
    return f"{nbytes / 1e9:,.0f} GB" if nbytes >= 1e9 else format_size(int(nbytes))


# ------------------------------------------------------------------ rooted plans
def _extensions(caps: list[int], m: int) -> int:
    """Vectors ``e`` with ``0 <= e[c] <= caps[c]`` and ``sum(e) == m``."""
    ways = [1] + [0] * m
    for cap in caps:
        nxt = [0] * (m + 1)
        for s_, n in enumerate(ways):
            if n:
                for e in range(min(cap, m - s_) + 1):
                    nxt[s_ + e] += n
        ways = nxt
    return ways[m]


def arrangements(board: Board, heights: list[int], ply: int, g: int) -> int:
    """Ways to add chips to a position of ``ply`` plies (column ``heights``) until ``g``
    plies, ignoring lines: column fillings times the orders of A's and B's added chips.

    >>> arrangements(Board(7, 6), [0] * 7, 0, 2)   # 28 fillings of 2 cells, A and B in them
    56
    """
    m = g - ply
    a = (g + 1) // 2 - (ply + 1) // 2   # A's chips added (A moves at even plies)
    if m < 0 or not 0 <= a <= m:
        return 0
    return math.comb(m, a) * _extensions([board.height - h for h in heights], m)


def probe_forward(board: Board, origin, max_plies: int = 10, seconds: float = 20.0,
                  workers: int | None = None, memory: str = "2GiB") -> dict[int, int]:
    """Entries per generation of a forward run from ``origin`` (a :class:`c4table.game.root.Root`)
    in a temporary directory: one generation at a time, for at most ``max_plies`` plies or
    until ``seconds`` have passed. Returns ``{ply: entries}`` from the root's ply on."""
    d = tempfile.mkdtemp(prefix="c4table_plan_")
    try:
        b = open_build(board, d, memory=memory, workers=workers, quiet=True, root=origin)
        try:
            t0 = time.perf_counter()
            last = origin.ply
            while last < min(origin.ply + max_plies, board.cells):
                if time.perf_counter() - t0 > seconds:
                    break
                last += 1
                forward.run(b, max_ply=last)
        finally:
            b.close()
        return {p: b.manifest.entries(p) for p in range(origin.ply, last + 1)}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def make_rooted_plan(board: str | Board, origin, workers: int, memory_per_worker: int,
                     measured: dict[int, int]) -> Plan:
    """Plan the rooted build from ``origin`` given exact ``measured`` entries per generation
    (from :func:`probe_forward`; docs/modules.md says how it estimates of the rest)."""
    board = Board.parse(board)
    plan = Plan(board, workers, memory_per_worker)
    heights = [int(board.col_height[c]) for c in _codes_of(board, origin)]
    r = origin.ply
    last = max(measured)
    profile = None
    if (board.width, board.height, board.k) == (7, 6, 4):
        empty = [0] * board.width
        profile = [p / arrangements(board, empty, 0, g) for g, p in enumerate(_profile_7x6())]
    frac = (lambda g: profile[g]) if profile else (lambda g: 1.0)
    base = arrangements(board, heights, r, last) * frac(last)
    c = measured[last] / base if base else 0.0
    for g in range(board.cells + 1):
        if g < r:
            plan.plies.append(PlyPlan(g, 0, 0, "below the root"))
        elif g in measured:
            plan.plies.append(PlyPlan(g, measured[g], measured[g], "measured"))
        else:
            e = int(round(c * arrangements(board, heights, r, g) * frac(g)))
            plan.plies.append(PlyPlan(g, e, e, f"estimated (calibrated at ply {last})"))
    # the fixed costs (start-up, a step per generation and stage: ROOTED_OVERHEAD on the fast
    # machine) are the schedule model's now (Plan.schedule: MachineCosts.startup_s, step_s)
    plan.notes.append(f"rooted at {origin}: plies {r}-{last} counted by a forward run, the rest "
                      "estimated from the free cells" + (" and Böck's 7x6 per-ply profile"
                                                         if profile else " (no per-ply profile "
                                                         "for this board: a rough estimate)")
                      + "; entries count positions of the subtree (a mirror pair is one entry)")
    return plan


def _codes_of(board: Board, origin) -> list[int]:
    return codes_of_key(board, origin.key)


def plan_rooted(board: Board, value: str, workers: int, memory_per_worker: int,
                from_dir: str | None = None, probe_plies: int = 8):
    """The build plan (:func:`c4table.pipeline.planning.plan.make_rooted_plan`) of the rooted table
    from the ``--root`` value ``value``: from the forward run of the build directory
    ``from_dir`` (rooted there), else from a short forward run in a temporary directory."""
    origin = root_argument(board, value)
    if from_dir is not None:
        m = Manifest.load(from_dir)
        mine = m.origin()
        if m.board != board or mine is None or mine.key != origin.key:
            raise BuildInputError(f"{from_dir}: holds no forward run of board {board} rooted at {origin}")
        measured = {p: rec.entries for p, rec in enumerate(m.plies)
                    if p >= origin.ply and rec.entries is not None}
    else:
        measured = probe_forward(board, origin, probe_plies)
    return make_rooted_plan(board, origin, workers, memory_per_worker, measured)
