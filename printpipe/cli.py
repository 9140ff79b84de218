"""The ``printpipe`` command: parse, call a stage, print. No logic of its own."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from printpipe import __version__
from printpipe.errors import PrintpipeError
from printpipe.export import DEFAULT_CHUNK_PACKS
from printpipe.keys import DEMO_KEYS_DIR, PRODUCER_SIGNING_PUB

DEFAULT_GAME = "chien-chat"
DEFAULT_OUT = Path("printpipe-out")
RUN_EXPORT_PACKS = "1:200"
"""What `printpipe run` exports: 200 packs, 25,000 tickets, a few seconds."""

keys_option = click.option(
    "--keys",
    "keys_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEMO_KEYS_DIR,
    show_default=True,
    help="Folder of key files (printpipe keys init).",
)
definition_option = click.option(
    "--definition",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Game definition to use instead of templates/GAME/game.toml.",
)
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
scheduler_option = click.option(
    "--scheduler",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Run the chunks on this Dask scheduler's workers (pip install printpipe[dask]).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="printpipe")
def cli() -> None:
    """printpipe: lottery instant tickets from a generated block to press PDFs."""


@cli.group()
def keys() -> None:
    """Create and manage key files."""


@keys.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
def keys_init(directory: Path) -> None:
    """Create the two secrets and both key pairs in DIRECTORY (mode 0600, never overwritten)."""
    from printpipe.keys import init_keys

    for path in init_keys(directory):
        click.echo(f"created {path}")


@cli.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option(
    "--block", type=click.IntRange(1, 999), default=None, help="Block number [default: 1]."
)
@click.option(
    "--blocks",
    default=None,
    metavar="FIRST:LAST",
    help="Several blocks, each into OUT/GAME-block-NNNN (finished ones are kept).",
)
@keys_option
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Block store folder [default: printpipe-out/GAME-block-NNNN]; with --blocks, the "
    "parent folder [default: printpipe-out].",
)
@click.option("--packs", default=None, help="Only packs FIRST:LAST of the block (1-based).")
@click.option("--force", is_flag=True, help="Replace an existing block store.")
@scheduler_option
@definition_option
@quiet_option
def generate(
    game_id: str,
    block: int | None,
    blocks: str | None,
    keys_dir: Path,
    out: Path | None,
    packs: str | None,
    force: bool,
    scheduler: str | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Generate a block (or a pack range of it), or several blocks, into block stores."""
    if blocks is None:
        block = block or 1
        out = out or DEFAULT_OUT / _block_dir_name(game_id, block)
        _generate(
            game_id, [block], keys_dir, {block: out}, packs, force, quiet, definition, scheduler
        )
        return
    if block is not None:
        raise PrintpipeError("give --block or --blocks, not both")
    numbers = _parse_blocks(blocks)
    outs = {n: (out or DEFAULT_OUT) / _block_dir_name(game_id, n) for n in numbers}
    _generate(game_id, numbers, keys_dir, outs, packs, force, quiet, definition, scheduler)


def _parse_blocks(text: str) -> list[int]:
    """``FIRST:LAST`` (inclusive) or a single ``N``: the block numbers of an emission."""
    first, sep, last = text.partition(":")
    last = last if sep else first
    if not (first.strip().isdigit() and last.strip().isdigit()):
        raise PrintpipeError(f"--blocks {text!r} must be FIRST:LAST, e.g. 1:10")
    numbers = list(range(int(first), int(last) + 1))
    if not numbers or not 1 <= numbers[0] <= numbers[-1] <= 999:
        raise PrintpipeError(f"--blocks {text!r} must be within 1:999, FIRST <= LAST")
    return numbers


@cli.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@keys_option
@click.option(
    "--producer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Producer's public key [default: KEYS/producer-signing.pub].",
)
@definition_option
@quiet_option
def audit(
    block_dir: Path,
    keys_dir: Path,
    producer_key: Path | None,
    definition: Path | None,
    quiet: bool,
) -> None:
    """Re-check a block store from its files alone; exit 0 only if everything holds."""
    if not _audit(block_dir, producer_key or keys_dir / PRODUCER_SIGNING_PUB, quiet, definition):
        sys.exit(1)


