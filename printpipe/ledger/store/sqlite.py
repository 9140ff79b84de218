"""The ledger in one SQLite file: the embedded default (``--db FILE``).

WAL mode, one ``BEGIN IMMEDIATE`` transaction per change (one writer at a time: SQLite's own
lock serializes payments), ``synchronous=NORMAL`` for validations and ``FULL`` for payments,
pack changes and imports.  The file carries ``application_id`` "PPLG" and ``user_version`` =
:data:`LAYOUT`, and is refused untouched, before SQLite opens it, if it is not a ledger.  A new
ledger is built under a temporary name and linked into place whole (:func:`create_or_open`),
so that nobody ever sees half a ledger.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from printpipe.atomic import PRIVATE_FILE_MODE, fsync_dir, partial_path
from printpipe.errors import PrintpipeError
from printpipe.ledger.store.base import (
    Fill,
    Location,
    T,
    Tx,
    Upgrade,
    initialise,
    old_layout_message,
    run_upgrade,
    values_table,
)
from printpipe.ledger.store.schema import (
    BIGINT,
    BYTES,
    IDENTITY,
    INT,
    LAYOUT,
    TABLES,
    TEXT,
    UPGRADABLE,
    column_sql,
    render,
    table_sql,
)

APPLICATION_ID = 0x50504C47  # "PPLG": a printpipe ledger, in the SQLite header (offset 68)
BUSY_TIMEOUT_S = 60.0
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


_TYPES = {INT: "INTEGER", BIGINT: "INTEGER", TEXT: "TEXT", BYTES: "BLOB", IDENTITY: "INTEGER"}
_RENDERED = render(_TYPES, clustered=" WITHOUT ROWID")


def _append_only_trigger(table: str, event: str) -> str:
    """The trigger that refuses an ``event`` (UPDATE, DELETE) on an append-only table."""
    (what,) = [t.append_only for t in TABLES if t.name == table]
    return (
        f"CREATE TRIGGER {table}_no_{event.lower()} BEFORE {event} ON {table}\n"
        f"BEGIN SELECT RAISE(ABORT, '{what} append-only'); END;\n"
    )


def _schema() -> str:
    statements = []
    for table, sql in _RENDERED:
        statements.append(sql)
        if table.append_only is not None:
            statements += [_append_only_trigger(table.name, e) for e in ("UPDATE", "DELETE")]
    statements.append(PENDING_TRIGGER)
    return "".join(statements)


PENDING_TRIGGER = """CREATE TRIGGER audit_log_pending AFTER INSERT ON audit_log
BEGIN INSERT INTO audit_pending VALUES (NEW.id); END;
"""
"""Every entry marked for the sealer as it is written (``printpipe.ledger.log``)."""


SCHEMA = _schema()
"""The ledger's schema (``schema.py``) in SQLite's dialect."""


_SQLITE_MAGIC = b"SQLite format 3\x00"


class SqliteTx:
    writable_cte = False  # SQLite has no UPDATE in a WITH
    skip_locked = ""
    lock_rows = ""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self.conn.execute(sql, params).fetchone()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def send(self, sql: str, params: Sequence[Any] = ()) -> Callable[[], list[tuple[Any, ...]]]:
        rows = self.conn.execute(sql, params).fetchall()
        return lambda: rows

    def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, params)

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" * len(columns))
        self.conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def lock(self, *keys: int) -> None:
        pass

    def rows_table(
        self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[Any]]:
        return values_table(name, [column for column, _ in columns], rows)

    def by_keys_only(self) -> None:
        pass  # SQLite's planner takes the index for a key

    def any_of(self, column: str, kind: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({', '.join('?' * len(values))})", list(values)

    def append_sql(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[Any]]:
        row = f"({', '.join('?' * len(columns))})"
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * len(rows))}"
        return sql, [value for values in rows for value in values]


def check_sqlite_header(path: Path) -> None:
    """Refuse, without letting SQLite open it, a file that is not a printpipe ledger of this
    printpipe's layout."""
    layout = ledger_layout(path)
    if layout != LAYOUT:
        raise PrintpipeError(old_layout_message(path, layout))


