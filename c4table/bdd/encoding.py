"""The two Boolean encodings of a Connect-4 position (Böck, section 3.1).

Design notes: ``docs/modules.md`` (``c4table.bdd.encoding``).

    >>> from c4table.bdd.engine import Engine
    >>> enc = make_encoding("3x2", Engine(1 << 16), "compressed")
    >>> enc.count(enc.initial())
    1
    >>> s1 = enc.image(enc.initial(), ply=0)   # A's three first moves
    >>> enc.count(s1)
    3
"""
from __future__ import annotations

from functools import reduce

from c4table.bdd.engine import BooleanOperator, Engine
from c4table.game.board import Board
from c4table.errors import BoardError

ENCODINGS = ("compressed", "plain")


def make_encoding(board: Board | str, engine: Engine, name: str = "compressed") -> "Encoding":
    """Declare the variables of ``board`` in ``engine``'s manager and return the encoding."""
    board = Board.parse(board)
    if not board.supports("bdd"):
        raise BoardError(f"board {board}: BDD mode knows 2D boards only, not 3D boards")
    if name == "compressed":
        return CompressedEncoding(board, engine)
    if name == "plain":
        return PlainEncoding(board, engine)
    raise ValueError(f"unknown encoding {name!r}; expected one of {ENCODINGS}")


def lines(board: Board) -> list[list[tuple[int, int]]]:
    """Every run of ``k`` cells ``(column, row)`` in a row: horizontal, vertical, diagonal.

    >>> len(lines(Board.parse("7x6")))
    69
    """
    k, w, h = board.k, board.width, board.height
    out = []
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        for c in range(w):
            for r in range(h):
                cells = [(c + i * dc, r + i * dr) for i in range(k)]
                if all(0 <= cc < w and 0 <= rr < h for cc, rr in cells):
                    out.append(cells)
    return out


