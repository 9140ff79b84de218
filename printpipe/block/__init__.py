"""The block: what a block of tickets is, drawn from its key, and the store that holds it.

The second stage of the pipeline (game -> block -> press files and proofs -> manifest ->
ledger -> services): pure functions of a game and a block key, and the files they fill.

- ``plan.py``: how many tickets of each tier and effigy every pack holds (:func:`plan_block`);
- ``tickets.py``: a pack's tickets from the plan and the pack's keystream (:class:`Tickets`
  as numpy columns, :func:`generate_packs`), and :class:`PackRange`;
- ``store.py``: the block store, a folder of columns read by pack range (:class:`BlockStore`,
  written by :class:`StoreWriter`);
- ``summary.py``: the signed block summary's schema (:class:`BlockSummary`).

The run that fills a store (chunks on a cluster, the commitment, the block manifest) and the
audit that re-checks one are the generation's (``printpipe.generation``): this wing imports
nothing above the games.  Names are imported on first use, so that naming a
:class:`PackRange` does not load numpy's columns nor the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe import load_on_first_use

if TYPE_CHECKING:
    from printpipe.block.plan import BlockPlan, plan_block
    from printpipe.block.store import SIGNATURE, SUMMARY, BlockStore, StoreWriter
    from printpipe.block.summary import BlockSummary, Commitments, SummaryTree, build_summary
    from printpipe.block.tickets import (
        PackRange,
        Tickets,
        generate_pack,
        generate_packs,
        longest_losing_runs,
    )

_HOMES = {
    "BlockPlan": "plan",
    "plan_block": "plan",
    "SIGNATURE": "store",
    "SUMMARY": "store",
    "BlockStore": "store",
    "StoreWriter": "store",
    "BlockSummary": "summary",
    "Commitments": "summary",
    "SummaryTree": "summary",
    "build_summary": "summary",
    "PackRange": "tickets",
    "Tickets": "tickets",
    "generate_pack": "tickets",
    "generate_packs": "tickets",
    "longest_losing_runs": "tickets",
}

__all__ = [
    "SIGNATURE",
    "SUMMARY",
    "BlockPlan",
    "BlockStore",
    "BlockSummary",
    "Commitments",
    "PackRange",
    "StoreWriter",
    "SummaryTree",
    "Tickets",
    "build_summary",
    "generate_pack",
    "generate_packs",
    "longest_losing_runs",
    "plan_block",
]

__getattr__ = load_on_first_use(__name__, _HOMES)
