"""``printpipe play --wallet`` against the reference wallet with injected faults (answers lost
after it committed, 503s, answers held half a second), both run as an operator runs them, in
subprocesses, on both databases: 64 players at once (a play each), the wallet killed (SIGKILL)
and restarted mid-storm, then the game server killed, restarted, and the same keys retried.
Afterwards: no money created or lost on either side, no debit without its play or its refunding
cancel, no credit missing or doubled, the ledger verifies, and ``play reconcile`` finds the two
books equal.

The game server's waits are shortened as an operator may set them (``OUTBOX_ENV``): a debit
left by the killed server is cancelled after 3 s (not 60), the calls its outbox held when it
was killed are due again after 5 s (not 60), a call the killed wallet failed is sent again
within 2 s (not up to 60), and its client pauses at most 0.1 s between two attempts of a call
(not 2 s: the wallet's 503s ask Retry-After: 1, the client's pauses are test_wallet.py's):
the same paths, taken in seconds."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid

import pytest

from printpipe.wallet.store import WalletStore
from tests.ledger_helpers import db_arg, run_in_process
from tests.play_helpers import make_block, make_world
from tests.storm import storm
from tests.wallet_helpers import WalletProcess

PLAYERS = 64
PLAYS_EACH = 1
OPENING = 1000
FAULTS = ["lose=0.15", "error=0.15", "delay=0.03"]
FAULT_DELAY_S = 0.5
"""A held answer: slow, within the game server's client's 5 s timeout (the answers held past
it are test_wallet_faults.py's)."""
OUTBOX_ENV = {"PRINTPIPE_WALLET_ABANDONED_S": "3", "PRINTPIPE_WALLET_CLAIM_S": "5",
              "PRINTPIPE_WALLET_MAX_BACKOFF_S": "2",
              "PRINTPIPE_WALLET_MAX_WAIT_S": "0.1"}  # fmt: skip


@pytest.fixture(scope="module")
def world(ledgers, tmp_path_factory):
    block = make_block(tmp_path_factory.mktemp("faults-block"), packs=1)
    return make_world(block, ledgers.new(), tmp_path_factory.mktemp("faults-world"),
                      players=PLAYERS, balance_eur=0)  # fmt: skip


@pytest.fixture(scope="module")
def wallet(ledgers, tmp_path_factory):
    process = WalletProcess(ledgers.new(), tmp_path_factory.mktemp("faults-wallet"), FAULTS,
                            fault_delay=FAULT_DELAY_S)  # fmt: skip
    with WalletStore(process.location) as store:
        now = dt.datetime.now(dt.UTC)
        for name in [f"player-{n:02d}" for n in range(PLAYERS)]:
            store.deposit(player=name, amount_cents=OPENING, now=now)
    process.start()
    yield process
    process.stop()


def _outbox_left(world) -> int:
    return int(world.query(
        "SELECT COUNT(*) FROM wallet_outbox WHERE state IN ('pending', 'sent')"
    )[0][0])  # fmt: skip


def test_a_storm_through_a_failing_wallet_and_two_kills_leaves_the_books_equal(world, wallet):
    start = {"workers": 2,  # two workers' batches and outbox tasks race, as in production
             "args": ["--wallet", wallet.url, "--wallet-key", str(wallet.key_file)],
             "env": OUTBOX_ENV}  # fmt: skip
    world.start(**start)
    try:
        keys = {name: [uuid.uuid4().hex for _ in range(PLAYS_EACH)] for name in world.players}
        answered = [0]

        def kills() -> None:
            answered[0] += 1
            if answered[0] == PLAYERS // 4:
                wallet.kill()
                wallet.start()  # the same port, its database as the kill left it
            elif answered[0] == PLAYERS // 2:
                world.kill()

        requests = [[world.play_request(n, k) for k in keys[n]] for n in world.players]
        outcomes, _ = storm(world.url, requests, on_answer=kills, timeout=60)
        assert any(o is not None and o.status == 201 for o in outcomes)
        world.start(**start)
        made: dict[tuple[str, str], str] = {}
        for _ in range(8):  # the same keys again until each play is made (503: retry)
            left = [(n, k) for n in world.players for k in keys[n] if (n, k) not in made]
            if not left:
                break
            time.sleep(0.5)
            outcomes, _ = storm(world.url, [[world.play_request(n, k)] for n, k in left])
            for pair, outcome in zip(left, outcomes, strict=True):
                if outcome is not None and outcome.status in (200, 201):
                    made[pair] = json.loads(outcome.body)["play"]
                else:
                    assert outcome is None or outcome.status == 503, outcome
        assert len(made) == PLAYERS * PLAYS_EACH  # each key played once, at last
        deadline = time.monotonic() + 90
        while _outbox_left(world):  # credits and cancels sent until confirmed
            assert time.monotonic() < deadline, "the outbox was never emptied"
            time.sleep(0.5)
    finally:
        world.stop()

    plays = {str(r): (str(p), int(s), int(lot)) for r, p, s, lot in world.query(
        "SELECT id, player, stake_cents, lot_cents FROM plays")}  # fmt: skip
    assert set(made.values()) == set(plays) and len(plays) == PLAYERS * PLAYS_EACH
    with WalletStore(wallet.location) as store:
        totals = store.totals()
        day = time.strftime("%Y-%m-%d", time.gmtime())
        statement = store.statement(day=day)
    staked = sum(s for _, s, _ in plays.values())
    won = sum(lot for _, _, lot in plays.values())
    # no money created or lost: the wallet holds the openings less the stakes plus the lots
    assert totals["balances"] == PLAYERS * OPENING - staked + won
    debits = [e for e in statement.entries if e.kind == "debit"]
    credits = [e for e in statement.entries if e.kind == "credit"]
    refunded = {e.reference for e in statement.entries if e.kind == "cancel" and e.refunded}
    # no debit without its play or its refunding cancel
    assert {e.reference for e in debits} == set(plays) | refunded
    assert not set(plays) & refunded
    # no credit missing or doubled
    assert sorted((e.reference, e.amount_cents) for e in credits) == sorted(
        (r, lot) for r, (_, _, lot) in plays.items() if lot
    )
    # Whether a debit is cancelled here depends on what was in flight at each kill: the
    # cancels themselves are proven deterministically in test_play_wallet.py (a debit whose
    # answer is lost, one left by a killed game server), this storm proves the books after.
    with world.ledger() as book:
        report = book.verify_log()
    assert report.ok, report.problems
    reconciled = run_in_process(
        "play", "reconcile", "--db", db_arg(world.location), "--wallet", wallet.url,
        "--wallet-key", str(wallet.key_file), "--day", day,
    )  # fmt: skip
    assert reconciled.returncode == 0, reconciled.stdout + reconciled.stderr
    assert "are equal" in reconciled.stdout
