"""Commands that make and check a block: keys, generate, audit, and the main job ``run``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from printpipe.cli._common import (
    DEFAULT_GAME,
    DEFAULT_OUT,
    definition_option,
    keys_option,
    quiet_option,
    scheduler_option,
)
from printpipe.cli.press import export
from printpipe.errors import PrintpipeError
from printpipe.keys import DEMO_KEYS_DIR, PRODUCER_SIGNING_PUB

RUN_EXPORT_PACKS = "1:200"
"""What `printpipe run` exports: 200 packs, 25,000 tickets, a few seconds."""


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
    "--block", type=click.IntRange(1, 999), default=None, help="Block number [default: 1]."
)
@click.option(
    "--blocks",
    default=None,
    metavar="FIRST:LAST",
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
@click.option("--packs", default=None, help="Only packs FIRST:LAST of the block (1-based).")
@click.option("--force", is_flag=True, help="Replace an existing block store.")
@scheduler_option
@definition_option
@quiet_option
def generate(
    game_id: str,
    block: int | None,
    blocks: str | None,
    keys_dir: Path,
    out: Path | None,
    packs: str | None,
    force: bool,
    scheduler: str | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Generate a block (or a pack range of it), or several blocks, into block stores."""
    if blocks is None:
        block = block or 1
        out = out or DEFAULT_OUT / _block_dir_name(game_id, block)
        _generate(
            game_id, [block], keys_dir, {block: out}, packs, force, quiet, definition, scheduler
        )
        return
    if block is not None:
        raise PrintpipeError("give --block or --blocks, not both")
    numbers = _parse_blocks(blocks)
    outs = {n: (out or DEFAULT_OUT) / _block_dir_name(game_id, n) for n in numbers}
    _generate(game_id, numbers, keys_dir, outs, packs, force, quiet, definition, scheduler)


def _parse_blocks(text: str) -> list[int]:
    """``FIRST:LAST`` (inclusive) or a single ``N``: the block numbers of an emission."""
    first, sep, last = text.partition(":")
    last = last if sep else first
    if not (first.strip().isdigit() and last.strip().isdigit()):
        raise PrintpipeError(f"--blocks {text!r} must be FIRST:LAST, e.g. 1:10")
    numbers = list(range(int(first), int(last) + 1))
    if not numbers or not 1 <= numbers[0] <= numbers[-1] <= 999:
        raise PrintpipeError(f"--blocks {text!r} must be within 1:999, FIRST <= LAST")
    return numbers


@click.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@keys_option
@click.option(
    "--producer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Producer's public key [default: KEYS/producer-signing.pub].",
)
@definition_option
@quiet_option
def audit(
    block_dir: Path,
    keys_dir: Path,
    producer_key: Path | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Re-check a block store from its files alone; exit 0 only if everything holds."""
    if not _audit(block_dir, producer_key or keys_dir / PRODUCER_SIGNING_PUB, quiet, definition):
        sys.exit(1)


@click.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True)
@click.option("--block", type=click.IntRange(1, 999), default=1, show_default=True)
@keys_option
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True)
@click.option(
    "--packs",
    "export_packs",
    default=RUN_EXPORT_PACKS,
    show_default=True,
    help="Packs to export to press PDFs at the end of the run.",
)
@quiet_option
def run(
    game_id: str, block: int, keys_dir: Path, out: Path, export_packs: str, quiet: bool
) -> None:
    """The main job on defaults: keys (demo ones if none), generate a block, audit it, export
    the first packs to press PDFs."""
    from printpipe.keys import ensure_demo_keys

    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    block_dir = out / _block_dir_name(game_id, block)
    if (block_dir / "summary.json").exists():
        click.echo(f"block store {block_dir} exists: keeping it", err=True)
    else:
        _generate(game_id, [block], keys_dir, {block: block_dir}, None, False, quiet)
    if not _audit(block_dir, keys_dir / PRODUCER_SIGNING_PUB, quiet):
        sys.exit(1)
    print_dir = out / f"{_block_dir_name(game_id, block)}-print"
    click.get_current_context().invoke(
        export, block_dir=block_dir, out_dir=print_dir, packs=export_packs, keys_dir=keys_dir,
        quiet=quiet,
    )  # fmt: skip


def _block_dir_name(game_id: str, block: int) -> str:
    return f"{game_id}-block-{block:04d}"


def _generate(
    game_id: str,
    blocks: list[int],
    keys_dir: Path,
    outs: dict[int, Path],
    packs_text: str | None,
    force: bool,
    quiet: bool,
    definition: Path | None = None,
    scheduler: str | None = None,
) -> None:
    from printpipe.block import PackRange
    from printpipe.games import load_game
    from printpipe.generate import finished_block, generate_blocks
    from printpipe.keys import (
        LOTTERY_RECIPIENT,
        ensure_demo_keys,
        load_lottery_recipient,
        load_secrets,
        load_signing_key,
    )

    game = load_game(game_id, definition)
    packs = PackRange.parse(packs_text, game.definition.block.packs) if packs_text else None
    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    secrets = load_secrets(keys_dir)
    signing_key = load_signing_key(keys_dir)
    recipient = load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT)
    if len(blocks) > 1 and not force:
        outs = {n: path for n, path in outs.items() if not finished_block(path, secrets, packs)}
        for n in sorted(set(blocks) - set(outs)):
            click.echo(f"block store {_block_dir_name(game_id, n)} exists: keeping it", err=True)
    started = time.perf_counter()
    summaries = generate_blocks(
        game, secrets, signing_key, outs, packs, force, not quiet, recipient, scheduler
    )
    elapsed = time.perf_counter() - started
    for summary in summaries:
        totals = summary.totals
        out = outs[summary.block]
        click.echo(
            f"generated {summary.tickets:,} tickets of {game_id} block {summary.block} "
            f"(packs {summary.packs.first} to {summary.packs.last}) in {out} "
            f"in {elapsed:.1f} s: {totals.winning_tickets:,} winning, "
            f"{totals.prize_eur:,} EUR; block manifest {out / 'manifest.ppm'}"
        )


def _audit(
    block_dir: Path, producer_key_path: Path, quiet: bool, definition: Path | None = None
) -> bool:
    from printpipe.audit import audit_block
    from printpipe.games import load_game
    from printpipe.keys import load_public_key
    from printpipe.store import BlockStore

    store = BlockStore.open(block_dir)
    game = load_game(store.game_id, definition)
    producer_key = load_public_key(producer_key_path)
    report = audit_block(store, game, producer_key, not quiet)
    click.echo(report.render())
    return report.passed
