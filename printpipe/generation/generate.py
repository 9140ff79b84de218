"""The generate stage: secrets + game + block number -> a signed block store."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pyrage import x25519

from printpipe.block import (
    SUMMARY,
    BlockPlan,
    BlockSummary,
    Commitments,
    PackRange,
    StoreWriter,
    SummaryTree,
    Tickets,
    build_summary,
    generate_packs,
    longest_losing_runs,
    plan_block,
)
from printpipe.commitment.leaves import LEAF_SCHEME, leaf_fields
from printpipe.commitment.merkle import TreeBuilder
from printpipe.commitment.statement import COMMITMENT_FILE, PRODUCER, commitment_from_summary
from printpipe.commitment.tree import block_leaf_hashes
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.generation.cluster import ChunkRunner, DaskRunner, run_in_order
from printpipe.handover import write_block_manifest
from printpipe.keys import (
    DEMO_KEYS_DIR,
    LOTTERY_RECIPIENT,
    BlockKey,
    BlockSecrets,
    ensure_demo_keys,
    load_lottery_recipient,
    load_secrets,
    load_signing_key,
)
from printpipe.progress import progress_bar
from printpipe.rng import derive_block_key, leaf_salts

GENERATE_CHUNK_PACKS = 1000
"""Packs per generate work unit: 125,000 tickets, 2.6 MB of columns, about 0.2 s of work."""


@dataclass(frozen=True)
class GenerateJob:
    """One chunk of a block to generate: the work unit sent to a Dask worker.

    It carries the game and the block's *derived* key only: a worker can compute these
    packs (and nothing of another block), never the producer's or the lottery's secret, and
    it never sees the signing key: it returns columns; the coordinator hashes and signs.
    """

    game: Game = field(repr=False)
    block: int
    first: int  # 0-based packs of the block, inclusive
    last: int
    key: BlockKey


def generate_chunk(job: GenerateJob) -> Tickets:
    """Packs ``first`` to ``last`` of a block, VIRNs included (the same bytes as in-process)."""
    plan = _plan(job.game, job.key)
    parts = list(generate_packs(job.game, plan, job.key.key, job.first, job.last))
    return parts[0] if len(parts) == 1 else Tickets.concatenate(parts)


_PLANS: dict[tuple[str, bytes], BlockPlan] = {}


def _plan(game: Game, key: BlockKey) -> BlockPlan:
    """The block's plan, kept for the next chunk of the same block (a 16 ms draw otherwise)."""
    cache_key = (game.definition.source_sha256, key.key)
    plan = _PLANS.get(cache_key)
    if plan is None:
        plan = plan_block(game.definition, key.key)
        _PLANS.clear()  # one block at a time: no other block's key stays in memory
        _PLANS[cache_key] = plan
    return plan


class InProcessRunner:
    """Runs each work unit at once in this process: the local engine of ``generate``.

    Generating is numpy-bound and fast (a block in seconds), so locally one process writes
    the store as before; only ``--scheduler`` changes the engine.
    """

    slots = 1

    def __init__(self) -> None:
        self._done: list[tuple[int, Any]] = []

    def submit(self, index: int, fn: Callable[[Any], Any], job: Any) -> None:
        self._done.append((index, fn(job)))

    def next_done(self) -> tuple[int, Any]:
        return self._done.pop(0)

    def close(self, abort: bool) -> None:
        self._done.clear()


def generate_block(
    game: Game,
    *,
    secrets: BlockSecrets,
    signing_key: Ed25519PrivateKey,
    block: int,
    out: Path,
    packs: PackRange | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
    manifest_recipient: x25519.Recipient | None = None,
) -> BlockSummary:
    """Generate packs of one block (all by default) into a store at ``out``; its summary.

    With ``manifest_recipient``, the block-level manifest (``manifest.ppm``) is written into
    the store folder before it is renamed into place: a finished store always has it.
    """
    return generate_blocks(
        game,
        secrets=secrets,
        signing_key=signing_key,
        outs={block: out},
        packs=packs,
        overwrite=overwrite,
        show_progress=show_progress,
        manifest_recipient=manifest_recipient,
    )[0]