def ledger_layout(path: Path) -> int:
    """The layout of the printpipe ledger at ``path`` (any), read from the file's header
    without letting SQLite open it; a file that is not a ledger is refused."""
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
    return int.from_bytes(header[60:64], "big")  # user_version


def upgrade_layout(path: Path, upgrade: Upgrade) -> int:
    """Bring the ledger at ``path`` from an :data:`UPGRADABLE` layout to :data:`LAYOUT`, in one
    transaction (see :func:`printpipe.ledger.store.upgrade_layout`); the layout it had."""
    layout = ledger_layout(path)
    if layout == LAYOUT:
        return layout
    if layout not in UPGRADABLE:
        raise PrintpipeError(old_layout_message(path, layout))
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        try:

            def make_table(table: str) -> None:
                for statement in table_sql(_RENDERED, table).split(";\n"):
                    if statement.strip():
                        conn.execute(statement)

            def add_column(table: str, column: str) -> None:
                conn.execute(column_sql(_TYPES, table, column))

            @contextmanager
            def unguarded(table: str) -> Iterator[None]:
                conn.execute(f"DROP TRIGGER {table}_no_update")
                yield
                conn.execute(_append_only_trigger(table, "UPDATE"))

            run_upgrade(
                SqliteTx(conn), layout, upgrade, make_table=make_table, add_column=add_column,
                unguarded=unguarded, location=path,
            )  # fmt: skip
            conn.execute(f"PRAGMA user_version={LAYOUT}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()
    return layout


def remove_sqlite_files(path: Path) -> None:
    """Remove a database file this process built, and its side files."""
    for leftover in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDE_FILES)):
        leftover.unlink(missing_ok=True)


def _connect(path: Path, query: str) -> sqlite3.Connection:
    return sqlite3.connect(
        f"{path.resolve().as_uri()}?{query}",
        uri=True,
        isolation_level=None,
        timeout=BUSY_TIMEOUT_S,
        check_same_thread=False,
    )


