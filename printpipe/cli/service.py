"""The validation service: ``serve``, the terminals registered in the ledger (``terminals``),
and the reference terminal client (``terminal``).

Parsing only: each command calls ``printpipe.service.server``, ``printpipe.ledger`` or
``printpipe.service.terminal`` with keyword arguments.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from printpipe.cli._common import keys_option, server_options, start_in_background
from printpipe.cli.ledger import (
    _database_errors,
    db_option,
    proof_out_option,
    terminal_option,
    write_answer_proof,
)
from printpipe.cli.params import PACK_REF, REASON, TERMINAL

if TYPE_CHECKING:
    from printpipe.ledger import Location, PackRef, Reason, TerminalId
    from printpipe.service.terminal import ServiceAnswer


@click.command(context_settings={"ignore_unknown_options": False})
@db_option
@keys_option
@server_options(default_port=8250)
@click.option(
    "--header-timeout", type=click.FloatRange(0.1, 600), default=10.0, show_default=True,
    help="Seconds for a request's headers to arrive (then 408, closed).",
)  # fmt: skip
@click.option(
    "--body-timeout", type=click.FloatRange(0.1, 600), default=10.0, show_default=True,
    help="Seconds for a request's body to arrive after its headers (then 408, closed).",
)  # fmt: skip
@click.option(
    "--keep-alive-timeout", type=click.FloatRange(1, 600), default=5.0, show_default=True,
    help="Seconds an idle connection is kept between requests.",
)  # fmt: skip
@click.option(
    "--max-connections", type=click.IntRange(1, 1_000_000), default=1000, show_default=True,
    help="Open connections per worker (beyond: the longest idle is closed, else 503); kept "
    "under the open-file limit.",
)  # fmt: skip
@click.option(
    "--max-header-bytes", type=click.IntRange(1024, 1 << 20), default=16384, show_default=True,
    help="A request's line and headers, in bytes (beyond: 431).",
)  # fmt: skip
@click.option(
    "--max-headers", type=click.IntRange(8, 1000), default=64, show_default=True,
    help="Header fields in a request (beyond: 431).",
)  # fmt: skip
@click.option(
    "--terminal-rate", type=click.FloatRange(0.01, 100_000), default=20.0, show_default=True,
    help="Requests a second per terminal, per worker (beyond: 429 with Retry-After).",
)  # fmt: skip
@click.option(
    "--terminal-burst", type=click.IntRange(1, 1_000_000), default=40, show_default=True,
    help="Requests a terminal may send at once before --terminal-rate applies.",
)  # fmt: skip
def serve(
    db_path: Location,
    keys_dir: Path,
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
    header_timeout: float,
    body_timeout: float,
    keep_alive_timeout: float,
    max_connections: int,
    max_header_bytes: int,
    max_headers: int,
    terminal_rate: float,
    terminal_burst: int,
) -> None:
    """The validation service for retailers' terminals: a signed JSON API over HTTP (/v1)."""
    from printpipe.service import server
    from printpipe.service.app import RateLimit
    from printpipe.service.protocol import ConnectionLimits

    if detach:
        start_in_background("serving", url_file=url_file, pid_file=pid_file, log_file=log_file)
        return
    server.serve(
        location=db_path,
        keys_dir=keys_dir,
        host=host,
        port=port,
        workers=workers,
        url_file=url_file,
        access_log=access_log,
        witness=witness,
        log_format=log_format,
        limits=ConnectionLimits(
            header_timeout_s=header_timeout,
            body_timeout_s=body_timeout,
            keep_alive_timeout_s=keep_alive_timeout,
            max_connections=max_connections,
            max_header_bytes=max_header_bytes,
            max_headers=max_headers,
        ),
        rate_limit=RateLimit(rate=terminal_rate, burst=terminal_burst),
    )


@click.group()
def terminals() -> None:
    """Terminals allowed to use the service: their public keys, retailers and roles."""


@terminals.command("add")
@click.argument("terminal_id", type=TERMINAL, metavar="ID")
@db_option
@click.option(
    "--public-key", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="The terminal's public key (printpipe terminal keygen FILE wrote FILE.pub).",
)  # fmt: skip
@click.option("--retailer", type=TERMINAL, default=None, help="The retailer it belongs to.")
@click.option(
    "--role", type=click.Choice(["retailer", "office", "platform"]), default="retailer",
    show_default=True,
    help="office: the lottery's own, acts on every pack and pays above the retailer limit; "
    "platform: the online operator's, acts for its players at printpipe play.",
)  # fmt: skip
@terminal_option("lottery", "Who registers it, for the log")
@_database_errors
def terminals_add(
    terminal_id: TerminalId,
    db_path: Location,
    public_key: Path,
    retailer: TerminalId | None,
    role: str,
    terminal: TerminalId,
) -> None:
    """Register terminal ID with its public key, for a retailer (or the office)."""
    from printpipe.keys import load_public_key
    from printpipe.ledger import Ledger
    from printpipe.service.signatures import key_id_of, raw_public_key

    key = load_public_key(
        public_key, create_with="printpipe terminal keygen FILE writes FILE and FILE.pub"
    )
    with Ledger(db_path) as book:
        record = book.add_terminal(
            terminal_id,
            public_key=raw_public_key(key),
            key_id=key_id_of(key),
            retailer=retailer,
            role=role,
            by=terminal,
        )
    click.echo(f"registered terminal {record.describe()}")


