"""How c4table words things for people: outcomes, counts with their units, and quoted input.

Design notes: ``docs/modules.md`` (``c4table.wording``).

>>> count(1, "ply"), count(2, "ply"), count(1_000, "row")
('1 ply', '2 plies', '1,000 rows')
>>> outcome("A", 1), outcome("draw", 4)
('A wins in 1 ply', 'draw in 4 plies')
>>> quote("12\\x00" + "3" * 100)
"'12\\\\x00333333333333333333333333333333333333333333333333333333…' (103 characters)"
"""
from __future__ import annotations

_PLURALS = {"ply": "plies", "entry": "entries", "copy": "copies"}

QUOTE_LIMIT = 60
"""Characters of a user's input quoted back in a message; longer input is cut."""


def plural(n: int, word: str) -> str:
    """``word`` for ``n`` of it: ``plural(1, "ply")`` is ``"ply"``, ``plural(2, "ply")`` is
    ``"plies"``.

    >>> plural(1, "task"), plural(0, "task"), plural(3, "table entry")
    ('task', 'tasks', 'table entries')
    """
    if n == 1:
        return word
    head, _, last = word.rpartition(" ")      # "table entry" -> "table entries"
    return (head + " " if head else "") + _PLURALS.get(last, last + "s")


def count(n: int, word: str) -> str:
    """``n`` with thousands separators and ``word`` in the right number.

    >>> count(1, "worker"), count(12345, "position")
    ('1 worker', '12,345 positions')
    """
    return f"{n:,} {plural(n, word)}"


def outcome(result: str, distance: int) -> str:
    """The outcome under perfect play ``result`` (``"A"``, ``"B"`` or ``"draw"``) reached in
    ``distance`` plies: ``"A wins in 7 plies"``, ``"draw in 12 plies"``, ``"B wins in 1 ply"``.
    A distance of 0 is a finished game (:func:`game_over`).

    >>> outcome("B", 1), outcome("A", 0), outcome("draw", 0)
    ('B wins in 1 ply', 'A has won', 'draw')
    """
    if distance <= 0:
        return game_over(result)
    head = "draw" if result == "draw" else f"{result} wins"
    return f"{head} in {count(distance, 'ply')}"


def game_over(result: str) -> str:
    """A finished game: ``"A has won"``, ``"B has won"`` or ``"draw"``.

    >>> game_over("A")
    'A has won'
    """
    return "draw" if result == "draw" else f"{result} has won"


def quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` quoted for a message: control and non-printable characters escaped, cut to
    ``limit`` characters with the full length said, so a huge or binary input never floods
    the terminal.

    >>> quote("33x"), quote("\\x1b[2J")
    ("'33x'", "'\\\\x1b[2J'")
    >>> quote("\\U00018cd6" * 9)          # escapes count as the characters they show
    "'\\\\U00018cd6\\\\U00018cd6\\\\U00018cd6\\\\U00018cd6\\\\U00018cd6\\\\U00018cd6…' (9 characters)"
    """
    text = str(text)
    shown, used = [], 0
    for c in text:        # at most ``limit`` characters shown, escapes counted as written
        e = c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
        e = e.replace("'", "\\'")
        if used + len(e) > limit:
            break
        shown.append(e)
        used += len(e)
    if len(shown) < len(text):
        return f"'{''.join(shown)}…' ({len(text):,} characters)"
    return f"'{''.join(shown)}'"


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` as a JSON-safe, bounded value for an answer's ``position`` field: escaped like
    :func:`quote` but without quotes, cut with ``…``.

    >>> clip("1" * 70)
    '111111111111111111111111111111111111111111111111111111111111…'
    """
    text = str(text)
    shown = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                    for c in text[:limit])
    return shown + ("…" if len(text) > limit else "")


WORD_LIMIT = 160
"""Characters of one word of an error message at most (a path fits, a pasted blob does not)."""

def message(text: str) -> str:
    """An error message as one printable line: whitespace runs become one space, control
    characters are escaped, a word longer than :data:`WORD_LIMIT` (a user's huge input quoted
    by click; file paths are shorter) is cut. Whole messages are not cut: a message naming
    two files and what was kept stays whole.

    >>> m = message("No such command '" + "9" * 500 + "'.")
    >>> len(m), m[-3:]
    (177, '99…')
    >>> message("bad\\x00 input\\n here")
    'bad\\\\x00 input here'
    """
    words = []
    for w in str(text).split():
        w = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                    for c in w)
        words.append(w if len(w) <= WORD_LIMIT else w[:WORD_LIMIT] + "…")
    return " ".join(words)
