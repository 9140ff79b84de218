"""A block's public commitment: the lottery's countersignature, the reveal of a closed block,
and the checks anyone can run offline with the two public keys (``verify-proof``,
``verify-remaining``, ``commitment recount``)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from printpipe.cli._common import (
    identity_option,
    keys_option,
    lottery_identity,
    lottery_key_option,
    manifest_game,
    producer_key_option,
    public_key,
    quiet_option,
    verified_manifest,
)
from printpipe.keys import LOTTERY_SIGNING_KEY, LOTTERY_SIGNING_PUB, PRODUCER_SIGNING_PUB

FileArgument = click.Path(path_type=Path, dir_okay=False)

manifest_option = click.option(
    "--manifest",
    "manifest_path",
    type=FileArgument,
    required=True,
    help="The block manifest (BLOCK_DIR/manifest.ppm): the lottery rebuilds the tree from it.",
)


@click.group()
def commitment() -> None:
    """A block's public commitment: check it, countersign it, reveal a closed block, recount."""


@commitment.command("verify")
@click.argument("commitment_path", metavar="COMMITMENT", type=FileArgument)
@producer_key_option
@lottery_key_option
@keys_option
def commitment_verify(
    commitment_path: Path, producer_key: Path | None, lottery_key: Path | None, keys_dir: Path
) -> None:
    """Anyone: check COMMITMENT's two signatures and print what it states."""
    from printpipe.commitment.statement import describe, verified_commitment

    click.echo(
        describe(
            verified_commitment(
                path=commitment_path,
                producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
                lottery_key=public_key(lottery_key, keys_dir, LOTTERY_SIGNING_PUB),
            )
        )
    )


@commitment.command("sign")
@click.argument("commitment_path", metavar="COMMITMENT", type=FileArgument)
@manifest_option
@identity_option
@producer_key_option
@keys_option
@click.option(
    "--out",
    type=FileArgument,
    default=None,
    help="Where to write the countersigned commitment [default: COMMITMENT itself].",
)
@quiet_option
def commitment_sign(
    commitment_path: Path,
    manifest_path: Path,
    identity: Path | None,
    producer_key: Path | None,
    keys_dir: Path,
    out: Path | None,
    quiet: bool,
) -> None:
    """The lottery countersigns COMMITMENT, after rebuilding the block's tree from its manifest
    (decrypted with the lottery's identity, every record checked); signs with
    KEYS/lottery-signing.key."""
    from printpipe.commitment import countersign
    from printpipe.keys import load_signing_key

    manifest = verified_manifest(manifest_path, keys_dir, producer_key)
    signed = countersign(
        commitment_path=commitment_path,
        manifest=manifest,
        game=manifest_game(manifest),
        identity=lottery_identity(keys_dir, identity),
        producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
        lottery_signing_key=load_signing_key(keys_dir, LOTTERY_SIGNING_KEY),
        out=out,
        show_progress=not quiet,
    )
    click.echo(
        f"countersigned {out or commitment_path}: {signed.game_id} block {signed.block}, "
        f"{signed.tickets:,} tickets and every tier count rebuilt from {manifest_path}, "
        f"root {signed.root.hex()}"
    )


@commitment.command("reveal")
@click.argument("commitment_path", metavar="COMMITMENT", type=FileArgument)
@manifest_option
@click.option(
    "--closed-on",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    required=True,
    help="The day the block closed: no ticket of it sold or paid after it (YYYY-MM-DD).",
)
@click.option("--out", type=FileArgument, required=True, help="The reveal file to write.")
@identity_option
@producer_key_option
@keys_option
@quiet_option
def commitment_reveal(
    commitment_path: Path,
    manifest_path: Path,
    closed_on: dt.datetime,
    out: Path,
    identity: Path | None,
    producer_key: Path | None,
    keys_dir: Path,
    quiet: bool,
) -> None:
    """Once a block is closed, the lottery writes every leaf's preimage of COMMITMENT's tree
    (from the block manifest), under its signed closure, for anyone to recount."""
    from printpipe.commitment import write_reveal
    from printpipe.keys import load_signing_key

    manifest = verified_manifest(manifest_path, keys_dir, producer_key)
    reveal = write_reveal(
        out=out,
        commitment_path=commitment_path,
        manifest=manifest,
        game=manifest_game(manifest),
        identity=lottery_identity(keys_dir, identity),
        producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
        lottery_signing_key=load_signing_key(keys_dir, LOTTERY_SIGNING_KEY),
        closed_on=closed_on.date(),
        show_progress=not quiet,
    )
    click.echo(reveal.describe(out))


@commitment.command("recount")
@click.argument("reveal_path", metavar="REVEAL", type=FileArgument)
@click.option("--commitment", "commitment_path", type=FileArgument, required=True)
@producer_key_option
@lottery_key_option
@keys_option
@quiet_option
def commitment_recount(
    reveal_path: Path,
    commitment_path: Path,
    producer_key: Path | None,
    lottery_key: Path | None,
    keys_dir: Path,
    quiet: bool,
) -> None:
    """Anyone: check a closed block's reveal against its published commitment, rebuild the
    root from every leaf and recount the tiers."""
    from printpipe.commitment import recount

    result = recount(
        reveal_path=reveal_path,
        commitment_path=commitment_path,
        producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
        lottery_key=public_key(lottery_key, keys_dir, LOTTERY_SIGNING_PUB),
        show_progress=not quiet,
    )
    click.echo(result.describe(reveal_path))


@click.command("verify-proof")
@click.argument("proof_path", metavar="PROOF", type=FileArgument)
@click.option("--commitment", "commitment_path", type=FileArgument, required=True)
@producer_key_option
@lottery_key_option
@keys_option
def verify_proof(
    proof_path: Path,
    commitment_path: Path,
    producer_key: Path | None,
    lottery_key: Path | None,
    keys_dir: Path,
) -> None:
    """Anyone, offline: check that PROOF's ticket, with its prize, is in the block the
    commitment (signed by the producer, countersigned by the lottery) fixed before sale."""
    from printpipe.commitment import verify_proof_file

    verified = verify_proof_file(
        proof_path=proof_path,
        commitment_path=commitment_path,
        producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
        lottery_key=public_key(lottery_key, keys_dir, LOTTERY_SIGNING_PUB),
    )
    click.echo(verified.describe())


@click.command("verify-remaining")
@click.argument("report_path", metavar="REPORT", type=FileArgument)
@click.option("--commitment", "commitment_path", type=FileArgument, required=True)
@producer_key_option
@lottery_key_option
@keys_option
def verify_remaining(
    report_path: Path,
    commitment_path: Path,
    producer_key: Path | None,
    lottery_key: Path | None,
    keys_dir: Path,
) -> None:
    """Anyone, offline: check a prizes-remaining REPORT (printpipe ledger remaining) against
    the block's commitment: the lottery's signature, every paid lot's proof, each ticket once,
    and paid + remaining = committed in every tier."""
    from printpipe.commitment.remaining import verify_remaining_file

    verified = verify_remaining_file(
        report_path=report_path,
        commitment_path=commitment_path,
        producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
        lottery_key=public_key(lottery_key, keys_dir, LOTTERY_SIGNING_PUB),
    )
    click.echo(verified.describe(report_path))
