"""The validation policy, pure: what a scanned code is answered, and what is counted.

:func:`decide` takes the scanned code, the ticket's row, the asking terminal's counter, the
settings and the time, and returns the answer (:class:`Answer`, exactly the spec's strings)
and whether the failure counts; nothing here reads a database or a clock, so the policy is
tested alone, by example and by property, and :mod:`printpipe.ledger.book` only applies it.
The contract (answers, their order, lock-out) is ``docs/validation.md``.
"""

from __future__ import annotations

import hmac
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from printpipe.ids import SPECIMEN_PACK, TicketId, parse_inventory_code, parse_validation_code
from printpipe.ledger.key import LedgerKey

DEFAULT_RETAILER_LIMIT_EUR = 150
DEFAULT_MAX_VIRN_FAILURES = 5
DEFAULT_MAX_TERMINAL_VIRN_FAILURES = 3
DEFAULT_TERMINAL_WINDOW_HOURS = 24
DEFAULT_DAILY_STAKE_LIMIT_EUR = 100
LOCK_MIN_TERMINALS = 2
"""A ticket locks only on wrong VIRNs from this many terminals: one terminal cannot lock a
ticket (it is throttled first, and its own failures never add up to a lock)."""
PACK_STATES = ("issued", "activated", "settled")
PAYABLE_STATES = ("activated", "settled")
TERMINAL_ROLES = ("retailer", "office", "platform")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


INSTANT_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def format_instant(moment: datetime) -> str:
    """A play's or a wallet entry's time, to the microsecond, from the ledger's UTC clock:
    ``2026-12-02T06:36:22.123456Z`` (the reference wallet writes its own records' times with it
    too, its clock's time turned to UTC first: ``printpipe.wallet.store.stamp``)."""
    return moment.strftime(INSTANT_FORMAT)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def now() -> str:
    """The current UTC time as the ledger writes it: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return format_time(utc_now())


def pack_key(game_number: int, pack: int) -> int:
    return game_number * 10**6 + pack


# -- the policy: pure ----------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One validation or claim answer: ``text`` is exactly the spec's string."""

    outcome: str
    text: str
    serial: str | None = None
    amount_eur: int | None = None
    pack_state: str | None = None
    paid_at: str | None = None
    terminal: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """An answer about a real ticket that refuses nothing (exit status 0)."""
        return self.outcome in ("WIN", "WIN_AT_LOTTERY", "NO_WIN", "PACK_STATE", "PAID")

    def as_json(self) -> dict[str, Any]:
        data = {k: getattr(self, k) for k in _ANSWER_FIELDS if getattr(self, k) is not None}
        return {**data, **self.extra, "ok": self.ok}


_ANSWER_FIELDS = ("outcome", "text", "serial", "amount_eur", "pack_state", "paid_at", "terminal")
INVALID = Answer("INVALID_CODE", "INVALID CODE")


def foreign_pack(serial: str) -> Answer:
    """A terminal asked about a ticket of a pack not shipped to its retailer: refused before
    anything about the ticket is looked at or counted (the service answers 403)."""
    return Answer("NOT_YOUR_PACK", "PACK OF ANOTHER RETAILER", serial)


@dataclass(frozen=True, slots=True)
class PackScope:
    """The packs a caller acts on: one retailer's (those shipped to it), or every pack, which
    is the lottery office's reach alone (it also pays above the retailer limit).

    Every call that acts on a pack or a ticket takes one, with no default: a caller without a
    retailer is never taken to mean every pack.  Made by :meth:`office` or :meth:`of_retailer`
    (a terminal's: :meth:`printpipe.ledger.terminals.Terminal.pack_scope`)."""

    retailer: str | None
    every_pack: bool = False

    def __post_init__(self) -> None:
        if self.every_pack != (self.retailer is None):
            raise ValueError("a pack scope is one retailer's or the office's, not both nor none")

    @classmethod
    def office(cls) -> PackScope:
        return cls(None, every_pack=True)

    @classmethod
    def of_retailer(cls, retailer: str) -> PackScope:
        if not retailer:
            raise ValueError("a retailer's pack scope needs the retailer")
        return cls(retailer)

    @property
    def pays_above_limit(self) -> bool:
        """Whether a win above the retailer limit is paid here (the office's)."""
        return self.every_pack

    def covers(self, pack_retailer: str | None) -> bool:
        """Whether a pack shipped to ``pack_retailer`` (None: not shipped) is in scope."""
        return self.every_pack or (pack_retailer is not None and pack_retailer == self.retailer)

    def __str__(self) -> str:
        return "every pack (the office)" if self.every_pack else f"retailer {self.retailer}"


