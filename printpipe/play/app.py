"""The game server's ASGI application: the JSON API and the player's page, on the validation
service's own router and guard (``printpipe.service.app``: Starlette's requests and answers,
not its application, routing and middleware layers, which cost a play more than its screen).

Two kinds of callers, one API (``docs/play.md``); each route names who it admits
(:data:`ROUTES`, ``printpipe.service.access``), and nobody else gets in:

- **the operator's platform** (production): every request under ``/v1/players/{player}`` is
  signed with the validation service's RFC 9421 profile (``printpipe.service.signatures``) by
  a terminal registered with the ``platform`` role (a retailer's or the office's terminal is
  answered 403, its role named); it names the player in the path and acts for them (it
  authenticated them).  Every signed request is admitted as the validation service's are:
  its ``created`` time within the window, its nonce recorded once (a replay is refused), its
  terminal read from the ledger as it is then (a revoked one is refused at once, on every
  worker): a play's nonce in the play's own transaction, a read's in one of its own first.
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

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from printpipe.errors import InvalidInput
from printpipe.ledger import (
    Admission,
    Batcher,
    Dealer,
    InsufficientFunds,
    NoSuchPlay,
    NoSuchPlayer,
    Outbox,
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
from printpipe.service.access import PUBLIC, Access, signed_by
from printpipe.service.apidoc import ApiDocument
from printpipe.service.app import (
    IDEMPOTENCY_KEY,
    Caller,
    Guard,
    RateLimit,
    Refusal,
    Route,
    Router,
    Service,
    _json_line,
    error_response,
    health,
    health_live,
    health_ready,
    json_body,
    metrics_page,
    read_body,
    role_refusal,
)
from printpipe.service.problems import REQUEST_ID
from printpipe.service.signatures import public_key_from_raw

log = logging.getLogger("printpipe.play")
OUTBOX_POLL_S = 1.0
"""How often the outbox task looks for calls due again (it is woken at once after a deal)."""
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

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The service's lifetime (``Service.running``) and, with a wallet outside the ledger,
        its outbox task: the calls not confirmed yet sent again until they are."""
        async with super().running():
            outbox = self.dealer.outbox
            if outbox is None:
                yield
                return
            wake = asyncio.Event()
            loop = asyncio.get_running_loop()

            def notify() -> None:
                loop.call_soon_threadsafe(wake.set)

            outbox.notify = notify
            task = asyncio.create_task(self.keep_outbox(outbox, wake))
            try:
                yield
            finally:
                task.cancel()
                outbox.notify = lambda: None

    async def keep_outbox(self, outbox: Outbox, wake: asyncio.Event) -> None:
        """Send the outbox's due calls now, after each deal that wrote some, and every
        :data:`OUTBOX_POLL_S` seconds (a database or wallet down: tried again then)."""
        while True:
            try:
                claimed = await self.run(outbox.claim_due)
                if claimed:  # sent off the ledger's thread: plays are dealt meanwhile
                    results = await asyncio.to_thread(outbox.send_claimed, claimed)
                    await self.run(outbox.record, claimed=claimed, results=results)
            except Exception as exc:  # the database or the wallet restarting
                log.warning("the wallet's outbox could not be sent now (%s): tried again",
                            " ".join(str(exc).split())[:200])  # fmt: skip
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), OUTBOX_POLL_S)
            wake.clear()

    def play_json(self, play: Play) -> dict[str, Any]:
        return {
            "play": play.id,
            "serial": play.serial,
            "block": play.block,
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


def _signed(request: Request) -> bool:
    return any(name.lower() == b"signature" for name, _ in request.scope["headers"])


async def _terminal(
    service: PlayService, request: Request, body: bytes, access: Access, *, handler_admits: bool
) -> Caller:
    """The terminal that signed the request (401 if the signature is refused), of a role the
    route admits (403, its role named).  Its nonce is admitted here, in a transaction of its
    own (a replay or a revoked terminal: ``RequestRefused``, 401), unless the route's handler
    admits it in its own (``handler_admits``: a play, with the play's rows)."""
    caller = await service.caller(request, body)
    admitted = access.admits(caller.terminal.role)
    if not (admitted and handler_admits):
        await service.run(service.ledger.admit, admission=caller.admission)
    if not admitted:
        raise role_refusal(caller.terminal.role, access)
    return caller


async def _session_player(service: PlayService, request: Request) -> str:
    """The player of the request's session cookie (demo mode), or 401."""
    session = request.cookies.get(SESSION_COOKIE)
    if session is None:  # a session: a demo login's, or a launch's
        raise Refusal(401, "unauthorized", "sign the request (RFC 9421) or log in")
    if len(session) > 128:
        raise Refusal(401, "unauthorized", "no such session")
    owner = await service.run(service.dealer.session_player, session=session)
    if owner is None:
        raise Refusal(401, "unauthorized", "no such session (expired or logged out): log in")
    return str(owner)


PlayerHandler = Callable[[PlayService, Request, bytes, str, Caller | None], Awaitable[Response]]


def for_player(
    handler: PlayerHandler, access: Access, *, admits_nonce: tuple[str, ...] = ()
) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint under ``/v1/players/{player}``: body bounded, then the caller: a terminal
    of a role ``access`` admits (:func:`_terminal`), or the player's own session cookie
    (None: nothing to admit; a change must come from the page itself).  ``admits_nonce``:
    the methods whose handler admits a terminal's nonce itself."""

    async def endpoint(request: Request) -> Response:
        service: PlayService = request.app.state.service
        try:
            body = await read_body(request)
            try:
                player = check_player(request.path_params["player"])
            except InvalidInput as exc:
                raise Refusal(400, "bad_request", str(exc)) from None
            caller: Caller | None = None
            if _signed(request):
                caller = await _terminal(service, request, body, access,
                                         handler_admits=request.method in admits_nonce)  # fmt: skip
            elif not access.session:
                raise Refusal(401, "unauthorized", "sign the request (RFC 9421)")
            else:
                if await _session_player(service, request) != player:
                    raise Refusal(403, "not_your_account", "this session acts for another player")
                if request.method not in ("GET", "HEAD"):
                    _same_site(request)
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
    # the path as the player's name checked it (request.url, parsed again, is the same)
    fingerprint = service.ledger.request_fingerprint("POST", request.scope["path"], body.strip())
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


async def one_play(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    play = await service.run(service.dealer.one_play, player=player, play_id=_play_id(request))
    return json_response(service.play_json(play))


async def play_proof(
    service: PlayService, request: Request, body: bytes, player: str, caller: Caller | None
) -> Response:
    proof = await service.run(service.dealer.proof, player=player, play_id=_play_id(request))
    return json_response(proof.document())


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
    data = json_body(body, '{"token": "..."}')
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
            raise role_refusal(terminal.role, signed_by("platform"))
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
    """Which player the session cookie is (the page asks first); no terminal's business."""
    service: PlayService = request.app.state.service
    try:
        if _signed(request):
            body = await read_body(request)
            await _terminal(service, request, body, SESSION_ONLY, handler_admits=False)  # 401/403
        try:
            player = await _session_player(service, request)
        except Refusal:
            raise Refusal(401, "unauthorized", "not logged in: open your login link") from None
    except Refusal as refusal:
        return refusal.response()
    except RequestRefused as exc:
        return error_response(401, "unauthorized", str(exc))
    return json_response({"player": player})


# -- public: the game, the commitments, health, OpenAPI, the page ---------------------------------


async def game(request: Request) -> Response:
    service: PlayService = request.app.state.service
    return json_response({**service.screen.fixed, "demo": service.demo})


async def commitments(request: Request) -> Response:
    service: PlayService = request.app.state.service
    return json_response({"commitments": await service.run(service.dealer.published_commitments)})


async def openapi(request: Request) -> Response:
    return json_response(api_document())


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


@dataclass(frozen=True)
class PlayRoute:
    """A path of the API, its methods, what answers them, and who it admits.  A route that
    admits terminals acts for the player its path names: its handler is a
    :data:`PlayerHandler`, behind :func:`for_player`, which lets in the roles (and the session
    cookie) ``access`` names, 403 for any other.  Any other route's endpoint takes the request
    itself (public, or ``/v1/me``'s session alone)."""

    path: str
    methods: tuple[str, ...]
    endpoint: Callable[..., Awaitable[Response]]
    access: Access
    admits_nonce: tuple[str, ...] = ()
    """The methods whose handler admits a terminal's nonce in its own transaction (a play,
    with its rows); for any other, :func:`_terminal` admits it first."""

    def routes(self) -> list[Route]:
        """The router's routes: one a method (``HEAD`` answered as ``GET``)."""
        endpoint = (
            for_player(self.endpoint, self.access, admits_nonce=self.admits_nonce)
            if self.access.roles
            else self.endpoint
        )
        return [Route(self.path, method, endpoint, self.access) for method in self.methods]


PLAYER = "/v1/players/{player}"
FOR_PLAYERS = signed_by("platform", session=True)
"""A player's account and plays: the operator's platform, or the player's session (a launch's
or a demo login's)."""
SESSION_ONLY = Access(session=True)

ROUTES = (
    PlayRoute("/", ("GET",), page, PUBLIC),
    PlayRoute("/static/{name}", ("GET",), static, PUBLIC),
    PlayRoute("/v1/health", ("GET",), health, PUBLIC),
    PlayRoute("/v1/health/live", ("GET",), health_live, PUBLIC),
    PlayRoute("/v1/health/ready", ("GET",), health_ready, PUBLIC),
    PlayRoute("/metrics", ("GET",), metrics_page, PUBLIC),
    PlayRoute("/v1/openapi.json", ("GET",), openapi, PUBLIC),
    PlayRoute("/v1/game", ("GET",), game, PUBLIC),
    PlayRoute("/v1/commitments", ("GET",), commitments, PUBLIC),
    PlayRoute("/v1/sessions", ("POST", "DELETE"), sessions, PUBLIC),
    PlayRoute("/v1/launches", ("POST",), launches, PUBLIC),
    PlayRoute("/v1/me", ("GET",), me, SESSION_ONLY),
    PlayRoute(PLAYER, ("GET",), account, FOR_PLAYERS),
    PlayRoute(f"{PLAYER}/plays", ("GET", "POST"), plays, FOR_PLAYERS, admits_nonce=("POST",)),
    PlayRoute(f"{PLAYER}/plays/last", ("GET",), last_play, FOR_PLAYERS),
    PlayRoute(f"{PLAYER}/plays/{{play}}", ("GET",), one_play, FOR_PLAYERS),
    PlayRoute(f"{PLAYER}/plays/{{play}}/proof", ("GET",), play_proof, FOR_PLAYERS),
)

api_document = ApiDocument(
    openapi_document, lambda: ((r.path, m, r.access) for r in ROUTES for m in r.methods)
)
"""The OpenAPI document served: :func:`openapi_document`, each operation listing who its route
admits (from :data:`ROUTES`), checked against them by :func:`create_app`."""


def create_app(
    ledger: Any, dealer: Dealer, *, threads: int, demo: bool, witness: Path | None = None
) -> ASGIApp:
    """The game server's ASGI application over an open ledger and its dealer (its witness
    kept in ``witness``); ValueError if a route and the OpenAPI document disagree."""
    api_document.check()
    service = PlayService(ledger, dealer, threads=threads, demo=demo, witness=witness)
    # its plays' entries sealed while it runs, as the service's are
    router = Router([route for r in ROUTES for route in r.routes()], service.running)
    router.state.service = service
    return Guard(router, observed=metrics.http_metrics("play"))
