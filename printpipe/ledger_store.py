"""Where the ledger lives: one SQLite file (the embedded default) or a PostgreSQL database.

The ledger's logic (``printpipe.validation``) speaks one small interface, :class:`Tx`: SQL with
``?`` placeholders, rows as tuples, bulk inserts, and per-key locks; each backend maps it onto
its database.  The schema is written once per dialect below (same tables, same columns, same
meaning), and every statement the ledger runs is the same text on both.

- **SQLite** (``--db FILE``): WAL mode, one ``BEGIN IMMEDIATE`` transaction per change (one
  writer at a time: SQLite's own lock serializes payments), ``synchronous=NORMAL`` for
  validations and ``FULL`` for payments, pack changes and imports.  The file carries
  ``application_id`` "PPLG" and ``user_version`` = :data:`LAYOUT`.
- **PostgreSQL** (``--db postgresql://...``): psycopg 3 (binary protocol), a connection pool in
  the service; READ COMMITTED transactions; pay-once by the database itself (a unique payment
  per ticket, written by ``INSERT ... ON CONFLICT DO NOTHING RETURNING``: one statement that
  checks and writes); per-terminal and per-ticket advisory locks so the wrong-VIRN counters
  count every failure under concurrency as SQLite's single writer does; validations commit with
  ``synchronous_commit=off``, payments with the server's durable default; bulk import by
  ``COPY`` in binary.  The database is marked by the ``ledger_meta`` table.

Both mark the ledger with :data:`LAYOUT`; ``ledger_meta`` also holds the fingerprint of the
ledger key (``printpipe.ledger_key``).  Adding a table for a later feature: add it to both
schemas below and raise :data:`LAYOUT` (a ledger of an older layout is refused in one line
that says how to rebuild it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from printpipe.atomic import PRIVATE_FILE_MODE
from printpipe.audit_chain import GENESIS
from printpipe.errors import PrintpipeError
from printpipe.ids import TicketId

APPLICATION_ID = 0x50504C47  # "PPLG": a printpipe ledger, in the SQLite header (offset 68)
LAYOUT = 3
"""The ledger's layout: 2 = VIRNs as HMACs, hash-chained audit log, terminals (issue 12);
3 = the blocks' public commitments, their trees and sealed salts, each payment's inclusion
proof (issue 14)."""
BUSY_TIMEOUT_S = 60.0
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
POSTGRES_SCHEMES = ("postgresql", "postgres")

SQLITE_SCHEMA = """
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
    virn_hmac BLOB NOT NULL,
    prize_eur INTEGER NOT NULL,
    manifest INTEGER NOT NULL REFERENCES manifests(id),
    record_hmac BLOB NOT NULL
);
CREATE TABLE packs (
    id INTEGER PRIMARY KEY,
    game_number INTEGER NOT NULL,
    pack INTEGER NOT NULL,
    block INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('issued', 'activated', 'settled')),
    changed_at TEXT NOT NULL,
    retailer TEXT
);
CREATE INDEX packs_by_number ON packs (pack);
CREATE TABLE payments (
    ticket INTEGER PRIMARY KEY,
    amount_eur INTEGER NOT NULL,
    paid_at TEXT NOT NULL,
    terminal TEXT NOT NULL
);
CREATE TABLE commitments (
    id INTEGER PRIMARY KEY,
    game TEXT NOT NULL,
    game_number INTEGER NOT NULL,
    block INTEGER NOT NULL,
    first_pack INTEGER NOT NULL,
    last_pack INTEGER NOT NULL,
    tickets INTEGER NOT NULL,
    root BLOB NOT NULL,
    document TEXT NOT NULL,
    salt_nonce BLOB NOT NULL,
    manifest INTEGER NOT NULL REFERENCES manifests(id),
    loaded_at TEXT NOT NULL,
    closed_on TEXT,
    UNIQUE (game_number, block, first_pack)
);
CREATE TABLE merkle_nodes (
    commitment INTEGER NOT NULL,
    level INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    hashes BLOB NOT NULL,
    PRIMARY KEY (commitment, level, chunk)
);
CREATE TABLE sealed_salts (
    commitment INTEGER NOT NULL,
    chunk INTEGER NOT NULL,
    sealed BLOB NOT NULL,
    PRIMARY KEY (commitment, chunk)
);
CREATE TABLE payment_proofs (
    ticket INTEGER PRIMARY KEY REFERENCES payments(ticket),
    commitment INTEGER NOT NULL REFERENCES commitments(id),
    proof TEXT NOT NULL
);
CREATE INDEX payment_proofs_by_commitment ON payment_proofs (commitment, ticket);
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
CREATE TABLE terminals (
    id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL UNIQUE,
    public_key BLOB NOT NULL,
    retailer TEXT,
    role TEXT NOT NULL CHECK (role IN ('retailer', 'office')),
    added_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE nonces (
    key_id TEXT NOT NULL,
    nonce TEXT NOT NULL,
    seen_at INTEGER NOT NULL,
    PRIMARY KEY (key_id, nonce)
) WITHOUT ROWID;
CREATE INDEX nonces_by_time ON nonces (seen_at);
CREATE TABLE idempotency (
    terminal TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    token TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    status INTEGER,
    response TEXT,
    PRIMARY KEY (terminal, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_time ON idempotency (started_at);
CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at TEXT NOT NULL,
    terminal TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    ticket TEXT,
    answer TEXT NOT NULL,
    hash BLOB NOT NULL
);
CREATE TABLE audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash BLOB NOT NULL
);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER payments_no_update BEFORE UPDATE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
CREATE TRIGGER payments_no_delete BEFORE DELETE ON payments
BEGIN SELECT RAISE(ABORT, 'payments are append-only'); END;
CREATE TRIGGER payment_proofs_no_update BEFORE UPDATE ON payment_proofs
BEGIN SELECT RAISE(ABORT, 'payment proofs are append-only'); END;
CREATE TRIGGER payment_proofs_no_delete BEFORE DELETE ON payment_proofs
BEGIN SELECT RAISE(ABORT, 'payment proofs are append-only'); END;
"""

POSTGRES_SCHEMA = """
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE manifests (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
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
    prize_eur BIGINT NOT NULL,
    imported_at TEXT NOT NULL,
    file TEXT NOT NULL
);
CREATE TABLE tickets (
    id BIGINT PRIMARY KEY,
    virn_hmac BYTEA NOT NULL,
    prize_eur INTEGER NOT NULL,
    manifest BIGINT NOT NULL REFERENCES manifests(id),
    record_hmac BYTEA NOT NULL
);
CREATE TABLE packs (
    id BIGINT PRIMARY KEY,
    game_number INTEGER NOT NULL,
    pack INTEGER NOT NULL,
    block INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('issued', 'activated', 'settled')),
    changed_at TEXT NOT NULL,
    retailer TEXT
);
CREATE INDEX packs_by_number ON packs (pack);
CREATE TABLE payments (
    ticket BIGINT PRIMARY KEY,
    amount_eur INTEGER NOT NULL,
    paid_at TEXT NOT NULL,
    terminal TEXT NOT NULL
);
CREATE TABLE commitments (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    game TEXT NOT NULL,
    game_number INTEGER NOT NULL,
    block INTEGER NOT NULL,
    first_pack INTEGER NOT NULL,
    last_pack INTEGER NOT NULL,
    tickets BIGINT NOT NULL,
    root BYTEA NOT NULL,
    document TEXT NOT NULL,
    salt_nonce BYTEA NOT NULL,
    manifest BIGINT NOT NULL REFERENCES manifests(id),
    loaded_at TEXT NOT NULL,
    closed_on TEXT,
    UNIQUE (game_number, block, first_pack)
);
CREATE TABLE merkle_nodes (
    commitment BIGINT NOT NULL,
    level INTEGER NOT NULL,
    chunk BIGINT NOT NULL,
    hashes BYTEA NOT NULL,
    PRIMARY KEY (commitment, level, chunk)
);
ALTER TABLE merkle_nodes ALTER COLUMN hashes SET STORAGE PLAIN;
CREATE TABLE sealed_salts (
    commitment BIGINT NOT NULL,
    chunk BIGINT NOT NULL,
    sealed BYTEA NOT NULL,
    PRIMARY KEY (commitment, chunk)
);
ALTER TABLE sealed_salts ALTER COLUMN sealed SET STORAGE PLAIN;
CREATE TABLE payment_proofs (
    ticket BIGINT PRIMARY KEY REFERENCES payments(ticket),
    commitment BIGINT NOT NULL REFERENCES commitments(id),
    proof TEXT NOT NULL
);
CREATE INDEX payment_proofs_by_commitment ON payment_proofs (commitment, ticket);
CREATE TABLE virn_failures (
    ticket BIGINT NOT NULL,
    terminal TEXT NOT NULL,
    failures INTEGER NOT NULL,
    last_at TEXT NOT NULL,
    PRIMARY KEY (ticket, terminal)
);
CREATE TABLE terminal_failures (
    terminal TEXT PRIMARY KEY,
    window_start TEXT NOT NULL,
    failures INTEGER NOT NULL
);
CREATE TABLE terminals (
    id TEXT PRIMARY KEY,
    key_id TEXT NOT NULL UNIQUE,
    public_key BYTEA NOT NULL,
    retailer TEXT,
    role TEXT NOT NULL CHECK (role IN ('retailer', 'office')),
    added_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE TABLE nonces (
    key_id TEXT NOT NULL,
    nonce TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (key_id, nonce)
);
CREATE INDEX nonces_by_time ON nonces (seen_at);
CREATE TABLE idempotency (
    terminal TEXT NOT NULL,
    key TEXT NOT NULL,
    fingerprint BYTEA NOT NULL,
    token TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    status INTEGER,
    response TEXT,
    PRIMARY KEY (terminal, key)
);
CREATE INDEX idempotency_by_time ON idempotency (started_at);
CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at TEXT NOT NULL,
    terminal TEXT NOT NULL,
    action TEXT NOT NULL,
    input TEXT NOT NULL,
    ticket TEXT,
    answer TEXT NOT NULL,
    hash BYTEA NOT NULL
);
CREATE TABLE audit_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash BYTEA NOT NULL
);
CREATE FUNCTION chain_hash(previous BYTEA, seq BIGINT, entry BYTEA) RETURNS BYTEA
    LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT sha256(previous || int8send(seq) || entry) $$;
