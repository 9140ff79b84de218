"""The ledger's schema, written once: every table, column, key, index and append-only rule.

Each engine renders this description to its own dialect (``sqlite.py``: ``INTEGER`` for every
integer, so that an ``INTEGER PRIMARY KEY`` is the row id, ``BLOB``, ``WITHOUT ROWID`` tables
and triggers; ``postgresql.py``: ``INTEGER``/``BIGINT``, ``BYTEA``, identity keys, one trigger
function, ``STORAGE PLAIN`` for the tree's rows, which are read whole and never compress).
Adding a table for a later feature: describe it here and raise :data:`LAYOUT`.
"""

from __future__ import annotations

from dataclasses import dataclass

LAYOUT = 10
"""The ledger's layout: 2 = VIRNs as HMACs, hash-chained audit log, terminals (issue 12);
3 = the blocks' public commitments, their trees and sealed salts, each payment's inclusion
proof (issue 14); 4 = the online game server's units, deal orders, players, wallet and plays,
and the operator's platform terminals (issue 21), or, apart, the audit log sealed under a key
the database does not hold with payments bound to it (issue 20); 5 = both; 6 = signed
requests' nonces kept by their signature's time (issue 20: a batch of them is written at the
end of one index, not on as many pages); 7 = every play entered in the audit log, which binds
it (the tables are 6's); 8 = every money row bound (issue 25): entries, plays, wallet entries
and units MACed, the deal order's digest keyed and its positions in ranges, each player's
stakes of the day counted on its row; 9 = the operator's wallet over HTTP (issue 27): its calls'
durable outbox (``wallet_outbox``), each play's Super Jackpot participation; 10 = blocks
that follow one another (issue 27): each online block's place in the dealing order, recorded
at its import and MACed with its deal order (``deal_orders.place``, ``mac``)."""

UPGRADABLE: dict[int, tuple[str, ...]] = {5: ("nonces",), 6: (), 7: (), 8: (), 9: ()}
"""The layouts a ledger is brought to :data:`LAYOUT` from in place (``printpipe ledger
upgrade``), and the tables made anew (the signed requests' nonces, which only a running
service needs): every other table is kept, and given what layout 8 adds
(``store.base.run_upgrade``).  Every one of them also gets the log entries of the plays made
before layout 7, what layout 9 adds (:data:`LAYOUT_9_COLUMNS`, ``wallet_outbox``) and what
layout 10 adds (:data:`LAYOUT_10_COLUMNS`)."""

OUTBOX_STATES = "'sent', 'pending', 'confirmed', 'refused', 'cancel'"
INT = "int"  # fits 32 bits
BIGINT = "bigint"
TEXT = "text"
BYTES = "bytes"
IDENTITY = "identity"  # an integer primary key the database numbers


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    rule: str = "NOT NULL"  # what follows the type: NOT NULL, PRIMARY KEY, REFERENCES ...
    plain: bool = False  # stored uncompressed, in line (PostgreSQL)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    keys: tuple[str, ...] = ()  # table constraints: PRIMARY KEY (...), UNIQUE (...)
    clustered: bool = False  # rows stored by their primary key (SQLite: WITHOUT ROWID)
    indexes: tuple[tuple[str, str], ...] = ()  # (name, columns)
    unique_indexes: tuple[tuple[str, str], ...] = ()  # (name, columns): no two rows alike
    append_only: str | None = None  # what SQLite's refusal says is append-only


def _c(name: str, type_: str, rule: str = "NOT NULL", *, plain: bool = False) -> Column:
    return Column(name, type_, rule, plain)


