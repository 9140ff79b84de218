"""A block's tree from its tickets: the leaves in block order, and their levels.

Three parties build the same tree from their own copy of the tickets: the producer at
``generate`` (from the columns it has just made), the audit (from the store), and the lottery
(from the decrypted block manifest, before it countersigns, and again to reveal).  They all
go through :func:`block_leaf_hashes`, one batch of packs at a time.
"""

from __future__ import annotations

import numpy as np

from printpipe.block import PackRange
from printpipe.commitment.inclusion import TicketOpening
from printpipe.commitment.leaves import ticket_leaves
from printpipe.errors import PrintpipeError
from printpipe.games.base import GameDefinition
from printpipe.ids import TicketId, printed_pack_number
from printpipe.merkle import HASH_SIZE, Digests, leaf_hashes, tree_levels, tree_root
from printpipe.store import BlockStore

BATCH_PACKS = 1000


def block_leaf_hashes(
    definition: GameDefinition,
    block: int,
    first_pack: int,
    tier: np.ndarray,
    virn: np.ndarray,
    salts: np.ndarray,
) -> Digests:
    """Leaf hashes of consecutive whole packs of a block, from block pack ``first_pack``
    (1-based, block-relative): one per ticket, in block order."""
    rules = definition.block
    count = len(tier)
    row = np.arange(count, dtype=np.int64)
    pack_numbers = printed_pack_number(
        block=block, block_pack=first_pack + row // rules.pack_size, packs_per_block=rules.packs
    )
    tier = np.asarray(tier, dtype=np.int64)
    if count and tier.max() >= len(definition.tier_amounts):
        raise PrintpipeError("a ticket's tier is not in the prize table")
    prizes = definition.tier_amounts[tier]
    virns = np.asarray(virn) if definition.records.has_virn else None
    leaves = ticket_leaves(
        definition.number, pack_numbers, row % rules.pack_size, prizes, virns, salts
    )
    return leaf_hashes(leaves)


def store_leaf_hashes(store: BlockStore, definition: GameDefinition) -> Digests:
    """The leaf hash of every ticket of a block store, rebuilt from its columns and salts."""
    stored = store.pack_range
    hashes = np.empty((stored.count * store.pack_size, HASH_SIZE), dtype=np.uint8)
    for first in range(stored.first, stored.last + 1, BATCH_PACKS):
        batch = PackRange(first, min(first + BATCH_PACKS - 1, stored.last))
        tickets = store.read(batch)
        start = (first - stored.first) * store.pack_size
        hashes[start : start + len(tickets)] = block_leaf_hashes(
            definition,
            store.block,
            first,
            np.asarray(tickets.tier),
            np.asarray(tickets.virn),
            np.asarray(store.read_salts(batch)),
        )
    return hashes


def store_levels(store: BlockStore, definition: GameDefinition) -> list[Digests]:
    """The tree of a block store's tickets, every level, rebuilt from its columns."""
    return tree_levels(store_leaf_hashes(store, definition))


def store_root(store: BlockStore, definition: GameDefinition) -> bytes:
    """The root of the tree of a block store's tickets, rebuilt from its columns."""
    return tree_root(store_leaf_hashes(store, definition))


def store_opening(store: BlockStore, definition: GameDefinition, index: int) -> TicketOpening:
    """What a proof opens of the ticket at row ``index`` of a store: the producer's view (the
    lottery's ledger opens the same values from the manifest and the scanned code)."""
    packs = store.pack_range
    block_pack = packs.first + index // store.pack_size
    batch = PackRange(block_pack, block_pack)
    row = index % store.pack_size
    tickets = store.read(batch)
    virn = int(tickets.virn[row])
    return TicketOpening(
        serial=TicketId(definition.number, store.printed_pack(block_pack), row).serial,
        prize_eur=int(definition.tier_amounts[int(tickets.tier[row])]),
        virn=f"{virn:010d}" if definition.records.has_virn else None,
        salt=bytes(store.read_salts(batch)[row]),
    )
