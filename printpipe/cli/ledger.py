"""The lottery's validation database: import, settings, pack states, validate, claim."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe.cli._common import (
    db_option,
    identity_option,
    json_option,
    keys_option,
    lottery_identity,
    manifest_game,
    producer_key_option,
    quiet_option,
    verified_manifest,
)
from printpipe.errors import PrintpipeError

if TYPE_CHECKING:
    from printpipe.validation import Answer, Ledger

SQLITE_SIDE = ("-wal", "-shm", "-journal")


def _open_ledger(db_path: Path, create: bool = False) -> Ledger:
    from printpipe.validation import Ledger

    return Ledger(db_path, create=create)


def _sqlite_errors(function):
    """A database failure (locked too long, disk full, damaged file) is one line, not a trace."""
    import functools
    import sqlite3

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except sqlite3.Error as exc:
            raise PrintpipeError(f"validation database: {exc}") from None

    return wrapper


@click.group()
def ledger() -> None:
    """The lottery's validation database: import manifests, settings."""


@ledger.command("import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@identity_option
@db_option
@producer_key_option
@keys_option
@quiet_option
@_sqlite_errors
def ledger_import(
    file: Path,
    identity: Path | None,
    db_path: Path,
    producer_key: Path | None,
    keys_dir: Path,
    quiet: bool,
) -> None:
    """Load manifest FILE into the database (created if absent); the same one twice: no-op."""
    from printpipe.progress import progress_bar

    verified = verified_manifest(file, keys_dir, producer_key)
    game = manifest_game(verified)
    key = lottery_identity(keys_dir, identity)
    records = int(verified.header["records"])
    new_database = not db_path.exists()
    try:
        with (
            _open_ledger(db_path, create=True) as book,
            progress_bar(records, "import", "records", not quiet) as bar,
        ):
            summary = book.import_manifest(verified, game, key, progress=bar.update)
    except BaseException:
        if new_database:  # a refused first import leaves no empty database behind
            for leftover in (db_path, *(db_path.with_name(db_path.name + s) for s in SQLITE_SIDE)):
                leftover.unlink(missing_ok=True)
        raise
    click.echo(summary)


@ledger.command("config")
@db_option
@click.option("--retailer-limit", type=int, default=None, help="Highest prize a retailer pays.")
@click.option("--max-virn-failures", type=int, default=None, help="Wrong VIRNs before a lock.")
@click.option("--terminal", default="lottery", show_default=True)
@_sqlite_errors
def ledger_config(
    db_path: Path, retailer_limit: int | None, max_virn_failures: int | None, terminal: str
) -> None:
    """Show or change the retailer limit (EUR) and the VIRN failures that lock a ticket."""
    with _open_ledger(db_path) as book:
        settings = book.configure(retailer_limit, max_virn_failures, terminal)
    click.echo(
        f"retailer limit {settings.retailer_limit_eur} EUR, "
        f"lock after {settings.max_virn_failures} wrong validation numbers"
    )


@click.group()
def packs() -> None:
    """Pack states: issued -> activated (by the retailer on receipt) -> settled."""


def _pack_command(state: str) -> Callable[..., None]:
    @click.argument("pack_numbers", nargs=-1, required=True, metavar="PACK...")
    @db_option
    @click.option("--terminal", default="lottery", show_default=True)
    @_sqlite_errors
    def command(pack_numbers: tuple[str, ...], db_path: Path, terminal: str) -> None:
        with _open_ledger(db_path) as book:
            for line in book.set_pack_state(list(pack_numbers), state, terminal):
                click.echo(line)

    return command


packs.command("activate", help="Activate packs (PPPPPP or GGGG-PPPPPP); all or none.")(
    _pack_command("activated")
)
packs.command("settle", help="Settle activated packs (PPPPPP or GGGG-PPPPPP); all or none.")(
    _pack_command("settled")
)


def _print_answer(answer: Answer, as_json: bool, ok: bool) -> None:
    import json

    click.echo(json.dumps(answer.as_json(), sort_keys=True) if as_json else answer.text)
    if not ok:
        sys.exit(1)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("code")
@db_option
@click.option("--terminal", default="unknown", show_default=True, help="Terminal id for the log.")
@json_option
@_sqlite_errors
def validate(code: str, db_path: Path, terminal: str, as_json: bool) -> None:
    """Answer a scanned CODE: 25-digit validation code, or 14-digit inventory code (pack state)."""
    with _open_ledger(db_path) as book:
        answer = book.validate(code, terminal)
    _print_answer(answer, as_json, answer.ok)


@click.command(context_settings={"ignore_unknown_options": True})
@click.argument("code")
@db_option
@click.option("--terminal", required=True, help="Terminal id, recorded with the payment.")
@click.option("--office", is_flag=True, help="The lottery's office: pays above the retailer limit.")
@json_option
@_sqlite_errors
def claim(code: str, db_path: Path, terminal: str, office: bool, as_json: bool) -> None:
    """Pay the ticket of validation CODE, at most once (exit 0 only when paid now)."""
    with _open_ledger(db_path) as book:
        answer = book.claim(code, terminal, office)
    _print_answer(answer, as_json, answer.outcome == "PAID")