TABLES: tuple[Table, ...] = (
    Table("ledger_meta", (_c("key", TEXT, "PRIMARY KEY"), _c("value", TEXT))),
    Table("settings", (_c("key", TEXT, "PRIMARY KEY"), _c("value", TEXT))),
    Table(
        "manifests",
        (
            _c("id", IDENTITY, "PRIMARY KEY"),
            _c("records_sha256", TEXT, "NOT NULL UNIQUE"),
            _c("body_sha256", TEXT),
            _c("kind", TEXT),
            _c("game", TEXT),
            _c("game_number", INT),
            _c("block", INT),
            _c("first_pack", INT),
            _c("last_pack", INT),
            _c("records", INT),
            _c("new_records", INT),
            _c("prize_eur", BIGINT),
            _c("imported_at", TEXT),
            _c("file", TEXT),
        ),
    ),
    Table(
        "tickets",
        (
            _c("id", BIGINT, "PRIMARY KEY"),
            _c("virn_hmac", BYTES),
            _c("prize_eur", INT),
            _c("manifest", BIGINT, "NOT NULL REFERENCES manifests(id)"),
            _c("record_hmac", BYTES),
        ),
    ),
    Table(
        "packs",
        (
            _c("id", BIGINT, "PRIMARY KEY"),
            _c("game_number", INT),
            _c("pack", INT),
            _c("block", INT),
            _c("state", TEXT, "NOT NULL CHECK (state IN ('issued', 'activated', 'settled'))"),
            _c("changed_at", TEXT),
            _c("retailer", TEXT, ""),
        ),
        indexes=(("packs_by_number", "pack"),),
    ),
    Table(
        "payments",
        (
            _c("ticket", BIGINT, "PRIMARY KEY"),
            _c("amount_eur", INT),
            _c("paid_at", TEXT),
            _c("terminal", TEXT),
            _c("mac", BYTES),
        ),
        append_only="payments are",
    ),
    Table(
        "commitments",
        (
            _c("id", IDENTITY, "PRIMARY KEY"),
            _c("game", TEXT),
            _c("game_number", INT),
            _c("block", INT),
            _c("first_pack", INT),
            _c("last_pack", INT),
            _c("tickets", BIGINT),
            _c("root", BYTES),
            _c("document", TEXT),
            _c("salt_nonce", BYTES),
            _c("manifest", BIGINT, "NOT NULL REFERENCES manifests(id)"),
            _c("loaded_at", TEXT),
            _c("closed_on", TEXT, ""),
        ),
        keys=("UNIQUE (game_number, block, first_pack)",),
    ),
    Table(
        "merkle_nodes",
        (
            _c("commitment", BIGINT),
            _c("level", INT),
            _c("chunk", BIGINT),
            _c("hashes", BYTES, plain=True),
        ),
        keys=("PRIMARY KEY (commitment, level, chunk)",),
    ),
    Table(
        "sealed_salts",
        (_c("commitment", BIGINT), _c("chunk", BIGINT), _c("sealed", BYTES, plain=True)),
        keys=("PRIMARY KEY (commitment, chunk)",),
    ),
    Table(
        "payment_proofs",
        (
            _c("ticket", BIGINT, "PRIMARY KEY REFERENCES payments(ticket)"),
            _c("commitment", BIGINT, "NOT NULL REFERENCES commitments(id)"),
            _c("proof", TEXT),
        ),
        indexes=(("payment_proofs_by_commitment", "commitment, ticket"),),
        append_only="payment proofs are",
    ),
    Table(
        "virn_failures",
        (
            _c("ticket", BIGINT),
            _c("terminal", TEXT),
            _c("failures", INT),
            _c("last_at", TEXT),
        ),
        keys=("PRIMARY KEY (ticket, terminal)",),
        clustered=True,
    ),
    Table(
        "terminal_failures",
        (_c("terminal", TEXT, "PRIMARY KEY"), _c("window_start", TEXT), _c("failures", INT)),
    ),
    Table(
        "terminals",
        (
            _c("id", TEXT, "PRIMARY KEY"),
            _c("key_id", TEXT, "NOT NULL UNIQUE"),
            _c("public_key", BYTES),
            _c("retailer", TEXT, ""),
            _c("role", TEXT, "NOT NULL CHECK (role IN ('retailer', 'office', 'platform'))"),
            _c("added_at", TEXT),
            _c("revoked_at", TEXT, ""),
        ),
    ),
    Table(
        "nonces",  # a replay repeats its signature's created time, its keyid and its nonce
        (_c("created", BIGINT), _c("key_id", TEXT), _c("nonce", TEXT)),
        keys=("PRIMARY KEY (created, key_id, nonce)",),
        clustered=True,
    ),
    Table(
        "idempotency",
        (
            _c("terminal", TEXT),
            _c("key", TEXT),
            _c("fingerprint", BYTES),
            _c("token", TEXT),
            _c("started_at", BIGINT),
            _c("status", INT, ""),
            _c("response", TEXT, ""),
        ),
        keys=("PRIMARY KEY (terminal, key)",),
        clustered=True,
        indexes=(("idempotency_by_time", "started_at"),),
    ),
    # -- the online game server (printpipe play, issue 21) ------------------------------------
    Table(
        "units",  # an online block's units, loaded with its commitment
        (
            _c("id", BIGINT, "PRIMARY KEY"),  # the serial's key, as tickets
            _c("commitment", BIGINT, "NOT NULL REFERENCES commitments(id)"),
            _c("leaf", BIGINT),  # its place in the block
            _c("prize_eur", INT),
            _c("symbols", BYTES),  # one byte a symbol, both grids
            _c("mac", BYTES, ""),  # under the ledger key, made at import (ledger/units.py)
        ),
        keys=("UNIQUE (commitment, leaf)",),
    ),
    Table(
        "deal_orders",  # per online block: its order fixed at import (its keyed digest)
        (
            _c("commitment", BIGINT, "PRIMARY KEY REFERENCES commitments(id)"),
            _c("units", BIGINT),
            _c("order_mac", TEXT),
            _c("place", INT, ""),  # the block's place in the dealing order: 1 is dealt first
            _c("mac", BYTES, ""),  # over the four before (log.DealtBlock), made at import
        ),
        unique_indexes=(("deal_orders_by_place", "place"),),
    ),
    Table(
        "deal_ranges",  # the positions left to deal, in ranges (ledger/units.py, plays.py)
        (
            _c("commitment", BIGINT, "NOT NULL REFERENCES deal_orders(commitment)"),
            _c("start", BIGINT),
            _c("next_position", BIGINT),
            _c("end_position", BIGINT),
        ),
        keys=(
            "PRIMARY KEY (commitment, start)",
            "CHECK (start <= next_position AND next_position < end_position)",
        ),
    ),
    Table(
        "players",  # the game server's players: the built-in wallet's balance, today's stakes
        (
            _c("id", TEXT, "PRIMARY KEY"),
            _c("balance_cents", BIGINT, "NOT NULL CHECK (balance_cents >= 0)"),
            _c("added_at", TEXT),
            _c("stake_day", TEXT, ""),  # the UTC day of staked_cents (none before a play)
            _c("staked_cents", BIGINT, "NOT NULL DEFAULT 0"),
        ),
    ),
    Table(
        "wallet_entries",  # each movement, once per (reference, kind)
        (
            _c("reference", TEXT),
            _c("kind", TEXT, "NOT NULL CHECK (kind IN ('deposit', 'debit', 'credit'))"),
            _c("player", TEXT, "NOT NULL REFERENCES players(id)"),
            _c("amount_cents", BIGINT),
            _c("at", TEXT),
            _c("mac", BYTES, ""),  # every MAC column may be NULL (ledger upgrade adds them)
        ),
        keys=("PRIMARY KEY (reference, kind)",),
        append_only="wallet entries are",
    ),
    Table(
        "plays",
        (
            _c("id", TEXT, "PRIMARY KEY"),
            _c("player", TEXT, "NOT NULL REFERENCES players(id)"),
            _c("idempotency_key", TEXT),
            _c("fingerprint", BYTES),
            _c("unit", BIGINT, "NOT NULL UNIQUE REFERENCES units(id)"),
            _c("commitment", BIGINT),
            _c("position", BIGINT),
            _c("stake_cents", INT),
            _c("lot_cents", BIGINT),
            _c("balance_cents", BIGINT),
            _c("day", TEXT),
            _c("played_at", TEXT),
            _c("mac", BYTES, ""),
            _c("jackpot_cents", BIGINT, ""),  # the linked game's share (NULL before layout 9)
        ),
        keys=("UNIQUE (player, idempotency_key)", "UNIQUE (commitment, position)"),
        indexes=(("plays_by_player", "player, commitment, position"),),
        append_only="plays are",
    ),
    Table(
        "wallet_outbox",  # the calls to the operator's wallet over HTTP (ledger/outbox.py)
        (
            _c("reference", TEXT),  # the play's id
            _c("kind", TEXT, "NOT NULL CHECK (kind IN ('debit', 'credit', 'cancel'))"),
            _c("player", TEXT),
            _c("amount_cents", BIGINT),
            _c("split", TEXT),  # a debit's shares, canonical JSON ('' for a credit, a cancel)
            _c("created_at", TEXT),
            _c("mac", BYTES),  # over the five before (the call as asked: log.OutboxCall)
            _c("idempotency_key", TEXT, ""),  # a debit's: its play's request
            _c("fingerprint", BYTES, ""),
            _c("state", TEXT, f"NOT NULL CHECK (state IN ({OUTBOX_STATES}))"),
            _c("attempts", INT, "NOT NULL DEFAULT 0"),
            _c("next_at", BIGINT, "NOT NULL DEFAULT 0"),  # Unix s: when it is sent again
            _c("wallet_at", TEXT, ""),  # the wallet's time on its receipt
            _c("refunded", INT, ""),  # a cancel's receipt: 1 if it gave a debit back
            _c("last_error", TEXT, ""),
        ),
        keys=("PRIMARY KEY (reference, kind)",),
        indexes=(
            ("wallet_outbox_due", "state, next_at"),
            ("wallet_outbox_by_request", "player, idempotency_key"),
        ),
    ),
    Table(
        "player_logins",  # the demo's one-time login tokens, as SHA-256
        (
            _c("token_hash", BYTES, "PRIMARY KEY"),
            _c("player", TEXT, "NOT NULL REFERENCES players(id)"),
            _c("expires_at", BIGINT),
            _c("used_at", BIGINT, ""),
        ),
    ),
    Table(
        "player_sessions",  # the demo's session cookies, as SHA-256
        (
            _c("token_hash", BYTES, "PRIMARY KEY"),
            _c("player", TEXT, "NOT NULL REFERENCES players(id)"),
            _c("expires_at", BIGINT),
        ),
    ),
    Table(
        "audit_log",
        (
            _c("id", IDENTITY, "PRIMARY KEY"),
            _c("at", TEXT),
            _c("terminal", TEXT),
            _c("action", TEXT),
            _c("input", TEXT),
            _c("ticket", TEXT, ""),
            _c("answer", TEXT),
            _c("request", TEXT, ""),
            _c("mac", BYTES, ""),  # none for a keyless command's entry (log.KEYLESS_ACTIONS)
        ),
        append_only="audit_log is",
    ),
    Table("audit_pending", (_c("entry", BIGINT, "PRIMARY KEY"),)),
    Table(
        "audit_seal",
        (
            _c("seq", BIGINT, "PRIMARY KEY"),
            _c("entry", BIGINT, "NOT NULL UNIQUE"),
            _c("hash", BYTES),
        ),
        append_only="audit_seal is",
    ),
    Table(
        "audit_head",
        (
            _c("id", INT, "PRIMARY KEY CHECK (id = 1)"),
            _c("seq", BIGINT),
            _c("hash", BYTES),
            _c("mac", BYTES, ""),
        ),
    ),
)


