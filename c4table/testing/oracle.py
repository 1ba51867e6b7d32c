"""Independent reference implementation ("oracle") of Cadot's Connect-4 lookup table.

Deliberately written in the most plain, obviously-correct style and sharing no code with
``c4table`` (including ``c4table.pipeline``). Rules: docs/FORMAT.md and Cadot's README
(github.com/sidneycadot/connect4, 7x6/README.txt), section 3; as this module applies them:
``docs/modules.md`` (``c4table.testing.oracle``).

Usage: ``python -m c4table.testing.oracle W H [K]`` prints entries, byte count and sha256.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import sys

EMPTY, A, B = 0, 1, 2

DRAW, A_WINS, B_WINS = 0x00, 0x40, 0x80


# --------------------------------------------------------------------------------------
# Column codes
# --------------------------------------------------------------------------------------

def _column_is_valid(digits: tuple[int, ...], k: int) -> bool:
    """digits[0] is the bottom cell.  Valid = chips contiguous from the bottom and no k equal
    chips in a row except as the topmost k chips."""
    n = 0
    while n < len(digits) and digits[n] != EMPTY:
        n += 1
    # contiguous from the bottom: nothing above the first empty cell
    if any(d != EMPTY for d in digits[n:]):
        return False
    # no k equal chips in a row, except the window that ends exactly at the top chip
    for start in range(0, n - k + 1):
        window = digits[start:start + k]
        if all(d == window[0] for d in window) and start + k != n:
            return False
    return True


@functools.lru_cache(maxsize=None)
def column_values(h: int, k: int = 4) -> tuple[int, ...]:
    """All valid column values of height h, ascending (brute enumeration of 3**h strings)."""
    if h > 10:  # 3**h strings are too many; the same filter over chip stacks of each height
        return _column_values_by_stacks(h, k)
    values = []
    for digits in itertools.product((EMPTY, A, B), repeat=h):
        # itertools.product varies the last element fastest; we just compute the value and
        # sort afterwards, so the enumeration order does not matter.
        if _column_is_valid(digits, k):
            values.append(sum(d * 3 ** i for i, d in enumerate(digits)))
    return tuple(sorted(values))


def _column_values_by_stacks(h: int, k: int) -> tuple[int, ...]:
    """Same set as :func:`column_values` for tall columns: only the 2**n chip stacks of each
    height n (everything else fails the contiguity test anyway), through the same filter."""
    values = []
    for n in range(h + 1):
        for chips in itertools.product((A, B), repeat=n):
            digits = chips + (EMPTY,) * (h - n)
            if _column_is_valid(digits, k):
                values.append(sum(d * 3 ** i for i, d in enumerate(digits)))
    return tuple(sorted(values))


@functools.lru_cache(maxsize=None)
def _code_of_value(h: int, k: int) -> dict[int, int]:
    return {value: rank for rank, value in enumerate(column_values(h, k))}


def column_value(column: tuple[int, ...]) -> int:
    return sum(chip * 3 ** i for i, chip in enumerate(column))


def key_bytes(w: int, h: int, k: int = 4) -> int:
    base = len(column_values(h, k))
    K = 1
    while 256 ** K < base ** w:
        K += 1
    return K


def position_key(position: tuple[tuple[int, ...], ...], h: int, k: int = 4) -> int:
    codes_of = _code_of_value(h, k)
    base = len(column_values(h, k))
    w = len(position)
    code = [codes_of[column_value(col)] for col in position]
    v1 = sum(code[c] * base ** c for c in range(w))
    v2 = sum(code[w - 1 - c] * base ** c for c in range(w))
    return min(v1, v2)


# --------------------------------------------------------------------------------------
# Game rules
# --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _lines(w: int, h: int, k: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every set of k cells (column, row) in a straight line on the w x h grid."""
    lines = []
    for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
        for c in range(w):
            for r in range(h):
                cells = tuple((c + i * dc, r + i * dr) for i in range(k))
                if all(0 <= cc < w and 0 <= rr < h for cc, rr in cells):
                    lines.append(cells)
    return tuple(lines)


