"""An open ledger: its database, its key, its settings, and its audit log.

:class:`LedgerCore` is what every job on the ledger shares (the book's validations and
claims, the office's controls, terminals, packs): opening (refusing a database that is not a
ledger, or a key that is not its own), the settings read once, each entry appended to the
log in the transaction that acts and sealed under the ledger key (:mod:`printpipe.ledger.log`),
and a signed request's nonce admitted once in that same transaction.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from printpipe.errors import PrintpipeError
from printpipe.ids import TicketId
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import (
    ENTRY_FIELDS,
    LOG_PURPOSE,
    PLAY_COLUMNS,
    Checkpoint,
    Entry,
    LogKey,
    LogReport,
    MoneyRows,
    OutboxCall,
    Payment,
    PlayRecord,
    WalletEntry,
    canonical_entry,
    seal_batch,
)
from printpipe.ledger.log import verify_log as verify_sealed_log
from printpipe.ledger.proofs import Commitments
from printpipe.ledger.rules import SETTING_NAMES, Settings, format_time, utc_now
from printpipe.ledger.store import Database, Location, Tx, open_database, ticket_key, values_table

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
    created: int
    """The signature's ``created`` time (Unix seconds), which a replay repeats: nonces are
    kept in its order, so that a batch of them is written at the end of one index."""
    request: str | None = None
    """The request's id (``X-Request-Id``), written in its audit entries."""


SEAL_BATCH = 20_000
"""Entries a seal takes in one transaction at most (the rest: the next seal)."""
_SEAL_STATEMENT_ROWS = 300
"""Seals written (and marks deleted) by one statement (SQLite binds at most 32,766 values)."""
_ENTRY_COLUMNS = "l.id, l.at, l.terminal, l.action, l.input, l.ticket, l.answer, l.request, l.mac"
log = logging.getLogger("printpipe.ledger")


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _entry(row: Sequence[Any]) -> Entry:
    """A row of ``SELECT {_ENTRY_COLUMNS}``."""
    entry_id, at, terminal, action, given, ticket, answer, request, mac = row
    return Entry(int(entry_id), str(at), str(terminal), str(action), str(given),
                 None if ticket is None else str(ticket), str(answer),
                 None if request is None else str(request), _bytes(mac))  # fmt: skip


def _play_record(row: Sequence[Any]) -> PlayRecord:
    """A row of ``SELECT {PLAY_COLUMNS} FROM plays``."""
    play, player, unit, commitment, position, stake, lot, balance, at, jackpot = row
    return PlayRecord(str(play), str(player), int(unit), int(commitment), int(position),
                      int(stake), int(lot), int(balance), str(at),
                      None if jackpot is None else int(jackpot))  # fmt: skip


def _ticket_of_serial(serial: str) -> int | None:
    """A ticket's row id from its serial ``GGGG-PPPPPP-TTT-C`` as logged."""
    parts = serial.split("-")
    if len(parts) != 4 or not all(part.isdigit() for part in parts):
        return None
    return ticket_key(TicketId(int(parts[0]), int(parts[1]), int(parts[2])))


