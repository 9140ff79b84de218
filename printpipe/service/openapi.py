"""The service's OpenAPI 3.1 document (served at ``/v1/openapi.json``), written out once here.

Written by hand rather than generated from code: the request schemas are tiny, and what
matters most to an integrator (the signature profile, Idempotency-Key, the answers' strings,
every status) is prose and headers a generator would not know.  ``tests/test_service.py``
checks that every route of the application is described and every described route exists.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from printpipe import __version__

_SIGNATURE_HEADERS = [
    {
        "name": "Signature-Input",
        "in": "header",
        "required": True,
        "description": 'RFC 9421: sig1=("@method" "@path" "content-digest");created=UNIX;'
        'keyid="<JWK thumbprint>";alg="ed25519";nonce="<16-64 chars>"',
        "schema": {"type": "string"},
    },
    {
        "name": "Signature",
        "in": "header",
        "required": True,
        "description": "RFC 9421: sig1=:<base64 Ed25519 signature>:",
        "schema": {"type": "string"},
    },
    {
        "name": "Content-Digest",
        "in": "header",
        "required": True,
        "description": "RFC 9530: sha-256=:<base64 SHA-256 of the body>: (also for an empty body)",
        "schema": {"type": "string"},
    },
]

_ERROR = {"$ref": "#/components/schemas/Error"}
_ANSWER = {"$ref": "#/components/schemas/Answer"}


def _errors(*statuses: int) -> dict[str, Any]:
    texts = {
        400: "malformed request (body, pack number, Idempotency-Key)",
        401: "unsigned, badly signed, expired (more than 60 s of skew), replayed nonce, or a "
        "revoked or unknown terminal: nothing changed",
        403: "a pack not shipped to this terminal's retailer",
        404: "no such pack, or no such path",
        409: "a claim with this Idempotency-Key is in progress (retry after Retry-After), or "
        "a pack that cannot be activated",
        413: "a body over 16 KiB",
        422: "this Idempotency-Key was used with another request",
        429: "the terminal is throttled (too many wrong validation numbers): Retry-After",
        503: "the ledger's database is unavailable: retry",
    }
    return {
        str(s): {"description": texts[s], "content": {"application/json": {"schema": _ERROR}}}
        for s in statuses
    }


_CODE_BODY = {
    "required": True,
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "code": {
                        "type": "string",
                        "description": "as scanned: the validation code (25 digits, or "
                        "GGGG-PPPPPP-TTT VVVVVVVVVV KK), or the inventory code or serial",
                    }
                },
                "required": ["code"],
                "additionalProperties": False,
            }
        }
    },
}

_PACK = {
    "name": "pack",
    "in": "path",
    "required": True,
    "description": "PPPPPP or GGGG-PPPPPP",
    "schema": {"type": "string"},
}


@cache
def openapi_document() -> dict[str, Any]:
    answered = {
        "200": {
            "description": "the answer (text: the spec's string)",
            "content": {"application/json": {"schema": _ANSWER}},
        }
    }
    pack_answer = {
        "200": {
            "description": "the pack's state",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pack"}}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "printpipe validation service",
            "version": __version__,
            "description": "Retailer terminals validate and claim instant tickets. Every "
            "request but health and this document is signed (RFC 9421, Ed25519): see "
            "docs/validation-service.md.",
        },
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "liveness and the ledger's database (unsigned)",
                    "responses": {
                        "200": {"description": "ok"},
                        **_errors(503),
                    },
                }
            },
            "/v1/openapi.json": {
                "get": {
                    "summary": "this document (unsigned)",
                    "responses": {"200": {"description": "the document"}},
                }
            },
            "/v1/validations": {
                "post": {
                    "summary": "answer a scanned code (never pays)",
                    "parameters": _SIGNATURE_HEADERS,
                    "requestBody": _CODE_BODY,
                    "responses": {**answered, **_errors(400, 401, 403, 413, 429, 503)},
                }
            },
            "/v1/claims": {
                "post": {
                    "summary": "pay a winning ticket, at most once (idempotent)",
                    "parameters": [
                        *_SIGNATURE_HEADERS,
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": True,
                            "description": "8 to 64 of A-Z a-z 0-9 . _ : -; the same key and "
                            "body replays the stored answer for 24 h",
                            "schema": {"type": "string"},
                        },
                    ],
                    "requestBody": _CODE_BODY,
                    "responses": {
                        **answered,
                        **_errors(400, 401, 403, 409, 413, 422, 429, 503),
                    },
                }
            },
            "/v1/packs/{pack}": {
                "get": {
                    "summary": "a pack's state (the terminal's retailer's packs only)",
                    "parameters": [_PACK, *_SIGNATURE_HEADERS],
                    "responses": {**pack_answer, **_errors(400, 401, 403, 404, 503)},
                }
            },
            "/v1/packs/{pack}/activation": {
                "post": {
                    "summary": "activate a pack on receipt (the terminal's retailer's packs only)",
                    "parameters": [_PACK, *_SIGNATURE_HEADERS],
                    "responses": {**pack_answer, **_errors(400, 401, 403, 404, 409, 503)},
                }
            },
        },
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {"error": {"type": "string"}, "message": {"type": "string"}},
                    "required": ["error", "message"],
                },
                "Answer": {
                    "type": "object",
                    "properties": {
                        "outcome": {"type": "string"},
                        "text": {"type": "string"},
                        "ok": {"type": "boolean"},
                        "serial": {"type": "string"},
                        "amount_eur": {"type": "integer"},
                        "pack_state": {"type": "string"},
                        "paid_at": {"type": "string"},
                        "terminal": {"type": "string"},
                        "until": {"type": "string"},
                        "proof": {
                            "type": "object",
                            "description": "A PAID ticket's inclusion proof "
                            "(printpipe-inclusion-proof/1, docs/commitment.md): its serial, "
                            "prize, VIRN and salt and the hashes up to the block's committed "
                            "root; the winner's receipt, checked offline with "
                            "`printpipe verify-proof`. Present once the ledger holds the "
                            "block's commitment.",
                        },
                    },
                    "required": ["outcome", "text", "ok"],
                },
                "Pack": {
                    "type": "object",
                    "properties": {
                        "pack": {"type": "string"},
                        "state": {"type": "string"},
                        "text": {"type": "string"},
                    },
                    "required": ["pack", "state", "text"],
                },
            }
        },
    }