@cli.command()
@click.argument("block_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    required=True,
    help="PRINT_DIR: where the press PDFs, job.json and manifest.ppm go.",
)
@click.option("--packs", default=None, help="Only packs FIRST:LAST of the block (1-based).")
@keys_option
@click.option(
    "--sheet", default="SRA3", show_default=True, help="Press sheet: A3, SRA3 or WxH (mm)."
)
@click.option(
    "--template",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Ticket template [default: templates/GAME/ticket.toml].",
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
    type=click.Choice(["plate", "panel", "none"]),
    default="plate",
    show_default=True,
    help="plate: ScratchOff spot plate (press); panel: silver proof panels; none: revealed.",
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
    packs: str | None,
    keys_dir: Path,
    sheet: str,
    template: Path | None,
    workers: int | None,
    chunk_packs: int,
    coating: str,
    scheduler: str | None,
    collect: bool,
    quiet: bool,
) -> None:
    """Press-ready PDFs of a block store (or a pack range), job.json and the run's manifest.

    For a game whose output is a feed (an online game), the unit feed instead of PDFs; the
    press options (--sheet, --template, --workers, --chunk-packs, --coating) do not apply.
    """
    from printpipe.export import export_block

    started = time.perf_counter()
    job = export_block(
        block_dir,
        out_dir,
        packs,
        keys_dir,
        sheet,
        template,
        workers,
        chunk_packs,
        coating,
        not quiet,
        scheduler,
        collect,
    )
    elapsed = time.perf_counter() - started
    feed = job.get("output") == "feed"
    what = (
        f"the unit feed {job['files'][0]['path']}" if feed else f"{len(job['files'])} press PDF(s)"
    )
    click.echo(
        f"exported {job['tickets']:,} {'units' if feed else 'tickets'} (packs "
        f"{job['packs']['first']} to "
        f"{job['packs']['last']}) to {what} in {out_dir} "
        f"in {elapsed:.1f} s; job.json and {job['manifest']} written"
    )


@cli.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True, help="Game id.")
@click.option(
    "--out", "out_dir", type=click.Path(path_type=Path), required=True, help="PROOF_DIR to write."
)
@click.option("--force", is_flag=True, help="Replace an existing PROOF_DIR.")
@click.option(
    "--from-block",
    "block_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Also proof real press sheets of this block store, and plot it per pack.",
)
@click.option("--packs", default=None, help="Pack range of the press file [default: first 40].")
@click.option("--sheets", default="1", show_default=True, help="Press sheets, e.g. 1,3,5-7.")
@click.option("--sheet", default="SRA3", show_default=True, help="A3, SRA3 or WxH (mm).")
@click.option(
    "--coating",
    type=click.Choice(["plate", "panel", "none"]),
    default="plate",
    show_default=True,
    help="Coating of the press sheets.",
)
@keys_option
def proof(
    game_id: str,
    out_dir: Path,
    force: bool,
    block_dir: Path | None,
    packs: str | None,
    sheets: str,
    sheet: str,
    coating: str,
    keys_dir: Path,
) -> None:
    """The proof pack the lottery signs: cover, specimens, symbol sheet, PNG previews."""
    from printpipe.proof import PressRequest, make_proof

    press = PressRequest(block_dir, packs, sheets, sheet, coating, keys_dir) if block_dir else None
    record = make_proof(game_id, out_dir, force, press)
    click.echo(
        f"wrote {record['pdf']} ({record['pages']} pages, {len(record['specimens'])} specimens) "
        f"and {len(record['previews'])} PNG previews to {out_dir} in {record['seconds']:.1f} s"
    )
    if record["press_proof"]:
        done = record["press_proof"]
        click.echo(
            f"wrote {done['file']} (sheets {','.join(map(str, done['sheets']))} of "
            f"{done['sheets_in_file']}): REAL OUTCOMES, CONFIDENTIAL - destroy after sign-off"
        )
    if record["plot"]:
        click.echo(f"wrote {record['plot']['file']} (per-pack winners and prize money)")


@cli.command()
@click.option("--game", "game_id", default=DEFAULT_GAME, show_default=True)
@click.option("--block", type=click.IntRange(1, 999), default=1, show_default=True)
@keys_option
@click.option("--out", type=click.Path(path_type=Path), default=DEFAULT_OUT, show_default=True)
@click.option(
    "--packs",
    "export_packs",
    default=RUN_EXPORT_PACKS,
    show_default=True,
    help="Packs to export to press PDFs at the end of the run.",
)
@quiet_option
def run(
    game_id: str, block: int, keys_dir: Path, out: Path, export_packs: str, quiet: bool
) -> None:
    """The main job on defaults: keys (demo ones if none), generate a block, audit it, export
    the first packs to press PDFs."""
    from printpipe.keys import ensure_demo_keys

    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    block_dir = out / _block_dir_name(game_id, block)
    if (block_dir / "summary.json").exists():
        click.echo(f"block store {block_dir} exists: keeping it", err=True)
    else:
        _generate(game_id, [block], keys_dir, {block: block_dir}, None, False, quiet)
    if not _audit(block_dir, keys_dir / PRODUCER_SIGNING_PUB, quiet):
        sys.exit(1)
    print_dir = out / f"{_block_dir_name(game_id, block)}-print"
    click.get_current_context().invoke(
        export, block_dir=block_dir, out_dir=print_dir, packs=export_packs, keys_dir=keys_dir,
        quiet=quiet,
    )  # fmt: skip


