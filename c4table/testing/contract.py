"""One contract every table reader must keep (as zarr's ``testing/store.py`` ``StoreTests``):
:class:`TableContract` checks a reader's raw access and probing against the brute-force oracle
(:mod:`c4table.testing.oracle`), entry by entry. Subclass it once per reader with a ``table``
fixture (an open 4x4 :class:`c4table.table.source.Table`, or of ``board = (w, h)``)::

    class TestMySource(TableContract):
        @pytest.fixture
        def table(self):
            with open_my_source("connect4_4x4.dat") as t:
                yield t
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from c4table.errors import ClosedTableError, PositionNotFoundError
from c4table.game.codec import decode_outcome
from c4table.table.source import ENTRY_DTYPE, Table
from c4table.testing.oracle import oracle_key, oracle_table


class TableContract:
    board = (4, 4)
    rooted = False   # a rooted table holds a subset of the board's keys

    @pytest.fixture
    def oracle(self):
        return oracle_table(*self.board)

    @pytest.fixture
    def entries(self, table):
        return np.concatenate(list(table.iter_entries(chunk_entries=10_000)))

    def test_is_a_table(self, table):
        assert isinstance(table, Table)
        assert (table.board.width, table.board.height) == self.board
        assert table.entry_size == table.board.entry_size and table.key_bytes == table.board.key_bytes

    def test_every_entry_is_the_oracles(self, table, entries, oracle):
        assert entries.dtype == ENTRY_DTYPE and len(table) == entries.shape[0]
        keys = entries["key"]
        assert (keys[1:] > keys[:-1]).all()
        if self.rooted:
            assert len(table) < len(oracle)
        else:
            assert keys.tolist() == sorted(oracle)
        assert entries["outcome"].tolist() == [oracle[int(k)] for k in keys]

    def test_iter_entries_slices_and_chunks(self, table, entries):
        n = len(table)
        for start, stop, chunk in ((0, n, 7), (3, n // 2, 1000), (n - 5, n + 10, 2), (n, n, 4)):
            got = list(table.iter_entries(chunk_entries=chunk, start=start, stop=stop))
            assert all(0 < g.shape[0] <= chunk for g in got)
            flat = np.concatenate(got) if got else np.empty(0, ENTRY_DTYPE)
            assert (flat == entries[start: min(stop, n)]).all()

    def test_key_at_and_outcome_byte(self, table, entries):
        rng = random.Random(1)
        for i in [0, len(table) - 1] + rng.sample(range(len(table)), 200):
            assert table.key_at(i) == int(entries["key"][i])
            assert table.outcome_byte(int(entries["key"][i])) == int(entries["outcome"][i])

    def test_probe_keys_vectorised_and_missing(self, table, entries):
        rng = np.random.default_rng(2)
        pick = rng.choice(len(table), size=500)
        keys = entries["key"][pick]
        assert (table.probe_keys(keys) == entries["outcome"][pick]).all()
        held = set(entries["key"].tolist())
        missing = next(k for k in range(1, 1 << 20) if k not in held)
        with pytest.raises(PositionNotFoundError):
            table.probe_keys(np.array([keys[0], missing], np.uint64))
        with pytest.raises(PositionNotFoundError):
            table.outcome_byte(missing)
        got = table.probe_keys(np.array([missing, keys[0]], np.uint64), default=-1)
        assert got.tolist() == [-1, int(entries["outcome"][pick[0]])]

    def test_probe_is_the_oracles(self, table, oracle):
        w, h = self.board
        rng = random.Random(3)
        for moves in self.positions(rng):
            p = table.probe(moves)
            res = decode_outcome(oracle[oracle_key(w, h, moves)])
            assert (p.outcome, p.distance) == (res.result, res.distance), moves
            for m in p.moves:
                child = decode_outcome(oracle[oracle_key(w, h, moves + str(m.column))])
                assert (m.outcome, m.distance) == (child.result, child.distance + 1), (moves, m)
            best = p.best_moves()
            assert best and all(b in p.moves for b in best) or p.terminal
            assert table.wdl(moves) == (0 if p.outcome == "draw" else 1 if p.outcome == p.to_move else -1)

    def positions(self, rng) -> list[str]:
        """Move strings of unfinished games this table holds (from its root, if rooted)."""
        w, h = self.board
        root = self.root_moves()
        out = []
        while len(out) < 60:
            moves = root
            heights = [0] * w
            for c in root:
                heights[int(c) - 1] += 1
            for _ in range(rng.randrange(0, w * h - len(root))):
                legal = [c for c in range(w) if heights[c] < h]
                c = rng.choice(legal)
                try:
                    oracle_key(w, h, moves + str(c + 1))
                except AssertionError:
                    break
                moves += str(c + 1)
                heights[c] += 1
            out.append(moves)
        return out

    def root_moves(self) -> str:
        return ""

    def test_close_then_use_is_a_closed_table_error(self, table):
        table.close()
        with pytest.raises(ClosedTableError):
            table.probe("")
        table.close()