CREATE FUNCTION append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER payments_append_only BEFORE UPDATE OR DELETE ON payments
    FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER payments_no_truncate BEFORE TRUNCATE ON payments
    FOR EACH STATEMENT EXECUTE FUNCTION append_only();
CREATE TRIGGER payment_proofs_append_only BEFORE UPDATE OR DELETE ON payment_proofs
    FOR EACH ROW EXECUTE FUNCTION append_only();
CREATE TRIGGER payment_proofs_no_truncate BEFORE TRUNCATE ON payment_proofs
    FOR EACH STATEMENT EXECUTE FUNCTION append_only();
"""


def ticket_key(ticket: TicketId) -> int:
    """A ticket's row id in the ledger (``tickets``, ``payments``...): ``GGGGPPPPPPTTT`` as a
    number, so that the tickets of a pack range are one range of keys."""
    return ticket.game * 10**9 + ticket.pack * 10**3 + ticket.ticket


def ticket_of_key(key: int) -> TicketId:
    return TicketId(key // 10**9, key // 10**3 % 10**6, key % 10**3)


LEDGER_TABLES = frozenset({"ledger_meta", "tickets", "audit_log", "payments"})


class Tx(Protocol):
    """One transaction on the ledger's database: SQL with ``?`` placeholders, rows as tuples."""

    dialect: str

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        """Append many rows (PostgreSQL: binary ``COPY``)."""
        ...

    def lock(self, *keys: int) -> None:
        """Hold these keys until the transaction ends (PostgreSQL advisory locks, taken in
        the order given; SQLite's one writer already holds everything)."""
        ...


