"""Commands for the print shop and the proof approver: export to press files, preflight them,
proofs."""

from __future__ import annotations

import sys
import time
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe.cli._common import DEFAULT_GAME, keys_option, quiet_option, scheduler_option
from printpipe.cli.params import COATING, PACK_RANGE, PRESS, PRESS_SHEET, SHEET_LIST
from printpipe.handover import APPROVALS_DIR
from printpipe.render.imposition import DEFAULT_CHUNK_PACKS

if TYPE_CHECKING:
    from printpipe.block import PackRange
    from printpipe.render.imposition import Press, PressSheet
    from printpipe.render.template import Coating

BUILT_IN_TEMPLATES = Path(str(files("printpipe.templates")))
"""Where the games' own templates are (``games.TEMPLATES_DIR``, named here for the help without
loading every game), in a checkout or an installed wheel."""


def _built_in_templates() -> str:
    """The end of ``export --help`` before its example: each game's own ticket template, the
    path where it is (kept whole: a path wrapped at its hyphens could not be copied)."""
    paths = sorted(BUILT_IN_TEMPLATES.glob("*/ticket.toml"))
    return "\b\nThe games' own ticket templates (--template's default):\n" + "\n".join(
        f"  {path}" for path in paths
    )


approvals_option = click.option(
    "--approvals",
    "approvals_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=APPROVALS_DIR,
    show_default=True,
    help="Folder of the lottery's signed proof approvals.",
)


@click.command(epilog=_built_in_templates())
@click.argument("block_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="PRINT_DIR: where the press PDFs, job.json and manifest.ppm go.",
)
@click.option(
    "--packs", type=PACK_RANGE, default=None, help="Only packs FIRST:LAST of the block (1-based)."
)
@keys_option
@click.option(
    "--sheet",
    type=PRESS_SHEET,
    default="SRA3",
    show_default=True,
    help="Press sheet: A3, SRA3 or WxH (mm).",
)
@click.option(
    "--template",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Ticket template [default: the block's game's own, listed below].",
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
    type=COATING,
    default="plate",
    show_default=True,
    help="plate: the ScratchOff coating and its decoration (press); none: as scratched.",
)
@click.option(
    "--press",
    type=PRESS,
    default="digital",
    show_default=True,
    help="digital: composite sheets; conventional: static plate files (PDF/X-1a) and the "
    "imaging as PDF/VT-1.",
)
@click.option(
    "--output-intent",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    metavar="FILE.icc",
    help="Embed this ICC output profile as the PDF/X output intent [default: FOGRA39 by name].",
)
@approvals_option
@click.option(
    "--unapproved",
    is_flag=True,
    help="Print without an approved proof: NOT APPROVED on every sheet and in job.json.",
)
@scheduler_option
@click.option(
    "--collect",
    is_flag=True,
    help="Workers return the PDFs and this process writes them (no shared folder needed).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def export(
    block_dir: Path,
    out_dir: Path,
    packs: PackRange | None,
    keys_dir: Path,
    sheet: PressSheet,
    template: Path | None,
    workers: int | None,
    chunk_packs: int,
    coating: Coating,
    press: Press,
    output_intent: Path | None,
    approvals_dir: Path,
    unapproved: bool,
    scheduler: str | None,
    collect: bool,
    quiet: bool,
) -> None:
    """Press-ready PDFs of a block store (or a pack range), job.json and the run's manifest.

    For a game whose output is a feed (an online game), the unit feed instead of PDFs; the
    press options (--sheet, --template, --workers, --chunk-packs, --coating) do not apply.
    """
    from printpipe.press import export_block, export_summary

    started = time.perf_counter()
    job = export_block(
        block_dir=block_dir,
        out_dir=out_dir,
        keys_dir=keys_dir,
        packs=packs,
        sheet=sheet,
        template=template,
        workers=workers,
        chunk_packs=chunk_packs,
        coating=coating,
        press=press,
        output_intent=output_intent,
        approvals_dir=approvals_dir,
        unapproved=unapproved,
        show_progress=not quiet,
        scheduler=scheduler,
        collect=collect,
    )
    click.echo(export_summary(job, out_dir, time.perf_counter() - started))


@click.group(invoke_without_command=True)
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path), default=None, help="PROOF_DIR to write."
)
@click.option(
    "--template",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The ticket template the press run will use [default: the game's ticket.toml].",
)
@click.option("--force", is_flag=True, help="Replace an existing PROOF_DIR.")
@click.option(
    "--from-block",
    "block_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Also proof real press sheets of this block store, and plot it per pack.",
)
@click.option(
    "--packs",
    type=PACK_RANGE,
    default=None,
    help="Pack range of the press file [default: the first 40 packs of the store].",
)
@click.option(
    "--sheets", type=SHEET_LIST, default="1", show_default=True, help="Press sheets, e.g. 1,3,5-7."
)
@click.option(
    "--sheet", type=PRESS_SHEET, default="SRA3", show_default=True, help="A3, SRA3 or WxH (mm)."
)
@click.option(
    "--coating",
    type=COATING,
    default="plate",
    show_default=True,
    help="Coating of the press sheets.",
)
@keys_option
@quiet_option
@click.pass_context
def proof(
    ctx: click.Context,
    game_id: str,
    out_dir: Path | None,
    template: Path | None,
    force: bool,
    block_dir: Path | None,
    packs: PackRange | None,
    sheets: list[int],
    sheet: PressSheet,
    coating: Coating,
    keys_dir: Path,
    quiet: bool,
) -> None:
    """The proof pack the lottery approves: cover, specimens, symbol sheet, PNG previews
    (printpipe proof --out PROOF_DIR); then printpipe proof approve PROOF_DIR."""
    from printpipe.proof import PressRequest, make_proof, proof_summary

    if ctx.invoked_subcommand is not None:
        return
    if out_dir is None:
        raise click.UsageError("Missing option '--out'.", ctx)
    press = None
    if block_dir is not None:
        press = PressRequest(
            block_dir=block_dir,
            keys_dir=keys_dir,
            packs=packs,
            sheets=tuple(sheets),
            sheet=sheet,
            coating=coating,
        )
    record = make_proof(
        game_id=game_id,
        out_dir=out_dir,
        force=force,
        press=press,
        template=template,
        show_progress=not quiet,
    )
    for line in proof_summary(record, out_dir):
        click.echo(line)


@proof.command("approve")
@click.argument("proof_dir", type=click.Path(path_type=Path, file_okay=False))
@keys_option
@approvals_option
def approve(proof_dir: Path, keys_dir: Path, approvals_dir: Path) -> None:
    """Approve the proof pack in PROOF_DIR with the lottery's signing key
    (KEYS/lottery-signing.key): a signed approval of the inputs it was made from, which
    printpipe export requires."""
    from printpipe.handover import approve_proof
    from printpipe.keys import LOTTERY_SIGNING_KEY, load_signing_key

    key = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    path = approve_proof(proof_dir, signing_key=key, approvals_dir=approvals_dir)
    click.echo(f"approved the proof pack {proof_dir}: {path}")


@click.command()
@click.argument("print_dir", type=click.Path(path_type=Path, file_okay=False))
def preflight(print_dir: Path) -> None:
    """Check every PDF of PRINT_DIR against PDF/X-1a:2003 and the job's rules: one line per
    violation; exit 0 only if there is none."""
    from printpipe.press import preflight, preflight_summary

    violations, files = preflight(print_dir)
    for violation in violations:
        click.echo(str(violation))
    click.echo(preflight_summary(violations, files), err=bool(violations))
    if violations:
        sys.exit(1)
