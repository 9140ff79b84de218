"""The online game's server: ``play``, and its players (``players``).

Parsing only: each command calls ``printpipe.play.server``, ``printpipe.play.launch`` or the
ledger's dealer.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe import french
from printpipe.cli._common import keys_option, server_options, start_in_background
from printpipe.cli.ledger import _database_errors, db_option, terminal_option
from printpipe.cli.params import EUROS, LEDGER_LOCATION, PLAYER

if TYPE_CHECKING:
    from printpipe.ledger import Location, TerminalId


@click.group(invoke_without_command=True)
@click.option(
    "--db", "db_path", type=LEDGER_LOCATION, default=None,
    help="Validation database holding the online blocks: an SQLite file, or "
    "postgresql://USER@HOST:PORT/DATABASE (required to serve).",
)  # fmt: skip
@keys_option
@click.option(
    "--demo", is_flag=True,
    help="Offer logins by one-time link (printpipe players add).",
)  # fmt: skip
@click.option(
    "--wallet", "wallet_url", default=None, metavar="URL",
    help="The operator's wallet API (docs/wallet-api.md) [default: the built-in wallet].",
)  # fmt: skip
@click.option(
    "--wallet-key", type=click.Path(path_type=Path, dir_okay=False), default=None,
    help="The game server's private key its wallet calls are signed with (printpipe terminal "
    "keygen game.key; the wallet trusts game.key.pub).",
)  # fmt: skip
@server_options(default_port=8788)
@click.pass_context
def play(
    ctx: click.Context,
    db_path: Location | None,
    keys_dir: Path,
    demo: bool,
    wallet_url: str | None,
    wallet_key: Path | None,
    host: str,
    port: int,
    workers: int,
    url_file: Path | None,
    access_log: bool,
    witness: Path | None,
    log_format: str,
    detach: bool,
    pid_file: Path | None,
    log_file: Path | None,
) -> None:
    """The online game's server: deals each unit of the ledger's online blocks once, against
    the stake, and serves the player's page at / (a JSON API under /v1).  Players come by the
    operator's launch links (printpipe play launch makes one), or, with --demo, by login links."""
    if ctx.invoked_subcommand is not None:
        return
    if db_path is None:
        raise click.UsageError("Missing option '--db'.", ctx)
    if (wallet_url is None) != (wallet_key is None):
        raise click.UsageError("--wallet and --wallet-key go together.", ctx)
    if wallet_url is not None and not wallet_url.startswith(("http://", "https://")):
        raise click.BadParameter("an http:// or https:// URL", ctx, param_hint="'--wallet'")
    if wallet_key is not None and not wallet_key.is_file():
        raise click.BadParameter(f"{wallet_key}: no such file", ctx, param_hint="'--wallet-key'")
    from printpipe.play import server

    if wallet_url is not None:  # its client's wait read from the environment: one line if wrong
        from printpipe.play import operator_wallet  # noqa: F401

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
        log_format=log_format,
        wallet=wallet_url,
        wallet_key=wallet_key,
    )


@play.command("launch")
@click.argument("player", type=PLAYER)
@click.option(
    "--key", "key_file", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="The platform's private key (printpipe terminal keygen FILE; FILE.pub registered with "
    "printpipe terminals add ID --role platform).",
)  # fmt: skip
@click.option(
    "--url", default="http://127.0.0.1:8788", show_default=True,
    help="Where printpipe play listens: the launch link starts with it.",
)  # fmt: skip
@click.option("--session", default=None, help="The platform's session id [default: a new one].")
@click.option(
    "--ttl", type=click.IntRange(1, 60), default=60, show_default=True,
    help="Seconds the link may be opened in (once).",
)  # fmt: skip
def play_launch(player: str, key_file: Path, url: str, session: str | None, ttl: int) -> None:
    """Print a launch link for PLAYER, signed with the platform's key: what the operator's
    platform gives a player it authenticated (opened once, within --ttl seconds)."""
    from printpipe.play.launch import launch_link, make_launch_token
    from printpipe.service.signatures import load_terminal_key

    token = make_launch_token(load_terminal_key(key_file), player=player, session=session,
                              ttl_s=ttl)  # fmt: skip
    click.echo(launch_link(url, token))


def _day(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from printpipe.wallet.api import BadCall, check_day

    try:
        return check_day(value)
    except BadCall as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


day_option = click.option(
    "--day", required=True, callback=_day, metavar="YYYY-MM-DD", help="The day (UTC)."
)


@play.command("report")
@db_option
@keys_option
@day_option
@_database_errors
def play_report(db_path: Location, keys_dir: Path, day: str) -> None:
    """Print the day's sales per game (plays, stakes, lots won, credited or pending, Super Jackpot
    participations, each block's plays), signed with the lottery's signing key."""
    from printpipe.games import load_game
    from printpipe.keys import LOTTERY_SIGNING_KEY, load_signing_key
    from printpipe.ledger import Ledger, day_sales, format_time
    from printpipe.play.report import sales_report, sign_sales_report

    signing = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    with Ledger(db_path, read_only=True) as book:
        games = day_sales(book, day)
        at = format_time(book.clock())
    linked = {sales.game: str(getattr(load_game(sales.game), "linked_game", "")) for sales in games}
    report = sales_report(day, games, linked=linked, at=at)
    click.echo(sign_sales_report(report, signing).decode(), nl=False)


@play.command("reconcile")
@db_option
@click.option(
    "--wallet", "wallet_url", required=True, metavar="URL",
    help="The operator's wallet API whose statement of the day is compared.",
)  # fmt: skip
@click.option(
    "--wallet-key", type=click.Path(path_type=Path, dir_okay=False, exists=True), required=True,
    help="The game server's key its wallet calls are signed with (the statement is asked so).",
)  # fmt: skip
@day_option
@_database_errors
def play_reconcile(db_path: Location, wallet_url: str, wallet_key: Path, day: str) -> None:
    """Compare the game server's wallet calls of the day (plays, the outbox's confirmations)
    with the wallet's statement: each difference on a line (missing, doubled, amount, unknown,
    pending); exit 0 when the two books are equal, 1 otherwise."""
    from printpipe.ledger import Ledger, recorded_calls
    from printpipe.play import operator_wallet  # noqa: F401 - its wait read first: one line if wrong
    from printpipe.play.reconcile import reconcile
    from printpipe.play.server import wallet_client

    with Ledger(db_path, read_only=True) as book:
        calls = recorded_calls(book, day)
    with wallet_client(wallet_url, wallet_key) as client:
        statement = client.statement(day=day)
    found = reconcile(day, calls, statement)
    for difference in found.differences:
        click.echo(difference)
    click.echo(found.summary())
    if not found.equal:
        sys.exit(1)


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
    click.echo(f"registered player {name} with {french.eur(balance)}")
    click.echo(f"login link (once, within 24 h): {url.rstrip('/')}/#login={token}")
