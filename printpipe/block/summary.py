"""The block summary (``summary.json``): its schema, built and read here and nowhere else.

A block store's summary is the signed, human-readable account of a block: which game and
definition, which packs, how many tickets of each tier, the commitments to both secrets, the
root of the tree of its tickets (``printpipe.commitment``) and the SHA-256 of every column
file (``docs/block-store.md``).  ``generate`` builds one with
:func:`build_summary`, the store writes it with :meth:`BlockSummary.to_json` and reads it back
with :meth:`BlockSummary.from_json`; every other module reads typed attributes, never keys.
The JSON keeps the same keys in the same order, so the same block gives the same bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from printpipe import __version__
from printpipe.block.tickets import PackRange
from printpipe.errors import PrintpipeError
from printpipe.games.base import GameDefinition
from printpipe.ids import printed_pack_number
from printpipe.keys import BlockSecrets
from printpipe.rng import commitment

FORMAT = "printpipe-block/2"
EARLIER_FORMATS = ("printpipe-block/1",)

GENERATOR = {
    "block_key": "HKDF-SHA256(producer secret || lottery secret, game, block)",
    "streams": "ChaCha20 keystream per (purpose, pool or pack)",
    "virn": "10-round Feistel permutation over AES-256 of the ticket's place in the block",
    "leaf_salts": "ChaCha20 keystream per pack under HKDF-SHA256(block key, 'leaf salts')",
}


@dataclass(frozen=True)
class SummaryGame:
    """The game a block was generated from, and the definition's SHA-256."""

    id: str
    title: str
    number: str  # 4 digits, as printed
    price_eur: str  # "2.00"
    definition_sha256: str
    variants: list[str]
    symbol_codes: list[str]
    fields: list[dict[str, Any]]  # name, width


@dataclass(frozen=True)
class SummaryPacks:
    """The store's packs, block-relative and as printed on the tickets."""

    first: int
    last: int
    first_pack_number: int
    last_pack_number: int
    whole_block: bool

    @property
    def range(self) -> PackRange:
        return PackRange(self.first, self.last)


@dataclass(frozen=True)
class SummaryParameters:
    block_size: int
    pools: int
    pool_size: int
    pack_size: int
    packs_per_pool: int
    max_losing_run: int
    high_tier_min_eur: int
    distinct_pools_min_eur: int
    teaser_rate: float

    @property
    def packs_per_block(self) -> int:
        return self.block_size // self.pack_size


@dataclass(frozen=True)
class SummaryTier:
    tier: int  # 0 = losing
    amount_eur: int
    lots_per_block: int
    tickets: int
    by_variant: dict[str, int]


@dataclass(frozen=True)
class SummaryTotals:
    winning_tickets: int
    losing_tickets: int
    prize_eur: int


@dataclass(frozen=True)
class Commitments:
    """SHA-256 of each secret: published, so that a block can be tied to its two secrets."""

    producer_secret_sha256: str
    lottery_secret_sha256: str

    @staticmethod
    def of(secrets: BlockSecrets) -> Commitments:
        return Commitments(commitment(secrets.producer), commitment(secrets.lottery))


@dataclass(frozen=True)
class SummaryTree:
    """The root of the RFC 9162 tree over the block's tickets, and how its leaves are made:
    what the block's public commitment states (``printpipe.commitment``)."""

    root: str  # 64 hex digits
    leaf_scheme: str
    leaf_fields: list[str]


@dataclass(frozen=True)
class ColumnFile:
    sha256: str
    dtype: str


