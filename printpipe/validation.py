"""The lottery's validation database: import manifests, pack states, validate, claim, audit log.

Why SQLite: the lottery needs one file it can copy and back up, that many retailer terminals
(processes) can read and write at once safely.  WAL mode lets readers run during a write;
every state change is one ``BEGIN IMMEDIATE`` transaction, so SQLite's single writer lock
serializes claims: a ticket is paid at most once because the payment's primary key is the
ticket and the check and the insert happen under that lock.

Schema (one file, ``PRAGMA journal_mode=WAL``)::

    settings(key PK, value)                      retailer_limit_eur (150), max_virn_failures (5)
    manifests(id PK, records_sha256 UNIQUE, ...)  one row per imported manifest
    tickets(id PK, virn, prize_eur, manifest, record)
        id = game * 10**9 + pack * 10**3 + ticket; record = the manifest's exact CSV row
    packs(id PK, game_number, pack, block, state, changed_at)
        id = game * 10**6 + pack; state issued -> activated -> settled
    virn_failures(ticket PK, failures)           wrong VIRNs per ticket; locked at the maximum
    payments(ticket PK, amount_eur, paid_at, terminal)            append-only (triggers)
    audit_log(id PK AUTOINCREMENT, at, terminal, action, input, ticket, answer)
                                                                   append-only (triggers)

Validation answers are exactly the strings of the spec (``docs/ticket-ids-and-security.md``).
Validations commit with ``synchronous=NORMAL`` (durable across a crash of the process, fast);
payments and imports with ``synchronous=FULL`` (durable across a power cut).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pyrage import x25519

from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.ids import (
    SPECIMEN_PACK,
    TicketId,
    parse_inventory_code,
    parse_validation_code,
)
from printpipe.manifest import Manifest, RecordChecker, decrypt_manifest

DEFAULT_RETAILER_LIMIT_EUR = 150
DEFAULT_MAX_VIRN_FAILURES = 5
PACK_STATES = ("issued", "activated", "settled")
PAYABLE_STATES = ("activated", "settled")
BUSY_TIMEOUT_S = 60.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS manifests (
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
CREATE TABLE IF NOT EXISTS tickets (
    id INTEGER PRIMARY KEY,
    virn INTEGER NOT NULL,
    prize_eur INTEGER NOT NULL,
    manifest INTEGER NOT NULL REFERENCES manifests(id),
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS packs (
    id INTEGER PRIMARY KEY,
    game_number INTEGER NOT NULL,
    pack INTEGER NOT NULL,
    block INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('issued', 'activated', 'settled')),
    changed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS packs_by_number ON packs (pack);
CREATE TABLE IF NOT EXISTS virn_failures (
    ticket INTEGER PRIMARY KEY,
    failures INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS payments (
    ticket INTEGER PRIMARY KEY,
    amount_eur INTEGER NOT NULL,
    paid_at TEXT NOT NULL,
    terminal TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    terminal TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    ticket TEXT,
    answer TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS payments_no_update BEFORE UPDATE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
CREATE TRIGGER IF NOT EXISTS payments_no_delete BEFORE DELETE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
"""

_LOOKUP = """
SELECT t.virn, t.prize_eur, f.failures, p.paid_at, p.terminal, k.state
FROM tickets t
LEFT JOIN virn_failures f ON f.ticket = t.id
LEFT JOIN payments p ON p.ticket = t.id
LEFT JOIN packs k ON k.id = ?
WHERE t.id = ?
"""


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ticket_key(ticket: TicketId) -> int:
    return ticket.game * 10**9 + ticket.pack * 10**3 + ticket.ticket


def pack_key(game_number: int, pack: int) -> int:
    return game_number * 10**6 + pack


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


@dataclass(frozen=True)
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


