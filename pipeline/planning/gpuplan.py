"""The plan of a build on one GPU node (``c4table plan BOARD --device gpu``): GPU time, PCIe
transfers, host CPU, disk traffic, memory, and which of them bounds the wall time.

The generations' entries and the bytes each stage writes and reads come from the CPU plan
(:func:`c4table.pipeline.planning.plan.make_plan` and its I/O model): the GPU path writes the same
runs, shards and table. The device rates are **assumptions**, each named in
:data:`GPU_RATES` with its source; ``tools/bench/gpu_run.py`` measures them on a lent machine, and
the figures here should be replaced by its measurements (docs/gpu.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from c4table.game.board import Board
from c4table.pipeline.planning.plan import COSTS, make_plan
from c4table.builddir import tableformat

# Each rate is an assumption, with where it comes from.
GPU_RATES = {
    # CuPy sorts 1,073,741,824 random uint64 in 73 ms on one H100 80 GB (measured on a lent
    # machine, the figure quoted when the GPU build was proposed): 14.7 G keys per second, in
    # device memory.
    "sort_keys_per_s": 14.7e9,
    # expand and resolve read a key and write w slots of 8 bytes: memory-bound; assumed at a
    # third of the H100's 3.35 TB/s HBM3 (not measured).
    "kernel_bytes_per_s": 1.1e12,
    # host <-> device copies: PCIe Gen5 x16, 64 GB/s nominal; assumed 25 GB/s sustained from
    # pageable host memory (not measured).
    "pcie_bytes_per_s": 25e9,
    # the lent machine's disk writes and reads about 1.2 GB/s with O_DIRECT (measured there).
    "disk_bytes_per_s": 1.2e9,
    # host cores of the lent machine (16 Xeon cores), at the CPU plan's parallel efficiency.
    "host_cores": 16,
    # parent messages a position sends before keep_best: about w/2 of its w columns
    # (assumption; the CPU plan keeps 2.0 after keep_best).
    "messages_sent_per_entry_per_column": 0.5,
    # the host's share of the CPU path's per-entry costs that stays on the host on the GPU
    # path: run merges, run codec, parquet, hashing; assumed half of forward and backward, all
    # of the merge (not measured: tools/bench/gpu_run.py's "host CPU" column measures it).
    "host_share": 0.5,
    # build --format c4z: the merge's tasks encode their blocks and the driver decodes them to
    # hash the raw entries; at the build's profile (262,144-entry blocks, zstd level 4 with min
    # match 6) the whole 6x5 build's CPU was 1.17x the .dat build's (least of two rounds side by
    # side; the merges alone put it at 1.13-1.15x), measured on the 2-core development VM
    # (docs/measurements/2026-11-27-c4z-build-profile.md).
    "c4z_cpu_ratio": 1.17,
}


@dataclass
class GpuPlan:
    board: Board
    entries: int
    peak_entries: int
    gpu_memory: int
    host_memory: int
    seconds: dict = field(default_factory=dict)   # resource -> seconds if it alone bounded
    disk_bytes: dict = field(default_factory=dict)   # written, read, peak stored
    pcie_bytes: int = 0
    keys_sorted: int = 0
    table_format: str = "dat"   # what the merge writes: "dat" or "c4z"
    notes: list = field(default_factory=list)

    @property
    def bound(self) -> str:
        return max(self.seconds, key=self.seconds.get)

    @property
    def wall_seconds(self) -> float:
        """Wall time with transfers, kernels, host work and disk overlapped: the largest."""
        return max(self.seconds.values())

    @property
    def serial_seconds(self) -> float:
        """Wall time with nothing overlapped: the sum (an upper bound)."""
        return sum(self.seconds.values())

    def to_json(self) -> dict:
        return {"board": self.board.name, "device": "gpu", "format": self.table_format,
                "entries": self.entries,
                "peak_generation_entries": self.peak_entries, "gpu_memory": self.gpu_memory,
                "host_memory": self.host_memory, "keys_sorted": self.keys_sorted,
                "pcie_bytes": self.pcie_bytes, "disk_bytes": self.disk_bytes,
                "seconds": {k: round(v) for k, v in self.seconds.items()},
                "bound": self.bound, "wall_seconds": round(self.wall_seconds),
                "serial_seconds": round(self.serial_seconds),
                "gpu_hours": round(self.seconds["gpu"] / 3600, 2),
                "assumptions": GPU_RATES, "notes": self.notes}


def make_gpu_plan(board: str | Board, gpu_memory: int = 80 * 2**30,
                  host_memory: int = 128 * 2**30, rates: dict | None = None,
                  table_format: str = "dat") -> GpuPlan:
    """Plan ``board`` on one GPU of ``gpu_memory`` bytes in a host of ``host_memory``, the
    merge writing a raw table (``table_format`` "dat") or the ``.c4z`` (``"c4z"``).

    >>> p = make_gpu_plan("7x6")
    >>> p.bound, round(p.peak_entries / 1e9, 1)   # ply 33: 248.3 G keys, 25 times an 80 GB card
    ('disk', 248.3)
    >>> c = make_gpu_plan("7x6", table_format="c4z")   # no raw table: less disk, more host CPU
    >>> c.bound, c.disk_bytes["peak_stored"] < p.disk_bytes["peak_stored"] / 2   # runs at v3
    ('host', True)
    """
    r = {**GPU_RATES, **(rates or {})}
    board = Board.parse(board)
    cpu = make_plan(board, 1, gpu_memory // 2)   # shards sized to half the GPU's memory
    cpu.table_format = table_format
    io = cpu.io().to_json()["stages"]
    plies = [p.entries for p in cpu.plies]
    w = board.width
    later = sum(plies[1:])
    children = COSTS["children_per_entry"] * later            # kept children, sorted on the GPU
    sent = r["messages_sent_per_entry_per_column"] * w * later   # messages sent, sorted
    keys_sorted = int(children + sent)
    # the kernels touch a key (8 B) and its w slots (8 B each) in expand and again in resolve
    kernel_bytes = 2 * cpu.entries * 8 * (w + 1)
    gpu_s = keys_sorted / r["sort_keys_per_s"] + kernel_bytes / r["kernel_bytes_per_s"]
    # across PCIe: keys in (forward, backward), kept children and messages out, messages in,
    # outcome bytes out
    pcie = int(cpu.entries * (8 + 8 + 1) + children * 8
               + COSTS["messages_per_entry"] * later * 8 * 2)
    written = sum(io[s]["bytes_written"] for s in io)
    read = sum(io[s]["bytes_read"] for s in io)
    peak = max(io[s]["peak_stored_bytes"] for s in io)
    host_core_s = cpu.entries * (r["host_share"] * (COSTS["forward_core_s"] + COSTS["backward_core_s"])
                                 + COSTS["merge_core_s"])
    if not tableformat.get(table_format).raw:   # the merge's encoding and the driver's decoding for the hash
        host_core_s += (r["c4z_cpu_ratio"] - 1) * cpu.entries * (
            COSTS["forward_core_s"] + COSTS["backward_core_s"] + COSTS["merge_core_s"])
    plan = GpuPlan(board, cpu.entries, cpu.peak_entries, gpu_memory, host_memory,
                   keys_sorted=keys_sorted, pcie_bytes=pcie, table_format=table_format)
    plan.seconds = {"gpu": gpu_s, "pcie": pcie / r["pcie_bytes_per_s"],
                    "host": host_core_s / (r["host_cores"] * COSTS["parallel_efficiency"]),
                    "disk": (written + read) / r["disk_bytes_per_s"]}
    plan.disk_bytes = {"written": int(written), "read": int(read), "peak_stored": int(peak)}
    peak_gen_bytes = cpu.peak_entries * 8
    plan.notes.append(
        f"the largest generation holds {cpu.peak_entries:,} keys ({peak_gen_bytes / 1e9:,.0f} GB): "
        f"{-(-peak_gen_bytes // max(1, gpu_memory // 2 // (w + 1))):,} GPU-sized shards, merged "
        "on the host by the CPU path's external merge (docs/gpu.md)")
    plan.notes.append(
        f"host memory: {host_memory / 2**30:,.0f} GiB assumed; a task holds about twice its "
        "GPU share on the host (keys, the run being written, pinned staging)")
    day = (written + read) / 86400
    plan.notes.append(f"bound: {plan.bound}; the build in 24 hours needs the disk to move "
                      f"{day / 1e9:.2f} GB/s (written + read), and {peak / 1e12:.1f} TB of it "
                      "at the peak")
    plan.notes.append("rates are assumptions until tools/bench/gpu_run.py measures them: "
                      + "; ".join(f"{k} {v:g}" for k, v in r.items()))
    return plan
