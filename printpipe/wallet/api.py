"""The operator's wallet API: its calls, bodies, answers and refusals, for both sides.

The game server (``printpipe.play.operator_wallet``) writes each call's body with
:meth:`Call.body` and reads the answers with :func:`parse_receipt` and
:func:`parse_statement`; the reference wallet (``app.py``) reads the bodies with
:func:`parse_call` and writes the answers with :meth:`Receipt.as_json`.  So the two sides
cannot drift apart, and the OpenAPI document (``openapi.py``) describes these same shapes.

- ``POST /v1/debits``: take the stake; its ``split`` says how it divides between the game and
  the games it includes (``games.base.stake_split``: 0.97 EUR Golden Animals, 0.03 EUR Super
  Jackpot), the shares adding up to the amount;
- ``POST /v1/credits``: give the lot of a play whose debit was confirmed (same reference);
- ``POST /v1/cancels``: cancel the debit of a play that was never dealt: refunded if it was
  taken, and, if it was not (yet), recorded so that the debit is refused if it arrives later;
  refused once the play is credited;
- ``POST /v1/batch`` (optional for an operator): several of these calls in one request, each
  answered apart as it would have been alone (:func:`batch_body`, :func:`parse_batch`,
  :func:`batch_answer`, :func:`parse_batch_answer`): fewer requests, the same calls;
- ``GET /v1/players/{player}``: the balance; ``GET /v1/statements/{day}``: the day's calls.

Every call names a ``reference`` (the play's id), and is idempotent by (reference, call): the
same body again answers the first answer (200 and ``Idempotent-Replayed: true``), another body
under the reference is refused (422).  Amounts are integer cents, in euros.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from printpipe.errors import PrintpipeError

CURRENCY = "EUR"
KINDS = ("debit", "credit", "cancel")
PATHS = {"debit": "/v1/debits", "credit": "/v1/credits", "cancel": "/v1/cancels"}
BATCH_PATH = "/v1/batch"
BATCH_MOST = 256
"""Calls in one batch at most: a wallet that offers the batch takes up to this many, and
refuses more (413 ``too_many_calls``); the game server sends no more."""
BATCH_BODY_BYTES = 512 * 1024
"""A batch's body at most (256 of the largest calls fit: each at most about 1.2 KiB)."""
REFERENCE = re.compile(r"[A-Za-z0-9._:-]{8,64}")
REFERENCE_RULE = "8 to 64 of A-Z a-z 0-9 . _ : -"
PLAYER = re.compile(r"[A-Za-z0-9._@-]{1,64}")
"""A player as the game server names them (``printpipe.ledger.check_player``'s rule)."""
GAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}")
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
MAX_AMOUNT_CENTS = 10**11
"""One call moves at most a billion euros (a lot is at most 10,000 EUR)."""
REPLAYED = "Idempotent-Replayed"

REFUSALS: dict[str, tuple[int, str]] = {
    "bad_request": (400, "a malformed call (its body, reference, amount, split, day)"),
    "unauthorized": (401, "not signed by a trusted game server key, expired, or replayed"),
    "insufficient_funds": (402, "the balance does not cover the debit: nothing taken"),
    "no_such_player": (404, "no account of that player"),
    "cancelled": (409, "this reference's debit was cancelled: it is never taken"),
    "no_debit": (409, "no debit of this reference and player to credit (none, or cancelled)"),
    "already_credited": (409, "the play of this reference was credited: its debit stands"),
    "reference_reused": (422, "this reference was used for another call of the same kind"),
    "too_many_calls": (413, f"a batch of more than {BATCH_MOST} calls: none of them made"),
}
"""Every refusal the API answers (``error`` in the problem details): its status, and when.
A refusal is final: nothing was moved, and the same call would be refused again (but for
``insufficient_funds`` and ``no_such_player``, which a deposit may change).  Any other answer
(a 5xx, a timeout, a cut connection) leaves the call's outcome unknown: the caller asks again
with the same reference."""


class BadCall(PrintpipeError):
    """A body, path or answer that is not what the API says (``bad_request``)."""


@dataclass(frozen=True, slots=True)
class Share:
    """One game's part of a debit, in cents."""

    game: str
    amount_cents: int