def decide(scanned: ScannedCode, row: tuple | None, settings: Settings) -> tuple[Answer, bool]:
    """The answer for a scanned code given its database row; and whether it is a VIRN failure.

    Pure: the order of the checks is the policy.  A specimen is refused before any lookup;
    the inventory code answers only the pack state; a wrong VIRN is counted before anything
    else about the ticket is said, and a locked ticket says nothing more.
    """
    ticket = scanned.ticket
    if ticket.pack == SPECIMEN_PACK:
        return Answer("SPECIMEN", "SPECIMEN, NOT VALID", ticket.serial), False
    if row is None:
        return Answer("UNKNOWN_TICKET", "UNKNOWN TICKET", ticket.serial), False
    virn, prize, failures, paid_at, terminal, state = row
    state = state or "issued"
    if scanned.virn is None:
        return (
            Answer("PACK_STATE", f"PACK {state.upper()}", ticket.serial, pack_state=state),
            False,
        )
    if (failures or 0) >= settings.max_virn_failures:
        return Answer("LOCKED", "LOCKED", ticket.serial), False
    if scanned.virn != virn:
        return Answer("WRONG_VALIDATION_NUMBER", "WRONG VALIDATION NUMBER", ticket.serial), True
    if paid_at is not None:
        return (
            Answer(
                "ALREADY_PAID",
                f"ALREADY PAID {paid_at} {terminal}",
                ticket.serial,
                paid_at=paid_at,
                terminal=terminal,
            ),
            False,
        )
    if state not in PAYABLE_STATES:
        return Answer("PACK_NOT_ACTIVATED", "PACK NOT ACTIVATED", ticket.serial), False
    if prize == 0:
        return Answer("NO_WIN", "NO WIN", ticket.serial, amount_eur=0), False
    if prize <= settings.retailer_limit_eur:
        return Answer("WIN", f"WIN {prize}", ticket.serial, amount_eur=prize), False
    return (
        Answer(
            "WIN_AT_LOTTERY", f"WIN {prize} - claim at the lottery", ticket.serial, amount_eur=prize
        ),
        False,
    )


def _safe_input(code: str) -> str:
    """What was scanned, as printable ASCII and bounded, for the audit log."""
    return code[:64].encode("ascii", "backslashreplace").decode("ascii")


