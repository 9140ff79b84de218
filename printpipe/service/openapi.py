"""The service's OpenAPI 3.1 document (served at ``/v1/openapi.json``), written out once here.

Written by hand rather than generated from code: the request schemas are tiny, and what
matters most to an integrator (the signature profile, Idempotency-Key, the answers' strings,
every status) is prose and headers a generator would not know.  Who each operation admits
(``x-printpipe-roles``) is not written here: ``apidoc.py`` adds it from the application's route
table, and refuses a route without an operation and an operation without a route when the
application is created.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from printpipe import __version__

SIGNATURE_SCHEME = "httpMessageSignature"
_SIGNED: list[dict[str, list[str]]] = [{SIGNATURE_SCHEME: []}]
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": True,
    "description": "8 to 64 of A-Z a-z 0-9 . _ : -; the same key and body replays the stored "
    'answer for 24 h. Covered by the signature: ("@method" "@path" "@query" "content-digest" '
    '"idempotency-key")',
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._:-]{8,64}$"},
}

_PROBLEM = {"$ref": "#/components/schemas/Problem"}
_ANSWER = {"$ref": "#/components/schemas/Answer"}
_RETRY_AFTER = {"Retry-After": {"description": "seconds", "schema": {"type": "integer"}}}
_TEXTS = {
    400: 'malformed request: the body (not UTF-8 JSON, a key twice, not {"code": ...}), a pack '
    "number, an Idempotency-Key, or malformed HTTP",
    401: "unsigned, badly signed, expired (more than 60 s of skew), replayed nonce, or a revoked "
    "or unknown terminal: nothing changed",
    403: "a terminal whose role the operation does not admit (role_refused, the role named in "
    "role: see x-printpipe-roles), or a pack not shipped to this terminal's retailer "
    "(not_your_pack; an answer: PACK OF ANOTHER RETAILER)",
    404: "no such pack, or no such path",
    405: "a method the path does not take (Allow lists those it does)",
    408: "the request's headers, or its body, did not arrive within their timeout",
    409: "a claim with this Idempotency-Key is in progress (retry after Retry-After), or a pack "
    "that cannot be activated",
    413: "a body over 16 KiB",
    422: "this Idempotency-Key was used with another request",
    429: "too many requests from this terminal (rate_limited), or a terminal throttled for wrong "
    "validation numbers (an answer: TERMINAL THROTTLED): Retry-After",
    431: "request headers over the server's limits (size or number of fields)",
    503: "the ledger's database is unavailable, an unexpected error, or the connection cap "
    "reached: retry after Retry-After",
}
_HEADERS = {
    401: {
        "WWW-Authenticate": {"schema": {"type": "string"}},
        "Accept-Signature": {
            "description": "RFC 9421 section 5.1: the signature the service asks for",
            "schema": {"type": "string"},
        },
    },
    405: {"Allow": {"schema": {"type": "string"}}},
    429: _RETRY_AFTER,
    503: _RETRY_AFTER,
}
PROTOCOL_ERRORS = (400, 405, 408, 431, 503)
"""What any request may be answered, by the HTTP layer or the guard, whatever its path."""


def _errors(*statuses: int, retried_409: bool = False) -> dict[str, Any]:
    """``retried_409``: a 409 that says when to retry (a claim in progress)."""
    headers = {**_HEADERS, 409: _RETRY_AFTER} if retried_409 else _HEADERS
    return {
        str(s): {
            "description": _TEXTS[s],
            "content": {"application/problem+json": {"schema": _PROBLEM}},
            **({"headers": headers[s]} if s in headers else {}),
        }
        for s in sorted({*statuses, *PROTOCOL_ERRORS})
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
            "docs/validation-service.md. Each operation lists the terminal roles it admits "
            "(x-printpipe-roles; anyone: unsigned); any other role is answered 403 "
            "role_refused. Every error is RFC 9457 problem details "
            "(application/problem+json); every answer carries X-Request-Id.",
        },
        "servers": [
            {
                "url": "/",
                "description": "the server this document was fetched from (printpipe serve, "
                "by default http://127.0.0.1:8787)",
            }
        ],
        "paths": {
            "/v1/health": {
                "get": {
                    "summary": "live and ready: the process answers, and the ledger's database "
                    '(503 with "ready": false when it does not; unsigned)',
                    "responses": {
                        "200": {"description": "ok"},
                        **_errors(503),
                    },
                }
            },
            "/v1/health/live": {
                "get": {
                    "summary": "the process answers, nothing asked of the database (unsigned)",
                    "responses": {"200": {"description": "live"}, **_errors()},
                }
            },
            "/v1/health/ready": {
                "get": {
                    "summary": "the process and the ledger's database answer (unsigned)",
                    "responses": {"200": {"description": "ready"}, **_errors(503)},
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics, text format, every worker's added up "
                    "(unsigned; no code, VIRN or terminal key in them)",
                    "responses": {
                        "200": {"description": "the metrics", "content": {"text/plain": {}}},
                        **_errors(),
                    },
                }
            },
            "/v1/openapi.json": {
                "get": {
                    "summary": "this document (unsigned)",
                    "responses": {"200": {"description": "the document"}, **_errors()},
                }
            },
            "/v1/validations": {
                "post": {
                    "summary": "answer a scanned code (never pays)",
                    "security": _SIGNED,
                    "requestBody": _CODE_BODY,
                    "responses": {**answered, **_errors(400, 401, 403, 413, 429, 503)},
                }
            },
            "/v1/claims": {
                "post": {
                    "summary": "pay a winning ticket, at most once (idempotent)",
                    "security": _SIGNED,
                    "parameters": [_IDEMPOTENCY_KEY],
                    "requestBody": _CODE_BODY,
                    "responses": {
                        **answered,
                        **_errors(400, 401, 403, 409, 413, 422, 429, 503, retried_409=True),
                    },
                }
            },
            "/v1/packs/{pack}": {
                "get": {
                    "summary": "a pack's state (the terminal's retailer's packs only)",
                    "security": _SIGNED,
                    "parameters": [_PACK],
                    "responses": {**pack_answer, **_errors(400, 401, 403, 404, 413, 429, 503)},
                }
            },
            "/v1/packs/{pack}/activation": {
                "post": {
                    "summary": "activate a pack on receipt (the terminal's retailer's packs only)",
                    "security": _SIGNED,
                    "parameters": [_PACK],
                    "responses": {
                        **pack_answer,
                        **_errors(400, 401, 403, 404, 409, 413, 429, 503),
                    },
                }
            },
        },
        "components": {
            "securitySchemes": {
                SIGNATURE_SCHEME: {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Signature",
                    "description": "HTTP Message Signatures (RFC 9421), Ed25519: headers "
                    "Signature-Input, Signature and Content-Digest (RFC 9530, sha-256 alone, "
                    "also for an empty body). Signature-Input: "
                    'sig1=("@method" "@path" "@query" "content-digest" ["idempotency-key"])'
                    ';created=UNIX;keyid="<JWK thumbprint of the terminal key>";alg="ed25519";'
                    'nonce="<16-64 chars>". "idempotency-key" is covered when the request '
                    "carries one (claims). created within 60 s of the server's clock; a nonce "
                    "is accepted once. OpenAPI has no scheme type for request signatures: this "
                    "apiKey names the header, the profile is docs/validation-service.md.",
                }
            },
            "schemas": {
                "Problem": {
                    "type": "object",
                    "description": "RFC 9457 problem details",
                    "properties": {
                        "type": {"type": "string", "format": "uri"},
                        "title": {"type": "string"},
                        "status": {"type": "integer"},
                        "detail": {"type": "string"},
                        "error": {"type": "string", "description": "the type's last part"},
                        "request_id": {"type": "string"},
                    },
                    "required": ["type", "title", "status", "detail", "error"],
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
            },
        },
    }