def _block_dir_name(game_id: str, block: int) -> str:
    return f"{game_id}-block-{block:04d}"


def _generate(
    game_id: str,
    blocks: list[int],
    keys_dir: Path,
    outs: dict[int, Path],
    packs_text: str | None,
    force: bool,
    quiet: bool,
    definition: Path | None = None,
    scheduler: str | None = None,
) -> None:
    from printpipe.block import PackRange
    from printpipe.games import load_game
    from printpipe.generate import generate_blocks
    from printpipe.keys import (
        LOTTERY_RECIPIENT,
        ensure_demo_keys,
        load_lottery_recipient,
        load_secrets,
        load_signing_key,
    )

    game = load_game(game_id, definition)
    packs = PackRange.parse(packs_text, game.definition.block.packs) if packs_text else None
    if keys_dir == DEMO_KEYS_DIR:
        ensure_demo_keys(keys_dir)
    secrets = load_secrets(keys_dir)
    signing_key = load_signing_key(keys_dir)
    recipient = load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT)
    if len(blocks) > 1 and not force:
        outs = {n: path for n, path in outs.items() if not _finished(path, secrets, packs_text)}
        for n in sorted(set(blocks) - set(outs)):
            click.echo(f"block store {_block_dir_name(game_id, n)} exists: keeping it", err=True)
    started = time.perf_counter()
    summaries = generate_blocks(
        game, secrets, signing_key, outs, packs, force, not quiet, recipient, scheduler
    )
    elapsed = time.perf_counter() - started
    for summary in summaries:
        totals = summary["totals"]
        out = outs[summary["block"]]
        click.echo(
            f"generated {summary['tickets']:,} tickets of {game_id} block {summary['block']} "
            f"(packs {summary['packs']['first']} to {summary['packs']['last']}) in {out} "
            f"in {elapsed:.1f} s: {totals['winning_tickets']:,} winning, "
            f"{totals['prize_eur']:,} EUR; block manifest {out / 'manifest.ppm'}"
        )


def _finished(store_dir: Path, secrets, packs_text: str | None) -> bool:
    """Whether a block of an emission is already done (a rerun keeps it): same secrets and
    packs; a store made from other inputs is refused rather than silently kept."""
    import json

    from printpipe.rng import commitment

    summary_path = store_dir / "summary.json"
    if not summary_path.exists():
        return False
    try:
        summary = json.loads(summary_path.read_text())
    except (OSError, ValueError) as exc:
        raise PrintpipeError(f"{summary_path} is unreadable: {exc}") from None
    same_keys = summary.get("commitments") == {
        "producer_secret_sha256": commitment(secrets.producer),
        "lottery_secret_sha256": commitment(secrets.lottery),
    }
    packs = summary.get("packs", {})
    same_packs = packs_text is None or f"{packs.get('first')}:{packs.get('last')}" == packs_text
    if not (same_keys and same_packs):
        raise PrintpipeError(
            f"{store_dir} holds a block store of other secrets or packs (use --force to replace it)"
        )
    return True


def _audit(
    block_dir: Path, producer_key_path: Path, quiet: bool, definition: Path | None = None
) -> bool:
    from printpipe.audit import audit_block
    from printpipe.games import load_game
    from printpipe.keys import load_producer_public_key
    from printpipe.store import BlockStore

    store = BlockStore.open(block_dir)
    game = load_game(store.game_id, definition)
    producer_key = load_producer_public_key(producer_key_path)
    report = audit_block(store, game, producer_key, not quiet)
    click.echo(report.render())
    return report.passed


def main() -> None:
    """Entry point: user errors become one line on stderr and a non-zero exit status."""
    try:
        cli.main(standalone_mode=False, prog_name="printpipe")
    except PrintpipeError as exc:
        click.echo(f"printpipe: error: {exc}", err=True)
        sys.exit(1)
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


# -- manifest and validation (issue 4) -------------------------------------------------------

