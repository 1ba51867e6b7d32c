"""The OpenAPI 3.1 description of the JSON API, served at ``/openapi.json``."""
from __future__ import annotations

from c4table.serve.service import MAX_BATCH

JSON_TYPE = "application/json"


def openapi(boards: list[str]) -> dict:
    """The OpenAPI 3.1 description of the API (served at ``/openapi.json``)."""
    err = {"description": "error", "content": {JSON_TYPE: {"schema": {"$ref": "#/components/schemas/Error"}}}}
    board_param = {"name": "board", "in": "path", "required": True,
                   "schema": {"type": "string", "enum": boards}, "description": "board name, e.g. 5x4"}
    moves_param = {"name": "moves", "in": "query", "required": False, "schema": {"type": "string"},
                   "description": "1-based columns played from the empty board (empty: the empty board)"}
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
                    "type": "array", "maxItems": MAX_BATCH, "items": {"type": "string"}}}}},
                "responses": {"200": {"description": "one object per position; a bad one is "
                                                     "{position, error}",
                                      "content": {JSON_TYPE: {"schema": {"type": "array", "items": {
                                          "$ref": "#/components/schemas/Probe"}}}}},
                              "400": err, "404": err, "413": err}}},
            "/solve": {"get": {
                "summary": "Pons' web API: each column's score for the side to move (100: cannot be played)",
                "parameters": [{"name": "pos", "in": "query", "required": False, "schema": {"type": "string"},
                                "description": "1-based columns played from the empty board"},
                               {"name": "board", "in": "query", "required": False,
                                "schema": {"type": "string", "enum": boards},
                                "description": "board (default: the one served, else 7x6)"}],
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
