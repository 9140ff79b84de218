"""The operator's wallet API as an OpenAPI 3.1 document: what an operator implements.

Built from ``api.py``'s own rules (paths, reference and player patterns, refusals), so the
document and the two sides that speak it cannot drift apart; the reference wallet serves it at
``/v1/openapi.json`` and ``docs/wallet-api.openapi.json`` is this document, written out (a test
checks both, and that it describes exactly the reference wallet's routes).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from printpipe import __version__
from printpipe.service.openapi import SIGNATURE_SCHEME
from printpipe.service.openapi import openapi_document as service_document
from printpipe.wallet.api import (
    BATCH_BODY_BYTES,
    BATCH_MOST,
    BATCH_PATH,
    CURRENCY,
    GAME,
    KINDS,
    MAX_AMOUNT_CENTS,
    PLAYER,
    REFERENCE,
    REFUSALS,
)

_SIGNED: list[dict[str, list[str]]] = [{SIGNATURE_SCHEME: []}]
_PROBLEM = {"$ref": "#/components/schemas/Problem"}
_RECEIPT = {"$ref": "#/components/schemas/Receipt"}
_UNKNOWN = (
    "any other status (5xx, 429), a timeout or a cut connection: the outcome is unknown; the "
    "game server asks again with the same reference (a debit it cannot confirm, it cancels)"
)


def _refusals(*kinds: str) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for kind in ("bad_request", "unauthorized", *kinds):
        by_status.setdefault(REFUSALS[kind][0], []).append(kind)
    return {
        str(status): {
            "description": "; ".join(f"{k}: {REFUSALS[k][1]}" for k in names),
            "content": {"application/problem+json": {"schema": _PROBLEM}},
        }
        for status, names in sorted(by_status.items())
    }


def _amount(description: str, *, minimum: int = 1) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": MAX_AMOUNT_CENTS,
            "description": description}  # fmt: skip


def _call_schema(kind: str, description: str) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "reference": {
            "type": "string",
            "pattern": f"^{REFERENCE.pattern}$",
            "description": "the play's id: the call is idempotent by (reference, call)",
        },
        "player": {"type": "string", "pattern": f"^{PLAYER.pattern}$"},
        "amount_cents": _amount(description),
        "currency": {"const": CURRENCY},
        "game": {"type": "string", "pattern": f"^{GAME.pattern}$", "description": "the game's id"},
    }
    if kind == "debit":
        properties["split"] = {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "description": "how the stake divides between the games it buys (the game's own "
            "share first, then each linked game's, e.g. 97 golden-animals + 3 SUPER JACKPOT); "
            "the shares add up to amount_cents",
            "items": {
                "type": "object",
                "properties": {
                    "game": {"type": "string", "pattern": f"^{GAME.pattern}$"},
                    "amount_cents": _amount("this game's share", minimum=0),
                },
                "required": ["game", "amount_cents"],
                "additionalProperties": False,
            },
        }
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }


def _movement(kind: str, summary: str, refusals: tuple[str, ...]) -> dict[str, Any]:
    schema = f"#/components/schemas/{kind.capitalize()}"
    return {
        "post": {
            "summary": summary,
            "security": _SIGNED,
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": schema}}},
            },
            "responses": {
                "201": {
                    "description": "done now",
                    "content": {"application/json": {"schema": _RECEIPT}},
                },
                "200": {
                    "description": "done earlier under this reference, with this same body: "
                    "its receipt again (header Idempotent-Replayed: true)",
                    "content": {"application/json": {"schema": _RECEIPT}},
                },
                **_refusals(*refusals, "reference_reused"),
                "default": {"description": _UNKNOWN},
            },
        }
    }


def _batch() -> dict[str, Any]:
    calls = {
        "oneOf": [
            {
                "type": "object",
                "properties": {
                    "kind": {"const": kind},
                    "body": {"$ref": f"#/components/schemas/{kind.capitalize()}"},
                },
                "required": ["kind", "body"],
                "additionalProperties": False,
            }
            for kind in KINDS
        ]
    }
    result = {
        "type": "object",
        "properties": {
            "status": {
                "type": "integer",
                "description": "the status the call alone would have been answered: 201 done "
                "now, 200 done earlier (replayed), a refusal's 4xx, or a 5xx (its outcome "
                "unknown: asked again, same reference)",
            },
            "body": {
                "description": "the body the call alone would have been answered: its receipt, "
                "or problem details",
                "oneOf": [_RECEIPT, _PROBLEM],
            },
            "replayed": {"type": "boolean", "description": "Idempotent-Replayed: true, alone"},
        },
        "required": ["status", "body", "replayed"],
        "additionalProperties": False,
    }
    return {
        "post": {
            "summary": f"OPTIONAL: up to {BATCH_MOST} debits, credits and cancels in one request, "
            "each made as if alone, in the order given, and answered apart (a wallet without "
            "it answers 404: the game server then sends one request a call)",
            "security": _SIGNED,
            "requestBody": {
                "required": True,
                "description": f"at most {BATCH_BODY_BYTES} bytes; each call's body exactly "
                "the single call's",
                "content": {
                    "application/json": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "calls": {
                                    "type": "array",
                                    "minItems": 1,
                                    "maxItems": BATCH_MOST,
                                    "items": calls,
                                }
                            },
                            "required": ["calls"],
                            "additionalProperties": False,
                        }
                    }
                },
            },
            "responses": {
                "200": {
                    "description": "each call's result, in the order asked (a call whose body "
                    "is malformed: its own 400 bad_request, the others made)",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"results": {"type": "array", "items": result}},
                                "required": ["results"],
                                "additionalProperties": False,
                            }
                        }
                    },
                },
                **_refusals("too_many_calls"),
                "default": {
                    "description": "any other status, a timeout or a cut connection: every "
                    "call's outcome is unknown; the game server asks again, same references"
                },
            },
        }
    }


@cache
def openapi_document() -> dict[str, Any]:
    signature = dict(service_document()["components"]["securitySchemes"][SIGNATURE_SCHEME])
    signature["description"] = (
        "The game server signs every call with its own Ed25519 key (printpipe terminal keygen; "
        "the wallet trusts its public key), with the validation service's RFC 9421 profile, "
        "roles reversed: " + signature["description"]
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "printpipe operator wallet API: what the game server asks of the "
            "operator's wallet",
            "version": __version__,
            "description": "The player's money lives at the operator. The game server (printpipe "
            "play) debits the stake before it deals a unit, credits the lot after, and cancels "
            "a debit whose play was never dealt. Every call is signed (RFC 9421, Ed25519) and "
            "idempotent by its reference. Amounts are integer cents in EUR. Every refusal is "
            "RFC 9457 problem details, final; anything else leaves the outcome unknown, and "
            "the call is asked again. See docs/wallet-api.md; printpipe wallet serve is a "
            "reference implementation.",
        },
        "servers": [{"url": "/", "description": "the operator's wallet"}],
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "the wallet and its database answer (unsigned)",
                    "responses": {"200": {"description": "ok"}, "503": {"description": "not"}},
                }
            },
            "/v1/openapi.json": {
                "get": {
                    "summary": "this document (unsigned)",
                    "responses": {"200": {"description": "the document"}},
                }
            },
            "/v1/debits": _movement(
                "debit",
                "take a play's stake, before its unit is dealt",
                ("insufficient_funds", "no_such_player", "cancelled"),
            ),
            "/v1/credits": _movement(
                "credit", "give a play's lot (its debit confirmed, not cancelled)", ("no_debit",)
            ),
            "/v1/cancels": _movement(
                "cancel",
                "cancel the debit of a play that was never dealt: refund it if it was taken; "
                "if it was not, record the cancel so that the debit is refused if it arrives",
                ("already_credited",),
            ),
            BATCH_PATH: _batch(),
            "/v1/players/{player}": {
                "get": {
                    "summary": "a player's balance",
                    "security": _SIGNED,
                    "parameters": [
                        {
                            "name": "player",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "pattern": f"^{PLAYER.pattern}$"},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "the balance",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Balance"}
                                }
                            },
                        },
                        **_refusals("no_such_player"),
                    },
                }
            },
            "/v1/statements/{day}": {
                "get": {
                    "summary": "the game server's calls the wallet recorded on a day (UTC), in "
                    "order, with their totals: what reconciliation compares",
                    "security": _SIGNED,
                    "parameters": [
                        {
                            "name": "day",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "format": "date"},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "the statement",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Statement"}
                                }
                            },
                        },
                        **_refusals(),
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {SIGNATURE_SCHEME: signature},
            "schemas": {
                "Problem": service_document()["components"]["schemas"]["Problem"],
                "Debit": _call_schema("debit", "the stake"),
                "Credit": _call_schema("credit", "the lot"),
                "Cancel": _call_schema("cancel", "the debit's amount"),
                "Receipt": {
                    "type": "object",
                    "properties": {
                        "kind": {"enum": ["debit", "credit", "cancel"]},
                        "reference": {"type": "string"},
                        "player": {"type": "string"},
                        "amount_cents": {"type": "integer"},
                        "currency": {"const": CURRENCY},
                        "balance_cents": {
                            "type": "integer",
                            "minimum": 0,
                            "description": "the balance after the call",
                        },
                        "at": {
                            "type": "string",
                            "description": "when the wallet recorded it (UTC, ISO 8601)",
                        },
                        "refunded": {
                            "type": "boolean",
                            "description": "a cancel: whether "
                            "its debit had been taken and was given back",
                        },
                    },
                    "required": [
                        "kind",
                        "reference",
                        "player",
                        "amount_cents",
                        "currency",
                        "balance_cents",
                        "at",
                    ],
                },
                "Balance": {
                    "type": "object",
                    "properties": {
                        "player": {"type": "string"},
                        "balance_cents": {"type": "integer", "minimum": 0},
                        "currency": {"const": CURRENCY},
                    },
                    "required": ["player", "balance_cents", "currency"],
                },
                "Statement": {
                    "type": "object",
                    "properties": {
                        "day": {"type": "string", "format": "date"},
                        "currency": {"const": CURRENCY},
                        "entries": {
                            "type": "array",
                            "description": "each debit (with its split), credit and cancel "
                            "(its debit's amount, and whether it refunded) recorded that day",
                            "items": {"type": "object"},
                        },
                        "totals": {
                            "type": "object",
                            "description": "per kind (debits, credits, cancels) count and "
                            "amount_cents (a cancel's: what it refunded); shares: per game, "
                            "the sum of the day's debits' shares",
                        },
                    },
                    "required": ["day", "currency", "entries", "totals"],
                },
            },
        },
    }
