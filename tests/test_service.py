"""The validation service (issue 12) through a real ``printpipe serve``, on both databases:
signed requests only, a terminal acting only on its retailer's packs, office-only payments
above the limit, idempotent claims, throttling, one-line JSON errors; and the reference client.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.commitment import COMMITMENT_FILE, load_commitment
from printpipe.commitment.inclusion import parse_proof, proof_problem
from printpipe.ledger import LOTTERY, TerminalId, database_errors, parse_pack_ref
from printpipe.ledger.store import PostgresLocation, ticket_key
from printpipe.service.app import RateLimit, Service, api_document, create_app
from printpipe.service.openapi import openapi_document
from printpipe.service.signatures import RequestSigner
from printpipe.service.terminal import TerminalClient
from tests.conftest import run_cli
from tests.ledger_helpers import OFFICE_SCOPE, db_arg
from tests.service_helpers import (
    FLOOD,
    SERVE_OPTIONS,
    World,
    assert_problem,
    assert_revocation_reaches_every_worker,
    build_world,
    cut,
    flood,
    register_terminal,
    server_log,
    start_server,
    stop_server,
)
from tests.storm import signed_request


@pytest.fixture(scope="module")
def world(ledgers, game, keys_dir, tmp_path_factory):
    world = build_world(game, keys_dir, ledgers.new(), tmp_path_factory.mktemp("service"))
    start_server(world, options=(*SERVE_OPTIONS, "--header-timeout", "2", "--body-timeout", "2"))
    yield world
    stop_server(world)
    log = server_log(world)
    assert "Traceback" not in log and "ERROR" not in log, log


def ticket_id(ticket) -> int:
    return ticket_key(ticket.ticket)


def client(world: World, name: str, **options) -> TerminalClient:
    return TerminalClient(world.url, key=world.private[name], **options)


def signed(world: World, name: str, method: str, path: str, body: bytes, **extra: str):
    headers = world.signers[name].headers(method, world.url + path, body, fields=extra)
    return httpx.request(method, world.url + path, content=body, headers=headers)


def test_a_retailer_validates_and_claims_its_ticket_once(world):
    ticket = world.of_pack(1, prize="small")[0]
    with client(world, "till-1") as till:
        assert till.validate(ticket.code).text == f"WIN {ticket.prize}"
        assert till.validate(ticket.inventory).text == "PACK ACTIVATED"
        key = uuid.uuid4().hex
        paid = till.claim(ticket.code, idempotency_key=key)
        assert (paid.status, paid.text, paid.replayed) == (200, f"PAID {ticket.prize}", False)
        # the answer was lost: the same claim again is answered PAID, never paid twice
        again = till.claim(ticket.code, idempotency_key=key)
        assert (again.text, again.replayed) == (f"PAID {ticket.prize}", True)
        assert again.data == paid.data
        other = till.claim(ticket.code)  # a new claim of the same ticket
        assert other.text == f"ALREADY PAID {paid.data['paid_at']} till-1"
    proof = parse_proof(json.dumps(paid.data["proof"]).encode())
    commitment = load_commitment(world.folder / "blk" / COMMITMENT_FILE)
    assert proof.ticket.serial == ticket.ticket.serial and proof.ticket.prize_eur == ticket.prize
    assert proof_problem(proof, commitment) is None  # the winner's receipt, checked offline
    assert "proof" not in other.data
    body = json.dumps({"code": world.of_pack(1, prize="small")[1].code}).encode()
    reused = signed(world, "till-1", "POST", "/v1/claims", body, **{"Idempotency-Key": key})
    assert reused.status_code == 422 and reused.json()["error"] == "idempotency_key_reused"
    with world.ledger() as book:
        payments = book.query(
            "SELECT terminal, amount_eur FROM payments WHERE ticket = ?", (ticket_id(ticket),)
        )
        assert payments == [("till-1", ticket.prize)]
        claims = book.query(
            "SELECT answer FROM audit_log WHERE action = 'claim' AND ticket = ?",
            (ticket.ticket.serial,),
        )
        assert [a for (a,) in claims].count(f"PAID {ticket.prize}") == 1
        assert book.verify_log().ok


def test_a_claim_in_progress_answers_409_then_its_answer(world):
    ticket = world.of_pack(2, prize="small")[0]
    body = json.dumps({"code": ticket.code}).encode()
    key = uuid.uuid4().hex
    with world.ledger(read_only=False) as book:  # another worker holds the key
        start = book.begin_claim(
            terminal=TerminalId("till-1"),
            key=key,
            fingerprint=book.request_fingerprint("POST", "/v1/claims", body),
        )
    assert start.outcome == "proceed"
    busy = signed(world, "till-1", "POST", "/v1/claims", body, **{"Idempotency-Key": key})
    assert busy.status_code == 409 and int(busy.headers["Retry-After"]) >= 1
    assert busy.json()["error"] == "in_progress"
    with world.ledger() as book:  # nothing was paid: the holder of the key pays, or a retry
        paid = book.query("SELECT COUNT(*) FROM payments WHERE ticket = ?", (ticket_id(ticket),))
        assert paid == [(0,)]
        stored = book.query("SELECT fingerprint FROM idempotency WHERE key = ?", (key,))
    # The body holds the VIRN: an unkeyed hash of it would give the VIRN back by brute force.
    assert bytes(stored[0][0]) != hashlib.sha256(b"POST /v1/claims\n" + body).digest()


def test_unsigned_forged_expired_replayed_and_revoked_requests_get_401_and_change_nothing(
    world, tmp_path
):
    ticket = world.of_pack(1, prize="small")[2]
    body = json.dumps({"code": ticket.code}).encode()
    path = "/v1/validations"
    before = world.counts()
    good = world.signers["till-1"].headers("POST", world.url + path, body)
    attempts = {
        "unsigned": {},
        "no digest": {k: v for k, v in good.items() if k != "Content-Digest"},
        "other body": good,  # sent with another body below
        "expired": world.signers["till-1"].headers(
            "POST", world.url + path, body, created=int(time.time()) - 61
        ),
        "future": world.signers["till-1"].headers(
            "POST", world.url + path, body, created=int(time.time()) + 90
        ),  # 30 s to spare: the attempts before it take time on a loaded machine
        "other path": world.signers["till-1"].headers("POST", world.url + "/v1/claims", body),
        "unknown key": RequestSigner(Ed25519PrivateKey.generate()).headers(
            "POST", world.url + path, body
        ),
        "garbage": {**good, "Signature": "sig1=:AAAA:", "Signature-Input": 'sig1=("x'},
    }
    for name, headers in attempts.items():
        sent = body if name != "other body" else body.replace(b"0", b"1", 1)
        response = httpx.post(world.url + path, content=sent, headers=headers)
        problem = assert_problem(response.status_code, response.headers, response.text, 401)
        assert problem["error"] == "unauthorized", name
        assert response.headers["www-authenticate"].startswith("Signature ")
        assert response.headers["accept-signature"] == (
            'sig1=("@method" "@path" "@query" "content-digest");alg="ed25519";created;nonce'
        )
    assert world.counts() == before, "a refused request wrote something"
    first = httpx.post(world.url + path, content=body, headers=good)
    assert first.status_code == 200 and first.json()["text"] == f"WIN {ticket.prize}"
    replay = httpx.post(world.url + path, content=body, headers=good)
    assert replay.status_code == 401 and "replay" in replay.json()["detail"]
    # revoked: from the next request on
    private = world.private["storm-63"]
    with TerminalClient(world.url, key=private) as soon_stolen:
        assert soon_stolen.validate(ticket.code).status == 200  # its key is cached now
    result = run_cli("terminals", "revoke", "storm-63", "--db", db_arg(world.location),
                     "--reason", "stolen")  # fmt: skip
    assert result.returncode == 0, result.stderr
    after_revoke = world.counts()
    with TerminalClient(world.url, key=private) as stolen:
        refused = stolen.validate(world.of_pack(1)[0].code)
    assert refused.status == 401 and world.counts() == after_revoke


def test_a_revocation_reaches_every_worker_at_once(world):
    """``printpipe serve --workers 2``: a terminal both workers answered is refused by both as
    soon as ``printpipe terminals revoke`` returns (each request reads the terminal's row)."""
    with world.ledger(read_only=False) as book:
        private = register_terminal(book, "till-revoked", role="retailer", retailer="shop-1")
    signer = RequestSigner(private)
    two = World(world.location, world.keys_dir, world.key, world.folder / "two-workers", [])
    two.folder.mkdir(exist_ok=True)
    start_server(two, workers=2)

    def send() -> httpx.Response:
        headers = signer.headers("GET", two.url + "/v1/packs/000001", b"")
        return httpx.get(two.url + "/v1/packs/000001", headers=headers, timeout=60)

    def revoke() -> None:
        run_cli("terminals", "revoke", "till-revoked", "--db", db_arg(world.location),
                "--reason", "stolen", check=True)  # fmt: skip

    try:
        assert_revocation_reaches_every_worker(send, revoke)
    finally:
        stop_server(two)
    assert "Traceback" not in server_log(two)


def test_a_terminal_acts_only_on_its_retailers_packs(world):
    foreign_winner = world.of_pack(1, prize="small")[3]  # shop-1's pack
    before = world.counts()
    with client(world, "office-1") as office, client(world, "storm-00") as other_shop_1:
        assert other_shop_1.validate(foreign_winner.code).text == f"WIN {foreign_winner.prize}"
        assert office.validate(foreign_winner.code).ok
    with TerminalClient(world.url, key=world.private["storm-01"]) as shop_1:
        # pack 5 belongs to shop-2: shop-1's terminal gets 403 for everything about it
        pack_5 = world.of_pack(5, prize="small")[0]
        for answer in (shop_1.validate(pack_5.code), shop_1.claim(pack_5.code)):
            assert answer.status == 403 and answer.text == "PACK OF ANOTHER RETAILER"
        wrong = pack_5.ticket.validation_code((int(pack_5.code[13:23]) + 1) % 10**10)
        assert shop_1.validate(wrong).status == 403  # not counted against the ticket
        assert shop_1.activate("000006").status == 403
        assert shop_1.pack_state("000005").status == 403
        assert shop_1.activate("000007").status == 403  # still at the lottery
    with world.ledger() as book:
        assert book.query("SELECT COUNT(*) FROM payments WHERE ticket >= 412000005000") == [(0,)]
        assert book.query("SELECT state FROM packs WHERE pack = 6") == [("issued",)]
        refusals = book.query("SELECT COUNT(*) FROM audit_log WHERE action = 'refuse'")[0][0]
    after = world.counts()
    assert after["virn_failures"] == before["virn_failures"]
    assert refusals >= 6


def test_a_platform_key_reaches_nothing_of_the_validation_service(world):
    """The issue's attack: a terminal registered with ``--role platform`` (the online operator's)
    read another retailer's pack, activated a pack never shipped and was answered PAID for one
    of its prizes.  Each is refused, 403 naming the role; nothing changes but the audit."""
    never_shipped = world.of_pack(7, prize="small")[0]  # pack 7: at the lottery
    foreign = world.of_pack(5, prize="small")[0]  # shop-2's
    before = world.counts()
    attempts = [
        ("GET", "/v1/packs/000005", b"", {}),
        ("POST", "/v1/packs/000007/activation", b"", {}),
        ("POST", "/v1/validations", json.dumps({"code": foreign.code}).encode(), {}),
        ("POST", "/v1/claims", json.dumps({"code": never_shipped.code}).encode(),
         {"Idempotency-Key": uuid.uuid4().hex}),
    ]  # fmt: skip
    for method, path, body, extra in attempts:
        response = signed(world, "platform-1", method, path, body, **extra)
        problem = assert_problem(response.status_code, response.headers, response.text, 403)
        assert problem["error"] == "role_refused" and problem["role"] == "platform", path
        assert "role platform" in problem["detail"]
    after = world.counts()
    assert after["payments"] == before["payments"]
    assert after["packs WHERE state = 'activated'"] == before["packs WHERE state = 'activated'"]
    assert after["audit_log"] == before["audit_log"] + len(attempts)  # each refusal audited
    with world.ledger() as book:
        assert book.query("SELECT state, retailer FROM packs WHERE pack = 7") == [("issued", None)]
        paid = book.query("SELECT COUNT(*) FROM payments WHERE terminal = 'platform-1'")
        assert paid == [(0,)]
        refused = book.query(
            "SELECT answer FROM audit_log WHERE terminal = 'platform-1' AND action = 'refuse'"
        )
    assert len(refused) == len(attempts) and all("role platform" in a for (a,) in refused)


CALLERS = {"anyone": None, "retailer": "till-1", "another retailer": "till-2",
           "office": "office-1", "platform": "platform-1"}  # fmt: skip
"""Who sends each request of the table: unsigned, or signed by a terminal of each role
(``till-2``: a retailer's terminal, of another retailer than the pack's)."""


def _table_requests(world: World) -> dict[tuple[str, str], tuple[str, bytes]]:
    """One request for each operation of the service (method, OpenAPI path): its path and body,
    answered 2xx to a caller the route admits and whose pack it is (pack 1: shop-1's)."""
    loser = json.dumps({"code": world.of_pack(1, prize="none")[5].code}).encode()
    return {
        ("GET", "/v1/health"): ("/v1/health", b""),
        ("GET", "/v1/health/live"): ("/v1/health/live", b""),
        ("GET", "/v1/health/ready"): ("/v1/health/ready", b""),
        ("GET", "/metrics"): ("/metrics", b""),
        ("GET", "/v1/openapi.json"): ("/v1/openapi.json", b""),
        ("POST", "/v1/validations"): ("/v1/validations", loser),
        ("POST", "/v1/claims"): ("/v1/claims", loser),  # NO WIN: nothing is paid
        ("GET", "/v1/packs/{pack}"): ("/v1/packs/000001", b""),
        ("POST", "/v1/packs/{pack}/activation"): ("/v1/packs/000001/activation", b""),
    }


def test_every_route_admits_exactly_the_roles_its_openapi_operation_lists(world):
    """The table: every operation of the served OpenAPI document x every caller.  A route the
    application serves without a row here fails the test.  A caller the operation's
    ``x-printpipe-roles`` lists is answered (a retailer's terminal only about its retailer's
    pack: 403 ``not_your_pack`` for another's), an unsigned one 401, any other terminal 403
    ``role_refused`` naming its role."""
    document = httpx.get(world.url + "/v1/openapi.json").json()
    operations = {(m.upper(), path): op for path, item in document["paths"].items()
                  for m, op in item.items()}  # fmt: skip
    with world.ledger() as book:
        app = create_app(book, threads=1)
    served = {(route.method, route.path) for route in app.app.routes}  # type: ignore[attr-defined]
    requests = _table_requests(world)
    assert served == set(operations) == set(requests), "a route without its row in the table"
    roles = {"retailer": "retailer", "another retailer": "retailer", "office": "office",
             "platform": "platform"}  # fmt: skip
    for (method, template), operation in operations.items():
        admitted = operation["x-printpipe-roles"]
        path, body = requests[(method, template)]
        for caller, terminal in CALLERS.items():
            extra = {"Idempotency-Key": uuid.uuid4().hex} if template == "/v1/claims" else {}
            if terminal is None:
                response = httpx.request(method, world.url + path, content=body, headers=extra)
            else:
                response = signed(world, terminal, method, path, body, **extra)
            row = (method, template, caller, response.status_code, response.text[:200])
            if admitted == ["anyone"]:
                assert response.status_code == 200, row
            elif terminal is None:
                assert response.status_code == 401, row
            elif roles[caller] not in admitted:
                problem = assert_problem(response.status_code, response.headers, response.text, 403)
                assert problem["error"] == "role_refused", row
                assert problem["role"] == roles[caller] and roles[caller] in problem["detail"], row
            elif caller == "another retailer":
                problem = assert_problem(response.status_code, response.headers, response.text, 403)
                assert problem["error"] == "not_your_pack", row
            else:
                assert response.status_code == 200, row


def test_a_retailer_activates_its_pack_on_receipt_and_only_the_office_pays_big_prizes(world):
    pack_6 = world.of_pack(6, prize="small")[0]
    with client(world, "till-2") as till_2:
        assert till_2.validate(pack_6.code).text == "PACK NOT ACTIVATED"
        activated = till_2.activate("000006")
        assert activated.status == 200 and activated.text == "pack 0412-000006: activated"
        assert till_2.activate("000006").text == "pack 0412-000006: already activated"
        assert till_2.pack_state("0412-000006").data["state"] == "activated"
        assert till_2.validate(pack_6.code).text == f"WIN {pack_6.prize}"
    big = next(t for p in (1, 2, 3, 4) for t in world.of_pack(p, prize="big"))
    with client(world, "till-1") as till, client(world, "office-1") as office:
        refused = till.claim(big.code)
        assert refused.text == f"WIN {big.prize} - claim at the lottery"
        smuggled = json.dumps({"code": big.code, "office": True}).encode()
        asked = signed(world, "till-1", "POST", "/v1/claims", smuggled,
                       **{"Idempotency-Key": uuid.uuid4().hex})  # fmt: skip
        assert asked.status_code == 400  # a request cannot ask for the office's power
        assert office.claim(big.code).text == f"PAID {big.prize}"


def test_a_terminal_over_its_limit_gets_429_with_retry_after_and_the_office_sees_it(world):
    ticket = world.of_pack(3, prize="small")[0]
    virn = int(ticket.code[13:23])
    with client(world, "storm-02") as rogue:
        answers = [
            rogue.validate(ticket.ticket.validation_code((virn + k) % 10**10)) for k in (1, 2, 3)
        ]
        assert [a.text for a in answers] == ["WRONG VALIDATION NUMBER"] * 3
        throttled = rogue.validate(ticket.code)
    assert throttled.status == 429 and throttled.text.startswith("TERMINAL THROTTLED ")
    raw = signed(world, "storm-02", "POST", "/v1/validations", b'{"code": "1"}')
    assert raw.status_code == 200  # INVALID CODE: nothing about a ticket, not throttled
    code = json.dumps({"code": ticket.code}).encode()
    again = signed(world, "storm-02", "POST", "/v1/validations", code)
    assert again.status_code == 429 and int(again.headers["Retry-After"]) > 3600
    locks = run_cli("ledger", "locks", "--db", db_arg(world.location))
    assert "throttled terminal storm-02: 3 wrong validation numbers" in locks.stdout
    with world.ledger() as book:
        throttles = book.query("SELECT terminal FROM audit_log WHERE action = 'throttle'")
        assert ("storm-02",) in throttles


def test_errors_are_one_line_of_problem_json(world):
    cases = [
        ("GET", "/nowhere", b"", 404),
        ("DELETE", "/v1/claims", b"", 405),
        ("POST", "/v1/validations", b"x" * 1_000_000, 413),
    ]
    for method, path, body, status in cases:
        response = httpx.request(method, world.url + path, content=body)
        assert_problem(response.status_code, response.headers, response.text, status)
        assert len(response.headers["x-request-id"]) == 32
    deep = b'{"code": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    before = world.counts()
    bodies = (b"{", b'{"code": 5}', b'{"code": "1", "x": 1}', "é".encode(), b"[]",
              '{"code": "1"}'.encode("utf-16"), b'{"code": "1", "code": "2"}',
              b"\xef\xbb\xbf" + b'{"code": "1"}', deep[:16_000] + b"}",
              b'{"code": "\\udc00"}')  # fmt: skip
    for body in bodies:
        response = signed(world, "storm-03", "POST", "/v1/validations", body)
        problem = assert_problem(response.status_code, response.headers, response.text, 400)
        assert problem["error"] == "bad_request" and problem["request_id"]
    missing_key = signed(world, "storm-03", "POST", "/v1/claims", b'{"code": "1"}')
    assert missing_key.status_code == 400
    after = world.counts()
    assert after["audit_log"] == before["audit_log"] + len(bodies) + 1  # each refusal audited
    assert after["payments"] == before["payments"]


def _raw(world: World, data: bytes, *, wait: float = 10.0) -> tuple[int, dict, str]:
    """Send raw bytes; the answer's status, headers (lower-case) and body."""
    host, port = world.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(data)
        received = b""
        while b"\r\n\r\n" not in received or len(received.partition(b"\r\n\r\n")[2]) < int(
            dict(
                line.lower().split(b": ", 1)
                for line in received.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]
                if b": " in line
            ).get(b"content-length", b"0")
        ):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {n.lower(): v for n, _, v in (line.partition(": ") for line in lines[1:])}
    return int(lines[0].split(" ")[1]), headers, body.decode()


