"""The lottery's validation database: import manifests, pack states, validate, claim, audit log.

Why SQLite: the lottery needs one file it can copy and back up, that many retailer terminals
(processes) can read and write at once safely.  WAL mode lets readers run during a write;
every state change is one ``BEGIN IMMEDIATE`` transaction, so SQLite's single writer lock
serializes claims: a ticket is paid at most once because the payment's primary key is the
ticket and the check and the insert happen under that lock.

The policy is one pure function, :func:`decide` (scanned code + the ticket's row + the asking
terminal's counter + settings + the time -> answer and what to count); :class:`Ledger` wraps it
in transactions.  Every input is parsed before a transaction begins (``printpipe.inputs``,
``printpipe.ids``).  The contract (answers, code forms, lock-out, terminal ids, file modes) is
``docs/validation.md``.

Schema (one file, ``PRAGMA journal_mode=WAL``, ``application_id`` :data:`APPLICATION_ID`,
``user_version`` :data:`SCHEMA_VERSION`)::

    settings(key PK, value)           retailer_limit_eur (150), max_virn_failures (5),
                                      max_terminal_virn_failures (3), terminal_window_hours (24)
    manifests(id PK, records_sha256 UNIQUE, ...)  one row per imported manifest
    tickets(id PK, virn, prize_eur, manifest, record)
        id = game * 10**9 + pack * 10**3 + ticket; record = the manifest's exact CSV row
    packs(id PK, game_number, pack, block, state, changed_at)
        id = game * 10**6 + pack; state issued -> activated -> settled
    virn_failures(ticket, terminal, failures, last_at)   wrong VIRNs per ticket and terminal
    terminal_failures(terminal PK, window_start, failures)  wrong VIRNs of a terminal, per window
    payments(ticket PK, amount_eur, paid_at, terminal)            append-only (triggers)
    audit_log(id PK AUTOINCREMENT, at, terminal, action, input, ticket, answer)
                                                                   append-only (triggers)

A new ledger is built under a temporary name and linked into place complete (never over a
file another process made meanwhile), so a file with the ledger's name is always a whole,
initialised ledger, 0600 with its -wal and -shm.  A file that is not one is refused untouched:
its header is read before SQLite opens it.  Validations commit with ``synchronous=NORMAL``
(durable across a crash of the process, fast); payments, pack changes, unlocks and imports
with ``synchronous=FULL`` (durable across a power cut).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pyrage import x25519

from printpipe.atomic import PRIVATE_FILE_MODE, fsync_dir, partial_path
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.games.base import Game
from printpipe.ids import SPECIMEN_PACK, TicketId, parse_inventory_code, parse_validation_code
from printpipe.inputs import PackRef, Reason, TerminalId, audit_text
from printpipe.manifest import Manifest, RecordChecker, decrypt_manifest

APPLICATION_ID = 0x50504C47  # "PPLG": a printpipe ledger, in the SQLite header (offset 68)
SCHEMA_VERSION = 1
DEFAULT_RETAILER_LIMIT_EUR = 150
DEFAULT_MAX_VIRN_FAILURES = 5
DEFAULT_MAX_TERMINAL_VIRN_FAILURES = 3
DEFAULT_TERMINAL_WINDOW_HOURS = 24
LOCK_MIN_TERMINALS = 2
"""A ticket locks only on wrong VIRNs from this many terminals: one terminal cannot lock a
ticket (it is throttled first, and its own failures never add up to a lock)."""
PACK_STATES = ("issued", "activated", "settled")
PAYABLE_STATES = ("activated", "settled")
BUSY_TIMEOUT_S = 60.0
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

SCHEMA = """
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE manifests (
    id INTEGER PRIMARY KEY,
    records_sha256 TEXT NOT NULL UNIQUE,
    body_sha256 TEXT NOT NULL,
    kind TEXT NOT NULL,
    game TEXT NOT NULL,
    game_number INTEGER NOT NULL,
    block INTEGER NOT NULL,
    first_pack INTEGER NOT NULL,
    last_pack INTEGER NOT NULL,
    records INTEGER NOT NULL,
    new_records INTEGER NOT NULL,
    prize_eur INTEGER NOT NULL,
    imported_at TEXT NOT NULL,
    file TEXT NOT NULL
);
CREATE TABLE tickets (
    id INTEGER PRIMARY KEY,
    virn INTEGER NOT NULL,
    prize_eur INTEGER NOT NULL,
    manifest INTEGER NOT NULL REFERENCES manifests(id),
    record TEXT NOT NULL
);
CREATE TABLE packs (
    id INTEGER PRIMARY KEY,
    game_number INTEGER NOT NULL,
    pack INTEGER NOT NULL,
    block INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('issued', 'activated', 'settled')),
    changed_at TEXT NOT NULL
);
CREATE INDEX packs_by_number ON packs (pack);
CREATE TABLE payments (
    ticket INTEGER PRIMARY KEY,
    amount_eur INTEGER NOT NULL,
    paid_at TEXT NOT NULL,
    terminal TEXT NOT NULL
);
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    terminal TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    ticket TEXT,
    answer TEXT NOT NULL
);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER payments_no_update BEFORE UPDATE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
CREATE TRIGGER payments_no_delete BEFORE DELETE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
"""

# Schema 1 (issue 11): wrong VIRNs per ticket *and terminal*, and a counter per terminal.
SCHEMA_1 = """
CREATE TABLE virn_failures (
    ticket INTEGER NOT NULL,
    terminal TEXT NOT NULL,
    failures INTEGER NOT NULL,
    last_at TEXT NOT NULL,
    PRIMARY KEY (ticket, terminal)
) WITHOUT ROWID;
CREATE TABLE terminal_failures (
    terminal TEXT PRIMARY KEY,
    window_start TEXT NOT NULL,
    failures INTEGER NOT NULL
);
"""

# Everything decide reads, in one statement: always one row (ticket columns NULL when there is
# no such ticket), the asking terminal's counter included.
_LOOKUP = """
SELECT t.virn, t.prize_eur,
       (SELECT COALESCE(SUM(failures), 0) FROM virn_failures WHERE ticket = q.id),
       (SELECT COUNT(*) FROM virn_failures WHERE ticket = q.id),
       p.paid_at, p.terminal, COALESCE(k.state, 'issued'),
       c.failures, c.window_start
