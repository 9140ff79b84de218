"""The game server's client of the operator's wallet (``docs/wallet-api.md``).

Each call (debit, credit, cancel) is signed with the game server's own Ed25519 key (the
validation service's RFC 9421 profile, ``printpipe.service.signatures``), sent with a timeout,
and its outcome classified, never guessed:

- :class:`Confirmed`: the wallet answered the call's receipt (2xx): it is done, once;
- :class:`Refused`: the wallet refused it (a 4xx but 408 and 429): nothing was moved, and
  asking again changes nothing;
- :class:`Unknown`: no answer understood after every attempt (a timeout, a cut connection, a
  5xx, 408, 429, a 2xx that is not this call's receipt): the call may or may not have been
  made.

An attempt whose outcome is unknown is sent again with the same body, so the same reference
(a new nonce and signature each time): the wallet makes a call once per reference, so a retry
never moves money twice.  :meth:`WalletClient.settle_debit` is the order a play needs before
its unit is dealt: the debit confirmed, or, if its outcome stays unknown, cancelled (a cancel
that finds no debit is recorded by the wallet, which then refuses the debit if it arrives
late), so that the player is answered only once it is known whether the stake was taken.

It is the ``Wallet`` protocol (``printpipe.ledger.wallet``) over HTTP: ``printpipe play
--wallet URL``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe import __version__
from printpipe.errors import PrintpipeError
from printpipe.service.signatures import RequestSigner
from printpipe.wallet.api import (
    REFUSALS,
    BadCall,
    Call,
    Cancelled,
    Confirmed,
    Outcome,
    Refused,
    Share,
    Statement,
    Unknown,
    check_day,
    parse_receipt,
    parse_statement,
    strict_json,
)

__all__ = ["Cancelled", "Confirmed", "Outcome", "Refused", "Unknown", "WalletClient"]

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_ATTEMPTS = 4
DEFAULT_BACKOFF_S = 0.2
CONNECTIONS = 64
"""Keep-alive connections to the wallet kept open (the outbox's threads and the debits of a
batch, at once)."""
MAX_WAIT_S = 2.0
"""The longest pause between two attempts (a Retry-After longer than this is cut to it)."""


Observer = Callable[[str, str, float], None]
"""Called after each attempt: (call, ``confirmed`` / ``refused`` / ``unknown``, seconds)."""


class WalletClient:
    """The operator's wallet at ``url``, signing with ``key``; ``game``: the game its debits,
    credits and cancels are for (reading a balance or a statement names none)."""

    def __init__(
        self,
        url: str,
        *,
        key: Ed25519PrivateKey,
        game: str = "",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_s: float = DEFAULT_BACKOFF_S,
        transport: httpx.BaseTransport | None = None,
        observe: Observer | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts: at least 1")
        self.url = url.rstrip("/")
        self.game = game
        self.signer = RequestSigner(key)
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.observe = observe
        self.sleep = sleep
        self.transport = transport or httpx.HTTPTransport(
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=CONNECTIONS)
        )
        """Requests go to the transport itself (a keep-alive connection pool), not through an
        ``httpx.Client``: its cookies, redirects, auth and hooks are nothing a call needs,
        and were half of the client's time a call."""
        self.timeout = httpx.Timeout(timeout_s).as_dict()
        self.user_agent = f"printpipe-play/{__version__}"

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> WalletClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the calls ----------------------------------------------------------------------------

    def debit(self, *, reference: str, player: str, split: Sequence[tuple[str, int]]) -> Outcome:
        """Take the stake, ``split`` between the games it buys (``games.base.stake_split``)."""
        shares = tuple(Share(game, cents) for game, cents in split)
        amount = sum(s.amount_cents for s in shares)
        return self.send(Call("debit", reference, player, amount, self.game, shares))

    def credit(self, *, reference: str, player: str, amount_cents: int) -> Outcome:
        """Give the lot of the play ``reference`` (its debit confirmed)."""
        return self.send(Call("credit", reference, player, amount_cents, self.game))

    def cancel(self, *, reference: str, player: str, amount_cents: int) -> Outcome:
        """Cancel the debit ``reference`` of ``amount_cents`` (its play never dealt)."""
        return self.send(Call("cancel", reference, player, amount_cents, self.game))

    def settle_debit(
        self, *, reference: str, player: str, split: Sequence[tuple[str, int]]
    ) -> Confirmed | Refused | Cancelled | Unknown:
        """A play's debit, settled before anything else happens: :class:`Confirmed` (deal the
        unit), :class:`Refused` (not taken: answer the player), :class:`Cancelled` (its
        outcome stayed unknown, so it was cancelled: not taken), or :class:`Unknown` (neither
        the debit nor its cancel could be confirmed: the cancel must be sent again, with the
        same reference, until it is)."""
        outcome = self.debit(reference=reference, player=player, split=split)
        if not isinstance(outcome, Unknown):
            return outcome
        amount = sum(cents for _, cents in split)
        cancel = self.cancel(reference=reference, player=player, amount_cents=amount)
        if isinstance(cancel, Confirmed):
            return Cancelled(cancel.receipt)
        if isinstance(cancel, Refused):  # cannot be (its play was never credited): not known
            return Unknown(f"the cancel was refused: {cancel.message}", outcome.attempts)
        return cancel

    def send(self, call: Call) -> Outcome:
        """Send ``call`` until its outcome is known, at most ``attempts`` times."""
        body = call.body()
        reason = ""
        for attempt in range(1, self.attempts + 1):
            started = time.monotonic()
            outcome, wait = self._attempt(call, body, attempt)
            if self.observe is not None:
                label = type(outcome).__name__.lower()
                self.observe(call.kind, label, time.monotonic() - started)
            if not isinstance(outcome, Unknown):
                return outcome
            reason = outcome.reason
            if attempt < self.attempts:
                self.sleep(min(MAX_WAIT_S, wait or self.backoff_s * 2 ** (attempt - 1)))
        return Unknown(reason, self.attempts)

    def _attempt(self, call: Call, body: bytes, attempt: int) -> tuple[Outcome, float]:
        """One attempt: its outcome, and how long the wallet asks to wait (Retry-After)."""
        try:
            response = self._request("POST", call.path, body)
        except httpx.HTTPError as exc:
            return Unknown(f"{type(exc).__name__}: {_one_line(exc)}", attempt), 0.0
        if response.status_code in (200, 201):
            try:
                receipt = parse_receipt(call, response.content)
            except BadCall as exc:
                return Unknown(f"an answer not understood: {exc}", attempt), 0.0
            replayed = response.headers.get("idempotent-replayed") == "true"
            return Confirmed(receipt, replayed, attempt), 0.0
        refused = _refusal(response)
        if refused is not None:
            return refused, 0.0
        return Unknown(f"HTTP {response.status_code}", attempt), _retry_after(response)

    def _request(self, method: str, path: str, body: bytes) -> httpx.Response:
        url = self.url + path
        headers = self.signer.headers(method, url, body)
        headers["User-Agent"] = self.user_agent
        if body:
            headers["Content-Type"] = "application/json"
        request = httpx.Request(method, url, content=body, headers=headers,
                                extensions={"timeout": self.timeout})  # fmt: skip
        response = self.transport.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response

    # -- reading ------------------------------------------------------------------------------

    def _read(self, path: str) -> tuple[int, bytes]:
        """A signed GET, retried like a call while its answer is unknown; (status, body) of
        a 2xx, or raises :class:`PrintpipeError` in one line."""
        reason = ""
        for attempt in range(1, self.attempts + 1):
            wait = 0.0
            try:
                response = self._request("GET", path, b"")
            except httpx.HTTPError as exc:
                reason = f"{type(exc).__name__}: {_one_line(exc)}"
            else:
                if response.is_success:
                    return response.status_code, response.content
                refused = _refusal(response)
                if refused is not None:
                    raise PrintpipeError(
                        f"the wallet {self.url} refused GET {path} ({refused.status} "
                        f"{refused.kind}): {refused.message}"
                    )
                reason, wait = f"HTTP {response.status_code}", _retry_after(response)
            if attempt < self.attempts:
                self.sleep(min(MAX_WAIT_S, wait or self.backoff_s * 2 ** (attempt - 1)))
        raise PrintpipeError(f"the wallet {self.url} did not answer GET {path}: {reason}")

    def balance(self, *, player: str) -> int:
        """The player's balance at the operator, in cents."""
        _, body = self._read(f"/v1/players/{player}")
        try:
            data = strict_json(body)
        except BadCall as exc:
            raise PrintpipeError(f"the wallet's answer is not understood: {exc}") from None
        balance = data.get("balance_cents") if isinstance(data, dict) else None
        if type(balance) is not int or data.get("player") != player:
            raise PrintpipeError(f"the wallet's answer is not {player}'s balance")
        return balance

    def statement(self, *, day: str) -> Statement:
        """The wallet's statement of ``day`` (UTC): every call it recorded that day."""
        check_day(day)
        _, body = self._read(f"/v1/statements/{day}")
        try:
            return parse_statement(day, body)
        except BadCall as exc:
            raise PrintpipeError(f"the wallet's statement of {day}: {exc}") from None


def _refusal(response: httpx.Response) -> Refused | None:
    """A final refusal (a 4xx but 408 and 429), or None (the outcome is unknown)."""
    status = response.status_code
    if not 400 <= status < 500 or status in (408, 429):
        return None
    try:
        data: Any = strict_json(response.content)
    except BadCall:
        data = {}
    kind = data.get("error") if isinstance(data, dict) else None
    detail = data.get("detail") if isinstance(data, dict) else None
    if not isinstance(kind, str) or REFUSALS.get(kind, (0,))[0] != status:
        kind = "rejected"
    message = detail if isinstance(detail, str) else f"HTTP {status}"
    return Refused(kind, " ".join(message.split())[:300], status)


def _retry_after(response: httpx.Response) -> float:
    value = response.headers.get("retry-after", "")
    return float(value) if value.isdigit() else 0.0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or "no detail"