@dataclass(frozen=True, slots=True)
class Call:
    """A debit, credit or cancel, as the game server sends it."""

    kind: str
    reference: str
    player: str
    amount_cents: int
    game: str
    split: tuple[Share, ...] = ()
    """A debit's division between games (empty for a credit or a cancel)."""

    @property
    def path(self) -> str:
        return PATHS[self.kind]

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "reference": self.reference,
            "player": self.player,
            "amount_cents": self.amount_cents,
            "currency": CURRENCY,
            "game": self.game,
        }
        if self.kind == "debit":
            data["split"] = [{"game": s.game, "amount_cents": s.amount_cents} for s in self.split]
        return data

    def body(self) -> bytes:
        """The body as sent: canonical JSON (keys sorted, no spaces), so that the same call
        is the same bytes on every attempt."""
        return canonical(self.as_json())


def canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise BadCall("the JSON has a key twice")
    return data


_STRICT = json.JSONDecoder(object_pairs_hook=_unique_keys)


def strict_json(body: bytes) -> Any:
    """UTF-8 JSON, no key twice, not nested past Python's recursion; else :class:`BadCall`."""
    try:
        return _STRICT.decode(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        if isinstance(exc, BadCall):
            raise
        raise BadCall("the body is not UTF-8 JSON") from None


def _amount(value: Any, what: str, *, zero: bool = False) -> int:
    low = 0 if zero else 1
    if type(value) is not int or not low <= value <= MAX_AMOUNT_CENTS:
        raise BadCall(f"{what} is an integer of cents from {low} to {MAX_AMOUNT_CENTS}")
    return value


def _text(data: dict[str, Any], name: str, rule: re.Pattern[str], said: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or rule.fullmatch(value) is None:
        raise BadCall(f"{name} is {said}")
    return value


def parse_call(kind: str, body: bytes) -> Call:
    """A call's body as the wallet receives it, checked whole (:class:`BadCall`)."""
    return call_of(kind, strict_json(body))


def call_of(kind: str, data: Any) -> Call:
    """A call's body, decoded (alone, or one of a batch's), checked whole (:class:`BadCall`)."""
    expected = {"reference", "player", "amount_cents", "currency", "game"}
    if kind == "debit":
        expected.add("split")
    if not isinstance(data, dict) or set(data) != expected:
        raise BadCall(f"a {kind}'s body has exactly {', '.join(sorted(expected))}")
    if data["currency"] != CURRENCY:
        raise BadCall(f"the currency is {CURRENCY}")
    reference = _text(data, "reference", REFERENCE, REFERENCE_RULE)
    player = _text(data, "player", PLAYER, "1 to 64 of A-Z a-z 0-9 . _ @ -")
    game = _text(data, "game", GAME, "a game's name")
    amount = _amount(data["amount_cents"], "amount_cents")
    split: tuple[Share, ...] = ()
    if kind == "debit":
        shares = data["split"]
        if not isinstance(shares, list) or not 1 <= len(shares) <= 8:
            raise BadCall("split is a list of 1 to 8 shares")
        parsed = []
        for share in shares:
            if not isinstance(share, dict) or set(share) != {"game", "amount_cents"}:
                raise BadCall('a share is {"game": ..., "amount_cents": ...}')
            name = _text(share, "game", GAME, "a game's name")
            parsed.append(Share(name, _amount(share["amount_cents"], "a share", zero=True)))
        split = tuple(parsed)
        if sum(s.amount_cents for s in split) != amount:
            raise BadCall("the split's shares add up to amount_cents")
        if len({s.game for s in split}) != len(split):
            raise BadCall("a game has one share")
    return Call(kind, reference, player, amount, game, split)


@dataclass(frozen=True, slots=True)
class Receipt:
    """A confirmed call: what moved, and the balance after it."""

    kind: str
    reference: str
    player: str
    amount_cents: int
    balance_cents: int
    at: str
    """When the wallet recorded it (UTC, ISO 8601, ``Z``)."""
    refunded: bool | None = None
    """A cancel: whether a debit was taken and given back (False: none had been taken)."""

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "reference": self.reference,
            "player": self.player,
            "amount_cents": self.amount_cents,
            "currency": CURRENCY,
            "balance_cents": self.balance_cents,
            "at": self.at,
        }
        if self.kind == "cancel":
            data["refunded"] = bool(self.refunded)
        return data


def parse_receipt(call: Call, body: bytes) -> Receipt:
    """The answer to ``call``, checked: it must be the receipt of this very call (kind,
    reference, player, amount), else :class:`BadCall` (an answer not understood)."""
    return receipt_of(call, strict_json(body))


def receipt_of(call: Call, data: Any) -> Receipt:
    """:func:`parse_receipt` of an answer decoded (alone, or one of a batch's)."""
    if not isinstance(data, dict):
        raise BadCall("the answer is not a JSON object")
    balance = data.get("balance_cents")
    if type(balance) is not int or balance < 0:
        raise BadCall("the answer has no balance_cents")
    mine = (call.kind, call.reference, call.player, call.amount_cents, CURRENCY)
    theirs = tuple(data.get(k) for k in ("kind", "reference", "player", "amount_cents", "currency"))
    if theirs != mine:
        raise BadCall(f"the answer is not the receipt of this {call.kind}")
    at = data.get("at")
    if not isinstance(at, str):
        raise BadCall("the answer has no at")
    refunded = data.get("refunded")
    if call.kind == "cancel" and not isinstance(refunded, bool):
        raise BadCall("a cancel's answer says whether it refunded")
    return Receipt(call.kind, call.reference, call.player, call.amount_cents, balance, at,
                   refunded if call.kind == "cancel" else None)  # fmt: skip


# -- the batch: several calls in one request, each answered apart ------------------------------


def batch_body(calls: Sequence[Call]) -> bytes:
    """A batch's body as the game server sends it: ``{"calls": [{"kind", "body"}, ...]}``,
    each ``body`` exactly the call's own (:meth:`Call.as_json`), canonical like a call's."""
    return canonical({"calls": [{"kind": c.kind, "body": c.as_json()} for c in calls]})


def parse_batch(body: bytes) -> list[Call | BadCall]:
    """A batch as the wallet receives it: each call, or why its body is not one (answered
    400 alone, as it would be alone).  :class:`BadCall` if the batch itself is malformed;
    :class:`TooManyCalls` past :data:`BATCH_MOST`."""
    data = strict_json(body)
    items = data.get("calls") if isinstance(data, dict) and set(data) == {"calls"} else None
    if not isinstance(items, list) or not items:
        raise BadCall('a batch is {"calls": [{"kind": ..., "body": {...}}, ...]}, 1 call or more')
    if len(items) > BATCH_MOST:
        raise TooManyCalls(f"a batch carries at most {BATCH_MOST} calls, not {len(items)}")
    calls: list[Call | BadCall] = []
    for item in items:
        if not isinstance(item, dict) or set(item) != {"kind", "body"}:
            raise BadCall('each call of a batch is {"kind": ..., "body": {...}}')
        if item["kind"] not in KINDS:
            raise BadCall(f"a call's kind is one of {', '.join(KINDS)}")
        try:
            calls.append(call_of(str(item["kind"]), item["body"]))
        except BadCall as exc:
            calls.append(exc)
    return calls


class TooManyCalls(BadCall):
    """A batch past :data:`BATCH_MOST` calls (``too_many_calls``, 413)."""


Answer = tuple[int, dict[str, Any], bool]
"""One call's answer in a batch: its status, its body (a receipt, or problem details), and
whether it was replayed (the single call's ``Idempotent-Replayed: true``)."""


def batch_answer(answers: Sequence[Answer]) -> dict[str, Any]:
    """A batch's answer (200): ``{"results": [{"status", "body", "replayed"}, ...]}``, one a
    call, in the order asked."""
    return {"results": [{"status": status, "body": body, "replayed": replayed}
                        for status, body, replayed in answers]}  # fmt: skip


def parse_batch_answer(count: int, body: bytes) -> list[Answer]:
    """A batch's answer as the game server reads it: ``count`` results, each well formed;
    else :class:`BadCall` (not understood: every call's outcome is unknown)."""
    data = strict_json(body)
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or len(results) != count:
        raise BadCall(f"the answer does not carry the {count} calls' results")
    answers = []
    for result in results:
        if not isinstance(result, dict):
            raise BadCall("a batch's result is an object")
        status, answer, replayed = (result.get(k) for k in ("status", "body", "replayed"))
        if type(status) is not int or not isinstance(answer, dict) or type(replayed) is not bool:
            raise BadCall("a batch's result has a status, a body and replayed")
        answers.append((status, answer, replayed))
    return answers


@dataclass(frozen=True, slots=True)
class StatementEntry:
    """One call the wallet recorded: a cancel's ``amount_cents`` is its debit's, and
    ``refunded`` says whether it was given back."""

    kind: str
    reference: str
    player: str
    amount_cents: int
    at: str
    split: tuple[Share, ...] = ()
    refunded: bool | None = None

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "reference": self.reference,
            "player": self.player,
            "amount_cents": self.amount_cents,
            "at": self.at,
        }
        if self.kind == "debit":
            data["split"] = [{"game": s.game, "amount_cents": s.amount_cents} for s in self.split]
        if self.kind == "cancel":
            data["refunded"] = bool(self.refunded)
        return data


