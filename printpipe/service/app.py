"""The validation service's ASGI application: ``/v1`` JSON API for terminals.

Every request but ``/v1/health`` and ``/v1/openapi.json`` is signed by a registered terminal
(``signatures.py``); its answers are the ledger's, from the same pure ``decide`` as the command
line (``printpipe.ledger``).  What a request may do follows from the terminal's
registration, never from what it sends: each route names the roles it admits (:data:`ROUTES`,
``access.py``: ``retailer`` and ``office``; a ``platform`` terminal reaches nothing here, 403),
a retailer's terminal acts only on the packs shipped to its retailer, and only an ``office``
terminal acts on every pack and pays above the retailer limit (its
:class:`~printpipe.ledger.PackScope`).

Every error is one line of RFC 9457 problem details (``problems.py``), with a 4xx status, or
503 and ``Retry-After`` when the database is unreachable or anything unexpected happens:
nothing a client sends makes a 500 or a traceback in the log.  Every answer carries the
request's id (``X-Request-Id``).  A terminal's requests are rate-limited (a token bucket per
terminal and worker, after its signature is verified: 429 and ``Retry-After``), so that no
terminal fills the log however fast it sends.
The ledger's calls run in a thread pool (one thread on SQLite, whose writer is single anyway;
one per pooled connection on PostgreSQL), so the event loop only parses, verifies signatures
and answers.  The contract: ``docs/validation-service.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import itertools
import json
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from starlette.datastructures import State
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from printpipe import __version__
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.ledger import (
    SEAL_DELAY_S,
    WITNESS_INTERVAL_S,
    Admission,
    Answer,
    Batcher,
    Claim,
    ClaimStart,
    ForeignPack,
    Ledger,
    NoSuchPack,
    PackScope,
    RequestRefused,
    Terminal,
    TerminalId,
    Validation,
    audit_text,
    database_errors,
    parse_pack_ref,
    parse_time,
    write_witness,
)
from printpipe.service import metrics
from printpipe.service.access import PUBLIC, Access, signed_by
from printpipe.service.apidoc import ApiDocument
from printpipe.service.openapi import openapi_document
from printpipe.service.problems import PROBLEM_JSON, REQUEST_ID, json_line, problem_bytes
from printpipe.service.signatures import (
    Unauthorized,
    Verified,
    accept_signature,
    key_id_claimed,
    public_key_from_raw,
    verify_request,
)

log = logging.getLogger("printpipe.service")
T = TypeVar("T")

MAX_BODY_BYTES = 16 * 1024
"""A request's body: a few dozen bytes in practice; anything past this is refused (413)."""
IDEMPOTENCY_KEY = re.compile(r"[A-Za-z0-9._:-]{8,64}")
MAINTENANCE_S = 5.0
"""How often settings are re-read and expired nonces and claim keys purged."""
JSON = "application/json"


_json_line = json_line
REQUEST_ID_HEADER = "x-request-id"
WWW_AUTHENTICATE = 'Signature realm="printpipe", profile="docs/validation-service.md"'
"""RFC 9421 defines no authentication scheme; this names the one the service accepts."""


@dataclass(frozen=True)
class RateLimit:
    """Each terminal's requests: ``rate`` a second, in bursts of at most ``burst``."""

    rate: float = 20.0
    burst: int = 40


