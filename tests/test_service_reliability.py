"""The service under load and failure (issue 12), on both databases, through a real server
with two worker processes (on SQLite they take turns on the file's lock):

- 64 terminals claim the same winner at once, 50 times over: exactly one PAID each time;
- the server is killed (SIGKILL) in the middle of a storm of claims and restarted; every
  unanswered claim is retried with its key: every winner paid exactly once, by the terminal
  whose key says PAID, no payment without its audit entry, and the hash chain intact;
- 10,000 malformed requests: never a 5xx nor a traceback, and nothing written but the refusals'
  audit entries and the wrong-VIRN counters of signed requests.
"""

from __future__ import annotations

import json
import os
import random
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from printpipe.ledger.store import ticket_key
from printpipe.service.terminal import TerminalClient
from tests.conftest import kill_group
from tests.service_helpers import (
    STORM_TERMINALS,
    build_world,
    server_log,
    start_server,
    stop_server,
)
from tests.storm import claim_request, signed_request, storm, validate_request

ROUNDS = 50
KILL_WINNERS = 60


@pytest.fixture(scope="module")
def world(ledgers, game, keys_dir, tmp_path_factory):
    world = build_world(
        game, keys_dir, ledgers.new(), tmp_path_factory.mktemp("storm"), retailer_limit=150
    )
    winners = [t for p in (1, 2, 3, 4) for t in world.of_pack(p) if 0 < t.prize <= 150]
    assert len(winners) >= ROUNDS + KILL_WINNERS
    world.winners = winners  # type: ignore[attr-defined]
    start_server(world, workers=2)
    yield world
    stop_server(world)


def _storm_names() -> list[str]:
    return [f"storm-{i:02d}" for i in range(STORM_TERMINALS)]


def test_64_terminals_claim_one_winner_at_once_50_times_exactly_one_paid(world):
    names = _storm_names()
    for ticket in world.winners[:ROUNDS]:
        requests = [
            [claim_request(world.signers[n], world.url, ticket.code, uuid.uuid4().hex)]
            for n in names
        ]
        outcomes, _ = storm(world.url, requests)
        answers = [o.json().get("text", "") if o else "" for o in outcomes]
        statuses = {o.status if o else None for o in outcomes}
        assert statuses == {200}, statuses
        paid = [i for i, a in enumerate(answers) if a == f"PAID {ticket.prize}"]
        assert len(paid) == 1, answers
        payer = names[paid[0]]
        assert all(a.startswith("ALREADY PAID ") and a.endswith(f" {payer}") for i, a in
                   enumerate(answers) if i != paid[0]), answers  # fmt: skip
    with world.ledger() as book:
        keys = [ticket_key(t.ticket) for t in world.winners[:ROUNDS]]
        rows = book.query(
            f"SELECT COUNT(*), COUNT(DISTINCT ticket) FROM payments WHERE ticket IN "
            f"({', '.join('?' * len(keys))})",
            keys,
        )
        assert rows == [(ROUNDS, ROUNDS)]
        claims = book.query("SELECT COUNT(*) FROM audit_log WHERE action = 'claim'")[0][0]
        assert claims >= ROUNDS * STORM_TERMINALS
        assert book.verify_log().ok