@dataclass(frozen=True)
class Statement:
    """A day's calls (UTC, by the time the wallet recorded them), in the order recorded."""

    day: str
    entries: tuple[StatementEntry, ...] = field(default_factory=tuple)

    def totals(self) -> dict[str, Any]:
        """Per kind, how many and how much (a cancel: what it refunded); per game, the shares
        of the day's debits."""
        totals: dict[str, Any] = {
            kind: {"count": 0, "amount_cents": 0} for kind in ("debits", "credits", "cancels")
        }
        shares: dict[str, int] = {}
        for entry in self.entries:
            total = totals[entry.kind + "s"]
            total["count"] += 1
            if entry.kind != "cancel" or entry.refunded:
                total["amount_cents"] += entry.amount_cents
            for share in entry.split:
                shares[share.game] = shares.get(share.game, 0) + share.amount_cents
        totals["shares"] = dict(sorted(shares.items()))
        return totals

    def as_json(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "currency": CURRENCY,
            "entries": [entry.as_json() for entry in self.entries],
            "totals": self.totals(),
        }


def parse_statement(day: str, body: bytes) -> Statement:
    """A statement as the game server reads it (:class:`BadCall` if it is not one of
    ``day``, its entries well formed and its totals theirs)."""
    data = strict_json(body)
    if not isinstance(data, dict) or data.get("day") != day or data.get("currency") != CURRENCY:
        raise BadCall(f"the answer is not the statement of {day}")
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise BadCall("a statement lists its entries")
    entries = []
    for item in raw:
        if not isinstance(item, dict) or item.get("kind") not in KINDS:
            raise BadCall("a statement's entry names its kind")
        kind = str(item["kind"])
        split: tuple[Share, ...] = ()
        if kind == "debit":
            shares = item.get("split")
            if not isinstance(shares, list) or not all(isinstance(s, dict) for s in shares):
                raise BadCall("a debit's entry carries its split")
            split = tuple(
                Share(str(s.get("game")), _amount(s.get("amount_cents"), "a share", zero=True))
                for s in shares
            )
        refunded = item.get("refunded") if kind == "cancel" else None
        if kind == "cancel" and not isinstance(refunded, bool):
            raise BadCall("a cancel's entry says whether it refunded")
        reference, player, at = item.get("reference"), item.get("player"), item.get("at")
        if not all(isinstance(v, str) for v in (reference, player, at)):
            raise BadCall("a statement's entry names its reference, player and time")
        entries.append(
            StatementEntry(
                kind,
                str(reference),
                str(player),
                _amount(item.get("amount_cents"), "an entry's amount"),
                str(at),
                split,
                refunded,
            )
        )
    statement = Statement(day, tuple(entries))
    if data.get("totals") != statement.totals():
        raise BadCall(f"the statement of {day}: its totals are not its entries'")
    return statement


