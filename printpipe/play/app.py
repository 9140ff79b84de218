"""The game server's ASGI application (Starlette): the JSON API and the player's page.

Two kinds of callers, one API (``docs/play.md``):

- **the operator's platform** (production): every request under ``/v1/players/{player}`` is
  signed with the validation service's RFC 9421 profile (``printpipe.service.signatures``) by
  a terminal registered with the ``platform`` role; it names the player in the path and acts
  for them (it authenticated them).  Its nonce is admitted in the request's own transaction.
- **the player's browser**: the operator's launch link (a token the platform signs,
  ``printpipe.play.launch``, spent once at ``/v1/launches``) or, with ``printpipe play
  --demo``, a one-time login link gives a session cookie (HttpOnly, SameSite=Strict); the
  cookie acts only for its own player, and a request that changes anything must also come
  from the page itself (``Content-Type: application/json``, and ``Sec-Fetch-Site``/``Origin``
  of this site when the browser sends them), so another site can neither read nor forge a
  play.

The page (``/``, ``/static/...``) ships in the package: HTML, CSS, JavaScript and the font,
no CDN.  It draws what the API returns and decides nothing.  Errors are one line of JSON with
a 4xx status (503 when the database does not answer), never a 500: the validation service's
guard (``printpipe.service.app.Guard``) wraps the application.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from printpipe.errors import InvalidInput
from printpipe.ledger import (
    Admission,
    Batcher,
    Dealer,
    InsufficientFunds,
    NoSuchPlay,
    NoSuchPlayer,
    Play,
    PlayRefused,
    PlayRequest,
    RequestRefused,
    check_player,
    start_launched_session,
)
from printpipe.play.launch import (
    MAX_TOKEN_CHARS,
    LaunchRefused,
    read_launch_token,
    token_key_id,
)
from printpipe.play.openapi import openapi_document
from printpipe.play.screen import ScreenMaker
from printpipe.render.fonts import FONTS_DIR
from printpipe.service import metrics
from printpipe.service.app import (
    IDEMPOTENCY_KEY,
    Caller,
    Guard,
    RateLimit,
    Refusal,
    Service,
    _json_line,
    error_response,
    health_answer,
    http_error,
    metrics_page,
    read_body,
    unexpected,
)
from printpipe.service.problems import REQUEST_ID
from printpipe.service.signatures import public_key_from_raw

PLATFORM_RATE = RateLimit(rate=5000.0, burst=10000)
"""The operator's platform signs every player's requests with its one key: its limit is the
whole game's traffic, not a retailer terminal's (the validation service's default)."""
STATIC_DIR = Path(str(files("printpipe.play.static")))
SESSION_COOKIE = "pp_session"
JSON = "application/json"
PLAY_ID = re.compile(r"[0-9a-f]{32}")
STATIC_FILES = {
    "play.js": "text/javascript; charset=utf-8",
    "play.css": "text/css; charset=utf-8",
}
FONT_FILES = ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def json_response(
    data: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        _json_line(data), status_code=status, media_type=JSON,
        headers={**SECURITY_HEADERS, **(headers or {})},
    )  # fmt: skip


class PlayService(Service):
    """The application's state: the ledger, its dealer and thread pool, the platform's keys."""

    def __init__(
        self, ledger: Any, dealer: Dealer, *, threads: int, demo: bool, witness: Path | None
    ) -> None:
        super().__init__(ledger, threads=threads, rate_limit=PLATFORM_RATE, witness=witness)
        self.dealer = dealer
        self.batcher = Batcher(
            metrics.batched("plays", dealer.play_batch),
            self.executor,
            concurrency=min(2, ledger.db.threads),
        )
        self.screen = ScreenMaker(dealer.game)
        self.demo = demo

    def play_json(self, play: Play) -> dict[str, Any]:
        return {
            "play": play.id,
            "serial": play.serial,
            "played_at": play.played_at,
            "stake_cents": play.stake_cents,
            "lot_eur": play.lot_eur,
            "balance_cents": play.balance_cents,
            "unit": self.screen.unit(play.symbols, play.lot_eur),
        }


@contextlib.contextmanager
def _refusals() -> Any:
    """The dealer's refusals as HTTP refusals."""
    try:
        yield
    except PlayRefused as exc:
        raise Refusal(exc.status, exc.kind, str(exc)) from None
    except InsufficientFunds as exc:
        raise Refusal(402, "insufficient_funds", str(exc)) from None
    except (NoSuchPlayer, NoSuchPlay) as exc:
        raise Refusal(404, "not_found", str(exc)) from None
    except InvalidInput as exc:
        raise Refusal(400, "bad_request", str(exc)) from None


def _same_site(request: Request) -> None:
    """A change made with the cookie must come from this site's own page."""
    if request.headers.get("content-type", "").split(";")[0].strip() != JSON:
        raise Refusal(415, "bad_request", "send application/json")
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise Refusal(403, "cross_site", "a request from another site is refused")
    origin = request.headers.get("origin")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin != own:
            raise Refusal(403, "cross_site", "a request from another origin is refused")


async def _caller(
    service: PlayService, request: Request, body: bytes, player: str
) -> Caller | None:
    """Who may act for ``player``: a platform terminal that signed the request (and its nonce,
    to admit), or, in demo mode, the player's own session cookie (None: nothing to admit)."""
    if any(name.lower() == b"signature" for name, _ in request.scope["headers"]):
        caller = await service.caller(request, body)  # 401 if the signature is refused
        if caller.terminal.role != "platform":
            raise Refusal(403, "not_platform", "only a platform terminal acts for players")
        return caller
    session = request.cookies.get(SESSION_COOKIE)
    if session is None:  # a session: a demo login's, or a launch's
        raise Refusal(401, "unauthorized", "sign the request (RFC 9421) or log in")
    if len(session) > 128:
        raise Refusal(401, "unauthorized", "no such session")
    owner = await service.run(service.dealer.session_player, session=session)
    if owner is None:
        raise Refusal(401, "unauthorized", "no such session (expired or logged out): log in")
    if owner != player:
        raise Refusal(403, "not_your_account", "this session acts for another player")
    if request.method not in ("GET", "HEAD"):
        _same_site(request)
    return None


PlayerHandler = Callable[[PlayService, Request, bytes, str, Caller | None], Awaitable[Response]]


def for_player(handler: PlayerHandler) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint under ``/v1/players/{player}``: body bounded, caller authenticated."""

    async def endpoint(request: Request) -> Response:
        service: PlayService = request.app.state.service
        try:
            body = await read_body(request)
            try:
                player = check_player(request.path_params["player"])
            except InvalidInput as exc:
                raise Refusal(400, "bad_request", str(exc)) from None
            caller = await _caller(service, request, body, player)
            with _refusals():
                return await handler(service, request, body, player, caller)
        except Refusal as refusal:
            response = refusal.response()
            response.headers.update(SECURITY_HEADERS)
            return response
        except RequestRefused as exc:  # a replayed nonce, a revoked platform
            return error_response(401, "unauthorized", str(exc))

    return endpoint


def _empty_body(body: bytes) -> None:
    if body.strip() not in (b"", b"{}"):
        raise Refusal(400, "bad_request", "this request takes no body (or {})")


@for_player
async def plays(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    if request.method == "GET":
        history = await service.run(service.dealer.history, player=player)
        return json_response({"plays": [service.play_json(p) for p in history]})
    key = request.headers.get("idempotency-key")
    if key is None or IDEMPOTENCY_KEY.fullmatch(key) is None:
        raise Refusal(
            400, "bad_request", "a play needs an Idempotency-Key of 8 to 64 of A-Z a-z 0-9 . _ : -"
        )
    _empty_body(body)
    fingerprint = service.ledger.request_fingerprint("POST", request.url.path, body.strip())
    admission, by = (caller.admission, caller.terminal.id) if caller else (None, None)
    asked = PlayRequest(player, key, fingerprint, admission, by)
    try:
        play, replayed = await service.batcher.ask(asked)
    except (PlayRefused, InsufficientFunds) as exc:
        metrics.PLAYS.labels(getattr(exc, "kind", "insufficient_funds")).inc()
        raise
    _count(play, replayed)
    headers = {"Idempotent-Replayed": "true"} if replayed else {}
    return json_response(service.play_json(play), status=200 if replayed else 201, headers=headers)


def _count(play: Play, replayed: bool) -> None:
    """A play answered, in the metrics (its outcome; a play dealt now: its stake and lot)."""
    metrics.PLAYS.labels("replayed" if replayed else "dealt").inc()
    if not replayed:
        metrics.STAKES.inc(play.stake_cents)
        if play.lot_eur:
            metrics.LOTS.inc()
            metrics.LOT_CENTS.inc(play.lot_eur * 100)


@for_player
async def last_play(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    history = await service.run(service.dealer.history, player=player, limit=1)
    if not history:
        raise Refusal(404, "not_found", f"{player} has not played yet")
    return json_response(service.play_json(history[0]))


def _play_id(request: Request) -> str:
    play_id = request.path_params["play"]
    if PLAY_ID.fullmatch(play_id) is None:
        raise Refusal(400, "bad_request", "a play id is 32 hexadecimal digits")
    return str(play_id)


@for_player
async def one_play(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    play = await service.run(service.dealer.one_play, player=player, play_id=_play_id(request))
    return json_response(service.play_json(play))


@for_player
async def play_proof(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    proof = await service.run(service.dealer.proof, player=player, play_id=_play_id(request))
    return json_response(proof.document())


@for_player
async def account(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    return json_response(await service.run(service.dealer.account, player=player))


# -- demo sessions ----------------------------------------------------------------------


async def sessions(request: Request) -> Response:
    """``POST /v1/sessions {"token": ...}``: spend a one-time login token for a session cookie
    (demo mode only); ``DELETE``: log out."""
    service: PlayService = request.app.state.service
    try:
        if not service.demo:
            raise Refusal(404, "not_found", "logins are offered by printpipe play --demo only")
        body = await read_body(request)
        _same_site(request)
        if request.method == "DELETE":
            ending = request.cookies.get(SESSION_COOKIE)
            if ending is not None and len(ending) <= 128:
                await service.run(service.dealer.end_session, session=ending)
            response = json_response({"logged_out": True})
            response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
            return response
        token = _token_of(body)
        if len(token) > 128:
            raise Refusal(400, "bad_request", 'the body must be {"token": "..."}')
        with _refusals():
            session, player = await service.run(service.dealer.start_session, login_token=token)
    except Refusal as refusal:
        return refusal.response()
    return _session_started(request, player, session)


def _session_started(request: Request, player: str, session: str) -> Response:
    """201 and the session cookie (a demo login's or a launch's)."""
    response = json_response({"player": player}, status=201)
    response.set_cookie(
        SESSION_COOKIE,
        session,
        max_age=12 * 3600,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _token_of(body: bytes) -> str:
    """The ``token`` of a body ``{"token": "..."}`` (a login's or a launch's)."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise Refusal(400, "bad_request", 'the body must be {"token": "..."}') from None
    token = data.get("token") if isinstance(data, dict) and set(data) == {"token"} else None
    if not isinstance(token, str) or not 16 <= len(token) <= MAX_TOKEN_CHARS:
        raise Refusal(400, "bad_request", 'the body must be {"token": "..."}')
    return token


async def launches(request: Request) -> Response:
    """``POST /v1/launches {"token": ...}``: spend the operator's launch token (once) for a
    session cookie; a player launched for the first time is introduced by it."""
    service: PlayService = request.app.state.service
    try:
        body = await read_body(request)
        _same_site(request)
        token = _token_of(body)
        key_id = token_key_id(token)
        terminal = await service.run(service.ledger.terminal_by_key_id, key_id=key_id)
        if terminal is None or terminal.revoked_at is not None:
            raise LaunchRefused("no active platform has this token's key (unknown or revoked)")
        if terminal.role != "platform":
            raise Refusal(403, "not_platform", "only a platform terminal launches players")
        key = public_key_from_raw(terminal.public_key)
        launch = read_launch_token(token, public_key={key_id: key}.get)
        admission = Admission(key_id, launch.nonce, launch.issued_at, request=REQUEST_ID.get())
        session, _ = await service.run(
            start_launched_session,
            ledger=service.ledger,
            player=launch.player,
            operator_session=launch.session,
            admission=admission,
            terminal=terminal.id,
        )
    except Refusal as refusal:
        return refusal.response()
    except LaunchRefused as exc:
        return error_response(401, "unauthorized", str(exc))
    except RequestRefused:  # its nonce spent: the link was opened before
        return error_response(401, "unauthorized", "this launch link was used already")
    return _session_started(request, launch.player, session)


async def me(request: Request) -> Response:
    """Which player the session cookie is (the page asks first)."""
    service: PlayService = request.app.state.service
    session = request.cookies.get(SESSION_COOKIE)
    player = None
    if session is not None and len(session) <= 128:
        player = await service.run(service.dealer.session_player, session=session)
    if player is None:
        return error_response(401, "unauthorized", "not logged in: open your login link")
    return json_response({"player": player})


# -- public: the game, the commitments, health, OpenAPI, the page ---------------------------------


async def game(request: Request) -> Response:
    service: PlayService = request.app.state.service
    return json_response({**service.screen.fixed, "demo": service.demo})


async def commitments(request: Request) -> Response:
    service: PlayService = request.app.state.service
    return json_response({"commitments": await service.run(service.dealer.published_commitments)})


async def health(request: Request) -> Response:
    return await health_answer(request.app.state.service)


async def health_live(request: Request) -> Response:
    return await health_answer(request.app.state.service, "live")


async def health_ready(request: Request) -> Response:
    return await health_answer(request.app.state.service, "ready")


async def openapi(request: Request) -> Response:
    return json_response(openapi_document())


def _file(path: Path, media_type: str) -> Response:
    return Response(path.read_bytes(), media_type=media_type, headers=SECURITY_HEADERS)


async def page(request: Request) -> Response:
    return _file(STATIC_DIR / "index.html", "text/html; charset=utf-8")


async def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name in STATIC_FILES:
        return _file(STATIC_DIR / name, STATIC_FILES[name])
    if name in FONT_FILES:
        return _file(FONTS_DIR / name, "font/ttf")
    return error_response(404, "not_found", f"GET {request.url.path}: not_found")


def create_app(
    ledger: Any, dealer: Dealer, *, threads: int, demo: bool, witness: Path | None = None
) -> ASGIApp:
    """The game server's ASGI application over an open ledger and its dealer (its witness
    kept in ``witness``)."""
    service = PlayService(ledger, dealer, threads=threads, demo=demo, witness=witness)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with service.running():  # its plays' entries sealed as the service's are
            yield

    player = "/v1/players/{player}"
    app = Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/static/{name}", static, methods=["GET"]),
            Route("/v1/health", health, methods=["GET"]),
            Route("/v1/health/live", health_live, methods=["GET"]),
            Route("/v1/health/ready", health_ready, methods=["GET"]),
            Route("/metrics", metrics_page, methods=["GET"]),
            Route("/v1/openapi.json", openapi, methods=["GET"]),
            Route("/v1/game", game, methods=["GET"]),
            Route("/v1/commitments", commitments, methods=["GET"]),
            Route("/v1/sessions", sessions, methods=["POST", "DELETE"]),
            Route("/v1/launches", launches, methods=["POST"]),
            Route("/v1/me", me, methods=["GET"]),
            Route(player, account, methods=["GET"]),
            Route(f"{player}/plays", plays, methods=["GET", "POST"]),
            Route(f"{player}/plays/last", last_play, methods=["GET"]),
            Route(f"{player}/plays/{{play}}", one_play, methods=["GET"]),
            Route(f"{player}/plays/{{play}}/proof", play_proof, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: unexpected},
        lifespan=lifespan,
    )
    app.state.service = service
    return Guard(app, observed=metrics.http_metrics("play"))