def test_killed_in_a_storm_of_claims_restarted_every_winner_is_paid_exactly_once(world):
    winners = world.winners[ROUNDS : ROUNDS + KILL_WINNERS]
    names = _storm_names()
    rng = random.Random(12)
    claims = []  # (terminal, ticket, key): two terminals claim each winner
    for ticket in winners:
        for name in rng.sample(names, 2):
            claims.append((name, ticket, uuid.uuid4().hex))
    rng.shuffle(claims)
    per_terminal: dict[str, list[int]] = {}
    for i, (name, _, _) in enumerate(claims):
        per_terminal.setdefault(name, []).append(i)
    order = [i for indices in per_terminal.values() for i in indices]
    requests = [
        [claim_request(world.signers[n], world.url, claims[i][1].code, claims[i][2])
         for i in indices]
        for n, indices in per_terminal.items()
    ]  # fmt: skip
    answered = [0]
    pid = world.process.pid

    def kill_when_a_third_is_answered() -> None:
        answered[0] += 1
        if answered[0] == len(claims) // 3:
            os.killpg(pid, signal.SIGKILL)  # the supervisor and both workers

    outcomes, _ = storm(world.url, requests, on_answer=kill_when_a_third_is_answered)
    kill_group(world.process)  # and wait until none of its processes is left
    final: dict[int, str] = {}
    for slot, i in enumerate(order):
        outcome = outcomes[slot]
        if outcome is not None:
            final[i] = outcome.json()["text"]
    lost = [i for i in range(len(claims)) if i not in final]
    assert 0 < len(lost) < len(claims), "the kill came before or after the storm"
    world.process = None
    start_server(world, log_name="serve-after-kill.log", workers=2)

    def retry(i: int) -> tuple[int, str]:
        name, ticket, key = claims[i]
        with TerminalClient(world.url, key=world.private[name], attempts=10) as till:
            return i, till.claim(ticket.code, idempotency_key=key).text

    with ThreadPoolExecutor(16) as pool:
        final.update(pool.map(retry, lost))
    with world.ledger() as book:
        assert book.verify_log().ok
        for ticket in winners:
            key = ticket_key(ticket.ticket)
            payments = book.query("SELECT terminal FROM payments WHERE ticket = ?", (key,))
            assert len(payments) == 1, ticket  # paid exactly once
            payer = payments[0][0]
            audited = book.query(
                "SELECT COUNT(*) FROM audit_log WHERE action = 'claim' AND ticket = ? "
                "AND terminal = ? AND answer = ?",
                (ticket.ticket.serial, payer, f"PAID {ticket.prize}"),
            )
            assert audited == [(1,)], ticket  # the payment's audit entry, once
            mine = [final[i] for i, c in enumerate(claims) if c[1] is ticket]
            theirs = {c[0]: final[i] for i, c in enumerate(claims) if c[1] is ticket}
            assert sorted(mine)[-1] == f"PAID {ticket.prize}"  # the payer's key says PAID
            assert theirs[payer] == f"PAID {ticket.prize}"
            for name, text in theirs.items():
                if name != payer:
                    assert text.startswith("ALREADY PAID ") and text.endswith(f" {payer}")
        orphans = book.query(
            "SELECT COUNT(*) FROM payments p WHERE NOT EXISTS (SELECT 1 FROM audit_log a "
            "WHERE a.action = 'claim' AND a.answer LIKE 'PAID %' AND a.terminal = p.terminal)"
        )
        assert orphans == [(0,)]
    log = server_log(world) + server_log(world, "serve-after-kill.log")
    assert "Traceback" not in log