FROM (SELECT ? AS id) q
LEFT JOIN tickets t ON t.id = q.id
LEFT JOIN payments p ON p.ticket = q.id
LEFT JOIN packs k ON k.id = ?
LEFT JOIN terminal_failures c ON c.terminal = ?
"""


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def now() -> str:
    """The current UTC time as the ledger writes it: ``YYYY-MM-DDTHH:MM:SSZ``."""
    return format_time(utc_now())


def ticket_key(ticket: TicketId) -> int:
    return ticket.game * 10**9 + ticket.pack * 10**3 + ticket.ticket


def ticket_of_key(key: int) -> TicketId:
    return TicketId(key // 10**9, key // 10**3 % 10**6, key % 10**3)


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
        data = {k: v for k, v in asdict(self).items() if v is not None and k != "extra"}
        return {**data, **self.extra, "ok": self.ok}


INVALID = Answer("INVALID_CODE", "INVALID CODE")


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
    """What a scanned code says before anything is looked up."""

    ticket: TicketId
    virn: int | None  # None for the inventory code


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

    virn: int
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
    ticket and the terminal before anything else about the ticket is said.
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
    if scanned.virn != row.virn:
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


# -- the file ------------------------------------------------------------------------------

_SQLITE_MAGIC = b"SQLite format 3\x00"


def _check_header(path: Path) -> None:
    """Refuse, without letting SQLite open it, a file that is not a printpipe ledger."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except FileNotFoundError:
        raise PrintpipeError(
            f"validation database {path} not found (create it: printpipe ledger import)"
        ) from None
    except OSError as exc:
        raise PrintpipeError(f"cannot read validation database {path}: {exc.strerror}") from None
    not_ledger = f"{path} is not a printpipe validation database"
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        raise PrintpipeError(f"{not_ledger} (not an SQLite file); it was not changed")
    application_id = int.from_bytes(header[68:72], "big")
    if application_id not in (APPLICATION_ID, 0):
        raise PrintpipeError(
            f"{not_ledger} (an SQLite file of another application); it was not changed"
        )
    if header[18:20] != b"\x02\x02":  # every ledger is in WAL mode from its creation
        raise PrintpipeError(
            f"{not_ledger} (an SQLite database printpipe did not create); it was not changed"
        )


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    target = f"{path.resolve().as_uri()}?mode={'ro' if read_only else 'rw'}"
    conn = sqlite3.connect(
        target, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False
    )
    conn.execute("PRAGMA synchronous=NORMAL")  # validations; payments and imports ask FULL
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def remove_sqlite_files(path: Path) -> None:
    """Remove a database file this process built, and its side files."""
    for leftover in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDE_FILES)):
        leftover.unlink(missing_ok=True)