class Encoding:
    """Common part of the encodings; subclasses define the variables and cell predicates."""

    name = ""

    def __init__(self, board: Board, engine: Engine):
        self.board = board
        self.engine = engine
        self.mgr = engine.manager
        self._declare()
        self.total_vars = self.mgr.num_vars()
        self.state_vars = self.total_vars // 2
        self._cubes = [self._and([self.mgr.var(v) for v in self.side_vars(s)]) for s in (0, 1)]
        self._relations: dict[int, object] = {}
        self._lines: dict[tuple, object] = {}

    # ---------------------------------------------------------- subclass API
    def _declare(self) -> None:
        raise NotImplementedError

    def side_vars(self, side: int) -> list[int]:
        """Variable numbers of one side, in order."""
        raise NotImplementedError

    def initial(self):
        """The empty board, on side 0."""
        raise NotImplementedError

    def chip(self, side: int, col: int, row: int, player: int):
        """Predicate: ``player`` (0 = A, 1 = B) has a chip at ``(col, row)`` on ``side``."""
        raise NotImplementedError

    def column_move(self, col: int, player: int, src: int, dst: int):
        """Relation: ``player`` drops a chip in ``col``; the column's variables go from side
        ``src`` to side ``dst`` (other columns are not constrained)."""
        raise NotImplementedError

    def column_frame(self, col: int, src: int, dst: int):
        """Relation: column ``col`` is the same on both sides."""
        raise NotImplementedError

    # ------------------------------------------------------------- helpers
    def _and(self, fs):
        return reduce(lambda a, b: a & b, fs, self.mgr.true())

    def _or(self, fs):
        return reduce(lambda a, b: a | b, fs, self.mgr.false())

    def _eq(self, u: int, v: int):
        return self.mgr.var(u).equiv(self.mgr.var(v))

    @staticmethod
    def side_of(ply: int) -> int:
        """The side on which the positions of ``ply`` are encoded."""
        return ply % 2

    @staticmethod
    def mover(ply: int) -> int:
        """The player to move at ``ply``: 0 = A (even plies), 1 = B."""
        return ply % 2

    # ---------------------------------------------------------- public API
    def cube(self, side: int):
        """Conjunction of the variables of ``side`` (the quantification set)."""
        return self._cubes[side]

    def relation(self, ply: int):
        """Transition relation of the move made at ``ply``: the mover's moves from side
        ``ply % 2`` to the other side, one relation for all columns ("mono" image)."""
        player = self.mover(ply)
        if player not in self._relations:
            self._relations[player] = self._or(self.relation_parts(ply))
        return self._relations[player]

    def relation_parts(self, ply: int) -> list:
        """The relation of ``ply`` split by column ("partitioned" image)."""
        player, src = self.mover(ply), self.side_of(ply)
        dst = 1 - src
        w = self.board.width
        parts = []
        for c in range(w):
            terms = [self.column_move(c, player, src, dst)]
            terms += [self.column_frame(d, src, dst) for d in range(w) if d != c]
            parts.append(self._and(terms))
        return parts

    def line_conditions(self, side: int, player: int) -> list:
        """One BDD per ``k``-in-a-row line: ``player`` owns all its cells on ``side``."""
        key = (side, player)
        if key not in self._lines:
            self._lines[key] = [self._and([self.chip(side, c, r, player) for c, r in cells])
                                for cells in lines(self.board)]
        return self._lines[key]

    def terminal_union(self, side: int, player: int):
        """One BDD: ``player`` has ``k`` in a row somewhere on ``side`` (the OR of the lines)."""
        key = ("union", side, player)
        if key not in self._lines:
            self._lines[key] = self._or(self.line_conditions(side, player))
        return self._lines[key]

    def split_terminal(self, states, ply: int, method: str = "union"):
        """``(states ∧ ¬terminal, states ∧ terminal)`` for the positions of ``ply``: terminal
        means the player who made the last move (ply ``ply - 1``) has ``k`` in a row.

        ``method="lines"`` is Böck's way: the line conditions are subtracted from ``states``
        one at a time, never building the terminal BDD. ``method="union"`` conjoins once with
        the OR of all lines, built once per side and player; that BDD is small (185,052 nodes
        for 7x6 in the compressed encoding, 8,265 for 5x5) and with oxidd it is 2-3x faster
        than 2*L separate operations, so it is the default."""
        if ply == 0:
            return states, self.mgr.false()
        side, last = self.side_of(ply), self.mover(ply - 1)
        retry = self.engine.retry
        if method == "union":
            term = self.terminal_union(side, last)
            terminal = retry(lambda: states & term)
            nonterm = retry(lambda: term.imp_strict(states))  # ¬term ∧ states
            return nonterm, terminal
        if method != "lines":
            raise ValueError(f"unknown terminal method {method!r}; expected 'union' or 'lines'")
        nonterm = states
        for cond in self.line_conditions(side, last):
            nonterm = retry(lambda: cond.imp_strict(nonterm))  # ¬cond ∧ nonterm
        terminal = retry(lambda: nonterm.imp_strict(states))  # states ∧ ¬nonterm
        return nonterm, terminal

    def image(self, states, ply: int, partitioned: bool = False):
        """Successors of the positions ``states`` of ``ply`` (on side ``ply % 2``), encoded on
        the other side: ``∃S. states(S) ∧ trans(S, S')``."""
        q = self.cube(self.side_of(ply))
        if not partitioned:
            rel = self.relation(ply)
            return self.engine.retry(lambda: states.apply_exists(BooleanOperator.AND, rel, q))
        out = self.mgr.false()
        for part in self.relation_parts(ply):
            img = self.engine.retry(lambda: states.apply_exists(BooleanOperator.AND, part, q))
            out = self.engine.retry(lambda: out | img)
        return out

    def preimage(self, targets, ply: int):
        """Positions of ``ply`` (side ``ply % 2``) with a move into ``targets`` (a set of
        positions of ``ply + 1``): ``∃S'. trans(S, S') ∧ targets(S')``."""
        q = self.cube(1 - self.side_of(ply))
        rel = self.relation(ply)
        return self.engine.retry(lambda: targets.apply_exists(BooleanOperator.AND, rel, q))

    def count(self, states) -> int:
        """Number of positions in a set of one side (exact integer)."""
        return states.sat_count(self.total_vars) >> self.state_vars