def generate_blocks(
    game: Game,
    *,
    secrets: BlockSecrets,
    signing_key: Ed25519PrivateKey,
    outs: dict[int, Path],
    packs: PackRange | None = None,
    overwrite: bool = False,
    show_progress: bool = True,
    manifest_recipient: x25519.Recipient | None = None,
    scheduler: str | None = None,
    chunk_packs: int = GENERATE_CHUNK_PACKS,
) -> list[BlockSummary]:
    """Generate several blocks (block number -> store folder); their summaries, in order.

    The chunks of all blocks are one map, in block order, on this process or on a Dask
    cluster: the cluster stays busy across block boundaries, and each block is committed
    (hashed, signed, manifest written) here as soon as its last chunk has arrived.
    """
    rules = game.definition.block
    packs = packs or PackRange(1, rules.packs)
    packs.check_within(rules.packs)
    writers: dict[int, _BlockWriter] = {}
    summaries = []
    runner: ChunkRunner = InProcessRunner()
    try:
        for block, out in outs.items():
            writers[block] = _BlockWriter(game, secrets, block, out, packs, overwrite)
        if scheduler:
            runner = DaskRunner(scheduler, "generate")
        jobs = _jobs(game, secrets, list(outs), packs, chunk_packs)
        total = packs.count * rules.pack_size * len(outs)
        with progress_bar(total, "generate", "tickets", show_progress) as bar:
            for job, tickets in run_in_order(runner, generate_chunk, jobs):
                writer = writers[job.block]
                writer.append(tickets, job.first)
                bar.update(len(tickets))
                if job.last == packs.last - 1:
                    summaries.append(writer.commit(signing_key, manifest_recipient, show_progress))
    except BaseException:
        runner.close(abort=True)
        for writer in writers.values():
            writer.abort()
        raise
    runner.close(abort=False)
    return summaries


@dataclass(frozen=True)
class Emission:
    """What a generate command did: the blocks generated, in order, and those kept."""

    summaries: list[BlockSummary]
    kept: list[int]
    seconds: float


def generate_emission(
    game_id: str,
    *,
    keys_dir: Path,
    outs: dict[int, Path],
    packs: PackRange | None = None,
    definition: Path | None = None,
    keep_finished: bool = False,
    overwrite: bool = False,
    show_progress: bool = True,
    scheduler: str | None = None,
) -> Emission:
    """``printpipe generate`` and the main job's first step: the game (its built-in definition,
    or ``definition``), the keys of ``keys_dir`` (demo keys created in the demo folder), then
    the blocks of ``outs`` (block number -> store folder) with their block manifests. With
    ``keep_finished`` a block already finished from the same secrets and packs is kept."""
    from printpipe.games import load_game

    game = load_game(game_id, definition)
    if packs is not None:
        packs.check_within(game.definition.block.packs)
    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    secrets = load_secrets(keys_dir)
    signing_key = load_signing_key(keys_dir)
    recipient = load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT)
    kept = []
    if keep_finished and not overwrite:
        kept = [n for n, path in outs.items() if finished_block(path, secrets, packs)]
        outs = {n: path for n, path in outs.items() if n not in kept}
    started = time.perf_counter()
    summaries = (
        generate_blocks(
            game,
            secrets=secrets,
            signing_key=signing_key,
            outs=outs,
            packs=packs,
            overwrite=overwrite,
            show_progress=show_progress,
            manifest_recipient=recipient,
            scheduler=scheduler,
        )
        if outs
        else []
    )
    return Emission(summaries, kept, time.perf_counter() - started)


def finished_block(store_dir: Path, secrets: BlockSecrets, packs: PackRange | None) -> bool:
    """Whether a block of an emission is already done (a rerun keeps it): same secrets and
    packs; a store made from other inputs is refused rather than silently kept."""
    summary_path = store_dir / SUMMARY
    try:
        data = summary_path.read_bytes()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise PrintpipeError(f"{summary_path} is unreadable: {exc.strerror}") from None
    summary = BlockSummary.from_json(data, str(summary_path))
    same_keys = summary.commitments == Commitments.of(secrets)
    same_packs = packs is None or summary.packs.range == packs
    if not (same_keys and same_packs):
        raise PrintpipeError(
            f"{store_dir} holds a block store of other secrets or packs: remove it, or replace "
            "it with printpipe generate --force"
        )
    return True