@terminals.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per terminal.")
@_database_errors
def terminals_list(db_path: Location, as_json: bool) -> None:
    """The registered terminals (read-only)."""
    from printpipe.ledger import Ledger

    with Ledger(db_path, read_only=True) as book:
        records = book.terminals()
    for record in records:
        if as_json:
            data = {k: v for k, v in asdict(record).items() if k != "public_key"}
            click.echo(json.dumps(data, sort_keys=True))
        else:
            click.echo(record.describe())
    if not records and not as_json:
        click.echo("no terminal registered")


@terminals.command("revoke")
@click.argument("terminal_id", type=TERMINAL, metavar="ID")
@db_option
@click.option("--reason", type=REASON, required=True, help="Why, for the log.")
@terminal_option("lottery", "Who revokes it, for the log")
@_database_errors
def terminals_revoke(
    terminal_id: TerminalId, db_path: Location, reason: Reason, terminal: TerminalId
) -> None:
    """Revoke a terminal for good: every request it signs is refused (401) from now on."""
    from printpipe.ledger import Ledger

    with Ledger(db_path) as book:
        click.echo(book.revoke_terminal(terminal_id, reason=reason, by=terminal))


@click.group()
def terminal() -> None:
    """The reference terminal: a key pair, and signed requests to the service."""


@terminal.command("keygen")
@click.argument("key_file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE")
def terminal_keygen(key_file: Path) -> None:
    """A new Ed25519 key pair: FILE (private, 0600, stays on the terminal) and FILE.pub (for
    printpipe terminals add)."""
    from printpipe.service.signatures import generate_terminal_key

    key_id = generate_terminal_key(key_file)
    click.echo(f"wrote {key_file} and {key_file}.pub (key id {key_id})")


server_option = click.option(
    "--server", required=True, metavar="URL", help="The service, e.g. http://127.0.0.1:8250."
)
key_option = click.option(
    "--key", "key_file", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="The terminal's private key (printpipe terminal keygen).",
)  # fmt: skip
json_option = click.option("--json", "as_json", is_flag=True, help="The answer as JSON.")


def _show(answer: ServiceAnswer, as_json: bool, ok: bool) -> None:
    from printpipe.errors import PrintpipeError

    if not answer.is_answer and answer.status != 200:
        raise PrintpipeError(
            f"the service refused the request (HTTP {answer.status}): {answer.text}"
        )
    click.echo(json.dumps(answer.data, sort_keys=True) if as_json else answer.text)
    if not ok:
        sys.exit(1)


@terminal.command("validate")
@click.argument("code")
@server_option
@key_option
@json_option
def terminal_validate(code: str, server: str, key_file: Path, as_json: bool) -> None:
    """Ask the service what a scanned CODE is worth (never pays)."""
    from printpipe.service.terminal import open_client

    with open_client(server, key_file) as client:
        answer = client.validate(code)
    _show(answer, as_json, answer.ok)


@terminal.command("claim")
@click.argument("code")
@server_option
@key_option
@click.option(
    "--idempotency-key", default=None,
    help="Reuse the key of an earlier attempt whose answer was lost (default: a new one).",
)  # fmt: skip
@proof_out_option
@json_option
def terminal_claim(
    code: str,
    server: str,
    key_file: Path,
    idempotency_key: str | None,
    proof_out: Path | None,
    as_json: bool,
) -> None:
    """Pay the ticket of CODE through the service (retried with one Idempotency-Key; exit 0
    only when paid); the answer of a paid ticket carries its inclusion proof (--proof-out)."""
    from printpipe.service.terminal import open_client

    with open_client(server, key_file) as client:
        answer = client.claim(code, idempotency_key=idempotency_key)
    _show(answer, as_json, answer.outcome == "PAID")  # exits unless paid
    if proof_out is not None:
        write_answer_proof(answer.data.get("proof"), proof_out)


@terminal.command("activate")
@click.argument("pack", type=PACK_REF)
@server_option
@key_option
def terminal_activate(pack: PackRef, server: str, key_file: Path) -> None:
    """Activate a PACK received from the lottery (PPPPPP or GGGG-PPPPPP)."""
    from printpipe.service.terminal import open_client

    with open_client(server, key_file) as client:
        answer = client.activate(str(pack))
    _show(answer, False, answer.status == 200)


@terminal.command("pack")
@click.argument("pack", type=PACK_REF)
@server_option
@key_option
def terminal_pack(pack: PackRef, server: str, key_file: Path) -> None:
    """A pack's state (PPPPPP or GGGG-PPPPPP)."""
    from printpipe.service.terminal import open_client

    with open_client(server, key_file) as client:
        answer = client.pack_state(str(pack))
    _show(answer, False, answer.status == 200)