def _cell(position, c: int, r: int) -> int:
    column = position[c]
    return column[r] if r < len(column) else EMPTY


def winners(position, h: int, k: int) -> set[int]:
    """Set of players owning k in a row anywhere on the board (explicit line scan)."""
    w = len(position)
    grid = [[_cell(position, c, r) for r in range(h)] for c in range(w)]  # grid[c][r]
    found = set()
    for cells in _lines(w, h, k):
        first = grid[cells[0][0]][cells[0][1]]
        if first != EMPTY and all(grid[c][r] == first for c, r in cells):
            found.add(first)
    return found


def chips_played(position) -> int:
    return sum(len(col) for col in position)


def is_full(position, h: int) -> bool:
    return all(len(col) == h for col in position)


def play(position, c: int, chip: int):
    return position[:c] + (position[c] + (chip,),) + position[c + 1:]


def mirror(position):
    return tuple(reversed(position))


def terminal_outcome(position, h: int, k: int) -> int | None:
    """Outcome byte of a terminal position, or None if the game goes on."""
    won = winners(position, h, k)
    if won:
        assert len(won) == 1, ("two players own a line", position)
        (winner,) = won
        last_mover = A if chips_played(position) % 2 == 1 else B
        assert winner == last_mover, ("line owned by the player who did not just move", position)
        return A_WINS if winner == A else B_WINS
    if is_full(position, h):
        return DRAW
    return None


# --------------------------------------------------------------------------------------
# Forward enumeration and backward minimax
# --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4)
def _analyse(w: int, h: int, k: int):
    """Returns (levels, outcome, terminal): levels[p] = set of reachable positions at ply p
    (mirror images kept separately); outcome[position] = outcome byte; terminal[position] =
    outcome byte, for terminal positions only."""
    return _solve_from(tuple(() for _ in range(w)), h, k)


def _solve_from(root, h: int, k: int):
    """Like _analyse, for every position reachable from ``root`` (a position of any ply):
    levels[p] is empty for the plies before the root's."""
    w = len(root)
    start = chips_played(root)
    levels = [set() for _ in range(start)] + [{root}]
    terminal: dict = {}
    for ply in range(start, w * h):
        nxt = set()
        mover = A if ply % 2 == 0 else B
        for pos in levels[ply]:
            t = terminal_outcome(pos, h, k)
            if t is not None:
                terminal[pos] = t
                continue
            for c in range(w):
                if len(pos[c]) < h:
                    nxt.add(play(pos, c, mover))
        levels.append(nxt)
    for pos in levels[w * h]:
        t = terminal_outcome(pos, h, k)
        assert t is not None
        terminal[pos] = t

    outcome: dict = {}
    for ply in range(w * h, start - 1, -1):
        mover = A if ply % 2 == 0 else B
        for pos in levels[ply]:
            if pos in terminal:
                outcome[pos] = terminal[pos]  # d = 0
                continue
            children = [outcome[play(pos, c, mover)] for c in range(w) if len(pos[c]) < h]
            outcome[pos] = best_outcome(ply, w * h, children)
    return levels, outcome, terminal


def best_outcome(ply: int, cells: int, children: list[int]) -> int:
    """Outcome byte of a non-terminal position at ``ply`` from its children's bytes: each
    child's d counts +1; the mover takes the fastest win, else a draw, else the slowest loss."""
    my_win = A_WINS if ply % 2 == 0 else B_WINS
    kinds_ds = [(b & 0xC0, (b & 0x3F) + 1) for b in children]
    wins = [d for kind, d in kinds_ds if kind == my_win]
    draws = [d for kind, d in kinds_ds if kind == DRAW]
    losses = [d for kind, d in kinds_ds if kind not in (my_win, DRAW)]
    if wins:
        result = my_win | min(wins)
    elif draws:
        empties = cells - ply
        assert all(d == empties for d in draws)
        result = DRAW | empties
    else:
        (lose_kind,) = {kind for kind, _ in kinds_ds}
        result = lose_kind | max(losses)
    assert (result & 0x3F) < 64 and max(d for _, d in kinds_ds) < 64
    return result


