"""The ``printpipe`` command: parse, call a stage, print. No logic of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from printpipe import __version__
from printpipe.errors import PrintpipeError
from printpipe.export import DEFAULT_CHUNK_PACKS
from printpipe.keys import DEMO_KEYS_DIR, PRODUCER_SIGNING_PUB

DEFAULT_GAME = "chien-chat"
DEFAULT_OUT = Path("printpipe-out")
RUN_EXPORT_PACKS = "1:200"
"""What `printpipe run` exports: 200 packs, 25,000 tickets, a few seconds."""

keys_option = click.option(
    "--keys",
    "keys_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEMO_KEYS_DIR,
    show_default=True,
    help="Folder of key files (printpipe keys init).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="printpipe")
def cli() -> None:
    """printpipe: lottery instant tickets from a generated block to press PDFs."""


@cli.group()
def keys() -> None:
    """Create and manage key files."""


@keys.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def keys_init(directory: Path) -> None:
    """Create the two secrets and both key pairs in DIRECTORY (mode 0600, never overwritten)."""
    from printpipe.keys import init_keys

    for path in init_keys(directory):
        click.echo(f"created {path}")


@cli.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option("--block", type=click.IntRange(1, 999), default=1, show_default=True)
@keys_option
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Block store folder [default: printpipe-out/GAME-block-NNNN].",
)
@click.option("--packs", default=None, help="Only packs FIRST:LAST of the block (1-based).")
@click.option("--force", is_flag=True, help="Replace an existing block store.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def generate(
    game_id: str,
    block: int,
    keys_dir: Path,
    out: Path | None,
    packs: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Generate a block (or a pack range of it) into a block store."""
    _generate(game_id, block, keys_dir, out, packs, force, quiet)


@cli.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@keys_option
@click.option(
    "--producer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Producer's public key [default: KEYS/producer-signing.pub].",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def audit(block_dir: Path, keys_dir: Path, producer_key: Path | None, quiet: bool) -> None:
    """Re-check a block store from its files alone; exit 0 only if everything holds."""
    if not _audit(block_dir, producer_key or keys_dir / PRODUCER_SIGNING_PUB, quiet):
        sys.exit(1)


@cli.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="PRINT_DIR: where the press PDFs, job.json and manifest.ppm go.",
)
@click.option("--packs", default=None, help="Only packs FIRST:LAST of the block (1-based).")
@keys_option
@click.option(
    "--sheet", default="SRA3", show_default=True, help="Press sheet: A3, SRA3 or WxH (mm)."
)
@click.option(
    "--template",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Ticket template [default: templates/GAME/ticket.toml].",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=None,
    help="Worker processes [default: all cores].",
)
@click.option(
    "--chunk-packs",
    type=click.IntRange(1, 2000),
    default=DEFAULT_CHUNK_PACKS,
    show_default=True,
    help="Whole packs per PDF file.",
)
@click.option(
    "--coating",
    type=click.Choice(["plate", "panel", "none"]),
    default="plate",
    show_default=True,
    help="plate: ScratchOff spot plate (press); panel: silver proof panels; none: revealed.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def export(
    block_dir: Path,
    out_dir: Path,
    packs: str | None,
    keys_dir: Path,
    sheet: str,
    template: Path | None,
    workers: int | None,
    chunk_packs: int,
    coating: str,
    quiet: bool,
) -> None:
    """Press-ready PDFs of a block store (or a pack range), job.json and the run's manifest."""
    _export(
        block_dir, out_dir, packs, keys_dir, sheet, template, workers, chunk_packs, coating, quiet
    )


