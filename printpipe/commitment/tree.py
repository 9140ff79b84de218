"""A block's tree from its tickets: the leaves in block order, and their levels.

Three parties build the same tree from their own copy of the tickets: the producer at
``generate`` (from the columns it has just made), the audit (from the store), and the lottery
(from the decrypted block manifest, before it countersigns, and again to reveal).  They all
go through :func:`block_leaf_hashes`, one batch of packs at a time, into a
``merkle.TreeBuilder``: none of them holds the block's leaf hashes (48 MB) to get its root.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from printpipe.block import BlockStore, PackRange
from printpipe.commitment.inclusion import TicketOpening
from printpipe.commitment.leaves import ticket_leaves
from printpipe.commitment.merkle import (
    HASH_SIZE,
    Digests,
    NodesSink,
    TreeBuilder,
    leaf_hashes,
    tree_levels,
)
from printpipe.errors import PrintpipeError
from printpipe.games.base import GameDefinition
from printpipe.ids import TicketId, printed_pack_number

BATCH_PACKS = 1000
LEAF_ROWS = 1 << 15
"""Leaves laid out and hashed at a time: their digit columns take a few MB, whatever the batch."""


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
    tier = np.asarray(tier, dtype=np.int64)
    if count and tier.max() >= len(definition.tier_amounts):
        raise PrintpipeError("a ticket's tier is not in the prize table")
    prizes = definition.tier_amounts[tier]
    has_virn = definition.records.has_virn
    hashes = np.empty((count, HASH_SIZE), dtype=np.uint8)
    for start in range(0, count, LEAF_ROWS):
        rows = slice(start, min(start + LEAF_ROWS, count))
        row = np.arange(rows.start, rows.stop, dtype=np.int64)
        pack_numbers = printed_pack_number(
            block=block, block_pack=first_pack + row // rules.pack_size, packs_per_block=rules.packs
        )
        leaves = ticket_leaves(
            definition.number,
            pack_numbers,
            row % rules.pack_size,
            prizes[rows],
            np.asarray(virn[rows]) if has_virn else None,
            salts[rows],
        )
        hashes[rows] = leaf_hashes(leaves)
    return hashes


def store_leaf_hash_batches(store: BlockStore, definition: GameDefinition) -> Iterator[Digests]:
    """The leaf hashes of a block store's tickets, rebuilt from its columns and salts, a batch
    of packs at a time, in block order."""
    stored = store.pack_range
    for first in range(stored.first, stored.last + 1, BATCH_PACKS):
        batch = PackRange(first, min(first + BATCH_PACKS - 1, stored.last))
        tickets = store.read(batch)
        yield block_leaf_hashes(
            definition,
            store.block,
            first,
            np.asarray(tickets.tier),
            np.asarray(tickets.virn),
            np.asarray(store.read_salts(batch)),
        )


def store_levels(store: BlockStore, definition: GameDefinition) -> list[Digests]:
    """The tree of a block store's tickets, every level (2n - 1 hashes: what a proof's
    siblings come from), rebuilt from its columns."""
    return tree_levels(np.concatenate(list(store_leaf_hash_batches(store, definition))))


def store_root(
    store: BlockStore, definition: GameDefinition, *, on_nodes: NodesSink | None = None
) -> bytes:
    """The root of the tree of a block store's tickets, rebuilt from its columns a batch at a
    time; ``on_nodes`` gets every node as it is final (``merkle.TreeBuilder``)."""
    builder = TreeBuilder(on_nodes=on_nodes)
    for hashes in store_leaf_hash_batches(store, definition):
        builder.add(hashes)
    return builder.root()


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