# -- where the ledger is ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PostgresLocation:
    """A PostgreSQL ledger: its connection string (``postgresql://...``)."""

    dsn: str

    def __str__(self) -> str:
        """The DSN without its password, for messages."""
        parts = urlsplit(self.dsn)
        if parts.password is None:
            return self.dsn
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))


Location = Path | PostgresLocation


def parse_location(text: str) -> Location:
    """``--db``: a PostgreSQL URL (``postgresql://`` or ``postgres://``), else a file path."""
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme in POSTGRES_SCHEMES:
        return PostgresLocation(text)
    if scheme:
        raise PrintpipeError(
            f"--db {text.split('://', 1)[0]}://...: a ledger is an SQLite file or a "
            "postgresql:// URL"
        )
    return Path(text)


def describe(location: Location) -> str:
    return str(location)


# -- SQLite ---------------------------------------------------------------------------------------

_SQLITE_MAGIC = b"SQLite format 3\x00"


def _sqlite_chain_hash(previous: bytes, seq: int, entry: bytes) -> bytes:
    return hashlib.sha256(bytes(previous) + int(seq).to_bytes(8, "big") + bytes(entry)).digest()


class _SqliteTx:
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, params).fetchone()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" * len(columns))
        self.conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def lock(self, *keys: int) -> None:
        pass