@cli.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path), required=True, help="PROOF_DIR to write."
)
@click.option("--force", is_flag=True, help="Replace an existing PROOF_DIR.")
@click.option(
    "--from-block",
    "block_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Also proof real press sheets of this block store, and plot it per pack.",
)
@click.option("--packs", default=None, help="Pack range of the press file [default: first 40].")
@click.option("--sheets", default="1", show_default=True, help="Press sheets, e.g. 1,3,5-7.")
@click.option("--sheet", default="SRA3", show_default=True, help="A3, SRA3 or WxH (mm).")
@click.option(
    "--coating",
    type=click.Choice(["plate", "panel", "none"]),
    default="plate",
    show_default=True,
    help="Coating of the press sheets.",
)
@keys_option
def proof(
    game_id: str,
    out_dir: Path,
    force: bool,
    block_dir: Path | None,
    packs: str | None,
    sheets: str,
    sheet: str,
    coating: str,
    keys_dir: Path,
) -> None:
    """The proof pack the lottery signs: cover, specimens, symbol sheet, PNG previews."""
    from printpipe.proof import PressRequest, make_proof

    press = PressRequest(block_dir, packs, sheets, sheet, coating, keys_dir) if block_dir else None
    record = make_proof(game_id, out_dir, force, press)
    click.echo(
        f"wrote {record['pdf']} ({record['pages']} pages, {len(record['specimens'])} specimens) "
        f"and {len(record['previews'])} PNG previews to {out_dir} in {record['seconds']:.1f} s"
    )
    if record["press_proof"]:
        done = record["press_proof"]
        click.echo(
            f"wrote {done['file']} (sheets {','.join(map(str, done['sheets']))} of "
            f"{done['sheets_in_file']}): REAL OUTCOMES, CONFIDENTIAL - destroy after sign-off"
        )
    if record["plot"]:
        click.echo(f"wrote {record['plot']['file']} (per-pack winners and prize money)")


@cli.command()
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
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
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
        _generate(game_id, block, keys_dir, block_dir, None, False, quiet)
    if not _audit(block_dir, keys_dir / PRODUCER_SIGNING_PUB, quiet):
        sys.exit(1)
    print_dir = out / f"{_block_dir_name(game_id, block)}-print"
    _export(
        block_dir,
        print_dir,
        export_packs,
        keys_dir,
        "SRA3",
        None,
        None,
        DEFAULT_CHUNK_PACKS,
        "plate",
        quiet,
    )


def _export(
    block_dir: Path,
    out_dir: Path,
    packs: str | None,
    keys_dir: Path,
    sheet: str,
    template: Path | None,
    workers: int | None,
    chunk_packs: int,
    coating: str,
    quiet: bool,
) -> None:
    import time

    from printpipe.export import export_block

    started = time.perf_counter()
    job = export_block(
        block_dir,
        out_dir,
        packs,
        keys_dir,
        sheet,
        template,
        workers,
        chunk_packs,
        coating,
        not quiet,
    )
    elapsed = time.perf_counter() - started
    click.echo(
        f"exported {job['tickets']:,} tickets (packs {job['packs']['first']} to "
        f"{job['packs']['last']}) to {len(job['files'])} press PDF(s) in {out_dir} "
        f"in {elapsed:.1f} s; job.json written"
        + ("" if job["manifest"] else " (no manifest: printpipe.manifest not available)")
    )


def _block_dir_name(game_id: str, block: int) -> str:
    return f"{game_id}-block-{block:04d}"


def _generate(
    game_id: str,
    block: int,
    keys_dir: Path,
    out: Path | None,
    packs_text: str | None,
    force: bool,
    quiet: bool,
) -> None:
    import time

    from printpipe.block import PackRange
    from printpipe.games import load_game
    from printpipe.generate import generate_block
    from printpipe.keys import ensure_demo_keys, load_secrets, load_signing_key

    game = load_game(game_id)
    packs = PackRange.parse(packs_text, game.definition.block.packs) if packs_text else None
    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    secrets = load_secrets(keys_dir)
    signing_key = load_signing_key(keys_dir)
    out = out or DEFAULT_OUT / _block_dir_name(game_id, block)
    started = time.perf_counter()
    summary = generate_block(game, secrets, signing_key, block, out, packs, force, not quiet)
    elapsed = time.perf_counter() - started
    totals = summary["totals"]
    click.echo(
        f"generated {summary['tickets']:,} tickets of {game_id} block {block} "
        f"(packs {summary['packs']['first']} to {summary['packs']['last']}) in {out} "
        f"in {elapsed:.1f} s: {totals['winning_tickets']:,} winning, {totals['prize_eur']:,} EUR"
    )


def _audit(block_dir: Path, producer_key_path: Path, quiet: bool) -> bool:
    from printpipe.audit import audit_block
    from printpipe.games import load_game
    from printpipe.keys import load_producer_public_key
    from printpipe.store import BlockStore

    store = BlockStore.open(block_dir)
    game = load_game(store.game_id)
    producer_key = load_producer_public_key(producer_key_path)
    report = audit_block(store, game, producer_key, not quiet)
    click.echo(report.render())
    return report.passed


def main() -> None:
    """Entry point: user errors become one line on stderr and exit status 1."""
    try:
        cli.main(standalone_mode=False)
    except PrintpipeError as exc:
        click.echo(f"printpipe: error: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("printpipe: interrupted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("printpipe: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