@dataclass(frozen=True)
class BlockSummary:
    """A block store's ``summary.json``, typed."""

    printpipe_version: str
    game: SummaryGame
    block: int
    packs: SummaryPacks
    tickets: int
    parameters: SummaryParameters
    tiers: list[SummaryTier]
    totals: SummaryTotals
    longest_losing_run: int
    commitments: Commitments
    tree: SummaryTree
    generator: dict[str, str] = field(default_factory=lambda: dict(GENERATOR))
    files: dict[str, ColumnFile] = field(default_factory=dict)

    def with_files(self, files: dict[str, ColumnFile]) -> BlockSummary:
        return replace(self, files=files)

    def to_dict(self) -> dict[str, Any]:
        def plain(obj: Any) -> dict[str, Any]:
            return dict(obj.__dict__)

        return {
            "format": FORMAT,
            "printpipe_version": self.printpipe_version,
            "game": plain(self.game),
            "block": self.block,
            "packs": plain(self.packs),
            "tickets": self.tickets,
            "parameters": plain(self.parameters),
            "tiers": [plain(t) for t in self.tiers],
            "totals": plain(self.totals),
            "longest_losing_run": self.longest_losing_run,
            "commitments": plain(self.commitments),
            "tree": plain(self.tree),
            "generator": dict(self.generator),
            "files": {name: plain(meta) for name, meta in self.files.items()},
        }

    def to_json(self) -> bytes:
        """The exact bytes of ``summary.json`` (what the producer signs)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False).encode() + b"\n"

    @staticmethod
    def from_json(data: bytes, where: str) -> BlockSummary:
        """Parse ``summary.json``; a missing or mistyped field is one error line naming it."""
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise PrintpipeError(f"{where} is unreadable: {exc}") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            earlier = isinstance(raw, dict) and raw.get("format") in EARLIER_FORMATS
            raise PrintpipeError(
                f"{where} is not a {FORMAT} summary"
                + (" (made by an earlier printpipe: generate the block again)" if earlier else "")
            )
        try:
            return BlockSummary(
                printpipe_version=str(raw["printpipe_version"]),
                game=SummaryGame(**raw["game"]),
                block=int(raw["block"]),
                packs=SummaryPacks(**raw["packs"]),
                tickets=int(raw["tickets"]),
                parameters=SummaryParameters(**raw["parameters"]),
                tiers=[SummaryTier(**t) for t in raw["tiers"]],
                totals=SummaryTotals(**raw["totals"]),
                longest_losing_run=int(raw["longest_losing_run"]),
                commitments=Commitments(**raw["commitments"]),
                tree=SummaryTree(**raw["tree"]),
                generator=dict(raw["generator"]),
                files={name: ColumnFile(**meta) for name, meta in raw["files"].items()},
            )
        except KeyError as exc:
            raise PrintpipeError(f"{where} lacks the field {exc.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise PrintpipeError(f"{where} is not a valid {FORMAT} summary: {exc}") from None


def build_summary(
    definition: GameDefinition,
    *,
    secrets: BlockSecrets,
    block: int,
    packs: PackRange,
    tier_counts: np.ndarray,
    variant_counts: np.ndarray,
    longest_run: int,
    tree: SummaryTree,
) -> BlockSummary:
    """The summary of a generated block (its ``files`` are added when the store commits)."""
    rules = definition.block
    amounts = definition.tier_amounts
    table_lots = definition.tier_lots
    first_number = printed_pack_number(
        block=block, block_pack=packs.first, packs_per_block=rules.packs
    )
    return BlockSummary(
        printpipe_version=__version__,
        game=SummaryGame(
            id=definition.id,
            title=definition.title,
            number=f"{definition.number:04d}",
            price_eur=f"{definition.price_cents / 100:.2f}",
            definition_sha256=definition.source_sha256,
            variants=list(definition.variants),
            symbol_codes=list(definition.symbol_codes),
            fields=[{"name": f.name, "width": f.width} for f in definition.fields],
        ),
        block=block,
        packs=SummaryPacks(
            first=packs.first,
            last=packs.last,
            first_pack_number=first_number,
            last_pack_number=first_number + packs.count - 1,
            whole_block=packs.count == rules.packs,
        ),
        tickets=int(tier_counts.sum()),
        parameters=SummaryParameters(
            block_size=rules.size,
            pools=rules.pools,
            pool_size=rules.pool_size,
            pack_size=rules.pack_size,
            packs_per_pool=rules.packs_per_pool,
            max_losing_run=rules.max_losing_run,
            high_tier_min_eur=rules.high_tier_min_eur,
            distinct_pools_min_eur=rules.distinct_pools_min_eur,
            teaser_rate=rules.teaser_rate,
        ),
        tiers=[
            SummaryTier(
                tier=tier,
                amount_eur=int(amounts[tier]),
                lots_per_block=int(table_lots[tier]),
                tickets=int(tier_counts[tier]),
                by_variant=dict(
                    zip(definition.variants, map(int, variant_counts[tier]), strict=True)
                ),
            )
            for tier in range(len(amounts))
        ],
        totals=SummaryTotals(
            winning_tickets=int(tier_counts[1:].sum()),
            losing_tickets=int(tier_counts[0]),
            prize_eur=int((tier_counts * amounts).sum()),
        ),
        longest_losing_run=longest_run,
        commitments=Commitments.of(secrets),
        tree=tree,
    )
