"""The generate stage: secrets + game + block number -> a signed block store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pyrage import x25519

from printpipe import __version__
from printpipe.block import PackRange, generate_packs, longest_losing_runs
from printpipe.games.base import Game
from printpipe.keys import BlockSecrets
from printpipe.manifest import write_block_manifest
from printpipe.plan import plan_block
from printpipe.progress import progress_bar
from printpipe.rng import commitment, derive_block_key
from printpipe.store import FORMAT, StoreWriter


def generate_block(
    game: Game,
    secrets: BlockSecrets,
    signing_key: Ed25519PrivateKey,
    block: int,
    out: Path,
    packs: PackRange | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
    manifest_recipient: x25519.Recipient | None = None,
) -> dict[str, Any]:
    """Generate packs of one block (all by default) into a store at ``out``; its summary.

    With ``manifest_recipient``, the block-level manifest (``manifest.ppm``) is written into
    the store folder before it is renamed into place: a finished store always has it.
    """
    definition = game.definition
    rules = definition.block
    packs = packs or PackRange(1, rules.packs)
    packs.check_within(rules.packs)
    block_key = derive_block_key(secrets.producer, secrets.lottery, definition.number, block)
    plan = plan_block(definition, block_key)

    tiers = len(definition.prizes) + 1
    tier_counts = np.zeros(tiers, dtype=np.int64)
    variant_counts = np.zeros((tiers, len(definition.variants)), dtype=np.int64)
    longest_run = 0
    writer = StoreWriter(out, packs.count * rules.pack_size, definition.symbol_width, overwrite)
    try:
        with progress_bar(
            packs.count * rules.pack_size, "generate", "tickets", show_progress
        ) as bar:
            for batch in generate_packs(game, plan, block_key, packs.first - 1, packs.last - 1):
                writer.append(batch)
                tier_counts += np.bincount(batch.tier, minlength=tiers)
                np.add.at(variant_counts, (batch.tier, batch.variant), 1)
                runs = longest_losing_runs(batch.tier.reshape(-1, rules.pack_size))
                longest_run = max(longest_run, int(runs.max()))
                bar.update(len(batch))
        summary = _summary(game, secrets, block, packs, tier_counts, variant_counts, longest_run)
        before_rename = None
        if manifest_recipient is not None:
            recipient = manifest_recipient

            def before_rename(folder: Path) -> None:
                write_block_manifest(folder, game, recipient, signing_key)

        writer.commit(summary, signing_key, before_rename)
    except BaseException:
        writer.abort()
        raise
    return summary


def _summary(
    game: Game,
    secrets: BlockSecrets,
    block: int,
    packs: PackRange,
    tier_counts: np.ndarray,
    variant_counts: np.ndarray,
    longest_run: int,
) -> dict[str, Any]:
    definition = game.definition
    rules = definition.block
    amounts = definition.tier_amounts
    table_lots = definition.tier_lots
    first_number = (block - 1) * rules.packs + packs.first
    return {
        "format": FORMAT,
        "printpipe_version": __version__,
        "game": {
            "id": definition.id,
            "title": definition.title,
            "number": f"{definition.number:04d}",
            "price_eur": f"{definition.price_cents / 100:.2f}",
            "definition_sha256": definition.source_sha256,
            "variants": list(definition.variants),
            "symbol_codes": list(definition.symbol_codes),
            "fields": [{"name": f.name, "width": f.width} for f in definition.fields],
        },
        "block": block,
        "packs": {
            "first": packs.first,
            "last": packs.last,
            "first_pack_number": first_number,
            "last_pack_number": first_number + packs.count - 1,
            "whole_block": packs.count == rules.packs,
        },
        "tickets": int(tier_counts.sum()),
        "parameters": {
            "block_size": rules.size,
            "pools": rules.pools,
            "pool_size": rules.pool_size,
            "pack_size": rules.pack_size,
            "packs_per_pool": rules.packs_per_pool,
            "max_losing_run": rules.max_losing_run,
            "high_tier_min_eur": rules.high_tier_min_eur,
            "distinct_pools_min_eur": rules.distinct_pools_min_eur,
            "teaser_rate": rules.teaser_rate,
        },
        "tiers": [
            {
                "tier": tier,
                "amount_eur": int(amounts[tier]),
                "lots_per_block": int(table_lots[tier]),
                "tickets": int(tier_counts[tier]),
                "by_variant": dict(
                    zip(definition.variants, map(int, variant_counts[tier]), strict=True)
                ),
            }
            for tier in range(len(amounts))
        ],
        "totals": {
            "winning_tickets": int(tier_counts[1:].sum()),
            "losing_tickets": int(tier_counts[0]),
            "prize_eur": int((tier_counts * amounts).sum()),
        },
        "longest_losing_run": longest_run,
        "commitments": {
            "producer_secret_sha256": commitment(secrets.producer),
            "lottery_secret_sha256": commitment(secrets.lottery),
        },
        "generator": {
            "block_key": "HKDF-SHA256(producer secret || lottery secret, game, block)",
            "streams": "ChaCha20 keystream per (purpose, pool or pack)",
            "virn": "10-round Feistel permutation over AES-256 of the ticket's place in the block",
        },
    }
