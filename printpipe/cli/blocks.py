"""Commands that make and check a block: keys, generate, audit, and the main job ``run``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe.cli._common import (
    DEFAULT_GAME,
    DEFAULT_OUT,
    definition_option,
    keys_option,
    lottery_key_option,
    producer_key_option,
    quiet_option,
    scheduler_option,
)
from printpipe.cli.params import BLOCK_RANGE, MAX_BLOCK, PACK_RANGE
from printpipe.cli.press import export
from printpipe.keys import LOTTERY_SIGNING_PUB, PRODUCER_SIGNING_PUB
from printpipe.press import RUN_EXPORT_PACKS, block_dir_name

if TYPE_CHECKING:
    from printpipe.block import PackRange
    from printpipe.generation import Emission


@click.group()
def keys() -> None:
    """Create and manage key files."""


@keys.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def keys_init(directory: Path) -> None:
    """Create the two secrets and both key pairs in DIRECTORY (mode 0600, never overwritten)."""
    from printpipe.keys import init_keys

    for path in init_keys(directory):
        click.echo(f"created {path}")


@click.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option(
    "--block", type=click.IntRange(1, MAX_BLOCK), default=None, help="Block number [default: 1]."
)
@click.option(
    "--blocks",
    type=BLOCK_RANGE,
    default=None,
    help="Several blocks, each into OUT/GAME-block-NNNN (finished ones are kept).",
)
@keys_option
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Block store folder [default: printpipe-out/GAME-block-NNNN]; with --blocks, the "
    "parent folder [default: printpipe-out].",
)
@click.option("--packs", type=PACK_RANGE, default=None, help="Only packs FIRST:LAST of the block.")
@click.option("--force", is_flag=True, help="Replace an existing block store.")
@scheduler_option
@definition_option
@quiet_option
def generate(
    game_id: str,
    block: int | None,
    blocks: range | None,
    keys_dir: Path,
    out: Path | None,
    packs: PackRange | None,
    force: bool,
    scheduler: str | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Generate a block (or a pack range of it), or several blocks, into block stores."""
    from printpipe.generation import generate_emission

    if blocks is not None and block is not None:
        raise click.UsageError("give --block or --blocks, not both")
    if blocks is None:
        block = block or 1
        outs = {block: out or DEFAULT_OUT / block_dir_name(game_id, block)}
    else:
        outs = {n: (out or DEFAULT_OUT) / block_dir_name(game_id, n) for n in blocks}
    emission = generate_emission(
        game_id,
        keys_dir=keys_dir,
        outs=outs,
        packs=packs,
        definition=definition,
        keep_finished=blocks is not None,
        overwrite=force,
        show_progress=not quiet,
        scheduler=scheduler,
    )
    _report(emission, game_id, outs)


@click.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@keys_option
@producer_key_option
@click.option(
    "--commitment",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The block's public commitment [default: BLOCK_DIR/commitment.json].",
)
@lottery_key_option
@definition_option
@quiet_option
def audit(
    block_dir: Path,
    keys_dir: Path,
    producer_key: Path | None,
    commitment: Path | None,
    lottery_key: Path | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Re-check a block store from its files alone, and against its public commitment; exit 0
    only if everything holds."""
    from printpipe.generation import audit_store

    report = audit_store(
        block_dir,
        producer_key=producer_key or keys_dir / PRODUCER_SIGNING_PUB,
        commitment=commitment,
        lottery_key=lottery_key or keys_dir / LOTTERY_SIGNING_PUB,
        definition=definition,
        show_progress=not quiet,
    )
    click.echo(report.render())
    if not report.passed:
        sys.exit(1)


@click.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True)
@click.option("--block", type=click.IntRange(1, MAX_BLOCK), default=1, show_default=True)
@keys_option
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True)
@click.option(
    "--packs",
    "export_packs",
    type=PACK_RANGE,
    default=RUN_EXPORT_PACKS,
    show_default=True,
    help="Packs to export to press PDFs at the end of the run.",
)
@quiet_option
@click.pass_context
def run(
    ctx: click.Context,
    game_id: str,
    block: int,
    keys_dir: Path,
    out: Path,
    export_packs: PackRange,
    quiet: bool,
) -> None:
    """The main job on defaults: keys (demo ones if none), generate a block, audit it, export
    the first packs to press PDFs (on demo keys, after making and approving its proof).
    With --quiet, no progress bars and the audit in one line."""
    from printpipe.generation import audit_store, generate_emission
    from printpipe.press import approve_demo_proof

    block_dir = out / block_dir_name(game_id, block)
    emission = generate_emission(
        game_id,
        keys_dir=keys_dir,
        outs={block: block_dir},
        keep_finished=True,
        show_progress=not quiet,
    )
    _report(emission, game_id, {block: block_dir})
    if quiet:
        report = audit_store(
            block_dir,
            producer_key=keys_dir / PRODUCER_SIGNING_PUB,
            lottery_key=keys_dir / LOTTERY_SIGNING_PUB,
            show_progress=False,
        )
        click.echo(report.verdict())
        if not report.passed:
            sys.exit(1)
    else:
        ctx.invoke(audit, block_dir=block_dir, keys_dir=keys_dir, quiet=quiet)
    approved = approve_demo_proof(
        game_id, keys_dir=keys_dir, proof_dir=out / f"{game_id}-proof", show_progress=not quiet
    )
    if approved:
        click.echo(approved, err=True)
    ctx.invoke(
        export, block_dir=block_dir, out_dir=out / f"{block_dir.name}-print",
        packs=export_packs, keys_dir=keys_dir, quiet=quiet,
    )  # fmt: skip


def _report(emission: Emission, game_id: str, outs: dict[int, Path]) -> None:
    for block in emission.kept:
        click.echo(f"block store {outs[block]} exists: keeping it", err=True)
    for summary in emission.summaries:
        totals, out = summary.totals, outs[summary.block]
        click.echo(
            f"generated {summary.tickets:,} tickets of {game_id} block {summary.block} "
            f"(packs {summary.packs.first} to {summary.packs.last}) in {out} "
            f"in {emission.seconds:.1f} s: {totals.winning_tickets:,} winning, "
            f"{totals.prize_eur:,} EUR; block manifest {out / 'manifest.ppm'}"
        )