def _jobs(
    game: Game, secrets: BlockSecrets, blocks: list[int], packs: PackRange, chunk_packs: int
) -> Iterator[GenerateJob]:
    """The work units of all blocks, in block order; each block key derived here, once."""
    for block in blocks:
        key = BlockKey(
            derive_block_key(secrets.producer, secrets.lottery, game.definition.number, block)
        )
        for first in range(packs.first - 1, packs.last, chunk_packs):
            yield GenerateJob(game, block, first, min(first + chunk_packs, packs.last) - 1, key)


class _BlockWriter:
    """One block's store being written: columns in block order, counts and the tree of its
    leaves as they arrive (a batch at a time: no level of it is held), then the commit (the
    tree's root into the signed summary, and the producer-signed commitment.json beside it)."""

    def __init__(
        self,
        game: Game,
        secrets: BlockSecrets,
        block: int,
        out: Path,
        packs: PackRange,
        overwrite: bool,
    ) -> None:
        definition = game.definition
        self.game, self.secrets, self.block, self.packs = game, secrets, block, packs
        self.pack_size = definition.block.pack_size
        tiers = len(definition.prizes) + 1
        self.tier_counts = np.zeros(tiers, dtype=np.int64)
        self.variant_counts = np.zeros((tiers, len(definition.variants)), dtype=np.int64)
        self.longest_run = 0
        self.block_key = derive_block_key(
            secrets.producer, secrets.lottery, definition.number, block
        )
        tickets = packs.count * self.pack_size
        self.tree = TreeBuilder()
        self.store = StoreWriter(out, tickets, definition.symbol_width, overwrite)

    def append(self, batch: Tickets, first_pack: int) -> None:
        """The next tickets in block order: whole packs from ``first_pack`` (0-based)."""
        last_pack = first_pack + len(batch) // self.pack_size - 1
        salts = leaf_salts(self.block_key, first_pack, last_pack, self.pack_size)
        self.tree.add(
            block_leaf_hashes(
                self.game.definition, self.block, first_pack + 1, batch.tier, batch.virn, salts
            )
        )
        self.store.append(batch, salts)
        tiers = len(self.tier_counts)
        self.tier_counts += np.bincount(batch.tier, minlength=tiers)
        np.add.at(self.variant_counts, (batch.tier, batch.variant), 1)
        runs = longest_losing_runs(batch.tier.reshape(-1, self.pack_size))
        self.longest_run = max(self.longest_run, int(runs.max()))

    def commit(
        self,
        signing_key: Ed25519PrivateKey,
        recipient: x25519.Recipient | None,
        show_progress: bool = False,
    ) -> BlockSummary:
        """Sign the summary and rename the store into place (with its manifest, if asked)."""
        root = self.tree.root()
        summary = build_summary(
            self.game.definition,
            secrets=self.secrets,
            block=self.block,
            packs=self.packs,
            tier_counts=self.tier_counts,
            variant_counts=self.variant_counts,
            longest_run=self.longest_run,
            tree=SummaryTree(
                root=root.hex(),
                leaf_scheme=LEAF_SCHEME,
                leaf_fields=leaf_fields(self.game.definition.records.has_virn),
            ),
        )
        game = self.game

        def before_rename(folder: Path) -> None:
            signed = commitment_from_summary(summary).sign(PRODUCER, signing_key)
            (folder / COMMITMENT_FILE).write_bytes(signed.to_json())
            if recipient is not None:
                write_block_manifest(folder, game, recipient, signing_key, show_progress)

        self.store.commit(summary, signing_key, before_rename)
        self.committed = True
        return summary

    def abort(self) -> None:
        if not getattr(self, "committed", False):
            self.store.abort()
