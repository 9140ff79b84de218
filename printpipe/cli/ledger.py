"""The lottery's validation database: import, settings, pack states, validate, claim, locks,
the audit log's check, a paid ticket's inclusion proof, the prizes remaining, a block's
closure.

Parsing only.  Strings become typed values through the parameter types of ``cli/params.py``,
which call the library's own parsers (``printpipe.ledger.inputs``); each command then calls the
library with keyword arguments.  An input refused there exits 2 with one line, and a ledger
command still records the refusal in the ledger's audit log (:class:`AuditedCommand`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from printpipe.cli._common import (
    identity_option,
    keys_option,
    lottery_identity,
    lottery_key_option,
    manifest_game,
    producer_key_option,
    quiet_option,
    verified_manifest,
)
from printpipe.cli.params import LEDGER_LOCATION, PACK_REF, REASON, REFUSED, TERMINAL, TICKET_REF
from printpipe.errors import PrintpipeError

if TYPE_CHECKING:
    from printpipe.ids import TicketId
    from printpipe.ledger import LedgerKey, Location, PackRef, Reason, TerminalId


class AuditedCommand(click.Command):
    """A ledger command whose refused input is still appended to the ledger's audit log.

    ``--db`` is parsed first (eager), so when another parameter is refused the ledger is
    known; the refusal is recorded there (escaped and bounded), then shown as one line.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            db_path = ctx.params.get("db_path")
            if db_path is not None:
                refused = ctx.meta.get(REFUSED, {})
                terminal = refused.get("terminal", ctx.params.get("terminal", "unknown"))
                _record_refusal(db_path, str(self.name), str(terminal), given, exc)
            raise


def _record_refusal(
    db_path: Location, action: str, terminal: str, given: list[str], exc: click.UsageError
) -> None:
    from printpipe.ledger import database_errors, record_refusal

    # With no ledger to record it in, the refusal is still the one line shown.
    with contextlib.suppress(PrintpipeError, *database_errors()):
        record_refusal(
            db_path,
            action=action,
            terminal_text=terminal,
            given=" ".join(given),
            reason=exc.format_message(),
        )


def _database_errors(function: Callable[..., None]) -> Callable[..., None]:
    """A database failure (locked too long, disk full, damaged file, server gone) is one line,
    not a trace."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from printpipe.ledger import database_errors

        try:
            function(*args, **kwargs)
        except database_errors() as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            raise PrintpipeError(f"validation database: {message}") from None

    return wrapper


db_option = click.option(
    "--db",
    "db_path",
    type=LEDGER_LOCATION,
    required=True,
    is_eager=True,  # known before any other input is refused: see AuditedCommand
    help="Validation database: an SQLite file, or postgresql://USER@HOST:PORT/DATABASE.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="One JSON object per answer.")


def terminal_option(default: str | None, help_text: str) -> Callable[[Any], Any]:
    """``--terminal``, required when there is no default (click 8.3 takes ``default=None`` for
    a given value, so it is not passed at all)."""
    given = {"default": default, "show_default": True} if default else {"required": True}
    return click.option(
        "--terminal", type=TERMINAL, help=f"{help_text} (1 to 64 of A-Z a-z 0-9 . _ : -).", **given
    )


@click.group()
def ledger() -> None:
    """The lottery's validation database: import manifests, settings, locks."""


FileArgument = click.Path(path_type=Path, dir_okay=False)
block_options = (
    click.option("--game", default=None, help="The block's game id (when the ledger has several)."),
    click.option(
        "--block", type=click.IntRange(min=1), default=None,
        help="The block number (when the ledger holds several commitments).",
    ),
)  # fmt: skip