producer_key_option = click.option(
    "--producer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Producer's public key [default: KEYS/producer-signing.pub].",
)
identity_option = click.option(
    "--identity",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The lottery's age identity [default: KEYS/lottery.age].",
)
db_option = click.option(
    "--db",
    "db_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Validation database (SQLite file).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="One JSON object per answer.")


def _verified_manifest(path: Path, keys_dir: Path, producer_key: Path | None):
    from printpipe.keys import load_producer_public_key
    from printpipe.manifest import verify_manifest

    public_key = load_producer_public_key(producer_key or keys_dir / PRODUCER_SIGNING_PUB)
    return verify_manifest(path, public_key)


def _identity(keys_dir: Path, identity: Path | None):
    from printpipe.keys import LOTTERY_IDENTITY, load_lottery_identity

    return load_lottery_identity(identity or keys_dir / LOTTERY_IDENTITY)


def _manifest_game(manifest):
    from printpipe.games import load_game

    game_id = manifest.header.get("game", {}).get("id")
    if not isinstance(game_id, str):
        raise PrintpipeError(f"manifest {manifest.path} names no game")
    return load_game(game_id)


SQLITE_SIDE = ("-wal", "-shm", "-journal")


def _open_ledger(db_path: Path, create: bool = False):
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


@cli.group()
def manifest() -> None:
    """Check a secure manifest, or export it for an auditor (the lottery's identity needed)."""


@manifest.command("verify")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@producer_key_option
@keys_option
def manifest_verify(file: Path, producer_key: Path | None, keys_dir: Path) -> None:
    """Check FILE's signature and body hash, without decrypting; print its header."""
    from printpipe.manifest import describe

    click.echo(describe(_verified_manifest(file, keys_dir, producer_key)))


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
    from printpipe.manifest import export_csv

    verified = _verified_manifest(file, keys_dir, producer_key)
    count = export_csv(verified, _manifest_game(verified), _identity(keys_dir, identity), csv_path)
    click.echo(f"wrote {count:,} records to {csv_path}")


@cli.group()
def feed() -> None:
    """Read a unit feed (the export of an online game): one unit, or every unit re-checked."""


@feed.command("show")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--unit", "serial", required=True, help="The unit's serial GGGG-PPPPPP-TTT-C.")
def feed_show(file: Path, serial: str) -> None:
    """Print one unit's record and its lot recomputed by the rules (exit 1 if they differ)."""
    import numpy as np

    from printpipe.feed import FeedReader
    from printpipe.games import load_game
    from printpipe.games.base import Game

    with FeedReader(file) as reader:
        game: Game = load_game(reader.header["game"]["id"])
        reader.check_game(game)
        unit = reader.unit(reader.index_of(serial))
    click.echo(f"unit {unit.serial} (game {game.definition.id}, block {reader.header['block']})")
    for name, codes in unit.fields.items():
        click.echo(f"{name}: {' '.join(codes) if codes is not None else '(none)'}")
    result = game.evaluate(np.zeros(1, dtype=np.int64), unit.symbols[None, :])
    if result.violation[0]:
        raise PrintpipeError(
            f"unit {unit.serial}: its symbols break a rule: {game.violations[result.violation[0]]}"
        )
    by_rules = int(result.prize_eur[0])
    click.echo(f"lot recorded: {unit.prize_eur} EUR; by the rules: {by_rules} EUR")
    if by_rules != unit.prize_eur:
        raise PrintpipeError(f"unit {unit.serial}: the record's lot is not the rules' lot")


@feed.command("verify")
@click.argument("file", type=click.Path(path_type=Path))
def feed_verify(file: Path) -> None:
    """Re-check every unit of a feed: place in block order, and its lot by the rules."""
    from printpipe.feed import FeedReader, verify_feed
    from printpipe.games import load_game

    with FeedReader(file) as reader:
        totals = verify_feed(reader, load_game(reader.header["game"]["id"]))
    click.echo(
        f"feed {file}: {totals['units']:,} units in block order, every lot as the rules give it "
        f"({totals['winning_units']:,} winning, {totals['prize_eur']:,} EUR)"
    )


@cli.group()
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

    verified = _verified_manifest(file, keys_dir, producer_key)
    game = _manifest_game(verified)
    key = _identity(keys_dir, identity)
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


@cli.group()
def packs() -> None:
    """Pack states: issued -> activated (by the retailer on receipt) -> settled."""


def _pack_command(state: str):
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


def _print_answer(answer, as_json: bool, ok: bool) -> None:
    import json

    click.echo(json.dumps(answer.as_json(), sort_keys=True) if as_json else answer.text)
    if not ok:
        sys.exit(1)


@cli.command(context_settings={"ignore_unknown_options": True})
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


@cli.command(context_settings={"ignore_unknown_options": True})
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
