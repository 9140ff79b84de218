"""``printpipe play`` as an operator runs it, on both databases: 64 players at once, a kill -9
in the middle of a storm then the retries with the same keys, and requests that must change
nothing (malformed, unsigned, foreign, another player's)."""

from __future__ import annotations

import json
import os
import random
import time
import uuid

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.ledger import Ledger, load_ledger_key
from printpipe.play.app import create_app
from printpipe.play.openapi import openapi_document
from printpipe.play.server import open_dealer
from printpipe.service.signatures import RequestSigner
from tests.ledger_helpers import run_in_process
from tests.play_helpers import PlayWorld, db_text, make_block, make_world
from tests.service_helpers import (
    FLOOD,
    assert_revocation_reaches_every_worker,
    cut,
    flood,
    register_terminal,
)
from tests.storm import signed_request, storm

PLAYERS = 64
ROUNDS = 3
BALANCE_EUR = 30

pytestmark = pytest.mark.xdist_group("play")


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("play-block"), packs=2)


@pytest.fixture(scope="module")
def world(block, ledgers, tmp_path_factory):
    w = make_world(
        block, ledgers.new(), tmp_path_factory.mktemp("play-world"),
        players=PLAYERS, balance_eur=BALANCE_EUR,
    )  # fmt: skip
    w.start(workers=2)  # the storms race two workers' batches, as production does
    yield w
    w.stop()


def opening(world) -> int:
    return sum(world.players.values())


def test_64_players_at_once_each_unit_dealt_once_and_the_books_balance(world):
    before = world.totals()
    per_player = [[world.play_request(name) for _ in range(ROUNDS)] for name in world.players]
    outcomes, _ = storm(world.url, per_player)
    statuses = [o.status if o else None for o in outcomes]
    assert statuses == [201] * len(statuses)
    serials = [json.loads(o.body)["serial"] for o in outcomes if o]
    assert len(set(serials)) == len(serials)
    after = world.check_books(opening(world))
    assert after["plays"] - before["plays"] == PLAYERS * ROUNDS
    # the running server seals its plays' log entries itself, within its sealing delay
    deadline = time.monotonic() + 30
    while world.query("SELECT COUNT(*) FROM audit_pending")[0][0]:
        assert time.monotonic() < deadline, "the game server left its plays unsealed"
        time.sleep(0.05)


def test_a_kill_during_a_storm_then_retries_with_the_same_keys(world):
    keys = {name: [uuid.uuid4().hex for _ in range(ROUNDS)] for name in world.players}
    per_player = [[world.play_request(n, k) for k in keys[n]] for n in world.players]
    answered = [0]

    def kill_midway() -> None:
        answered[0] += 1
        if answered[0] == PLAYERS:  # about a third of the storm answered
            world.kill()

    outcomes, _ = storm(world.url, per_player, on_answer=kill_midway, timeout=60)
    first = {
        (n, k): json.loads(o.body)
        for (n, k), o in zip(
            [(n, k) for n in world.players for k in keys[n]], outcomes, strict=True
        )
        if o is not None and o.status == 201
    }
    assert 0 < len(first) < PLAYERS * ROUNDS
    world.check_books(opening(world))  # whatever committed is whole
    world.start(workers=2)
    retry = [[world.play_request(n, k) for k in keys[n]] for n in world.players]
    outcomes, _ = storm(world.url, retry)
    assert all(o is not None and o.status in (200, 201) for o in outcomes)
    again = {
        (n, k): json.loads(o.body)
        for (n, k), o in zip(
            [(n, k) for n in world.players for k in keys[n]], outcomes, strict=True
        )
        if o is not None
    }
    for pair, play in first.items():  # a play answered before the kill is answered again
        assert again[pair]["play"] == play["play"] and again[pair]["serial"] == play["serial"]
    replayed = sum(o.status == 200 for o in outcomes if o)
    assert replayed >= len(first)
    totals = world.check_books(opening(world))
    keyed = world.query("SELECT COUNT(*) FROM plays WHERE idempotency_key IN ("
                        + ",".join(f"'{k}'" for ks in keys.values() for k in ks) + ")")  # fmt: skip
    assert keyed[0][0] == PLAYERS * ROUNDS  # every key has exactly one play: none debited twice
    assert totals["dealt"] == totals["plays"]  # no position skipped: no unit lost