def lock_key(kind: str, name: str | int) -> int:
    digest = hashlib.blake2b(f"{kind}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & 0x7FFF_FFFF_FFFF_FFFF


class LedgerCore:
    """What every job on an open ledger shares (:class:`printpipe.ledger.book.Ledger` is
    the one to open)."""

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
    ) -> Self:
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
        self.log_key = LogKey(key.derive(LOG_PURPOSE)) if key is not None else None
        self.commitments = Commitments()
        self._refused: set[int] = set()
        """Entries the sealer refused (and said so once)."""
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
        """Seal what was logged (with the key, on a writable ledger), then close."""
        try:
            if self.log_key is not None and not self.read_only:
                with contextlib.suppress(PrintpipeError):
                    self.seal_all()
        finally:
            self.db.close()

    def __enter__(self) -> Self:
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
        """Append an entry (and, by trigger, its mark in ``audit_pending``): no shared row, no
        key; the sealer chains it (:mod:`printpipe.ledger.log`)."""
        request = getattr(tx, "request", None)
        self._log_many(tx, [(terminal, action, given, ticket, answer, request)], at=at)

    def _log_many(
        self,
        tx: Tx,
        entries: Sequence[tuple[str, str, str, str | None, str, str | None]],
        *,
        at: datetime | None = None,
    ) -> None:
        """Append entries (terminal, action, input, ticket, answer, request id), in order."""
        if not entries:
            return
        stamp = format_time(at or self.clock())
        key = self.log_key
        rows = [
            (stamp, *entry, None if key is None else key.entry_mac(canonical_entry(stamp, *entry)))
            for entry in entries
        ]
        tx.write(*tx.append_sql("audit_log", ENTRY_FIELDS, rows))

    def _log_key(self) -> LogKey:
        if self.log_key is None:
            raise PrintpipeError("the ledger key is needed to seal or verify the log (--keys DIR)")
        return self.log_key

    def seal(self, *, limit: int = SEAL_BATCH, wait: bool = False) -> int:
        """Chain the entries written since the last seal (at most ``limit``); how many.  One
        sealer at a time: the head row's lock (on PostgreSQL another sealer skips a round,
        unless ``wait``: then it waits for the other's round and seals what is left).  An
        entry whose MAC does not verify is not sealed (and said once in the log)."""
        key = self._log_key()
        with self.db.transaction() as tx:
            return seal_in(tx, key, limit=limit, wait=wait, refused=self._refused)

    def seal_all(self) -> None:
        """Seal every entry written so far, this process's included, waiting for a sealer at
        work: what a command logged is sealed before it ends (a skipped round could leave its
        last entries to the next keyed process)."""
        while self.seal(wait=True) == SEAL_BATCH:
            pass

    def verify_log(
        self, *, checkpoints: Sequence[Checkpoint] = (), units: bool = True
    ) -> LogReport:
        """Check the sealed log, the entries awaiting their seal, every payment, every money
        row of the online game (``units``: and every unit against its commitment and every play
        against the deal order) and the ``checkpoints`` (read-only): :func:`verify_ledger`."""
        with self.db.snapshot() as tx:
            return verify_ledger(
                tx, self._require_key(), self.commitments, checkpoints=checkpoints, units=units
            )

    def ledger_id(self) -> str:
        """The ledger's id (what its witnesses are kept by), checked; made if it has none."""
        key = self._log_key()
        with self.db.snapshot() as tx:
            row = tx.one("SELECT value FROM ledger_meta WHERE key = 'ledger_id'")
            problem = ledger_id_problem(tx, key, sealed=True)
        if problem is not None and row is None and not self.read_only:
            with self.db.transaction() as tx:
                make_ledger_id(tx, key)
            return self.ledger_id()
        if problem is not None or row is None:
            raise PrintpipeError(f"validation database {self.location}: {problem}")
        return str(row[0])

    def sealed_hash(self, seq: int) -> bytes | None:
        """The hash of seal ``seq`` (None: no such seal)."""
        with self.db.snapshot() as tx:
            row = tx.one("SELECT hash FROM audit_seal WHERE seq = ?", (seq,))
        return None if row is None else bytes(row[0])

    def head(self) -> tuple[int, bytes]:
        """The sealed log's head, its last ``seq`` and hash, after sealing what is pending."""
        self.seal_all()
        with self.db.snapshot() as tx:
            row = tx.one("SELECT seq, hash FROM audit_head WHERE id = 1")
        assert row is not None
        return int(row[0]), bytes(row[1])

    # -- validate and claim ----------------------------------------------------------------

    def admit(self, admission: Admission) -> None:
        """Admit a signed request that writes nothing else (a read of the game server), in a
        transaction of its own: its nonce recorded once; a replay or a revoked terminal
        raises :class:`RequestRefused`."""
        with self.db.transaction() as tx:
            self._admit(tx, admission)

    def _admit(self, tx: Tx, admission: Admission | None) -> None:
        """Record a signed request's nonce, refusing a replay or a revoked terminal; raises
        inside the transaction, so nothing it did is kept."""
        if admission is None:
            return
        tx.request = admission.request  # type: ignore[attr-defined]  # for its log entries
        (refused,) = self._admit_many(tx, [admission])
        if refused is not None:
            raise refused

    def _admit_many(
        self, tx: Tx, admissions: Sequence[Admission | None]
    ) -> list[RequestRefused | None]:
        """Record signed requests' nonces (one statement for them all): for each, None
        (admitted, or not signed) or why it is refused, a replay or a revoked terminal; a
        refused nonce writes nothing.  A nonce is recorded only for a terminal registered and
        not revoked, read in this transaction."""
        return self._admit_later(tx, admissions)()

    def _admit_later(
        self, tx: Tx, admissions: Sequence[Admission | None]
    ) -> Callable[[], list[RequestRefused | None]]:
        """:meth:`_admit_many`, its statement sent now and its outcomes read by the function
        returned (``Tx.send``)."""
        rows = [(n, a.created, a.key_id, a.nonce) for n, a in enumerate(admissions) if a]
        sent: Callable[[], list[tuple[Any, ...]]] = list
        if rows:
            table, params = values_table("q", ("n", "created", "key_id", "nonce"), rows)
            sent = tx.send(
                table + "INSERT INTO nonces SELECT created, key_id, nonce FROM q WHERE EXISTS "
                "(SELECT 1 FROM terminals t WHERE t.key_id = q.key_id AND revoked_at IS NULL) "
                "ORDER BY n ON CONFLICT DO NOTHING RETURNING key_id, nonce",
                params,
            )

        def outcomes() -> list[RequestRefused | None]:
            fresh = {(str(key_id), str(nonce)) for key_id, nonce in sent()}
            refusals: list[RequestRefused | None] = []
            for admission in admissions:
                if admission is None:
                    refusals.append(None)
                    continue
                if (admission.key_id, admission.nonce) in fresh:
                    fresh.discard((admission.key_id, admission.nonce))  # a second time: a replay
                    refusals.append(None)
                    continue
                row = tx.one(
                    "SELECT revoked_at FROM terminals WHERE key_id = ?", (admission.key_id,)
                )
                if row is None or row[0] is not None:
                    refusals.append(RevokedTerminal("the signing terminal is revoked or unknown"))
                else:
                    refusals.append(
                        ReplayedRequest("this request's nonce was seen already (a replay)")
                    )
            return refusals

        return outcomes


