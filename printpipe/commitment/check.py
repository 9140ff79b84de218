"""The audit's commitment check: a block store against its ``commitment.json``.

The store's signed summary holds the root the producer computed at ``generate``; the check
rebuilds the tree from the store's columns and salts, then holds the commitment file to the
summary, field by field, and checks its signatures.
"""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from printpipe.block import BlockStore
from printpipe.commitment.statement import (
    LOTTERY,
    PRODUCER,
    commitment_from_summary,
    load_commitment,
    signature_problem,
    statement_difference,
)
from printpipe.commitment.tree import store_root
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game


def check_store_commitment(
    store: BlockStore,
    game: Game,
    commitment_path: Path,
    producer_key: Ed25519PublicKey | None,
    lottery_key: Ed25519PublicKey | None,
) -> tuple[bool, str]:
    """Whether the commitment holds for the store, and a line saying why (for the audit)."""
    try:
        stated = load_commitment(commitment_path)
        expected = commitment_from_summary(store.summary)
        root = store_root(store, game.definition)
    except PrintpipeError as exc:
        return False, str(exc)
    if root != expected.root:
        return False, "the store's tickets do not give the root recorded in summary.json"
    difference = statement_difference(expected, stated)
    if difference:
        return False, f"{commitment_path.name} differs from the block: the block has {difference}"
    if producer_key is None:
        return False, "signatures not checked: give the producer's public key"
    problem = signature_problem(stated, PRODUCER, producer_key)
    if problem:
        return False, f"{commitment_path.name}: {problem}"
    signed = "signed by the producer"
    if LOTTERY in stated.signatures:
        if lottery_key is None:
            return False, f"{commitment_path.name}: countersigned, but no lottery key to check it"
        problem = signature_problem(stated, LOTTERY, lottery_key)
        if problem:
            return False, f"{commitment_path.name}: {problem}"
        signed += " and countersigned by the lottery"
    else:
        signed += ", not yet countersigned by the lottery"
    return True, (
        f"{commitment_path.name} states this block: {stated.tickets:,} tickets, every tier "
        f"count, root {root.hex()[:16]}... rebuilt from the tickets; {signed}"
    )