def _malformed(world, rng: random.Random) -> tuple[list[list[bytes]], list[bytes]]:
    """10,000 hostile requests over 64 connections, and 20 one-megabyte ones on their own."""
    url = world.url
    signer = world.signers["storm-10"]
    winners = world.winners
    bodies = [
        b"", b"{", b"null", b"[]", b'{"code": 1}', b'{"code": null}', b'{"code": ["1"]}',
        b'{"code": "1", "extra": true}', '{"code": "\u0660\u0661\u0662"}'.encode(),
        '{"code": "\U0001f600"}'.encode(), b'{"code": "\xff\xfe"}', b"\x00" * 40,
        '{"cöde": "x"}'.encode(), b'{"code": "' + b"9" * 5000 + b'"}',
    ]  # fmt: skip

    def code() -> str:
        choice = rng.random()
        if choice < 0.3:
            return "".join(rng.choice("0123456789- x\u00e9") for _ in range(rng.randint(0, 30)))
        if choice < 0.6:  # a real ticket, a wrong VIRN: counted, as intended
            t = rng.choice(winners)
            return t.ticket.validation_code(rng.randrange(10**10))
        if choice < 0.8:
            return rng.choice(winners).code[:-1] + str(rng.randrange(10))
        return rng.choice(winners).inventory

    requests: list[bytes] = []
    for n in range(10_000):
        kind = n % 10
        if kind in (0, 1, 2):  # unsigned
            body = rng.choice(bodies)
            requests.append(
                b"POST /v1/" + rng.choice([b"validations", b"claims"]) + b" HTTP/1.1\r\n"
                b"Host: x\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
        elif kind in (3, 4, 5):  # a signature that does not verify
            body = json.dumps({"code": code()}).encode()
            raw = validate_request(signer, url, "0" * 25)
            head, _, _ = raw.partition(b"\r\n\r\n")
            head = head.replace(
                b"Content-Length: 37", b"Content-Length: " + str(len(body)).encode()
            )
            mutation = rng.randrange(3)
            if mutation == 0:
                head = head.replace(b'keyid="', b'keyid="x')
            elif mutation == 1:
                head = head.replace(b"Signature: sig1=:", b"Signature: sig1=:AA")
            requests.append(head + b"\r\n\r\n" + body)  # mutation 2: another body
        elif kind in (6, 7):  # signed, malformed body: 400, a refusal audited
            body = rng.choice(bodies)
            path = rng.choice(["/v1/validations", "/v1/claims", "/v1/packs/1x/activation"])
            requests.append(signed_request(signer, url, "POST", path, body))
        else:  # signed, a bad or hostile code: answered, wrong VIRNs counted
            requests.append(validate_request(signer, url, code()))
    per_terminal = [requests[i::64] for i in range(64)]
    big = []
    for n in range(20):
        body = b'{"code": "' + b"1" * (1_000_000 - 12) + b'"}'
        if n % 2:
            big.append(signed_request(signer, url, "POST", "/v1/validations", body))
        else:
            big.append(b"POST /v1/claims HTTP/1.1\r\nHost: x\r\nContent-Length: "
                       + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip
    return per_terminal, big


def test_10000_malformed_requests_no_5xx_no_traceback_nothing_unintended_written(world):
    rng = random.Random(2024)
    with world.ledger() as book:
        tables = ("tickets", "packs", "payments", "terminals", "settings", "manifests")
        before = {t: book.query(f"SELECT * FROM {t} ORDER BY 1") for t in tables}
        last_seq = book.query("SELECT MAX(id) FROM audit_log")[0][0]
        counted = set(book.query("SELECT ticket, terminal, failures FROM virn_failures"))
    per_terminal, big = _malformed(world, rng)
    outcomes, _ = storm(world.url, per_terminal + [[b] for b in big])
    answered = [o for o in outcomes if o is not None]
    statuses = {o.status for o in answered}
    assert all((s is not None and 400 <= s < 500) or s == 200 for s in statuses), statuses
    assert len(answered) >= 10_000, len(answered)
    assert 413 in statuses and 401 in statuses and 400 in statuses
    log = server_log(world) + server_log(world, "serve-after-kill.log")
    assert "Traceback" not in log and "ERROR" not in log, log[-2000:]
    with world.ledger() as book:
        for table, rows in before.items():
            assert book.query(f"SELECT * FROM {table} ORDER BY 1") == rows, table
        actions = book.query(
            "SELECT action, COUNT(*) FROM audit_log WHERE id > ? GROUP BY action", (last_seq,)
        )
        # the refusals of signed requests, the answers to signed codes, and the throttle of
        # the terminal that sent wrong VIRNs: nothing else
        assert {a for a, _ in actions} <= {"validate", "refuse", "throttle"}, actions
        assert "refuse" in {a for a, _ in actions}
        now = set(book.query("SELECT ticket, terminal, failures FROM virn_failures"))
        assert {terminal for _, terminal, _ in now - counted} <= {"storm-10"}
        assert book.verify_log().ok
