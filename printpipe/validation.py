"""The lottery's validation ledger: import manifests, pack states, validate, claim, audit log.

The policy is one pure function, :func:`decide` (scanned code + the ticket's row + the asking
terminal's counter + settings + the time -> answer and what to count); :class:`Ledger` wraps it
in transactions on either database (``printpipe.ledger_store``: one SQLite file by default, or
PostgreSQL).  Every input is parsed before a transaction begins (``printpipe.inputs``,
``printpipe.ids``).  The contract (answers, code forms, lock-out, terminal ids, the schema, file
modes) is ``docs/validation.md``; the network service on top is ``docs/validation-service.md``.

What the ledger holds is safe to copy: each VIRN only as an HMAC under the ledger key, which
lives in the keys folder (``printpipe.ledger_key``), so a copy of the database claims nothing;
the audit log is hash-chained (``printpipe.audit_chain``) and :meth:`Ledger.verify_log` names
the first entry that was edited, inserted or deleted.  A ticket is paid at most once by the
database itself: ``payments`` has the ticket as its primary key and the payment is written by
one ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` that checks and writes.

For the service, the same transactions also admit a signed request (its nonce, once) and keep
claims idempotent (:meth:`Ledger.begin_claim`, then :meth:`Ledger.claim` with the key's token).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pyrage import x25519

from printpipe.atomic import fsync_dir, partial_path, write_atomic
from printpipe.audit_chain import ChainReport, canonical_entry, verify_chain
from printpipe.commitment.lottery import check_manifest_covers, manifest_commitment
from printpipe.commitment.remaining import Remaining, write_remaining
from printpipe.commitment.statement import Commitment, statement_difference
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.games.base import Game
from printpipe.ids import SPECIMEN_PACK, TicketId, parse_inventory_code, parse_validation_code
from printpipe.inputs import AUDIT_TEXT_LIMIT, PackRef, Reason, TerminalId, audit_text
from printpipe.ledger_key import LedgerKey
from printpipe.ledger_proofs import CommitmentLoad, Commitments, read_remaining, store_proof
from printpipe.ledger_store import (
    Database,
    Location,
    PostgresDatabase,
    PostgresLocation,
    SqliteDatabase,
    Tx,
    open_database,
    remove_sqlite_files,
    ticket_key,
    ticket_of_key,
)
from printpipe.manifest import Manifest, ParsedRecords, RecordChecker, decrypt_manifest

DEFAULT_RETAILER_LIMIT_EUR = 150
DEFAULT_MAX_VIRN_FAILURES = 5
DEFAULT_MAX_TERMINAL_VIRN_FAILURES = 3
DEFAULT_TERMINAL_WINDOW_HOURS = 24
LOCK_MIN_TERMINALS = 2
"""A ticket locks only on wrong VIRNs from this many terminals: one terminal cannot lock a
ticket (it is throttled first, and its own failures never add up to a lock)."""
PACK_STATES = ("issued", "activated", "settled")
PAYABLE_STATES = ("activated", "settled")
TERMINAL_ROLES = ("retailer", "office")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
IDEMPOTENCY_TTL_S = 24 * 3600
"""How long a claim's Idempotency-Key is remembered (its answer replayed)."""
IDEMPOTENCY_LEASE_S = 10
"""How long a claim in progress holds its key: a retry sooner gets 409; later (the server that
took it died before answering) the retry takes the key over and the claim runs again (a claim
that had committed has its answer stored, so it is replayed, never paid twice)."""
NONCE_TTL_S = 150
"""How long a request's nonce is kept: past twice the allowed clock skew (60 s), a replay is
refused by its ``created`` time anyway."""

# Everything decide reads, in one statement: always one row (ticket columns NULL when there is
# no such ticket), the asking terminal's counter and the pack's retailer included.
_LOOKUP = """
SELECT t.virn_hmac, t.prize_eur,
       (SELECT COALESCE(SUM(failures), 0) FROM virn_failures WHERE ticket = q.id),
       (SELECT COUNT(*) FROM virn_failures WHERE ticket = q.id),
       p.paid_at, p.terminal, COALESCE(k.state, 'issued'),
       c.failures, c.window_start, k.retailer
FROM (SELECT ? AS id) q
LEFT JOIN tickets t ON t.id = q.id
LEFT JOIN payments p ON p.ticket = q.id
LEFT JOIN packs k ON k.id = ?
LEFT JOIN terminal_failures c ON c.terminal = ?
"""
_APPEND_AUDIT = (
    "UPDATE audit_head SET seq = seq + 1, hash = chain_hash(hash, seq + 1, ?) WHERE id = 1 "
    "RETURNING seq, hash"
)


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


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