@functools.lru_cache(maxsize=4)
def _keys(w: int, h: int, k: int) -> dict:
    """position -> key, for every reachable position."""
    levels = _analyse(w, h, k)[0]
    return {pos: position_key(pos, h, k) for level in levels for pos in level}


def oracle_table(w: int, h: int, k: int = 4) -> dict[int, int]:
    return dict(_table(w, h, k))


@functools.lru_cache(maxsize=4)
def _table(w: int, h: int, k: int) -> dict[int, int]:
    levels, outcome, _ = _analyse(w, h, k)
    keys = _keys(w, h, k)
    table: dict[int, int] = {}
    for level in levels:
        for pos in level:
            key = keys[pos]
            if key in table:
                assert table[key] == outcome[pos], ("positions sharing a key disagree", pos)
            else:
                table[key] = outcome[pos]
    return table


def oracle_bytes(w: int, h: int, k: int = 4) -> bytes:
    table = oracle_table(w, h, k)
    K = key_bytes(w, h, k)
    out = bytearray()
    for key in sorted(table):
        out += key.to_bytes(K, "big")
        out.append(table[key])
    return bytes(out)


def oracle_key(w: int, h: int, moves: str, k: int = 4) -> int:
    """The key of the position after the 1-based column digits ``moves``."""
    return position_key(oracle_position(w, h, moves, k), h, k)


def oracle_position(w: int, h: int, moves: str, k: int = 4):
    """The position (tuple of columns) after the 1-based column digits ``moves``."""
    pos = tuple(() for _ in range(w))
    for i, ch in enumerate(moves):
        c = int(ch) - 1
        assert 0 <= c < w and len(pos[c]) < h, ("illegal move", moves, i)
        assert terminal_outcome(pos, h, k) is None, ("move after the game ended", moves, i)
        pos = play(pos, c, A if i % 2 == 0 else B)
    return pos


def position_of_key(w: int, h: int, key: int, k: int = 4):
    """The position whose left-to-right reading is ``key`` (one of a mirror pair)."""
    values = column_values(h, k)
    base = len(values)
    cols = []
    for _ in range(w):
        key, code = divmod(key, base)
        value, column = values[code], []
        while value:
            value, chip = divmod(value, 3)
            column.append(chip)
        cols.append(tuple(column))
    assert key == 0, "key out of range"
    return tuple(cols)


def subtree_table(w: int, h: int, root, k: int = 4) -> dict[int, int]:
    """key -> outcome byte of every position reachable from ``root`` (a position of
    :func:`oracle_position` or :func:`position_of_key`; the root included), solved by plain
    minimax over exactly those positions: what a table rooted there must hold (a finished game:
just its own entry)."""
    assert len(root) == w, "root of another board width"
    levels, outcome, _ = _solve_from(root, h, k)
    table: dict[int, int] = {}
    for level in levels:
        for pos in level:
            key = position_key(pos, h, k)
            assert table.setdefault(key, outcome[pos]) == outcome[pos], ("mirror disagrees", pos)
    return table


def oracle_ply_counts(w: int, h: int, k: int = 4) -> list[dict]:
    """Per ply: positions (mirror images counted), entries, terminal positions (a line, or a
    full board), ``line_terminal`` (a line only: Böck's "terminal"), a_wins, draws, b_wins."""
    levels, outcome, terminal = _analyse(w, h, k)
    keys = _keys(w, h, k)
    rows = []
    for ply, level in enumerate(levels):
        kinds = [outcome[pos] & 0xC0 for pos in level]
        rows.append({
            "ply": ply,
            "positions": len(level),
            "entries": len({keys[pos] for pos in level}),
            "terminal": sum(1 for pos in level if pos in terminal),
            "line_terminal": sum(1 for pos in level if terminal.get(pos, DRAW) != DRAW),
            "a_wins": kinds.count(A_WINS),
            "draws": kinds.count(DRAW),
            "b_wins": kinds.count(B_WINS),
        })
    return rows


