"""The lottery's audit of a block manifest against the producer's commitment, and its
countersignature.

The lottery does not take the producer's word for the root: it decrypts the block manifest
(every record checked by the rules, as ``manifest export`` does), rebuilds every leaf from the
records and their salts, and countersigns only if the tree, the ticket count and every tier
count are the ones the producer signed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pyrage import x25519

from printpipe.atomic import write_atomic
from printpipe.commitment.leaves import leaf_fields, ticket_leaves
from printpipe.commitment.merkle import Digests, NodesSink, TreeBuilder, leaf_hashes
from printpipe.commitment.statement import (
    LOTTERY,
    Commitment,
    Tier,
    load_commitment,
    statement_difference,
    verify_commitment,
)
from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.handover import Manifest, ParsedRecords, RecordChecker, decrypt_manifest
from printpipe.progress import progress_bar


def _refuse(commitment: Commitment, problem: str) -> PrintpipeError:
    return PrintpipeError(f"commitment {commitment.name} refused: {problem}")


def check_manifest_covers(commitment: Commitment, manifest: Manifest, game: Game) -> None:
    """Refuse a manifest that is not of the commitment's block and packs."""
    header = manifest.header
    packs = header.get("packs", {})
    same = (
        header.get("game", {}).get("id") == commitment.game_id
        and game.definition.id == commitment.game_id
        and game.definition.source_sha256 == commitment.definition_sha256
        and header.get("block") == commitment.block
        and packs.get("first_pack_number") == commitment.first_pack_number
        and packs.get("last_pack_number") == commitment.last_pack_number
    )
    if not same:
        raise _refuse(
            commitment,
            f"manifest {manifest.path} is not of its game, definition, block and packs",
        )


def records_leaf_hashes(game: Game, parsed: ParsedRecords) -> Digests:
    """The leaf hashes of a batch of checked manifest records."""
    definition = game.definition
    virns = parsed.virn if definition.records.has_virn else None
    return leaf_hashes(
        ticket_leaves(
            definition.number,
            parsed.pack_number,
            parsed.ticket,
            parsed.prize_eur,
            virns,
            parsed.salts,
        )
    )


def manifest_commitment(
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    *,
    on_batch: Callable[[ParsedRecords], None] | None = None,
    on_nodes: NodesSink | None = None,
    show_progress: bool = False,
) -> Commitment:
    """Decrypt and check a block manifest, rebuild its block's tree from the records, and say
    what commitment they make.

    The tree is built batch by batch as the records are decrypted (``merkle.TreeBuilder``):
    memory is a batch, never the block.  ``on_batch`` sees each batch of checked records,
    ``on_nodes`` every node of the tree once final (for a store of its levels); as with
    ``decrypt_manifest``, the caller must discard what it got if this raises.
    """
    checker = RecordChecker(game, manifest)
    tree = TreeBuilder(on_nodes=on_nodes)
    records = int(manifest.header["records"])
    with progress_bar(records, "decrypt", "records", show_progress) as bar:

        def on_lines(lines: list[bytes]) -> None:
            parsed = checker.parse(lines)
            tree.add(records_leaf_hashes(game, parsed))
            if on_batch is not None:
                on_batch(parsed)
            bar.update(len(parsed.keys))

        decrypt_manifest(manifest, identity, on_lines)
        checker.finish()
    if not tree.size:
        raise PrintpipeError(f"manifest {manifest.path} holds no records")
    definition = game.definition
    header = manifest.header
    packs = header["packs"]
    return Commitment(
        game_id=definition.id,
        game_number=definition.number,
        definition_sha256=definition.source_sha256,
        block=int(header["block"]),
        first_pack_number=int(packs["first_pack_number"]),
        last_pack_number=int(packs["last_pack_number"]),
        pack_size=definition.block.pack_size,
        tickets=checker.seen,
        tiers=tuple(
            Tier(int(amount), int(count))
            for amount, count in zip(definition.tier_amounts, checker.tier_counts, strict=True)
        ),
        root=tree.root(),
        leaf_fields=tuple(leaf_fields(definition.records.has_virn)),
    )


def check_against_manifest(
    commitment: Commitment,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    show_progress: bool = False,
) -> Commitment:
    """Rebuild the tree from the manifest; refuse a commitment that states anything else."""
    check_manifest_covers(commitment, manifest, game)
    rebuilt = manifest_commitment(manifest, game, identity, show_progress=show_progress)
    difference = statement_difference(rebuilt, commitment)
    if difference:
        raise _refuse(commitment, f"the manifest's records give {difference}")
    return rebuilt


def countersign(
    *,
    commitment_path: Path,
    manifest: Manifest,
    game: Game,
    identity: x25519.Identity,
    producer_key: Ed25519PublicKey,
    lottery_signing_key: Ed25519PrivateKey,
    out: Path | None = None,
    show_progress: bool = False,
) -> Commitment:
    """The lottery's countersignature, after its own audit of the block manifest: written to
    ``out`` (default: the commitment file itself, replaced whole)."""
    commitment = load_commitment(commitment_path)
    verify_commitment(commitment, producer_key, None)
    check_against_manifest(commitment, manifest, game, identity, show_progress)
    signed = commitment.sign(LOTTERY, lottery_signing_key)
    write_atomic(out or commitment_path, signed.to_json())
    return signed
