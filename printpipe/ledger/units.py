"""An online block in the ledger: its units, bound to the commitment, and its deal order.

At the import of an online block's manifest with its commitment (in the import's one
transaction), each unit is stored with its place in the block (its leaf), its lot and its
symbols (``units``), once the manifest's records were checked to give the committed tree, and
with a MAC under the ledger key over all of it (:meth:`LogKey.unit_mac`): a row changed by a
database writer (a lot raised on an undealt unit, two units' places swapped) no longer verifies,
and the game server refuses to deal it.  The block's deal order is fixed then too
(``deal_orders``: its keyed digest, :mod:`printpipe.ledger.deal`), and its positions laid out
in ranges of :data:`DEAL_RANGE` (``deal_ranges``: each range's next position and its end),
which the plays of two workers take without waiting on one another (:mod:`printpipe.ledger.
plays`).  A range is deleted once dealt whole: the table holds only what is left to deal.

:func:`check_units` is what ``verify-log`` (and ``ledger upgrade``, before it enters the MACs)
asks of a block: every unit's lot, place and serial rebuild the committed root with the sealed
salts, every unit's MAC verifies, and every play's unit is the one the order deals at its
position.
"""

from __future__ import annotations

import hmac

import numpy as np

from printpipe.commitment.leaves import ticket_leaves
from printpipe.ledger.deal import DEAL_PURPOSE, DIGEST_PURPOSE, DealOrder, deal_key, order_mac
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import LogKey
from printpipe.ledger.proofs import LoadedCommitment
from printpipe.ledger.store import Tx, ticket_of_key
from printpipe.ledger.tree import read_leaf_level, read_salts
from printpipe.merkle import leaf_hashes, tree_root

DEAL_RANGE = 256
"""Positions per range of a block's deal order: a batch of plays takes its positions from one
range (two at a range's end) that it holds until its commit, and another worker's batch takes
another range meanwhile."""
UNIT_COLUMNS = ("id", "commitment", "leaf", "prize_eur", "symbols", "mac")


def store_units(
    tx: Tx, *, commitment: int, keys: np.ndarray, leaves: np.ndarray, prizes: np.ndarray,
    symbols: np.ndarray, log_key: LogKey,
) -> None:  # fmt: skip
    """An import's batch of an online block's units (their places, lots and symbols), each
    with its MAC."""
    rows = []
    for k, leaf, p, s in zip(
        keys.tolist(), leaves.tolist(), prizes.tolist(), symbols.astype(np.uint8), strict=True
    ):
        cells = bytes(s)
        rows.append((int(k), commitment, int(leaf), int(p), cells,
                     log_key.unit_mac(int(k), commitment, int(leaf), int(p), cells)))  # fmt: skip
    tx.insert_rows("units", UNIT_COLUMNS, rows)


def deal_order_of(loaded: LoadedCommitment, ledger_key: LedgerKey) -> DealOrder:
    """The order in which a committed block's units are dealt."""
    commitment = loaded.commitment
    return DealOrder(deal_key(ledger_key.derive(DEAL_PURPOSE), commitment.root), commitment.tickets)


def digest_of(loaded: LoadedCommitment, ledger_key: LedgerKey) -> str:
    """The keyed digest of a block's deal order (what ``deal_orders`` and the log record)."""
    order = deal_order_of(loaded, ledger_key)
    return order_mac(order, ledger_key.derive(DIGEST_PURPOSE), loaded.commitment.root)


def range_rows(commitment: int, units: int, dealt: int = 0) -> list[tuple[int, int, int, int]]:
    """The ``deal_ranges`` rows of a block of ``units`` whose first ``dealt`` positions are
    dealt: (commitment, start, next position, end), the ranges dealt whole left out."""
    rows = []
    for start in range(0, units, DEAL_RANGE):
        end = min(start + DEAL_RANGE, units)
        if dealt < end:
            rows.append((commitment, start, max(start, dealt), end))
    return rows


def record_deal_order(tx: Tx, *, loaded: LoadedCommitment, ledger_key: LedgerKey) -> str:
    """Fix a block's deal order before sale: its keyed digest recorded and its positions laid
    out in ranges, none dealt; returns the digest."""
    digest = digest_of(loaded, ledger_key)
    tx.execute(
        "INSERT INTO deal_orders (commitment, units, order_mac) VALUES (?, ?, ?)",
        (loaded.id, loaded.commitment.tickets, digest),
    )
    tx.insert_rows(
        "deal_ranges",
        ("commitment", "start", "next_position", "end_position"),
        range_rows(loaded.id, loaded.commitment.tickets),
    )
    return digest