def position_of_moves(w: int, moves: str):
    """The position (tuple of columns) reached by a string of 1-based column digits."""
    pos = tuple(() for _ in range(w))
    for i, ch in enumerate(moves):
        pos = play(pos, int(ch) - 1, A if i % 2 == 0 else B)
    return pos


def solve_subtree(root, w: int, h: int, k: int = 4) -> dict[int, tuple[int, int]]:
    """key -> (outcome byte, ply) of every position reachable from ``root``, by the same
    minimax as :func:`_analyse` (memoised depth-first, for a subtree of a large board)."""
    found: dict = {}
    memo: dict = {}

    def solve(pos) -> int:
        if pos in memo:
            return memo[pos]
        ply = chips_played(pos)
        res = terminal_outcome(pos, h, k)
        if res is None:
            mover = A if ply % 2 == 0 else B
            res = best_outcome(ply, w * h,
                               [solve(play(pos, c, mover)) for c in range(w) if len(pos[c]) < h])
        memo[pos] = res
        found[position_key(pos, h, k)] = (res, ply)
        return res

    solve(root)
    return found


def main(argv: list[str]) -> None:
    w, h = int(argv[1]), int(argv[2])
    k = int(argv[3]) if len(argv) > 3 else 4
    data = oracle_bytes(w, h, k)
    K = key_bytes(w, h, k)
    print(f"board {w}x{h} k={k}")
    print(f"entries {len(data) // (K + 1)}")
    print(f"bytes {len(data)}")
    print(f"sha256 {hashlib.sha256(data).hexdigest()}")


if __name__ == "__main__":
    main(sys.argv)


# --------------------------------------------------------------------------------------
# 3D gravity boards (X x Y grid of columns of height H; docs/FORMAT.md section 8)
# --------------------------------------------------------------------------------------
# A position is a tuple of X*Y columns, column index y*X + x.  Written again from the
# definition, sharing nothing with c4table.game.grid3d: lines are every set of k cells equally
# spaced along a nonzero step in {-1,0,1}^3; images are the coordinate maps of the grid.

@functools.lru_cache(maxsize=None)
def _lines3d(X: int, Y: int, H: int, k: int) -> tuple[frozenset, ...]:
    """Every set of k cells (x, y, z) in a straight line in the X x Y x H box."""
    found = set()
    steps = [s for s in itertools.product((-1, 0, 1), repeat=3) if s != (0, 0, 0)]
    for x, y, z in itertools.product(range(X), range(Y), range(H)):
        for dx, dy, dz in steps:
            cells = [(x + i * dx, y + i * dy, z + i * dz) for i in range(k)]
            if all(0 <= a < X and 0 <= b < Y and 0 <= c < H for a, b, c in cells):
                found.add(frozenset(cells))
    return tuple(sorted(found, key=sorted))


def winners3d(position, X: int, Y: int, H: int, k: int) -> set[int]:
    found = set()
    for cells in _lines3d(X, Y, H, k):
        chips = set()
        for x, y, z in cells:
            column = position[y * X + x]
            chips.add(column[z] if z < len(column) else EMPTY)
        if len(chips) == 1 and EMPTY not in chips:
            found |= chips
    return found


def terminal_outcome3d(position, X: int, Y: int, H: int, k: int) -> int | None:
    won = winners3d(position, X, Y, H, k)
    if won:
        assert len(won) == 1, ("two players own a line", position)
        (winner,) = won
        assert winner == (A if chips_played(position) % 2 == 1 else B), position
        return A_WINS if winner == A else B_WINS
    if is_full(position, H):
        return DRAW
    return None