@dataclass(frozen=True)
class Settings:
    retailer_limit_eur: int = DEFAULT_RETAILER_LIMIT_EUR
    max_virn_failures: int = DEFAULT_MAX_VIRN_FAILURES
    max_terminal_virn_failures: int = DEFAULT_MAX_TERMINAL_VIRN_FAILURES
    terminal_window_hours: int = DEFAULT_TERMINAL_WINDOW_HOURS

    @property
    def terminal_window(self) -> timedelta:
        return timedelta(hours=self.terminal_window_hours)

    def describe(self) -> str:
        return (
            f"retailer limit {self.retailer_limit_eur} EUR; "
            f"lock after {self.max_virn_failures} wrong validation numbers on a ticket "
            f"(from {LOCK_MIN_TERMINALS} terminals or more); a terminal is throttled after "
            f"{self.max_terminal_virn_failures} wrong validation numbers in "
            f"{self.terminal_window_hours} h"
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


# -- what the office reviews ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockedTicket:
    serial: str
    failures: int
    terminals: int
    last_at: str


@dataclass(frozen=True, slots=True)
class ThrottledTerminal:
    terminal: str
    failures: int
    since: str
    until: str


@dataclass(frozen=True, slots=True)
class Locks:
    tickets: list[LockedTicket]
    terminals: list[ThrottledTerminal]


@dataclass(frozen=True, slots=True)
class Terminal:
    """A registered terminal: who signs a request with ``key_id``, for which retailer."""

    id: str
    key_id: str
    public_key: bytes
    retailer: str | None
    role: str
    added_at: str
    revoked_at: str | None = None

    @property
    def office(self) -> bool:
        return self.role == "office"

    def describe(self) -> str:
        who = (
            "office (every pack, above the retailer limit)"
            if self.office
            else (f"retailer {self.retailer}")
        )
        state = f"revoked {self.revoked_at}" if self.revoked_at else "active"
        return f"{self.id}: {who}, key {self.key_id}, added {self.added_at}, {state}"


# -- what a signed request brings ------------------------------------------------------------


class RequestRefused(PrintpipeError):
    """A request the service refuses before anything is changed (nothing was written)."""


class ReplayedRequest(RequestRefused):
    """The request's nonce was seen already: a replay."""


class RevokedTerminal(RequestRefused):
    """The signing terminal is unknown or revoked."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A signed request's nonce, admitted once in the transaction that acts on it (a replay
    rolls the whole transaction back)."""

    key_id: str
    nonce: str
    seen_at: int


@dataclass(frozen=True, slots=True)
class ClaimStart:
    """What :meth:`Ledger.begin_claim` found for an Idempotency-Key.

    ``outcome``: ``proceed`` (the caller owns the key: ``token``), ``replay`` (the stored
    ``status`` and ``response``), ``mismatch`` (same key, another request: 422) or
    ``in_progress`` (409, retry after ``retry_after`` seconds).
    """

    outcome: str
    token: str | None = None
    status: int | None = None
    response: str | None = None
    retry_after: int = 0


@dataclass(frozen=True, slots=True)
class IdempotentClaim:
    """A claim that stores its answer under its key: ``render`` turns the answer into the
    (status, body) a replay returns."""

    terminal: str
    key: str
    token: str
    render: Callable[[Answer], tuple[int, str]]


class KeyTakenOver(RequestRefused):
    """The claim's key lease expired and a retry took it over: this attempt does nothing."""


# -- the ledger ------------------------------------------------------------------------------


def _lock_key(kind: str, name: str | int) -> int:
    digest = hashlib.blake2b(f"{kind}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF_FFFF_FFFF


def default_settings_rows() -> list[tuple[str, str]]:
    return [(key, str(value)) for key, value in asdict(Settings()).items()]


class Ledger:
    """An open validation ledger (an SQLite file or a PostgreSQL database).

    ``Ledger(location)`` opens an existing ledger (refusing anything else untouched);
    ``read_only=True`` never writes a byte of it.  ``key`` (the ledger key) is needed to answer
    codes and to import; the ledger checks it is its own.  ``pool_size``: PostgreSQL
    connections shared by threads (the service); ``shared``: several processes of the service
    write to one SQLite file.  ``clock`` gives the time (tests move it).
    A ledger is created only by :func:`import_manifest`.
    """

    def __init__(
        self,
        location: Location,
        *,
        read_only: bool = False,
        key: LedgerKey | None = None,
        clock: Callable[[], datetime] = utc_now,
        pool_size: int = 0,
        shared: bool = False,
    ) -> None:
        db = open_database(location, read_only=read_only, pool_size=pool_size, shared=shared)
        self._setup(db, key=key, clock=clock)

    @classmethod
    def _over(
        cls,
        db: Database,
        *,
        key: LedgerKey | None,
        clock: Callable[[], datetime],
        empty: bool = False,
    ) -> Ledger:
        """A ledger over an open database; ``empty``: one an import is about to create."""
        book = cls.__new__(cls)
        book._setup(db, key=key, clock=clock, empty=empty)
        return book

    def _setup(
        self,
        db: Database,
        *,
        key: LedgerKey | None,
        clock: Callable[[], datetime],
        empty: bool = False,
    ) -> None:
        self.db = db
        self.location = db.location
        self.read_only = db.read_only
        self.clock = clock
        self.key = key
        self.commitments = Commitments()
        try:
            self.settings = Settings() if empty else self._read_settings()
            if key is not None and not empty:
                self._check_key(key)
        except BaseException:
            db.close()
            raise

    def _check_key(self, key: LedgerKey) -> None:
        with self.db.snapshot() as tx:
            row = tx.one("SELECT value FROM ledger_meta WHERE key = 'key_fingerprint'")
        if row is not None and row[0] != key.fingerprint:
            raise PrintpipeError(
                f"{key.source or 'the ledger key'} is not the key of validation database "
                f"{self.location} (its fingerprint differs): use the keys folder it was "
                "imported with"
            )

    def _require_key(self) -> LedgerKey:
        if self.key is None:
            raise PrintpipeError("the ledger key is needed to answer codes (--keys DIR)")
        return self.key

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only statement (``?`` placeholders), in one snapshot."""
        with self.db.snapshot() as tx:
            return tx.execute(sql, params)

    def _read_settings(self) -> Settings:
        with self.db.snapshot() as tx:
            values = dict(tx.execute("SELECT key, value FROM settings"))
        defaults = Settings()
        return Settings(
            **{name: int(values.get(name, getattr(defaults, name))) for name in SETTING_NAMES}
        )

    def reload_settings(self) -> Settings:
        self.settings = self._read_settings()
        return self.settings

    # -- the audit log ---------------------------------------------------------------------

    def _log(
        self,
        tx: Tx,
        terminal: str,
        action: str,
        given: str,
        ticket: str | None,
        answer: str,
        *,
        at: datetime | None = None,
    ) -> None:
        """Append an entry, chained to the one before (under the head row's lock)."""
        stamp = format_time(at or self.clock())
        entry = canonical_entry(stamp, terminal, action, given, ticket, answer)
        if tx.dialect == "postgresql":  # one statement (SQLite has no UPDATE in a WITH)
            tx.execute(
                f"WITH head AS ({_APPEND_AUDIT}) INSERT INTO audit_log "
                "(seq, at, terminal, action, input, ticket, answer, hash) "
                "SELECT seq, ?, ?, ?, ?, ?, ?, hash FROM head",
                (entry, stamp, terminal, action, given, ticket, answer),
            )
            return
        head = tx.one(_APPEND_AUDIT, (entry,))
        assert head is not None
        seq, digest = head
        tx.execute(
            "INSERT INTO audit_log (seq, at, terminal, action, input, ticket, answer, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, stamp, terminal, action, given, ticket, answer, digest),
        )

    def verify_log(self) -> ChainReport:
        """Recompute the audit log's hash chain (read-only) and name its first bad entry."""
        with self.db.snapshot() as tx:
            head = tx.one("SELECT seq, hash FROM audit_head WHERE id = 1")
            rows = tx.execute(
                "SELECT seq, at, terminal, action, input, ticket, answer, hash "
                "FROM audit_log ORDER BY seq"
            )
        head_seq, head_hash = head if head is not None else (0, b"")
        return verify_chain(rows, head_seq=int(head_seq), head_hash=bytes(head_hash))

    # -- settings --------------------------------------------------------------------------

    def configure(self, *, terminal: TerminalId, **changes: int | None) -> Settings:
        """Change settings (:data:`SETTING_NAMES`; None leaves one as it is), audited."""
        unknown = set(changes) - set(SETTING_NAMES)
        if unknown:
            raise TypeError(f"unknown settings: {sorted(unknown)}")
        wanted = {key: value for key, value in changes.items() if value is not None}
        for key, value in wanted.items():
            if value < 1:
                raise InvalidInput(f"{key} must be at least 1, got {value}")
        if not wanted:
            return self.settings
        with self.db.transaction(durable=True) as tx:
            for key, value in wanted.items():
                tx.execute(
                    "INSERT INTO settings VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, str(value)),
                )
                self._log(tx, terminal.value, "configure", key, None, str(value))
        return self.reload_settings()

    # -- validate and claim ----------------------------------------------------------------

    def _admit(self, tx: Tx, admission: Admission | None) -> None:
        """Record a signed request's nonce, refusing a replay or a revoked terminal; raises
        inside the transaction, so nothing it did is kept."""
        if admission is None:
            return
        # One statement on the way of every request: the nonce is recorded only for a
        # terminal registered and not revoked (read in this transaction).
        fresh = tx.one(
            "INSERT INTO nonces SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM terminals "
            "WHERE key_id = ? AND revoked_at IS NULL) ON CONFLICT (key_id, nonce) DO NOTHING "
            "RETURNING 1",
            (admission.key_id, admission.nonce, admission.seen_at, admission.key_id),
        )
        if fresh is None:
            row = tx.one("SELECT revoked_at FROM terminals WHERE key_id = ?", (admission.key_id,))
            if row is None or row[0] is not None:
                raise RevokedTerminal("the signing terminal is revoked or unknown")
            raise ReplayedRequest("this request's nonce was seen already (a replay)")

    def _lookup(
        self, tx: Tx, ticket: TicketId, terminal: TerminalId
    ) -> tuple[TicketRow | None, TerminalCounter, str | None]:
        tx.lock(_lock_key("terminal", terminal.value), _lock_key("ticket", ticket_key(ticket)))
        found = tx.one(
            _LOOKUP,
            (ticket_key(ticket), pack_key(ticket.game, ticket.pack), terminal.value),
        )
        assert found is not None
        *columns, failures, window_start, retailer = found
        row = None
        if columns[0] is not None:
            columns[0] = bytes(columns[0])
            row = TicketRow(*columns)
        if window_start is None:
            return row, TerminalCounter(), retailer
        return row, TerminalCounter(failures, parse_time(window_start)), retailer

    def _answer(
        self,
        tx: Tx,
        scanned: ScannedCode,
        terminal: TerminalId,
        at: datetime,
        retailer: str | None,
    ) -> tuple[Answer, TicketRow | None]:
        """Decide and apply what the decision counts; runs inside a write transaction.
        ``retailer``: the caller acts only on packs shipped to it (None: every pack)."""
        ticket = scanned.ticket
        row, counter, pack_retailer = None, TerminalCounter(), None
        if ticket.pack != SPECIMEN_PACK:
            row, counter, pack_retailer = self._lookup(tx, ticket, terminal)
            if retailer is not None and pack_retailer != retailer:
                return foreign_pack(ticket.serial), None
        decision = decide(scanned.keyed(self._require_key()), row, counter, self.settings, at=at)
        after = decision.terminal_after
        if after is not None and after.window_start is not None:
            stamp = format_time(at)
            tx.execute(
                "INSERT INTO virn_failures VALUES (?, ?, 1, ?) ON CONFLICT (ticket, terminal) "
                "DO UPDATE SET failures = virn_failures.failures + 1, "
                "last_at = excluded.last_at",
                (ticket_key(ticket), terminal.value, stamp),
            )
            tx.execute(
                "INSERT INTO terminal_failures VALUES (?, ?, ?) ON CONFLICT (terminal) "
                "DO UPDATE SET window_start = excluded.window_start, failures = excluded.failures",
                (terminal.value, format_time(after.window_start), after.failures),
            )
            if decision.throttles_terminal:
                until = format_time(after.window_start + self.settings.terminal_window)
                self._log(
                    tx,
                    terminal.value,
                    "throttle",
                    "",
                    None,
                    f"TERMINAL THROTTLED {until}: {after.failures} wrong validation numbers "
                    f"since {format_time(after.window_start)}",
                    at=at,
                )
        return decision.answer, row

    def validate(
        self,
        code: str,
        *,
        terminal: TerminalId,
        retailer: str | None = None,
        admission: Admission | None = None,
    ) -> Answer:
        """Answer a scanned code (validation or inventory), logging it; never pays.

        ``retailer``: the caller acts only on that retailer's packs (a terminal of the
        service); ``admission``: a signed request's nonce, admitted in the same transaction.
        """
        _require_terminal(terminal)
        scanned = read_code(code)
        given = logged_input(code)
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            at = self.clock()
            answer = INVALID
            if scanned is not None:
                answer, _ = self._answer(tx, scanned, terminal, at, retailer)
            action = "refuse" if answer.outcome == "NOT_YOUR_PACK" else "validate"
            self._log(tx, terminal.value, action, given, answer.serial, answer.text, at=at)
        return answer

    def claim(
        self,
        code: str,
        *,
        terminal: TerminalId,
        office: bool = False,
        retailer: str | None = None,
        admission: Admission | None = None,
        idempotent: IdempotentClaim | None = None,
    ) -> Answer:
        """Pay a winning ticket at most once; ``office`` (the lottery) pays above the limit.

        The payment is one statement that checks and writes (``INSERT ... ON CONFLICT DO
        NOTHING RETURNING``): of concurrent claims exactly one writes it, the others answer
        ``ALREADY PAID``.  ``idempotent``: the claim's answer is stored under its key in the
        same transaction as the payment (see :meth:`begin_claim`).
        """
        _require_terminal(terminal)
        scanned = read_code(code)
        given = logged_input(code)
        with self.db.transaction(durable=True) as tx:
            self._admit(tx, admission)
            if idempotent is not None:
                held = tx.one(
                    "UPDATE idempotency SET token = token WHERE terminal = ? AND key = ? "
                    "AND token = ? AND status IS NULL RETURNING 1",
                    (idempotent.terminal, idempotent.key, idempotent.token),
                )
                if held is None:
                    raise KeyTakenOver("this claim's key was taken over by a retry")
            at = self.clock()
            if scanned is None or scanned.virn is None:  # the inventory code never pays
                answer = INVALID
            else:
                answer, row = self._answer(tx, scanned, terminal, at, retailer)
                if answer.outcome == "WIN" or (office and answer.outcome == "WIN_AT_LOTTERY"):
                    answer = self._pay(tx, scanned, answer, terminal, at, row)
            action = "refuse" if answer.outcome == "NOT_YOUR_PACK" else "claim"
            self._log(tx, terminal.value, action, given, answer.serial, answer.text, at=at)
            if idempotent is not None:
                status, body = idempotent.render(answer)
                tx.execute(
                    "UPDATE idempotency SET status = ?, response = ? "
                    "WHERE terminal = ? AND key = ? AND token = ?",
                    (status, body, idempotent.terminal, idempotent.key, idempotent.token),
                )
        return answer

    def _pay(
        self,
        tx: Tx,
        scanned: ScannedCode,
        answer: Answer,
        terminal: TerminalId,
        at: datetime,
        row: TicketRow | None,
    ) -> Answer:
        paid_at = format_time(at)
        key = ticket_key(scanned.ticket)
        loaded = self.commitments.of_ticket(tx, scanned.ticket)
        if loaded is not None and loaded.closed_on is not None and at.date() > loaded.closed_on:
            closed = loaded.closed_on.isoformat()
            return Answer("BLOCK_CLOSED", f"BLOCK CLOSED {closed}", answer.serial)
        written = tx.one(
            "INSERT INTO payments VALUES (?, ?, ?, ?) ON CONFLICT (ticket) DO NOTHING "
            "RETURNING paid_at",
            (key, answer.amount_eur, paid_at, terminal.value),
        )
        if written is None:  # paid by a concurrent claim that committed first
            other = tx.one("SELECT paid_at, terminal FROM payments WHERE ticket = ?", (key,))
            assert other is not None and row is not None
            return Answer(
                "ALREADY_PAID",
                f"ALREADY PAID {other[0]} {other[1]}",
                answer.serial,
                paid_at=other[0],
                terminal=other[1],
            )
        extra: dict[str, Any] = {}
        if loaded is not None:
            assert row is not None and scanned.virn is not None
            proof = store_proof(
                tx,
                loaded,
                ticket=scanned.ticket,
                prize_eur=row.prize_eur,
                virn=scanned.virn,
                key=self._require_key(),
            )
            extra["proof"] = proof.document()
        return Answer(
            "PAID",
            f"PAID {answer.amount_eur}",
            answer.serial,
            amount_eur=answer.amount_eur,
            paid_at=paid_at,
            terminal=terminal.value,
            extra=extra,
        )

    def request_fingerprint(self, method: str, path: str, body: bytes) -> bytes:
        """What an Idempotency-Key is bound to: the request's method, path and body, as an
        HMAC under the ledger key (the body holds a VIRN)."""
        return self._require_key().request_hmac(f"{method} {path}\n".encode() + body)

    # -- the block's public commitment: proofs, prizes remaining, closure ------------------

    def prove(self, code: str, *, terminal: TerminalId) -> tuple[str, bytes]:
        """The stored inclusion proof of a paid ticket: (its serial, the proof's bytes).

        Only for a paid ticket, and only with its validation code (the VIRN checked against
        its HMAC): a proof reveals the ticket's VIRN and prize.  Every request is logged,
        refused or not.
        """
        _require_terminal(terminal)
        scanned = read_code(code)
        if scanned is None or scanned.virn is None:
            raise InvalidInput(
                f"code {logged_input(code)!r} refused: a proof is asked with the ticket's "
                "validation code (25 digits, or GGGG-PPPPPP-TTT VVVVVVVVVV KK)"
            )
        keyed = scanned.keyed(self._require_key())
        ticket = scanned.ticket
        serial = ticket.serial
        with self.db.transaction() as tx:
            found = tx.one(
                "SELECT t.virn_hmac, p.paid_at, q.proof FROM tickets t "
                "LEFT JOIN payments p ON p.ticket = t.id "
                "LEFT JOIN payment_proofs q ON q.ticket = t.id WHERE t.id = ?",
                (ticket_key(ticket),),
            )
            proof: bytes | None = None
            if found is None:
                problem = f"ticket {serial}: no such ticket in {self.location}"
            elif keyed.virn_hmac is None or not hmac.compare_digest(
                keyed.virn_hmac, bytes(found[0])
            ):
                problem = f"ticket {serial}: wrong validation number, no proof given"
            elif found[1] is None:
                problem = (
                    f"ticket {serial} is not paid: the ledger gives a proof only for a paid "
                    "ticket (a proof tells its prize)"
                )
            elif found[2] is None:
                problem = (
                    f"ticket {serial} was paid, but the ledger holds no commitment of its block "
                    "(load it: printpipe ledger import BLOCK_MANIFEST --commitment COMMITMENT)"
                )
            else:
                problem, proof = "", str(found[2]).encode()
            answer = "PROOF GIVEN" if proof is not None else f"REFUSED {problem}"
            self._log(tx, terminal.value, "prove", logged_input(code), serial, answer[:200])
        if proof is None:
            raise PrintpipeError(problem)
        return serial, proof

    def remaining(
        self, *, game: str | None = None, block: int | None = None
    ) -> tuple[Remaining, IO[bytes]]:
        """The prizes remaining of a block's commitment, in one snapshot: per prize tier the
        lots committed, paid and remaining, and the paid lots' proofs (one canonical JSON line
        each, in a temporary file the caller closes)."""
        with self.db.snapshot() as tx:
            loaded = self.commitments.find(tx, game=game, block=block, where=str(self.location))
            return read_remaining(tx, loaded, at=format_time(self.clock()))

    def close_block(
        self,
        *,
        game: str | None = None,
        block: int | None = None,
        closed_on: dt.date,
        terminal: TerminalId,
    ) -> str:
        """Record that a committed block closed on ``closed_on`` (its sale ended and its claim
        period ran out): from the day after, no ticket of it is paid (``BLOCK CLOSED``).  Once
        recorded, the day is final."""
        _require_terminal(terminal)
        today = self.clock().date()
        if closed_on > today:
            raise InvalidInput(
                f"a block is closed on a day already come: {closed_on.isoformat()} is after "
                f"today ({today.isoformat()})"
            )
        with self.db.transaction(durable=True) as tx:
            loaded = self.commitments.find(tx, game=game, block=block, where=str(self.location))
            if loaded.closed_on is not None:
                if loaded.closed_on == closed_on:
                    return f"{loaded.name}: closed on {closed_on.isoformat()} already"
                raise PrintpipeError(
                    f"{loaded.name} was closed on {loaded.closed_on.isoformat()}: a closure "
                    "is final"
                )
            tx.execute(
                "UPDATE commitments SET closed_on = ? WHERE id = ?",
                (closed_on.isoformat(), loaded.id),
            )
            report = (
                f"{loaded.name}: closed on {closed_on.isoformat()}; no ticket of it is paid "
                "after that day"
            )
            self._log(tx, terminal.value, "close", closed_on.isoformat(), None, report)
        return report

    def begin_claim(
        self,
        *,
        terminal: TerminalId,
        key: str,
        fingerprint: bytes,
        admission: Admission | None = None,
        now_s: int | None = None,
    ) -> ClaimStart:
        """Take an Idempotency-Key for a claim, or say why not (one short transaction).

        A new key (or one older than :data:`IDEMPOTENCY_TTL_S`) is taken: ``proceed`` with a
        fresh token, which :meth:`claim` needs.  The same key with another request
        (``fingerprint``) is a ``mismatch``; with its answer stored, a ``replay``; still
        running, ``in_progress``, unless its lease (:data:`IDEMPOTENCY_LEASE_S`) has expired:
        then this retry takes it over (the attempt that held it had not committed, or its
        answer would be stored).
        """
        now = int(self.clock().timestamp()) if now_s is None else now_s
        token = secrets.token_hex(16)
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            tx.lock(_lock_key("terminal", terminal.value))
            taken = tx.one(
                "INSERT INTO idempotency (terminal, key, fingerprint, token, started_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (terminal, key) DO NOTHING RETURNING 1",
                (terminal.value, key, fingerprint, token, now),
            )
            if taken is not None:
                return ClaimStart("proceed", token)
            row = tx.one(
                "SELECT fingerprint, token, started_at, status, response FROM idempotency "
                "WHERE terminal = ? AND key = ?",
                (terminal.value, key),
            )
            assert row is not None
            stored, held_by, started_at, status, response = row
            if started_at <= now - IDEMPOTENCY_TTL_S:  # expired: a new request
                tx.execute(
                    "UPDATE idempotency SET fingerprint = ?, token = ?, started_at = ?, "
                    "status = NULL, response = NULL WHERE terminal = ? AND key = ?",
                    (fingerprint, token, now, terminal.value, key),
                )
                return ClaimStart("proceed", token)
            if not hmac.compare_digest(bytes(stored), fingerprint):
                return ClaimStart("mismatch")
            if status is not None:
                return ClaimStart("replay", status=int(status), response=response)
            if started_at > now - IDEMPOTENCY_LEASE_S:
                return ClaimStart("in_progress", retry_after=started_at + IDEMPOTENCY_LEASE_S - now)
            tx.execute(
                "UPDATE idempotency SET token = ?, started_at = ? "
                "WHERE terminal = ? AND key = ? AND token = ?",
                (token, now, terminal.value, key, held_by),
            )
            return ClaimStart("proceed", token)

    def purge_expired(self, *, now_s: int | None = None) -> tuple[int, int]:
        """Forget nonces past :data:`NONCE_TTL_S` and claim keys past
        :data:`IDEMPOTENCY_TTL_S`; (nonces, keys) removed."""
        now = int(self.clock().timestamp()) if now_s is None else now_s
        with self.db.transaction() as tx:
            nonces = tx.execute(
                "DELETE FROM nonces WHERE seen_at < ? RETURNING 1", (now - NONCE_TTL_S,)
            )
            keys = tx.execute(
                "DELETE FROM idempotency WHERE started_at < ? RETURNING 1",
                (now - IDEMPOTENCY_TTL_S,),
            )
        return len(nonces), len(keys)

    def record_refusal(
        self,
        *,
        action: str,
        terminal_text: str,
        given: str,
        reason: str,
        admission: Admission | None = None,
    ) -> None:
        """Append to the audit log that an input was refused before anything was looked up.

        Every field is passed through :func:`audit_text`: what was sent may be anything.
        ``admission``: the signed request's nonce, recorded with it.
        """
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            self._log(
                tx,
                audit_text(terminal_text),
                "refuse",
                logged_input(f"{action}: {given}", limit=160),
                None,
                audit_text(f"REFUSED {reason}", limit=200),
            )

    # -- the office: locks -----------------------------------------------------------------

    def locks(self) -> Locks:
        """Locked tickets and throttled terminals, for the lottery's office to review."""
        at = self.clock()
        settings = self.settings
        with self.db.snapshot() as tx:
            locked = tx.execute(
                "SELECT ticket, SUM(failures), COUNT(*), MAX(last_at) FROM virn_failures "
                "GROUP BY ticket HAVING SUM(failures) >= ? AND COUNT(*) >= ? ORDER BY ticket",
                (settings.max_virn_failures, LOCK_MIN_TERMINALS),
            )
            counters = tx.execute(
                "SELECT terminal, failures, window_start FROM terminal_failures "
                "WHERE failures >= ? ORDER BY terminal",
                (settings.max_terminal_virn_failures,),
            )
        tickets = [
            LockedTicket(ticket_of_key(key).serial, int(failures), int(terminals), last_at)
            for key, failures, terminals, last_at in locked
        ]
        terminals = []
        for name, failures, start in counters:
            until = TerminalCounter(failures, parse_time(start)).throttled_until(at, settings)
            if until is not None:
                terminals.append(ThrottledTerminal(name, failures, start, format_time(until)))
        return Locks(tickets, terminals)

    def unlock(self, ticket: TicketId, *, reason: Reason, terminal: TerminalId) -> str:
        """Release a ticket's wrong-VIRN count after the office has inspected the ticket.

        The counts are removed (the audit log keeps them, with the reason); the holder can then
        be paid, at the office (``printpipe claim``, or an office terminal of the service).
        """
        _require_terminal(terminal)
        if not isinstance(reason, Reason):
            raise TypeError("reason must be a printpipe.inputs.Reason")
        key = ticket_key(ticket)
        with self.db.transaction(durable=True) as tx:
            if tx.one("SELECT 1 FROM tickets WHERE id = ?", (key,)) is None:
                raise PrintpipeError(f"ticket {ticket.serial}: no such ticket in {self.location}")
            counted = tx.one(
                "SELECT COALESCE(SUM(failures), 0), COUNT(*) FROM virn_failures WHERE ticket = ?",
                (key,),
            )
            assert counted is not None
            failures, terminals = counted
            if not failures:
                raise PrintpipeError(
                    f"ticket {ticket.serial} has no wrong validation numbers: nothing to unlock"
                )
            tx.execute("DELETE FROM virn_failures WHERE ticket = ?", (key,))
            report = (
                f"ticket {ticket.serial}: unlocked ({failures} wrong validation numbers "
                f"from {terminals} terminal{'s' if terminals > 1 else ''} released)"
            )
            given = audit_text(reason.text, limit=200)
            self._log(tx, terminal.value, "unlock", given, ticket.serial, report)
        return report

    # -- terminals -------------------------------------------------------------------------

    def add_terminal(
        self,
        terminal: TerminalId,
        *,
        public_key: bytes,
        key_id: str,
        retailer: TerminalId | None,
        role: str,
        by: TerminalId,
    ) -> Terminal:
        """Register a terminal and its Ed25519 public key (raw 32 bytes), for a retailer
        (role ``retailer``) or the lottery's office (role ``office``); audited."""
        _require_terminal(terminal)
        if role not in TERMINAL_ROLES:
            raise InvalidInput(f"role {role!r} refused: {' or '.join(TERMINAL_ROLES)}")
        if role == "retailer" and retailer is None:
            raise InvalidInput("a retailer's terminal needs --retailer")
        stamp = format_time(self.clock())
        with self.db.transaction(durable=True) as tx:
            known = tx.one(
                "SELECT id FROM terminals WHERE id = ? OR key_id = ?", (terminal.value, key_id)
            )
            if known is not None:
                raise PrintpipeError(
                    f"terminal {known[0]} is registered already (with this id or this key): "
                    "ids and keys are never reused"
                )
            owner = retailer.value if retailer is not None else None
            tx.execute(
                "INSERT INTO terminals VALUES (?, ?, ?, ?, ?, ?, NULL)",
                (terminal.value, key_id, public_key, owner, role, stamp),
            )
            record = Terminal(terminal.value, key_id, public_key, owner, role, stamp)
            self._log(tx, by.value, "terminal-add", terminal.value, None, record.describe())
        return record

    def terminals(self) -> list[Terminal]:
        rows = self.query(
            "SELECT id, key_id, public_key, retailer, role, added_at, revoked_at FROM terminals "
            "ORDER BY id"
        )
        return [Terminal(r[0], r[1], bytes(r[2]), *r[3:]) for r in rows]

    def terminal_by_key_id(self, key_id: str) -> Terminal | None:
        rows = self.query(
            "SELECT id, key_id, public_key, retailer, role, added_at, revoked_at FROM terminals "
            "WHERE key_id = ?",
            (key_id,),
        )
        return Terminal(rows[0][0], rows[0][1], bytes(rows[0][2]), *rows[0][3:]) if rows else None

    def revoke_terminal(self, terminal: TerminalId, *, reason: Reason, by: TerminalId) -> str:
        """Revoke a terminal for good: every request it signs is refused from now on."""
        stamp = format_time(self.clock())
        with self.db.transaction(durable=True) as tx:
            row = tx.one("SELECT revoked_at FROM terminals WHERE id = ?", (terminal.value,))
            if row is None:
                raise PrintpipeError(f"terminal {terminal}: no such terminal in {self.location}")
            if row[0] is not None:
                return f"terminal {terminal}: revoked already ({row[0]})"
            tx.execute("UPDATE terminals SET revoked_at = ? WHERE id = ?", (stamp, terminal.value))
            report = f"terminal {terminal}: revoked {stamp}"
            self._log(
                tx, by.value, "terminal-revoke", audit_text(reason.text, limit=200), None, report
            )
        return report

    # -- packs -----------------------------------------------------------------------------

    def set_pack_state(
        self,
        packs: Sequence[PackRef],
        *,
        state: str,
        terminal: TerminalId,
        retailer: str | None = None,
        admission: Admission | None = None,
    ) -> list[str]:
        """Move packs to ``activated`` or ``settled``, all or none; one line per pack.
        ``retailer``: only packs shipped to it (a retailer's terminal activating on receipt)."""
        _require_terminal(terminal)
        if state not in ("activated", "settled"):
            raise ValueError(state)
        before = "issued" if state == "activated" else "activated"
        action = {"activated": "activate", "settled": "settle"}[state]
        report = []
        with self.db.transaction(durable=True) as tx:
            self._admit(tx, admission)
            for given in packs:
                key, label, current, owner = self._find_pack(tx, given)
                if retailer is not None and owner != retailer:
                    raise ForeignPack(f"pack {label} is not shipped to retailer {retailer}")
                if current == state:
                    report.append(f"pack {label}: already {state}")
                    continue
                if current != before:
                    raise PrintpipeError(
                        f"pack {label} is {current}: only an {before} pack can be {state}"
                    )
                tx.execute(
                    "UPDATE packs SET state = ?, changed_at = ? WHERE id = ?",
                    (state, format_time(self.clock()), key),
                )
                self._log(tx, terminal.value, action, str(given), label, state)
                report.append(f"pack {label}: {state}")
        return report

    def ship_packs(
        self, packs: Sequence[PackRef], *, retailer: TerminalId, terminal: TerminalId
    ) -> list[str]:
        """The lottery ships issued packs to a retailer, all or none: from then on only that
        retailer's terminals act on them (activate on receipt, validate, claim)."""
        _require_terminal(terminal)
        report = []
        with self.db.transaction(durable=True) as tx:
            for given in packs:
                key, label, current, owner = self._find_pack(tx, given)
                if owner == retailer.value:
                    report.append(f"pack {label}: already shipped to {owner}")
                    continue
                if current != "issued":
                    raise PrintpipeError(f"pack {label} is {current}: only an issued pack ships")
                tx.execute(
                    "UPDATE packs SET retailer = ?, changed_at = ? WHERE id = ?",
                    (retailer.value, format_time(self.clock()), key),
                )
                self._log(tx, terminal.value, "ship", str(given), label, retailer.value)
                report.append(f"pack {label}: shipped to {retailer.value}")
        return report

    def pack_state(
        self, given: PackRef, *, retailer: str | None = None, admission: Admission | None = None
    ) -> tuple[str, str]:
        """(pack label, state) of one pack; ``retailer``: only a pack shipped to it."""
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            _, label, state, owner = self._find_pack(tx, given)
            if retailer is not None and owner != retailer:  # nothing kept: the caller audits
                raise ForeignPack(f"pack {label} is not shipped to retailer {retailer}")
        return label, state

    def _find_pack(self, tx: Tx, given: PackRef) -> tuple[int, str, str, str | None]:
        query = "SELECT id, game_number, pack, state, retailer FROM packs WHERE "
        if given.game is not None:
            rows = tx.execute(query + "id = ?", (pack_key(given.game, given.pack),))
        else:
            rows = tx.execute(query + "pack = ?", (given.pack,))
        if not rows:
            raise NoSuchPack(f"pack {given}: no such pack in {self.location}")
        if len(rows) > 1:
            raise PrintpipeError(f"pack {given} exists in several games: write it GGGG-PPPPPP")
        key, game_number, pack, state, owner = rows[0]
        return key, f"{game_number:04d}-{pack:06d}", state, owner

    # -- import ----------------------------------------------------------------------------

    def _import(
        self,
        manifest: Manifest,
        game: Game,
        identity: x25519.Identity,
        *,
        terminal: TerminalId,
        progress: Callable[[int], object] | None,
        commitment: Commitment | None = None,
    ) -> str:
        """Load a verified manifest in one transaction (see :func:`import_manifest`)."""
        key = self._require_key()
        header = manifest.header
        if commitment is not None:
            check_manifest_covers(commitment, manifest, game)
        checker = RecordChecker(game, manifest)
        stats = {"new": 0}
        stamp = format_time(self.clock())
        definition = game.definition

        with self.db.transaction(durable=True) as tx:
            if isinstance(self.db, PostgresDatabase):
                self.db.initialise_if_new(tx)
            tx.lock(_lock_key("import", 0))
            fingerprint = tx.one("SELECT value FROM ledger_meta WHERE key = 'key_fingerprint'")
            if fingerprint is None:
                tx.execute(
                    "INSERT INTO ledger_meta VALUES ('key_fingerprint', ?)", (key.fingerprint,)
                )
            elif fingerprint[0] != key.fingerprint:
                raise PrintpipeError(
                    f"{key.source or 'the ledger key'} is not the key of validation database "
                    f"{self.location}: use the keys folder it was imported with"
                )
            known = tx.one(
                "SELECT id FROM manifests WHERE records_sha256 = ?", (manifest.records_sha256,)
            )
            if known and commitment is not None:
                loaded = tx.one("SELECT root FROM commitments WHERE manifest = ?", (known[0],))
                if loaded is not None:
                    return (
                        f"manifest {manifest.path} already imported with its commitment "
                        f"(root {bytes(loaded[0]).hex()}): nothing to do"
                    )
            elif known:
                return f"manifest {manifest.path} already imported (same records): nothing to do"
            created = known or tx.one(
                "INSERT INTO manifests (records_sha256, body_sha256, kind, game, game_number, "
                "block, first_pack, last_pack, records, new_records, prize_eur, imported_at, "
                "file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) RETURNING id",
                (
                    manifest.records_sha256,
                    manifest.body_sha256,
                    header["kind"],
                    definition.id,
                    definition.number,
                    int(header["block"]),
                    int(header["packs"]["first_pack_number"]),
                    int(header["packs"]["last_pack_number"]),
                    int(header["records"]),
                    int(header["totals"]["prize_eur"]),
                    stamp,
                    str(manifest.path),
                ),
            )
            assert created is not None
            manifest_id = created[0]
            block = int(header["block"])

            def store(parsed: ParsedRecords) -> None:
                if progress is not None:
                    progress(len(parsed.keys))
                if not len(parsed.keys):
                    return
                keys = parsed.keys
                records = key.record_hmacs(parsed.lines)
                existing = dict(
                    tx.execute(
                        "SELECT id, record_hmac FROM tickets WHERE id BETWEEN ? AND ?",
                        (int(keys.min()), int(keys.max())),
                    )
                )
                fresh = np.ones(len(keys), dtype=bool)
                if existing:
                    for i, ticket in enumerate(keys.tolist()):
                        record = existing.get(ticket)
                        if record is None:
                            continue
                        if not hmac.compare_digest(bytes(record), records[i]):
                            raise PrintpipeError(
                                f"manifest {manifest.path} refused: ticket "
                                f"{ticket_of_key(ticket).serial} differs from the one already "
                                "imported"
                            )
                        fresh[i] = False
                messages = [
                    f"{k:013d}{v:010d}".encode()
                    for k, v in zip(keys.tolist(), parsed.virn.tolist(), strict=True)
                ]
                virns = key.virn_hmacs(messages)
                rows = [
                    (k, v, p, manifest_id, r)
                    for k, v, p, r, new in zip(
                        keys.tolist(),
                        virns,
                        parsed.prize_eur.tolist(),
                        records,
                        fresh.tolist(),
                        strict=True,
                    )
                    if new
                ]
                tx.insert_rows(
                    "tickets", ("id", "virn_hmac", "prize_eur", "manifest", "record_hmac"), rows
                )
                stats["new"] += len(rows)
                packs = np.unique(parsed.pack_number).tolist()
                tx.executemany(
                    "INSERT INTO packs (id, game_number, pack, block, state, changed_at) "
                    "VALUES (?, ?, ?, ?, 'issued', ?) ON CONFLICT (id) DO NOTHING",
                    [
                        (pack_key(definition.number, p), definition.number, p, block, stamp)
                        for p in packs
                    ],
                )

            with_tree = ""
            if commitment is None:
                decrypt_manifest(manifest, identity, lambda lines: store(checker.parse(lines)))
                checker.finish()
                seen = checker.seen
            else:
                load = CommitmentLoad(
                    tx, commitment=commitment, manifest_id=manifest_id, key=key, stamp=stamp
                )

                def store_with_tree(parsed: ParsedRecords) -> None:
                    store(parsed)
                    load.on_batch(parsed)

                rebuilt = manifest_commitment(
                    manifest, game, identity, on_batch=store_with_tree, on_nodes=load.nodes
                )
                difference = statement_difference(rebuilt, commitment)
                if difference:
                    raise PrintpipeError(
                        f"commitment {commitment.name} refused: the manifest's records give "
                        f"{difference}"
                    )
                earlier = load.finish()
                seen = rebuilt.tickets
                with_tree = f"; its commitment (root {commitment.root.hex()}) and tree: every " + (
                    "payment is proven"
                    if not earlier
                    else f"payment is proven, the {earlier:,} made before included"
                )
            tx.execute(
                "UPDATE manifests SET new_records = new_records + ? WHERE id = ?",
                (stats["new"], manifest_id),
            )
            summary = (
                f"imported {seen:,} records ({stats['new']:,} new) of {definition.id} "
                f"block {header['block']}, pack numbers {header['packs']['first_pack_number']:06d} "
                f"to {header['packs']['last_pack_number']:06d}{with_tree}"
            )
            self._log(tx, terminal.value, "import", audit_text(manifest.path.name), None, summary)
        return summary


class ForeignPack(PrintpipeError):
    """A pack not shipped to the asking terminal's retailer (the service answers 403)."""


class NoSuchPack(PrintpipeError):
    """No pack of that number in the ledger."""


def _require_terminal(terminal: object) -> None:
    if not isinstance(terminal, TerminalId):
        raise TypeError("terminal must be a printpipe.inputs.TerminalId (parse_terminal_id)")


# -- one call per command -------------------------------------------------------------------


def configure(location: Location, *, terminal: TerminalId, **changes: int | None) -> Settings:
    """The ledger's settings, after the given changes (audited); with no change, the ledger is
    opened read-only and not written."""
    changing = any(value is not None for value in changes.values())
    with Ledger(location, read_only=not changing) as book:
        return book.configure(terminal=terminal, **changes)


def record_refusal(
    location: Location, *, action: str, terminal_text: str, given: str, reason: str
) -> None:
    """Record in the ledger at ``location`` an input refused before anything was looked up."""
    with Ledger(location) as book:
        book.record_refusal(action=action, terminal_text=terminal_text, given=given, reason=reason)


TICKET_DIGITS = 13  # GGGG PPPPPP TTT: the first digits of both codes


def logged_input(text: str, *, limit: int = AUDIT_TEXT_LIMIT) -> str:
    """``text`` (a scanned code, a refused command line or request) as the audit log may hold
    it: never a VIRN, then escaped and bounded (:func:`printpipe.inputs.audit_text`).

    The inventory code or serial (the back of the ticket, public) is kept whole.  In anything
    else every digit after the first 13 (``GGGG PPPPPP TTT``, the ticket, printed on its back)
    is masked ``*``: a validation code's VIRN and check digits, whether the code was valid,
    mistyped or malformed, are the ticket's secret, and a log is read by more people than the
    ledger key.
    """
    if parse_inventory_code(text) is not None:
        return audit_text(text, limit=limit)
    seen = 0
    masked = []
    for char in text:
        if char.isdigit():
            seen += 1
            if seen > TICKET_DIGITS:
                char = "*"
        masked.append(char)
    return audit_text("".join(masked), limit=limit)


def write_ticket_proof(
    location: Location, *, code: str, key: LedgerKey, terminal: TerminalId, out: Path | None = None
) -> tuple[str, Path]:
    """Write a paid ticket's inclusion proof (:meth:`Ledger.prove`) to ``out`` (default
    ``proof-SERIAL.json``), 0600, complete or absent: (the serial, where it went)."""
    with Ledger(location, key=key) as book:
        serial, proof = book.prove(code, terminal=terminal)
    path = out or Path(f"proof-{serial}.json")
    write_atomic(path, proof)
    return serial, path


def publish_remaining(
    location: Location,
    *,
    out: Path,
    signing_key: Ed25519PrivateKey,
    game: str | None = None,
    block: int | None = None,
) -> Remaining:
    """Write the prizes-remaining report of a block's commitment (``printpipe-remaining/1``),
    read in one snapshot and signed with the lottery's key; the ledger is opened read-only."""
    with Ledger(location, read_only=True) as book:
        remaining, proofs = book.remaining(game=game, block=block)
    with proofs:
        write_remaining(out=out, remaining=remaining, proof_lines=proofs, signing_key=signing_key)
    return remaining


def close_block(
    location: Location,
    *,
    closed_on: dt.date,
    terminal: TerminalId,
    game: str | None = None,
    block: int | None = None,
) -> str:
    """Record a block's closure in the ledger (:meth:`Ledger.close_block`)."""
    with Ledger(location) as book:
        return book.close_block(game=game, block=block, closed_on=closed_on, terminal=terminal)


# -- creating and importing ----------------------------------------------------------------

LOTTERY = TerminalId("lottery")


def import_manifest(
    location: Location,
    *,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    key: LedgerKey,
    commitment: Commitment | None = None,
    terminal: TerminalId = LOTTERY,
    progress: Callable[[int], object] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> str:
    """Load a verified manifest into the ledger at ``location``, creating it if absent.

    ``commitment``: the block's countersigned commitment (its signatures checked by the
    caller), with the manifest of that block: the tree is rebuilt from the records and must be
    the committed one; the ledger keeps its nodes and sealed salts, and from then on answers
    every payment of the block with its inclusion proof (``printpipe.ledger_proofs``).

    All or nothing: any failure (wrong key, a record that disagrees with the rules or with an
    already-imported manifest) leaves the ledger as it was.  The same manifest again is a
    no-op; one that conflicts is refused.  A new SQLite ledger is built and filled under a
    temporary name beside the file, then linked into place only if nothing is there yet: a
    failed import removes only its own temporary file, and if another import created the
    ledger meanwhile, this one is imported into it.  A PostgreSQL database with no tables gets
    the ledger's tables in the import's own transaction.
    """
    _require_terminal(terminal)
    if not game.definition.records.has_virn:
        # e.g. golden-animals: an online unit is never scanned at a retailer, and its
        # records carry no VIRN to check a scanned code against
        raise PrintpipeError(
            f"manifest {manifest.path} refused: the records of {game.definition.id} carry "
            "no VIRN, its units are not validated by retailers"
        )
    if isinstance(location, PostgresLocation):
        db = PostgresDatabase(location, create=True)
        book = Ledger._over(db, key=key, clock=clock, empty=db.empty)
        with book:
            return book._import(
                manifest,
                game,
                identity,
                terminal=terminal,
                progress=progress,
                commitment=commitment,
            )
    db_path = location
    if not os.path.lexists(db_path):
        tmp = partial_path(db_path)
        remove_sqlite_files(tmp)  # left by a crashed process of the same id
        try:
            try:
                built = SqliteDatabase.build(tmp)
            except OSError as exc:
                raise PrintpipeError(f"cannot create {db_path}: {exc.strerror}") from None
            try:
                book = Ledger._over(built, key=key, clock=clock)
                summary = book._import(
                    manifest,
                    game,
                    identity,
                    terminal=terminal,
                    progress=progress,
                    commitment=commitment,
                )
            finally:
                built.finish_build()  # the last connection: the WAL checkpointed into the file
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, db_path)  # unlike a rename, never replaces what another made
            except FileExistsError:
                pass  # another import created the ledger meanwhile: import into it, below
            except OSError as exc:
                raise PrintpipeError(f"cannot create {db_path}: {exc.strerror}") from None
            else:
                fsync_dir(db_path.parent)
                return summary
        finally:
            remove_sqlite_files(tmp)
    with Ledger(db_path, key=key, clock=clock) as book:
        return book._import(
            manifest, game, identity, terminal=terminal, progress=progress, commitment=commitment
        )