class Ledger:
    """An open validation database; one per process (terminal).

    ``Ledger(path)`` opens an existing ledger (refusing any other file untouched);
    ``read_only=True`` never writes a byte of it.  A ledger is created only by
    :func:`import_manifest`.  ``clock`` gives the time (tests move it).
    """

    def __init__(
        self,
        path: Path,
        *,
        read_only: bool = False,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        _check_header(path)
        try:
            conn = _connect(path, read_only=read_only)
        except sqlite3.DatabaseError as exc:
            raise PrintpipeError(f"validation database {path} is unusable: {exc}") from None
        self._setup(conn, path, read_only=read_only, clock=clock, durable_sync="FULL")

    @classmethod
    def _build(cls, path: Path, *, clock: Callable[[], datetime]) -> Ledger:
        """A new, empty ledger at ``path``, a file nobody else knows of yet (see
        :func:`import_manifest`): no journal on disk, no sync until it is complete."""
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        os.fchmod(fd, PRIVATE_FILE_MODE)
        os.close(fd)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(SCHEMA + SCHEMA_1)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        _insert_default_settings(conn)
        book = cls.__new__(cls)
        book._setup(conn, path, read_only=False, clock=clock, durable_sync="OFF")
        return book

    def _setup(
        self,
        conn: sqlite3.Connection,
        path: Path,
        *,
        read_only: bool,
        clock: Callable[[], datetime],
        durable_sync: str,
    ) -> None:
        self.path = path
        self.conn = conn
        self.read_only = read_only
        self.clock = clock
        self._durable_sync = durable_sync
        try:
            if durable_sync != "OFF":
                self._check_schema()
            self.settings = self._read_settings()
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise PrintpipeError(f"validation database {path} is unusable: {exc}") from None
        except BaseException:
            conn.close()
            raise

    def _check_schema(self) -> None:
        conn = self.conn
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if application_id == 0 and version == 0 and {"tickets", "audit_log"} <= tables:
            if self.read_only:
                raise PrintpipeError(
                    f"validation database {self.path} has the layout of an earlier printpipe: "
                    "any command that writes to it (e.g. printpipe ledger config with a "
                    "change) upgrades it first"
                )
            _upgrade_from_0(conn)
        elif application_id != APPLICATION_ID:
            raise PrintpipeError(f"{self.path} is not a printpipe validation database")
        elif version != SCHEMA_VERSION:
            raise PrintpipeError(
                f"validation database {self.path} has layout {version}; this printpipe reads "
                f"layout {SCHEMA_VERSION}: use the printpipe that wrote it"
            )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_settings(self) -> Settings:
        values = dict(self.conn.execute("SELECT key, value FROM settings").fetchall())
        defaults = Settings()
        return Settings(
            **{name: int(values.get(name, getattr(defaults, name))) for name in SETTING_NAMES}
        )

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def _transaction(self, *, durable: bool = False) -> Iterator[None]:
        if self.read_only:
            raise PrintpipeError(f"validation database {self.path} is open read-only")
        conn = self.conn
        if durable:
            conn.execute(f"PRAGMA synchronous={self._durable_sync}")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if durable and self._durable_sync != "OFF":
                conn.execute("PRAGMA synchronous=NORMAL")

    def _log(
        self,
        terminal: str,
        action: str,
        given: str,
        ticket: str | None,
        answer: str,
        *,
        at: datetime | None = None,
    ) -> None:
        self.conn.execute(
            "INSERT INTO audit_log (at, terminal, action, input, ticket, answer) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (format_time(at or self.clock()), terminal, action, given, ticket, answer),
        )

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
        with self._transaction(durable=True):
            for key, value in wanted.items():
                self.conn.execute(
                    "INSERT INTO settings VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, str(value)),
                )
                self._log(terminal.value, "configure", key, None, str(value))
        self.settings = self._read_settings()
        return self.settings

    # -- validate and claim ----------------------------------------------------------------

    def _lookup(
        self, ticket: TicketId, terminal: TerminalId
    ) -> tuple[TicketRow | None, TerminalCounter]:
        found = self.conn.execute(
            _LOOKUP,
            (ticket_key(ticket), pack_key(ticket.game, ticket.pack), terminal.value),
        ).fetchone()
        *columns, failures, window_start = found
        row = None if columns[0] is None else TicketRow(*columns)
        if window_start is None:
            return row, TerminalCounter()
        return row, TerminalCounter(failures, parse_time(window_start))

    def _answer(self, scanned: ScannedCode, terminal: TerminalId, at: datetime) -> Answer:
        """Decide and apply what the decision counts; runs inside a write transaction."""
        ticket = scanned.ticket
        row, counter = None, TerminalCounter()
        if ticket.pack != SPECIMEN_PACK:
            row, counter = self._lookup(ticket, terminal)
        decision = decide(scanned, row, counter, self.settings, at=at)
        after = decision.terminal_after
        if after is not None and after.window_start is not None:
            stamp = format_time(at)
            self.conn.execute(
                "INSERT INTO virn_failures VALUES (?, ?, 1, ?) ON CONFLICT(ticket, terminal) "
                "DO UPDATE SET failures = failures + 1, last_at = excluded.last_at",
                (ticket_key(ticket), terminal.value, stamp),
            )
            self.conn.execute(
                "INSERT INTO terminal_failures VALUES (?, ?, ?) ON CONFLICT(terminal) "
                "DO UPDATE SET window_start = excluded.window_start, failures = excluded.failures",
                (terminal.value, format_time(after.window_start), after.failures),
            )
            if decision.throttles_terminal:
                until = format_time(after.window_start + self.settings.terminal_window)
                self._log(
                    terminal.value,
                    "throttle",
                    "",
                    None,
                    f"TERMINAL THROTTLED {until}: {after.failures} wrong validation numbers "
                    f"since {format_time(after.window_start)}",
                    at=at,
                )
        return decision.answer

    def validate(self, code: str, *, terminal: TerminalId) -> Answer:
        """Answer a scanned code (validation or inventory), logging it; never pays."""
        _require_terminal(terminal)
        scanned = read_code(code)
        given = audit_text(code)
        with self._transaction():
            at = self.clock()
            answer = INVALID if scanned is None else self._answer(scanned, terminal, at)
            self._log(terminal.value, "validate", given, answer.serial, answer.text, at=at)
        return answer

    def claim(self, code: str, *, terminal: TerminalId, office: bool = False) -> Answer:
        """Pay a winning ticket at most once; ``office`` (the lottery) pays above the limit."""
        _require_terminal(terminal)
        scanned = read_code(code)
        given = audit_text(code)
        with self._transaction(durable=True):
            at = self.clock()
            if scanned is None or scanned.virn is None:  # the inventory code never pays
                answer = INVALID
            else:
                answer = self._answer(scanned, terminal, at)
                if answer.outcome == "WIN" or (office and answer.outcome == "WIN_AT_LOTTERY"):
                    paid_at = format_time(at)
                    self.conn.execute(
                        "INSERT INTO payments VALUES (?, ?, ?, ?)",
                        (ticket_key(scanned.ticket), answer.amount_eur, paid_at, terminal.value),
                    )
                    answer = Answer(
                        "PAID",
                        f"PAID {answer.amount_eur}",
                        answer.serial,
                        amount_eur=answer.amount_eur,
                        paid_at=paid_at,
                        terminal=terminal.value,
                    )
            self._log(terminal.value, "claim", given, answer.serial, answer.text, at=at)
        return answer

    def record_refusal(self, *, action: str, terminal_text: str, given: str, reason: str) -> None:
        """Append to the audit log that an input was refused before anything was looked up.

        Every field is passed through :func:`audit_text`: what was sent may be anything.
        """
        with self._transaction():
            self._log(
                audit_text(terminal_text),
                "refuse",
                audit_text(f"{action}: {given}", limit=160),
                None,
                audit_text(f"REFUSED {reason}", limit=200),
            )

    # -- the office: locks -----------------------------------------------------------------

    def locks(self) -> Locks:
        """Locked tickets and throttled terminals, for the lottery's office to review."""
        at = self.clock()
        settings = self.settings
        tickets = []
        for key, failures, terminals, last_at in self.conn.execute(
            "SELECT ticket, SUM(failures), COUNT(*), MAX(last_at) FROM virn_failures "
            "GROUP BY ticket HAVING SUM(failures) >= ? AND COUNT(*) >= ? ORDER BY ticket",
            (settings.max_virn_failures, LOCK_MIN_TERMINALS),
        ):
            tickets.append(LockedTicket(ticket_of_key(key).serial, failures, terminals, last_at))
        terminals = []
        for name, failures, start in self.conn.execute(
            "SELECT terminal, failures, window_start FROM terminal_failures "
            "WHERE failures >= ? ORDER BY terminal",
            (settings.max_terminal_virn_failures,),
        ):
            until = TerminalCounter(failures, parse_time(start)).throttled_until(at, settings)
            if until is not None:
                terminals.append(ThrottledTerminal(name, failures, start, format_time(until)))
        return Locks(tickets, terminals)

    def unlock(self, ticket: TicketId, *, reason: Reason, terminal: TerminalId) -> str:
        """Release a ticket's wrong-VIRN count after the office has inspected the ticket.

        The counts are removed (the audit log keeps them, with the reason); the holder can then
        be paid, at the office (``claim --office``).
        """
        _require_terminal(terminal)
        if not isinstance(reason, Reason):
            raise TypeError("reason must be a printpipe.inputs.Reason")
        key = ticket_key(ticket)
        with self._transaction(durable=True):
            if self.conn.execute("SELECT 1 FROM tickets WHERE id = ?", (key,)).fetchone() is None:
                raise PrintpipeError(f"ticket {ticket.serial}: no such ticket in {self.path}")
            failures, terminals = self.conn.execute(
                "SELECT COALESCE(SUM(failures), 0), COUNT(*) FROM virn_failures WHERE ticket = ?",
                (key,),
            ).fetchone()
            if not failures:
                raise PrintpipeError(
                    f"ticket {ticket.serial} has no wrong validation numbers: nothing to unlock"
                )
            self.conn.execute("DELETE FROM virn_failures WHERE ticket = ?", (key,))
            report = (
                f"ticket {ticket.serial}: unlocked ({failures} wrong validation numbers "
                f"from {terminals} terminal{'s' if terminals > 1 else ''} released)"
            )
            given = audit_text(reason.text, limit=200)
            self._log(terminal.value, "unlock", given, ticket.serial, report)
        return report

    # -- packs -----------------------------------------------------------------------------

    def set_pack_state(
        self, packs: Sequence[PackRef], *, state: str, terminal: TerminalId
    ) -> list[str]:
        """Move packs to ``activated`` or ``settled``, all or none; one line per pack."""
        _require_terminal(terminal)
        if state not in ("activated", "settled"):
            raise ValueError(state)
        before = "issued" if state == "activated" else "activated"
        action = {"activated": "activate", "settled": "settle"}[state]
        report = []
        with self._transaction(durable=True):
            for given in packs:
                key, label, current = self._find_pack(given)
                if current == state:
                    report.append(f"pack {label}: already {state}")
                    continue
                if current != before:
                    raise PrintpipeError(
                        f"pack {label} is {current}: only an {before} pack can be {state}"
                    )
                self.conn.execute(
                    "UPDATE packs SET state = ?, changed_at = ? WHERE id = ?",
                    (state, format_time(self.clock()), key),
                )
                self._log(terminal.value, action, str(given), label, state)
                report.append(f"pack {label}: {state}")
        return report

    def _find_pack(self, given: PackRef) -> tuple[int, str, str]:
        query = "SELECT id, game_number, pack, state FROM packs WHERE "
        if given.game is not None:
            rows = self.conn.execute(
                query + "id = ?", (pack_key(given.game, given.pack),)
            ).fetchall()
        else:
            rows = self.conn.execute(query + "pack = ?", (given.pack,)).fetchall()
        if not rows:
            raise PrintpipeError(f"pack {given}: no such pack in {self.path}")
        if len(rows) > 1:
            raise PrintpipeError(f"pack {given} exists in several games: write it GGGG-PPPPPP")
        key, game_number, pack, state = rows[0]
        return key, f"{game_number:04d}-{pack:06d}", state

    # -- import ----------------------------------------------------------------------------

    def _import(
        self,
        manifest: Manifest,
        game: Game,
        identity: x25519.Identity,
        *,
        terminal: TerminalId,
        progress: Callable[[int], object] | None,
    ) -> str:
        """Load a verified manifest in one transaction (see :func:`import_manifest`)."""
        header = manifest.header
        checker = RecordChecker(game, manifest)
        stats = {"new": 0}
        stamp = format_time(self.clock())
        definition = game.definition

        with self._transaction(durable=True):
            known = self.conn.execute(
                "SELECT id FROM manifests WHERE records_sha256 = ?", (manifest.records_sha256,)
            ).fetchone()
            if known:
                return f"manifest {manifest.path} already imported (same records): nothing to do"
            cursor = self.conn.execute(
                "INSERT INTO manifests (records_sha256, body_sha256, kind, game, game_number, "
                "block, first_pack, last_pack, records, new_records, prize_eur, imported_at, "
                "file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)",
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
            manifest_id = cursor.lastrowid

            def on_lines(lines: list[bytes]) -> None:
                parsed = checker.parse(lines)
                if progress is not None:
                    progress(len(parsed.keys))
                if not len(parsed.keys):
                    return
                keys = parsed.keys
                existing = dict(
                    self.conn.execute(
                        "SELECT id, record FROM tickets WHERE id BETWEEN ? AND ?",
                        (int(keys.min()), int(keys.max())),
                    ).fetchall()
                )
                fresh = np.ones(len(keys), dtype=bool)
                if existing:
                    for i, key in enumerate(keys.tolist()):
                        record = existing.get(key)
                        if record is None:
                            continue
                        if record != parsed.lines[i].decode():
                            raise PrintpipeError(
                                f"manifest {manifest.path} refused: ticket "
                                f"{record.split(',')[0]} differs from the one already imported"
                            )
                        fresh[i] = False
                rows = [
                    (k, v, p, manifest_id, line.decode())
                    for k, v, p, line, new in zip(
                        keys.tolist(),
                        parsed.virn.tolist(),
                        parsed.prize_eur.tolist(),
                        parsed.lines,
                        fresh.tolist(),
                        strict=True,
                    )
                    if new
                ]
                self.conn.executemany("INSERT INTO tickets VALUES (?, ?, ?, ?, ?)", rows)
                stats["new"] += len(rows)
                block = int(header["block"])
                packs = np.unique(parsed.pack_number).tolist()
                self.conn.executemany(
                    "INSERT OR IGNORE INTO packs VALUES (?, ?, ?, ?, 'issued', ?)",
                    [
                        (pack_key(definition.number, p), definition.number, p, block, stamp)
                        for p in packs
                    ],
                )

            decrypt_manifest(manifest, identity, on_lines)
            checker.finish()
            self.conn.execute(
                "UPDATE manifests SET new_records = ? WHERE id = ?", (stats["new"], manifest_id)
            )
            summary = (
                f"imported {checker.seen:,} records ({stats['new']:,} new) of {definition.id} "
                f"block {header['block']}, pack numbers {header['packs']['first_pack_number']:06d} "
                f"to {header['packs']['last_pack_number']:06d}"
            )
            self._log(terminal.value, "import", audit_text(manifest.path.name), None, summary)
        return summary


def _require_terminal(terminal: object) -> None:
    if not isinstance(terminal, TerminalId):
        raise TypeError("terminal must be a printpipe.inputs.TerminalId (parse_terminal_id)")


def _insert_default_settings(conn: sqlite3.Connection) -> None:
    defaults = asdict(Settings())
    conn.executemany(
        "INSERT OR IGNORE INTO settings VALUES (?, ?)",
        [(key, str(value)) for key, value in defaults.items()],
    )


def _upgrade_from_0(conn: sqlite3.Connection) -> None:
    """Bring a ledger written before schema 1 to it, in one transaction.

    Its wrong-VIRN counts were per ticket only; they are kept, against one pseudo-terminal
    ``before-upgrade``, so they can no longer lock a ticket by themselves (they could be the
    work of one terminal: the defect schema 1 fixes).  The office sees them in the audit log.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] == 0:  # nobody upgraded it meanwhile
            conn.execute("ALTER TABLE virn_failures RENAME TO virn_failures_0")
            for statement in SCHEMA_1.split(";"):
                if statement.strip():
                    conn.execute(statement)
            stamp = now()
            conn.execute(
                "INSERT INTO virn_failures SELECT ticket, 'before-upgrade', failures, ? "
                "FROM virn_failures_0",
                (stamp,),
            )
            conn.execute("DROP TABLE virn_failures_0")
            _insert_default_settings(conn)
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute(
                "INSERT INTO audit_log (at, terminal, action, input, ticket, answer) "
                "VALUES (?, 'printpipe', 'upgrade', '', NULL, ?)",
                (stamp, f"ledger layout 0 -> {SCHEMA_VERSION}"),
            )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


# -- one call per command -------------------------------------------------------------------


def configure(db_path: Path, *, terminal: TerminalId, **changes: int | None) -> Settings:
    """The ledger's settings, after the given changes (audited); with no change, the file is
    opened read-only and not written."""
    changing = any(value is not None for value in changes.values())
    with Ledger(db_path, read_only=not changing) as book:
        return book.configure(terminal=terminal, **changes)


def record_refusal(
    db_path: Path, *, action: str, terminal_text: str, given: str, reason: str
) -> None:
    """Record in the ledger at ``db_path`` an input refused before anything was looked up."""
    with Ledger(db_path) as book:
        book.record_refusal(action=action, terminal_text=terminal_text, given=given, reason=reason)


# -- creating and importing ----------------------------------------------------------------

LOTTERY = TerminalId("lottery")


def import_manifest(
    db_path: Path,
    *,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    terminal: TerminalId = LOTTERY,
    progress: Callable[[int], object] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> str:
    """Load a verified manifest into the ledger at ``db_path``, creating it if absent.

    All or nothing: any failure (wrong key, a record that disagrees with the rules or with an
    already-imported manifest) leaves the ledger as it was.  The same manifest again is a
    no-op; one that conflicts is refused.  A new ledger is built and filled under a temporary
    name beside ``db_path``, then linked to ``db_path`` only if nothing is there yet: a
    failed import removes only its own temporary file, and if another import created the
    ledger meanwhile, this one is imported into it.
    """
    _require_terminal(terminal)
    if not game.definition.records.has_virn:
        # e.g. golden-animals: an online unit is never scanned at a retailer, and its
        # records carry no VIRN to check a scanned code against
        raise PrintpipeError(
            f"manifest {manifest.path} refused: the records of {game.definition.id} carry "
            "no VIRN, its units are not validated by retailers"
        )
    if not os.path.lexists(db_path):
        tmp = partial_path(db_path)
        remove_sqlite_files(tmp)  # left by a crashed process of the same id
        try:
            try:
                book = Ledger._build(tmp, clock=clock)
            except OSError as exc:
                raise PrintpipeError(f"cannot create {db_path}: {exc.strerror}") from None
            try:
                summary = book._import(
                    manifest, game, identity, terminal=terminal, progress=progress
                )
                book.conn.execute("PRAGMA journal_mode=WAL")
            finally:
                book.close()  # the last connection: the WAL is checkpointed into the file
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
    with Ledger(db_path, clock=clock) as book:
        return book._import(manifest, game, identity, terminal=terminal, progress=progress)
