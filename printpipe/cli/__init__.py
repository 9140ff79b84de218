"""The ``printpipe`` command: parse, call a stage, print. No logic of its own.

One module per group of commands (``blocks``, ``press``, ``records``, ``ledger``,
``commitment``, ``service``, ``play``); this module
holds the root group and :func:`main`, which turns every user error into one line.
"""

from __future__ import annotations

import sys

import click

from printpipe import __version__
from printpipe.cli import blocks, commitment, ledger, play, press, records, service
from printpipe.errors import PrintpipeError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="printpipe")
def cli() -> None:
    """printpipe: lottery instant tickets from a generated block to press PDFs."""


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit status."""
    try:
        cli.main(standalone_mode=False, prog_name="printpipe")
    except PrintpipeError as exc:
        click.echo(f"printpipe: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("printpipe: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # a mistyped command line: one line, and where to look
        where = exc.ctx.command_path if exc.ctx else "printpipe"
        click.echo(f"printpipe: error: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"printpipe: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


for command in (
    blocks.keys,
    blocks.generate,
    blocks.audit,
    press.export,
    press.preflight,
    press.proof,
    blocks.run,
    records.manifest,
    records.codes,
    records.feed,
    ledger.ledger,
    ledger.packs,
    ledger.validate,
    ledger.claim,
    ledger.prove,
    commitment.commitment,
    commitment.verify_proof,
    commitment.verify_remaining,
    service.serve,
    service.terminals,
    service.terminal,
    play.play,
    play.players,
):
    cli.add_command(command)