def check_units(
    tx: Tx, *, loaded: LoadedCommitment, ledger_key: LedgerKey, log_key: LogKey, macs: bool = True
) -> tuple[int, list[str]]:
    """How many units of a block were checked, and what is wrong with them (empty: nothing):
    one unit per leaf; their lots, places and serials, with the sealed salts, rebuild the
    committed root (a unit whose leaf hash differs from the tree's stored one is named); each
    MAC verifies (``macs``); each play's unit is the order's at its position, its lot the
    unit's."""
    commitment, name = loaded.commitment, loaded.name
    rows = tx.execute(
        "SELECT id, leaf, prize_eur, symbols, mac FROM units WHERE commitment = ? ORDER BY leaf",
        (loaded.id,),
    )
    size = commitment.tickets
    problems: list[str] = []
    if [int(row[1]) for row in rows] != list(range(size)):
        return len(rows), [f"the units of {name} are not one per leaf 0 to {size - 1} (a unit "
                           "deleted, inserted or moved)"]  # fmt: skip
    ids = np.array([int(row[0]) for row in rows], dtype=np.int64)
    prizes = np.array([int(row[2]) for row in rows], dtype=np.int64)
    if macs:
        for unit, leaf, prize, symbols, mac in rows:
            expected = log_key.unit_mac(int(unit), loaded.id, int(leaf), int(prize), bytes(symbols))
            if mac is None or not hmac.compare_digest(bytes(mac), expected):
                problems.append(
                    f"the unit {ticket_of_key(int(unit)).serial} of {name} (lot {prize} EUR) was "
                    "edited: its MAC does not verify"
                )
    salts = read_salts(tx, commitment=loaded.id, size=size, key=ledger_key,
                       salt_nonce=loaded.salt_nonce)  # fmt: skip
    packs, tickets = ids // 10**3 % 10**6, ids % 10**3
    hashes = leaf_hashes(ticket_leaves(commitment.game_number, packs, tickets, prizes, None, salts))
    if tree_root(hashes) != commitment.root:
        stored = read_leaf_level(tx, commitment=loaded.id, size=size)
        differ: list[int] = (
            [] if stored is None else np.flatnonzero((stored != hashes).any(axis=1)).tolist()
        )
        for leaf in differ[:5]:
            problems.append(
                f"the unit {ticket_of_key(int(ids[leaf])).serial} of {name} says lot "
                f"{prizes[leaf]} EUR, not its committed leaf's (edited)"
            )
        if not len(differ):
            problems.append(f"the units of {name} do not give its committed root (edited)")
    played = tx.execute(
        "SELECT p.id, p.position, p.unit, p.lot_cents, u.commitment, u.leaf, u.prize_eur "
        "FROM plays p LEFT JOIN units u ON u.id = p.unit WHERE p.commitment = ? "
        "ORDER BY p.position",
        (loaded.id,),
    )
    undealt = np.zeros(size, dtype=bool)
    for next_position, end in tx.execute(
        "SELECT next_position, end_position FROM deal_ranges WHERE commitment = ?", (loaded.id,)
    ):
        undealt[int(next_position) : int(end)] = True
    lost = size - len(played) - int(undealt.sum())
    if lost:
        problems.append(
            f"{abs(lost)} positions of {name} are "
            + ("neither dealt nor left to deal" if lost > 0 else "both dealt and left to deal")
            + " (the deal ranges were changed)"
        )
    if played:
        order = deal_order_of(loaded, ledger_key)
        positions = np.array([int(row[1]) for row in played], dtype=np.int64)
        if positions.min() < 0 or positions.max() >= size:
            return len(rows), [*problems, f"a play of {name} has a position outside its order"]
        if undealt[positions].any():
            problems.append(f"a play of {name} is at a position left to deal (the deal ranges "
                            "were changed)")  # fmt: skip
        dealt = order.leaves(positions)
        for (play, position, unit, lot, home, leaf, prize), due in zip(
            played, dealt.tolist(), strict=True
        ):
            if home != loaded.id or leaf != due:
                problems.append(
                    f"the play {play} dealt {ticket_of_key(int(unit)).serial}, not the unit the "
                    f"deal order of {name} deals at position {position} (inserted or edited)"
                )
            elif int(lot) != int(prize) * 100:
                problems.append(f"the play {play} credited {lot} cents, its unit's lot is "
                                f"{prize} EUR (edited)")  # fmt: skip
    return len(rows), problems
