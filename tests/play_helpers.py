"""The online game to test and bench: a small Golden Animals block (generated, countersigned,
exported as a feed), loaded into a ledger on either database, players registered, a platform
terminal's key, and ``printpipe play`` running in a subprocess, as an operator runs it."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.handover import FeedReader
from printpipe.ledger import (
    LOTTERY,
    Ledger,
    Location,
    PlayRequest,
    TerminalId,
    load_ledger_key,
    location_argument,
)
from printpipe.service.signatures import RequestSigner, key_id_of, raw_public_key
from tests.ledger_helpers import run_in_process
from tests.server_process import start_server_process, stop_server_process
from tests.storm import signed_request

GAME = "golden-animals"
PLATFORM = "operator-1"


@dataclass
class OnlineBlock:
    """A countersigned block of packs 1:``packs`` (1,000 units a pack) and its feed."""

    folder: Path
    keys: Path
    packs: int

    @property
    def block(self) -> Path:
        return self.folder / "block"

    @property
    def manifest(self) -> Path:
        return self.block / "manifest.ppm"

    @property
    def commitment(self) -> Path:
        return self.block / "commitment.json"

    @property
    def feed(self) -> Path:
        return next((self.folder / "run").glob("*.feed"))

    def feed_units(self) -> dict[str, tuple[list[str], list[str] | None, int]]:
        """Each unit of the feed by serial: its grid, its extra grid (or None), its lot."""
        units = {}
        with FeedReader(self.feed) as reader:
            for index in range(reader.units):
                unit = reader.unit(index)
                grid = unit.fields["grid"]
                assert grid is not None
                units[unit.serial] = (grid, unit.fields["extra_grid"], unit.prize_eur)
        return units


def make_block(folder: Path, *, packs: int = 2) -> OnlineBlock:
    """Keys, the block generated with its manifest, countersigned, and its feed exported."""
    keys = folder / "keys"
    for args in (
        ["keys", "init", str(keys)],
        ["generate", "--game", GAME, "--packs", f"1:{packs}", "--keys", str(keys),
         "--out", str(folder / "block"), "--quiet"],
        ["commitment", "sign", str(folder / "block" / "commitment.json"), "--manifest",
         str(folder / "block" / "manifest.ppm"), "--keys", str(keys), "--quiet"],
        ["export", str(folder / "block"), "--out", str(folder / "run"), "--keys", str(keys),
         "--quiet"],
    ):  # fmt: skip
        result = run_in_process(*args)
        assert result.returncode == 0, result.stderr
    return OnlineBlock(folder, keys, packs)


def next_block(first: OnlineBlock, number: int) -> tuple[Path, Path]:
    """Block ``number`` of the game under ``first``'s keys (its packs 1:``first.packs``),
    generated and countersigned beside it (once), without a feed: (its manifest, its
    commitment)."""
    out = first.folder / f"block-{number}"
    if (out / "commitment.json").exists() and (out / "countersigned").exists():
        return out / "manifest.ppm", out / "commitment.json"
    for args in (
        ["generate", "--game", GAME, "--block", str(number), "--packs", f"1:{first.packs}",
         "--keys", str(first.keys), "--out", str(out), "--quiet"],
        ["commitment", "sign", str(out / "commitment.json"), "--manifest",
         str(out / "manifest.ppm"), "--keys", str(first.keys), "--quiet"],
    ):  # fmt: skip
        result = run_in_process(*args)
        assert result.returncode == 0, result.stderr
    (out / "countersigned").touch()
    return out / "manifest.ppm", out / "commitment.json"


def db_text(location: Location) -> str:
    return location_argument(location)


@dataclass
class PlayWorld:
    """A ledger holding the block, players with balances, a platform key, and the server."""

    block: OnlineBlock
    location: Location
    folder: Path
    platform: RequestSigner
    players: dict[str, int] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen | None = None
    logins: dict[str, str] = field(default_factory=dict)

    @property
    def keys(self) -> Path:
        return self.block.keys

    def ledger(self) -> Ledger:
        return Ledger(self.location, key=load_ledger_key(self.keys), read_only=True)

    def query(self, sql: str) -> list[tuple]:
        with self.ledger() as book:
            return book.query(sql)

    def start(
        self, *, demo: bool = False, workers: int = 1, open_files: int | None = None,
        args: Sequence[str] = (), env: dict[str, str] | None = None,
    ) -> str:  # fmt: skip
        """``printpipe play`` on the world's ledger (``open_files``: its RLIMIT_NOFILE; ``args``
        added to its command line, ``env`` to its environment); its witness in the world's
        folder, not the shared keys' (worlds copied from one ledger share its id)."""
        command = ["play", "--db", db_text(self.location), "--keys", str(self.keys),
                   "--port", "0", "--workers", str(workers), *(["--demo"] if demo else []),
                   *args, *([] if "--witness" in args else
                            ["--witness", str(self.folder / "witness")])]  # fmt: skip
        self.process, self.url = start_server_process(
            command, log=self.folder / "play.log", url_file=self.folder / "play.url",
            open_files=open_files, env={**os.environ, **env} if env else None,
        )  # fmt: skip
        return self.url

    def kill(self) -> None:
        """SIGKILL: the server and its workers, no goodbye."""
        if self.process is not None:
            stop_server_process(self.process, kill=True)

    def stop(self) -> None:
        if self.process is not None:
            stop_server_process(self.process)
        self.process = None

    def play_request(self, player: str, key: str | None = None) -> bytes:
        key = key or uuid.uuid4().hex
        return signed_request(
            self.platform, self.url, "POST", f"/v1/players/{player}/plays", b"",
            extra={"Idempotency-Key": key},
        )  # fmt: skip

    def totals(self) -> dict[str, int]:
        """Money and units, as the ledger holds them."""
        (balances,) = self.query("SELECT COALESCE(SUM(balance_cents), 0) FROM players")
        (plays,) = self.query(
            "SELECT COUNT(*), COALESCE(SUM(stake_cents), 0), COALESCE(SUM(lot_cents), 0), "
            "COUNT(DISTINCT unit), COUNT(DISTINCT commitment * 4294967296 + position) FROM plays"
        )
        (debits,) = self.query(
            "SELECT COUNT(*), COALESCE(SUM(amount_cents), 0) FROM wallet_entries "
            "WHERE kind = 'debit'"
        )
        (credits,) = self.query(
            "SELECT COUNT(*), COALESCE(SUM(amount_cents), 0) FROM wallet_entries "
            "WHERE kind = 'credit'"
        )
        (units,) = self.query("SELECT COALESCE(SUM(units), 0) FROM deal_orders")
        (left,) = self.query(
            "SELECT COALESCE(SUM(end_position - next_position), 0) FROM deal_ranges"
        )
        return {
            "balances": int(balances[0]),
            "plays": int(plays[0]),
            "stakes": int(plays[1]),
            "lots": int(plays[2]),
            "distinct_units": int(plays[3]),
            "distinct_positions": int(plays[4]),
            "debits": int(debits[0]),
            "debited": int(debits[1]),
            "credits": int(credits[0]),
            "credited": int(credits[1]),
            "dealt": int(units[0]) - int(left[0]),
        }

    def check_books(self, opening_cents: int) -> dict[str, int]:
        """The invariants of a play storm: no unit dealt twice, every debit has its play
        (unit and lot) and no play lacks its debit, money neither made nor lost, every play
        bound to its entry in the audit log."""
        t = self.totals()
        assert t["distinct_units"] == t["plays"] == t["distinct_positions"]
        assert t["debits"] == t["plays"] and t["debited"] == t["stakes"]
        assert t["credited"] == t["lots"]
        assert t["balances"] + t["stakes"] - t["lots"] == opening_cents
        orphans = self.query(
            "SELECT COUNT(*) FROM wallet_entries w LEFT JOIN plays p ON p.id = w.reference "
            "WHERE w.kind IN ('debit', 'credit') AND p.id IS NULL"
        )
        assert orphans[0][0] == 0
        # every position is dealt by a play or still to deal: none skipped, none lost
        assert t["dealt"] == t["plays"]
        # every play entered in the audit log, which binds it (sealed, or awaiting its seal)
        with Ledger(self.location, key=load_ledger_key(self.keys), read_only=True) as book:
            report = book.verify_log()
        assert report.ok, report.problems
        assert report.plays == t["plays"]
        return t


