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

**Blocks that follow one another.** Each online block takes, at its import, the next place in
the ledger's dealing order (``deal_orders.place``: 1, 2, 3... in the order of import, MACed
with its deal order's digest, :class:`printpipe.ledger.log.BlockPlace`): the game server deals
the ranges of the block in the first place first, and goes on to the next block's in the same
batch when one is dealt out (sold out only when the last is).  :func:`check_places` is what
``verify-log`` asks of the order: one block at each place 1 to n, each place's MAC verifying.

:func:`check_units` is what ``verify-log`` (and ``ledger upgrade``, before it enters the MACs)
asks of a block: every unit's lot, place and serial rebuild the committed root with the sealed
salts, every unit's MAC verifies, and every play's unit is the one the order deals at its
position.
"""

from __future__ import annotations

import hmac

import numpy as np

from printpipe.commitment.leaves import ticket_leaves
from printpipe.commitment.merkle import leaf_hashes, tree_root
from printpipe.ledger.deal import DEAL_PURPOSE, DIGEST_PURPOSE, DealOrder, deal_key, order_mac
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import BlockPlace, LogKey
from printpipe.ledger.proofs import LoadedCommitment
from printpipe.ledger.store import Tx, ticket_of_key
from printpipe.ledger.tree import read_leaf_level, read_salts

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


def record_deal_order(
    tx: Tx, *, loaded: LoadedCommitment, ledger_key: LedgerKey, log_key: LogKey
) -> BlockPlace:
    """Fix a block's deal order before sale: its keyed digest recorded, its place in the
    dealing order the next one (after every block imported before), MACed, and its positions
    laid out in ranges, none dealt."""
    ((last,),) = tx.execute("SELECT COALESCE(MAX(place), 0) FROM deal_orders")
    place = BlockPlace(loaded.id, loaded.commitment.tickets, digest_of(loaded, ledger_key),
                       int(last) + 1)  # fmt: skip
    tx.execute(
        "INSERT INTO deal_orders (commitment, units, order_mac, place, mac) VALUES (?, ?, ?, ?, ?)",
        (place.commitment, place.units, place.order_mac, place.place,
         log_key.block_place_mac(place)),
    )  # fmt: skip
    tx.insert_rows(
        "deal_ranges",
        ("commitment", "start", "next_position", "end_position"),
        range_rows(loaded.id, loaded.commitment.tickets),
    )
    return place


def place_blocks(tx: Tx, log_key: LogKey) -> int:
    """The upgrade's step: each block without a place (a ledger of layout 9 or earlier) given
    the next, in the order of import (their commitments' ids), MACed; how many."""
    ((last,),) = tx.execute("SELECT COALESCE(MAX(place), 0) FROM deal_orders")
    rows = tx.execute(
        "SELECT commitment, units, order_mac FROM deal_orders WHERE place IS NULL ORDER BY 1"
    )
    for n, (commitment, units, digest) in enumerate(rows, start=int(last) + 1):
        place = BlockPlace(int(commitment), int(units), str(digest), n)
        tx.execute("UPDATE deal_orders SET place = ?, mac = ? WHERE commitment = ?",
                   (n, log_key.block_place_mac(place), place.commitment))  # fmt: skip
    return len(rows)


def check_places(tx: Tx, log_key: LogKey, names: dict[int, str]) -> list[str]:
    """What is wrong with the dealing order of the ledger's online blocks (empty: nothing):
    one block at each place 1 to n, each row's MAC verifying (``names``: each block's name
    by its commitment's id)."""
    rows = tx.execute(
        "SELECT commitment, units, order_mac, place, mac FROM deal_orders ORDER BY place"
    )
    problems = []
    places = sorted(int(row[3]) for row in rows if row[3] is not None)
    if places != list(range(1, len(rows) + 1)):
        problems.append(f"the dealing order of the ledger's {len(rows)} online blocks is not "
                        "one block at each place from 1 (a place deleted, repeated or "
                        "skipped)")  # fmt: skip
    for commitment, units, digest, place, mac in rows:
        name = names.get(int(commitment), f"block {commitment}")
        row = None if place is None else BlockPlace(int(commitment), int(units), str(digest),
                                                    int(place))  # fmt: skip
        if row is None or not log_key.macs_verify(mac, log_key.block_place_mac(row)):
            problems.append(f"the place of {name} in the dealing order ({place}) was edited: "
                            "its MAC does not verify")  # fmt: skip
    return problems


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
