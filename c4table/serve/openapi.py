"""The OpenAPI 3.1 description of the JSON API, served at ``/openapi.json``."""
from __future__ import annotations

from c4table.game.board import Board
from c4table.serve.service import MAX_BATCH

JSON_TYPE = "application/json"


def moves_schema(boards: dict[str, Board]) -> dict:
    """The schema of a move string (``moves``, ``pos``): digits 1 to the widest board's width,
    at most its cells. A string of this form can still be no game of the board asked (a column
    beyond its width, a full column, a move after the game ended): 400 with the reason.

    >>> moves_schema({"5x4": Board(5, 4), "4x4": Board(4, 4)})
    {'type': 'string', 'pattern': '^[1-5]*$', 'maxLength': 20}
    """
    width = min(max(b.width for b in boards.values()), 9)
    return {"type": "string", "pattern": f"^[1-{width}]*$",
            "maxLength": max(b.cells for b in boards.values())}


def openapi(boards: dict[str, Board]) -> dict:
    """The OpenAPI 3.1 description of the API (served at ``/openapi.json``) for the served
    ``boards`` (name -> :class:`~c4table.game.board.Board`)."""
    names = sorted(boards)
    moves = moves_schema(boards)
    legal = ("A string of this form that is no game of the board (a column beyond its width, a "
             "full column, a move after the game ended, more moves than the board's cells) is "
             "answered 400 with the reason, as is a string not of this form.")
    err = {"description": "error", "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Error"}}}}
    board_param = {"name": "board", "in": "path", "required": True,
                   "schema": {"type": "string", "enum": names}, "description": "board name, e.g. 5x4"}
    moves_param = {"name": "moves", "in": "query", "required": False, "schema": moves,
                   "description": "1-based columns played from the empty board (empty: the empty "
                                  "board). " + legal + " A drawing (rows separated by newlines, as "
                                  "`c4table lookup --drawing` reads) is also accepted."}
    move = {"type": "object", "properties": {"column": {"type": "integer"},
                                             "outcome": {"enum": ["A", "B", "draw"]},
                                             "distance": {"type": "integer"},
                                             "score": {"type": "integer"}}}
    probe = {"type": "object", "properties": {
        "board": {"type": "string"}, "position": {"type": "string"}, "ply": {"type": "integer"}, "to_move": {"enum": ["A", "B"]},
        "outcome": {"enum": ["A", "B", "draw"]}, "distance": {"type": "integer"},
        "terminal": {"type": "boolean"}, "moves": {"type": "array", "items": move},
        "score": {"type": "integer", "description": "Pons' score for the side to move"},
        "winning_cells": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}},
                          "description": "a won game only: [column, row] of its winning line, "
                                         "1-based, row 1 at the bottom"}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "c4table probe API", "version": "1",
                 "description": "Outcome and distance of Connect-4 positions from complete tables. "
                                "Distances count plies; a move's distance counts from the position "
                                "before it, the move included."},
        "paths": {
            "/api/boards": {"get": {"summary": "Boards served", "responses": {"200": {"description": "list"}}}},
            "/api/{board}": {"get": {
                "summary": "One position: the object `c4table lookup --json` prints",
                "parameters": [board_param, moves_param],
                "responses": {"200": {"description": "the position and each legal move",
                                      "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Probe"}}}},
                              "400": err, "404": err}}},
            "/api/{board}/mainline": {"get": {
                "summary": "Perfect-play continuation to the end of the game",
                "parameters": [board_param, moves_param],
                "responses": {"200": {"description": "start outcome, moves played, end position",
                                      "content": {JSON_TYPE: {"schema": {"type": "object", "properties": {
                                          "position": {"type": "string"}, "outcome": {"type": "string"},
                                          "distance": {"type": "integer"},
                                          "mainline": {"type": "array", "items": move},
                                          "end": {"type": "string"}, "winner": {"type": "string"}}}}}},
                              "400": err, "404": err}}},
            "/api/{board}/batch": {"post": {
                "summary": f"Up to {MAX_BATCH} positions, answered in order",
                "parameters": [board_param],
                "requestBody": {"required": True, "content": {JSON_TYPE: {"schema": {
                    "type": "array", "maxItems": MAX_BATCH, "items": {
                    "type": "string", "description": "a move string (or drawing); a bad one is "
                                                     "answered in its place with its error"}}}}},
                "responses": {"200": {"description": "one object per position; a bad one is "
                                                     "{position, error}",
                                      "content": {JSON_TYPE: {"schema": {"type": "array", "items": {
                                          "$ref": "#/components/schemas/Probe"}}}}},
                              "400": err, "404": err, "413": err}}},
            "/solve": {"get": {
                "summary": "Pons' web API: each column's score for the side to move (100: cannot be played)",
                "parameters": [{"name": "pos", "in": "query", "required": False, "schema": moves,
                                "description": "1-based columns played from the empty board. " + legal},
                               {"name": "board", "in": "query", "required": False,
                                "schema": {"type": "string", "enum": names},
                                "description": "board (default: 7x6 if served, else the only board "
                                               "served; with several other boards it must be given: 400)"}],
                "responses": {"200": {"description": "{pos, score: [one int per column]}"},
                              "400": err, "404": err}}},
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "ok"}}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (text format)",
                                 "responses": {"200": {"description": "metrics"}}}},
        },
        "components": {"schemas": {
            "Probe": probe,
            "Error": {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}}},
    }