class CompressedEncoding(Encoding):
    """One variable per cell plus an extra row (Böck's compressed encoding)."""

    name = "compressed"

    def _declare(self) -> None:
        w, h = self.board.width, self.board.height
        names = []
        for c in range(w):
            for r in range(h + 1):
                names += [f"x{c}_{r}", f"x{c}_{r}'"]
        self.mgr.add_named_vars(names)

    def v(self, side: int, col: int, row: int) -> int:
        """Variable number of cell ``(col, row)``, ``row`` in ``0..h`` (``h`` = extra row)."""
        return 2 * (col * (self.board.height + 1) + row) + side

    def side_vars(self, side: int) -> list[int]:
        w, h = self.board.width, self.board.height
        return [self.v(side, c, r) for c in range(w) for r in range(h + 1)]

    def initial(self):
        w, h = self.board.width, self.board.height
        m = self.mgr
        return self._and([m.var(self.v(0, c, r)) if r == 0 else m.not_var(self.v(0, c, r))
                          for c in range(w) for r in range(h + 1)])

    def chip(self, side, col, row, player):
        m, h = self.mgr, self.board.height
        occupied = self._or([m.var(self.v(side, col, s)) for s in range(row + 1, h + 1)])
        colour = m.var(self.v(side, col, row)) if player == 0 else m.not_var(self.v(side, col, row))
        return colour & occupied

    def column_move(self, col, player, src, dst):
        m, h = self.mgr, self.board.height
        v = self.v
        moves = []
        for n in range(h):  # n chips in the column before the move
            t = [self._eq(v(src, col, r), v(dst, col, r)) for r in range(n)]
            t.append(m.var(v(src, col, n)))
            t += [m.not_var(v(src, col, r)) for r in range(n + 1, h + 1)]
            t.append(m.var(v(dst, col, n)) if player == 0 else m.not_var(v(dst, col, n)))
            t.append(m.var(v(dst, col, n + 1)))
            t += [m.not_var(v(dst, col, r)) for r in range(n + 2, h + 1)]
            moves.append(self._and(t))
        return self._or(moves)

    def column_frame(self, col, src, dst):
        return self._and([self._eq(self.v(src, col, r), self.v(dst, col, r))
                          for r in range(self.board.height + 1)])


class PlainEncoding(Encoding):
    """Two variables per cell, ``a`` (A's chip) and ``b`` (B's chip); an empty cell has both
    false."""

    name = "plain"

    def _declare(self) -> None:
        w, h = self.board.width, self.board.height
        names = []
        for c in range(w):
            for r in range(h):
                names += [f"a{c}_{r}", f"a{c}_{r}'", f"b{c}_{r}", f"b{c}_{r}'"]
        self.mgr.add_named_vars(names)

    def v(self, side: int, col: int, row: int, player: int) -> int:
        """Variable number of ``player``'s chip (0 = A, 1 = B) at ``(col, row)``."""
        return 4 * (col * self.board.height + row) + 2 * player + side

    def side_vars(self, side: int) -> list[int]:
        w, h = self.board.width, self.board.height
        return [self.v(side, c, r, p) for c in range(w) for r in range(h) for p in (0, 1)]

    def initial(self):
        m = self.mgr
        return self._and([m.not_var(v) for v in self.side_vars(0)])

    def _empty(self, side, col, row):
        m = self.mgr
        return m.not_var(self.v(side, col, row, 0)) & m.not_var(self.v(side, col, row, 1))

    def chip(self, side, col, row, player):
        return self.mgr.var(self.v(side, col, row, player))

    def column_move(self, col, player, src, dst):
        m, h, v = self.mgr, self.board.height, self.v
        moves = []
        for n in range(h):  # the chip lands in row n
            t = []
            for r in range(n):  # occupied and unchanged
                t.append(m.var(v(src, col, r, 0)) | m.var(v(src, col, r, 1)))
                t.append(self._eq(v(src, col, r, 0), v(dst, col, r, 0)))
                t.append(self._eq(v(src, col, r, 1), v(dst, col, r, 1)))
            t.append(self._empty(src, col, n))
            t.append(m.var(v(dst, col, n, player)))
            t.append(m.not_var(v(dst, col, n, 1 - player)))
            for r in range(n + 1, h):  # empty before and after
                t.append(self._empty(src, col, r))
                t.append(self._empty(dst, col, r))
            moves.append(self._and(t))
        return self._or(moves)

    def column_frame(self, col, src, dst):
        return self._and([self._eq(self.v(src, col, r, p), self.v(dst, col, r, p))
                          for r in range(self.board.height) for p in (0, 1)])
