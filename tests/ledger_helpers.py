"""Helpers shared by the manifest and validation tests: small stores, codes, tier samples."""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from printpipe.block import BlockStore, PackRange, Tickets, plan_block
from printpipe.cli import main
from printpipe.games.base import Game
from printpipe.ids import TicketId
from printpipe.keys import load_secrets
from printpipe.ledger.rules import PackScope
from printpipe.ledger.store import Location, PostgresLocation
from printpipe.rng import derive_block_key
from tests import conftest

OFFICE_SCOPE = PackScope.office()
"""Every pack: what the office's command line acts on (and the tests that act as the office)."""


def generate_store(game: Game, keys: Path, out: Path, packs: PackRange, block: int = 1) -> Path:
    """A block store of ``packs`` with its block manifest, as ``printpipe generate`` does."""
    return conftest.generate_store(game, keys, out, packs, block=block, manifest=True)


def packs_of_every_tier(game: Game, keys: Path, block: int = 1) -> dict[int, int]:
    """For each tier, one pack (1-based, block-relative) holding a ticket of it, from the plan."""
    secrets = load_secrets(keys)
    definition = game.definition
    key = derive_block_key(secrets.producer, secrets.lottery, definition.number, block)
    per_pack = plan_block(definition, key).variant_counts.sum(axis=2)  # (packs, tiers)
    return {
        tier: int(np.flatnonzero(per_pack[:, tier])[0]) + 1 for tier in range(per_pack.shape[1])
    }


def copy_store(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


_read: list[tuple[BlockStore, Tickets]] = []
"""The last store :func:`ticket_codes` read, and its tickets: the tests ask for every row of a
store in turn, and opening its columns again for each row took 7 ms a row (7 s a 1,000-ticket
world)."""


def ticket_codes(store: BlockStore, game: Game, row: int) -> tuple[TicketId, str, str, int]:
    """Ticket id, validation code, inventory code and prize of store row ``row``."""
    definition = game.definition
    if not _read or _read[0][0] is not store:
        _read[:] = [(store, store.read())]
    tickets = _read[0][1]
    first = store.summary.packs.first_pack_number
    ticket = TicketId(definition.number, first + row // store.pack_size, row % store.pack_size)
    prize = int(definition.tier_amounts[int(tickets.tier[row])])
    return ticket, ticket.validation_code(int(tickets.virn[row])), ticket.inventory_code, prize


def run_in_process(*args: str) -> subprocess.CompletedProcess:
    """Run ``printpipe ARGS`` in this process, through the same ``main`` a user's shell calls
    (one line on stderr and the exit status for every error): no interpreter start-up."""
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["printpipe", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
    return subprocess.CompletedProcess(
        ["printpipe", *args], code, stdout.getvalue(), stderr.getvalue()
    )


class LedgerFactory:
    """Ledger locations on one backend: a new SQLite file or PostgreSQL database, or a copy of
    one (a file copy; ``CREATE DATABASE ... TEMPLATE``)."""

    def __init__(self, backend: str, folder: Path, postgres_url: str | None) -> None:
        self.backend = backend
        self.folder = folder
        self.url = postgres_url
        self.made: list[str] = []
        self._count = 0

    def new(self) -> Location:
        if self.backend == "sqlite":
            self._count += 1
            return self.folder / f"ledger-{self._count}.sqlite"
        from tests.pgserver import create_database

        assert self.url is not None
        url = create_database(self.url)
        self.made.append(url)
        return PostgresLocation(url)

    def copy(self, location: Location) -> Location:
        if isinstance(location, Path):
            self._count += 1
            target = self.folder / f"ledger-{self._count}.sqlite"
            target.write_bytes(location.read_bytes())
            return target
        from tests.pgserver import create_database

        assert self.url is not None
        url = create_database(self.url, template=location.dsn.rsplit("/", 1)[1])
        self.made.append(url)
        return PostgresLocation(url)

    def cleanup(self) -> None:
        from tests.pgserver import drop_database

        for url in self.made:
            drop_database(url)


def imported_ledger(
    game: Game,
    keys: Path,
    folder: Path,
    location: Location,
    packs: PackRange,
    *,
    activate: tuple[str, ...],
) -> BlockStore:
    """A block of ``packs`` generated in ``folder`` and imported into a new ledger at
    ``location`` (by the command line, as a lottery does), the ``activate`` packs activated;
    its block store."""
    from printpipe.handover import BLOCK_MANIFEST

    store_dir = generate_store(game, keys, folder / "blk", packs)
    conftest.run_cli("ledger", "import", str(store_dir / BLOCK_MANIFEST), "--keys", str(keys),
                     "--db", db_arg(location), "-q", check=True)  # fmt: skip
    conftest.run_cli("packs", "activate", *activate, "--db", db_arg(location), check=True)
    return BlockStore.open(store_dir)


def db_arg(location: Location) -> str:
    """``--db`` for a location."""
    return location.dsn if isinstance(location, PostgresLocation) else str(location)


def ledger_exists(location: Location) -> bool:
    """Whether a ledger is there: the file, or any table in the PostgreSQL database."""
    if isinstance(location, Path):
        return location.exists()
    import psycopg

    with psycopg.connect(location.dsn) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    return bool(row and row[0])
