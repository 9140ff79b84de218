"""The operator's wallet API: its bodies, the reference wallet's database on both engines (a
model-checked property, a debit racing its cancel), the wallet served (signatures, the calls'
rules, the statement, the OpenAPI document), and the game server's client (its outcomes)."""

from __future__ import annotations

import datetime as dt
import json
import re
import stat
import threading
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.play.operator_wallet import Cancelled, Confirmed, Refused, Unknown, WalletClient
from printpipe.service.signatures import RequestSigner
from printpipe.wallet.api import (
    REFUSALS,
    BadCall,
    Call,
    Receipt,
    Share,
    parse_call,
    parse_receipt,
)
from printpipe.wallet.openapi import openapi_document
from printpipe.wallet.store import Asked, WalletRefused, WalletStore, stamp
from tests.conftest import run_cli
from tests.wallet_helpers import WalletProcess

GAME = "golden-animals"
SPLIT = (("golden-animals", 97), ("SUPER JACKPOT", 3))
NOW = dt.datetime(2026, 12, 1, 11, 0, tzinfo=dt.UTC)
DOCS = Path(__file__).parent.parent / "docs"


def debit_call(reference: str, player: str, amount: int = 100) -> Call:
    split = (Share(GAME, amount - 3), Share("SUPER JACKPOT", 3)) if amount >= 3 else ()
    return Call("debit", reference, player, amount, GAME, split or (Share(GAME, amount),))


# -- the API's bodies ----------------------------------------------------------------------------

calls = st.builds(
    lambda kind, ref, player, amount, linked: Call(
        kind,
        ref,
        player,
        amount,
        GAME,
        (Share(GAME, amount - min(linked, amount)), Share("SUPER JACKPOT", min(linked, amount)))
        if kind == "debit"
        else (),
    ),
    st.sampled_from(["debit", "credit", "cancel"]),
    st.from_regex(r"[A-Za-z0-9._:-]{8,64}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9._@-]{1,64}", fullmatch=True),
    st.integers(1, 10**11),
    st.integers(0, 10),
)


@given(calls)
def test_a_call_body_reads_back_as_the_same_call(call):
    assert parse_call(call.kind, call.body()) == call
    assert call.body() == call.body()  # the same bytes on every attempt


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"[]",
        b'{"reference": "r"}',
        b"\xff\xfe{}",
        b'{"reference":"aaaaaaaa","reference":"bbbbbbbb","player":"a","amount_cents":1,'
        b'"currency":"EUR","game":"g","split":[{"game":"g","amount_cents":1}]}',
        # the split does not add up to the amount
        b'{"reference":"aaaaaaaa","player":"a","amount_cents":100,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":97}]}',
        # another currency, a float amount, a negative one, a bad reference, a bad player
        b'{"reference":"aaaaaaaa","player":"a","amount_cents":1,"currency":"USD","game":"g",'
        b'"split":[{"game":"g","amount_cents":1}]}',
        b'{"reference":"aaaaaaaa","player":"a","amount_cents":1.0,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":1}]}',
        b'{"reference":"aaaaaaaa","player":"a","amount_cents":-1,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":-1}]}',
        b'{"reference":"a b","player":"a","amount_cents":1,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":1}]}',
        b'{"reference":"aaaaaaaa","player":"a/b","amount_cents":1,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":1}]}',
        b'{"reference":"aaaaaaaa","player":"a","amount_cents":true,"currency":"EUR","game":"g",'
        b'"split":[{"game":"g","amount_cents":1}]}',
        b"[" * 100_000,
    ],
)
def test_a_malformed_debit_is_refused(body):
    with pytest.raises(BadCall):
        parse_call("debit", body)


def test_a_receipt_of_another_call_is_not_understood():
    call = debit_call("a" * 32, "alice")
    other = Receipt("debit", "b" * 32, "alice", 100, 1900, "2026-12-01T11:00:00.000000Z")
    with pytest.raises(BadCall):
        parse_receipt(call, json.dumps(other.as_json()).encode())
    mine = Receipt("debit", "a" * 32, "alice", 100, 1900, "2026-12-01T11:00:00.000000Z")
    assert parse_receipt(call, json.dumps(mine.as_json()).encode()) == mine


# -- the reference wallet's database, both engines ---------------------------------------------


@pytest.fixture(scope="module")
def store(ledgers):
    with WalletStore(ledgers.new(), pool_size=4) as opened:
        yield opened


class Model:
    """What the API says each call does, written plainly: the store must agree call by call."""

    def __init__(self) -> None:
        self.balances: dict[str, int] = {}
        self.done: dict[tuple[str, str], Call] = {}
        self.refunded: dict[str, bool] = {}
        self.balance_at: dict[tuple[str, str], int] = {}

    def apply(self, call: Call) -> str | int:
        """The refusal's kind, or the balance after."""
        earlier = self.done.get((call.reference, call.kind))
        if earlier is not None:
            return self.balance_at[call.reference, call.kind] if earlier == call else (
                "reference_reused"
            )  # fmt: skip
        debit = self.done.get((call.reference, "debit"))
        cancelled = (call.reference, "cancel") in self.done
        if call.kind == "debit":
            if cancelled:
                return "cancelled"
            if call.player not in self.balances:
                return "no_such_player"
            if self.balances[call.player] < call.amount_cents:
                return "insufficient_funds"
            move = -call.amount_cents
        elif call.kind == "credit":
            if debit is None or cancelled or debit.player != call.player:
                return "no_debit"
            move = call.amount_cents
        else:
            if (call.reference, "credit") in self.done:
                return "already_credited"
            if debit is not None and (debit.player, debit.amount_cents) != (
                call.player,
                call.amount_cents,
            ):
                return "reference_reused"
            move = call.amount_cents if debit is not None else 0
            self.refunded[call.reference] = debit is not None
        after = self.balances.get(call.player, 0) + move
        if call.player in self.balances:
            self.balances[call.player] = after
        self.done[call.reference, call.kind] = call
        self.balance_at[call.reference, call.kind] = after
        return after


