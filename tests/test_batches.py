"""Property tests of group commit: a batch of validations or claims answered in one transaction
(``Ledger.validate_many``, ``Ledger.claim_many``) answers and writes exactly what the same
requests answered one by one would, on twin copies of one ledger with the same clock."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from printpipe.ledger import (
    Admission,
    Claim,
    ClaimStart,
    Ledger,
    PackScope,
    RequestRefused,
    Validation,
)
from printpipe.ledger.book import IdempotentClaim
from printpipe.ledger.inputs import LOTTERY, TerminalId
from printpipe.service.app import render_answer
from tests.service_helpers import World, build_world

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
TERMINALS = ("till-1", "till-2", "storm-00", "office-1")
CREATED = int(NOW.timestamp())
RETAILER_LIMIT = 5


@pytest.fixture(scope="module")
def twin_world(ledgers, game, keys_dir, tmp_path_factory) -> World:
    world = build_world(game, keys_dir, ledgers.new(), tmp_path_factory.mktemp("twins"))
    with Ledger(world.location, key=world.key) as book:  # a few wrong VIRNs lock and throttle,
        book.configure(terminal=LOTTERY, max_virn_failures=2, max_terminal_virn_failures=3,
                       retailer_limit_eur=RETAILER_LIMIT)  # fmt: skip
    return world  # and most wins are paid only at the lottery


def _pool(world: World) -> list[Any]:
    """Tickets of shop-1 (packs 1, 2), shop-2 (5) and an unshipped pack (7)."""
    return [*world.of_pack(1)[:3], world.of_pack(2)[0], world.of_pack(5)[0], world.of_pack(7)[0]]


def _code(ticket: Any, variant: str) -> str:
    if variant == "right":
        return ticket.code
    if variant == "wrong":
        virn = (int(ticket.code[13:23]) + 1) % 10**10
        return ticket.ticket.validation_code(virn)
    if variant == "inventory":
        return ticket.inventory
    return "not a code"


def _terminal(world: World, name: str) -> tuple[TerminalId, PackScope]:
    """The terminal, and the packs it acts on."""
    if name == "office-1":
        return TerminalId(name), PackScope.office()
    return TerminalId(name), PackScope.of_retailer("shop-2" if name == "till-2" else "shop-1")


def _admission(world: World, name: str, nonce: str, index: int) -> Admission:
    return Admission(world.signers[name].key_id, nonce, CREATED, request=f"r{index}")


def _outcome(outcome: object) -> object:
    if isinstance(outcome, RequestRefused):
        return type(outcome).__name__
    if isinstance(outcome, ClaimStart):
        return (outcome.outcome, outcome.status, outcome.response)
    return outcome.as_json()  # type: ignore[attr-defined]


def _written(book: Ledger) -> dict[str, object]:
    """What the requests wrote: counters, payments, nonces, and the log's entries (as a
    multiset: a batch writes an entry that throttles a terminal before the batch's own)."""
    entries = book.query("SELECT terminal, action, input, ticket, answer, request FROM audit_log")
    return {
        "virn_failures": sorted(book.query("SELECT * FROM virn_failures")),
        "terminal_failures": sorted(book.query("SELECT * FROM terminal_failures")),
        "payments": sorted(
            book.query("SELECT ticket, amount_eur, paid_at, terminal FROM payments")
        ),
        "nonces": sorted(book.query("SELECT created, key_id, nonce FROM nonces")),
        "entries": Counter(tuple(entry) for entry in entries),
        "answers": sorted(book.query("SELECT terminal, key, status, response FROM idempotency")),
    }


validations = st.lists(
    st.tuples(
        st.sampled_from(TERMINALS[:3]),
        st.integers(0, 5) | st.just(0),  # which ticket of the pool (often the same)
        st.sampled_from(["right", "wrong", "wrong", "inventory", "garbage"]),
        st.booleans(),  # send the request before again (a replayed nonce)
    ),
    min_size=1,
    max_size=24,
)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(validations)
@example([("till-1", 0, "wrong", False)] * 3 + [("till-1", 3, "right", False)])  # throttled
@example([("till-1", 0, "wrong", False), ("storm-00", 0, "wrong", False),
          ("till-1", 0, "right", False)])  # the ticket locked  # fmt: skip
def test_a_batch_of_validations_answers_and_writes_as_one_by_one(twin_world, ledgers, requests):
    world, pool = twin_world, _pool(twin_world)
    batch: list[Validation] = []
    for index, (name, which, variant, replay) in enumerate(requests):
        if replay and batch:
            batch.append(batch[-1])
            continue
        terminal, scope = _terminal(world, name)
        admission = _admission(world, name, uuid.uuid4().hex, index)
        batch.append(Validation(_code(pool[which], variant), terminal, scope, admission))
    together, one_by_one = ledgers.copy(world.location), ledgers.copy(world.location)
    with Ledger(together, key=world.key, clock=lambda: NOW) as book:
        answered = [_outcome(outcome) for outcome in book.validate_many(batch)]
        written = _written(book)
    expected = []
    with Ledger(one_by_one, key=world.key, clock=lambda: NOW) as book:
        for request in batch:
            try:
                outcome: object = book.validate(
                    request.code,
                    terminal=request.terminal,
                    scope=request.scope,
                    admission=request.admission,
                )
            except RequestRefused as exc:
                outcome = exc
            expected.append(_outcome(outcome))
        assert answered == expected
        assert written == _written(book)


