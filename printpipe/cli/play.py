"""The online game's server: ``play``, and its players (``players``).

Parsing only: each command calls ``printpipe.play.server`` or ``printpipe.play.dealer``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe.cli._common import keys_option, server_options, start_in_background
from printpipe.cli.ledger import _database_errors, db_option, terminal_option
from printpipe.cli.params import EUROS, PLAYER

if TYPE_CHECKING:
    from printpipe.ledger import Location, TerminalId


@click.command()
@db_option
@keys_option
@click.option(
    "--demo", is_flag=True,
    help="Offer logins by one-time link (printpipe players add) and session cookies.",
)  # fmt: skip
@server_options(default_port=8788)
def play(
    db_path: Location,
    keys_dir: Path,
    demo: bool,
    host: str,
    port: int,
    workers: int,
    url_file: Path | None,
    access_log: bool,
    witness: Path | None,
    detach: bool,
    pid_file: Path | None,
    log_file: Path | None,
) -> None:
    """The online game's server: deals each unit of the ledger's online blocks once, against
    the stake, and serves the player's page at / (a JSON API under /v1)."""
    from printpipe.play import server

    if detach:
        start_in_background("dealing at", url_file=url_file, pid_file=pid_file, log_file=log_file)
        return
    server.play(
        location=db_path,
        keys_dir=keys_dir,
        host=host,
        port=port,
        workers=workers,
        demo=demo,
        url_file=url_file,
        access_log=access_log,
        witness=witness,
    )


@click.group()
def players() -> None:
    """Players of the online game and the built-in wallet (a demo of the operator's)."""


@players.command("add")
@click.argument("name", type=PLAYER)
@db_option
@keys_option
@click.option("--balance", type=EUROS, default="0", show_default=True, help="Opening balance.")
@click.option(
    "--url", default="http://127.0.0.1:8788", show_default=True,
    help="Where printpipe play --demo listens: the login link starts with it.",
)  # fmt: skip
@terminal_option("lottery", "Who registers the player, for the log")
@_database_errors
def players_add(
    name: str, db_path: Location, keys_dir: Path, balance: int, url: str, terminal: TerminalId
) -> None:
    """Register player NAME with an opening balance; print a one-time login link (demo)."""
    from printpipe.play.server import open_dealer

    ledger, dealer = open_dealer(db_path, keys_dir)
    with ledger:
        token = dealer.add_player(player=name, balance_cents=balance, by=terminal.value)
    click.echo(f"registered player {name} with {balance / 100:.2f} EUR")
    click.echo(f"login link (once, within 24 h): {url.rstrip('/')}/#login={token}")
