"""The build manifest (``DIR/manifest.json``): which steps of a build are finished, with the
shards and counts each produced, and, once merged, the final table's size and hashes.

The manifest is the single source of truth for resuming: a step is finished exactly when it is
recorded here, and the manifest is replaced atomically after each step. Layout::

    {"format": "c4table-manifest/1", "board": "5x4", "width": 5, "height": 4, "k": 4,
     "key_bytes": 4, "entry_size": 5,
     "plies": [{"ply": 0, "entries": 1, "symmetric": 1, "positions": 1,
                "terminal_entries": 0, "terminal": 0,
                "a_wins": 1, "draws": 0, "b_wins": 0,            # after the backward pass
                "a_wins_entries": 1, "draws_entries": 0, "b_wins_entries": 0}, ...],
     "steps": {"forward": {"0": {"shards": [...]}, ...}, "backward": {...}},
     "table": {"file": "connect4_5x4.dat", "entries": ..., "bytes": ..., "sha256": ..., "md5": ...}}

Counts named ``*_entries`` are table entries (a position and its mirror image share one);
``positions``, ``terminal``, ``a_wins``, ``draws`` and ``b_wins`` count mirror images
separately, as Böck's paper does: ``positions = 2 * entries - symmetric``.
"""
from __future__ import annotations

import json
from pathlib import Path

from c4table.board import Board
from c4table.errors import BuildError
from pipeline.shards import ShardInfo, atomic_write_bytes

FORMAT = "c4table-manifest/1"
MANIFEST = "manifest.json"


class Manifest:
    """In-memory manifest of one build directory; :meth:`save` writes it atomically."""

    def __init__(self, root: Path, data: dict):
        self.root = Path(root)
        self.data = data

    # ----------------------------------------------------------- creating
    @classmethod
    def path_in(cls, root: Path) -> Path:
        return Path(root) / MANIFEST

    @classmethod
    def load(cls, root: Path) -> "Manifest":
        path = cls.path_in(root)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise BuildError(f"{path}: no manifest (has this directory been built?)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise BuildError(f"{path}: manifest is not valid JSON ({e})") from None
        if data.get("format") != FORMAT:
            raise BuildError(f"{path}: unknown manifest format {data.get('format')!r}")
        return cls(root, data)

    @classmethod
    def open_or_create(cls, root: Path, board: Board) -> "Manifest":
        """Load the manifest of ``root`` (checking it is for ``board``) or start a new one."""
        path = cls.path_in(root)
        if path.exists():
            m = cls.load(root)
            if m.board != board:
                raise BuildError(f"{root}: holds a build of board {m.data['board']}, not {board} "
                                 "(use another --out or --restart)")
            return m
        data = {"format": FORMAT, "board": board.name, "width": board.width, "height": board.height,
                "k": board.k, "key_bytes": board.key_bytes, "entry_size": board.entry_size,
                "plies": [], "steps": {"forward": {}, "backward": {}}}
        m = cls(root, data)
        return m

    def save(self) -> None:
        atomic_write_bytes(self.path_in(self.root), (json.dumps(self.data, indent=1) + "\n").encode())

    # ------------------------------------------------------------ queries
    @property
    def board(self) -> Board:
        return Board(self.data["width"], self.data["height"], self.data.get("k", 4))

    def shards(self, stage: str, ply: int) -> list[ShardInfo] | None:
        """Shards of a finished step, or None if the step is not finished."""
        step = self.data["steps"][stage].get(str(ply))
        if step is None:
            return None
        return [ShardInfo.from_json(s) for s in step["shards"]]

    def finish_step(self, stage: str, ply: int, shards: list[ShardInfo], **extra) -> None:
        self.data["steps"][stage][str(ply)] = {"shards": [s.to_json() for s in shards], **extra}

    def forget_step(self, stage: str, ply: int) -> None:
        self.data["steps"][stage].pop(str(ply), None)

    def ply_record(self, ply: int) -> dict:
        plies = self.data["plies"]
        while len(plies) <= ply:
            plies.append({"ply": len(plies)})
        return plies[ply]

    def set_forward_counts(self, ply: int, entries: int, symmetric: int, terminal: int,
                           terminal_symmetric: int) -> None:
        rec = self.ply_record(ply)
        rec.update(entries=entries, symmetric=symmetric, positions=2 * entries - symmetric,
                   terminal_entries=terminal, terminal=2 * terminal - terminal_symmetric)

    def set_backward_counts(self, ply: int, stats) -> None:
        """``stats``: [draws, draws symmetric, A wins, A sym, B wins, B sym] in entries."""
        rec = self.ply_record(ply)
        for i, name in enumerate(("draws", "a_wins", "b_wins")):
            n, s = int(stats[2 * i]), int(stats[2 * i + 1])
            rec[name + "_entries"] = n
            rec[name] = 2 * n - s

    @property
    def table(self) -> dict | None:
        return self.data.get("table")