def images3d(position, X: int, Y: int) -> list:
    """The position under every symmetry of the grid (8 when X == Y, else 4), repeats kept."""
    maps = []
    for fx in (False, True):
        for fy in (False, True):
            maps.append(lambda x, y, fx=fx, fy=fy: (X - 1 - x if fx else x, Y - 1 - y if fy else y))
            if X == Y:
                maps.append(lambda x, y, fx=fx, fy=fy: (Y - 1 - y if fy else y, X - 1 - x if fx else x))
    out = []
    for f in maps:
        cols = [None] * (X * Y)
        for y in range(Y):
            for x in range(X):
                nx, ny = f(x, y)
                cols[ny * X + nx] = position[y * X + x]
        out.append(tuple(cols))
    return out


def position_key3d(position, X: int, Y: int, H: int, k: int) -> int:
    """Least base-B reading (column 0 least significant) over the images of the position."""
    codes_of = _code_of_value(H, k)
    base = len(column_values(H, k))
    readings = []
    for img in images3d(position, X, Y):
        readings.append(sum(codes_of[column_value(col)] * base ** i for i, col in enumerate(img)))
    return min(readings)


@functools.lru_cache(maxsize=4)
def analyse3d(X: int, Y: int, H: int, k: int):
    """(levels, outcome): every reachable position per ply (images kept apart) and its outcome
    byte, by forward enumeration and plain backward minimax."""
    n, cells = X * Y, X * Y * H
    levels = [{tuple(() for _ in range(n))}]
    terminal: dict = {}
    for ply in range(cells + 1):
        nxt = set()
        mover = A if ply % 2 == 0 else B
        for pos in levels[ply]:
            t = terminal_outcome3d(pos, X, Y, H, k)
            if t is not None:
                terminal[pos] = t
                continue
            for c in range(n):
                if len(pos[c]) < H:
                    nxt.add(play(pos, c, mover))
        if ply < cells:
            levels.append(nxt)
    outcome: dict = {}
    for ply in range(cells, -1, -1):
        mover = A if ply % 2 == 0 else B
        for pos in levels[ply]:
            if pos in terminal:
                outcome[pos] = terminal[pos]
                continue
            outcome[pos] = best_outcome(
                ply, cells, [outcome[play(pos, c, mover)] for c in range(n) if len(pos[c]) < H])
    return levels, outcome


def oracle_table3d(X: int, Y: int, H: int, k: int) -> dict[int, int]:
    """key -> outcome byte of every reachable position of the 3D board."""
    levels, outcome = analyse3d(X, Y, H, k)
    table: dict[int, int] = {}
    for level in levels:
        for pos in level:
            key = position_key3d(pos, X, Y, H, k)
            assert table.setdefault(key, outcome[pos]) == outcome[pos], ("images disagree", pos)
    return table


def oracle_bytes3d(X: int, Y: int, H: int, k: int) -> bytes:
    table = oracle_table3d(X, Y, H, k)
    K = key_bytes(X * Y, H, k)
    return b"".join(key.to_bytes(K, "big") + bytes([table[key]]) for key in sorted(table))


def oracle_ply_counts3d(X: int, Y: int, H: int, k: int) -> list[dict]:
    """Per ply: positions (images counted), entries, terminal, a_wins, draws, b_wins
    (positions)."""
    levels, outcome = analyse3d(X, Y, H, k)
    rows = []
    for ply, level in enumerate(levels):
        kinds = [outcome[pos] & 0xC0 for pos in level]
        rows.append({"ply": ply, "positions": len(level),
                     "entries": len({position_key3d(p, X, Y, H, k) for p in level}),
                     "terminal": sum(terminal_outcome3d(p, X, Y, H, k) is not None for p in level),
                     "a_wins": kinds.count(A_WINS), "draws": kinds.count(DRAW),
                     "b_wins": kinds.count(B_WINS)})
    return rows
