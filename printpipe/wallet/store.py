"""The reference wallet's own database: accounts, every movement once, the callers' nonces.

An SQLite file (the default; 0600, marked with its own ``application_id`` so that a ledger or
any other file is refused untouched) or a PostgreSQL database (``postgresql://...``, one that
holds no other tables: never the ledger's).  Statements are the same text on both, through the
ledger's :class:`~printpipe.ledger.Tx` adapters (``?`` placeholders, advisory locks);
the schema is small enough to be written here once, in SQL both engines read.

Each call is made in one transaction (with the calls that arrived while the last committed:
:meth:`WalletStore.apply_many`, one flush to disk for all, each answered after it): the
caller's nonce admitted (a replay is refused), the reference
locked (PostgreSQL: an advisory lock on its hash, so that a debit and its cancel, or two
attempts of one call, never interleave), the movement looked up (the same call again: its
receipt; another call under the reference: refused), then the balance moved by one statement
that checks and moves (``UPDATE ... WHERE balance_cents >= ? RETURNING``) and the movement
written (primary key: reference and kind).  A refused call still commits its nonce: a refusal
replayed later, once the balance would cover it, is refused as a replay, not applied.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from printpipe import french
from printpipe.errors import PrintpipeError
from printpipe.ledger import Location, PostgresLocation, Tx, format_instant, tx_over
from printpipe.wallet.api import (
    Call,
    Receipt,
    Share,
    Statement,
    StatementEntry,
    canonical,
    parse_call,
)

APPLICATION_ID = 0x5050574C  # "PPWL": a printpipe reference wallet, in the SQLite header
BUSY_TIMEOUT_S = 60.0
NONCE_TTL_S = 150
"""A nonce is kept this long after its signature's ``created`` (past it, the skew check
refuses the request anyway: ``printpipe.service.signatures.MAX_SKEW_S``)."""
POOL_WAIT_S = 3.0

SCHEMA = (
    "CREATE TABLE wallet_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE accounts (player TEXT PRIMARY KEY, "
    "balance_cents BIGINT NOT NULL CHECK (balance_cents >= 0), opened_at TEXT NOT NULL)",
    # each movement once per (reference, kind); moved_cents: what it changed in the balance
    # (a cancel that found no debit: 0); request: the call's canonical body
    "CREATE TABLE movements (reference TEXT NOT NULL, kind TEXT NOT NULL "
    "CHECK (kind IN ('deposit', 'debit', 'credit', 'cancel')), player TEXT NOT NULL, "
    "amount_cents BIGINT NOT NULL, moved_cents BIGINT NOT NULL, balance_cents BIGINT NOT NULL, "
    "at TEXT NOT NULL, day TEXT NOT NULL, request TEXT NOT NULL, PRIMARY KEY (reference, kind))",
    "CREATE INDEX movements_by_day ON movements (day, at)",
    "CREATE TABLE nonces (created BIGINT NOT NULL, key_id TEXT NOT NULL, nonce TEXT NOT NULL, "
    "PRIMARY KEY (key_id, nonce))",
)
APPLICATION = "printpipe-wallet"


class Asked(NamedTuple):
    """A call as the wallet received it: the call, when, and its request's (key id, nonce,
    created), admitted with it (None: not signed, e.g. the tests')."""

    call: Call
    now: dt.datetime
    nonce: tuple[str, str, int] | None = None


class WalletRefused(PrintpipeError):
    """A call refused by the wallet (``kind``: one of ``api.REFUSALS``): nothing moved."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def stamp(now: dt.datetime) -> str:
    """When the wallet records a call or a deposit: its clock's time in UTC, written as the
    ledger writes an instant (:func:`printpipe.ledger.format_instant`, to the microsecond)."""
    return format_instant(now.astimezone(dt.UTC))


REFERENCE_LOCK, PLAYER_LOCK = b"wallet reference ", b"wallet player "


def _lock_key(name: str, kind: bytes = REFERENCE_LOCK) -> int:
    return int.from_bytes(hashlib.sha256(kind + name.encode()).digest()[:8])


class WalletStore:
    """The reference wallet's database, opened (and created if absent) at ``location``.
    ``pool_size``: PostgreSQL connections shared by threads (SQLite: one connection, to use
    from one thread at a time)."""

    def __init__(self, location: Location, *, pool_size: int = 1) -> None:
        self.location = location
        self.pool: Any = None
        self._conn: Any = None
        if isinstance(location, PostgresLocation):
            self.dialect = "postgresql"
            self._open_postgres(location, pool_size)
        else:
            self.dialect = "sqlite"
            self._open_sqlite(location)

    # -- opening -----------------------------------------------------------------------------

    def _open_sqlite(self, path: Path) -> None:
        not_mine = PrintpipeError(f"{path} is not a printpipe wallet database; it was not changed")
        if path.exists():
            with open(path, "rb") as handle:
                header = handle.read(16)
            if header and header != b"SQLite format 3\x00":
                raise not_mine
        else:
            try:  # 0600 from its first byte: balances are the players' business
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass  # another process of the wallet made it meanwhile
            except OSError as exc:
                raise PrintpipeError(f"cannot create {path}: {exc.strerror}") from None
        try:
            conn = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
            )
            try:
                (application,) = conn.execute("PRAGMA application_id").fetchone()
                if application not in (0, APPLICATION_ID):
                    raise not_mine
                conn.execute("BEGIN IMMEDIATE")  # read again under the lock: one creator
                (application,) = conn.execute("PRAGMA application_id").fetchone()
                if application == 0:
                    if conn.execute("SELECT 1 FROM sqlite_master").fetchone() is not None:
                        raise not_mine
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    for statement in SCHEMA:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO wallet_meta VALUES ('application', ?)", (APPLICATION,)
                    )
                elif application != APPLICATION_ID:
                    raise not_mine
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            raise PrintpipeError(f"wallet database {path}: {exc}") from None
        self._conn = conn

    def _open_postgres(self, location: PostgresLocation, pool_size: int) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        try:
            with (
                psycopg.connect(location.dsn, autocommit=True, connect_timeout=10) as conn,
                conn.transaction(),
            ):
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (APPLICATION_ID,))
                tables = {
                    row[0]
                    for row in conn.execute(
                        "SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = current_schema()"
                    )
                }
                if not tables:
                    for statement in SCHEMA:
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO wallet_meta VALUES ('application', %s)", (APPLICATION,)
                    )
                elif "wallet_meta" not in tables:
                    raise PrintpipeError(
                        f"{location} is not a printpipe wallet database (it holds other "
                        "tables); it was not changed"
                    )
        except psycopg.Error as exc:
            raise PrintpipeError(
                f"wallet database {location}: {' '.join(str(exc).split())}"
            ) from None
        self.pool = ConnectionPool(
            location.dsn,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            name="printpipe-wallet",
            timeout=POOL_WAIT_S,
            open=False,
        )
        self.pool.open(wait=True, timeout=30)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Tx]:
        """One durable read-write transaction."""
        if self.pool is not None:
            with self.pool.connection() as conn, conn.transaction():
                yield tx_over(conn)
            return
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield tx_over(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        elif self._conn is not None:
            self._conn.close()

    def __enter__(self) -> WalletStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the calls ----------------------------------------------------------------------------

    def admit(self, tx: Tx, *, key_id: str, nonce: str, created: int) -> None:
        """Record a signed request's nonce once (a replay: :class:`WalletRefused`)."""
        fresh = tx.one(
            "INSERT INTO nonces (created, key_id, nonce) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING RETURNING 1",
            (created, key_id, nonce),
        )
        if fresh is None:
            raise WalletRefused("unauthorized", "this signature's nonce was seen already")

    def apply(
        self, call: Call, *, now: dt.datetime, nonce: tuple[str, str, int] | None = None
    ) -> tuple[Receipt | WalletRefused, bool]:
        """Make ``call`` once: (its receipt, whether it was made earlier), or (the refusal,
        False).  ``nonce``: the request's (key id, nonce, created), admitted in the same
        transaction, kept even when the call is refused."""
        with self.transaction() as tx:
            tx.lock(_lock_key(call.reference))
            return self._apply_admitted(tx, call, now, nonce)

    def apply_many(
        self, asked: Sequence[Asked], *, nonce: tuple[str, str, int] | None = None
    ) -> list[tuple[Receipt | WalletRefused, bool] | Exception]:
        """Group commit: the calls ``asked`` (each a call, its time and its nonce) made in one
        durable transaction, in the order asked, each as :meth:`apply` makes it alone; each
        one's outcome.  Nothing is answered before the commit.  ``nonce``: one request's for
        the whole group (a batch's), admitted once, first: a replay raises
        :class:`WalletRefused`, nothing made.

        PostgreSQL: the references and the players are locked first, all at once, in the
        order of their keys, so that two groups at once never wait for each other's accounts
        in a circle.  If a statement fails (the database, or a row it refuses), the group is
        rolled back and each call made again in a transaction of its own (the group's nonce
        in one of its own first), so that a failing call fails alone (its exception is its
        outcome); if the commit fails, it fails them all (their outcome unknown to the caller,
        which asks again)."""
        if len(asked) <= 1 and nonce is None:
            return [self.apply(call, now=at, nonce=own) for call, at, own in asked]
        outcomes: list[tuple[Receipt | WalletRefused, bool] | Exception] = []
        made = False
        try:
            with self.transaction() as tx:
                tx.lock(*{_lock_key(call.reference) for call, _, _ in asked},
                        *{_lock_key(call.player, PLAYER_LOCK) for call, _, _ in asked})  # fmt: skip
                if nonce is not None:
                    self.admit(tx, key_id=nonce[0], nonce=nonce[1], created=nonce[2])
                outcomes = [self._apply_admitted(tx, *one) for one in asked]
                made = True
        except WalletRefused:
            raise  # the group's nonce seen already (each call's refusals are outcomes)
        except Exception:
            if made:  # the commit failed: nothing known of it, nothing to do again
                raise
            if nonce is not None:
                with self.transaction() as tx:
                    self.admit(tx, key_id=nonce[0], nonce=nonce[1], created=nonce[2])
            return [self._apply_alone(one) for one in asked]
        return outcomes

    def apply_batch(
        self, calls: Sequence[Call], *, now: Callable[[], dt.datetime],
        nonce: tuple[str, str, int] | None = None,
    ) -> list[tuple[Receipt | WalletRefused, bool] | Exception]:  # fmt: skip
        """A batch request's calls (``POST /v1/batch``), made as :meth:`apply_many` makes a
        group under the request's one nonce; each one's outcome.  ``now``: each call's time,
        read as it is taken in the order given (so a statement lists them in that order);
        ``nonce`` None: not signed (the tests')."""
        return self.apply_many([Asked(call, now(), None) for call in calls], nonce=nonce)

    def _apply_alone(self, asked: Asked) -> tuple[Receipt | WalletRefused, bool] | Exception:
        try:
            return self.apply(asked.call, now=asked.now, nonce=asked.nonce)
        except Exception as exc:  # this call's failure, not the others'
            return exc

    def _apply_admitted(
        self, tx: Tx, call: Call, now: dt.datetime, nonce: tuple[str, str, int] | None
    ) -> tuple[Receipt | WalletRefused, bool]:
        """:meth:`apply`'s transaction's body: a refusal writes nothing but the nonce."""
        try:
            if nonce is not None:
                self.admit(tx, key_id=nonce[0], nonce=nonce[1], created=nonce[2])
            return self._apply(tx, call, now)
        except WalletRefused as exc:
            return exc, False

    def _apply(self, tx: Tx, call: Call, now: dt.datetime) -> tuple[Receipt, bool]:
        request = call.body().decode()
        found = {  # the reference's movements, every kind, in one statement
            str(row[0]): row[1:]
            for row in tx.execute(
                "SELECT kind, player, amount_cents, moved_cents, balance_cents, at, request "
                "FROM movements WHERE reference = ?",
                (call.reference,),
            )
        }
        earlier = found.pop(call.kind, None)
        if earlier is not None:
            if earlier[5] != request:
                raise WalletRefused(
                    "reference_reused", f"this reference was used for another {call.kind}"
                )
            refunded = int(earlier[2]) != 0 if call.kind == "cancel" else None
            return Receipt(call.kind, call.reference, call.player, call.amount_cents,
                           int(earlier[3]), str(earlier[4]), refunded), True  # fmt: skip
        others = {kind: str(row[5]) for kind, row in found.items()}
        if call.kind == "debit":
            if "cancel" in others:
                raise WalletRefused("cancelled", "this reference's debit was cancelled")
            moved = -call.amount_cents
        elif call.kind == "credit":
            debit = others.get("debit")
            if (
                debit is None
                or "cancel" in others
                or parse_call("debit", debit.encode()).player != call.player
            ):
                raise WalletRefused(
                    "no_debit", f"no debit of {call.player} under this reference to credit"
                )
            moved = call.amount_cents
        else:
            if "credit" in others:
                raise WalletRefused("already_credited", "this reference's play was credited")
            debit = others.get("debit")
            if debit is not None:
                taken = parse_call("debit", debit.encode())
                if (taken.player, taken.amount_cents) != (call.player, call.amount_cents):
                    raise WalletRefused(
                        "reference_reused", "the cancel names another player or amount"
                    )
            moved = call.amount_cents if debit is not None else 0
        balance = self._move(tx, call.player, moved, create=call.kind == "cancel")
        at = stamp(now)
        tx.execute(
            "INSERT INTO movements (reference, kind, player, amount_cents, moved_cents, "
            "balance_cents, at, day, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (call.reference, call.kind, call.player, call.amount_cents, moved, balance, at,
             at[:10], request),
        )  # fmt: skip
        refunded = moved != 0 if call.kind == "cancel" else None
        return Receipt(call.kind, call.reference, call.player, call.amount_cents, balance, at,
                       refunded), False  # fmt: skip

    def _move(self, tx: Tx, player: str, cents: int, *, create: bool = False) -> int:
        """Add ``cents`` (negative: take) to the player's balance, never below 0; the balance
        after.  ``create``: a player with no account reads as 0 (a cancel that finds nothing)."""
        row = tx.one(
            "UPDATE accounts SET balance_cents = balance_cents + ? "
            "WHERE player = ? AND balance_cents + ? >= 0 RETURNING balance_cents",
            (cents, player, cents),
        )
        if row is not None:
            return int(row[0])
        exists = tx.one("SELECT balance_cents FROM accounts WHERE player = ?", (player,))
        if exists is None:
            if create and cents == 0:
                return 0
            raise WalletRefused("no_such_player", f"no account of {player}")
        raise WalletRefused(
            "insufficient_funds", f"the balance of {player} does not cover {french.eur(-cents)}"
        )

    def deposit(self, *, player: str, amount_cents: int, now: dt.datetime) -> int:
        """Put money on ``player``'s account, opening it if needed; the balance after (the
        operator's own business: a demo's deposit)."""
        at = stamp(now)
        reference = f"deposit:{secrets.token_hex(12)}"
        request = canonical({"player": player, "amount_cents": amount_cents}).decode()
        with self.transaction() as tx:
            tx.execute(
                "INSERT INTO accounts (player, balance_cents, opened_at) VALUES (?, 0, ?) "
                "ON CONFLICT DO NOTHING",
                (player, at),
            )
            balance = self._move(tx, player, amount_cents)
            tx.execute(
                "INSERT INTO movements (reference, kind, player, amount_cents, moved_cents, "
                "balance_cents, at, day, request) VALUES (?, 'deposit', ?, ?, ?, ?, ?, ?, ?)",
                (reference, player, amount_cents, amount_cents, balance, at, at[:10], request),
            )
        return balance

    def balance(self, *, player: str, nonce: tuple[str, str, int] | None = None) -> int | None:
        """The player's balance (None: no account)."""
        with self.transaction() as tx:
            if nonce is not None:
                self.admit(tx, key_id=nonce[0], nonce=nonce[1], created=nonce[2])
            row = tx.one("SELECT balance_cents FROM accounts WHERE player = ?", (player,))
        return None if row is None else int(row[0])

    def statement(self, *, day: str, nonce: tuple[str, str, int] | None = None) -> Statement:
        """The game server's calls recorded on ``day`` (UTC), in the order recorded."""
        with self.transaction() as tx:
            if nonce is not None:
                self.admit(tx, key_id=nonce[0], nonce=nonce[1], created=nonce[2])
            rows = tx.execute(
                "SELECT kind, reference, player, amount_cents, moved_cents, at, request "
                "FROM movements WHERE day = ? AND kind <> 'deposit' ORDER BY at, reference, kind",
                (day,),
            )
        entries = []
        for kind, reference, player, amount, moved, at, request in rows:
            split: tuple[Share, ...] = ()
            if kind == "debit":
                split = parse_call("debit", str(request).encode()).split
            entries.append(
                StatementEntry(
                    str(kind),
                    str(reference),
                    str(player),
                    int(amount),
                    str(at),
                    split,
                    int(moved) != 0 if kind == "cancel" else None,
                )
            )
        return Statement(day, tuple(entries))

    def purge_nonces(self, *, now: dt.datetime) -> None:
        with self.transaction() as tx:
            tx.execute(
                "DELETE FROM nonces WHERE created < ?", (int(now.timestamp()) - NONCE_TTL_S,)
            )

    def totals(self) -> dict[str, int]:
        """Money as the wallet holds it: balances, and the sums moved by kind (for checks)."""
        with self.transaction() as tx:
            (balances,) = tx.one("SELECT COALESCE(SUM(balance_cents), 0) FROM accounts") or (0,)
            moved = dict(
                tx.execute(
                    "SELECT kind, COALESCE(SUM(moved_cents), 0) FROM movements GROUP BY kind"
                )
            )
        return {"balances": int(balances), **{str(k): int(v) for k, v in moved.items()}}
