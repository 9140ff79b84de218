"""The block plan's invariants, on the real game and on random small blocks."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from printpipe.block import generate_pack, longest_losing_runs, plan_block
from printpipe.errors import PrintpipeError
from printpipe.games.base import BlockRules, PrizeTier


def spread(counts):
    return counts.max(axis=0) - counts.min(axis=0)


def assert_plan_invariants(definition, plan):
    rules = definition.block
    amounts = definition.tier_amounts
    counts = plan.tier_counts
    assert counts.shape == (rules.packs, len(amounts))
    assert (counts.sum(axis=1) == rules.pack_size).all()
    assert (counts.sum(axis=0) == definition.tier_lots).all()
    pools = counts.reshape(rules.pools, rules.packs_per_pool, -1)
    assert (spread(pools.sum(axis=1)) <= 1).all(), "tier counts differ by > 1 across pools"
    for pool in pools:
        assert (spread(pool[:, 1:]) <= 1).all(), "tier counts differ by > 1 across packs"
        assert np.ptp(pool[:, 1:].sum(axis=1)) <= 1, "winners differ by > 1 across packs"
    high = amounts >= rules.high_tier_min_eur
    assert (counts[:, high].sum(axis=1) <= 1).all(), "two high lots in one pack"
    top = amounts >= rules.distinct_pools_min_eur
    assert (pools.sum(axis=1)[:, top].sum(axis=1) <= 1).all(), "two top lots in one pool"
    assert (plan.variant_counts.sum(axis=2) == counts).all()
    assert (spread(plan.variant_counts.sum(axis=0).T) <= 1).all(), "variants differ by > 1"
    # each pool is a press run of one variant, and the variants share the pools equally
    inked = plan.variant_counts.sum(axis=1) > 0  # (packs, variants)
    assert (inked.sum(axis=1) == 1).all(), "a pack of several variants"
    pools_of_packs = np.arange(rules.packs) // rules.packs_per_pool
    assert (inked.argmax(axis=1) == plan.pool_variants[pools_of_packs]).all()
    shares = np.bincount(plan.pool_variants, minlength=len(definition.variants))
    assert np.ptp(shares) == 0, "the variants do not share the pools equally"


def test_plan_of_the_real_block(game):
    plan = plan_block(game.definition, b"\x05" * 32)
    assert_plan_invariants(game.definition, plan)
    again = plan_block(game.definition, b"\x05" * 32)
    assert (again.tier_counts == plan.tier_counts).all()
    assert (again.variant_counts == plan.variant_counts).all()


@st.composite
def small_blocks(draw, definition):
    pools = draw(st.integers(1, 6))
    packs_per_pool = draw(st.integers(1, 25))
    pack_size = draw(st.integers(4, 60))
    size = pools * packs_per_pool * pack_size
    tiers = draw(st.integers(1, 6))
    amounts = draw(st.lists(st.integers(1, 20_000), min_size=tiers, max_size=tiers, unique=True))
    lots = [draw(st.integers(1, max(1, size // (3 * tiers)))) for _ in amounts]
    ordered = sorted(amounts)
    rules = BlockRules(
        size=size,
        pools=pools,
        pack_size=pack_size,
        max_losing_run=draw(st.integers(pack_size // 2, pack_size)),
        high_tier_min_eur=draw(st.sampled_from([*ordered, 30_000])),
        distinct_pools_min_eur=draw(st.sampled_from([ordered[-1], 30_000])),
        teaser_rate=0.0,
    )
    prizes = tuple(
        PrizeTier(i + 1, a, n) for i, (a, n) in enumerate(zip(amounts, lots, strict=True))
    )
    return replace(definition, block=rules, prizes=prizes)


@settings(max_examples=150, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data(), key=st.binary(min_size=32, max_size=32))
def test_plan_invariants_on_random_blocks(game, data, key):
    definition = data.draw(small_blocks(game.definition))
    try:
        plan = plan_block(definition, key)
    except PrintpipeError as exc:
        assert "cannot" in str(exc)
        assume(False)
    assert_plan_invariants(definition, plan)


@settings(max_examples=25, deadline=None)
@given(pack=st.integers(0, 11_999), key=st.binary(min_size=32, max_size=32))
def test_packs_keep_their_plan_and_the_losing_run_bound(game, pack, key):
    plan = plan_block(game.definition, key)
    tickets = generate_pack(game, plan, key, pack)
    assert np.bincount(tickets.tier, minlength=11).tolist() == plan.tier_counts[pack].tolist()
    assert longest_losing_runs(tickets.tier[None, :])[0] <= game.definition.block.max_losing_run
    result = game.evaluate(tickets.variant, tickets.symbols)
    assert (result.prize_eur == game.definition.tier_amounts[tickets.tier]).all()


def test_infeasible_top_lots_are_refused(game):
    definition = game.definition
    prizes = (PrizeTier(1, 9_000, 7), *definition.prizes[1:])
    with pytest.raises(PrintpipeError, match="cannot sit in 6 different pools"):
        plan_block(replace(definition, prizes=prizes), b"\x00" * 32)
