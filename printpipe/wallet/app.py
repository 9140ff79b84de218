"""The reference wallet's ASGI application: the wallet API (``api.py``) over its database.

Every request but ``/v1/health`` and ``/v1/openapi.json`` is signed by a game server whose
public key the wallet trusts (``--trust``), with the validation service's RFC 9421 profile
(``printpipe.service.signatures``), roles reversed: the game server signs, the wallet
verifies.  The validation service's router, guard, body bound and problem details are reused
as they are, so an error is one line of RFC 9457 JSON and nothing a client sends makes a 500.

Faults (``--fault``, for the tests of the game server's client): a call refused with 503
before anything is done, its answer delayed after the commit, or its answer lost after the
commit (half of it sent, then the connection closed), each drawn at the rate asked; drawn once
for a batch (``POST /v1/batch``), whose request is one: its calls all refused, held or lost
together, as a lost connection would lose them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from printpipe import __version__
from printpipe.ledger import Batcher
from printpipe.service.access import PUBLIC
from printpipe.service.apidoc import ApiDocument
from printpipe.service.app import (
    MAX_BODY_BYTES,
    Guard,
    Refusal,
    Route,
    Router,
    error_response,
    read_body,
    request_headers,
    unauthorized_headers,
    verify_signed,
)
from printpipe.service.problems import json_line, problem
from printpipe.service.signatures import key_id_of
from printpipe.wallet.api import (
    BATCH_BODY_BYTES,
    BATCH_PATH,
    PLAYER,
    REFUSALS,
    REPLAYED,
    Answer,
    BadCall,
    Call,
    Receipt,
    TooManyCalls,
    batch_answer,
    check_day,
    parse_batch,
    parse_call,
)
from printpipe.wallet.openapi import openapi_document
from printpipe.wallet.store import Asked, WalletRefused, WalletStore

T = TypeVar("T")
JSON = "application/json"
MAINTENANCE_S = 30.0
FAULT_KINDS = ("lose", "error", "delay")
CALLS_MOST = 128
"""Calls made in one transaction at most."""


@dataclass(frozen=True)
class Faults:
    """Injected faults, each a rate from 0 to 1 over the debit, credit and cancel calls:
    ``error``: 503 before anything is done; ``delay``: the answer held ``delay_s`` seconds
    after the commit; ``lose``: the answer lost after the commit (the connection cut)."""

    lose: float = 0.0
    error: float = 0.0
    delay: float = 0.0
    delay_s: float = 2.0
    seed: int | None = None


class WalletService:
    """The application's state: the database, its thread pool, the trusted keys, the faults."""

    def __init__(
        self,
        store: WalletStore,
        *,
        trusted: list[Ed25519PublicKey],
        threads: int = 1,
        faults: Faults | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.store = store
        self.keys = {key_id_of(key): key for key in trusted}
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="wallet")
        self.faults = faults or Faults()
        self._draw = random.Random(self.faults.seed)
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.calls: Batcher[Asked, tuple[Receipt | WalletRefused, bool]] = Batcher(
            store.apply_many, self.executor, most=CALLS_MOST, concurrency=min(2, threads)
        )
        """Group commit: the calls that arrive while a group commits go in the next."""

    async def run(self, function: Callable[..., T], /, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(function, **kwargs))

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        task = asyncio.create_task(self.maintain())
        try:
            yield
        finally:
            task.cancel()
            self.executor.shutdown(wait=True)
            self.store.close()

    async def maintain(self) -> None:
        while True:
            await asyncio.sleep(MAINTENANCE_S)
            with contextlib.suppress(Exception):  # a database restarting: next round
                await self.run(self.store.purge_nonces, now=self.clock())

    def fault(self, kind: str) -> bool:
        rate = float(getattr(self.faults, kind))
        return rate > 0 and self._draw.random() < rate

    async def verified(self, request: Request, body: bytes) -> tuple[str, str, int]:
        """The request's signer, verified against the trusted keys: (key id, nonce, created)
        to admit; 401 otherwise."""
        verified = verify_signed(
            request, body, headers=request_headers(request), public_key=self.keys.get,
            idempotent=False,
        )  # fmt: skip
        return verified.key_id, verified.nonce, verified.created


def refusal_kind(exc: WalletRefused | BadCall) -> str:
    if isinstance(exc, WalletRefused):
        return exc.kind
    return "too_many_calls" if isinstance(exc, TooManyCalls) else "bad_request"


def refused(exc: WalletRefused | BadCall) -> Response:
    kind = refusal_kind(exc)
    status = REFUSALS[kind][0]
    headers = unauthorized_headers(idempotent=False) if status == 401 else None
    return error_response(status, kind, str(exc), headers)