def test_requests_that_must_change_nothing(world):
    before = world.totals()
    stranger = RequestSigner(Ed25519PrivateKey.generate())
    player = next(iter(world.players))
    path = f"/v1/players/{player}/plays"
    rng = random.Random(5)
    bad: list[tuple[str, str, dict[str, str], bytes]] = [
        ("POST", path, {"Idempotency-Key": "k" * 16}, b""),  # unsigned
        ("POST", path, {"Idempotency-Key": "short"}, b""),
        ("POST", "/v1/players/n%20o/plays", {}, b""),
        ("POST", "/v1/players/" + "x" * 300 + "/plays", {}, b""),
        ("GET", f"/v1/players/{player}/plays/zz/proof", {}, b""),
        ("GET", "/v1/nothing", {}, b""),
        ("DELETE", path, {}, b""),
        ("POST", "/v1/sessions", {"Content-Type": "application/json"}, b'{"token": "x"}'),
    ]
    for _ in range(40):
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        forged = {"Idempotency-Key": uuid.uuid4().hex, "Signature": junk.hex(),
                  "Signature-Input": junk.hex()}  # fmt: skip
        bad.append(("POST", path, forged, junk))
    with httpx.Client(base_url=world.url, timeout=10) as client:
        for method, url, headers, body in bad:
            response = client.request(method, url, headers=headers, content=body)
            assert 400 <= response.status_code < 500, (method, url, response.text)
            assert response.headers["content-type"] == "application/problem+json"
            problem = response.json()
            assert {"type", "title", "status", "detail", "error"} <= set(problem)
            assert problem["status"] == response.status_code
        # signed, but by no registered terminal; then by the platform for a player unknown;
        # then a body where none is taken; then the same signed request twice (a replay)
        for signer, target, body in (
            (stranger, path, b""),
            (world.platform, "/v1/players/nobody/plays", b""),
            (world.platform, path, b'{"stake": 100}'),
        ):
            raw = signed_request(signer, world.url, "POST", target, body,
                                 extra={"Idempotency-Key": uuid.uuid4().hex})  # fmt: skip
            head, _, content = raw.partition(b"\r\n\r\n")
            headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])
            response = client.post(target, headers=headers, content=content)
            assert response.status_code in (400, 401, 404), response.text
        raw = world.play_request(player)
        head, _, content = raw.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])
        assert client.post(path, headers=headers, content=content).status_code == 201
        replay = client.post(path, headers=headers, content=content)
        assert replay.status_code == 401 and "replay" in replay.json()["detail"]
    after = world.totals()
    assert after["plays"] == before["plays"] + 1  # the one good request only
    assert "Traceback" not in (world.folder / "play.log").read_text()


def _send(client: httpx.Client, raw: bytes) -> httpx.Response:
    """The request ``raw`` (bytes of :func:`signed_request`) sent with ``client``."""
    head, _, content = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return client.request(method, path, headers=headers, content=content)


def test_a_signed_read_is_admitted_once_and_its_replay_refused(world):
    """A captured signed GET (an account, a history, a proof) replayed is refused, 401, as a
    replayed play is: its nonce was recorded when it was first answered."""
    player = next(iter(world.players))
    with httpx.Client(base_url=world.url, timeout=10) as client:
        made = _send(client, world.play_request(player))
        assert made.status_code == 201
        play = made.json()["play"]
        before = world.query("SELECT COUNT(*) FROM nonces")[0][0]
        reads = [f"/v1/players/{player}", f"/v1/players/{player}/plays",
                 f"/v1/players/{player}/plays/last", f"/v1/players/{player}/plays/{play}",
                 f"/v1/players/{player}/plays/{play}/proof"]  # fmt: skip
        for path in reads:
            captured = signed_request(world.platform, world.url, "GET", path, b"")
            assert _send(client, captured).status_code == 200, path
            replay = _send(client, captured)
            assert replay.status_code == 401, (path, replay.text)
            assert "replay" in replay.json()["detail"]
    assert world.query("SELECT COUNT(*) FROM nonces")[0][0] == before + len(reads)


