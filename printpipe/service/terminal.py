"""The reference terminal client: what a retailer's terminal does over the network.

::

    from printpipe.service.terminal import TerminalClient, load_terminal_key

    with TerminalClient("http://127.0.0.1:8250", key=load_terminal_key(Path("till.key"))) as till:
        print(till.validate(code).text)   # WIN 10
        print(till.claim(code).text)      # PAID 10

Every request is signed (``printpipe.service.signatures``: RFC 9421, Ed25519, a new nonce and
``created`` each attempt).  A claim carries one Idempotency-Key for all its attempts: when the
answer is lost (timeout, connection reset, the server restarting) the client sends the same
claim again and gets the stored answer, ``PAID`` again, never a second payment.  It retries on
connection failures, timeouts, 409 (in progress), 429 from the per-terminal rate limit (not a
terminal throttled for wrong VIRNs) and 503 (the database down, an unexpected error), waiting a
little longer each time (or what Retry-After says), up to ``attempts``.  A validation is
retried only when it cannot have reached the ledger (connection refused), on the rate limit
or on 503: a wrong VIRN is counted once.  Errors are RFC 9457 problem details; ``text`` is
an answer's string or a problem's ``detail``.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.errors import PrintpipeError
from printpipe.service.signatures import RequestSigner, load_terminal_key

__all__ = ["ServiceAnswer", "TerminalClient", "load_terminal_key"]

RETRY_STATUSES = (409, 429, 503)


@dataclass(frozen=True)
class ServiceAnswer:
    """The service's answer: HTTP ``status`` and its JSON ``data``; ``text`` is the spec's
    string (or the error's message)."""

    status: int
    data: dict[str, Any] = field(default_factory=dict)
    replayed: bool = False

    @property
    def text(self) -> str:
        return str(self.data.get("text") or self.data.get("detail") or f"HTTP {self.status}")

    @property
    def outcome(self) -> str | None:
        outcome = self.data.get("outcome")
        return outcome if isinstance(outcome, str) else None

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.data.get("ok", True))

    @property
    def is_answer(self) -> bool:
        """An answer about a code (200, 403 or 429), not a refused request."""
        return "text" in self.data


class TerminalClient:
    """A terminal's connection to the validation service (keyword-only options)."""

    def __init__(
        self,
        server: str,
        *,
        key: Ed25519PrivateKey,
        timeout: float = 10.0,
        attempts: int = 6,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.signer = RequestSigner(key)
        self.attempts = attempts
        self._http = httpx.Client(base_url=self.server, timeout=timeout, transport=transport)

    def __enter__(self) -> TerminalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def key_id(self) -> str:
        return self.signer.key_id

    def validate(self, code: str) -> ServiceAnswer:
        """Ask what a scanned code is worth; never pays."""
        body = json.dumps({"code": code}).encode()
        return self._send("POST", "/v1/validations", body, idempotent=False)

    def claim(self, code: str, *, idempotency_key: str | None = None) -> ServiceAnswer:
        """Pay the ticket; retried with one Idempotency-Key (new, unless given) until answered."""
        body = json.dumps({"code": code}).encode()
        key = idempotency_key or uuid.uuid4().hex
        return self._send("POST", "/v1/claims", body, idempotent=True, idempotency_key=key)

    def pack_state(self, pack: str) -> ServiceAnswer:
        return self._send("GET", f"/v1/packs/{pack}", b"", idempotent=True)

    def activate(self, pack: str) -> ServiceAnswer:
        """Activate a pack received from the lottery (activating twice changes nothing)."""
        return self._send("POST", f"/v1/packs/{pack}/activation", b"", idempotent=True)

    def health(self) -> ServiceAnswer:
        response = self._http.get("/v1/health")
        return ServiceAnswer(response.status_code, _json(response))

    def _send(
        self,
        method: str,
        path: str,
        body: bytes,
        *,
        idempotent: bool,
        idempotency_key: str | None = None,
    ) -> ServiceAnswer:
        delay = 0.2
        failure = "no attempt"
        for attempt in range(self.attempts):
            if attempt:
                time.sleep(delay)
                delay = min(delay * 2, 3.0)
            fields = {"Idempotency-Key": idempotency_key} if idempotency_key is not None else {}
            headers = self.signer.headers(method, self.server + path, body, fields=fields)
            headers["Content-Type"] = "application/json"
            try:
                response = self._http.request(method, path, content=body, headers=headers)
            except httpx.ConnectError as exc:
                failure = f"cannot reach {self.server}: {exc}"
                continue
            except httpx.TransportError as exc:  # sent, answer lost: only safe to resend
                failure = f"{self.server}: {type(exc).__name__}: {exc}"
                if idempotent:
                    continue
                raise PrintpipeError(f"{failure} (the validation may have been counted)") from None
            if response.status_code in RETRY_STATUSES and _retryable(response):
                failure = f"{self.server}: HTTP {response.status_code}"
                wait = response.headers.get("retry-after", "")
                if wait.isdigit():
                    delay = min(float(wait), 15.0)
                continue
            return ServiceAnswer(
                response.status_code,
                _json(response),
                replayed=response.headers.get("idempotent-replayed") == "true",
            )
        raise PrintpipeError(f"no answer after {self.attempts} attempts: {failure}")


def _retryable(response: httpx.Response) -> bool:
    """503; 409 for a claim still in progress (not a pack that cannot be activated); 429 from
    the rate limit (not TERMINAL THROTTLED, an answer)."""
    return response.status_code == 503 or _json(response).get("error") in (
        "in_progress",
        "rate_limited",
    )


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {"detail": f"HTTP {response.status_code}: not JSON"}
    return data if isinstance(data, dict) else {"detail": f"HTTP {response.status_code}"}


def open_client(server: str, key_file: Path) -> TerminalClient:
    return TerminalClient(server, key=load_terminal_key(key_file))
