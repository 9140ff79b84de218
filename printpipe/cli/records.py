"""Commands that read a secure manifest, the auditor's CSV, or a unit feed."""

from __future__ import annotations

from pathlib import Path

import click

from printpipe.cli._common import (
    identity_option,
    keys_option,
    lottery_identity,
    manifest_game,
    producer_key_option,
    verified_manifest,
)
from printpipe.errors import PrintpipeError


@click.group()
def manifest() -> None:
    """Check a secure manifest, or export it for an auditor (the lottery's identity needed)."""


@manifest.command("verify")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@producer_key_option
@keys_option
def manifest_verify(file: Path, producer_key: Path | None, keys_dir: Path) -> None:
    """Check FILE's signature and body hash, without decrypting; print its header."""
    from printpipe.handover import describe

    click.echo(describe(verified_manifest(file, keys_dir, producer_key)))


@manifest.command("export")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@identity_option
@click.option("--csv", "csv_path", type=click.Path(path_type=Path, dir_okay=False), required=True)
@producer_key_option
@keys_option
def manifest_export(
    file: Path, identity: Path | None, csv_path: Path, producer_key: Path | None, keys_dir: Path
) -> None:
    """Decrypt FILE, check every record, and write the auditor's CSV to CSV (all or nothing)."""
    from printpipe.handover import export_csv

    verified = verified_manifest(file, keys_dir, producer_key)
    count = export_csv(
        verified, manifest_game(verified), lottery_identity(keys_dir, identity), csv_path
    )
    click.echo(f"wrote {count:,} records to {csv_path}")


@click.group()
def feed() -> None:
    """Read a unit feed (the export of an online game): one unit, or every unit re-checked."""


@feed.command("show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--unit", "serial", required=True, help="The unit's serial GGGG-PPPPPP-TTT-C.")
def feed_show(file: Path, serial: str) -> None:
    """Print one unit's record and its lot recomputed by the rules (exit 1 if they differ)."""
    from printpipe.handover import check_unit

    checked = check_unit(file, serial=serial)
    unit = checked.unit
    click.echo(f"unit {unit.serial} (game {checked.game_id}, block {checked.block})")
    for name, codes in unit.fields.items():
        click.echo(f"{name}: {' '.join(codes) if codes is not None else '(none)'}")
    click.echo(f"lot recorded: {unit.prize_eur} EUR; by the rules: {checked.rules_prize_eur} EUR")
    if not checked.matches:
        raise PrintpipeError(f"unit {unit.serial}: the record's lot is not the rules' lot")


@feed.command("verify")
@click.argument("file", type=click.Path(path_type=Path))
def feed_verify(file: Path) -> None:
    """Re-check every unit of a feed: place in block order, and its lot by the rules."""
    from printpipe.handover import verify_feed_file

    totals = verify_feed_file(file)
    click.echo(
        f"feed {file}: {totals['units']:,} units in block order, every lot as the rules give it "
        f"({totals['winning_units']:,} winning, {totals['prize_eur']:,} EUR)"
    )


@click.command()
@click.argument("csv_path", metavar="CSV", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--pack",
    type=click.IntRange(1, 999_999),
    default=None,
    help="Only tickets of this printed pack number, e.g. 000001.",
)
@click.option(
    "--prize",
    "prize_eur",
    type=click.IntRange(0),
    default=None,
    help="Only tickets that win this amount in EUR (0: losing tickets).",
)
@click.option("--count", type=click.IntRange(1), default=None, help="At most this many.")
@click.option("--long", "long_format", is_flag=True, help="Also the serial and the prize.")
def codes(
    csv_path: Path, pack: int | None, prize_eur: int | None, count: int | None, long_format: bool
) -> None:
    """The validation codes of the tickets of an auditor's CSV (printpipe manifest export), one
    a line: real codes of your own block, to validate or claim."""
    from printpipe.handover import ticket_codes

    for ticket in ticket_codes(csv_path, pack=pack, prize_eur=prize_eur, count=count):
        if long_format:
            click.echo(f"{ticket.validation_code} {ticket.serial} {ticket.prize_eur} EUR")
        else:
            click.echo(ticket.validation_code)
