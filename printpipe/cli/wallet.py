"""The reference wallet: ``wallet serve``, ``wallet deposit``, ``wallet statement``.

Parsing only: each command calls ``printpipe.wallet.server`` or ``printpipe.wallet.store``.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe import french
from printpipe.cli._common import server_options, start_in_background
from printpipe.cli.params import EUROS, LEDGER_LOCATION, PLAYER
from printpipe.errors import InvalidInput

if TYPE_CHECKING:
    from printpipe.ledger import Location
    from printpipe.wallet.app import Faults


wallet_db_option = click.option(
    "--db", "db_path", type=LEDGER_LOCATION, required=True,
    help="The wallet's own database: an SQLite file (created if absent) or postgresql://... "
    "(an empty database, or one it created).",
)  # fmt: skip


def _faults(given: tuple[str, ...], delay: float, seed: int | None) -> Faults:
    from printpipe.wallet.app import FAULT_KINDS, Faults

    rates: dict[str, float] = {}
    for text in given:
        name, _, rate = text.partition("=")
        try:
            value = float(rate)
        except ValueError:
            value = -1.0
        if name not in FAULT_KINDS or not 0.0 <= value <= 1.0:
            raise InvalidInput(
                f"--fault {text}: KIND=RATE, KIND one of {', '.join(FAULT_KINDS)}, RATE from 0 to 1"
            )
        rates[name] = value
    return Faults(**rates, delay_s=delay, seed=seed)


@click.group()
def wallet() -> None:
    """The reference wallet: the operator's side in miniature (its own database)."""


@wallet.command("serve")
@wallet_db_option
@click.option(
    "--trust", type=click.Path(path_type=Path, dir_okay=False), multiple=True, required=True,
    help="A game server's public key (printpipe terminal keygen FILE wrote FILE.pub); repeat "
    "for several.",
)  # fmt: skip
@server_options(default_port=8790, witness=False)
@click.option(
    "--fault", "faults", multiple=True, metavar="KIND=RATE",
    help="Testing: inject a fault in RATE (0 to 1) of the debits, credits and cancels: lose "
    "(the answer lost after the commit), error (503, nothing done), delay (--fault-delay).",
)  # fmt: skip
@click.option(
    "--fault-delay", type=click.FloatRange(0, 600), default=2.0, show_default=True,
    help="Testing: seconds a delayed answer waits.",
)  # fmt: skip
@click.option("--fault-seed", type=int, default=None, help="Testing: the faults' random seed.")
def wallet_serve(
    db_path: Location,
    trust: tuple[Path, ...],
    host: str,
    port: int,
    workers: int,
    url_file: Path | None,
    access_log: bool,
    log_format: str,
    detach: bool,
    pid_file: Path | None,
    log_file: Path | None,
    faults: tuple[str, ...],
    fault_delay: float,
    fault_seed: int | None,
) -> None:
    """Serve the operator's wallet API (docs/wallet-api.md) to the game servers it trusts."""
    from printpipe.wallet import server

    injected = _faults(faults, fault_delay, fault_seed)  # refused before going to the background
    if detach:
        start_in_background("wallet at", url_file=url_file, pid_file=pid_file, log_file=log_file)
        return
    server.serve(
        location=db_path,
        trust=list(trust),
        host=host,
        port=port,
        workers=workers,
        url_file=url_file,
        access_log=access_log,
        log_format=log_format,
        faults=injected,
    )


@wallet.command("deposit")
@click.argument("player", type=PLAYER)
@click.argument("amount", type=EUROS, metavar="EUR")
@wallet_db_option
def wallet_deposit(player: str, amount: int, db_path: Location) -> None:
    """Put EUR on PLAYER's account (opened if new): the operator's own business, for a demo."""
    from printpipe.wallet.store import WalletStore

    if amount <= 0:
        raise InvalidInput("a deposit is more than 0 EUR")
    with WalletStore(db_path) as store:
        balance = store.deposit(player=player, amount_cents=amount, now=dt.datetime.now(dt.UTC))
    click.echo(f"deposited {french.eur(amount)} for {player}: balance {french.eur(balance)}")


@wallet.command("statement")
@wallet_db_option
@click.option("--day", required=True, metavar="YYYY-MM-DD", help="The day (UTC).")
def wallet_statement(db_path: Location, day: str) -> None:
    """The game servers' calls recorded on a day, and their totals (JSON)."""
    from printpipe.wallet.api import BadCall, check_day
    from printpipe.wallet.store import WalletStore

    try:
        check_day(day)
    except BadCall as exc:
        raise InvalidInput(f"--day {day}: {exc}") from None
    with WalletStore(db_path) as store:
        statement = store.statement(day=day)
    click.echo(json.dumps(statement.as_json(), indent=1, sort_keys=True))