def make_world(
    block: OnlineBlock, location: Location, folder: Path, *, players: int, balance_eur: int
) -> PlayWorld:
    """The block imported into ``location`` with its commitment, ``players`` players of
    ``balance_eur`` each, and a platform terminal registered."""
    folder.mkdir(parents=True, exist_ok=True)
    db = db_text(location)
    result = run_in_process(
        "ledger", "import", str(block.manifest), "--commitment", str(block.commitment),
        "--db", db, "--keys", str(block.keys),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    private = Ed25519PrivateKey.generate()
    with Ledger(location, key=load_ledger_key(block.keys)) as book:
        book.add_terminal(
            TerminalId(PLATFORM),
            public_key=raw_public_key(private.public_key()),
            key_id=key_id_of(private.public_key()),
            retailer=None,
            role="platform",
            by=LOTTERY,
        )
    world = PlayWorld(block, location, folder, RequestSigner(private))
    from printpipe.play.server import open_dealer

    ledger, dealer = open_dealer(location, block.keys)
    with ledger:
        for i in range(players):
            name = f"player-{i:02d}"
            world.logins[name] = dealer.add_player(
                player=name, balance_cents=balance_eur * 100, by="test"
            )
            world.players[name] = balance_eur * 100
    return world


def play_many(location: Location, keys: Path, count: int, *, tag: str, players: int) -> None:
    """``count`` plays on the ledger at ``location`` through the built-in wallet, in batches
    of up to 128, players ``player-00`` to ``player-NN`` in turn, each under its own key
    ``TAG-N``; none refused."""
    from printpipe.play.server import open_dealer

    ledger, dealer = open_dealer(location, keys)
    with ledger:
        for start in range(0, count, 128):
            requests = []
            for n in range(start, min(count, start + 128)):
                player = f"player-{n % players:02d}"
                fingerprint = dealer.ledger.request_fingerprint(
                    "POST", f"/v1/players/{player}/plays", b""
                )
                requests.append(PlayRequest(player, f"{tag}-{n}", fingerprint))
            outcomes = dealer.play_batch(requests)
            assert all(isinstance(o, tuple) for o in outcomes), outcomes[:3]


def import_next_block(world: PlayWorld, number: int) -> None:
    """Block ``number`` of the world's game (:func:`next_block`) imported into its ledger."""
    manifest, commitment = next_block(world.block, number)
    result = run_in_process(
        "ledger", "import", str(manifest), "--commitment", str(commitment),
        "--db", db_text(world.location), "--keys", str(world.keys),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def answer(outcome: object) -> dict:
    body = getattr(outcome, "body", b"")
    try:
        return json.loads(body)
    except ValueError:
        return {}
