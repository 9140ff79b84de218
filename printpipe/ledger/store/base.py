"""Where the ledger lives, and the one interface its logic speaks to any database.

The ledger's logic (``printpipe.ledger``) speaks :class:`Tx`: SQL with ``?`` placeholders,
rows as tuples, bulk inserts, per-key locks; and :class:`Database`: transactions, snapshots,
closing.  Each engine (``sqlite.py``, ``postgresql.py``) maps them onto its database; the
statements the ledger runs are the same text on both, and the schema is written once
(``schema.py``).  Nothing outside this package names an engine: a :data:`Location` is parsed
here, and a database is opened or created by :mod:`printpipe.ledger.store`'s functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from printpipe.errors import PrintpipeError
from printpipe.ids import TicketId
from printpipe.ledger.log import APPEND_ENTRY, GENESIS, PLAY_ACTION, play_answer_sql
from printpipe.ledger.store.schema import (
    LAYOUT,
    LAYOUT_8_COLUMNS,
    LAYOUT_9_COLUMNS,
    LAYOUT_10_COLUMNS,
    TABLES,
    UPGRADABLE,
    unique_index_sql,
)

POSTGRES_SCHEMES = ("postgresql", "postgres")
T = TypeVar("T")


def ticket_key(ticket: TicketId) -> int:
    """A ticket's row id in the ledger (``tickets``, ``payments``...): ``GGGGPPPPPPTTT`` as a
    number, so that the tickets of a pack range are one range of keys."""
    return ticket.game * 10**9 + ticket.pack * 10**3 + ticket.ticket


def ticket_of_key(key: int) -> TicketId:
    return TicketId(key // 10**9, key // 10**3 % 10**6, key % 10**3)


class Tx(Protocol):
    """One transaction on the ledger's database: SQL with ``?`` placeholders, rows as tuples."""

    writable_cte: bool
    """An ``UPDATE ... RETURNING`` may feed an ``INSERT`` in one ``WITH`` statement."""
    skip_locked: str
    """What follows a SELECT to lock its rows or, if another transaction holds them, skip
    them (PostgreSQL), or nothing (SQLite: one writer at a time anyway)."""
    lock_rows: str
    """What follows a SELECT to lock its rows, waiting for another transaction that holds
    them (PostgreSQL), or nothing (SQLite: one writer at a time anyway)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    def send(self, sql: str, params: Sequence[Any] = ()) -> Callable[[], list[tuple[Any, ...]]]:
        """Send a statement whose rows are read later, by the function returned: in a
        pipelined transaction (PostgreSQL), statements sent one after the other travel together,
        and the first rows read wait for them all (one round trip); elsewhere it runs now."""
        ...

    def write(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run a statement whose result nobody reads (pipelined: sent with the commit)."""
        ...

    def insert_rows(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        """Append many rows (PostgreSQL: binary ``COPY``)."""
        ...

    def lock(self, *keys: int) -> None:
        """Hold these keys until the transaction ends (PostgreSQL advisory locks, taken in
        increasing order, so that two transactions that each lock once never deadlock;
        SQLite's one writer already holds everything)."""
        ...

    def rows_table(
        self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[Any]]:
        """``WITH name(columns) AS (...)`` and its parameters: a batch's rows as a table one
        statement reads; ``columns``: (name, schema type: ``schema.TEXT``, ...).  SQLite: a
        ``VALUES`` list (:func:`values_table`); PostgreSQL: one array a column, ``unnest``ed
        (a statement's text, and its parameters, do not grow with the batch).  ``rows``: at
        least one."""
        ...

    def append_sql(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[Any]]:
        """An ``INSERT`` of ``rows`` into ``table`` (in their order) and its parameters, in one
        statement of the same text whatever their count on PostgreSQL (arrays, typed by the
        schema); ``rows``: at least one."""
        ...

    def by_keys_only(self) -> None:
        """The rest of the transaction reads rows by their keys: never a whole table (on
        PostgreSQL, ``enable_seqscan`` off for it: the planner, without statistics on tables
        that grow as plays are made, scanned ``plays`` and ``units`` for a batch's few rows)."""
        ...

    def any_of(self, column: str, kind: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (of schema type ``kind``), as a condition an index
        on the column serves, and its parameters: ``= ANY(array)`` (PostgreSQL), ``IN (?, ...)``
        (SQLite).  (A join on an ``unnest``ed table let PostgreSQL's planner scan the whole
        table.)  ``values``: at least one."""
        ...


def values_table(
    name: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> tuple[str, list[Any]]:
    """``WITH name(columns) AS (VALUES (?, ...), ...)`` and its parameters: a batch of rows as
    a table that one statement reads, the same text on both engines (one statement for a batch,
    not one a row).  ``rows``: at least one."""
    row = f"({', '.join('?' * len(columns))})"
    sql = f"WITH {name}({', '.join(columns)}) AS (VALUES {', '.join([row] * len(rows))})\n"
    return sql, [value for values in rows for value in values]


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


def old_layout_message(location: object, layout: int) -> str:
    if layout in UPGRADABLE:
        return (
            f"validation database {location} has layout {layout} of an earlier printpipe; "
            f"this printpipe reads layout {LAYOUT}: upgrade it in place, its payments, plays and "
            f"log kept (printpipe ledger upgrade --db {location} --keys KEYS); it was not changed"
        )
    if layout > LAYOUT:
        return (
            f"validation database {location} has layout {layout}; this printpipe reads layout "
            f"{LAYOUT}: use the printpipe that wrote it"
        )
    missing = (
        "VIRNs stored in clear"
        if layout < 2
        else "no block commitments nor proofs"
        if layout < 3
        else "an audit log chained without a key, or no online game server tables"
    )
    return (
        f"validation database {location} has layout {layout} of an earlier printpipe "
        f"({missing}); this printpipe reads layout {LAYOUT} only: rebuild it by "
        "importing its manifests into a new ledger (printpipe ledger import MANIFEST --db NEW), "
        "see docs/validation.md; it was not changed"
    )


def initialise(tx: Tx, settings: Sequence[tuple[str, str]]) -> None:
    """The rows a new ledger starts with: its marks, its ``settings`` (name, value: the
    book's defaults), the chain's head."""
    tx.executemany(
        "INSERT INTO ledger_meta VALUES (?, ?)",
        [("application", "printpipe-ledger"), ("layout", str(LAYOUT))],
    )
    tx.executemany("INSERT INTO settings VALUES (?, ?)", settings)
    tx.execute("INSERT INTO audit_head VALUES (1, 0, ?, NULL)", (GENESIS,))


Migrate = Callable[
    [Tx, int, Mapping[int, int], Callable[[str], AbstractContextManager[None]]], None
]
"""What the ledger enters, with its key, in the upgrade's transaction once the tables have
this layout's columns: given the layout it had, the deal cursors of layout 7 (block -> next
position; none from layout 8) and a way to write past a table's append-only rule
(``unguarded(table)``)."""


@dataclass(frozen=True, slots=True)
class Upgrade:
    """What :func:`printpipe.ledger.store.upgrade_layout` does to a ledger of an earlier
    layout: the log entry's time and terminal, since when (Unix seconds) no nonce may have
    been recorded and no play made (:func:`run_upgrade`), and what the ledger enters with its
    key (``migrate``)."""

    at: str
    terminal: str
    now: int
    quiet_s: int
    migrate: Migrate

    @property
    def quiet_since(self) -> int:
        return self.now - self.quiet_s


RECENT_NONCES = {
    5: "SELECT COUNT(*) FROM nonces WHERE seen_at >= ?",  # by the time they were seen
    6: "SELECT COUNT(*) FROM nonces WHERE created >= ?",  # by their signature's time
    7: "SELECT COUNT(*) FROM nonces WHERE created >= ?",
    8: "SELECT COUNT(*) FROM nonces WHERE created >= ?",
    9: "SELECT COUNT(*) FROM nonces WHERE created >= ?",
}
RECENT_PLAYS = "SELECT COUNT(*) FROM plays WHERE played_at >= ?"
PLAYS_ENTERED = (
    f"{APPEND_ENTRY} SELECT ?, ?, '{PLAY_ACTION}', player, NULL, {play_answer_sql()}, NULL, "
    "NULL FROM plays ORDER BY played_at, id"
)
"""Each play made before layout 7, entered in the log as the database holds it at the upgrade
(by the upgrade, at its time)."""


def run_upgrade(
    tx: Tx,
    layout: int,
    upgrade: Upgrade,
    *,
    make_table: Callable[[str], None],
    add_column: Callable[[str, str], None],
    unguarded: Callable[[str], AbstractContextManager[None]],
    location: object,
) -> None:
    """Bring the ledger ``tx`` writes from ``layout`` (one of :data:`UPGRADABLE`) to
    :data:`LAYOUT`, its layout mark aside (each engine keeps one more); refused, nothing
    changed, while a service or game server may still be running: requests signed, or plays
    made, in the last ``upgrade.quiet_s`` seconds (a nonce dropped could be replayed, a play
    made meanwhile by the old printpipe would not be entered in the log).  The tables get
    layout 8's columns and deal tables (from 7 or earlier), layout 9's column and outbox,
    layout 10's columns of the deal orders, then ``upgrade.migrate`` enters what needs the
    key."""
    since = datetime.fromtimestamp(upgrade.quiet_since, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    ((signed,),) = tx.execute(RECENT_NONCES[layout], (upgrade.quiet_since,))
    # no Z after the seconds: a play made in that very second (...:SS.ffffffZ) sorts after it
    ((played,),) = tx.execute(RECENT_PLAYS, (since,))
    count = int(signed) + int(played)
    if count:
        raise PrintpipeError(
            f"validation database {location}: {count} signed requests or plays in the last "
            f"{upgrade.quiet_s} s, so a service or game server may still be running (a nonce "
            "the upgrade drops could be replayed, a play it makes would not be logged): stop "
            f"the service and the game server, then run this again in {upgrade.quiet_s} s; it "
            "was not changed"
        )
    for table in UPGRADABLE[layout]:
        tx.execute(f"DROP TABLE {table}")
        make_table(table)
    cursors: dict[int, int] = {}
    if layout < 8:
        for table, column in LAYOUT_8_COLUMNS:
            add_column(table, column)
        if layout < 7:
            tx.execute(PLAYS_ENTERED, (upgrade.at, upgrade.terminal))
        cursors = {int(c): int(n) for c, n in tx.execute("SELECT commitment, next_position "
                                                          "FROM deal_orders")}  # fmt: skip
        tx.execute("DROP TABLE deal_orders")
        make_table("deal_orders")
        make_table("deal_ranges")
        tx.execute("DROP INDEX plays_by_day")  # a player's stakes of the day are on its row now
    if layout < 9:
        for table, column in LAYOUT_9_COLUMNS:
            add_column(table, column)
        make_table("wallet_outbox")
    if layout >= 8:  # from 7 or earlier, ``deal_orders`` was made anew with them
        for table, column in LAYOUT_10_COLUMNS:
            add_column(table, column)
        (deal_orders,) = [t for t in TABLES if t.name == "deal_orders"]
        for name, columns in deal_orders.unique_indexes:
            tx.execute(unique_index_sql(deal_orders.name, name, columns))
    upgrade.migrate(tx, layout, cursors, unguarded)
    tx.execute("UPDATE ledger_meta SET value = ? WHERE key = 'layout'", (str(LAYOUT),))


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


class Database(Protocol):
    """An open ledger database, whatever its engine."""

    location: Location
    read_only: bool
    dialect: str
    """The engine's name, as the service's health answer gives it."""
    empty: bool
    """No ledger yet: the import about to run creates its tables (:meth:`create_if_absent`)."""
    threads: int
    """How many threads may use it at once (a PostgreSQL pool's size; SQLite: 1)."""

    def transaction(
        self, *, durable: bool = False, pipelined: bool = False
    ) -> AbstractContextManager[Tx]:
        """One read-write transaction; ``durable``: committed to disk before it returns (the
        ledger's validations, which may be lost in a crash, are not); ``pipelined``: statements
        sent with :meth:`Tx.send` and :meth:`Tx.write` travel together (PostgreSQL)."""
        ...

    def snapshot(self) -> AbstractContextManager[Tx]:
        """A read transaction: one consistent view, nothing written."""
        ...

    def checkpoint_wal(self) -> None:
        """Fold the write-ahead log back into the database, off the writers' path (a running
        service, now and then, from a thread that does nothing else)."""
        ...

    def create_if_absent(self, tx: Tx, settings: Sequence[tuple[str, str]]) -> None:
        """Inside an import's transaction: create the ledger's tables if the database holds
        none yet (a new SQLite ledger is built whole before, so there it does nothing)."""
        ...

    def close(self) -> None: ...


Fill = Callable[[Database], T]
"""What an import does with the database it is handed (see ``store.create_or_open``)."""
