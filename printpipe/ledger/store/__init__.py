"""The ledger's database: one :class:`Database` protocol, one module per engine.

``sqlite.py`` (one SQLite file, the embedded default) and ``postgresql.py`` (a PostgreSQL
database) each render the one schema (``schema.py``) to their dialect and map :class:`Tx` onto
their driver.  This module is the only one that chooses between them: the rest of the ledger
opens a :data:`Location` with :func:`open_database` or :func:`create_or_open` and never names
an engine.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from printpipe.ledger.store import postgresql, sqlite
from printpipe.ledger.store.base import (
    Database,
    Location,
    PostgresLocation,
    T,
    Tx,
    Upgrade,
    parse_location,
    ticket_key,
    ticket_of_key,
    values_table,
)
from printpipe.ledger.store.schema import LAYOUT

__all__ = [
    "LAYOUT",
    "Database",
    "Location",
    "PostgresLocation",
    "Tx",
    "Upgrade",
    "create_or_open",
    "database_errors",
    "location_argument",
    "open_database",
    "parse_location",
    "ticket_key",
    "ticket_of_key",
    "tx_over",
    "upgrade_layout",
    "values_table",
]


def tx_over(conn: Any) -> Tx:
    """The ``Tx`` adapter over an open connection of either engine (a psycopg connection, or
    an sqlite3 one), for a database that is not a ledger but speaks the same dialects (the
    reference wallet's, ``printpipe.wallet.store``)."""
    if isinstance(conn, sqlite3.Connection):
        return sqlite.SqliteTx(conn)
    return postgresql.PostgresTx(conn)


def open_database(
    location: Location,
    *,
    read_only: bool = False,
    pool_size: int = 0,
    shared: bool = False,
) -> Database:
    """Open the ledger at ``location`` (SQLite files are refused untouched if they are not
    one; a PostgreSQL database with other tables too).  ``pool_size``: connections shared by
    threads (PostgreSQL; an SQLite ledger is used by one thread, ``Database.threads``).
    ``shared``: several processes of one service write to it (SQLite: they take turns on a
    blocking lock)."""
    if isinstance(location, PostgresLocation):
        return postgresql.PostgresDatabase(location, read_only=read_only, pool_size=pool_size)
    return sqlite.SqliteDatabase(location, read_only=read_only, shared=shared)


def create_or_open(
    location: Location, *, settings: Sequence[tuple[str, str]], fill: Callable[[Database], T]
) -> T:
    """Run ``fill`` (an import) on the ledger at ``location``, creating the ledger if absent
    with these ``settings`` (name, value), and close it.  All or nothing: a new SQLite ledger
    appears only once ``fill`` has returned; a PostgreSQL one is created in ``fill``'s own
    transaction (``Database.create_if_absent``)."""
    if isinstance(location, PostgresLocation):
        return postgresql.create_or_open(location, settings, fill)
    return sqlite.create_or_open(location, settings, fill)


def upgrade_layout(location: Location, upgrade: Upgrade) -> int:
    """Bring the ledger at ``location`` from an earlier layout to :data:`LAYOUT` in place, in
    one transaction (``base.run_upgrade``): the tables that changed (``schema.UPGRADABLE``)
    made anew, the rest kept (tickets, payments, plays, the log, its seals, the terminals), the
    plays made before entered in the log, ``upgrade``'s entry appended.  Refused with nothing
    changed: a database that is not a ledger, a layout that cannot be brought forward (rebuilt
    by import), or signed requests recorded or plays made in the last ``upgrade.quiet_s``
    seconds (a service or game server still running).  The layout it had (:data:`LAYOUT`:
    there was nothing to do)."""
    if isinstance(location, PostgresLocation):
        return postgresql.upgrade_layout(location, upgrade)
    return sqlite.upgrade_layout(location, upgrade)


def location_argument(location: Location) -> str:
    """The ``--db`` text that names ``location`` again (a PostgreSQL DSN with its password:
    for a child process, never for a message)."""
    return location.dsn if isinstance(location, PostgresLocation) else str(location)


def database_errors() -> tuple[type[BaseException], ...]:
    """The driver errors a database may raise (locked, disk full, connection lost): the
    command line shows them as one line, the service as 503."""
    return (sqlite3.Error, *postgresql.error_types())