class Ledger:
    """An open validation database; one per process (terminal)."""

    def __init__(self, path: Path, create: bool = False) -> None:
        self.path = path
        if not create and not path.is_file():
            raise PrintpipeError(
                f"validation database {path} not found (create it: printpipe ledger import)"
            )
        try:
            self.conn = sqlite3.connect(
                path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False
            )
            mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal":
                raise PrintpipeError(f"validation database {path}: cannot switch to WAL mode")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
            if create or "tickets" not in tables:
                if not create:
                    raise PrintpipeError(f"{path} is not a printpipe validation database")
                self.conn.executescript(SCHEMA)
                self.conn.execute(
                    "INSERT OR IGNORE INTO settings VALUES ('retailer_limit_eur', ?), "
                    "('max_virn_failures', ?)",
                    (str(DEFAULT_RETAILER_LIMIT_EUR), str(DEFAULT_MAX_VIRN_FAILURES)),
                )
            self.settings = self._read_settings()
        except sqlite3.DatabaseError as exc:
            raise PrintpipeError(f"validation database {path} is unusable: {exc}") from None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read_settings(self) -> Settings:
        values = dict(self.conn.execute("SELECT key, value FROM settings").fetchall())
        return Settings(
            retailer_limit_eur=int(values.get("retailer_limit_eur", DEFAULT_RETAILER_LIMIT_EUR)),
            max_virn_failures=int(values.get("max_virn_failures", DEFAULT_MAX_VIRN_FAILURES)),
        )

    def configure(
        self, retailer_limit_eur: int | None, max_virn_failures: int | None, terminal: str
    ) -> Settings:
        changes = {"retailer_limit_eur": retailer_limit_eur, "max_virn_failures": max_virn_failures}
        with self._transaction(durable=True):
            for key, value in changes.items():
                if value is None:
                    continue
                if value < 1:
                    raise PrintpipeError(f"{key} must be at least 1, got {value}")
                self.conn.execute(
                    "INSERT INTO settings VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, str(value)),
                )
                self._log(terminal, "configure", key, None, str(value))
        self.settings = self._read_settings()
        return self.settings

    # -- transactions ----------------------------------------------------------------------

    class _Tx:
        def __init__(self, conn: sqlite3.Connection, durable: bool) -> None:
            self.conn = conn
            self.durable = durable

        def __enter__(self) -> None:
            if self.durable:
                self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("BEGIN IMMEDIATE")

        def __exit__(self, kind: object, exc: object, tb: object) -> None:
            try:
                self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
            finally:
                if self.durable:
                    self.conn.execute("PRAGMA synchronous=NORMAL")

    def _transaction(self, durable: bool = False) -> Ledger._Tx:
        return Ledger._Tx(self.conn, durable)

    def _log(self, terminal: str, action: str, given: str, ticket: str | None, answer: str) -> None:
        self.conn.execute(
            "INSERT INTO audit_log (at, terminal, action, input, ticket, answer) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (now(), terminal, action, _safe_input(given), ticket, answer),
        )

    # -- validate and claim ----------------------------------------------------------------

    def _answer(self, scanned: ScannedCode) -> Answer:
        """Decide, counting a VIRN failure; must run inside a write transaction."""
        ticket = scanned.ticket
        row = None
        if ticket.pack != SPECIMEN_PACK:
            row = self.conn.execute(
                _LOOKUP, (pack_key(ticket.game, ticket.pack), ticket_key(ticket))
            ).fetchone()
        answer, failed = decide(scanned, row, self.settings)
        if failed:
            self.conn.execute(
                "INSERT INTO virn_failures VALUES (?, 1) "
                "ON CONFLICT(ticket) DO UPDATE SET failures = failures + 1",
                (ticket_key(ticket),),
            )
        return answer

    def validate(self, code: str, terminal: str) -> Answer:
        """Answer a scanned code (validation or inventory), logging it; never pays."""
        with self._transaction():
            scanned = read_code(code)
            answer = INVALID if scanned is None else self._answer(scanned)
            self._log(terminal, "validate", code, answer.serial, answer.text)
        return answer

    def claim(self, code: str, terminal: str, office: bool = False) -> Answer:
        """Pay a winning ticket at most once; ``office`` (the lottery) pays above the limit."""
        with self._transaction(durable=True):
            scanned = read_code(code)
            if scanned is None or scanned.virn is None:  # the inventory code never pays
                answer = INVALID
            else:
                answer = self._answer(scanned)
                if answer.outcome == "WIN" or (office and answer.outcome == "WIN_AT_LOTTERY"):
                    paid_at = now()
                    self.conn.execute(
                        "INSERT INTO payments VALUES (?, ?, ?, ?)",
                        (ticket_key(scanned.ticket), answer.amount_eur, paid_at, terminal),
                    )
                    answer = Answer(
                        "PAID",
                        f"PAID {answer.amount_eur}",
                        answer.serial,
                        amount_eur=answer.amount_eur,
                        paid_at=paid_at,
                        terminal=terminal,
                    )
            self._log(terminal, "claim", code, answer.serial, answer.text)
        return answer

    # -- packs -----------------------------------------------------------------------------

    def set_pack_state(self, packs: list[str], state: str, terminal: str) -> list[str]:
        """Move packs to ``activated`` or ``settled``, all or none; one line per pack."""
        if state not in ("activated", "settled"):
            raise ValueError(state)
        before = "issued" if state == "activated" else "activated"
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
                    "UPDATE packs SET state = ?, changed_at = ? WHERE id = ?", (state, now(), key)
                )
                action = {"activated": "activate", "settled": "settle"}[state]
                self._log(terminal, action, given, label, state)
                report.append(f"pack {label}: {state}")
        return report

    def _find_pack(self, given: str) -> tuple[int, str, str]:
        text = given.strip()
        game_text, sep, pack_text = text.rpartition("-")
        if not pack_text.isdigit() or len(pack_text) > 6 or (sep and not game_text.isdigit()):
            raise PrintpipeError(f"pack {given!r}: expected a pack number PPPPPP or GGGG-PPPPPP")
        if sep:
            rows = self.conn.execute(
                "SELECT id, game_number, pack, state FROM packs WHERE id = ?",
                (pack_key(int(game_text), int(pack_text)),),
            ).fetchall()
        else:
            rows = self.conn.execute(
                "SELECT id, game_number, pack, state FROM packs WHERE pack = ?", (int(pack_text),)
            ).fetchall()
        if not rows:
            raise PrintpipeError(f"pack {given}: no such pack in {self.path}")
        if len(rows) > 1:
            raise PrintpipeError(f"pack {given} exists in several games: write it GGGG-PPPPPP")
        key, game_number, pack, state = rows[0]
        return key, f"{game_number:04d}-{pack:06d}", state

    # -- import ----------------------------------------------------------------------------

    def import_manifest(
        self,
        manifest: Manifest,
        game: Game,
        identity: x25519.Identity,
        terminal: str = "lottery",
        progress: Callable[[int], object] | None = None,
    ) -> str:
        """Load a verified manifest; the same one again is a no-op, a conflicting one refused.

        All in one transaction: any failure (wrong key, a record that disagrees with the rules
        or with an already-imported manifest) rolls back everything.
        """
        header = manifest.header
        if not game.definition.records.has_virn:
            # e.g. golden-animals: an online unit is never scanned at a retailer, and its
            # records carry no VIRN to check a scanned code against
            raise PrintpipeError(
                f"manifest {manifest.path} refused: the records of {game.definition.id} carry "
                "no VIRN, its units are not validated by retailers"
            )
        checker = RecordChecker(game, manifest)
        stats = {"new": 0}
        stamp = now()
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
            self._log(terminal, "import", manifest.path.name, None, summary)
        return summary
