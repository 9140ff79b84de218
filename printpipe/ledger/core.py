"""An open ledger: its database, its key, its settings, and its audit log.

:class:`LedgerCore` is what every job on the ledger shares (the book's validations and
claims, the office's controls, terminals, packs): opening (refusing a database that is not a
ledger, or a key that is not its own), the settings read once, each entry appended to the
hash-chained log in the transaction that acts (:mod:`printpipe.ledger.log`), and a signed
request's nonce admitted once in that same transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Self

from printpipe.errors import PrintpipeError
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import ChainReport, canonical_entry, verify_chain
from printpipe.ledger.proofs import Commitments
from printpipe.ledger.rules import SETTING_NAMES, Settings, format_time, utc_now
from printpipe.ledger.store import Database, Location, Tx, open_database

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


_APPEND_AUDIT = (
    "UPDATE audit_head SET seq = seq + 1, hash = chain_hash(hash, seq + 1, ?) WHERE id = 1 "
    "RETURNING seq, hash"
)


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
        """Append an entry, chained to the one before (under the head row's lock)."""
        stamp = format_time(at or self.clock())
        entry = canonical_entry(stamp, terminal, action, given, ticket, answer)
        if tx.writable_cte:  # one statement
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