def error_response(
    status: int,
    kind: str,
    message: str,
    headers: dict[str, str] | None = None,
    **extra: str,
) -> Response:
    """A problem (``extra``: its extension members, e.g. the ``role`` refused)."""
    body = problem_bytes(status, kind, message, **extra)
    return Response(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


class Refusal(Exception):
    """A request refused with a status, a kind and one line (audited when it was signed)."""

    def __init__(
        self,
        status: int,
        kind: str,
        message: str,
        headers: dict[str, str] | None = None,
        **extra: str,
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers
        self.extra = extra

    def response(self) -> Response:
        return error_response(self.status, self.kind, self.message, self.headers, **self.extra)


def request_headers(request: Request) -> list[tuple[str, str]]:
    """A request's header fields as text, in the order received (RFC 9421 signs them so)."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.scope["headers"]]


def verify_signed(
    request: Request,
    body: bytes,
    *,
    headers: list[tuple[str, str]],
    public_key: Callable[[str], Ed25519PublicKey | None],
    idempotent: bool,
) -> Verified:
    """The request's RFC 9421 signature verified against ``public_key`` (the path as sent, not
    as decoded), or a 401 Refusal saying what a request must carry."""
    path = request.scope.get("raw_path") or request.url.path.encode()
    try:
        return verify_request(
            method=request.method,
            path=path.decode("latin-1"),
            query=request.scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=body,
            public_key=public_key,
        )
    except Unauthorized as exc:
        raise Refusal(
            401, "unauthorized", str(exc), unauthorized_headers(idempotent=idempotent)
        ) from None


def role_refusal(role: str, access: Access) -> Refusal:
    """A signed request of a terminal whose role the route does not admit: 403, the role named."""
    return Refusal(403, "role_refused", access.refusal(role), role=role)


def unauthorized_headers(*, idempotent: bool) -> dict[str, str]:
    """What a 401 says a request must carry (RFC 9110 section 11.6.1, RFC 9421 section 5.1)."""
    return {
        "WWW-Authenticate": WWW_AUTHENTICATE,
        "Accept-Signature": accept_signature(idempotency_key=idempotent),
    }


_REFUSED_ANSWERS = {"TERMINAL_THROTTLED": (429, "terminal_throttled"),
                    "NOT_YOUR_PACK": (403, "not_your_pack")}  # fmt: skip


def render_answer(answer: Answer) -> tuple[int, str]:
    """What a claim stores under its Idempotency-Key, and every answer returns: the answer's
    JSON, or, for an answer that refuses (403, 429), a problem carrying the answer's fields."""
    refused = _REFUSED_ANSWERS.get(answer.outcome)
    if refused is None:
        return 200, _json_line(answer.as_json()).decode()
    status, kind = refused
    data = answer.as_json()
    body = {**data, "type": "urn:printpipe:problem:" + kind, "status": status,
            "title": "Too Many Requests" if status == 429 else "Forbidden",
            "detail": answer.text, "error": kind}  # fmt: skip
    return status, _json_line(body).decode()


def _retry_after(body: dict[str, Any]) -> dict[str, str]:
    until = body.get("until")
    if not isinstance(until, str):
        return {}
    seconds = int((parse_time(until) - datetime.now(UTC)).total_seconds())
    return {"Retry-After": str(max(1, seconds))}


def answer_response(status: int, body: str, *, replayed: bool = False) -> Response:
    headers = _retry_after(json.loads(body)) if status == 429 else {}
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    media_type = JSON if status < 300 else PROBLEM_JSON
    return Response(body.encode(), status_code=status, media_type=media_type, headers=headers)


@dataclass
class Caller:
    """The terminal that signed a request, and the request's nonce to admit."""

    terminal: Terminal
    admission: Admission

    @property
    def id(self) -> TerminalId:
        return TerminalId(self.terminal.id)

    @property
    def scope(self) -> PackScope:
        """The packs it acts on: its retailer's, or every pack for the office's terminal."""
        return self.terminal.pack_scope()


class Service:
    """The application's state: the ledger, its thread pool, the terminals' keys."""

    def __init__(
        self, ledger: Ledger, *, threads: int, rate_limit: RateLimit, witness: Path | None = None
    ) -> None:
        self.ledger = ledger
        self.witness = witness
        """Where the ledger's witness is kept (``printpipe.ledger.witness``), if anywhere."""
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ledger")
        self._keys: dict[str, tuple[Ed25519PublicKey, Terminal]] = {}
        self.rate_limit = rate_limit
        self._buckets: dict[str, tuple[float, float]] = {}
        """Per terminal key: its tokens, and when they were counted (monotonic seconds)."""
        self.validations: Batcher[Validation, Answer] = Batcher(
            metrics.batched("validations", ledger.validate_many), self.executor
        )
        self.claims: Batcher[Claim, Answer | ClaimStart] = Batcher(
            metrics.batched("claims", ledger.claim_many), self.executor
        )

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """A server's lifetime over the ledger: its maintenance and its log's sealer run
        meanwhile; then they stop, the ledger's threads end and the ledger is closed (sealing
        what is left).  Stopped while its database is down, it says so in one line: what it
        logged and could not seal is sealed by the next keyed process, as after a kill."""
        tasks = [asyncio.create_task(self.maintain()), asyncio.create_task(self.seal())]
        if self.witness is not None:
            tasks.append(asyncio.create_task(self.keep_witness()))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            self.executor.shutdown(wait=True)
            try:
                try:
                    self.write_witness()
                finally:
                    self.ledger.close()
            except database_errors() as exc:
                log.warning(
                    "stopped with the ledger's database unavailable (%s): what was logged since "
                    "the last seal is sealed by the next process that opens it with its key",
                    " ".join(str(exc).split())[:200],
                )
            finally:
                metrics.worker_stopped()

    async def run(self, function: Callable[..., T], /, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(function, **kwargs))

    async def maintain(self) -> None:
        gc.collect()
        gc.freeze()  # what start-up made is never collected: shorter collections later
        while True:
            await asyncio.sleep(MAINTENANCE_S)
            with contextlib.suppress(Exception):  # a database restarting: try again later
                await self.run(self.ledger.reload_settings)
                await self.run(self.ledger.purge_expired)
                loop = asyncio.get_running_loop()  # not the ledger's thread: it goes on
                await loop.run_in_executor(None, self.ledger.db.checkpoint_wal)
                metrics.sample_pool(getattr(self.ledger.db, "pool", None))

    async def seal(self) -> None:
        """Chain what was logged, every :data:`SEAL_DELAY_S` (``printpipe.ledger.log``)."""
        sealed_at = time.monotonic()
        while True:
            await asyncio.sleep(SEAL_DELAY_S)
            try:
                sealed = await self.run(self.ledger.seal)
            except Exception as exc:  # a database restarting: the next round seals it
                log.warning("sealing the log failed: %s", " ".join(str(exc).split())[:200])
            else:
                sealed_at = time.monotonic()
                if sealed:
                    metrics.SEALED.inc(sealed)
            metrics.SEAL_LAG.set(time.monotonic() - sealed_at)

    async def keep_witness(self) -> None:
        """Keep the witness of the log's head, every :data:`WITNESS_INTERVAL_S`."""
        while True:
            await asyncio.sleep(WITNESS_INTERVAL_S)
            await self.run(self.write_witness)

    def write_witness(self) -> None:
        """Seal and keep the head in the witness folder; a rewind found is logged, one line."""
        if self.witness is None:
            return
        try:
            problem = write_witness(self.ledger, self.witness)
        except Exception as exc:  # a database restarting: the next round keeps it
            log.warning("keeping the witness failed: %s", " ".join(str(exc).split())[:200])
            return
        if problem is not None:
            log.error("witness %s: %s", self.witness, problem)

    # -- authentication ----------------------------------------------------------------------

    async def caller(self, request: Request, body: bytes) -> Caller:
        headers = request_headers(request)
        claimed = key_id_claimed(headers)
        if claimed is not None and claimed not in self._keys:
            await self._load_key(claimed)

        def public_key(key_id: str) -> Ed25519PublicKey | None:
            known = self._keys.get(key_id)
            return known[0] if known else None

        verified = verify_signed(
            request, body, headers=headers, public_key=public_key,
            idempotent=request.url.path == "/v1/claims",
        )  # fmt: skip
        self.spend(verified.key_id)
        terminal = self._keys[verified.key_id][1]
        admission = Admission(
            verified.key_id, verified.nonce, verified.created, request=REQUEST_ID.get()
        )
        return Caller(terminal, admission)

    def spend(self, key_id: str) -> None:
        """Take one of the terminal's tokens, or refuse the request (429, nothing written)."""
        limit = self.rate_limit
        now = time.monotonic()
        tokens, then = self._buckets.get(key_id, (float(limit.burst), now))
        tokens = min(float(limit.burst), tokens + (now - then) * limit.rate)
        if tokens < 1.0:
            self._buckets[key_id] = (tokens, now)
            wait = math.ceil((1.0 - tokens) / limit.rate)
            raise Refusal(
                429,
                "rate_limited",
                f"more than {limit.rate:g} requests a second from this terminal: retry later",
                {"Retry-After": str(max(1, wait))},
            )
        self._buckets[key_id] = (tokens - 1.0, now)

    async def _load_key(self, key_id: str) -> None:
        if len(key_id) > 128:
            return
        terminal = await self.run(self.ledger.terminal_by_key_id, key_id=key_id)
        if terminal is not None and terminal.revoked_at is None:
            self._keys[key_id] = (public_key_from_raw(terminal.public_key), terminal)

    def forget(self, key_id: str) -> None:
        self._keys.pop(key_id, None)

    async def refuse(self, caller: Caller, action: str, given: str, refusal: Refusal) -> Response:
        """Audit a signed request refused before anything was looked up, and answer it."""
        try:
            await self.run(
                self.ledger.record_refusal,
                action=action,
                terminal_text=caller.terminal.id,
                given=given,
                reason=f"{refusal.status} {refusal.message}",
                admission=caller.admission,
            )
        except RequestRefused as exc:
            return self.unauthorized(caller, exc)
        return refusal.response()

    def unauthorized(self, caller: Caller, exc: RequestRefused) -> Response:
        self.forget(caller.admission.key_id)
        return error_response(401, "unauthorized", str(exc), unauthorized_headers(idempotent=False))


async def read_body(request: Request, *, most: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, at most ``most`` bytes (413); a body cut short by the client is
    refused (400) with nothing written nor logged: the request was never authenticated."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > most):
        raise Refusal(413, "too_large", f"a request body is at most {most} bytes")
    try:
        if declared is not None:  # bounded by the check above
            return await request.body()
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > most:
                raise Refusal(413, "too_large", f"a request body is at most {most} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise Refusal(400, "bad_request", "the body was cut short") from None
    return b"".join(chunks)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise Refusal(400, "bad_request", "the body's JSON has a key twice")
    return data


_STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_keys)


def json_body(body: bytes, shape: str) -> Any:
    """A request's JSON body, parsed strictly, or a 400 Refusal naming the ``shape`` expected:
    UTF-8 only (RFC 8259 section 8.1: no BOM, no UTF-16), no key twice, no string that is not
    Unicode text (a lone surrogate escaped as ``\\ud800``), not nested past Python's
    recursion.  The one parser of both servers' bodies."""
    try:
        text = body.decode("utf-8")
        data = _STRICT_JSON.decode(text)
        if "\\u" in text:  # only an escape can make a lone surrogate: rare, then checked
            json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):  # UnicodeError and JSONDecodeError included
        raise Refusal(400, "bad_request", f"the body must be UTF-8 JSON: {shape}") from None
    return data


def code_of(body: bytes) -> str:
    """The ``code`` of a body ``{"code": "..."}`` (nothing else), or a 400 Refusal
    (:func:`json_body`)."""
    data = json_body(body, '{"code": "..."}')
    if not isinstance(data, dict) or set(data) != {"code"} or not isinstance(data["code"], str):
        raise Refusal(400, "bad_request", 'the body must be {"code": "<scanned code>"}')
    return str(data["code"])


def empty_body(body: bytes) -> None:
    if body.strip() not in (b"", b"{}"):
        raise Refusal(400, "bad_request", "this request takes no body (or {})")


Handler = Callable[[Service, Request, bytes, Caller], Awaitable[Response]]


def signed(action: str) -> Callable[[Handler], Callable[[Request], Awaitable[Response]]]:
    """An endpoint for signed requests: body read and bounded, signature verified (401), the
    terminal's role checked against the route's :class:`~printpipe.service.access.Access`
    (403), then ``handler``; a refusal after authentication is audited (its nonce admitted)."""

    def wrap(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            service: Service = request.app.state.service
            access: Access = request.scope["route"].access
            try:
                body = await read_body(request)
                caller = await service.caller(request, body)
            except Refusal as refusal:
                return refusal.response()  # not authenticated: nothing is written
            try:
                if not access.admits(caller.terminal.role):
                    raise role_refusal(caller.terminal.role, access)
                return await handler(service, request, body, caller)
            except Refusal as refusal:
                given = audit_text(body.decode("utf-8", "replace"), limit=120)
                return await service.refuse(caller, action, given, refusal)
            except RequestRefused as exc:
                return service.unauthorized(caller, exc)

        return endpoint

    return wrap


@signed("validate")
async def validations(service: Service, request: Request, body: bytes, caller: Caller) -> Response:
    code = code_of(body)
    answer = await service.validations.ask(
        Validation(code, caller.id, caller.scope, caller.admission)
    )
    return answer_response(*render_answer(answer))


@signed("claim")
async def claims(service: Service, request: Request, body: bytes, caller: Caller) -> Response:
    key = request.headers.get("idempotency-key")
    if key is None or IDEMPOTENCY_KEY.fullmatch(key) is None:
        raise Refusal(
            400, "bad_request", "a claim needs an Idempotency-Key of 8 to 64 of A-Z a-z 0-9 . _ : -"
        )
    code = code_of(body)
    claim = Claim(
        code,
        caller.id,
        key,
        service.ledger.request_fingerprint("POST", request.url.path, body),
        render_answer,
        caller.scope,
        admission=caller.admission,
    )
    outcome = await service.claims.ask(claim)
    if isinstance(outcome, Answer):
        return answer_response(*render_answer(outcome))
    if outcome.outcome == "replay":
        assert outcome.status is not None and outcome.response is not None
        return answer_response(outcome.status, outcome.response, replayed=True)
    if outcome.outcome == "mismatch":
        return error_response(
            422, "idempotency_key_reused", "this Idempotency-Key was used for another request"
        )
    return error_response(
        409,
        "in_progress",
        "a claim with this Idempotency-Key is still being processed: retry",
        {"Retry-After": str(max(1, outcome.retry_after))},
    )


def _pack_ref(request: Request) -> Any:
    try:
        return parse_pack_ref(request.path_params["pack"])
    except InvalidInput as exc:
        raise Refusal(400, "bad_request", str(exc)) from None


@signed("pack")
async def pack_state(service: Service, request: Request, body: bytes, caller: Caller) -> Response:
    empty_body(body)
    ref = _pack_ref(request)
    try:
        label, state = await service.run(
            service.ledger.pack_state,
            given=ref,
            scope=caller.scope,
            admission=caller.admission,
        )
    except ForeignPack as exc:
        raise Refusal(403, "not_your_pack", str(exc)) from None
    except NoSuchPack as exc:
        raise Refusal(404, "no_such_pack", str(exc)) from None
    text = f"PACK {state.upper()}"
    return Response(_json_line({"pack": label, "state": state, "text": text}), media_type=JSON)


@signed("activate")
async def activation(service: Service, request: Request, body: bytes, caller: Caller) -> Response:
    empty_body(body)
    ref = _pack_ref(request)
    try:
        lines = await service.run(
            service.ledger.set_pack_state,
            packs=[ref],
            state="activated",
            terminal=caller.id,
            scope=caller.scope,
            admission=caller.admission,
        )
    except ForeignPack as exc:
        raise Refusal(403, "not_your_pack", str(exc)) from None
    except NoSuchPack as exc:
        raise Refusal(404, "no_such_pack", str(exc)) from None
    except RequestRefused:
        raise
    except PrintpipeError as exc:  # e.g. a settled pack
        raise Refusal(409, "pack_state", str(exc)) from None
    label = lines[0].split(":")[0].removeprefix("pack ")
    return Response(
        _json_line({"pack": label, "state": "activated", "text": lines[0]}), media_type=JSON
    )


async def health_answer(service: Service, part: str = "") -> Response:
    """``/v1/health`` and its parts, live and ready apart: ``live``, the process answers
    (always, nothing asked of the database); ``ready``, its database answers too (else 503,
    ``"ready": false``).  ``part``: ``live``, ``ready``, or both."""
    shown: dict[str, Any] = {"live": True}
    if part != "live":
        try:
            await service.run(service.ledger.query, sql="SELECT 1")
        except Exception as exc:
            log.warning(
                "health: the database does not answer: %s", " ".join(str(exc).split())[:200]
            )
            body = problem_bytes(503, "unavailable", "the database does not answer", live=True,
                                 ready=False)  # fmt: skip
            return Response(body, status_code=503, media_type=PROBLEM_JSON,
                            headers={"Retry-After": "1"})  # fmt: skip
        shown["ready"] = True
    details = {"database": service.ledger.db.dialect, "version": __version__}
    status = {"status": "ok"} if part == "" else {}
    return Response(_json_line({**status, **shown, **details}), media_type=JSON)


async def health(request: Request) -> Response:
    return await health_answer(request.app.state.service)


async def health_live(request: Request) -> Response:
    return await health_answer(request.app.state.service, "live")


async def health_ready(request: Request) -> Response:
    return await health_answer(request.app.state.service, "ready")


async def metrics_page(request: Request) -> Response:
    """``/metrics``: the Prometheus metrics (``printpipe.service.metrics``), unsigned."""
    body, media_type = metrics.exposition()
    return Response(body, media_type=media_type, headers={"Cache-Control": "no-store"})


async def openapi(request: Request) -> Response:
    return Response(_json_line(api_document()), media_type=JSON)


def _unavailable(exc: BaseException) -> Response:
    """503 and Retry-After for what the service cannot answer now: the database is down, or
    something unexpected (one line in the log, never a traceback)."""
    if isinstance(exc, database_errors()):
        log.warning("database error: %s", " ".join(str(exc).split())[:300])
        text = "the ledger's database is unavailable: retry"
    else:
        log.error("unexpected %s: %s", type(exc).__name__, " ".join(str(exc).split())[:300])
        text = "the service failed to answer: retry"
    return error_response(503, "unavailable", text, {"Retry-After": "1"})


def request_ids() -> Iterator[str]:
    """Request ids, unique across processes and restarts: 16 random hexadecimal digits a
    process, then a count (32 digits in all; a request id names a request, it guards nothing)."""
    prefix = secrets.token_hex(8)
    return (f"{prefix}{n:016x}" for n in itertools.count(1))


class Guard:
    """The outermost layer: every answer gets the request's id (``X-Request-Id``), and nothing
    escapes as a 500 or a traceback: an exception raised before the answer started is
    answered by :func:`_unavailable` (503)."""

    def __init__(self, app: ASGIApp, *, observed: metrics.HttpMetrics | None = None) -> None:
        self.app = app
        self._ids = request_ids()
        self.observed = observed
        """Where each answer is counted and timed (by its route's template, ``scope["route"]``
        as the router set it: never the path itself)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = next(self._ids)
        REQUEST_ID.set(request_id)
        scope.setdefault("state", {})["request_id"] = request_id
        started = False
        status = 0
        tag = (REQUEST_ID_HEADER.encode(), request_id.encode())
        arrived = time.perf_counter()

        async def tagged_send(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started, status = True, message["status"]
                message = {**message, "headers": [*message.get("headers", []), tag]}
            await send(message)

        try:
            await self.app(scope, receive, tagged_send)
        except Exception as exc:
            if not started:
                await _unavailable(exc)(scope, receive, tagged_send)
        finally:
            if self.observed is not None and status:
                route = getattr(scope.get("route"), "path", "unmatched")
                self.observed.observe(route, scope["method"], status, time.perf_counter() - arrived)


def route_error(
    status: int, method: str, path: str, headers: dict[str, str] | None = None
) -> Response:
    """No route for a request: 404 (no such path) or 405 (its ``Allow`` in ``headers``)."""
    kind = {404: "not_found", 405: "method_not_allowed"}.get(status, "bad_request")
    return error_response(status, kind, f"{method} {path}: {kind}", headers)


Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Route:
    """A path of the API (as the OpenAPI document names it), what answers it, and who it
    admits (public, or the roles whose signed requests it takes: 403 for any other)."""

    path: str
    method: str
    endpoint: Endpoint
    access: Access


TERMINALS = signed_by("retailer", "office")
"""The validation service's signed routes: retailers' terminals and the office's, never a
platform (the online operator acts at ``printpipe play`` only)."""

ROUTES = (
    Route("/v1/health", "GET", health, PUBLIC),
    Route("/v1/health/live", "GET", health_live, PUBLIC),
    Route("/v1/health/ready", "GET", health_ready, PUBLIC),
    Route("/metrics", "GET", metrics_page, PUBLIC),
    Route("/v1/openapi.json", "GET", openapi, PUBLIC),
    Route("/v1/validations", "POST", validations, TERMINALS),
    Route("/v1/claims", "POST", claims, TERMINALS),
    Route("/v1/packs/{pack}", "GET", pack_state, TERMINALS),
    Route("/v1/packs/{pack}/activation", "POST", activation, TERMINALS),
)

api_document = ApiDocument(openapi_document, lambda: ((r.path, r.method, r.access) for r in ROUTES))
"""The OpenAPI document served: :func:`openapi_document`, each operation listing the roles its
route admits (from :data:`ROUTES`), checked against them by :func:`create_app`."""


class Router:
    """The API's routes, found by path: a dictionary for fixed paths, a pattern for the
    others; 404 and 405 (with ``Allow``) as problems.  Requests and answers are Starlette's;
    its application, router and middleware layers are not used: they cost more than the rest
    of a validation's Python (``bench/bench_service.py``), and :class:`Guard` already turns
    every exception into an answer."""

    def __init__(self, routes: Sequence[Route], lifespan: Callable[[], Any]) -> None:
        self.routes = tuple(routes)
        self.state = State()
        self._lifespan = lifespan
        self._fixed: dict[str, dict[str, Route]] = {}
        self._patterns: list[tuple[re.Pattern[str], dict[str, Route]]] = []
        for route in routes:
            if "{" in route.path:
                pattern = compile_path(route.path)[0]
                for known, methods in self._patterns:
                    if known.pattern == pattern.pattern:
                        methods[route.method] = route
                        break
                else:
                    self._patterns.append((pattern, {route.method: route}))
            else:
                self._fixed.setdefault(route.path, {})[route.method] = route

    def _match(self, path: str) -> tuple[dict[str, Route] | None, dict[str, str]]:
        methods = self._fixed.get(path)
        if methods is not None:
            return methods, {}
        for pattern, methods in self._patterns:
            match = pattern.match(path)
            if match is not None:
                return methods, match.groupdict()
        return None, {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._serve_lifespan(receive, send)
            return
        scope["app"] = self
        method = scope["method"]
        methods, params = self._match(scope["path"])
        route = None if methods is None else methods.get("GET" if method == "HEAD" else method)
        if route is not None:
            scope["path_params"] = params
            scope["route"] = route  # its template, for the metrics
            response = await route.endpoint(Request(scope, receive))
        elif methods is None:
            response = route_error(404, method, scope["path"])
        else:
            allow = ", ".join(sorted({*methods, *(["HEAD"] if "GET" in methods else [])}))
            response = route_error(405, method, scope["path"], {"Allow": allow})
        await response(scope, receive, send)

    async def _serve_lifespan(self, receive: Receive, send: Send) -> None:
        started = False
        await receive()  # lifespan.startup
        try:
            async with self._lifespan():
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except BaseException as exc:
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": " ".join(str(exc).split())[:300]})
            raise
        await send({"type": "lifespan.shutdown.complete"})


def create_app(
    ledger: Ledger,
    *,
    threads: int,
    rate_limit: RateLimit | None = None,
    witness: Path | None = None,
) -> ASGIApp:
    """The service's ASGI application over an open ledger (its witness kept in ``witness``);
    ValueError if a route and the OpenAPI document disagree."""
    api_document.check()
    service = Service(
        ledger, threads=threads, rate_limit=rate_limit or RateLimit(), witness=witness
    )
    router = Router(ROUTES, service.running)
    router.state.service = service
    return Guard(router, observed=metrics.http_metrics("serve"))
