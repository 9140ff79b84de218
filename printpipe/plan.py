"""The block plan: how many tickets of each tier (and each variant) every pack holds.

The plan is drawn once per block from its key and is cheap (a few arrays of 12,000 packs),
so generating any pack range starts from the same plan as the whole block.  It enforces:

- each tier split across pools as evenly as possible (counts differ by at most 1);
- the top lots (``distinct_pools_min_eur`` and above) each in a different pool;
- within a pool, each tier's count per pack differs by at most 1, and so does each pack's
  total of winners;
- high tiers (``high_tier_min_eur`` and above): at most one such lot per pack;
- within every tier, the variants differ by at most 1 over the block.

All of it comes from one cyclic fill: lay the lots, top tiers first, along a random
permutation of pools (then of packs), one at a time, carrying the cursor from tier to tier.
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
    """(packs, tiers, variants)."""

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
    _cyclic_fill(pool_counts, lots, order, KeyStream(block_key, Purpose.POOLS, 0))

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
    variants = _split_variants(tier_counts, len(definition.variants), block_key)
    return BlockPlan(tier_counts, variants)


def _cyclic_fill(
    counts: np.ndarray, totals: np.ndarray, order: list[int], stream: KeyStream
) -> None:
    """Spread each tier's total over the rows: base share each, remainder along one permutation."""
    rows = counts.shape[0]
    permutation = stream.permutation(rows)
    cursor = 0
    for tier in order:
        base, remainder = divmod(int(totals[tier]), rows)
        counts[:, tier] = base
        counts[permutation[(cursor + np.arange(remainder)) % rows], tier] += 1
        cursor += remainder


def _split_variants(tier_counts: np.ndarray, variants: int, block_key: bytes) -> np.ndarray:
    """Per pack and tier, tickets per variant; each tier's variant totals differ by at most 1."""
    stream = KeyStream(block_key, Purpose.VARIANTS, 0)
    packs, tiers = tier_counts.shape
    split = np.zeros((packs, tiers, variants), dtype=np.int64)
    for tier in range(tiers):
        base, remainder = np.divmod(tier_counts[:, tier], variants)
        split[:, tier, :] = base[:, None]
        order = stream.permutation(packs)
        start = int(stream.below(variants, 1)[0])
        extra = remainder[order]
        first = (start + np.cumsum(extra) - extra) % variants
        for i in range(variants - 1):
            has = extra > i
            split[order[has], tier, (first[has] + i) % variants] += 1
    return split


def _check_feasible(definition: GameDefinition) -> None:
    rules = definition.block
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