def test_the_http_layer_answers_problems_too_malformed_slow_and_oversized_requests(world):
    malformed = _raw(world, b"GET /v1/health HTTP/1.1\r\nHost x\r\n\r\n")
    assert_problem(*malformed, 400)
    many = b"".join(b"X-F%d: 1\r\n" % i for i in range(100))
    too_many = _raw(world, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
    assert_problem(*too_many, 431)
    endless = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000
    assert_problem(*_raw(world, endless), 431)  # not waiting for the header's end
    began = time.monotonic()
    slow = _raw(world, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")  # never ends
    assert_problem(*slow, 408)
    assert 1.5 <= time.monotonic() - began < 8  # --header-timeout 2


def test_a_head_over_the_limit_is_refused_however_it_arrives(world):
    """16 KiB of request line and headers, whether they come in many reads or in one (a head
    of 20 or 100 KiB sent at once, or behind a pipelined request): 431, and the application
    never sees it."""
    for size in (20_000, 100_000):
        big = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"
        assert_problem(*_raw(world, big), 431)
        pipelined = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n" + big
        assert_problem(*_raw(world, pipelined), 431)  # the connection is refused as a whole
    for size in (20_000, 100_000):  # the protocol itself, fed the whole head in one read
        status, text, called = _fed_at_once(
            b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * size + b"\r\n\r\n"
        )
        assert (status, called) == (431, False), text


def _fed_at_once(data: bytes) -> tuple[int, str, bool]:
    """``data`` given to the service's HTTP protocol in one ``data_received``: the status it
    wrote back, the text, and whether the application was called."""
    import uvicorn
    from uvicorn.server import ServerState

    from printpipe.service.protocol import BoundedHttpToolsProtocol

    called = []

    async def app(scope: dict, receive: Any, send: Any) -> None:
        called.append(scope)

    class Transport(asyncio.Transport):
        def __init__(self) -> None:
            super().__init__()
            self.sent, self.closing = b"", False

        def write(self, data: bytes) -> None:  # type: ignore[override]
            self.sent += data

        def close(self) -> None:
            self.closing = True

        def is_closing(self) -> bool:
            return self.closing

        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return ("127.0.0.1", 9) if name in ("sockname", "peername") else default

    async def feed() -> Transport:
        config = uvicorn.Config(app, http=BoundedHttpToolsProtocol, lifespan="off")
        config.load()
        protocol = BoundedHttpToolsProtocol(config=config, server_state=ServerState(),
                                            app_state={})  # fmt: skip
        transport = Transport()
        protocol.connection_made(transport)
        protocol.data_received(data)
        await asyncio.sleep(0.05)  # any application task it started runs
        protocol.connection_lost(None)
        return transport

    sent = asyncio.run(feed()).sent
    head, _, body = sent.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode(), bool(called)


def test_a_body_that_never_ends_is_answered_408_and_writes_nothing(world):
    """The body has its deadline as the headers have theirs (--body-timeout 2): a request
    whose body stops halfway is answered 408 and closed; nothing is written nor logged."""
    body = json.dumps({"code": world.of_pack(1, prize="small")[7].code}).encode()
    raw = signed_request(world.signers["storm-13"], world.url, "POST", "/v1/validations", body)
    before, log_before = world.counts(), server_log(world)
    began = time.monotonic()
    answer = _raw(world, raw[: -len(body) // 2])
    assert 1.5 <= time.monotonic() - began < 8
    problem = assert_problem(*answer, 408)
    assert "body" in problem["detail"]
    time.sleep(0.2)
    assert world.counts() == before
    assert server_log(world) == log_before


def test_the_request_id_is_echoed_and_written_in_the_audit_entry(world):
    body = json.dumps({"code": world.of_pack(1, prize="none")[2].code}).encode()
    response = signed(world, "storm-12", "POST", "/v1/validations", body)
    request_id = response.headers["x-request-id"]
    assert response.status_code == 200 and len(request_id) == 32
    with world.ledger() as book:
        rows = book.query("SELECT terminal, action FROM audit_log WHERE request = ?", (request_id,))
    assert rows == [("storm-12", "validate")]


def test_a_body_cut_short_writes_nothing_and_logs_nothing(world):
    ticket = world.of_pack(1, prize="small")[6]
    body = json.dumps({"code": ticket.code}).encode()
    raw = signed_request(world.signers["storm-11"], world.url, "POST", "/v1/validations", body)
    before, log_before = world.counts(), server_log(world)
    host, port = world.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(raw[: -len(body) // 2])  # the headers and half the body, then gone
    time.sleep(0.5)
    assert world.counts() == before
    assert server_log(world) == log_before


HALF_HEAD = b"POST /v1/validations HTTP/1.1\r\nHost: x\r\nContent-Type: a"
HALF_BODY = b'POST /v1/validations HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"code"'


@pytest.mark.parametrize("half", [HALF_HEAD, HALF_BODY], ids=["headers", "bodies"])
def test_the_service_stays_up_for_terminals_under_1100_half_requests(world, half):
    """1,100 connections that never finish their headers, or whose body never ends, against a
    server allowed 1,024 open files (and timeouts longer than the test): an honest terminal is
    still answered at its first attempt; the connections that waited longest made room."""
    server = World(world.location, world.keys_dir, world.key, world.folder / "flood", [])
    server.folder.mkdir(exist_ok=True)
    options = (*SERVE_OPTIONS, "--header-timeout", "60", "--body-timeout", "60")
    start_server(server, options=options, open_files=1024)
    attackers = []
    try:
        attackers = flood(server.url, half)
        ticket = world.of_pack(1, prize="small")[4]
        began = time.monotonic()
        with TerminalClient(server.url, key=world.private["storm-04"], attempts=1) as till:
            answer = till.validate(ticket.code)
        elapsed = time.monotonic() - began
        assert answer.text == f"WIN {ticket.prize}", answer  # once: a 503 is not retried
        assert elapsed < 5.0, elapsed  # at once (the shared machine's load aside)
        assert cut(attackers) >= FLOOD - 1_024  # the longest waiting made room
        assert server.process is not None
        descriptors = len(os.listdir(f"/proc/{server.process.pid}/fd"))
        assert descriptors < 1_024
    finally:
        for sock in attackers:
            sock.close()
        stop_server(server)
    log = server_log(server)
    assert "Traceback" not in log and "ERROR" not in log, log


def test_health_and_the_openapi_document_describe_every_route(world):
    health = httpx.get(world.url + "/v1/health").json()
    assert health["status"] == "ok" and health["database"] in ("sqlite", "postgresql")
    served = httpx.get(world.url + "/v1/openapi.json").json()
    assert served == json.loads(json.dumps(api_document()))
    assert {k: v for k, v in served.items() if k != "paths"} == json.loads(
        json.dumps({k: v for k, v in openapi_document().items() if k != "paths"})
    )
    with world.ledger() as book:
        app = create_app(book, threads=1)
    routes = {(route.path, route.method) for route in app.app.routes}  # type: ignore[attr-defined]
    documented = {(path, m.upper()) for path, item in served["paths"].items() for m in item}
    assert routes == documented


def test_the_reference_client_on_the_command_line(world, tmp_path):
    keyfile = tmp_path / "till.key"
    result = run_cli("terminal", "keygen", str(keyfile))
    assert result.returncode == 0 and (tmp_path / "till.key.pub").exists()
    assert oct(keyfile.stat().st_mode & 0o777) == "0o600"
    added = run_cli("terminals", "add", "till-9", "--db", db_arg(world.location), "--retailer",
                    "shop-1", "--public-key", f"{keyfile}.pub")  # fmt: skip
    assert added.returncode == 0 and "registered terminal till-9" in added.stdout
    listed = run_cli("terminals", "list", "--db", db_arg(world.location))
    assert "till-9: retailer shop-1" in listed.stdout
    ticket = world.of_pack(4, prize="small")[0]
    server = ["--server", world.url, "--key", str(keyfile)]
    answer = run_cli("terminal", "validate", ticket.code, *server)
    assert (answer.returncode, answer.stdout.strip()) == (0, f"WIN {ticket.prize}")
    paid = run_cli("terminal", "claim", ticket.code, *server, "--idempotency-key", "k" * 16,
                   "--proof-out", str(tmp_path / "receipt.json"))  # fmt: skip
    assert paid.returncode == 0 and paid.stdout.startswith(f"PAID {ticket.prize}\n")
    assert oct((tmp_path / "receipt.json").stat().st_mode & 0o777) == "0o600"
    again = run_cli("terminal", "claim", ticket.code, *server, "--idempotency-key", "k" * 16,
                    "--proof-out", str(tmp_path / "again.json"))  # fmt: skip
    assert (again.returncode, again.stdout.splitlines()[0]) == (0, f"PAID {ticket.prize}")
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "receipt.json").read_bytes()
    commitment = world.folder / "blk" / COMMITMENT_FILE
    checked = run_cli("verify-proof", str(tmp_path / "receipt.json"), "--commitment",
                      str(commitment), "--keys", str(world.keys_dir))  # fmt: skip
    assert checked.returncode == 0 and f"wins {ticket.prize} EUR" in checked.stdout
    other = run_cli("terminal", "claim", ticket.code, *server)
    assert other.returncode == 1 and other.stdout.startswith("ALREADY PAID ")
    strange = run_cli("terminal", "validate", ticket.code, "--server", world.url, "--key",
                      str(tmp_path / "till.key.pub"))  # fmt: skip
    assert strange.returncode == 1 and len(strange.stderr.strip().splitlines()) == 1


def test_the_client_retries_a_lost_answer_with_the_same_key(world):
    """A transport that drops the first answer: the claim is sent twice, paid once."""
    ticket = world.of_pack(4, prize="small")[1]
    sent: list[str] = []
    real = httpx.HTTPTransport()

    class Lossy(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            response = real.handle_request(request)
            sent.append(request.headers["Idempotency-Key"])
            if len(sent) == 1:
                response.read()
                raise httpx.ReadTimeout("answer lost", request=request)
            return response

    with TerminalClient(world.url, key=world.private["till-1"], transport=Lossy()) as till:
        answer = till.claim(ticket.code)
    assert answer.text == f"PAID {ticket.prize}" and answer.replayed
    assert len(sent) == 2 and sent[0] == sent[1]
    with world.ledger() as book:
        serial = ticket.ticket.serial
        assert book.query(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'claim' AND ticket = ?", (serial,)
        ) == [(1,)]


class InProcess:
    """Requests to the application itself, without uvicorn (httpx's ASGI transport)."""

    def __init__(self, app: object) -> None:
        self.app = app

    def request(self, method: str, path: str, **options: object) -> httpx.Response:
        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)  # type: ignore[arg-type]
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                return await c.request(method, path, **options)  # type: ignore[arg-type]

        return asyncio.run(send())

    def post(self, path: str, **options: object) -> httpx.Response:
        return self.request("POST", path, **options)

    def get(self, path: str, **options: object) -> httpx.Response:
        return self.request("GET", path, **options)


@contextlib.contextmanager
def in_process(world: World, **options) -> Iterator[tuple[InProcess, Service]]:
    """The application on the world's ledger, without uvicorn (its ``Service`` to tamper with)."""
    book = world.ledger(read_only=False)
    app = create_app(book, threads=1, **options)
    try:
        yield InProcess(app), app.app.state.service  # type: ignore[attr-defined]
    finally:
        book.close()


def _signed_in_process(world: World, name: str, method: str, path: str, body: bytes, **extra):
    headers = world.signers[name].headers(method, "http://testserver" + path, body, fields=extra)
    return headers


def test_each_terminal_is_rate_limited_on_every_request_with_retry_after(world):
    before = world.counts()
    with in_process(world, rate_limit=RateLimit(rate=0.5, burst=3)) as (http, _):
        statuses = []
        for _ in range(5):
            body = b'{"code": "1"}'
            headers = _signed_in_process(world, "storm-05", "POST", "/v1/validations", body)
            response = http.post("/v1/validations", content=body, headers=headers)
            statuses.append(response.status_code)
        assert statuses == [200, 200, 200, 429, 429]
        problem = assert_problem(429, response.headers, response.text, 429)
        assert problem["error"] == "rate_limited" and int(response.headers["retry-after"]) >= 1
        other = _signed_in_process(world, "storm-06", "GET", "/v1/packs/000001", b"")
        assert http.get("/v1/packs/000001", headers=other).status_code == 200  # its own bucket
    after = world.counts()
    assert after["audit_log"] == before["audit_log"] + 3  # the refused ones wrote nothing
    assert after["nonces"] <= before["nonces"] + 4


def test_a_database_outage_or_an_unexpected_error_is_503_with_retry_after_never_500(world, caplog):
    ticket = world.of_pack(1, prize="small")[5]
    body = json.dumps({"code": ticket.code}).encode()
    failures = {"database": database_errors()[0]("disk I/O error"), "bug": KeyError("oops")}
    with in_process(world) as (http, service):
        real = service.validations.run
        for name, failure in failures.items():

            def broken(_: object) -> None:
                raise failure  # noqa: B023 - called before the loop moves on

            service.validations.run = broken  # type: ignore[assignment]
            headers = _signed_in_process(world, "storm-07", "POST", "/v1/validations", body)
            response = http.post("/v1/validations", content=body, headers=headers)
            problem = assert_problem(response.status_code, response.headers, response.text, 503)
            assert problem["error"] == "unavailable" and response.headers["retry-after"] == "1"
            assert response.headers["x-request-id"] == problem["request_id"], name
        service.validations.run = real
    assert "Traceback" not in caplog.text
    assert [r.levelname for r in caplog.records if r.name == "printpipe.service"] == [
        "WARNING",
        "ERROR",
    ]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_stopped_database_answers_503_and_the_client_retries_its_claim(world):
    """PostgreSQL refuses the ledger's connections for a while (its server stopped for this
    database: connections cut, new ones refused); a claim sent meanwhile is retried with its
    key and paid once when the database is back.  PostgreSQL only: an SQLite ledger has no
    server to stop (its outage is the in-process test's)."""
    assert isinstance(world.location, PostgresLocation)
    import psycopg

    name = world.location.dsn.rsplit("/", 1)[1].split("?")[0]
    admin = world.location.dsn.rsplit("/", 1)[0] + "/postgres"
    ticket = world.of_pack(2, prize="small")[1]
    assert httpx.get(world.url + "/v1/health").status_code == 200  # up, its pool open
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                     (name,))  # fmt: skip
        try:
            body = json.dumps({"code": ticket.code}).encode()
            refused = signed(world, "till-1", "POST", "/v1/validations", body)
            problem = assert_problem(refused.status_code, refused.headers, refused.text, 503)
            assert problem["error"] == "unavailable" and refused.headers["retry-after"] == "1"
            with ThreadPoolExecutor(1) as pool, client(world, "till-1", attempts=12) as till:
                claim = pool.submit(till.claim, ticket.code, idempotency_key="outage-claim-1")
                time.sleep(1.5)
                conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
                answer = claim.result(timeout=120)
        finally:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert answer.text == f"PAID {ticket.prize}"
    with world.ledger() as book:
        paid = book.query("SELECT COUNT(*) FROM payments WHERE ticket = ?", (ticket_id(ticket),))
        assert paid == [(1,)]


def _produce(world: World, method: str, path: str, status: int) -> httpx.Response | tuple:
    """A request to ``method path`` answered ``status`` (its response, or status, headers, text)."""
    url = world.url
    pack_path = path.replace("{pack}", "000001")
    signed_op = path not in ("/v1/health", "/v1/openapi.json", "/v1/health/live",
                             "/v1/health/ready", "/metrics")  # fmt: skip
    code = world.of_pack(1, prize="none")[0].code
    coded = path in ("/v1/validations", "/v1/claims")
    body = json.dumps({"code": code}).encode() if coded else b""
    key = {"Idempotency-Key": uuid.uuid4().hex} if path == "/v1/claims" else {}
    if status == 400:
        if signed_op and method == "POST":
            return signed(world, "storm-08", method, pack_path, b"{", **key)
        return _raw(world, f"{method} {pack_path} HTTP/1.1\r\nHost x\r\n\r\n".encode())
    if status == 401:
        return httpx.request(method, url + pack_path, content=body)
    if status == 403:
        foreign = path.replace("{pack}", "000005")
        if coded:
            body = json.dumps({"code": world.of_pack(5)[0].code}).encode()
        return signed(world, "storm-08", method, foreign, body, **key)
    if status == 404:
        return signed(world, "storm-08", method, path.replace("{pack}", "000099"), b"")
    if status == 405:
        return httpx.request("PUT", url + pack_path)
    if status == 408:
        return _raw(world, f"{method} {pack_path} HTTP/1.1\r\n".encode())
    if status == 409:
        if path == "/v1/claims":
            with world.ledger(read_only=False) as book:
                fingerprint = book.request_fingerprint("POST", path, body)
                book.begin_claim(
                    terminal=TerminalId("storm-08"),
                    key=key["Idempotency-Key"],
                    fingerprint=fingerprint,
                )
            return signed(world, "storm-08", method, path, body, **key)
        return signed(world, "office-1", method, path.replace("{pack}", "000008"), b"")
    if status == 413:
        return httpx.request(method, url + pack_path, content=b"{" * 20_000)
    if status == 422:
        first = signed(world, "storm-08", method, path, body, **key)
        assert first.status_code == 200
        other = json.dumps({"code": world.of_pack(1, prize="none")[1].code}).encode()
        return signed(world, "storm-08", method, path, other, **key)
    if status == 429:
        with in_process(world, rate_limit=RateLimit(rate=0.1, burst=1)) as (http, _):
            for _ in range(2):
                fields = {"Idempotency-Key": uuid.uuid4().hex} if key else {}
                headers = world.signers["storm-09"].headers(
                    method, "http://testserver" + pack_path, body, fields=fields
                )
                response = http.request(method, pack_path, content=body, headers=headers)
            return response.status_code, response.headers, response.text
    if status == 431:
        many = "".join(f"X-F{i}: 1\r\n" for i in range(100))
        return _raw(world, f"{method} {pack_path} HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode())
    if status == 503:
        broken = mock.patch("printpipe.service.app.api_document", side_effect=RuntimeError)
        # the unsigned pages that ask nothing of the database: an unexpected error there too
        health = mock.patch("printpipe.service.app.health_answer", side_effect=RuntimeError)
        scrape = mock.patch("printpipe.service.metrics.exposition", side_effect=RuntimeError)
        with in_process(world) as (http, service), broken, health, scrape:
            service.run = _failing  # type: ignore[method-assign,assignment]
            fields = {"Idempotency-Key": uuid.uuid4().hex} if key else {}
            headers = world.signers["storm-09"].headers(
                method, "http://testserver" + pack_path, body, fields=fields
            )
            response = http.request(method, pack_path, content=body, headers=headers)
            return response.status_code, response.headers, response.text
    raise AssertionError(f"no way to produce {status} for {method} {path}")


async def _failing(*_: object, **__: object) -> None:
    raise database_errors()[0]("the database went away")


def test_every_error_the_openapi_document_lists_is_a_problem_of_that_status(world):
    """Each (operation, status) of ``/v1/openapi.json`` produced for real and checked: RFC
    9457 problem details of that status; 401 with WWW-Authenticate and Accept-Signature, 405
    with Allow, 409/429/503 with Retry-After."""
    with world.ledger(read_only=False) as book:  # a settled pack: its activation is refused
        book.set_pack_state(
            [parse_pack_ref("8")], state="activated", terminal=LOTTERY, scope=OFFICE_SCOPE
        )
        book.set_pack_state(
            [parse_pack_ref("8")], state="settled", terminal=LOTTERY, scope=OFFICE_SCOPE
        )
    document = httpx.get(world.url + "/v1/openapi.json").json()
    produced = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status_text, response in operation["responses"].items():
                status = int(status_text)
                if status < 400:
                    continue
                assert "application/problem+json" in response["content"], (path, status)
                if status == 408 and produced and path != "/v1/claims":
                    continue  # the HTTP layer's, whatever the path: once is enough (2 s each)
                produce = _produce(world, method.upper(), path, status)
                if isinstance(produce, httpx.Response):
                    produce = (produce.status_code, produce.headers, produce.text)
                answer: tuple[int, Any, str] = produce
                problem = assert_problem(*answer, status)
                headers = {k.lower(): v for k, v in answer[1].items()}
                for header in response.get("headers", {}):
                    assert header.lower() in headers, (path, method, status, header)
                assert problem["status"] == status
                produced += 1
    assert produced >= 45, produced