def json_response(
    data: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(json_line(data), status_code=status, media_type=JSON, headers=headers)


class CutResponse(Response):
    """An answer lost on the way: its head and half its body sent, then the connection
    closed (uvicorn closes a connection whose answer its application left unfinished)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        await send({"type": "http.response.body", "body": self.body[: len(self.body) // 2],
                    "more_body": True})  # fmt: skip


Handler = Callable[[WalletService, Request, bytes, tuple[str, str, int]], Awaitable[Response]]


def signed(
    handler: Handler, *, most: int = MAX_BODY_BYTES
) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint for signed requests: body bounded (``most`` bytes), signature verified
    (401), then ``handler``; a refusal is one line of problem details."""

    @functools.wraps(handler)
    async def endpoint(request: Request) -> Response:
        service: WalletService = request.app.state.service
        try:
            body = await read_body(request, most=most)
            signer = await service.verified(request, body)
            return await handler(service, request, body, signer)
        except Refusal as refusal:
            return refusal.response()
        except (WalletRefused, BadCall) as exc:
            return refused(exc)

    return endpoint


def movement(kind: str) -> Callable[[Request], Awaitable[Response]]:
    """``POST /v1/debits``, ``/v1/credits``, ``/v1/cancels``."""

    @signed
    async def endpoint(
        service: WalletService, request: Request, body: bytes, signer: tuple[str, str, int]
    ) -> Response:
        call = parse_call(kind, body)
        if service.fault("error"):
            return error_response(503, "unavailable", "injected fault: retry", {"Retry-After": "1"})
        outcome, replayed = await service.calls.ask(Asked(call, service.clock(), signer))
        if isinstance(outcome, WalletRefused):
            return refused(outcome)
        return await _answered(service, _receipt_response(outcome, replayed))

    return endpoint


async def _answered(service: WalletService, response: Response) -> Response:
    """``response`` after the commit, held or lost if a fault is drawn."""
    if service.fault("delay"):
        await asyncio.sleep(service.faults.delay_s)
    if service.fault("lose"):
        return CutResponse(response.body, status_code=response.status_code, media_type=JSON)
    return response


async def _batch(
    service: WalletService, request: Request, body: bytes, signer: tuple[str, str, int]
) -> Response:
    """``POST /v1/batch``: the calls checked (the batch whole: 400 or 413, nothing made; a
    call's body alone: that call answered 400), made in one transaction in the order given
    (``WalletStore.apply_batch``), each answered apart as alone; 200 with the results."""
    parsed = parse_batch(body)
    if service.fault("error"):
        return error_response(503, "unavailable", "injected fault: retry", {"Retry-After": "1"})
    calls = [c for c in parsed if isinstance(c, Call)]
    made = iter(await service.run(service.store.apply_batch, calls=calls, now=service.clock,
                                  nonce=signer))  # fmt: skip
    answers: list[Answer] = []
    for item in parsed:
        if isinstance(item, BadCall):
            answers.append((400, problem(400, "bad_request", str(item)), False))
            continue
        outcome = next(made)
        if isinstance(outcome, Exception):  # this call failed alone: its outcome unknown
            answers.append((500, problem(500, "internal", "the call failed: ask again"), False))
            continue
        result, replayed = outcome
        if isinstance(result, WalletRefused):
            status = REFUSALS[result.kind][0]
            answers.append((status, problem(status, result.kind, str(result)), False))
        else:
            answers.append((200 if replayed else 201, result.as_json(), replayed))
    return await _answered(service, json_response(batch_answer(answers)))


batch = signed(_batch, most=BATCH_BODY_BYTES)


def _receipt_response(receipt: Receipt, replayed: bool) -> Response:
    headers = {REPLAYED: "true"} if replayed else None
    return json_response(receipt.as_json(), status=200 if replayed else 201, headers=headers)


@signed
async def account(
    service: WalletService, request: Request, body: bytes, signer: tuple[str, str, int]
) -> Response:
    player = request.path_params["player"]
    if PLAYER.fullmatch(player) is None:
        raise BadCall("a player is 1 to 64 of A-Z a-z 0-9 . _ @ -")
    balance = await service.run(service.store.balance, player=player, nonce=signer)
    if balance is None:
        raise WalletRefused("no_such_player", f"no account of {player}")
    return json_response({"player": player, "balance_cents": balance, "currency": "EUR"})


@signed
async def statement(
    service: WalletService, request: Request, body: bytes, signer: tuple[str, str, int]
) -> Response:
    day = check_day(request.path_params["day"])
    found = await service.run(service.store.statement, day=day, nonce=signer)
    return json_response(found.as_json())


async def health(request: Request) -> Response:
    service: WalletService = request.app.state.service
    await service.run(service.store.balance, player="-")
    return json_response(
        {"status": "ok", "database": service.store.dialect, "version": __version__}
    )


async def openapi(request: Request) -> Response:
    return json_response(api_document())


GAME_SERVERS = PUBLIC
"""The wallet's signed routes: it has no ledger nor terminal roles; each endpoint verifies its
request against the game servers' keys it trusts (``--trust``) itself."""

ROUTES = (
    Route("/v1/health", "GET", health, PUBLIC),
    Route("/v1/openapi.json", "GET", openapi, PUBLIC),
    Route("/v1/debits", "POST", movement("debit"), GAME_SERVERS),
    Route("/v1/credits", "POST", movement("credit"), GAME_SERVERS),
    Route("/v1/cancels", "POST", movement("cancel"), GAME_SERVERS),
    Route(BATCH_PATH, "POST", batch, GAME_SERVERS),
    Route("/v1/players/{player}", "GET", account, GAME_SERVERS),
    Route("/v1/statements/{day}", "GET", statement, GAME_SERVERS),
)

api_document = ApiDocument(
    openapi_document, lambda: ((r.path, r.method, r.access) for r in ROUTES), roles=False
)
"""The OpenAPI document served: :func:`openapi_document` as written (its routes admit the game
servers the wallet trusts, no terminal roles), checked against :data:`ROUTES` by
:func:`create_app`."""


def create_app(
    store: WalletStore,
    *,
    trusted: list[Ed25519PublicKey],
    threads: int = 1,
    faults: Faults | None = None,
    clock: Callable[[], dt.datetime] | None = None,
) -> ASGIApp:
    """The reference wallet's ASGI application over an open store; ValueError if a route and
    the OpenAPI document disagree."""
    api_document.check()
    service = WalletService(store, trusted=trusted, threads=threads, faults=faults, clock=clock)
    router = Router(ROUTES, service.running)
    router.state.service = service
    return Guard(router)