@dataclass(frozen=True)
class Settings:
    retailer_limit_eur: int = DEFAULT_RETAILER_LIMIT_EUR
    max_virn_failures: int = DEFAULT_MAX_VIRN_FAILURES
    max_terminal_virn_failures: int = DEFAULT_MAX_TERMINAL_VIRN_FAILURES
    terminal_window_hours: int = DEFAULT_TERMINAL_WINDOW_HOURS
    daily_stake_limit_eur: int = DEFAULT_DAILY_STAKE_LIMIT_EUR
    """Responsible play: what a player of an online game may stake in a day (UTC)."""

    @property
    def terminal_window(self) -> timedelta:
        return timedelta(hours=self.terminal_window_hours)

    def describe(self) -> str:
        return (
            f"retailer limit {self.retailer_limit_eur} EUR; "
            f"lock after {self.max_virn_failures} wrong validation numbers on a ticket "
            f"(from {LOCK_MIN_TERMINALS} terminals or more); a terminal is throttled after "
            f"{self.max_terminal_virn_failures} wrong validation numbers in "
            f"{self.terminal_window_hours} h; an online player stakes at most "
            f"{self.daily_stake_limit_eur} EUR a day"
        )


SETTING_NAMES = tuple(Settings.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class ScannedCode:
    """What a scanned code says before anything is looked up; ``virn_hmac`` is the VIRN's
    HMAC under the ledger key (:meth:`LedgerKey.virn_hmac`), what the ledger compares."""

    ticket: TicketId
    virn: int | None  # None for the inventory code
    virn_hmac: bytes | None = None

    def keyed(self, key: LedgerKey) -> ScannedCode:
        if self.virn is None:
            return self
        return ScannedCode(self.ticket, self.virn, key.virn_hmac(self.ticket, self.virn))


def read_code(code: str) -> ScannedCode | None:
    """A scanned code in one of its printed forms, check digits verified, or None (answer
    ``INVALID CODE``): see :func:`printpipe.ids.parse_validation_code`."""
    parsed = parse_validation_code(code)
    if parsed is not None:
        return ScannedCode(parsed.ticket_id, parsed.virn)
    ticket = parse_inventory_code(code)
    return ScannedCode(ticket, None) if ticket is not None else None


@dataclass(frozen=True, slots=True)
class TicketRow:
    """What the ledger holds about one ticket, as :func:`decide` reads it."""

    virn_hmac: bytes
    prize_eur: int
    failures: int = 0  # wrong VIRNs counted against it, from every terminal
    failing_terminals: int = 0  # how many terminals sent them
    paid_at: str | None = None
    paid_by: str | None = None
    pack_state: str = "issued"


@dataclass(frozen=True, slots=True)
class TerminalCounter:
    """A terminal's wrong VIRNs in its current window (which starts at its first failure)."""

    failures: int = 0
    window_start: datetime | None = None

    def current(self, at: datetime, settings: Settings) -> TerminalCounter:
        """The counter as it stands at ``at``: an expired window counts nothing."""
        if self.window_start is None or at >= self.window_start + settings.terminal_window:
            return TerminalCounter()
        return self

    def throttled_until(self, at: datetime, settings: Settings) -> datetime | None:
        counter = self.current(at, settings)
        if counter.window_start is None or counter.failures < settings.max_terminal_virn_failures:
            return None
        return counter.window_start + settings.terminal_window

    def after_failure(self, at: datetime, settings: Settings) -> TerminalCounter:
        counter = self.current(at, settings)
        return TerminalCounter(counter.failures + 1, counter.window_start or at)


@dataclass(frozen=True, slots=True)
class Decision:
    """An answer, and what it changes: a wrong VIRN counted (against the ticket and the
    terminal, whose new counter this is) and whether that failure throttles the terminal."""

    answer: Answer
    terminal_after: TerminalCounter | None = None
    throttles_terminal: bool = False

    @property
    def counts_failure(self) -> bool:
        return self.terminal_after is not None


def is_locked(row: TicketRow, settings: Settings) -> bool:
    return (
        row.failures >= settings.max_virn_failures and row.failing_terminals >= LOCK_MIN_TERMINALS
    )


def decide(
    scanned: ScannedCode,
    row: TicketRow | None,
    terminal: TerminalCounter,
    settings: Settings,
    *,
    at: datetime,
) -> Decision:
    """The answer to ``scanned`` from a terminal whose counter is ``terminal``, at time ``at``.

    Pure: the order of the checks is the policy (``docs/validation.md``).  A specimen is
    refused before anything else; the inventory code answers only the pack state.  For a
    validation code: a throttled terminal is told nothing about the ticket; a ticket whose pack
    is not payable answers so without its VIRN being checked or counted (an unsold ticket
    cannot be locked); a locked ticket says nothing more; a wrong VIRN is counted against the
    ticket and the terminal before anything else about the ticket is said.  The VIRN is
    compared as its HMAC, in constant time.
    """
    ticket = scanned.ticket
    if ticket.pack == SPECIMEN_PACK:
        return Decision(Answer("SPECIMEN", "SPECIMEN, NOT VALID", ticket.serial))
    if scanned.virn is None:
        if row is None:
            return Decision(Answer("UNKNOWN_TICKET", "UNKNOWN TICKET", ticket.serial))
        state = row.pack_state
        return Decision(
            Answer("PACK_STATE", f"PACK {state.upper()}", ticket.serial, pack_state=state)
        )
    until = terminal.throttled_until(at, settings)
    if until is not None:
        text = f"TERMINAL THROTTLED {format_time(until)}"
        return Decision(Answer("TERMINAL_THROTTLED", text, extra={"until": format_time(until)}))
    if row is None:
        return Decision(Answer("UNKNOWN_TICKET", "UNKNOWN TICKET", ticket.serial))
    if row.pack_state not in PAYABLE_STATES:
        return Decision(Answer("PACK_NOT_ACTIVATED", "PACK NOT ACTIVATED", ticket.serial))
    if is_locked(row, settings):
        return Decision(Answer("LOCKED", "LOCKED", ticket.serial))
    if scanned.virn_hmac is None or not hmac.compare_digest(scanned.virn_hmac, row.virn_hmac):
        after = terminal.after_failure(at, settings)
        return Decision(
            Answer("WRONG_VALIDATION_NUMBER", "WRONG VALIDATION NUMBER", ticket.serial),
            terminal_after=after,
            throttles_terminal=after.failures == settings.max_terminal_virn_failures,
        )
    if row.paid_at is not None:
        return Decision(
            Answer(
                "ALREADY_PAID",
                f"ALREADY PAID {row.paid_at} {row.paid_by}",
                ticket.serial,
                paid_at=row.paid_at,
                terminal=row.paid_by,
            )
        )
    prize = row.prize_eur
    if prize == 0:
        return Decision(Answer("NO_WIN", "NO WIN", ticket.serial, amount_eur=0))
    if prize <= settings.retailer_limit_eur:
        return Decision(Answer("WIN", f"WIN {prize}", ticket.serial, amount_eur=prize))
    text = f"WIN {prize} - claim at the lottery"
    return Decision(Answer("WIN_AT_LOTTERY", text, ticket.serial, amount_eur=prize))


def default_settings_rows() -> list[tuple[str, str]]:
    return [(key, str(value)) for key, value in asdict(Settings()).items()]