_NO_SIDE_FILES = frozenset({"SQLITE_READONLY_DIRECTORY", "SQLITE_CANTOPEN"})
"""What SQLite says when a WAL database's shared-memory file cannot be made beside it."""


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that reads the ledger at ``path`` and never writes a byte there, even where
    nothing may be written: a file this process cannot write (``chmod 0400``: another user's,
    an archived copy), or a folder it cannot write (a read-only mount).

    Reading a WAL database takes two side files, ``-wal`` and ``-shm``, which SQLite makes
    beside it when absent, with the file's mode: made for a 0400 file, they are 0400 too, and
    stay behind to refuse the owner's next write.  So while no ``-wal`` is there (no writer has
    the ledger open, and every change is in the file), a ledger this process cannot write, or
    one beside which the side files cannot be made, is opened ``immutable``: read as a plain
    file, no side file, no lock.  With a ``-wal`` there (a writer at work, or changes not yet
    copied back), SQLite's own read-only mode reads it with the writer's side files."""
    wal = path.with_name(path.name + "-wal")
    if not wal.exists() and not os.access(path, os.W_OK):
        return _connect(path, "mode=ro&immutable=1")
    conn = _connect(path, "mode=ro")
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # the side files now
    except sqlite3.OperationalError as exc:
        conn.close()
        if getattr(exc, "sqlite_errorname", None) not in _NO_SIDE_FILES:
            raise
        if wal.exists():
            raise PrintpipeError(
                f"validation database {path} cannot be read here: its folder cannot be "
                f"written, and changes are still in {wal.name} (a writer has it open, or "
                "stopped before copying them back): read it where the ledger is written"
            ) from None
        return _connect(path, "mode=ro&immutable=1")
    return conn


class SqliteDatabase:
    """A ledger in one SQLite file (one connection; use it from one thread at a time)."""

    dialect = "sqlite"
    empty = False  # a new ledger is built whole (build) before anything is imported
    threads = 1
    _turns: int | None

    def __init__(self, path: Path, *, read_only: bool = False, shared: bool = False) -> None:
        """``shared``: several processes write (the service's workers): they take turns on a
        blocking lock (``flock`` of the file, which SQLite's own POSIX locks ignore) instead
        of SQLite's busy loop, whose sleeps (1 ms, 2 ms, 5 ms...) would make every collision a
        latency spike."""
        check_sqlite_header(path)
        try:
            conn = _connect_read_only(path) if read_only else _connect(path, "mode=rw")
            conn.execute("PRAGMA synchronous=NORMAL")  # validations; payments ask FULL
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise PrintpipeError(f"validation database {path} is unusable: {exc}") from None
        self._setup(conn, path, read_only=read_only, durable_sync="FULL")
        if shared and not read_only:
            conn.execute("PRAGMA wal_autocheckpoint=0")  # see checkpoint_wal
            # kept open until the connection is closed: closing a descriptor of the file
            # while SQLite holds its locks would release them (POSIX locks are per process)
            self._turns = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def build(cls, path: Path, settings: Sequence[tuple[str, str]]) -> SqliteDatabase:
        """A new, empty ledger at ``path``, a file nobody else knows of yet: no journal on
        disk, no sync until it is complete (the caller links it into place)."""
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
        os.fchmod(fd, PRIVATE_FILE_MODE)
        os.close(fd)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=MEMORY")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.executescript(SCHEMA)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={LAYOUT}")
        database = cls.__new__(cls)
        database._setup(conn, path, read_only=False, durable_sync="OFF")
        with database.transaction() as tx:
            initialise(tx, settings)
        return database

    def _setup(
        self, conn: sqlite3.Connection, path: Path, *, read_only: bool, durable_sync: str
    ) -> None:
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
    def transaction(self, *, durable: bool = False, pipelined: bool = False) -> Iterator[Tx]:
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
                yield SqliteTx(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # a COMMIT that failed (disk full, I/O) leaves it open
                    conn.execute("ROLLBACK")
                raise
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
            yield SqliteTx(conn)
        finally:
            conn.execute("ROLLBACK")

    def create_if_absent(self, tx: Tx, settings: Sequence[tuple[str, str]]) -> None:
        pass  # built whole by build()

    def checkpoint_wal(self) -> None:
        """Copy the WAL back into the file (SQLite's passive checkpoint), on a connection of
        its own, from a thread of its own.  A service's connections never do it as they commit
        (``wal_autocheckpoint=0``): there it would run holding the writers' lock, a pause of
        every worker's writes while the file is synced; a passive checkpoint lets them write."""
        if self._turns is None:
            return  # a command's connection checkpoints itself as it commits (SQLite's default)
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()

    def close(self) -> None:
        self.conn.close()
        if self._turns is not None:
            os.close(self._turns)
            self._turns = None


def create_or_open(path: Path, settings: Sequence[tuple[str, str]], fill: Fill[T]) -> T:
    """``fill`` the ledger at ``path``, creating it if absent: a new ledger is built and filled
    under a temporary name beside the file, then linked into place only if nothing is there
    yet: a failed fill removes only its own temporary file, and if another process created the
    ledger meanwhile, ``fill`` runs again on that one."""
    if not os.path.lexists(path):
        tmp = partial_path(path)
        remove_sqlite_files(tmp)  # left by a crashed process of the same id
        try:
            try:
                built = SqliteDatabase.build(tmp, settings)
            except OSError as exc:
                raise PrintpipeError(f"cannot create {path}: {exc.strerror}") from None
            try:
                result = fill(built)
            finally:
                built.finish_build()  # the last connection: the WAL checkpointed into the file
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)  # unlike a rename, never replaces what another made
            except FileExistsError:
                pass  # another import created the ledger meanwhile: fill that one, below
            except OSError as exc:
                raise PrintpipeError(f"cannot create {path}: {exc.strerror}") from None
            else:
                fsync_dir(path.parent)
                return result
        finally:
            remove_sqlite_files(tmp)
    database = SqliteDatabase(path)
    try:
        return fill(database)
    finally:
        database.close()
