"""The game server's client of the operator's wallet (``docs/wallet-api.md``).

Each call (debit, credit, cancel) is signed with the game server's own Ed25519 key (the
validation service's RFC 9421 profile, ``printpipe.service.signatures``), sent with a timeout,
and its outcome classified, never guessed:

- :class:`Confirmed`: the wallet answered the call's receipt (2xx): it is done, once;
- :class:`Refused`: the wallet refused it (a 4xx but 408 and 429): nothing was moved, and
  asking again changes nothing; only on a call's first attempt, or one that follows answers
  (a refusal after an attempt left unanswered is no proof that attempt made nothing: a 401
  or a proxy's 4xx refuses the request, not the call, so the outcome stays unknown);
- :class:`Unknown`: no answer understood after every attempt (a timeout, a cut connection, a
  5xx, 408, 429, a 2xx that is not this call's receipt): the call may or may not have been
  made.

An attempt whose outcome is unknown is sent again with the same body, so the same reference
(a new nonce and signature each time): the wallet makes a call once per reference, so a retry
never moves money twice.  :meth:`WalletClient.settle_debit` is the order a play needs before
its unit is dealt: the debit confirmed, or, if its outcome stays unknown, cancelled (a cancel
that finds no debit is recorded by the wallet, which then refuses the debit if it arrives
late), so that the player is answered only once it is known whether the stake was taken.

Several calls at once (:meth:`WalletClient.send_many`, the outbox's debits of a batch of
plays and its credits and cancels) go in one request, ``POST /v1/batch``, each answered apart
and classified as above; a batch not answered (a timeout, a cut connection, a 5xx) leaves
every call in it unknown, and is sent again with the same calls, so the same references.  A
wallet without the batch (404 or 405) is told once in the log and sent one request a call from
then on (the calls then at once, from a pool of threads).

It is the ``Wallet`` protocol (``printpipe.ledger.wallet``) over HTTP, with its batches:
``printpipe play --wallet URL``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe import __version__
from printpipe.errors import PrintpipeError, seconds_from_environment
from printpipe.service.signatures import RequestSigner
from printpipe.wallet.api import (
    BATCH_MOST,
    BATCH_PATH,
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
    batch_body,
    check_day,
    parse_batch_answer,
    parse_statement,
    receipt_of,
    strict_json,
)

__all__ = ["Cancelled", "Confirmed", "Outcome", "Refused", "Unknown", "WalletClient"]

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_ATTEMPTS = 4
DEFAULT_BACKOFF_S = 0.2
CONNECTIONS = 64
"""Keep-alive connections to the wallet kept open (the outbox's threads and the debits of a
batch, at once)."""
MAX_WAIT_ENV = "PRINTPIPE_WALLET_MAX_WAIT_S"
MAX_WAIT_S = seconds_from_environment(MAX_WAIT_ENV, 2.0)
"""The longest pause between two attempts of a call (a Retry-After longer than this is cut to
it): 2 s.  ``PRINTPIPE_WALLET_MAX_WAIT_S`` changes the game server's (the reliability tests:
a wallet answering 503 with Retry-After: 1 to one call in seven must not hold a storm a second
each time); a client made in process takes ``max_wait_s``."""
ALONE_THREADS = 32
"""Calls in flight at once when a wallet without the batch is sent one request a call."""

log = logging.getLogger("printpipe.play")


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
        max_wait_s: float = MAX_WAIT_S,
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
        self.max_wait_s = max_wait_s
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
        self.batches = True
        """Whether the wallet takes batches: until it answers one 404 or 405."""
        self._alone: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._alone is not None:
            self._alone.shutdown(wait=True)
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

    def send(self, call: Call, *, unanswered: bool = False) -> Outcome:
        """Send ``call`` until its outcome is known, at most ``attempts`` times.
        ``unanswered``: an earlier request (a batch's) carried it and went unanswered."""
        body = call.body()
        reason = ""
        for attempt in range(1, self.attempts + 1):
            started = time.monotonic()
            outcome, wait = self._attempt(call, body, attempt)
            if unanswered or attempt > 1:  # every attempt before this one left unanswered
                outcome = _after_unanswered(outcome, attempt)
            if self.observe is not None:
                label = type(outcome).__name__.lower()
                self.observe(call.kind, label, time.monotonic() - started)
            if not isinstance(outcome, Unknown):
                return outcome
            reason = outcome.reason
            if attempt < self.attempts:
                self.sleep(self._pause(attempt, wait))
        return Unknown(reason, self.attempts)

    def _pause(self, attempt: int, retry_after: float) -> float:
        """The pause after the unanswered ``attempt``: the wallet's Retry-After, else the
        backoff (doubling from ``backoff_s``), at most ``max_wait_s``."""
        return min(self.max_wait_s, retry_after or self.backoff_s * 2 ** (attempt - 1))

    def _attempt(self, call: Call, body: bytes, attempt: int) -> tuple[Outcome, float]:
        """One attempt: its outcome, and how long the wallet asks to wait (Retry-After)."""
        try:
            response = self._request("POST", call.path, body)
        except httpx.HTTPError as exc:
            return Unknown(f"{type(exc).__name__}: {_one_line(exc)}", attempt), 0.0
        replayed = response.headers.get("idempotent-replayed") == "true"
        outcome = _classified(call, response.status_code, response.content, replayed, attempt)
        wait = _retry_after(response) if isinstance(outcome, Unknown) else 0.0
        return outcome, wait

    # -- several calls at once ----------------------------------------------------------------

    def debit_many(
        self, debits: Sequence[tuple[str, str, Sequence[tuple[str, int]]]]
    ) -> list[Outcome]:
        """:meth:`debit` of each (reference, player, split), in batches: each one's outcome."""
        calls = []
        for reference, player, split in debits:
            shares = tuple(Share(game, cents) for game, cents in split)
            amount = sum(s.amount_cents for s in shares)
            calls.append(Call("debit", reference, player, amount, self.game, shares))
        return self.send_many(calls)

    def credit_or_cancel_many(self, calls: Sequence[tuple[str, str, str, int]]) -> list[Outcome]:
        """:meth:`credit` or :meth:`cancel` of each (kind, reference, player, amount), in
        batches: each one's outcome."""
        return self.send_many([Call(kind, reference, player, amount, self.game)
                               for kind, reference, player, amount in calls])  # fmt: skip

    def send_many(self, calls: Sequence[Call]) -> list[Outcome]:
        """Each call sent until its outcome is known, at most ``attempts`` times, in batches
        of at most :data:`~printpipe.wallet.api.BATCH_MOST` (one request each); one request a
        call, at once, to a wallet without the batch.  Each one's outcome, in order."""
        outcomes: list[Outcome] = []
        for start in range(0, len(calls), BATCH_MOST):
            outcomes += self._send_batch(calls[start : start + BATCH_MOST])
        return outcomes

    def _send_batch(self, calls: Sequence[Call]) -> list[Outcome]:
        """At most :data:`BATCH_MOST` calls: the batch sent with the calls whose outcome is
        still unknown (the same calls, so the same body, while none is known), each attempt
        observed for each call it carried."""
        outcomes: list[Outcome | None] = [None] * len(calls)
        reasons = [""] * len(calls)
        for attempt in range(1, self.attempts + 1):
            todo = [n for n, outcome in enumerate(outcomes) if outcome is None]
            if not self.batches:
                return self._alone_each(calls, outcomes, unanswered=attempt > 1)
            started = time.monotonic()
            answered, wait = self._attempt_batch([calls[n] for n in todo], attempt)
            if answered is None:  # no batch at this wallet: these calls one by one
                return self._alone_each(calls, outcomes, unanswered=attempt > 1)
            seconds = time.monotonic() - started
            for n, outcome in zip(todo, answered, strict=True):
                if attempt > 1:  # a call still to do: each attempt before left it unanswered
                    outcome = _after_unanswered(outcome, attempt)
                if self.observe is not None:
                    self.observe(calls[n].kind, type(outcome).__name__.lower(), seconds)
                if isinstance(outcome, Unknown):
                    reasons[n] = outcome.reason
                else:
                    outcomes[n] = outcome
            if all(outcome is not None for outcome in outcomes):
                break
            if attempt < self.attempts:
                self.sleep(self._pause(attempt, wait))
        return [outcome if outcome is not None else Unknown(reason, self.attempts)
                for outcome, reason in zip(outcomes, reasons, strict=True)]  # fmt: skip

    def _alone_each(
        self, calls: Sequence[Call], outcomes: list[Outcome | None], *, unanswered: bool
    ) -> list[Outcome]:
        """The calls whose outcome is not known yet, sent one request each, at once;
        ``unanswered``: a batch that carried them went unanswered (:meth:`send`'s)."""
        todo = [n for n, outcome in enumerate(outcomes) if outcome is None]
        with self._lock:
            if self._alone is None:
                self._alone = ThreadPoolExecutor(ALONE_THREADS, thread_name_prefix="wallet-call")
        sent = self._alone.map(functools.partial(self.send, unanswered=unanswered),
                               [calls[n] for n in todo])  # fmt: skip
        for n, outcome in zip(todo, sent, strict=True):
            outcomes[n] = outcome
        return [outcome for outcome in outcomes if outcome is not None]

    def _attempt_batch(
        self, calls: Sequence[Call], attempt: int
    ) -> tuple[list[Outcome] | None, float]:
        """One attempt of a batch: each call's outcome (None: the wallet has no batch), and
        how long the wallet asks to wait."""
        try:
            response = self._request("POST", BATCH_PATH, batch_body(calls))
        except httpx.HTTPError as exc:
            unknown = Unknown(f"{type(exc).__name__}: {_one_line(exc)}", attempt)
            return [unknown] * len(calls), 0.0
        status = response.status_code
        if status in (404, 405):
            with self._lock:
                if self.batches:
                    self.batches = False
                    log.warning("the wallet %s has no batch call (POST %s answered %d): "
                                "one request a call from now on", self.url, BATCH_PATH,
                                status)  # fmt: skip
            return None, 0.0
        if status == 200:
            try:
                answers = parse_batch_answer(len(calls), response.content)
            except BadCall as exc:
                unknown = Unknown(f"a batch's answer not understood: {exc}", attempt)
                return [unknown] * len(calls), 0.0
            return [_classified_answer(call, answer, attempt)
                    for call, answer in zip(calls, answers, strict=True)], 0.0  # fmt: skip
        refused = _refusal(response)
        if refused is not None:  # the batch refused whole (unsigned, malformed): each call
            return [refused] * len(calls), 0.0
        unknown = Unknown(f"HTTP {status}", attempt)
        return [unknown] * len(calls), _retry_after(response)

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
                self.sleep(self._pause(attempt, wait))
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


def _classified(call: Call, status: int, content: bytes, replayed: bool, attempt: int) -> Outcome:
    """The outcome of ``call`` answered ``status`` and ``content`` (alone)."""
    try:
        data: Any = strict_json(content)
    except BadCall as exc:
        if status in (200, 201):
            return Unknown(f"an answer not understood: {exc}", attempt)
        data = {}
    return _classified_answer(call, (status, data, replayed), attempt)


def _classified_answer(call: Call, answer: tuple[int, Any, bool], attempt: int) -> Outcome:
    """The outcome of ``call`` answered (status, body decoded, replayed): alone or in a
    batch, the same rules."""
    status, data, replayed = answer
    if status in (200, 201):
        try:
            receipt = receipt_of(call, data)
        except BadCall as exc:
            return Unknown(f"an answer not understood: {exc}", attempt)
        return Confirmed(receipt, replayed, attempt)
    refused = _refusal_of(status, data)
    if refused is not None:
        return refused
    return Unknown(f"HTTP {status}", attempt)


def _after_unanswered(outcome: Outcome, attempt: int) -> Outcome:
    """``outcome`` of an attempt that follows one left unanswered: a refusal then is no proof
    that the earlier attempt made nothing (a 401, a 413 or a proxy's 4xx refuses the request,
    not the call, and a call's own refusal may have overtaken the earlier attempt, still on
    its way): the outcome stays unknown (a debit is then cancelled, which also refuses that
    earlier attempt if it arrives later)."""
    if not isinstance(outcome, Refused):
        return outcome
    return Unknown(f"refused after an attempt left unanswered ({outcome.status} "
                   f"{outcome.kind}): {outcome.message}", attempt)  # fmt: skip


def _refusal(response: httpx.Response) -> Refused | None:
    """A final refusal (a 4xx but 408 and 429), or None (the outcome is unknown)."""
    try:
        data: Any = strict_json(response.content)
    except BadCall:
        data = {}
    return _refusal_of(response.status_code, data)


def _refusal_of(status: int, data: Any) -> Refused | None:
    """:func:`_refusal` of a status and its body decoded."""
    if not 400 <= status < 500 or status in (408, 429):
        return None
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
