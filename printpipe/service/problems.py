"""The service's one error shape: RFC 9457 problem details (``application/problem+json``).

Every answer that is not 2xx is one of these, whoever writes it: the application (a refused
request, an answer about a code that is refused, 403 or 429), its outermost guard (an
unexpected error or a database outage: 503 with ``Retry-After``) and the HTTP protocol layer
(``protocol.py``: malformed HTTP 400, a header-read timeout 408, headers too large 431, the
connection cap 503), which writes the bytes itself.  One line of JSON::

    {"detail": "...", "error": "unauthorized", "status": 401, "title": "Unauthorized",
     "type": "urn:printpipe:problem:unauthorized", "request_id": "..."}

``type`` names the kind of problem (a URN: stable, not a page to fetch), ``error`` is the same
kind, short, for clients that switch on it, ``detail`` is the one line a person reads; an answer
about a code adds its own fields (``outcome``, ``text``, ``until``...).  ``request_id`` is the
request's id, also sent as ``X-Request-Id`` on every answer (``app.py``).
"""

from __future__ import annotations

import contextvars
import http
import json
from typing import Any

PROBLEM_JSON = "application/problem+json"
TYPE_PREFIX = "urn:printpipe:problem:"
REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
"""The id of the request being answered (set by the application's guard)."""


def title_of(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem(status: int, kind: str, detail: str, **extra: Any) -> dict[str, Any]:
    """The problem details of one refusal (``extra``: extension members)."""
    body: dict[str, Any] = {
        **extra,
        "type": TYPE_PREFIX + kind,
        "title": title_of(status),
        "status": status,
        "detail": " ".join(detail.split())[:300],
        "error": kind,
    }
    request_id = REQUEST_ID.get()
    if request_id is not None:
        body["request_id"] = request_id
    return body


def problem_bytes(status: int, kind: str, detail: str, **extra: Any) -> bytes:
    return json_line(problem(status, kind, detail, **extra))


def json_line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def raw_response(
    status: int, kind: str, detail: str, headers: dict[str, str] | None = None
) -> bytes:
    """A whole HTTP/1.1 response with a problem, closing the connection: for the protocol
    layer, which answers before (or instead of) the application."""
    body = problem_bytes(status, kind, detail)
    lines = [f"HTTP/1.1 {status} {title_of(status)}", f"content-type: {PROBLEM_JSON}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines += [f"content-length: {len(body)}", "connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body