def _block_options(function: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(block_options):
        function = option(function)
    return function


@ledger.command("import")
@click.argument("file", type=FileArgument)
@identity_option
@db_option
@click.option(
    "--commitment", "commitment_path", type=FileArgument, default=None,
    help="The block's countersigned commitment.json, FILE being that block's manifest: the "
    "ledger keeps the tree and answers every payment with its inclusion proof.",
)  # fmt: skip
@producer_key_option
@lottery_key_option
@keys_option
@quiet_option
@_database_errors
def ledger_import(
    file: Path,
    identity: Path | None,
    db_path: Location,
    commitment_path: Path | None,
    producer_key: Path | None,
    lottery_key: Path | None,
    keys_dir: Path,
    quiet: bool,
) -> None:
    """Load manifest FILE into the database (created if absent); the same one twice: no-op.
    VIRNs are stored as HMACs under KEYS/ledger.key (created if the folder has none)."""
    from printpipe.cli._common import public_key
    from printpipe.commitment.statement import verified_commitment
    from printpipe.keys import LOTTERY_SIGNING_PUB, PRODUCER_SIGNING_PUB, ensure_ledger_key
    from printpipe.ledger import import_manifest, load_ledger_key
    from printpipe.progress import progress_bar

    verified = verified_manifest(file, keys_dir, producer_key)
    commitment = None
    if commitment_path is not None:
        commitment = verified_commitment(
            path=commitment_path,
            producer_key=public_key(producer_key, keys_dir, PRODUCER_SIGNING_PUB),
            lottery_key=public_key(lottery_key, keys_dir, LOTTERY_SIGNING_PUB),
        )
    game = manifest_game(verified)
    key = lottery_identity(keys_dir, identity)
    created = ensure_ledger_key(keys_dir)
    if created is not None:
        click.echo(f"created the ledger key {created}: keep it with the ledger's backups", err=True)
    ledger_key = load_ledger_key(keys_dir)
    with progress_bar(int(verified.header["records"]), "import", "records", not quiet) as bar:
        summary = import_manifest(
            db_path,
            manifest=verified,
            game=game,
            identity=key,
            key=ledger_key,
            commitment=commitment,
            progress=bar.update,
        )
    click.echo(summary)


@ledger.command("remaining")
@db_option
@click.option(
    "--out", type=FileArgument, default=None,
    help="Write the signed prizes remaining of one block to this file (without it: each "
    "block's standing, printed).",
)  # fmt: skip
@_block_options
@keys_option
@_database_errors
def ledger_remaining(
    db_path: Location, out: Path | None, game: str | None, block: int | None, keys_dir: Path
) -> None:
    """What is left of each committed block, read in one snapshot: its units, for an online
    block its place in the dealing order and its units dealt and left to deal, its lots and
    EUR not yet paid (or credited), and the total per game.  With --out, the prizes remaining
    of one block: per tier the lots committed, paid (an online block's: won by plays, each
    unit proven with KEYS/ledger.key) with each one's proof, and still in the
    field, signed with KEYS/lottery-signing.key (printpipe-remaining/1; check it: printpipe
    verify-remaining)."""
    from printpipe.keys import LEDGER_KEY, LOTTERY_SIGNING_KEY, load_signing_key
    from printpipe.ledger import blocks_remaining, publish_remaining

    if out is None:
        click.echo(blocks_remaining(db_path, game=game, block=block))
        return
    remaining = publish_remaining(
        db_path,
        out=out,
        signing_key=load_signing_key(keys_dir, LOTTERY_SIGNING_KEY),
        key=_ledger_key(keys_dir) if (keys_dir / LEDGER_KEY).exists() else None,
        game=game,
        block=block,
    )
    click.echo(f"wrote {out}: {remaining.describe()}")


@ledger.command("close", cls=AuditedCommand)
@db_option
@click.option(
    "--closed-on", type=click.DateTime(formats=["%Y-%m-%d"]), required=True,
    help="The day the block closed: its sale ended and its claim period ran out (YYYY-MM-DD).",
)  # fmt: skip
@_block_options
@terminal_option("lottery", "Who closes the block, for the log")
@_database_errors
def ledger_close(
    db_path: Location,
    closed_on: dt.datetime,
    game: str | None,
    block: int | None,
    terminal: TerminalId,
) -> None:
    """Record that a committed block closed: no ticket of it is paid after that day (BLOCK
    CLOSED); then its leaves may be revealed (printpipe commitment reveal)."""
    from printpipe.ledger import close_block

    click.echo(
        close_block(db_path, closed_on=closed_on.date(), terminal=terminal, game=game, block=block)
    )


def _setting_option(flag: str, help_text: str) -> Callable[[Any], Any]:
    return click.option(flag, type=click.IntRange(min=1), default=None, help=help_text)


@ledger.command("config", cls=AuditedCommand)
@db_option
@_setting_option("--retailer-limit", "Highest prize (EUR) a retailer pays.")
@_setting_option("--max-virn-failures", "Wrong VIRNs (from 2 terminals or more) locking a ticket.")
@_setting_option("--max-terminal-virn-failures", "Wrong VIRNs throttling a terminal.")
@_setting_option("--terminal-window-hours", "How long a terminal's wrong VIRNs count.")
@_setting_option("--daily-stake-limit", "What an online player may stake in a day (EUR).")
@terminal_option("lottery", "Who changes the settings, for the log")
@_database_errors
def ledger_config(
    db_path: Location,
    retailer_limit: int | None,
    max_virn_failures: int | None,
    max_terminal_virn_failures: int | None,
    terminal_window_hours: int | None,
    daily_stake_limit: int | None,
    terminal: TerminalId,
) -> None:
    """Show the settings, or change them (audited). Showing never writes to the database."""
    from printpipe.ledger import configure

    settings = configure(
        db_path,
        terminal=terminal,
        retailer_limit_eur=retailer_limit,
        max_virn_failures=max_virn_failures,
        max_terminal_virn_failures=max_terminal_virn_failures,
        terminal_window_hours=terminal_window_hours,
        daily_stake_limit_eur=daily_stake_limit,
    )
    click.echo(settings.describe())


@ledger.command("upgrade")
@db_option
@keys_option
@terminal_option("lottery", "The office terminal that upgrades, for the log")
@_database_errors
def ledger_upgrade(db_path: Location, keys_dir: Path, terminal: TerminalId) -> None:
    """Bring a ledger of an earlier printpipe to this one's layout, in place: its tickets,
    payments, plays, log and terminals kept, what the new layout binds entered with the ledger
    key (KEYS/ledger.key), then the whole ledger checked (stop the service and the game server
    first)."""
    from printpipe.ledger import upgrade

    done = upgrade(db_path, terminal=terminal, key=_ledger_key(keys_dir))
    if done.before == done.after:
        click.echo(f"validation database {db_path} is already layout {done.after}: nothing to do")
    else:
        click.echo(
            f"validation database {db_path} upgraded from layout {done.before} to {done.after}: "
            f"{done.describe()}; the whole ledger checked as verify-log does"
        )


@ledger.command("locks")
@db_option
@json_option
@_database_errors
def ledger_locks(db_path: Location, as_json: bool) -> None:
    """Locked tickets and throttled terminals, for the office to review (read-only)."""
    from printpipe.ledger import Ledger

    with Ledger(db_path, read_only=True) as book:
        locks = book.locks()
    if as_json:
        click.echo(json.dumps(asdict(locks), sort_keys=True))
        return
    for ticket in locks.tickets:
        click.echo(
            f"locked ticket {ticket.serial}: {ticket.failures} wrong validation numbers from "
            f"{ticket.terminals} terminals, the last at {ticket.last_at}"
        )
    for terminal in locks.terminals:
        click.echo(
            f"throttled terminal {terminal.terminal}: {terminal.failures} wrong validation "
            f"numbers since {terminal.since}, until {terminal.until}"
        )
    if not locks.tickets and not locks.terminals:
        click.echo("no locked ticket, no throttled terminal")


@ledger.command("unlock", cls=AuditedCommand)
@click.argument("ticket", type=TICKET_REF)
@db_option
@click.option("--reason", type=REASON, required=True, help="Why, after inspecting the ticket.")
@terminal_option("lottery", "The office terminal that unlocks, for the log")
@_database_errors
def ledger_unlock(
    ticket: TicketId, db_path: Location, reason: Reason, terminal: TerminalId
) -> None:
    """Release a locked ticket (serial GGGG-PPPPPP-TTT-C) after the office has inspected it;
    its holder can then be paid at the office (printpipe claim)."""
    from printpipe.ledger import Ledger

    with Ledger(db_path) as book:
        click.echo(book.unlock(ticket, reason=reason, terminal=terminal))


@ledger.command("verify-log")
@db_option
@keys_option
@click.option(
    "--checkpoint", "checkpoint_files", multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A checkpoint (printpipe ledger checkpoint) the log must still hold; repeatable.",
)  # fmt: skip
@click.option(
    "--witness", "witness_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
    help="Where the servers keep the ledger's witness (their --witness; default: KEYS/witness).",
)  # fmt: skip
@click.option("--no-witness", is_flag=True, help="Do not check the servers' witness.")
@_database_errors
def ledger_verify_log(
    db_path: Location,
    keys_dir: Path,
    checkpoint_files: tuple[Path, ...],
    witness_dir: Path | None,
    no_witness: bool,
) -> None:
    """Check the ledger (read-only) under the ledger key: every sealed entry chained to the
    one before, the head, every payment and play bound to its entry, every money row of the
    online game bound (MACs, balances, the deal order, each unit's committed lot), the newest
    witness the servers kept and the given checkpoints; exit 0, else name what was edited,
    inserted, deleted or rewound."""
    from printpipe.keys import LOTTERY_SIGNING_PUB, load_public_key
    from printpipe.ledger import (
        CheckpointRefused,
        Ledger,
        checkpoint_order_problem,
        default_witness_folder,
        describe,
        read_checkpoint,
        read_witness,
    )

    Ledger(db_path, read_only=True).close()  # a file that is no ledger: said before the key
    checkpoints = []
    if checkpoint_files:
        lottery = load_public_key(keys_dir / LOTTERY_SIGNING_PUB)
        try:
            checkpoints = [
                read_checkpoint(f.read_bytes(), lottery, source=str(f)) for f in checkpoint_files
            ]
        except CheckpointRefused as exc:
            raise PrintpipeError(f"checkpoint refused: {exc}") from None
        problem = checkpoint_order_problem(checkpoints)
        if problem is not None:
            raise PrintpipeError(f"checkpoint refused: {problem}")
    key = _ledger_key(keys_dir)
    with Ledger(db_path, read_only=True, key=key) as book:
        for checkpoint in checkpoints:
            if checkpoint.ledger != key.fingerprint:
                raise PrintpipeError(f"checkpoint refused: {checkpoint.source} is another ledger's")
        witnessed = ""
        if not no_witness:
            folder = witness_dir or default_witness_folder(keys_dir)
            ledger_id = book.query("SELECT value FROM ledger_meta WHERE key = 'ledger_id'")
            try:
                witness = read_witness(folder, str(ledger_id[0][0]), key) if ledger_id else None
            except CheckpointRefused as exc:
                raise PrintpipeError(f"witness refused: {exc}") from None
            if witness is None:
                witnessed = f"; no witness of this ledger in {folder}"
            else:
                checkpoints.append(witness)
                witnessed = f"; {witness.source} (entry {witness.seq}, {witness.at}) holds"
        report = book.verify_log(checkpoints=checkpoints)
    if not report.ok:
        raise PrintpipeError(f"audit log of {db_path} broken: {describe(report)}")
    click.echo(f"audit log of {db_path}: {describe(report)}{witnessed}")


@ledger.command("checkpoint")
@db_option
@keys_option
@click.option(
    "--out", "out", type=click.Path(path_type=Path, dir_okay=False), required=True,
    help="The checkpoint file to write (never overwritten): give it to an outside witness.",
)  # fmt: skip
@_database_errors
def ledger_checkpoint(db_path: Location, keys_dir: Path, out: Path) -> None:
    """Seal the log and sign its head with the lottery's signing key: a checkpoint an outside
    witness keeps, so that nobody (the ledger key's holder included) can change the log before
    it unseen (ledger verify-log --checkpoint FILE)."""
    from printpipe.atomic import write_atomic
    from printpipe.keys import LOTTERY_SIGNING_KEY, load_signing_key
    from printpipe.ledger import Checkpoint, Ledger, format_time, write_checkpoint

    if out.exists():
        raise PrintpipeError(f"{out} already exists: a checkpoint is never overwritten")
    signing = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    with Ledger(db_path, key=_ledger_key(keys_dir)) as book:
        seq, head = book.head()
        at = format_time(book.clock())
        assert book.key is not None
        checkpoint = Checkpoint(book.key.fingerprint, seq, head, at)
    write_atomic(out, write_checkpoint(checkpoint, signing))
    click.echo(f"wrote {out}: the audit log of {db_path} at entry {seq} ({at}), head {head.hex()}")


@click.group()
def packs() -> None:
    """Pack states: issued -> activated (by the retailer on receipt) -> settled."""


def _pack_command(state: str) -> Callable[..., None]:
    @click.argument("pack_refs", nargs=-1, required=True, type=PACK_REF, metavar="PACK...")
    @db_option
    @terminal_option("lottery", "Who moves the packs, for the log")
    @_database_errors
    def command(pack_refs: tuple[PackRef, ...], db_path: Location, terminal: TerminalId) -> None:
        from printpipe.ledger import Ledger, PackScope

        with Ledger(db_path) as book:  # the command line at the database is the office
            lines = book.set_pack_state(
                pack_refs, state=state, terminal=terminal, scope=PackScope.office()
            )
        for line in lines:
            click.echo(line)

    return command


packs.command(
    "activate", cls=AuditedCommand, help="Activate packs (PPPPPP or GGGG-PPPPPP); all or none."
)(_pack_command("activated"))


@packs.command("ship", cls=AuditedCommand)
@click.argument("pack_refs", nargs=-1, required=True, type=PACK_REF, metavar="PACK...")
@db_option
@click.option("--retailer", type=TERMINAL, required=True, help="The retailer receiving the packs.")
@terminal_option("lottery", "Who ships the packs, for the log")
@_database_errors
def packs_ship(
    pack_refs: tuple[PackRef, ...], db_path: Location, retailer: TerminalId, terminal: TerminalId
) -> None:
    """Ship issued packs to a retailer, all or none: only its terminals may then activate
    them on receipt, validate and claim their tickets over the service."""
    from printpipe.ledger import Ledger

    with Ledger(db_path) as book:
        for line in book.ship_packs(pack_refs, retailer=retailer, terminal=terminal):
            click.echo(line)


packs.command(
    "settle",
    cls=AuditedCommand,
    help="Settle activated packs (PPPPPP or GGGG-PPPPPP); all or none.",
)(_pack_command("settled"))


def _print_answer(answer: Any, as_json: bool, ok: bool, *, proof_out: Path | None = None) -> None:
    click.echo(json.dumps(answer.as_json(), sort_keys=True) if as_json else answer.text)
    if proof_out is not None and ok:
        write_answer_proof(answer.extra.get("proof"), proof_out)
    if not ok:
        sys.exit(1)


def write_answer_proof(document: Any, out: Path) -> None:
    """A paid claim's proof to ``out``, or a line saying why there is none."""
    from printpipe.commitment.inclusion import write_proof_document

    if document is None:
        click.echo(
            f"no proof written to {out}: the ledger holds no commitment of this ticket's block",
            err=True,
        )
        return
    write_proof_document(out, document, source="in the answer")
    click.echo(f"wrote {out}: the ticket's inclusion proof")


def _ledger_key(keys_dir: Path) -> LedgerKey:
    from printpipe.ledger import load_ledger_key

    return load_ledger_key(keys_dir)


@click.command(cls=AuditedCommand, context_settings={"ignore_unknown_options": True})
@click.argument("code")
@db_option
@terminal_option("unknown", "Terminal id, for the log")
@keys_option
@json_option
@_database_errors
def validate(
    code: str, db_path: Location, terminal: TerminalId, keys_dir: Path, as_json: bool
) -> None:
    """Answer a scanned CODE: the validation code (25 digits, or as printed:
    GGGG-PPPPPP-TTT VVVVVVVVVV KK), or the inventory code or serial (pack state only)."""
    from printpipe.ledger import Ledger, PackScope

    with Ledger(db_path, key=_ledger_key(keys_dir)) as book:  # the office's, at the database
        answer = book.validate(code, terminal=terminal, scope=PackScope.office())
    _print_answer(answer, as_json, answer.ok)


proof_out_option = click.option(
    "--proof-out", type=FileArgument, default=None,
    help="Write the paid ticket's inclusion proof there (0600): the winner's receipt.",
)  # fmt: skip


@click.command(cls=AuditedCommand, context_settings={"ignore_unknown_options": True})
@click.argument("code")
@db_option
@terminal_option(None, "The office desk's id, recorded with the payment")
@proof_out_option
@keys_option
@json_option
@_database_errors
def claim(
    code: str,
    db_path: Location,
    terminal: TerminalId,
    proof_out: Path | None,
    keys_dir: Path,
    as_json: bool,
) -> None:
    """Pay the ticket of validation CODE, at most once (exit 0 only when paid now), any prize:
    the command line at the database is the lottery's office (it holds the ledger and its key).
    Retailers' terminals use the service, where only an office terminal pays big prizes. A
    paid ticket of a block whose commitment the ledger holds is answered with its inclusion
    proof (in --json, and to --proof-out)."""
    from printpipe.ledger import Ledger, PackScope

    with Ledger(db_path, key=_ledger_key(keys_dir)) as book:
        answer = book.claim(code, terminal=terminal, scope=PackScope.office())
    _print_answer(answer, as_json, answer.outcome == "PAID", proof_out=proof_out)


@click.command(cls=AuditedCommand, context_settings={"ignore_unknown_options": True})
@click.argument("code")
@db_option
@click.option(
    "--out", type=FileArgument, default=None,
    help="Where to write the proof [default: proof-SERIAL.json].",
)  # fmt: skip
@terminal_option("lottery", "Who asks, for the log")
@keys_option
@_database_errors
def prove(
    code: str, db_path: Location, out: Path | None, terminal: TerminalId, keys_dir: Path
) -> None:
    """Write the inclusion proof of a paid ticket, given its validation CODE: its serial,
    prize, VIRN and salt, and the hashes up to the committed root (printpipe verify-proof
    checks it). Refused for a ticket not paid: a proof tells the prize."""
    from printpipe.ledger import write_ticket_proof

    serial, path = write_ticket_proof(
        db_path, code=code, key=_ledger_key(keys_dir), terminal=terminal, out=out
    )
    click.echo(f"wrote {path}: the inclusion proof of paid ticket {serial}")
