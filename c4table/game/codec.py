"""Position keys and outcome bytes: the two fields of a table entry (docs/FORMAT.md).

Design notes: ``docs/modules.md`` (``c4table.game.codec``).

>>> from c4table.game.board import Board
>>> b = Board.parse("7x6")
>>> key_of_codes(b, [0, 0, 0, 1, 0, 0, 0])    # A in the centre column
1367631
>>> decode_outcome(0x47)
Outcome(result='A', distance=7)
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from c4table.game.board import Board

DRAW, A_WINS, B_WINS = 0x00, 0x40, 0x80
_RESULT_OF_BITS = {DRAW: "draw", A_WINS: "A", B_WINS: "B"}
_BITS_OF_RESULT = {v: k for k, v in _RESULT_OF_BITS.items()}


class Outcome(NamedTuple):
    """Game-theoretic result (``"A"``, ``"B"`` or ``"draw"``) and plies until it is reached."""

    result: str
    distance: int


def encode_outcome(result: str, distance: int) -> int:
    """Outcome byte for ``result`` in ``distance`` plies."""
    if not 0 <= distance < 64:
        raise ValueError(f"distance {distance} does not fit six bits")
    return _BITS_OF_RESULT[result] | distance


def decode_outcome(byte: int) -> Outcome:
    """Split an outcome byte; raises ``ValueError`` for the unused class ``0xC0``."""
    cls = byte & 0xC0
    if cls not in _RESULT_OF_BITS:
        raise ValueError(f"invalid outcome byte 0x{byte:02x}")
    return Outcome(_RESULT_OF_BITS[cls], byte & 0x3F)


def readings(board: Board, codes: Sequence[int]) -> Sequence[int]:
    """Every symmetry's reading of ``codes`` (:meth:`Board.readings`): on a 2D board ``(v1,
    v2)``, the board read left-to-right and right-to-left as base-B numbers."""
    return board.readings(codes)


def key_of_codes(board: Board, codes: Sequence[int]) -> int:
    """Mirror-canonical key ``min(v1, v2)`` of a position given its column codes; on a 3D board
    the least reading over the grid's symmetries (:meth:`Board.key_of_codes`)."""
    return board.key_of_codes(codes)


def codes_of_key(board: Board, key: int) -> list[int]:
    """Column codes of the canonical orientation of ``key`` (inverse of ``v1``)."""
    if not 0 <= key < board.key_limit:
        raise ValueError(f"key {key} out of range for board {board}")
    codes = []
    for _ in range(board.width):
        key, digit = divmod(key, board.base)
        codes.append(digit)
    return codes


def key_to_bytes(board: Board, key: int) -> bytes:
    """Big-endian ``K``-byte form of a key, as stored in the table."""
    return key.to_bytes(board.key_bytes, "big")