def check_day(text: str) -> str:
    """A day as the API names it, ``YYYY-MM-DD``, a real date (:class:`BadCall`)."""
    import datetime as dt

    if DAY.fullmatch(text) is None:
        raise BadCall("a day is YYYY-MM-DD")
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise BadCall(f"{text} is not a date") from None
    return text


# -- a call's outcome, as the game server classifies the answers ------------------------------


@dataclass(frozen=True, slots=True)
class Confirmed:
    """The call is done (now, or earlier under its reference: ``replayed``)."""

    receipt: Receipt
    replayed: bool = False
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class Refused:
    """The wallet refused the call: nothing was moved.  ``kind``: one of
    ``printpipe.wallet.api.REFUSALS``, or ``rejected`` (another 4xx)."""

    kind: str
    message: str
    status: int


@dataclass(frozen=True, slots=True)
class Unknown:
    """No answer understood after ``attempts`` attempts: the call may have been made."""

    reason: str
    attempts: int


Outcome = Confirmed | Refused | Unknown


@dataclass(frozen=True, slots=True)
class Cancelled:
    """A debit whose outcome stayed unknown, then cancelled: the stake is not (or no longer)
    taken.  ``receipt``: the cancel's (``refunded``: the debit had been made)."""

    receipt: Receipt


Settled = Confirmed | Refused | Cancelled | Unknown
"""A play's debit, settled before its unit is dealt (``Wallet.debit``)."""
