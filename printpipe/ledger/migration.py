"""``printpipe ledger upgrade``: a ledger of an earlier layout brought to this one's, in place.

The store makes the tables' changes (``store.base.run_upgrade``: layout 5's nonces remade, the
plays of layouts 5 and 6 entered in the log, layout 8's columns and deal tables); this module
enters, in the same transaction, what needs the ledger key (:func:`migrate`), then checks the
whole ledger as ``verify-log`` would, so that an upgrade never blesses a ledger a database
writer changed before it:

1. what an earlier printpipe logged and left unsealed is sealed (as its sealer would have);
2. each online block's deal order gets its keyed digest, and its positions not yet dealt their
   ranges (from layout 7's cursor);
3. each unit, play and wallet entry gets its MAC, each player the count of its stakes of the
   day, the ledger its id; each online block its place in the dealing order (the order in
   which they were imported: the order an earlier printpipe dealt them in), MACed;
4. the ledger is checked: the sealed log, payments and plays bound to their entries, every
   unit's lot against its committed leaf, every play against the deal order, every balance
   against its wallet entries, every play against its debit and credit, every opening deposit
   against its registration.  A problem refuses the upgrade, nothing changed;
5. an ``upgrade`` entry says what was done (sealed by the next keyed process).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from printpipe.errors import PrintpipeError
from printpipe.ledger.book import NONCE_TTL_S
from printpipe.ledger.core import make_ledger_id, seal_in, verify_ledger
from printpipe.ledger.inputs import TerminalId, require_terminal
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import (
    ENTRY_FIELDS,
    LOG_PURPOSE,
    PLAY_COLUMNS,
    LogKey,
    PlayRecord,
    WalletEntry,
    canonical_entry,
    describe,
)
from printpipe.ledger.proofs import Commitments
from printpipe.ledger.rules import format_time, utc_now
from printpipe.ledger.store import LAYOUT, Location, Tx, Upgrade, upgrade_layout
from printpipe.ledger.units import digest_of, place_blocks, range_rows

_ROWS = 5000
"""Rows updated by one ``executemany`` (a block's units are 1,500,000)."""


@dataclass
class Upgraded:
    """What an upgrade did: the layout before and after, and what it entered."""

    before: int
    after: int
    entered: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        done = ", ".join(f"{count:,} {what}" for what, count in self.entered.items() if count)
        return done or "nothing to enter"


def upgrade(location: Location, *, terminal: TerminalId, key: LedgerKey) -> Upgraded:
    """Bring the ledger at ``location`` to this printpipe's layout in place, audited as done by
    ``terminal`` (:func:`printpipe.ledger.store.upgrade_layout`, then :func:`migrate`).
    Refused, nothing changed: while signed requests were recorded or plays made in the last
    :data:`NONCE_TTL_S` seconds (a nonce the upgrade drops must be past the time its
    signature is accepted, and no game server of the earlier printpipe may still be dealing);
    with a key that is not the ledger's; or if the ledger does not verify."""
    require_terminal(terminal)
    at = utc_now()
    done = Upgraded(0, LAYOUT)

    def enter(tx: Tx, before: int, cursors: Mapping[int, int], unguarded: Unguarded) -> None:
        migrate(tx, cursors, unguarded, key=key, at=format_time(at), terminal=terminal.value,
                entered=done.entered, before=before)  # fmt: skip

    upgrade_plan = Upgrade(format_time(at), terminal.value, int(at.timestamp()), NONCE_TTL_S,
                           enter)  # fmt: skip
    done.before = upgrade_layout(location, upgrade_plan)
    return done


Unguarded = Callable[[str], AbstractContextManager[None]]


def migrate(
    tx: Tx, cursors: Mapping[int, int], unguarded: Unguarded, *, key: LedgerKey, at: str,
    terminal: str, entered: dict[str, int], before: int = 7,
) -> None:  # fmt: skip
    """Enter what layouts 8 and 10 need the key for, in the upgrade's transaction (the
    module's steps), from a ledger of layout ``before``; ``entered`` is told how many of each.
    A ledger of layout 8 has its money rows bound already: layout 9 adds no row to bind (its
    outbox starts empty, its plays' participation is recorded from then on); layout 10 gives
    each online block its place in the dealing order, in the order of import, MACed."""
    row = tx.one("SELECT value FROM ledger_meta WHERE key = 'key_fingerprint'")
    if row is not None and row[0] != key.fingerprint:
        raise PrintpipeError(
            f"{key.source or 'the ledger key'} is not the key of this validation database (its "
            "fingerprint differs): use the keys folder it was imported with; it was not changed"
        )
    log_key = LogKey(key.derive(LOG_PURPOSE))
    sealed = 0
    while count := seal_in(tx, log_key, wait=True, trusted=True):
        sealed += count
    entered["entries sealed that were awaiting their seal"] = sealed
    commitments = Commitments()
    if before < 8:
        _bind_money_rows(tx, cursors, unguarded, key=key, log_key=log_key, at=at,
                         commitments=commitments, entered=entered)  # fmt: skip
    entered["online blocks given their place in the dealing order"] = place_blocks(tx, log_key)
    found = verify_ledger(tx, key, commitments)
    if not found.ok:
        raise PrintpipeError(
            f"this ledger does not verify: {describe(found)}; it was not upgraded (a database "
            "writer may have changed it: see printpipe ledger verify-log with the earlier "
            "printpipe, and restore it from a backup)"
        )
    answer = f"layout {LAYOUT}: " + ", ".join(f"{n} {what}" for what, n in entered.items())
    fields = (at, terminal, "upgrade", "", None, answer[:900], None)
    row = (*fields, log_key.entry_mac(canonical_entry(*fields)))
    tx.execute(*tx.append_sql("audit_log", ENTRY_FIELDS, [row]))


def _bind_money_rows(
    tx: Tx, cursors: Mapping[int, int], unguarded: Unguarded, *, key: LedgerKey,
    log_key: LogKey, at: str, commitments: Commitments, entered: dict[str, int],
) -> None:  # fmt: skip
    """Layout 8's steps: deal orders and ranges from the cursors, every money row MACed, the
    players' stakes of today counted, the ledger's id made."""
    for commitment, dealt in sorted(cursors.items()):
        loaded = commitments.by_id(tx, commitment)
        tx.execute(
            "INSERT INTO deal_orders (commitment, units, order_mac) VALUES (?, ?, ?)",
            (commitment, loaded.commitment.tickets, digest_of(loaded, key)),
        )
        tx.insert_rows("deal_ranges", ("commitment", "start", "next_position", "end_position"),
                       range_rows(commitment, loaded.commitment.tickets, dealt))  # fmt: skip
    entered["deal orders given a keyed digest"] = len(cursors)
    entered["units MACed"] = _mac_units(tx, log_key)
    plays = [
        PlayRecord(str(i), str(p), int(u), int(c), int(q), int(s), int(lot), int(b), str(w))
        for i, p, u, c, q, s, lot, b, w, _ in tx.execute(f"SELECT {PLAY_COLUMNS} FROM plays")
    ]
    with unguarded("plays"):
        _update(tx, "UPDATE plays SET mac = ? WHERE id = ?",
                [(log_key.play_mac(play), play.id) for play in plays])  # fmt: skip
    entered["plays MACed"] = len(plays)
    moves = [
        WalletEntry(str(r), str(k), str(p), int(a), str(w))
        for r, k, p, a, w in tx.execute(
            "SELECT reference, kind, player, amount_cents, at FROM wallet_entries"
        )
    ]
    with unguarded("wallet_entries"):
        _update(tx, "UPDATE wallet_entries SET mac = ? WHERE reference = ? AND kind = ?",
                [(log_key.wallet_mac(m), m.reference, m.kind) for m in moves])  # fmt: skip
    entered["wallet entries MACed"] = len(moves)
    day = at[:10]  # (layout 9's outbox is new and empty: nothing of it to bind)
    counted = tx.execute(
        "UPDATE players SET stake_day = ?, staked_cents = (SELECT SUM(stake_cents) FROM plays "
        "WHERE plays.player = players.id AND plays.day = ?) WHERE id IN (SELECT player FROM "
        "plays WHERE day = ?) RETURNING id",
        (day, day, day),
    )
    entered["players' stakes of today counted"] = len(counted)
    make_ledger_id(tx, log_key)


def _mac_units(tx: Tx, log_key: LogKey) -> int:
    units = tx.execute("SELECT id, commitment, leaf, prize_eur, symbols FROM units")
    _update(
        tx,
        "UPDATE units SET mac = ? WHERE id = ?",
        [(log_key.unit_mac(int(u), int(c), int(leaf), int(p), bytes(s)), int(u))
         for u, c, leaf, p, s in units],
    )  # fmt: skip
    return len(units)


def _update(tx: Tx, sql: str, rows: list[tuple[object, ...]]) -> None:
    for start in range(0, len(rows), _ROWS):
        tx.executemany(sql, rows[start : start + _ROWS])