def check_sqlite_header(path: Path) -> None:
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
    if application_id == 0:  # another application's, or a ledger from before issue 11
        raise PrintpipeError(
            f"{not_ledger} (an SQLite database of another application, or a ledger of an "
            "earlier printpipe, with VIRNs in clear: rebuild it by importing its manifests into "
            "a new ledger, printpipe ledger import MANIFEST --db NEW); it was not changed"
        )
    layout = int.from_bytes(header[60:64], "big")  # user_version
    if layout != LAYOUT:
        raise PrintpipeError(old_layout_message(path, layout))


def old_layout_message(location: object, layout: int) -> str:
    if layout > LAYOUT:
        return (
            f"validation database {location} has layout {layout}; this printpipe reads layout "
            f"{LAYOUT}: use the printpipe that wrote it"
        )
    missing = "VIRNs stored in clear" if layout < 2 else "no block commitments nor proofs"
    return (
        f"validation database {location} has layout {layout} of an earlier printpipe "
        f"({missing}); this printpipe reads layout {LAYOUT} only: rebuild it by "
        "importing its manifests into a new ledger (printpipe ledger import MANIFEST --db NEW), "
        "see docs/validation.md; it was not changed"
    )


def remove_sqlite_files(path: Path) -> None:
    """Remove a database file this process built, and its side files."""
    for leftover in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDE_FILES)):
        leftover.unlink(missing_ok=True)