operations = st.lists(
    st.tuples(
        st.sampled_from(["debit", "credit", "cancel", "deposit"]),
        st.integers(0, 3),  # which reference
        st.integers(0, 1),  # which player
        st.sampled_from([100, 100, 100, 250, 2000]),
    ),
    max_size=30,
)


@given(operations)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_wallet_does_each_call_as_the_api_says(store, ops):
    """Any sequence of debits, credits, cancels and deposits, references and bodies repeated:
    each answer is the model's (the refusal, or the balance after), a repeated call answers
    its first receipt, and the balances are the deposits less what the calls moved."""
    run = uuid.uuid4().hex[:12]
    model = Model()
    players = [f"p-{run}-0", f"p-{run}-1"]
    for kind, ref, who, amount in ops:
        player, reference = players[who], f"{run}-ref-{ref}"
        if kind == "deposit":
            model.balances[player] = model.balances.get(player, 0) + amount
            assert (
                store.deposit(player=player, amount_cents=amount, now=NOW)
                == (model.balances[player])
            )
            continue
        call = debit_call(reference, player, amount) if kind == "debit" else (
            Call(kind, reference, player, amount, GAME)
        )  # fmt: skip
        repeated = (reference, kind) in model.done
        expected = model.apply(call)
        outcome, replayed = store.apply(call, now=NOW)
        if isinstance(expected, str):
            assert isinstance(outcome, WalletRefused) and outcome.kind == expected, (call, outcome)
            assert REFUSALS[outcome.kind][0] >= 400
        else:
            assert isinstance(outcome, Receipt), (call, outcome)
            assert outcome.balance_cents == expected
            assert replayed == repeated
            if kind == "cancel":
                assert outcome.refunded == model.refunded[reference]
    for player in players:
        assert store.balance(player=player) == model.balances.get(player)


@given(operations, st.lists(st.integers(1, 6), min_size=1, max_size=10))
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_calls_made_together_are_each_made_as_alone(store, ops, sizes):
    """The same sequences made in groups (``apply_many``, one transaction a group, as the
    served wallet does with the calls that arrive together), a nonce sent twice among them:
    each answer is the model's, in the order asked, and a replayed nonce is refused."""
    run = uuid.uuid4().hex[:12]
    model = Model()
    players = [f"g-{run}-0", f"g-{run}-1"]
    for player in players:
        model.balances[player] = store.deposit(player=player, amount_cents=1000, now=NOW)
    asked, expected = [], []
    for n, (kind, ref, who, amount) in enumerate(ops):
        player, reference = players[who], f"{run}-ref-{ref}"
        if kind == "deposit":
            kind = "credit"
        call = debit_call(reference, player, amount) if kind == "debit" else (
            Call(kind, reference, player, amount, GAME)
        )  # fmt: skip
        replayed = n % 7 == 6  # the last call's nonce again: refused, whatever it asks
        nonce = ("game", f"{run}-nonce-{n - 1 if replayed else n}", 1)
        asked.append(Asked(call, NOW, nonce))
        repeated = (reference, kind) in model.done
        expected.append(("unauthorized", False) if replayed else (model.apply(call), repeated))
    transactions = 0
    opened = store.transaction

    def counted() -> Any:
        nonlocal transactions
        transactions += 1
        return opened()

    outcomes: list[Any] = []
    groups = 0
    try:
        store.transaction = counted
        while len(outcomes) < len(asked):
            outcomes += store.apply_many(
                asked[len(outcomes) : len(outcomes) + sizes[groups % len(sizes)]]
            )
            groups += 1
    finally:
        del store.transaction
    assert transactions == groups  # one transaction a group
    for call, (want, repeated), (outcome, replayed) in zip(
        [a.call for a in asked], expected, outcomes, strict=True
    ):
        if isinstance(want, str):
            assert isinstance(outcome, WalletRefused) and outcome.kind == want, (call, outcome)
        else:
            assert isinstance(outcome, Receipt), (call, outcome)
            assert (outcome.balance_cents, replayed) == (want, repeated)
    for player in players:
        assert store.balance(player=player) == model.balances[player]


def test_a_call_that_fails_in_a_group_fails_alone(ledgers, monkeypatch):
    """A statement failing for one call of a group rolls the group back; the others are then
    made one by one and answered, the failing one's outcome is its exception."""
    with WalletStore(ledgers.new()) as store:
        store.deposit(player="alone", amount_cents=1000, now=NOW)
        made = store._apply

        def failing(tx: Any, call: Call, now: dt.datetime) -> Any:
            if call.reference == "group-fails-1":
                raise RuntimeError("a row the database refuses")
            return made(tx, call, now)

        monkeypatch.setattr(store, "_apply", failing)
        asked = [Asked(debit_call(f"group-fails-{n}", "alone"), NOW, ("game", f"fail-{n}", 1))
                 for n in range(3)]  # fmt: skip
        first, second, third = store.apply_many(asked)
        assert isinstance(second, RuntimeError)
        assert isinstance(first, tuple) and isinstance(third, tuple)
        assert [first[0].balance_cents, third[0].balance_cents] == [900, 800]  # type: ignore[union-attr]
        assert store.balance(player="alone") == 800


def test_a_batch_in_one_transaction_makes_each_call_as_alone(ledgers):
    """One batch (``apply_batch``, one transaction) that repeats a call, reuses a reference
    with another body, credits a play before its debit, cancels a debit after it and before
    it, and debits past the balance: each answer is the model's (the calls one by one), the
    repeat answered as replayed; its nonce spent once (the batch replayed: refused, nothing
    made again)."""
    with WalletStore(ledgers.new()) as store:
        model = Model()
        model.balances["in-batch"] = store.deposit(player="in-batch", amount_cents=450, now=NOW)
        ticks = iter(NOW + dt.timedelta(microseconds=n) for n in range(100))
        debit, credit, cancel = (lambda r, a=100: debit_call(f"in-batch-{r}", "in-batch", a),
                                 lambda r, a: Call("credit", f"in-batch-{r}", "in-batch", a, GAME),
                                 lambda r, a=100: Call("cancel", f"in-batch-{r}", "in-batch", a,
                                                       GAME))  # fmt: skip
        calls = [debit(1), debit(1), debit(1, 250), credit(2, 700), debit(2), credit(2, 700),
                 credit(2, 700), debit(3), cancel(3), debit(3), cancel(4), debit(4),
                 debit(5, 400), debit(6, 300), debit(7, 300)]  # fmt: skip
        expected = []
        for call in calls:
            repeated = (call.reference, call.kind) in model.done
            want = model.apply(call)
            expected.append((want, repeated and not isinstance(want, str)))
        nonce = ("game", f"in-batch-{uuid.uuid4().hex}", 1)
        outcomes = store.apply_batch(calls, now=lambda: next(ticks), nonce=nonce)
        seen = []
        for outcome in outcomes:
            assert isinstance(outcome, tuple), outcome
            result, replayed = outcome
            seen.append((result.kind if isinstance(result, WalletRefused)
                         else result.balance_cents, replayed))  # fmt: skip
        assert seen == expected
        with pytest.raises(WalletRefused, match="nonce"):
            store.apply_batch(calls, now=lambda: NOW, nonce=nonce)
        assert store.balance(player="in-batch") == model.balances["in-batch"] == 250


def test_a_call_that_fails_in_a_batch_fails_alone_and_the_batch_is_made_once(ledgers, monkeypatch):
    """A statement failing for one call of a batch rolls the batch back; each call is then
    made once, one by one (the repeated one answered as replayed, the failing one's outcome
    its exception, nothing of it made), and the batch's nonce is spent once."""
    with WalletStore(ledgers.new()) as store:
        store.deposit(player="batch-fails", amount_cents=1000, now=NOW)
        made = store._apply

        def failing(tx: Any, call: Call, now: dt.datetime) -> Any:
            if call.reference == "batch-fails-1":
                made(tx, call, now)  # half made, then the database refuses a row
                raise RuntimeError("a row the database refuses")
            return made(tx, call, now)

        monkeypatch.setattr(store, "_apply", failing)
        calls = [debit_call(f"batch-fails-{n}", "batch-fails") for n in (0, 1, 2, 0)]
        nonce = ("game", f"batch-fails-{uuid.uuid4().hex}", 1)
        first, second, third, again = store.apply_batch(calls, now=lambda: NOW, nonce=nonce)
        assert isinstance(second, RuntimeError)
        assert isinstance(first, tuple) and isinstance(third, tuple) and isinstance(again, tuple)
        assert [(o[0].balance_cents, o[1]) for o in (first, third, again)] == [  # type: ignore[union-attr]
            (900, False), (800, False), (900, True)
        ]  # fmt: skip
        assert store.balance(player="batch-fails") == 800
        assert store.statement(day="2026-12-01").entries[-1].reference == "batch-fails-2"
        assert {e.reference for e in store.statement(day="2026-12-01").entries} == {
            "batch-fails-0", "batch-fails-2"
        }  # fmt: skip
        with pytest.raises(WalletRefused, match="nonce"):
            store.apply_batch(calls[:1], now=lambda: NOW, nonce=nonce)


@pytest.mark.parametrize("first", ["debit", "cancel"])
def test_a_debit_racing_its_cancel_is_taken_and_refunded_or_never_taken(ledgers, first):
    """A debit whose answer was lost and its cancel, sent at once from two connections, 20
    times: either the debit is taken and the cancel refunds it, or the cancel is recorded first
    and the debit refused; the balance is the deposit again either way."""
    location = ledgers.new()
    with WalletStore(location, pool_size=2) as one, WalletStore(location, pool_size=2) as two:
        one.deposit(player="racer", amount_cents=100, now=NOW)
        for n in range(20):
            reference = f"race-{first}-{n:04d}"
            outcomes: dict[str, object] = {}
            start = threading.Barrier(2)

            def send(
                kind: str,
                store: WalletStore,
                reference: str = reference,
                start: threading.Barrier = start,
                outcomes: dict[str, object] = outcomes,
            ) -> None:
                call = debit_call(reference, "racer") if kind == "debit" else (
                    Call("cancel", reference, "racer", 100, GAME)
                )  # fmt: skip
                start.wait()
                outcomes[kind] = store.apply(call, now=NOW)[0]

            second = "cancel" if first == "debit" else "debit"
            threads = [threading.Thread(target=send, args=(first, one)),
                       threading.Thread(target=send, args=(second, two))]  # fmt: skip
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            debit, cancel = outcomes["debit"], outcomes["cancel"]
            assert isinstance(cancel, Receipt)
            if isinstance(debit, Receipt):
                assert cancel.refunded is True
            else:
                assert isinstance(debit, WalletRefused) and debit.kind == "cancelled"
                assert cancel.refunded is False
            assert one.balance(player="racer") == 100


def test_the_statement_lists_the_days_calls_and_their_shares(ledgers):
    ticks = (NOW + dt.timedelta(seconds=n) for n in range(100))
    with WalletStore(ledgers.new()) as store:
        store.deposit(player="alice", amount_cents=1000, now=next(ticks))
        for n in range(3):
            store.apply(debit_call(f"play-{n:06d}", "alice"), now=next(ticks))
        store.apply(Call("credit", "play-000000", "alice", 500, GAME), now=next(ticks))
        store.apply(Call("cancel", "play-000001", "alice", 100, GAME), now=next(ticks))
        store.apply(Call("cancel", "play-999999", "alice", 100, GAME), now=next(ticks))
        later = NOW + dt.timedelta(days=1)
        store.apply(debit_call("play-000009", "alice"), now=later)
        statement = store.statement(day="2026-12-01")
        assert [(e.kind, e.reference) for e in statement.entries] == [
            ("debit", "play-000000"), ("debit", "play-000001"), ("debit", "play-000002"),
            ("credit", "play-000000"), ("cancel", "play-000001"), ("cancel", "play-999999"),
        ]  # fmt: skip
        assert statement.totals() == {
            "debits": {"count": 3, "amount_cents": 300},
            "credits": {"count": 1, "amount_cents": 500},
            "cancels": {"count": 2, "amount_cents": 100},
            "shares": {"SUPER JACKPOT": 9, GAME: 291},
        }
        assert len(store.statement(day="2026-12-02").entries) == 1
        assert store.statement(day="2026-11-30").entries == ()


def test_a_wallet_database_is_never_another_database(tmp_path, ledgers):
    """A database holding other tables (a ledger's, anyone's) is refused untouched."""
    location = ledgers.new()
    if isinstance(location, Path):
        import sqlite3

        with sqlite3.connect(location) as conn:
            conn.execute("CREATE TABLE tickets (id INTEGER)")
        before = location.read_bytes()
    else:
        import psycopg

        with psycopg.connect(location.dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE tickets (id INTEGER)")
    from printpipe.ledger import location_argument

    result = run_cli("wallet", "deposit", "alice", "5", "--db", location_argument(location))
    assert result.returncode == 1
    assert "not a printpipe wallet database" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    if isinstance(location, Path):
        assert location.read_bytes() == before
    text = tmp_path / "notes.txt"
    text.write_text("a shopping list\n")
    refused = run_cli("wallet", "deposit", "alice", "5", "--db", str(text))
    assert "not a printpipe wallet database" in refused.stderr
    assert text.read_text() == "a shopping list\n"


def test_deposit_opens_an_account_in_a_private_file(tmp_path):
    db = tmp_path / "wallet.sqlite"
    first = run_cli("wallet", "deposit", "alice", "20", "--db", str(db), check=True)
    assert first.stdout.strip() == "deposited 20.00 EUR for alice: balance 20.00 EUR"
    again = run_cli("wallet", "deposit", "alice", "2,50", "--db", str(db), check=True)
    assert again.stdout.strip() == "deposited 2.50 EUR for alice: balance 22.50 EUR"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for bad in (["alice", "0"], ["alice", "-1"], ["a/b", "1"]):
        refused = run_cli("wallet", "deposit", *bad, "--db", str(db))
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1


OFFSETS = [
    dt.UTC,
    dt.timezone(dt.timedelta(hours=2)),
    dt.timezone(-dt.timedelta(hours=5, minutes=30)),
]


@given(
    st.datetimes(
        dt.datetime(2000, 1, 2), dt.datetime(2099, 12, 30), timezones=st.sampled_from(OFFSETS)
    )
)
def test_the_wallet_writes_its_times_in_utc_to_the_microsecond(now):
    """A call's ``at`` (whatever the wallet clock's offset): the same instant, in UTC, its day
    first (a statement's day is ``at[:10]``)."""
    written = stamp(now)
    assert re.fullmatch(
        r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z", written
    )
    assert dt.datetime.strptime(written, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC) == now
    assert written[:10] == now.astimezone(dt.UTC).date().isoformat()


# -- the wallet served ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(ledgers, tmp_path_factory):
    wallet = WalletProcess(ledgers.new(), tmp_path_factory.mktemp("wallet"))
    with WalletStore(wallet.location) as store:
        store.deposit(player="alice", amount_cents=2000, now=dt.datetime.now(dt.UTC))
    wallet.start()
    yield wallet
    wallet.stop()
    assert "Traceback" not in wallet.log.read_text()


def test_each_call_needs_the_game_servers_signature(served):
    body = debit_call(uuid.uuid4().hex, "alice").body()
    url = served.url + "/v1/debits"
    with httpx.Client(timeout=30) as http:
        unsigned = http.post(url, content=body)
        assert unsigned.status_code == 401
        assert unsigned.headers["content-type"] == "application/problem+json"
        assert unsigned.headers["www-authenticate"].startswith("Signature")
        stranger = RequestSigner(Ed25519PrivateKey.generate())
        foreign = http.post(url, content=body, headers=stranger.headers("POST", url, body))
        assert foreign.status_code == 401
        signer = RequestSigner(served.key)
        headers = signer.headers("POST", url, body)
        tampered = body.replace(b'"amount_cents":100', b'"amount_cents":1')
        assert http.post(url, content=tampered, headers=headers).status_code == 401
        assert http.post(url, content=body, headers=headers).status_code == 201
        replayed = http.post(url, content=body, headers=headers)  # the same nonce
        assert replayed.status_code == 401 and "nonce" in replayed.json()["detail"]
        statement = f"{served.url}/v1/statements/2026-12-01"
        assert http.get(statement).status_code == 401
    with WalletStore(served.location) as store:
        assert store.balance(player="alice") == 1900  # the one signed debit, once


def test_the_calls_rules_over_http(served):
    with WalletClient(served.url, key=served.key, game=GAME) as client:
        play, lost = uuid.uuid4().hex, uuid.uuid4().hex
        taken = client.debit(reference=play, player="alice", split=SPLIT)
        assert isinstance(taken, Confirmed) and not taken.replayed
        again = client.debit(reference=play, player="alice", split=SPLIT)
        assert isinstance(again, Confirmed) and again.replayed and again.receipt == taken.receipt
        other = client.debit(reference=play, player="alice", split=(("golden-animals", 200),))
        assert isinstance(other, Refused) and (other.kind, other.status) == (
            "reference_reused",
            422,
        )
        credit = client.credit(reference=play, player="alice", amount_cents=1000)
        assert isinstance(credit, Confirmed)
        assert credit.receipt.balance_cents == taken.receipt.balance_cents + 1000
        late = client.cancel(reference=play, player="alice", amount_cents=100)
        assert isinstance(late, Refused) and late.kind == "already_credited"
        # a debit whose answer was lost: cancelled first, so never taken when it arrives
        cancel = client.cancel(reference=lost, player="alice", amount_cents=100)
        assert isinstance(cancel, Confirmed) and cancel.receipt.refunded is False
        arriving = client.debit(reference=lost, player="alice", split=SPLIT)
        assert isinstance(arriving, Refused) and (arriving.kind, arriving.status) == (
            "cancelled",
            409,
        )
        nothing = client.credit(reference=uuid.uuid4().hex, player="alice", amount_cents=5)
        assert isinstance(nothing, Refused) and nothing.kind == "no_debit"
        poor = client.debit(reference=uuid.uuid4().hex, player="alice",
                            split=(("golden-animals", 10**9),))  # fmt: skip
        assert isinstance(poor, Refused) and (poor.kind, poor.status) == ("insufficient_funds", 402)
        nobody = client.settle_debit(reference=uuid.uuid4().hex, player="bob", split=SPLIT)
        assert isinstance(nobody, Refused) and nobody.kind == "no_such_player"
        assert client.balance(player="alice") == credit.receipt.balance_cents
        day = taken.receipt.at[:10]
        statement = client.statement(day=day)
        mine = [e for e in statement.entries if e.reference in (play, lost)]
        assert [(e.kind, e.refunded) for e in mine] == [
            ("debit", None), ("credit", None), ("cancel", False),
        ]  # fmt: skip
        assert mine[0].split == (Share("golden-animals", 97), Share("SUPER JACKPOT", 3))


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"{}", b'{"code": "x"}', b"\xff" * 40, b"x" * 20_000],
)
def test_a_malformed_call_is_one_line_of_json(served, body):
    url = served.url + "/v1/credits"
    headers = RequestSigner(served.key).headers("POST", url, body)
    response = httpx.post(url, content=body, headers=headers)
    assert response.status_code in (400, 413)
    assert response.headers["content-type"] == "application/problem+json"
    assert b"\n" not in response.content.strip()
    assert response.json()["error"] in ("bad_request", "too_large")


def test_the_openapi_document_describes_the_wallet(served):
    document = httpx.get(served.url + "/v1/openapi.json").json()
    assert document == json.loads(json.dumps(openapi_document()))
    written = json.loads((DOCS / "wallet-api.openapi.json").read_text())
    assert written == document, "docs/wallet-api.openapi.json: write it again (see the test)"
    from printpipe.wallet.app import ROUTES

    described = {(path, method.upper()) for path, item in document["paths"].items()
                 for method in item}  # fmt: skip
    assert described == {(r.path, r.method) for r in ROUTES}
    refusals = {k for path in document["paths"].values() for op in path.values()
                for r in op["responses"].values() for k in REFUSALS
                if k in r.get("description", "")}  # fmt: skip
    assert refusals == set(REFUSALS)


# -- the client's outcomes, against answers written by hand -------------------------------------


def _client(handler, *, attempts: int = 3, waits: list[float] | None = None) -> WalletClient:
    sleeps = waits if waits is not None else []
    return WalletClient(
        "http://wallet.test", key=Ed25519PrivateKey.generate(), game=GAME, attempts=attempts,
        transport=httpx.MockTransport(handler), sleep=sleeps.append,
    )  # fmt: skip


def _receipt(request: httpx.Request, balance: int = 1900) -> httpx.Response:
    data = json.loads(request.content)
    kind = request.url.path.removeprefix("/v1/").removesuffix("s")
    refunded = False if kind == "cancel" else None
    receipt = Receipt(kind, data["reference"], data["player"], data["amount_cents"], balance,
                      "2026-12-01T11:00:00.000000Z", refunded)  # fmt: skip
    return httpx.Response(201, json=receipt.as_json())


def test_an_unknown_outcome_is_asked_again_with_the_same_body():
    seen: list[bytes] = []
    nonces: set[str] = set()

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        nonces.add(request.headers["signature-input"])
        if len(seen) == 1:
            raise httpx.ReadTimeout("no answer", request=request)
        if len(seen) == 2:
            return httpx.Response(503, headers={"Retry-After": "9"})
        return _receipt(request)

    waits: list[float] = []
    outcome = _client(handler, attempts=4, waits=waits).debit(
        reference="a" * 32, player="alice", split=SPLIT
    )
    assert isinstance(outcome, Confirmed) and outcome.attempts == 3
    assert len(set(seen)) == 1 and len(nonces) == 3  # one body, a new signature each time
    assert waits == [0.2, 2.0]  # the backoff, then Retry-After cut to 2 s


def test_a_client_given_a_shorter_longest_wait_cuts_retry_after_and_backoff_to_it():
    """``max_wait_s`` (the tests' storms): a Retry-After and a backoff longer than it are cut
    to it; the attempts are as many."""
    sent: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(1)
        if len(sent) % 2:
            return httpx.Response(503, headers={"Retry-After": "1"})
        raise httpx.ReadTimeout("no answer", request=request)

    waits: list[float] = []
    client = WalletClient(
        "http://wallet.test", key=Ed25519PrivateKey.generate(), game=GAME, attempts=4,
        backoff_s=0.2, max_wait_s=0.3, transport=httpx.MockTransport(handler),
        sleep=waits.append,
    )  # fmt: skip
    outcome = client.debit(reference="b" * 32, player="alice", split=SPLIT)
    assert isinstance(outcome, Unknown) and outcome.attempts == 4 and len(sent) == 4
    assert waits == [0.3, 0.3, 0.3]  # Retry-After 1 cut, backoff 0.4 cut, Retry-After 1 cut


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (httpx.Response(402, json={"error": "insufficient_funds", "detail": "poor"}),
         Refused("insufficient_funds", "poor", 402)),
        (httpx.Response(409, json={"error": "cancelled", "detail": "c"}),
         Refused("cancelled", "c", 409)),
        (httpx.Response(404, text="no such path"), Refused("rejected", "HTTP 404", 404)),
        (httpx.Response(402, json={"error": "cancelled"}), Refused("rejected", "HTTP 402", 402)),
    ],
)  # fmt: skip
def test_a_refusal_is_final(answer, expected):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answer

    assert _client(handler).debit(reference="a" * 32, player="alice", split=SPLIT) == expected
    assert len(calls) == 1


@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(500),
        httpx.Response(429),
        httpx.Response(408),
        httpx.Response(201, json={"kind": "debit", "reference": "b" * 32}),
        httpx.Response(200, text="ok"),
    ],
)
def test_what_is_not_understood_stays_unknown(answer):
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answer

    outcome = _client(handler).credit(reference="a" * 32, player="alice", amount_cents=500)
    assert isinstance(outcome, Unknown) and outcome.attempts == 3
    assert len(calls) == 3


def test_a_debit_that_stays_unknown_is_cancelled_before_the_player_is_answered():
    paths = []

    def handler(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path == "/v1/debits":
            raise httpx.RemoteProtocolError("peer closed connection", request=request)
        return _receipt(request)

    outcome = _client(handler).settle_debit(reference="a" * 32, player="alice", split=SPLIT)
    assert isinstance(outcome, Cancelled) and outcome.receipt.refunded is False
    assert paths == ["/v1/debits"] * 3 + ["/v1/cancels"]

    def nothing_answers(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    lost = _client(nothing_answers).settle_debit(reference="a" * 32, player="alice", split=SPLIT)
    assert isinstance(lost, Unknown)


# -- the batch: several calls in one request, each answered as alone ------------------------------

batch_ops = st.lists(
    st.tuples(
        st.sampled_from(["debit", "debit", "credit", "cancel"]),
        st.integers(0, 3),  # which reference: repeats, and calls of another kind under it
        st.integers(0, 2),  # which player: 1 is poor, 2 has no account
        st.sampled_from([100, 100, 250, 2000]),  # 250 and 2000: more than the poor one has
    ),
    min_size=1,
    max_size=24,
)


class _Counted(httpx.HTTPTransport):
    """The client's transport, each request's path written down."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return super().handle_request(request)


def _batch_calls(served: WalletProcess, ops: list[tuple[str, int, int, int]]) -> list[Call]:
    """The calls of ``ops`` on players and references of their own (deposits made)."""
    run = uuid.uuid4().hex[:12]
    players = [f"b-{run}-0", f"b-{run}-1", f"b-{run}-2"]
    with WalletStore(served.location) as store:
        store.deposit(player=players[0], amount_cents=3000, now=dt.datetime.now(dt.UTC))
        store.deposit(player=players[1], amount_cents=200, now=dt.datetime.now(dt.UTC))
    return [
        debit_call(f"{run}-ref-{ref}", players[who], amount) if kind == "debit"
        else Call(kind, f"{run}-ref-{ref}", players[who], amount, GAME)
        for kind, ref, who, amount in ops
    ]  # fmt: skip


def _seen(outcome: Any) -> tuple[Any, ...]:
    """An outcome as compared: what moved and the balance after, or the refusal."""
    if isinstance(outcome, Confirmed):
        receipt = outcome.receipt
        return ("confirmed", receipt.kind, receipt.amount_cents, receipt.balance_cents,
                receipt.refunded, outcome.replayed)  # fmt: skip
    assert isinstance(outcome, Refused), outcome  # never Unknown: the wallet answers
    return ("refused", outcome.kind, outcome.status)


@given(batch_ops, st.lists(st.integers(1, 9), min_size=1, max_size=5))
@settings(max_examples=20, deadline=None)
def test_a_batch_answers_each_call_as_it_would_be_answered_alone(served, ops, sizes):
    """The same mixed sequence of debits, credits and cancels (references repeated, bodies
    changed under a reference, debits the balance does not cover, a player with no account),
    sent once one request a call and once in batches of any sizes, each on players and
    references of its own: each call's outcome is the same, in order (the receipt's balance,
    replayed or not, refunded or not; the refusal and its status), and so are the balances."""
    ops = [*ops, ops[0]]  # a call repeated, at least
    alone, batched = _batch_calls(served, ops), _batch_calls(served, ops)
    with WalletClient(served.url, key=served.key, game=GAME) as client:
        one_by_one = [_seen(client.send(call)) for call in alone]
        client.transport.close()
        client.transport = counting = _Counted()  # a fresh pool, its requests counted
        together: list[tuple[Any, ...]] = []
        groups = 0
        while len(together) < len(batched):
            size = sizes[groups % len(sizes)]
            together += map(_seen, client.send_many(batched[len(together) : len(together) + size]))
            groups += 1
        assert client.batches
    assert together == one_by_one
    assert counting.paths == ["/v1/batch"] * groups  # one request a batch
    with WalletStore(served.location) as store:
        for a, b in zip(alone, batched, strict=True):
            assert store.balance(player=a.player) == store.balance(player=b.player)


def _signed_post(served: WalletProcess, path: str, body: bytes) -> httpx.Response:
    url = served.url + path
    headers = RequestSigner(served.key).headers("POST", url, body)
    return httpx.post(url, content=body, headers=headers, timeout=30)


def test_a_batch_is_bounded_checked_whole_and_signed_once(served):
    """Past 256 calls: 413 in one line, none made; a malformed batch: 400, none made; a call
    whose own body is malformed: its own 400, its neighbours made; the batch's nonce once."""
    from printpipe.wallet.api import BATCH_MOST, batch_body

    player = f"bound-{uuid.uuid4().hex[:8]}"
    with WalletStore(served.location) as store:
        store.deposit(player=player, amount_cents=10**6, now=dt.datetime.now(dt.UTC))
    calls = [debit_call(uuid.uuid4().hex, player) for _ in range(BATCH_MOST + 1)]
    over = _signed_post(served, "/v1/batch", batch_body(calls))
    assert over.status_code == 413 and b"\n" not in over.content.strip()
    assert over.headers["content-type"] == "application/problem+json"
    assert over.json()["error"] == "too_many_calls"
    for malformed in (b"{}", b'{"calls": []}', b'{"calls": [{"kind": "debit"}]}',
                      b'{"calls": [{"kind": "deposit", "body": {}}]}', b"[]", b"\xff"):  # fmt: skip
        refused = _signed_post(served, "/v1/batch", malformed)
        assert refused.status_code == 400 and refused.json()["error"] == "bad_request", malformed
    with WalletStore(served.location) as store:
        assert store.balance(player=player) == 10**6  # nothing made
    fine = batch_body(calls[:2]).replace(b'"calls":[', b'"calls":[{"kind":"credit","body":{}},')
    url = served.url + "/v1/batch"
    headers = RequestSigner(served.key).headers("POST", url, fine)
    answered = httpx.post(url, content=fine, headers=headers, timeout=30)
    assert answered.status_code == 200
    results = answered.json()["results"]
    assert [r["status"] for r in results] == [400, 201, 201]
    assert results[0]["body"]["error"] == "bad_request" and not results[0]["replayed"]
    assert results[2]["body"]["balance_cents"] == 10**6 - 200
    replayed = httpx.post(url, content=fine, headers=headers, timeout=30)  # the same nonce
    assert replayed.status_code == 401 and "nonce" in replayed.json()["detail"]
    again = _signed_post(served, "/v1/batch", fine)  # a new nonce: each call replayed
    assert [(r["status"], r["replayed"]) for r in again.json()["results"]] == [
        (400, False), (200, True), (200, True),
    ]  # fmt: skip
    with WalletStore(served.location) as store:
        assert store.balance(player=player) == 10**6 - 200


class _NoBatch(_Counted):
    """A wallet without the batch: ``POST /v1/batch`` answered 404, the rest passed on."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/batch":
            self.paths.append(request.url.path)
            return httpx.Response(404, json={"error": "not_found", "detail": "no such path"})
        return super().handle_request(request)


def test_a_wallet_without_the_batch_is_sent_one_request_a_call(served, caplog):
    """404 to the batch: the calls are sent one request each (the same outcomes), the
    client remembers it (the batch is not asked again) and says so once in the log."""
    player = f"nobatch-{uuid.uuid4().hex[:8]}"
    with WalletStore(served.location) as store:
        store.deposit(player=player, amount_cents=250, now=dt.datetime.now(dt.UTC))
    transport = _NoBatch()
    refs = [uuid.uuid4().hex for _ in range(3)]
    with WalletClient(served.url, key=served.key, game=GAME, transport=transport) as client:
        first = client.debit_many([(refs[0], player, SPLIT), (refs[1], player, SPLIT),
                                   (refs[2], f"{player}-nobody", SPLIT)])  # fmt: skip
        assert [type(o).__name__ for o in first] == ["Confirmed", "Confirmed", "Refused"]
        assert isinstance(first[2], Refused) and first[2].kind == "no_such_player"
        assert not client.batches
        later = client.credit_or_cancel_many([("credit", refs[0], player, 500),
                                              ("cancel", refs[1], player, 100)])  # fmt: skip
        assert [type(o).__name__ for o in later] == ["Confirmed", "Confirmed"]
    assert transport.paths.count("/v1/batch") == 1
    assert sorted(transport.paths[1:]) == sorted(
        ["/v1/debits"] * 3 + ["/v1/credits", "/v1/cancels"]
    )
    warned = [r for r in caplog.records if "no batch call" in r.getMessage()]
    assert len(warned) == 1
    with WalletStore(served.location) as store:
        assert store.balance(player=player) == 250 - 100 + 500


def _batch_receipts(request: httpx.Request, fail: set[int] | None = None) -> httpx.Response:
    results = []
    for n, item in enumerate(json.loads(request.content)["calls"]):
        if fail and n in fail:
            results.append({"status": 500, "body": {"error": "internal"}, "replayed": False})
            continue
        data, kind = item["body"], item["kind"]
        refunded = False if kind == "cancel" else None
        receipt = Receipt(kind, data["reference"], data["player"], data["amount_cents"], 1900,
                          "2026-12-01T11:00:00.000000Z", refunded)  # fmt: skip
        results.append({"status": 201, "body": receipt.as_json(), "replayed": False})
    return httpx.Response(200, json={"results": results})


def test_a_batch_not_answered_leaves_each_call_unknown_and_is_sent_again_the_same():
    """A batch whose answer is lost (a timeout, a 503): sent again with the same body (the
    same references, a new signature), then every call in it Unknown; each attempt observed
    for each call it carried; a call answered 500 within a batch is the only one sent again."""
    bodies: list[bytes] = []
    nonces: set[str] = set()
    observed: list[tuple[str, str]] = []

    def lost(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        nonces.add(request.headers["signature-input"])
        if len(bodies) == 1:
            raise httpx.ReadTimeout("no answer", request=request)
        return httpx.Response(503, headers={"Retry-After": "1"})

    client = _client(lost)
    client.observe = lambda call, outcome, seconds: observed.append((call, outcome))
    refs = [f"{n:032x}" for n in range(3)]
    outcomes = client.debit_many([(r, "alice", SPLIT) for r in refs])
    assert all(isinstance(o, Unknown) and o.attempts == 3 for o in outcomes)
    assert len(bodies) == 3 and len(set(bodies)) == 1 and len(nonces) == 3
    assert [c["body"]["reference"] for c in json.loads(bodies[0])["calls"]] == refs
    assert observed == [("debit", "unknown")] * 9  # 3 calls x 3 attempts, each counted
    carried: list[list[str]] = []

    def one_fails_once(request: httpx.Request) -> httpx.Response:
        calls = json.loads(request.content)["calls"]
        carried.append([c["body"]["reference"] for c in calls])
        return _batch_receipts(request, fail={1} if len(carried) == 1 else None)

    settled = _client(one_fails_once).debit_many([(r, "alice", SPLIT) for r in refs])
    assert [type(o).__name__ for o in settled] == ["Confirmed"] * 3
    assert [o.attempts for o in settled if isinstance(o, Confirmed)] == [1, 2, 1]
    assert carried == [refs, [refs[1]]]
    refused = _client(lambda r: httpx.Response(401, json={"error": "unauthorized",
                                                         "detail": "who"}))  # fmt: skip
    assert all(isinstance(o, Refused) and o.kind == "unauthorized"
               for o in refused.debit_many([(r, "alice", SPLIT) for r in refs]))  # fmt: skip
    garbled = _client(lambda r: httpx.Response(200, json={"results": []}), attempts=1)
    assert all(isinstance(o, Unknown) for o in garbled.debit_many([(refs[0], "alice", SPLIT)]))


class _LostThenRefused(_Counted):
    """The first request reaches the wallet (its calls made) but its answer is lost; the
    next is refused whole before it reaches the wallet (``refusal``: a 401, as a wallet whose
    clock or keys moved answers, or a proxy's 4xx); the rest are passed on."""

    def __init__(self, refusal: httpx.Response) -> None:
        super().__init__()
        self.refusal = refusal

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not self.paths:
            response = super().handle_request(request)
            response.read()
            response.close()
            raise httpx.ReadTimeout("the answer was lost", request=request)
        if len(self.paths) == 1:
            self.paths.append(request.url.path)
            return self.refusal
        return super().handle_request(request)


@pytest.mark.parametrize(
    "refusal",
    [httpx.Response(401, json={"error": "unauthorized", "detail": "the clock moved"}),
     httpx.Response(403, text="forbidden by the proxy"),
     httpx.Response(413, json={"error": "too_large", "detail": "at most 16 bytes"})],
)  # fmt: skip
@pytest.mark.parametrize("batched", [True, False])
def test_a_refusal_after_an_attempt_left_unanswered_is_not_taken_as_nothing_made(
    served, refusal, batched
):
    """A debit's first request is made by the wallet, its answer lost; the next request is
    refused whole (401, a proxy's 403, 413): the refusal is of that request, not proof that
    the first made nothing, so the debit's outcome stays unknown (never Refused: the game
    server would neither deal nor cancel it, and the stake would be lost), and the debit is
    then confirmed, or its cancel gives the stake back."""
    player = f"unanswered-{uuid.uuid4().hex[:8]}"
    with WalletStore(served.location) as store:
        store.deposit(player=player, amount_cents=1000, now=dt.datetime.now(dt.UTC))
    transport = _LostThenRefused(refusal)
    refs = [uuid.uuid4().hex for _ in range(2 if batched else 1)]
    with WalletClient(served.url, key=served.key, game=GAME, transport=transport,
                      sleep=lambda s: None) as client:  # fmt: skip
        if batched:
            outcomes = client.debit_many([(r, player, SPLIT) for r in refs])
        else:
            outcomes = [client.debit(reference=refs[0], player=player, split=SPLIT)]
        assert transport.paths[:2] == ["/v1/batch" if batched else "/v1/debits"] * 2
        for outcome in outcomes:  # the third attempt reached the wallet: replayed
            assert not isinstance(outcome, Refused), outcome
            assert isinstance(outcome, Confirmed) and outcome.replayed and outcome.attempts == 3
        assert wallet_balance(served, player) == 1000 - 100 * len(refs)
    transport = _LostThenRefused(refusal)
    with WalletClient(served.url, key=served.key, game=GAME, transport=transport, attempts=2,
                      sleep=lambda s: None) as client:  # fmt: skip
        more = [uuid.uuid4().hex for _ in refs]
        if batched:
            left = client.debit_many([(r, player, SPLIT) for r in more])
        else:
            left = [client.debit(reference=more[0], player=player, split=SPLIT)]
        assert all(isinstance(o, Unknown) for o in left), left  # no attempt left: unknown
        cancels = client.credit_or_cancel_many([("cancel", r, player, 100) for r in more])
        assert all(isinstance(o, Confirmed) and o.receipt.refunded for o in cancels), cancels
    assert wallet_balance(served, player) == 1000 - 100 * len(refs)


class _LostThenNoBatch(_Counted):
    """The first batch reaches the wallet (its calls made), its answer lost; the batch is
    then answered 404 (the wallet went back to a version without it), and each call's first
    request alone refused 401; the rest passed on."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: set[tuple[str, str]] = set()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if not self.paths:
            response = super().handle_request(request)
            response.read()
            response.close()
            raise httpx.ReadTimeout("the answer was lost", request=request)
        if path == "/v1/batch":
            self.paths.append(path)
            return httpx.Response(404, text="no such path")
        reference = json.loads(request.content)["reference"]
        if (path, reference) not in self.refused:
            self.refused.add((path, reference))
            self.paths.append(path)
            return httpx.Response(401, json={"error": "unauthorized", "detail": "moved"})
        return super().handle_request(request)


def test_a_batch_left_unanswered_then_sent_alone_keeps_what_it_may_have_made(served):
    """A batch of debits made by the wallet, its answer lost, then 404 (no batch): its calls
    go one request each, and a refusal of that first request alone is no proof either (the
    batch may have made the call): never Refused; sent again, each is confirmed, replayed."""
    player = f"nobatch-later-{uuid.uuid4().hex[:8]}"
    with WalletStore(served.location) as store:
        store.deposit(player=player, amount_cents=1000, now=dt.datetime.now(dt.UTC))
    transport = _LostThenNoBatch()
    refs = [uuid.uuid4().hex for _ in range(3)]
    with WalletClient(served.url, key=served.key, game=GAME, transport=transport,
                      sleep=lambda s: None) as client:  # fmt: skip
        outcomes = client.debit_many([(r, player, SPLIT) for r in refs])
        assert not client.batches
    assert transport.paths[:2] == ["/v1/batch"] * 2
    for reference, outcome in zip(refs, outcomes, strict=True):
        assert isinstance(outcome, Confirmed), outcome
        assert outcome.replayed and outcome.receipt.reference == reference
    assert wallet_balance(served, player) == 1000 - 300


def wallet_balance(served: WalletProcess, player: str) -> int:
    with WalletStore(served.location) as store:
        return int(store.balance(player=player) or 0)