LAYOUT_8_COLUMNS: tuple[tuple[str, str], ...] = (
    ("audit_log", "mac"),
    ("units", "mac"),
    ("plays", "mac"),
    ("wallet_entries", "mac"),
    ("players", "stake_day"),
    ("players", "staked_cents"),
)
"""The columns layout 8 adds to tables a layout-7 ledger has (``store.base.run_upgrade``)."""

LAYOUT_9_COLUMNS: tuple[tuple[str, str], ...] = (("plays", "jackpot_cents"),)
"""The columns layout 9 adds to tables a layout-8 ledger has (and its table ``wallet_outbox``)."""

LAYOUT_10_COLUMNS: tuple[tuple[str, str], ...] = (("deal_orders", "place"), ("deal_orders", "mac"))
"""The columns layout 10 adds to a layout-9 ledger's ``deal_orders`` (and its unique index)."""


COLUMN_TYPES: dict[tuple[str, str], str] = {
    (table.name, column.name): column.type for table in TABLES for column in table.columns
}
"""Each column's type in the description, by (table, column)."""


def column_sql(types: dict[str, str], table: str, name: str) -> str:
    """``ALTER TABLE ... ADD COLUMN`` for one column of the description, in a dialect."""
    (column,) = [c for t in TABLES if t.name == table for c in t.columns if c.name == name]
    return f"ALTER TABLE {table} ADD COLUMN {column.name} {types[column.type]} {column.rule}"


def unique_index_sql(table: str, name: str, columns: str) -> str:
    return f"CREATE UNIQUE INDEX {name} ON {table} ({columns})"


def table_sql(rendered: list[tuple[Table, str]], name: str) -> str:
    """The ``CREATE`` statements of one table, from :func:`render`'s output."""
    return next(sql for table, sql in rendered if table.name == name)


def render(types: dict[str, str], *, clustered: str = "") -> list[tuple[Table, str]]:
    """Each table's ``CREATE TABLE`` and ``CREATE INDEX`` statements in a dialect: ``types``
    maps the description's column types to the dialect's; ``clustered`` is what follows a
    clustered table's definition."""
    rendered = []
    for table in TABLES:
        lines = [f"{c.name} {types[c.type]} {c.rule}".rstrip() for c in table.columns]
        body = ",\n    ".join([*lines, *table.keys])
        sql = f"CREATE TABLE {table.name} (\n    {body}\n){clustered if table.clustered else ''};\n"
        for name, columns in table.indexes:
            sql += f"CREATE INDEX {name} ON {table.name} ({columns});\n"
        for name, columns in table.unique_indexes:
            sql += unique_index_sql(table.name, name, columns) + ";\n"
        rendered.append((table, sql))
    return rendered