def test_a_revocation_reaches_every_worker_at_once(world, block, tmp_path):
    """``printpipe play --workers 2``: the platform's reads, answered by both workers, are
    refused by both as soon as ``printpipe terminals revoke`` returns."""
    with Ledger(world.location, key=load_ledger_key(world.keys)) as book:
        signer = RequestSigner(register_terminal(book, "operator-revoked", role="platform"))
    two = PlayWorld(block, world.location, tmp_path, signer)
    two.start(workers=2)
    player = next(iter(world.players))

    def send() -> httpx.Response:
        path = f"/v1/players/{player}"
        headers = signer.headers("GET", two.url + path, b"")
        return httpx.get(two.url + path, headers=headers, timeout=60)  # workers starting

    def revoke() -> None:
        result = run_in_process("terminals", "revoke", "operator-revoked", "--db",
                                db_text(world.location), "--reason", "stolen")  # fmt: skip
        assert result.returncode == 0, result.stderr

    try:
        assert_revocation_reaches_every_worker(send, revoke)
    finally:
        two.stop()
    assert "Traceback" not in (tmp_path / "play.log").read_text()


def test_the_game_server_stays_up_under_1100_half_sent_bodies(world, tmp_path):
    """1,100 plays whose body never ends, against a game server allowed 1,024 open files: the
    platform's next request is answered at its first attempt (the connections that waited
    longest for their body made room), and nothing is dealt for them."""
    server = PlayWorld(world.block, world.location, tmp_path, world.platform)
    server.start(open_files=1024)
    player = next(iter(world.players))
    half = (f"POST /v1/players/{player}/plays HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
            "Idempotency-Key: flood-flood-1\r\n\r\n{").encode()  # fmt: skip
    before = world.totals()
    attackers = []
    try:
        attackers = flood(server.url, half)
        path = f"/v1/players/{player}"
        headers = world.platform.headers("GET", server.url + path, b"")
        response = httpx.get(server.url + path, headers=headers, timeout=30)
        assert response.status_code == 200, response.text
        assert cut(attackers) >= FLOOD - 1_024
        assert server.process is not None
        assert len(os.listdir(f"/proc/{server.process.pid}/fd")) < 1_024
    finally:
        for sock in attackers:
            sock.close()
        server.stop()
    assert world.totals() == before
    log = (tmp_path / "play.log").read_text()
    assert "Traceback" not in log and "ERROR" not in log, log


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_stopped_while_its_database_is_down_it_says_so_in_one_line(block, ledgers, tmp_path):
    """SIGTERM while PostgreSQL refuses the ledger's connections: the server stops, one line
    says what was left unsealed and why, no traceback.  (PostgreSQL only: an SQLite ledger has
    no server to stop.)"""
    import psycopg

    down = make_world(block, ledgers.new(), tmp_path, players=1, balance_eur=5)
    down.start()
    raw = down.play_request("player-00")
    with httpx.Client(base_url=down.url, timeout=60) as client:
        assert _send(client, raw).status_code == 201  # an entry to seal
    dsn = down.location.dsn  # type: ignore[union-attr]
    name, admin = dsn.rsplit("/", 1)[1].split("?")[0], dsn.rsplit("/", 1)[0] + "/postgres"
    log = tmp_path / "play.log"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE datname = %s", (name,))  # fmt: skip
            before = len(log.read_text())
            assert down.process is not None
            down.process.terminate()
            down.process.wait(timeout=60)
        finally:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    after = log.read_text()[before:]
    assert "Traceback" not in after and "shutdown failed" not in after, after
    said = [line for line in after.splitlines() if "database unavailable" in line]
    assert len(said) == 1 and "sealed by the next process" in said[0], after
    with Ledger(down.location, key=load_ledger_key(down.keys)) as book:  # sealed now, whole
        assert book.verify_log().ok


def test_the_openapi_document_describes_exactly_the_routes(world):
    ledger, dealer = open_dealer(world.location, world.keys)
    guard = create_app(ledger, dealer, threads=1, demo=False)
    routes = {route.path for route in guard.app.routes}  # type: ignore[attr-defined]
    ledger.close()
    documented = set(openapi_document()["paths"])
    assert documented == routes
    with httpx.Client(base_url=world.url, timeout=30) as client:
        assert set(client.get("/v1/openapi.json").json()["paths"]) == documented
