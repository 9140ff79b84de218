"""An online block in the ledger: its units and its deal order, loaded by ``ledger import``.

At the import of an online block's manifest with its commitment (in the import's one
transaction), each unit is stored with its place in the block (its leaf), its lot and its
symbols (``units``), and the block's deal order is fixed (``deal_orders``: the cursor at 0 and
the SHA-256 of the whole order, :mod:`printpipe.ledger.deal`), before the first play.
"""

from __future__ import annotations

import numpy as np

from printpipe.ledger.deal import DEAL_PURPOSE, DealOrder, deal_key, order_digest
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.proofs import LoadedCommitment
from printpipe.ledger.store import Tx


def store_units(
    tx: Tx, *, commitment: int, keys: np.ndarray, leaves: np.ndarray, prizes: np.ndarray,
    symbols: np.ndarray,
) -> None:  # fmt: skip
    """An import's batch of an online block's units (their places, lots and symbols)."""
    rows = [
        (int(k), commitment, int(leaf), int(p), bytes(s))
        for k, leaf, p, s in zip(
            keys.tolist(), leaves.tolist(), prizes.tolist(), symbols.astype(np.uint8), strict=True
        )
    ]
    tx.insert_rows("units", ("id", "commitment", "leaf", "prize_eur", "symbols"), rows)


def record_deal_order(tx: Tx, *, loaded: LoadedCommitment, ledger_key: LedgerKey) -> str:
    """Fix a block's deal order before sale: its cursor at 0 and the SHA-256 of the whole
    order recorded; returns the digest."""
    commitment = loaded.commitment
    key = deal_key(ledger_key.derive(DEAL_PURPOSE), commitment.root)
    digest = order_digest(DealOrder(key, commitment.tickets))
    tx.execute(
        "INSERT INTO deal_orders (commitment, units, order_sha256, next_position) "
        "VALUES (?, ?, ?, 0)",
        (loaded.id, commitment.tickets, digest),
    )
    return digest