claims = st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(TERMINALS),
            st.integers(0, 5),
            st.sampled_from(["right", "right", "wrong", "inventory"]),
            st.integers(0, 5),  # the Idempotency-Key (one of six: again in the next batch)
        ),
        min_size=1,
        max_size=10,
        unique_by=lambda claim: (claim[0], claim[3]),  # a key once a batch
    ),
    min_size=1,
    max_size=3,
)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(claims)
@example([[("till-1", 0, "wrong", 0), ("storm-00", 0, "wrong", 1), ("till-1", 0, "right", 2)]])
@example([[("till-1", 1, "right", 0), ("storm-00", 1, "right", 1)], [("till-1", 1, "right", 0)]])
def test_batches_of_claims_pay_answer_and_write_as_one_by_one(twin_world, ledgers, batches):
    """Keys used again in a later batch replay their answer (or are refused for another
    request), a ticket is paid once, in either way of running the same claims."""
    world, pool, run = twin_world, _pool(twin_world), uuid.uuid4().hex
    planned: list[list[Claim]] = []
    index = 0
    for requests in batches:
        planned.append([])
        for name, which, variant, key in requests:
            index += 1
            terminal, scope = _terminal(world, name)
            code = _code(pool[which], variant)
            admission = _admission(world, name, uuid.uuid4().hex, index)
            fingerprint = f"{which}:{variant}".encode().ljust(32, b"-")
            planned[-1].append(
                Claim(code, terminal, f"{run}-{key}", fingerprint, render_answer, scope,
                      admission=admission)
            )  # fmt: skip
    together, one_by_one = ledgers.copy(world.location), ledgers.copy(world.location)
    with Ledger(together, key=world.key, clock=lambda: NOW) as book:
        answered = [_outcome(o) for claims_now in planned for o in book.claim_many(claims_now)]
        written = _written(book)
    expected = []
    with Ledger(one_by_one, key=world.key, clock=lambda: NOW) as book:
        for claim in (claim for claims_now in planned for claim in claims_now):
            try:
                start = book.begin_claim(
                    terminal=claim.terminal,
                    key=claim.key,
                    fingerprint=claim.fingerprint,
                    admission=claim.admission,
                )
            except RequestRefused as exc:
                expected.append(_outcome(exc))
                continue
            if start.outcome != "proceed":
                expected.append(_outcome(start))
                continue
            assert start.token is not None
            answer = book.claim(
                claim.code,
                terminal=claim.terminal,
                scope=claim.scope,
                idempotent=IdempotentClaim(
                    claim.terminal.value, claim.key, start.token, render_answer
                ),
            )
            expected.append(_outcome(answer))
        assert answered == expected
        by_one = _written(book)
    # one by one, a claim's entry is written by claim(), which has no request to name (the
    # service's claims are batches): the rest is the same
    entries: Counter[tuple[Any, ...]] = written.pop("entries")  # type: ignore[assignment]
    theirs: Counter[tuple[Any, ...]] = by_one.pop("entries")  # type: ignore[assignment]
    assert Counter(e[:-1] for e in entries.elements()) == Counter(e[:-1] for e in theirs.elements())
    assert written == by_one
    paid: list[tuple[Any, ...]] = written["payments"]  # type: ignore[assignment]
    assert all(count == 1 for count in Counter(row[0] for row in paid).values())
    claimed = [entry for entry in entries if entry[1] == "claim"]
    assert all(str(entry[-1]).startswith("r") for entry in claimed)


def test_a_ticket_paid_earlier_in_a_batch_is_already_paid_for_the_claims_after(twin_world, ledgers):
    """Whoever paid it (the office a win above the retailer limit, a till one below), a later
    claim of the same ticket in the batch is answered ALREADY PAID, not from the row as it was
    before the batch (CI found the till told to claim at the lottery)."""
    world, run = twin_world, uuid.uuid4().hex
    tickets = [t for pack in (1, 2) for t in world.of_pack(pack)]
    above = next(t for t in tickets if t.prize > RETAILER_LIMIT)
    below = next(t for t in tickets if 0 < t.prize <= RETAILER_LIMIT)
    batch = []
    for n, (ticket, first, then) in enumerate(
        [(above, "office-1", "till-1"), (below, "till-1", "office-1")]
    ):
        for name in (first, then):
            terminal, scope = _terminal(world, name)
            batch.append(Claim(ticket.code, terminal, f"{run}-{n}", b"f" * 32, render_answer,
                               scope))  # fmt: skip
    with Ledger(ledgers.copy(world.location), key=world.key, clock=lambda: NOW) as book:
        answers: list[Any] = [_outcome(answer) for answer in book.claim_many(batch)]
    assert [a["outcome"] for a in answers] == ["PAID", "ALREADY_PAID", "PAID", "ALREADY_PAID"]
    assert [a["terminal"] for a in answers[1::2]] == ["office-1", "till-1"]
