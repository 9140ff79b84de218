"""The ``printpipe`` command: parse, call a stage, print. No logic of its own.

One module per group of commands (``blocks``, ``press``, ``records``, ``ledger``,
``commitment``, ``service``, ``play``, ``wallet``); this module holds the root group and
:func:`main`, which turns every user error into one line.

The root group loads a command's module only when that command runs (or shows its own help):
``printpipe --help`` and ``--version`` import click and this module, not reportlab, numpy or
the ledger, and each command imports what it uses.  So the listing's one-line summaries are
written here, in :data:`COMMANDS`, beside where each command lives.
"""

from __future__ import annotations

import importlib
import sys

import click

from printpipe import __version__
from printpipe.cli.examples import GUIDE, with_examples
from printpipe.errors import PrintpipeError

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module:attribute under printpipe.cli, its line in `printpipe --help`)
    "audit": ("blocks:audit", "Re-check a block store, and its public commitment."),
    "claim": ("ledger:claim", "Pay a winning ticket at the office, at most once."),
    "codes": ("records:codes", "The validation codes of an auditor's CSV."),
    "commitment": ("commitment:commitment", "A block's public commitment: verify, sign, reveal."),
    "export": ("press:export", "Press PDFs of a block store (or an online game's feed)."),
    "feed": ("records:feed", "Read a unit feed (an online game's export)."),
    "generate": ("blocks:generate", "Generate a block (or packs of it) and its manifest."),
    "keys": ("blocks:keys", "Create and manage key files."),
    "ledger": ("ledger:ledger", "The lottery's validation database."),
    "manifest": ("records:manifest", "Check a secure manifest, or export its CSV."),
    "packs": ("ledger:packs", "Pack states: ship, activate, settle."),
    "play": ("play:play", "The online game's server: deals units to players."),
    "players": ("play:players", "Players of the online game (demo logins)."),
    "preflight": ("press:preflight", "Check press PDFs as a prepress intake does."),
    "proof": ("press:proof", "The proof pack the lottery approves, and its approval."),
    "prove": ("ledger:prove", "The inclusion proof of a paid ticket."),
    "run": ("blocks:run", "The main job: generate, audit, export on defaults."),
    "serve": ("service:serve", "The validation service for retailers' terminals."),
    "terminal": ("service:terminal", "The reference terminal: a key pair, signed requests."),
    "terminals": ("service:terminals", "Terminals allowed to use the service."),
    "validate": ("ledger:validate", "Answer a scanned validation code."),
    "verify-proof": ("commitment:verify_proof", "Anyone: check a ticket's inclusion proof."),
    "verify-remaining": ("commitment:verify_remaining", "Anyone: check the prizes remaining."),
    "wallet": ("wallet:wallet", "The reference operator's wallet (demo and tests)."),
}


NO_ARGS_IS_HELP: type[click.UsageError] | tuple[()] = getattr(
    click.exceptions, "NoArgsIsHelpError", ()
)
"""A group given no command (click 8.2 raises it; 8.1 printed the help and exited 0)."""


class LazyGroup(click.Group):
    """A group whose commands are imported on first use (see the module's docstring)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(f"printpipe.cli.{module}"), attribute)
        assert isinstance(command, click.Command)
        return with_examples(command, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in self.list_commands(ctx)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=GUIDE)
@click.version_option(__version__, prog_name="printpipe")
def cli() -> None:
    """printpipe: lottery instant tickets from a generated block to press PDFs."""


def main(args: list[str] | None = None) -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit status.
    ``args``: the command line without the program's name (default ``sys.argv[1:]``)."""
    try:
        cli.main(args=args, standalone_mode=False, prog_name="printpipe")
    except PrintpipeError as exc:
        click.echo(f"printpipe: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("printpipe: interrupted", err=True)
        sys.exit(130)
    except NO_ARGS_IS_HELP as exc:  # `printpipe`, `printpipe ledger`: the help, not an error
        assert exc.ctx is not None  # click's NoArgsIsHelpError always has its context
        click.echo(exc.ctx.get_help())
    except click.UsageError as exc:  # a mistyped command line: one line, and where to look
        where = exc.ctx.command_path if exc.ctx else "printpipe"
        click.echo(f"printpipe: error: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"printpipe: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
