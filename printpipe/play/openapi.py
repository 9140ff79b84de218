"""The game server's OpenAPI 3.1 document (served at ``/v1/openapi.json``), written out here.

Written by hand, as the validation service's is: what matters to an operator integrating its
platform (the signature profile, who may act for a player, Idempotency-Key, the statuses) is
prose and headers.  That the document describes exactly the application's routes is checked
when the application is created (``printpipe.service.apidoc``), and by a test.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from printpipe import __version__
from printpipe.service.openapi import SIGNATURE_SCHEME
from printpipe.service.openapi import openapi_document as service_document

_ERROR = {"$ref": "#/components/schemas/Error"}
_PLAY = {"$ref": "#/components/schemas/Play"}
_TEXTS = {
    400: "malformed request (player name, play id, Idempotency-Key, a body that is not UTF-8 "
    "JSON of the shape asked: a key twice, a lone surrogate, nested too deep)",
    401: "unsigned and no session, badly signed, expired, replayed, or an unknown or revoked "
    "terminal (a launch token: not the platform's, expired, or used already): nothing changed",
    402: "the balance does not cover the stake: nothing debited",
    403: "a terminal whose role the operation does not admit (role_refused, the role named: "
    "see x-printpipe-roles), another player's session, the daily stake limit reached, or a "
    "cross-site request",
    404: "no such player, play or path",
    409: "sold out: every unit of the block has been dealt",
    413: "a body over 16 KiB",
    415: "a change made with the session cookie is sent as application/json",
    422: "this Idempotency-Key was used with another request",
    503: "the database is unavailable: retry",
}


def _errors(*statuses: int) -> dict[str, Any]:
    return {
        str(s): {
            "description": _TEXTS[s],
            "content": {"application/problem+json": {"schema": _ERROR}},
        }
        for s in statuses
    }


def _ok(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_PLAYER = {"name": "player", "in": "path", "required": True, "schema": {"type": "string"}}
_PLAY_ID = {"name": "play", "in": "path", "required": True, "schema": {"type": "string"}}
_AUTH: list[dict[str, list[str]]] = [{"platform": []}, {"session": []}]


def _problem_schema() -> dict[str, Any]:
    """The validation service's error shape (RFC 9457 problem details), which every error of
    the game server takes too."""
    schema: dict[str, Any] = service_document()["components"]["schemas"]["Problem"]
    return schema


def _signature_scheme() -> dict[str, Any]:
    """The validation service's request signature profile, which the platform's requests use."""
    scheme: dict[str, Any] = service_document()["components"]["securitySchemes"][SIGNATURE_SCHEME]
    return scheme


@cache
def openapi_document() -> dict[str, Any]:
    player_errors = (400, 401, 403, 404, 503)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "printpipe play: the game server of an online instant game",
            "version": __version__,
            "description": "Deals each unit of a committed block once, against the stake, in "
            "an order fixed before sale. Requests under /v1/players/{player} are signed by "
            "the operator's platform (RFC 9421, the validation service's profile, a terminal "
            "of role platform) or carry the player's session cookie (from the operator's launch "
            "link, POST /v1/launches, or with printpipe play --demo a login link). Each "
            "operation lists who it admits (x-printpipe-roles; anyone: unsigned, session: the "
            "player's cookie); a terminal of any other role is answered 403 role_refused. Every "
            "signed request, reads included, is admitted once (its nonce recorded). Every error "
            "is one line of JSON. See docs/play.md.",
        },
        "paths": {
            "/": {"get": {"summary": "the player's page (HTML)", "responses": {"200": {
                "description": "the page"}}}},
            "/static/{name}": {"get": {"summary": "the page's script, style sheet and fonts",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string"}}],
                "responses": {"200": {"description": "the file"}, **_errors(404)}}},
            "/v1/health": {"get": {"summary": "live and ready: the process answers, and its "
                "database (503 and \"ready\": false when it does not)", "responses": {
                "200": _ok("ok", {"type": "object"}), **_errors(503)}}},
            "/v1/health/live": {"get": {"summary": "the process answers (nothing asked of the "
                "database)", "responses": {"200": _ok("live", {"type": "object"})}}},
            "/v1/health/ready": {"get": {"summary": "the process and its database answer",
                "responses": {"200": _ok("ready", {"type": "object"}), **_errors(503)}}},
            "/metrics": {"get": {"summary": "Prometheus metrics (text format), every worker's "
                "added up: no player, code or token in them", "responses": {
                "200": {"description": "the metrics", "content": {"text/plain": {}}}}}},
            "/v1/openapi.json": {"get": {"summary": "this document", "responses": {
                "200": _ok("the document", {"type": "object"})}}},
            "/v1/game": {"get": {"summary": "the game as the screen shows it: symbols (SVG "
                "pictograms, captions), paytable, rules, stake, help line",
                "responses": {"200": _ok("the game", {"type": "object"})}}},
            "/v1/commitments": {"get": {"summary": "the published commitments of the blocks "
                "dealt (printpipe-commitment/1), against whose roots proofs are checked",
                "responses": {"200": _ok("the commitments", {"type": "object"})}}},
            "/v1/sessions": {
                "post": {"summary": "demo: spend a one-time login token for a session cookie "
                    "(HttpOnly, SameSite=Strict)",
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": {"type": "object", "required": ["token"],
                                   "properties": {"token": {"type": "string"}}}}}},
                    "responses": {"201": _ok("logged in", {"type": "object"}),
                                  **_errors(400, 403, 404, 409, 413, 415)}},
                "delete": {"summary": "demo: log out", "responses": {
                    "200": _ok("logged out", {"type": "object"}), **_errors(403, 404, 415)}},
            },
            "/v1/launches": {
                "post": {"summary": "spend the operator's launch token (a JWT the platform "
                    "signs with its Ed25519 key, EdDSA: sub the player, sid its session, iat, "
                    "exp at most 60 s later, jti a nonce, aud printpipe-play; see docs/play.md) "
                    "for a session cookie, once; a player launched for the first time is "
                    "introduced by it",
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": {"type": "object", "required": ["token"],
                                   "properties": {"token": {"type": "string"}}}}}},
                    "responses": {"201": _ok("the session started", {"type": "object"}),
                                  **_errors(400, 401, 403, 415)}},
            },
            "/v1/me": {"get": {"summary": "the session's player", "responses": {
                "200": _ok("the player", {"type": "object"}), **_errors(401, 403)}}},
            "/v1/players/{player}": {"get": {"summary": "the player's account: balance, "
                "stake, daily limit and what was staked today", "security": _AUTH,
                "parameters": [_PLAYER],
                "responses": {"200": _ok("the account", {"type": "object"}),
                              **_errors(*player_errors)}}},
            "/v1/players/{player}/plays": {
                "post": {"summary": "play: debit the stake, deal the next unit, credit its "
                    "lot; all or nothing, once per Idempotency-Key", "security": _AUTH,
                    "parameters": [_PLAYER, {"name": "Idempotency-Key", "in": "header",
                        "required": True, "schema": {"type": "string",
                        "pattern": "^[A-Za-z0-9._:-]{8,64}$"}}],
                    "responses": {"201": _ok("the play", _PLAY),
                                  "200": _ok("the play made earlier under this key "
                                             "(Idempotent-Replayed: true)", _PLAY),
                                  **_errors(400, 401, 402, 403, 404, 409, 413, 415, 422, 503)}},
                "get": {"summary": "the history: the player's plays, newest first, each unit "
                    "as it was shown", "security": _AUTH,
                    "parameters": [_PLAYER],
                    "responses": {"200": _ok("the plays", {"type": "object", "properties": {
                        "plays": {"type": "array", "items": _PLAY}}}),
                        **_errors(*player_errors)}},
            },
            "/v1/players/{player}/plays/last": {"get": {"summary": "the last play (article 5.1)",
                "security": _AUTH, "parameters": [_PLAYER],
                "responses": {"200": _ok("the play", _PLAY), **_errors(*player_errors)}}},
            "/v1/players/{player}/plays/{play}": {"get": {"summary": "one play",
                "security": _AUTH,
                "parameters": [_PLAYER, _PLAY_ID],
                "responses": {"200": _ok("the play", _PLAY), **_errors(*player_errors)}}},
            "/v1/players/{player}/plays/{play}/proof": {"get": {"summary": "the inclusion "
                "proof of the play's unit (printpipe-inclusion-proof/1) against its block's "
                "commitment", "security": _AUTH,
                "parameters": [_PLAYER, _PLAY_ID],
                "responses": {"200": _ok("the proof", {"type": "object"}),
                              **_errors(*player_errors)}}},
        },
        "components": {
            "securitySchemes": {
                "platform": {**_signature_scheme(), "description": "a terminal of role "
                    "platform: " + _signature_scheme()["description"]},
                "session": {"type": "apiKey", "in": "cookie", "name": "pp_session",
                            "description": "a launch's (POST /v1/launches) or, with "
                            "printpipe play --demo, a login link's (POST /v1/sessions)"},
            },
            "schemas": {
                "Error": _problem_schema(),
                "Play": {"type": "object", "required": ["play", "serial", "block", "played_at",
                    "stake_cents", "lot_eur", "balance_cents", "unit"], "properties": {
                    "play": {"type": "string", "description": "32 hex digits"},
                    "serial": {"type": "string", "description": "GGGG-PPPPPP-TTT-C"},
                    "block": {"type": "integer", "description": "the unit's block (its "
                              "commitment's and its proof's block number)"},
                    "played_at": {"type": "string"},
                    "stake_cents": {"type": "integer"},
                    "lot_eur": {"type": "integer", "description": "the unit's lot (5.7)"},
                    "balance_cents": {"type": "integer", "description": "after the play"},
                    "unit": {"type": "object", "description": "grids (symbols row by row, "
                        "winning cells, wins in words), second_grid, lot_eur, wins_text"},
                }},
            },
        },
    }  # fmt: skip