# -- sealing and verifying, in a transaction of the caller's -------------------------------------


def seal_in(
    tx: Tx, key: LogKey, *, limit: int = SEAL_BATCH, wait: bool = False,
    refused: set[int] | None = None, trusted: bool = False,
) -> int:  # fmt: skip
    """Seal in ``tx`` what is pending (at most ``limit``): how many.  An entry that is not
    sealable (its MAC does not verify) is left pending, and logged once (``refused``: the ids
    said already); ``trusted``: every entry is sealed as it is (the upgrade, which seals what
    an earlier printpipe wrote, before entries had MACs)."""
    lock = tx.lock_rows if wait else tx.skip_locked
    head = tx.one("SELECT seq, hash, mac FROM audit_head WHERE id = 1" + lock)
    if head is None:
        return 0
    rows = tx.execute(
        f"SELECT {_ENTRY_COLUMNS} FROM audit_pending p JOIN audit_log l ON l.id = "
        f"p.entry ORDER BY p.entry LIMIT {int(limit)}"
    )
    if head[2] is None:  # the first seal of a new ledger: its id, made once
        make_ledger_id(tx, key)
    entries = [_entry(row) for row in rows]
    if not trusted:
        verified = [(entry, entry.sealable(key)) for entry in entries]  # one MAC an entry
        sealable = [entry for entry, good in verified if good]
        for entry, good in verified:  # inserted without the key: never chained, named by verify-log
            if not good and (refused is None or entry.id not in refused):
                if refused is not None:
                    refused.add(entry.id)
                log.error(
                    "entry %d (%s %s) was inserted without the ledger key: not sealed",
                    entry.id, entry.action, entry.terminal,
                )  # fmt: skip
        entries = sealable
    if not entries and head[2] is not None:
        return 0
    seals, seq, top = seal_batch(key, int(head[0]), bytes(head[1]), entries)
    for at in range(0, len(seals), _SEAL_STATEMENT_ROWS):  # a few statements, not 2N
        rows_now = seals[at : at + _SEAL_STATEMENT_ROWS]
        marks = ", ".join(["(?, ?, ?)"] * len(rows_now))
        tx.execute(f"INSERT INTO audit_seal VALUES {marks}", [v for row in rows_now for v in row])
        ids = [row[1] for row in rows_now]
        tx.execute(f"DELETE FROM audit_pending WHERE entry IN ({', '.join('?' * len(ids))})", ids)
    tx.execute(
        "UPDATE audit_head SET seq = ?, hash = ?, mac = ? WHERE id = 1",
        (seq, top, key.head_mac(seq, top)),
    )
    return len(entries)


