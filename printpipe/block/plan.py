"""The block plan: how many tickets of each tier (and each variant) every pack holds.

The plan is drawn once per block from its key and is cheap (a few arrays of 12,000 packs),
so generating any pack range starts from the same plan as the whole block.  It enforces:

- each tier split across pools as evenly as possible (counts differ by at most 1);
- the top lots (``distinct_pools_min_eur`` and above) each in a different pool;
- within a pool, each tier's count per pack differs by at most 1, and so does each pack's
  total of winners;
- high tiers (``high_tier_min_eur`` and above): at most one such lot per pack;
- within every tier, the variants differ by at most 1 over the block;
- every pool is one press run of one variant (its effigy): the static plates of a run never
  change, so the variant cannot change from ticket to ticket (docs/print-files.md).

All of it comes from one cyclic fill: lay the lots, top tiers first, along a random
permutation of pools (then of packs), one at a time, carrying the cursor from tier to tier.
The variants take turns along that same permutation of pools (from a random first one): the
extra lots of every tier fall on consecutive places of the permutation, so each variant gets
the same share of every tier, give or take 1, as when the variant was drawn per ticket.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from printpipe.errors import PrintpipeError
from printpipe.games.base import LOSING_TIER, GameDefinition
from printpipe.rng import KeyStream, Purpose


@dataclass(frozen=True)
class BlockPlan:
    """Tickets of each tier per pack, and of each variant within that."""

    tier_counts: np.ndarray
    """(packs, tiers): tier 0 is the losing tickets."""
    variant_counts: np.ndarray
    """(packs, tiers, variants): all of a pack's tickets in its pool's variant."""
    pool_variants: np.ndarray
    """(pools,): the variant of every ticket of each pool (one press run per pool)."""

    @property
    def packs(self) -> int:
        return self.tier_counts.shape[0]


def fill_order(definition: GameDefinition) -> list[int]:
    """Winning tiers, highest amount first: the order of the cyclic fill."""
    return [p.tier for p in sorted(definition.prizes, key=lambda p: -p.amount_eur)]


def plan_block(definition: GameDefinition, block_key: bytes) -> BlockPlan:
    """Draw the plan of one block; refuses parameters under which the rules cannot hold."""
    rules = definition.block
    tiers = len(definition.prizes) + 1
    lots = definition.tier_lots
    order = fill_order(definition)
    _check_feasible(definition)

    pool_counts = np.zeros((rules.pools, tiers), dtype=np.int64)
    pools = _cyclic_fill(pool_counts, lots, order, KeyStream(block_key, Purpose.POOLS, 0))

    tier_counts = np.zeros((rules.packs, tiers), dtype=np.int64)
    per_pool = rules.packs_per_pool
    for pool in range(rules.pools):
        rows = tier_counts[pool * per_pool : (pool + 1) * per_pool]
        _cyclic_fill(
            rows, pool_counts[pool], order, KeyStream(block_key, Purpose.PACKS_OF_POOL, pool)
        )
    tier_counts[:, LOSING_TIER] = rules.pack_size - tier_counts.sum(axis=1)
    if (tier_counts[:, LOSING_TIER] < 0).any():
        raise PrintpipeError("more winners than tickets in a pack: the prize table cannot fit")
    losers, winners = tier_counts[:, LOSING_TIER], rules.pack_size - tier_counts[:, LOSING_TIER]
    if (losers > (winners + 1) * rules.max_losing_run).any():
        raise PrintpipeError(
            f"block.max_losing_run {rules.max_losing_run} cannot hold: too few winners per pack"
        )
    pool_variants = _pool_variants(pools, len(definition.variants), block_key)
    variants = np.zeros((rules.packs, tiers, len(definition.variants)), dtype=np.int64)
    pack_variants = np.repeat(pool_variants, per_pool)
    variants[np.arange(rules.packs), :, pack_variants] = tier_counts
    return BlockPlan(tier_counts, variants, pool_variants)


def _cyclic_fill(
    counts: np.ndarray, totals: np.ndarray, order: list[int], stream: KeyStream
) -> np.ndarray:
    """Spread each tier's total over the rows: base share each, remainder along one
    permutation, which is returned."""
    rows = counts.shape[0]
    permutation = stream.permutation(rows)
    cursor = 0
    for tier in order:
        base, remainder = divmod(int(totals[tier]), rows)
        counts[:, tier] = base
        counts[permutation[(cursor + np.arange(remainder)) % rows], tier] += 1
        cursor += remainder
    return permutation


def _pool_variants(permutation: np.ndarray, variants: int, block_key: bytes) -> np.ndarray:
    """Each pool's variant: the variants in turn along the fill's permutation of pools, from a
    random first one (so no variant is bound to the first place, where the top lot falls)."""
    first = int(KeyStream(block_key, Purpose.VARIANTS, 0).below(variants, 1)[0])
    pool_variants = np.zeros(len(permutation), dtype=np.int64)
    pool_variants[permutation] = (first + np.arange(len(permutation))) % variants
    return pool_variants


def _check_feasible(definition: GameDefinition) -> None:
    rules = definition.block
    variants = len(definition.variants)
    if rules.pools % variants:
        raise PrintpipeError(
            f"{variants} variants cannot share {rules.pools} pools equally: each pool is a press "
            "run of one variant, so block.pools must be a multiple of the variants"
        )
    top = [p for p in definition.prizes if p.amount_eur >= rules.distinct_pools_min_eur]
    if sum(p.lots for p in top) > rules.pools:
        raise PrintpipeError(
            f"{sum(p.lots for p in top)} lots of {rules.distinct_pools_min_eur} EUR and above "
            f"cannot sit in {rules.pools} different pools"
        )
    high = sum(p.lots for p in definition.prizes if p.amount_eur >= rules.high_tier_min_eur)
    if -(-high // rules.pools) > rules.packs_per_pool:
        raise PrintpipeError(
            f"{high} lots of {rules.high_tier_min_eur} EUR and above cannot sit one per pack"
        )
