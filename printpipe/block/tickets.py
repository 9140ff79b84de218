"""Generating a block's tickets, pack by pack, from its plan and its key.

A pack reads only its own keystream, so ``generate_packs`` over any range gives the same
bytes as the same packs of the whole block.  Tickets are plain columns (numpy arrays),
passed on to the block store, the audit and the export.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from printpipe.block.plan import BlockPlan
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.games.base import LOSING_TIER, Game
from printpipe.rng import KeyStream, Purpose, virns

MAX_SHUFFLES = 10_000


@dataclass(frozen=True)
class Tickets:
    """Consecutive tickets of a block, as columns; row ``i`` is one ticket."""

    tier: np.ndarray  # uint8, 0 = losing
    variant: np.ndarray  # uint8, the ticket's variant (its look)
    symbols: np.ndarray  # uint8 (n, symbol_width), indices into the game's symbol codes
    virn: np.ndarray  # uint64, 10 digits

    def __len__(self) -> int:
        return len(self.tier)

    def __getitem__(self, rows: slice | np.ndarray) -> Tickets:
        return Tickets(self.tier[rows], self.variant[rows], self.symbols[rows], self.virn[rows])

    @staticmethod
    def concatenate(parts: list[Tickets]) -> Tickets:
        return Tickets(*(np.concatenate([getattr(p, f) for p in parts]) for f in Tickets.COLUMNS))

    COLUMNS = ("tier", "variant", "symbols", "virn")


@dataclass(frozen=True, slots=True)
class PackRange:
    """Packs ``first`` to ``last`` of a block, 1-based and inclusive (as on the command line)."""

    first: int
    last: int

    @property
    def count(self) -> int:
        return self.last - self.first + 1

    def __str__(self) -> str:
        return f"{self.first}:{self.last}"

    @staticmethod
    def parse(text: str, packs_in_block: int | None = None) -> PackRange:
        """``FIRST:LAST``; within the block when its pack count is given."""
        first_text, sep, last_text = text.partition(":")
        if not sep or not first_text.strip().isdigit() or not last_text.strip().isdigit():
            raise PrintpipeError(f"pack range {text!r} must be FIRST:LAST, e.g. 1:40")
        pack_range = PackRange(int(first_text), int(last_text))
        if pack_range.first < 1 or pack_range.last < pack_range.first:
            raise PrintpipeError(
                f"pack range {text!r} is outside the block (packs from 1, FIRST <= LAST)"
            )
        if packs_in_block is not None:
            pack_range.check_within(packs_in_block)
        return pack_range

    def check_within(self, packs_in_block: int) -> None:
        """A range outside the block is a mistyped command line, as ``8:1`` is: exit 2."""
        if not 1 <= self.first <= self.last <= packs_in_block:
            raise InvalidInput(
                f"pack range {self} is outside the block (packs 1 to {packs_in_block})"
            )


def longest_losing_runs(tiers: np.ndarray) -> np.ndarray:
    """For each row of a (packs, pack_size) tier array, its longest run of losing tickets."""
    losing = tiers == LOSING_TIER
    position = np.arange(tiers.shape[1])
    last_winner = np.maximum.accumulate(np.where(losing, -1, position), axis=1)
    return np.where(losing, position - last_winner, 0).max(axis=1)


def generate_pack(game: Game, plan: BlockPlan, block_key: bytes, pack_index: int) -> Tickets:
    """One pack (0-based within the block): tiers in a random order with bounded losing runs."""
    definition = game.definition
    variants = len(definition.variants)
    counts = plan.variant_counts[pack_index].ravel()
    kinds = np.repeat(np.arange(len(counts)), counts)
    tiers, variant = kinds // variants, kinds % variants
    stream = KeyStream(block_key, Purpose.PACK, pack_index)
    for _ in range(MAX_SHUFFLES):
        order = stream.permutation(len(kinds))
        if longest_losing_runs(tiers[order][None, :])[0] <= definition.block.max_losing_run:
            break
    else:  # pragma: no cover - the plan has checked the bound can hold
        raise PrintpipeError(f"pack {pack_index + 1}: no order found within the losing-run bound")
    tiers, variant = tiers[order].astype(np.uint8), variant[order].astype(np.uint8)
    symbols = game.layout(tiers.astype(np.int64), variant.astype(np.int64), stream)
    return Tickets(tiers, variant, symbols, np.zeros(len(tiers), dtype=np.uint64))


def generate_packs(
    game: Game, plan: BlockPlan, block_key: bytes, first: int, last: int, batch_packs: int = 200
) -> Iterator[Tickets]:
    """Packs ``first`` to ``last`` (0-based, inclusive) in batches, VIRNs included."""
    pack_size = game.definition.block.pack_size
    for start in range(first, last + 1, batch_packs):
        stop = min(start + batch_packs, last + 1)
        batch = Tickets.concatenate(
            [generate_pack(game, plan, block_key, p) for p in range(start, stop)]
        )
        places = np.arange(start * pack_size, stop * pack_size, dtype=np.uint64)
        yield Tickets(batch.tier, batch.variant, batch.symbols, virns(block_key, places))