class SqliteDatabase:
    """A ledger in one SQLite file (one connection; use it from one thread at a time)."""

    dialect = "sqlite"
    _turns: int | None

    def __init__(self, path: Path, *, read_only: bool = False, shared: bool = False) -> None:
        """``shared``: several processes write (the service's workers): they take turns on a
        blocking lock (``flock`` of the file, which SQLite's own POSIX locks ignore) instead
        of SQLite's busy loop, whose sleeps (1 ms, 2 ms, 5 ms...) would make every collision a
        latency spike."""
        check_sqlite_header(path)
        target = f"{path.resolve().as_uri()}?mode={'ro' if read_only else 'rw'}"
        try:
            conn = sqlite3.connect(
                target,
                uri=True,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_S,
                check_same_thread=False,
            )
            conn.execute("PRAGMA synchronous=NORMAL")  # validations; payments ask FULL
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise PrintpipeError(f"validation database {path} is unusable: {exc}") from None
        self._setup(conn, path, read_only=read_only, durable_sync="FULL")
        if shared and not read_only:
            # kept open until the connection is closed: closing a descriptor of the file
            # while SQLite holds its locks would release them (POSIX locks are per process)
            self._turns = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def build(cls, path: Path) -> SqliteDatabase:
        """A new, empty ledger at ``path``, a file nobody else knows of yet: no journal on
        disk, no sync until it is complete (the caller links it into place)."""
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        os.fchmod(fd, PRIVATE_FILE_MODE)
        os.close(fd)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(SQLITE_SCHEMA)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={LAYOUT}")
        database = cls.__new__(cls)
        database._setup(conn, path, read_only=False, durable_sync="OFF")
        with database.transaction() as tx:
            initialise(tx)
        return database

    def _setup(
        self, conn: sqlite3.Connection, path: Path, *, read_only: bool, durable_sync: str
    ) -> None:
        conn.create_function("chain_hash", 3, _sqlite_chain_hash, deterministic=True)
        self._turns = None
        self.conn = conn
        self.path = path
        self.location: Location = path
        self.read_only = read_only
        self._durable_sync = durable_sync

    def finish_build(self) -> None:
        """Switch a built ledger to WAL and close it (its WAL checkpointed into the file)."""
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.close()

    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[Tx]:
        if self.read_only:
            raise PrintpipeError(f"validation database {self.path} is open read-only")
        conn = self.conn
        if self._turns is not None:
            fcntl.flock(self._turns, fcntl.LOCK_EX)
        if durable:
            conn.execute(f"PRAGMA synchronous={self._durable_sync}")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield _SqliteTx(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            if durable and self._durable_sync != "OFF":
                conn.execute("PRAGMA synchronous=NORMAL")
            if self._turns is not None:
                fcntl.flock(self._turns, fcntl.LOCK_UN)

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        """A read transaction: one consistent view, nothing written."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield _SqliteTx(conn)
        finally:
            conn.execute("ROLLBACK")

    def close(self) -> None:
        self.conn.close()
        if self._turns is not None:
            os.close(self._turns)
            self._turns = None


# -- PostgreSQL -----------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\?")
_COPY_TYPES = {
    "tickets": ("int8", "bytea", "int4", "int8", "bytea"),
    "merkle_nodes": ("int8", "int4", "int8", "bytea"),
    "sealed_salts": ("int8", "int8", "bytea"),
}


def _pg(sql: str) -> str:
    return _PLACEHOLDER.sub("%s", sql)


class _PostgresTx:
    dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.conn.execute(_pg(sql), params or None)
        return cursor.fetchall() if cursor.description is not None else []

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        cursor = self.conn.execute(_pg(sql), params or None)
        return cursor.fetchone() if cursor.description is not None else None

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(_pg(sql), rows)

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        types = _COPY_TYPES.get(table)
        with self.conn.cursor() as cursor:
            fmt = "(FORMAT BINARY)" if types else ""
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN {fmt}") as copy:
                if types:
                    copy.set_types(list(types))
                for row in rows:
                    copy.write_row(row)

    def lock(self, *keys: int) -> None:
        if keys:
            calls = ", ".join("pg_advisory_xact_lock(%s)" for _ in keys)
            self.conn.execute(f"SELECT {calls}", [k & 0x7FFF_FFFF_FFFF_FFFF for k in keys])


def _configure(conn: Any) -> None:
    """Every connection's session: validations (most transactions) commit without waiting for
    the WAL flush; a durable transaction sets the server's default back for itself.  (One
    statement less per validation than ``SET LOCAL`` in each.  The pool checks no connection
    on checkout, a round trip per request: a broken one fails its request with a 503, which
    the terminal retries, and the pool replaces it.)"""
    conn.execute("SET synchronous_commit = off")


def _postgres_error_types() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


class PostgresDatabase:
    """A ledger in a PostgreSQL database: one connection (the command line), or a pool of
    ``pool_size`` connections shared by threads (the service)."""

    dialect = "postgresql"

    def __init__(
        self,
        location: PostgresLocation,
        *,
        read_only: bool = False,
        pool_size: int = 0,
        create: bool = False,
    ) -> None:
        import psycopg

        self.location: Location = location
        self.read_only = read_only
        self.path = location
        self.pool: Any = None
        try:
            self._conn: Any = psycopg.connect(location.dsn, autocommit=True, connect_timeout=10)
            _configure(self._conn)
        except psycopg.Error as exc:
            raise PrintpipeError(
                f"validation database {location}: cannot connect: {_one_line(exc)}"
            ) from None
        try:
            self._check(create=create)
            if pool_size > 1:
                from psycopg_pool import ConnectionPool

                self.pool = ConnectionPool(
                    location.dsn,
                    min_size=pool_size,
                    max_size=pool_size,
                    kwargs={"autocommit": True},
                    configure=_configure,
                    name="printpipe-ledger",
                    open=False,
                )
                self.pool.open(wait=True, timeout=30)
                self._conn.close()
        except BaseException:
            self._conn.close()
            raise

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self.pool is None:
            yield self._conn
        else:
            with self.pool.connection() as conn:
                yield conn

    def _check(self, *, create: bool) -> None:
        with self._connection() as conn:
            tables = {
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = current_schema()"
                )
            }
            self.empty = "ledger_meta" not in tables
            if "ledger_meta" not in tables:
                if create and not tables:
                    return  # made by the import's transaction (see initialise_if_new)
                if not tables:
                    raise PrintpipeError(
                        f"validation database {self.location} holds no ledger "
                        "(create it: printpipe ledger import)"
                    )
                raise PrintpipeError(
                    f"{self.location} is not a printpipe validation database "
                    "(it holds other tables); it was not changed"
                )
            meta = dict(conn.execute("SELECT key, value FROM ledger_meta").fetchall())
        if meta.get("application") != "printpipe-ledger":
            raise PrintpipeError(f"{self.location} is not a printpipe validation database")
        layout = int(meta.get("layout", "0"))
        if layout != LAYOUT:
            raise PrintpipeError(old_layout_message(self.location, layout))

    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[Tx]:
        if self.read_only:
            raise PrintpipeError(f"validation database {self.location} is open read-only")
        with self._connection() as conn, conn.transaction():
            if durable:  # the session's is off (_configure): the server's own, durable one
                conn.execute("SET LOCAL synchronous_commit TO DEFAULT")
            yield _PostgresTx(conn)

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        with self._connection() as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                yield _PostgresTx(conn)
            finally:
                conn.execute("ROLLBACK")

    def initialise_if_new(self, tx: Tx) -> None:
        """Inside an import's transaction: create the ledger's tables if they are absent
        (under an advisory lock, so two imports into an empty database make one ledger)."""
        tx.lock(0x5050_4C47)
        exists = tx.one(
            "SELECT 1 FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name = 'ledger_meta'"
        )
        if exists is None:
            assert isinstance(tx, _PostgresTx)
            tx.conn.execute(POSTGRES_SCHEMA)
            initialise(tx)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
        else:
            self._conn.close()


Database = SqliteDatabase | PostgresDatabase


def initialise(tx: Tx) -> None:
    """The rows a new ledger starts with: its marks, default settings, the chain's head."""
    from printpipe.validation import default_settings_rows

    tx.executemany(
        "INSERT INTO ledger_meta VALUES (?, ?)",
        [("application", "printpipe-ledger"), ("layout", str(LAYOUT))],
    )
    tx.executemany("INSERT INTO settings VALUES (?, ?)", default_settings_rows())
    tx.execute("INSERT INTO audit_head VALUES (1, 0, ?)", (GENESIS,))


def database_errors() -> tuple[type[BaseException], ...]:
    """The driver errors a database may raise (locked, disk full, connection lost): the
    command line shows them as one line, the service as 503."""
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    try:
        from psycopg_pool import PoolTimeout

        errors += (*_postgres_error_types(), PoolTimeout)
    except ImportError:  # installed without PostgreSQL support
        pass
    return errors


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def open_database(
    location: Location,
    *,
    read_only: bool = False,
    pool_size: int = 0,
    create: bool = False,
    shared: bool = False,
) -> Database:
    """Open the ledger at ``location`` (SQLite files are refused untouched if they are not
    one; a PostgreSQL database with other tables too).  ``shared``: several processes of one
    service write to it (SQLite: they take turns on a blocking lock)."""
    if isinstance(location, PostgresLocation):
        return PostgresDatabase(location, read_only=read_only, pool_size=pool_size, create=create)
    return SqliteDatabase(location, read_only=read_only, shared=shared)
