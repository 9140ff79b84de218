"""A validation service to test: a ledger (on the module's backend) of packs 1:8, packs shipped
to two retailers, terminals registered with their keys, and ``printpipe serve`` running on a
free port in a subprocess, as a lottery runs it."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.block import BlockStore, PackRange
from printpipe.commitment import COMMITMENT_FILE
from printpipe.games.base import Game
from printpipe.handover import BLOCK_MANIFEST
from printpipe.ids import TicketId
from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import LOTTERY, TerminalId, parse_pack_ref
from printpipe.ledger.key import LedgerKey, load_ledger_key
from printpipe.ledger.store import Location
from printpipe.service.signatures import RequestSigner, key_id_of, raw_public_key
from tests.conftest import run_cli
from tests.ledger_helpers import OFFICE_SCOPE, db_arg, generate_store, ticket_codes
from tests.server_process import start_server_process, stop_server_process

SHOP_1, SHOP_2 = "shop-1", "shop-2"
RETAILER_LIMIT = 4
"""Low, so that the few packs of a test surely hold prizes above it (paid by the office only)
and below it (2 and 4 EUR: the commonest)."""
STORM_TERMINALS = 64


@dataclass
class Ticket:
    ticket: TicketId
    code: str
    inventory: str
    prize: int


@dataclass
class World:
    location: Location
    keys_dir: Path
    key: LedgerKey
    folder: Path
    tickets: list[Ticket]
    signers: dict[str, RequestSigner] = field(default_factory=dict)
    private: dict[str, Ed25519PrivateKey] = field(default_factory=dict)
    url: str = ""
    process: subprocess.Popen | None = None

    def of_pack(self, pack: int, *, prize: str = "any") -> list[Ticket]:
        chosen = [t for t in self.tickets if t.ticket.pack == pack]
        if prize == "small":
            return [t for t in chosen if 0 < t.prize <= RETAILER_LIMIT]
        if prize == "big":
            return [t for t in chosen if t.prize > RETAILER_LIMIT]
        if prize == "none":
            return [t for t in chosen if t.prize == 0]
        return chosen

    def ledger(self, *, read_only: bool = True) -> Ledger:
        return Ledger(self.location, key=self.key, read_only=read_only)

    def counts(self) -> dict[str, int]:
        """Rows of every table a request could change."""
        tables = ("audit_log", "payments", "virn_failures", "terminal_failures", "nonces",
                  "idempotency", "packs WHERE state = 'activated'", "terminals")  # fmt: skip
        with self.ledger() as book:
            return {t: int(book.query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in tables}


def build_world(
    game: Game,
    keys_dir: Path,
    location: Location,
    folder: Path,
    *,
    retailer_limit: int = RETAILER_LIMIT,
) -> World:
    """Packs 1:8 with their countersigned commitment (every payment answered with its proof);
    1-4 shipped to shop-1 and activated, 5-6 to shop-2 (5 activated), 7-8 at
    the lottery; terminals: till-1 (shop-1), till-2 (shop-2), office-1, platform-1 (an online
    operator's, which the service must not admit), and 64 storm terminals of shop-1."""
    store_dir = generate_store(game, keys_dir, folder / "blk", PackRange(1, 8))
    commitment = store_dir / COMMITMENT_FILE
    run_cli("commitment", "sign", str(commitment), "--manifest", str(store_dir / BLOCK_MANIFEST),
            "--keys", str(keys_dir), "-q", check=True)  # fmt: skip
    run_cli("ledger", "import", str(store_dir / BLOCK_MANIFEST), "--keys", str(keys_dir),
            "--db", db_arg(location), "--commitment", str(commitment), "-q",
            check=True)  # fmt: skip
    store = BlockStore.open(store_dir)
    tickets = [Ticket(*ticket_codes(store, game, row)) for row in range(len(store.read().tier))]
    world = World(location, keys_dir, load_ledger_key(keys_dir), folder, tickets)
    with Ledger(location, key=world.key) as book:
        book.configure(terminal=LOTTERY, retailer_limit_eur=retailer_limit)
        book.ship_packs([parse_pack_ref(p) for p in "1234"], retailer=TerminalId(SHOP_1),
                        terminal=LOTTERY)  # fmt: skip
        book.ship_packs([parse_pack_ref(p) for p in "56"], retailer=TerminalId(SHOP_2),
                        terminal=LOTTERY)  # fmt: skip
        book.set_pack_state([parse_pack_ref(p) for p in "12345"], state="activated",
                            terminal=LOTTERY, scope=OFFICE_SCOPE)  # fmt: skip
        registered = [("till-1", SHOP_1, "retailer"), ("till-2", SHOP_2, "retailer"),
                      ("office-1", None, "office"), ("platform-1", None, "platform")]  # fmt: skip
        registered += [(f"storm-{i:02d}", SHOP_1, "retailer") for i in range(STORM_TERMINALS)]
        for name, retailer, role in registered:
            private = register_terminal(book, name, role=role, retailer=retailer)
            world.private[name] = private
            world.signers[name] = RequestSigner(private)
    return world


def register_terminal(
    book: Ledger, name: str, *, role: str, retailer: str | None = None
) -> Ed25519PrivateKey:
    """A new key, registered in ``book`` for terminal ``name`` of ``role``: its private half."""
    private = Ed25519PrivateKey.generate()
    book.add_terminal(
        TerminalId(name),
        public_key=raw_public_key(private.public_key()),
        key_id=key_id_of(private.public_key()),
        retailer=TerminalId(retailer) if retailer else None,
        role=role,
        by=LOTTERY,
    )
    return private


SERVE_OPTIONS = ("--terminal-rate", "1000", "--terminal-burst", "1000")
"""The tests' terminals send faster than real ones: the rate limit has its own test."""


def start_server(
    world: World,
    *,
    log_name: str = "serve.log",
    workers: int = 1,
    options: tuple[str, ...] = SERVE_OPTIONS,
    open_files: int | None = None,
) -> None:
    """``printpipe serve`` on the world's ledger (``open_files``: its RLIMIT_NOFILE); its
    witness in the world's folder, not the shared keys' (the worlds copied from one ledger
    share its id: one world's witness would call another's shorter log a rewind)."""
    world.process, world.url = start_server_process(
        ["serve", "--db", db_arg(world.location), "--keys", str(world.keys_dir), "--port", "0",
         "--workers", str(workers), *options,
         *([] if "--witness" in options else ["--witness", str(world.folder / "witness")])],
        log=world.folder / log_name, url_file=world.folder / "serve.url", open_files=open_files,
    )  # fmt: skip


def stop_server(world: World, *, kill: bool = False) -> None:
    if world.process is not None:
        stop_server_process(world.process, kill=kill)
    world.process = None


PROBLEM_FIELDS = {"type", "title", "status", "detail", "error"}


def assert_problem(status: int | None, headers: object, text: str, expected: int) -> dict:
    """An RFC 9457 problem of status ``expected``, one line of JSON: its members."""
    assert status == expected, (status, text[:300])
    content_type = headers["content-type"]  # type: ignore[index]
    assert content_type == "application/problem+json", (status, content_type, text)
    assert "\n" not in text.strip(), text
    data = json.loads(text)
    assert set(data) >= PROBLEM_FIELDS, data
    assert data["status"] == expected and data["type"] == f"urn:printpipe:problem:{data['error']}"
    assert isinstance(data["detail"], str) and data["detail"], data
    return data


def server_log(world: World, name: str = "serve.log") -> str:
    path = world.folder / name
    return path.read_text(errors="replace") if path.exists() else ""


def assert_revocation_reaches_every_worker(
    send: Callable[[], httpx.Response], revoke: Callable[[], None]
) -> None:
    """A server of 2 workers: ``send`` (one signed request, on a connection of its own)
    answered 200 by both workers (told apart by their request ids' first 16 digits, random
    for each process), so that each has seen the terminal's key; then ``revoke``; from then on
    every request is refused 401, by both workers: the revocation reached each at once."""
    with ThreadPoolExecutor(8) as pool:
        answered: set[str] = set()
        for _ in range(50):
            for response in pool.map(lambda _: send(), range(8)):
                assert response.status_code == 200, response.text
                answered.add(response.headers["x-request-id"][:16])
            if len(answered) == 2:
                break
        assert len(answered) == 2, "one worker answered every request"
        revoke()
        refused: set[str] = set()
        for _ in range(50):
            for response in pool.map(lambda _: send(), range(8)):
                assert response.status_code == 401, (response.status_code, response.text)
                assert "revoked" in response.json()["detail"], response.text
                refused.add(response.headers["x-request-id"][:16])
            if refused == answered:
                break
        assert refused == answered, "a worker was not asked after the revocation"


FLOOD = 1_100
"""Half-requests an attacker keeps open against a server allowed 1,024 open files."""


def flood(url: str, data: bytes, count: int = FLOOD) -> list[socket.socket]:
    """``count`` connections to ``url``, each sending ``data`` (half a request) and waiting."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    attackers = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.sendall(data)
        attackers.append(sock)
    time.sleep(0.5)  # every one accepted (or cut) by the server
    return attackers


def cut(attackers: list[socket.socket]) -> int:
    """How many of the ``attackers``' connections the server closed."""
    closed = 0
    for sock in attackers:
        sock.setblocking(False)
        try:
            data = sock.recv(65536)
            closed += data == b"" or data.startswith(b"HTTP/1.1 ")
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed
