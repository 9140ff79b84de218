"""Plays through the operator's wallet over HTTP (issue 27, phase 2): the reference wallet run
as a subprocess (``tests.wallet_helpers``), the game server's dealer in process.  The debit
settled before the deal, the credit sent from the durable outbox, a lost debit cancelled, a
debit left by a killed game server cancelled, the books of both sides equal."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from printpipe.errors import PrintpipeError
from printpipe.ledger import InsufficientFunds, Ledger, PlayRefused, PlayRequest, load_ledger_key
from printpipe.ledger.outbox import ABANDONED_S
from printpipe.play.app import create_app
from printpipe.play.launch import make_launch_token
from printpipe.play.server import open_dealer
from printpipe.wallet.store import WalletStore
from tests.play_helpers import make_block, make_world
from tests.test_play_launch import PLATFORM_KEY, SAME_SITE
from tests.wallet_helpers import WalletProcess

FP = b"f" * 32


@pytest.fixture(scope="module")
def world(tmp_path_factory, ledgers):
    from printpipe.ledger import LOTTERY, TerminalId
    from printpipe.service.signatures import key_id_of, raw_public_key

    block = make_block(tmp_path_factory.mktemp("wallet-block"), packs=1)
    w = make_world(block, ledgers.new(), tmp_path_factory.mktemp("wallet-play"), players=1,
                   balance_eur=0)  # fmt: skip
    with Ledger(w.location, key=load_ledger_key(w.keys)) as book:
        book.add_terminal(
            TerminalId("launcher"), public_key=raw_public_key(PLATFORM_KEY.public_key()),
            key_id=key_id_of(PLATFORM_KEY.public_key()), retailer=None, role="platform",
            by=LOTTERY,
        )  # fmt: skip
    return w


@pytest.fixture(scope="module")
def wallet(ledgers, tmp_path_factory):
    process = WalletProcess(ledgers.new(), tmp_path_factory.mktemp("wallet"))
    process.start()
    yield process
    process.stop()


def deposit(wallet: WalletProcess, player: str, cents: int) -> None:
    with WalletStore(wallet.location) as store:
        store.deposit(player=player, amount_cents=cents, now=dt.datetime.now(dt.UTC))


def wallet_balance(wallet: WalletProcess, player: str) -> int:
    with WalletStore(wallet.location) as store:
        return int(store.balance(player=player) or 0)


def outbox_rows(world, *, player: str) -> list[tuple]:
    """The player's outbox rows in the order written: a row's time is to the second, so within
    one a debit comes before its credit or cancel (``kind`` descending)."""
    with world.ledger() as book:
        return book.query(
            "SELECT reference, kind, amount_cents, state FROM wallet_outbox WHERE player = ? "
            "ORDER BY created_at, kind DESC",
            (player,),
        )


def introduce(world, player: str) -> None:
    """A player known to the game server (a launch introduces them), with nothing here."""
    with (
        Ledger(world.location, key=load_ledger_key(world.keys)) as book,
        book.db.transaction() as tx,
    ):
        tx.execute("INSERT INTO players (id, balance_cents, added_at) VALUES (?, 0, 'x')",
                   (player,))  # fmt: skip


BACKOFF_S = 0.01
"""The dealer's client's first pause after an unanswered attempt (0.2 s by default): a debit
whose answers are all lost is still asked 4 times, then cancelled, in a tenth of a second, not
2.8 s (the pauses are test_wallet.py's)."""


def dealer_of(world, wallet, *, pool: int = 0):
    return open_dealer(world.location, world.keys, wallet=wallet.url,
                       wallet_key=wallet.key_file, pool=pool,
                       wallet_backoff_s=BACKOFF_S)  # fmt: skip


def test_plays_are_debited_and_credited_at_the_operators_wallet(world, wallet):
    """Each play's debit is confirmed before its unit is dealt; its lot's credit goes through
    the outbox; a stake the balance does not cover is refused (402) with nothing dealt; the
    built-in wallet is not touched; the ledger verifies."""
    player = "player-00"  # registered at the game server with 0 EUR: its money is the operator's
    deposit(wallet, player, 500)
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        made = []
        for n in range(8):
            try:
                made.append(dealer.play(player=player, key=f"http-play-{n}", fingerprint=FP)[0])
            except InsufficientFunds:
                break
            dealer.outbox.send_due()  # the credit, as the outbox task sends it
        assert len(made) >= 5
        again, replayed = dealer.play(player=player, key="http-play-0", fingerprint=FP)
        assert replayed and again.id == made[0].id  # the same key: answered again, not debited
        lots = sum(p.lot_eur * 100 for p in made)
        assert wallet_balance(wallet, player) == 500 - 100 * len(made) + lots
        assert dealer.account(player=player)["balance_cents"] == wallet_balance(wallet, player)
        assert made[-1].balance_cents == wallet_balance(wallet, player)
        entries = ledger.query("SELECT COUNT(*) FROM wallet_entries WHERE player = ?", (player,))
        assert entries == [(0,)]
        shares = ledger.query("SELECT DISTINCT jackpot_cents FROM plays WHERE player = ?",
                              (player,))  # fmt: skip
        assert shares == [(3,)]
        report = ledger.verify_log()
        assert report.ok, report.problems
        edited = made[0].id  # a database writer raises the debit the wallet was asked
        with ledger.db.transaction() as tx:
            tx.execute("UPDATE wallet_outbox SET amount_cents = 1 WHERE reference = ? AND "
                       "kind = 'debit'", (edited,))  # fmt: skip
        problems = ledger.verify_log().problems
        assert any(f"the wallet call debit {edited} of {player} was edited" in p
                   for p in problems), problems  # fmt: skip
        with ledger.db.transaction() as tx:
            tx.execute("UPDATE wallet_outbox SET amount_cents = 100 WHERE reference = ? AND "
                       "kind = 'debit'", (edited,))  # fmt: skip
        assert ledger.verify_log().ok
    rows = outbox_rows(world, player=player)
    debits = [r for r in rows if r[1] == "debit"]
    assert sum(r[3] == "confirmed" for r in debits) == len(made)
    assert sum(r[3] == "refused" for r in debits) == len(debits) - len(made)
    credits = [r for r in rows if r[1] == "credit"]
    assert all(r[3] == "confirmed" for r in credits) and sum(r[2] for r in credits) == lots


def test_a_debit_whose_answer_is_lost_is_cancelled_and_nothing_dealt(world, wallet, ledgers):
    """The wallet takes the debits but every answer is lost: a play alone, then a batch of
    plays whose debits went in one request: each player is answered 503 (nothing dealt), the
    cancels stay in the outbox until the wallet answers again, then the stakes are given
    back."""
    player = "lost-answers"
    batch = [f"lost-batch-{n}" for n in range(3)]
    for name in (player, *batch):
        deposit(wallet, name, 300)
        introduce(world, name)
    wallet.stop()
    wallet.faults = ["lose=1"]
    wallet.start()
    try:
        ledger, dealer = dealer_of(world, wallet)
        with ledger:
            with pytest.raises(PlayRefused) as refused:
                dealer.play(player=player, key="lost-play-1", fingerprint=FP)
            assert refused.value.status == 503 and "cancel" in str(refused.value)
            outcomes = dealer.play_batch([PlayRequest(n, f"lost-{n}", FP) for n in batch])
            for outcome in outcomes:
                assert isinstance(outcome, PlayRefused) and outcome.status == 503, outcome
                assert "cancel" in str(outcome)
            assert dealer.wallet.batches  # the batch route answered (its answers lost)
            for name in (player, *batch):
                assert ledger.query("SELECT COUNT(*) FROM plays WHERE player = ?",
                                    (name,)) == [(0,)]  # fmt: skip
            assert dealer.outbox.pending() == 4
    finally:
        wallet.stop()
        wallet.faults = []
        wallet.start()
    for name in (player, *batch):
        assert wallet_balance(wallet, name) == 200  # taken, and its cancel not through yet
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        with ledger.db.transaction() as tx:  # due now
            for name in (player, *batch):
                tx.execute("UPDATE wallet_outbox SET next_at = 0 WHERE player = ?", (name,))
        assert dealer.outbox.send_due() == 4 and dealer.outbox.pending() == 0
        assert ledger.verify_log().ok
    for name in (player, *batch):
        assert wallet_balance(wallet, name) == 300
        assert [r[1:] for r in outbox_rows(world, player=name)] == [
            ("debit", 100, "cancel"),
            ("cancel", 100, "confirmed"),
        ]


class _LostThenUnauthorized(httpx.HTTPTransport):
    """The first request reaches the wallet (its debits taken), its answer lost; the next
    is refused 401 before it reaches the wallet (its clock or keys moved); the rest pass."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        if self.sent == 2:
            return httpx.Response(401, json={"error": "unauthorized", "detail": "skewed"})
        response = super().handle_request(request)
        if self.sent == 1:
            response.read()
            response.close()
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return response


def test_a_batch_refused_after_its_answer_was_lost_has_its_debits_cancelled(world, wallet):
    """A batch of plays' debits taken by the wallet, the answer lost, the batch sent again
    and refused whole (401): nothing is dealt, and each debit is cancelled (its stake given
    back), not taken for refused (nothing cancelled, the stake lost)."""
    players = [f"refused-after-lost-{n}" for n in range(3)]
    for name in players:
        deposit(wallet, name, 300)
        introduce(world, name)
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        dealer.wallet.transport.close()
        dealer.wallet.transport = _LostThenUnauthorized()
        dealer.wallet.attempts = 2
        outcomes = dealer.play_batch([PlayRequest(n, f"lost-then-401-{n}", FP) for n in players])
        for outcome in outcomes:
            assert isinstance(outcome, PlayRefused) and outcome.status == 503, outcome
        assert [wallet_balance(wallet, name) for name in players] == [200] * 3  # taken
        with ledger.db.transaction() as tx:  # due now
            for name in players:
                tx.execute("UPDATE wallet_outbox SET next_at = 0 WHERE player = ?", (name,))
        assert dealer.outbox.send_due() == 3 and dealer.outbox.pending() == 0
        assert ledger.verify_log().ok
        for name in players:
            assert ledger.query("SELECT COUNT(*) FROM plays WHERE player = ?", (name,)) == [(0,)]
    assert [wallet_balance(wallet, name) for name in players] == [300] * 3  # given back


def test_the_prizes_remaining_do_not_say_credited_of_a_lot_still_to_credit(world, wallet, tmp_path):
    """A winning play through the operator's wallet, its credit still in the outbox (the
    wallet has not confirmed it): the signed prizes remaining count its lot as won (gone from
    the field), and say nothing of it being credited, which is not so yet."""
    from printpipe.commitment.remaining import verify_remaining_file
    from printpipe.keys import (
        LOTTERY_SIGNING_KEY,
        LOTTERY_SIGNING_PUB,
        PRODUCER_SIGNING_PUB,
        load_public_key,
        load_signing_key,
    )
    from printpipe.ledger.book import publish_remaining

    player = "credit-still-pending"
    deposit(wallet, player, 5000)
    introduce(world, player)
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        for n in range(40):  # no send_due: every credit stays pending
            play, _ = dealer.play(player=player, key=f"pending-credit-{n}", fingerprint=FP)
            if play.lot_eur:
                break
        assert play.lot_eur, "no play won in 40"
    assert (play.id, "credit", play.lot_eur * 100, "pending") in outbox_rows(world, player=player)
    out = tmp_path / "remaining.txt"
    signing = load_signing_key(world.keys, LOTTERY_SIGNING_KEY)
    made = publish_remaining(world.location, out=out, key=load_ledger_key(world.keys),
                             signing_key=signing)  # fmt: skip
    assert made.paid >= 1 and "won by plays" in made.describe()
    verified = verify_remaining_file(
        report_path=out, commitment_path=world.block.commitment,
        producer_key=load_public_key(world.keys / PRODUCER_SIGNING_PUB),
        lottery_key=load_public_key(world.keys / LOTTERY_SIGNING_PUB),
    ).describe(out)  # fmt: skip
    assert "won by plays" in verified
    assert "credited" not in made.describe() and "credited" not in verified
    ledger, dealer = dealer_of(world, wallet)
    with ledger:  # the credit sent, as the outbox task sends it: the world as it was
        assert dealer.outbox.send_due() == 1 and dealer.outbox.pending() == 0


def test_a_debit_left_by_a_killed_game_server_is_cancelled(world, wallet):
    """Killed between its debit and its deal: the same key is told to retry while the debit
    may be in flight; once it is abandoned the outbox cancels it (the stake given back), and
    the key plays again."""
    player = "killed-midway"
    deposit(wallet, player, 200)
    introduce(world, player)
    request = PlayRequest(player, "midway-key", FP)
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        _, reserved = dealer.outbox._reserve([request])
        assert dealer.outbox._debits(reserved)[0].__class__.__name__ == "Confirmed"
    # ... killed here: no deal, no state written
    assert wallet_balance(wallet, player) == 100
    ledger, dealer = dealer_of(world, wallet)
    with ledger:
        with pytest.raises(PlayRefused, match="being settled"):
            dealer.play(player=player, key="midway-key", fingerprint=FP)
        later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=ABANDONED_S + 5)
        dealer.clock = lambda: later
        assert dealer.outbox.send_due() == 1
        assert wallet_balance(wallet, player) == 200
        dealer.clock = lambda: dt.datetime.now(dt.UTC)
        play, replayed = dealer.play(player=player, key="midway-key", fingerprint=FP)
        assert not replayed and play.id != reserved[0].reference
        dealer.outbox.send_due()
        assert ledger.verify_log().ok


def balance(client: TestClient, player: str) -> int:
    return int(client.get(f"/v1/players/{player}").json()["balance_cents"])


def test_the_game_server_plays_through_the_wallet_with_a_launch_link(world, wallet):
    """Over HTTP, a launched player plays; the balance shown is the wallet's; the outbox task
    sends the credit; the metrics count the wallet's calls."""
    player = "launched-http"
    deposit(wallet, player, 1000)
    ledger, dealer = dealer_of(world, wallet, pool=4)
    app = create_app(ledger, dealer, threads=ledger.db.threads, demo=False)
    with TestClient(app, base_url="http://play.test") as client:
        token = make_launch_token(PLATFORM_KEY, player=player)
        assert client.post("/v1/launches", json={"token": token},
                           headers=SAME_SITE).status_code == 201  # fmt: skip
        assert client.get(f"/v1/players/{player}").json()["balance_cents"] == 1000
        made = client.post(f"/v1/players/{player}/plays", json={},
                           headers={**SAME_SITE, "Idempotency-Key": "launched-http-1"})  # fmt: skip
        assert made.status_code == 201, made.text
        expected = 1000 - 100 + 100 * made.json()["lot_eur"]
        assert made.json()["balance_cents"] == expected
        deadline = time.monotonic() + 10  # until the outbox task has sent the credit; asked
        # over HTTP, not through the dealer's connection, which the server's thread holds
        while balance(client, player) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        assert balance(client, player) == expected
        metrics = client.get("/metrics").text
        assert 'printpipe_wallet_calls_total{call="debit",outcome="confirmed"}' in metrics


def test_the_days_report_is_signed_and_reconcile_finds_the_books_equal(world, wallet, ledgers):
    """After the plays above: ``play report`` signs the day's sales (its figures the
    ledger's), ``play reconcile`` finds the game server's calls and the wallet's statement
    equal (exit 0), and names a debit the game server never asked (exit 1)."""
    from printpipe.keys import LOTTERY_SIGNING_PUB, load_public_key
    from printpipe.play.report import read_sales_report
    from printpipe.wallet.api import Call, Share
    from tests.ledger_helpers import db_arg, run_in_process

    reporter = "reported"
    introduce(world, reporter)
    deposit(wallet, reporter, 4000)
    ledger, dealer = dealer_of(world, wallet)

    def signed_report(day: str) -> tuple[dict[str, Any], str]:
        printed = run_in_process("play", "report", "--db", db_arg(world.location), "--keys",
                                 str(world.keys), "--day", day)  # fmt: skip
        assert printed.returncode == 0, printed.stderr
        lottery = load_public_key(world.keys / LOTTERY_SIGNING_PUB)
        return read_sales_report(printed.stdout.encode(), lottery), printed.stdout

    with ledger:
        won_cents, n = 0, 0
        while n < 3 or (won_cents == 0 and n < 40):  # until a lot waits for its credit
            played, _ = dealer.play(player=reporter, key=f"reported-{n}", fingerprint=FP)
            won_cents, n = won_cents + 100 * played.lot_eur, n + 1
        with world.ledger() as book:
            day = book.query("SELECT MAX(day) FROM plays")[0][0]
        (game,) = signed_report(day)[0]["games"]
        assert won_cents > 0 and game["lots_pending_cents"] == won_cents  # not sent yet
        assert game["lots_credited_cents"] == game["lots_cents"] - won_cents
        dealer.outbox.send_due()
    with world.ledger() as book:
        plays, stakes, lots = book.query(
            "SELECT COUNT(*), SUM(stake_cents), SUM(lot_cents) FROM plays WHERE day = ?", (day,)
        )[0]
    report, signed = signed_report(day)
    (game,) = report["games"]
    assert (game["plays"], game["stakes_cents"], game["lots_cents"]) == (plays, stakes, lots)
    assert game["jackpot_participations"] == plays and game["jackpot_cents"] == 3 * plays
    assert game["linked_game"] and game["lots_pending_cents"] == 0
    assert game["lots_credited_cents"] == lots
    forged = signed.replace(f'"plays": {plays},', f'"plays": {plays + 1},', 1)
    with pytest.raises(PrintpipeError, match="does not verify"):
        read_sales_report(forged.encode(), load_public_key(world.keys / LOTTERY_SIGNING_PUB))

    reconcile = ["play", "reconcile", "--db", db_arg(world.location), "--wallet", wallet.url,
                 "--wallet-key", str(wallet.key_file), "--day", day]  # fmt: skip
    equal = run_in_process(*reconcile)
    assert equal.returncode == 0 and "are equal" in equal.stdout, equal.stdout + equal.stderr
    deposit(wallet, reporter, 100)
    with WalletStore(wallet.location) as store:  # a debit nobody played nor cancelled
        store.apply(Call("debit", "forged-debit-0001", reporter, 100, "GA",
                         (Share("GA", 100),)), now=dt.datetime.now(dt.UTC))  # fmt: skip
    differs = run_in_process(*reconcile)
    assert differs.returncode == 1, differs
    assert f"unknown: the wallet's debit forged-debit-0001 of {reporter}" in differs.stdout