def make_ledger_id(tx: Tx, key: LogKey) -> None:
    """Give the ledger its id, with its MAC, unless it has one (the first keyed seal)."""
    if tx.one("SELECT value FROM ledger_meta WHERE key = 'ledger_id'") is None:
        ledger_id = secrets.token_hex(16)
        tx.executemany(
            "INSERT INTO ledger_meta VALUES (?, ?)",
            [("ledger_id", ledger_id), ("ledger_id_mac", key.ledger_id_mac(ledger_id).hex())],
        )


def ledger_id_problem(tx: Tx, key: LogKey, *, sealed: bool) -> str | None:
    """What is wrong with the ledger's id (None: nothing; a ledger never sealed has none)."""
    meta = dict(
        tx.execute("SELECT key, value FROM ledger_meta WHERE key IN ('ledger_id', 'ledger_id_mac')")
    )
    if "ledger_id" not in meta:
        return "the ledger's id was deleted" if sealed else None
    if meta.get("ledger_id_mac") != key.ledger_id_mac(str(meta["ledger_id"])).hex():
        return "the ledger's id was changed: its MAC does not verify"
    return None


def verify_ledger(
    tx: Tx, ledger_key: LedgerKey, commitments: Commitments, *,
    checkpoints: Sequence[Checkpoint] = (), units: bool = True, money: bool = True,
) -> LogReport:  # fmt: skip
    """Everything ``ledger verify-log`` checks, in ``tx``: the log (:func:`printpipe.ledger.
    log.verify_log`), the ledger's id, the money rows (``money``: the upgrade checks a ledger
    before its rows have MACs without them) and every online block's units and plays
    (``units``)."""
    key = LogKey(ledger_key.derive(LOG_PURPOSE))
    head = tx.one("SELECT seq, hash, mac FROM audit_head WHERE id = 1")
    seals = tx.execute("SELECT seq, entry, hash FROM audit_seal ORDER BY seq")
    rows = tx.execute(f"SELECT {_ENTRY_COLUMNS} FROM audit_log l")
    paid = tx.execute("SELECT ticket, amount_eur, paid_at, terminal, mac FROM payments")
    played = tx.execute(f"SELECT {PLAY_COLUMNS}, mac FROM plays")
    report = verify_sealed_log(
        key,
        head=None if head is None else (int(head[0]), bytes(head[1]), _bytes(head[2])),
        seals=((int(q), int(e), bytes(h)) for q, e, h in seals),
        entries=[_entry(row) for row in rows],
        payments=[Payment(int(t), int(a), str(w), str(by), bytes(m)) for t, a, w, by, m in paid],
        ticket_of_serial=_ticket_of_serial,
        plays=[_play_record(row[:-1]) for row in played],
        checkpoints=checkpoints,
        money=_money_rows(tx, played) if money else None,
    )
    if money:
        problem = ledger_id_problem(tx, key, sealed=head is not None and head[2] is not None)
        if problem:
            report.add(problem)
    if units:
        from printpipe.ledger.units import check_places, check_units

        names = {}
        for (commitment,) in tx.execute("SELECT commitment FROM deal_orders ORDER BY 1"):
            loaded = commitments.by_id(tx, int(commitment))
            names[loaded.id] = loaded.name
            counted, problems = check_units(
                tx, loaded=loaded, ledger_key=ledger_key, log_key=key, macs=money
            )
            report.units += counted
            for problem in problems:
                report.add(problem)
        if money:
            for problem in check_places(tx, key, names):
                report.add(problem)
    return report


def _money_rows(tx: Tx, played: list[tuple[Any, ...]]) -> MoneyRows:
    wallet = tx.execute("SELECT reference, kind, player, amount_cents, at, mac FROM wallet_entries")
    players = tx.execute("SELECT id, balance_cents, stake_day, staked_cents FROM players")
    return MoneyRows(
        play_macs={str(row[0]): _bytes(row[-1]) for row in played},
        wallet=[
            (WalletEntry(str(r), str(k), str(p), int(a), str(at)), _bytes(m))
            for r, k, p, a, at, m in wallet
        ],
        balances={str(p): int(b) for p, b, _, _ in players},
        stakes={str(p): (None if d is None else str(d), int(c)) for p, _, d, c in players},
        outbox=[
            (OutboxCall(str(r), str(k), str(p), int(a), str(s), str(at)), _bytes(m), str(state))
            for r, k, p, a, s, at, m, state in tx.execute(
                "SELECT reference, kind, player, amount_cents, split, created_at, mac, state "
                "FROM wallet_outbox"
            )
        ],
    )
