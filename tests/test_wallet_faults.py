"""The game server's wallet client against the reference wallet in a subprocess that loses
answers after committing, answers 503, holds answers past the client's timeout, and is killed
(SIGKILL) and restarted in the middle of a storm of 64 players (half of them one request a
call, half in batches of 8, ``POST /v1/batch``, whose faults lose, refuse or hold a whole
batch), on both databases: afterwards no money is made or lost, every debit the client was
told of stands, every debit it could not confirm is cancelled (refunded, or refused when it
arrives), every lot is credited once."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from printpipe.play.operator_wallet import Cancelled, Confirmed, Refused, Unknown, WalletClient
from printpipe.wallet.store import WalletStore
from tests.wallet_helpers import WalletProcess

GAME = "golden-animals"
SPLIT = (("golden-animals", 97), ("SUPER JACKPOT", 3))
PLAYERS = 64
PLAYS_EACH = 2
OPENING = 1000
MAX_WAIT_S = 0.05
"""The client's longest pause between two attempts (2 s by default): the wallet's 503s ask
Retry-After: 1, which would hold a call a second each time (the pauses are test_wallet.py's)."""
DOWN_S = 0.5
"""How long the killed wallet stays down before it is started again."""


@dataclass
class Books:
    """What the game server knows: each play's stake taken or not, each lot credited."""

    taken: dict[str, str] = field(default_factory=dict)  # reference -> player
    not_taken: dict[str, str] = field(default_factory=dict)
    pending_cancels: dict[str, str] = field(default_factory=dict)
    credited: dict[str, int] = field(default_factory=dict)
    settled_by_cancel: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _settled(books: Books) -> int:
    """The plays whose debit has an outcome the game server acted on."""
    with books.lock:
        return len(books.taken) + len(books.not_taken) + len(books.pending_cancels)


def _until_confirmed(send, deadline: float) -> Confirmed:
    """The outbox's loop: the same call again until it is confirmed."""
    while True:
        outcome = send()
        if isinstance(outcome, Confirmed):
            return outcome
        assert not isinstance(outcome, Refused), outcome
        assert time.monotonic() < deadline, f"never confirmed: {outcome}"
        time.sleep(0.2)


def _player(client: WalletClient, books: Books, player: str, draw: random.Random) -> None:
    deadline = time.monotonic() + 240
    for _ in range(PLAYS_EACH):
        reference = uuid.uuid4().hex
        settled = client.settle_debit(reference=reference, player=player, split=SPLIT)
        with books.lock:
            if isinstance(settled, Confirmed):
                books.taken[reference] = player
            elif isinstance(settled, Unknown):
                books.pending_cancels[reference] = player
            else:
                books.not_taken[reference] = player
                books.settled_by_cancel += isinstance(settled, Cancelled)
        if not isinstance(settled, Confirmed):
            continue
        lot = draw.choice([0, 0, 100, 200, 500])
        if lot:
            _until_confirmed(
                lambda r=reference, lot=lot: client.credit(
                    reference=r, player=player, amount_cents=lot
                ),
                deadline,
            )
            with books.lock:
                books.credited[reference] = lot


def _players_in_batches(
    client: WalletClient, books: Books, group: list[str], draws: dict[str, random.Random]
) -> None:
    """:func:`_player`'s plays for several players at once, each step one batch (``POST
    /v1/batch``): the debits, the cancels of those unknown, the credits until confirmed."""
    deadline = time.monotonic() + 240
    for _ in range(PLAYS_EACH):
        plays = [(uuid.uuid4().hex, player) for player in group]
        debits = client.debit_many([(reference, player, SPLIT) for reference, player in plays])
        unknown = [play for play, o in zip(plays, debits, strict=True) if isinstance(o, Unknown)]
        cancels = dict(zip(unknown, client.credit_or_cancel_many(
            [("cancel", reference, player, 100) for reference, player in unknown]
        ), strict=True))  # fmt: skip
        lots = {}
        with books.lock:
            for (reference, player), debit in zip(plays, debits, strict=True):
                if isinstance(debit, Confirmed):
                    books.taken[reference] = player
                    lot = draws[player].choice([0, 0, 100, 200, 500])
                    if lot:
                        lots[reference] = (player, lot)
                elif isinstance(debit, Refused):
                    books.not_taken[reference] = player
                elif isinstance(cancels[reference, player], Confirmed):
                    books.not_taken[reference] = player
                    books.settled_by_cancel += 1
                else:
                    assert not isinstance(cancels[reference, player], Refused)
                    books.pending_cancels[reference] = player
        while lots:  # the credits, the same batch again until each is confirmed
            credits = list(lots.items())
            sent = client.credit_or_cancel_many(
                [("credit", reference, player, lot) for reference, (player, lot) in credits]
            )
            for (reference, (_, lot)), outcome in zip(credits, sent, strict=True):
                assert not isinstance(outcome, Refused), outcome
                if isinstance(outcome, Confirmed):
                    with books.lock:
                        books.credited[reference] = lot
                    del lots[reference]
            assert time.monotonic() < deadline, f"never confirmed: {lots}"
            if lots:
                time.sleep(0.2)


def test_no_money_is_made_or_lost_whatever_the_wallet_does(ledgers, tmp_path):
    wallet = WalletProcess(
        ledgers.new(), tmp_path / "wallet", faults=["lose=0.25", "error=0.15", "delay=0.05"]
    )
    players = [f"player-{n:02d}" for n in range(PLAYERS)]
    with WalletStore(wallet.location) as store:
        for player in players:
            store.deposit(player=player, amount_cents=OPENING, now=dt.datetime.now(dt.UTC))
    wallet.start()
    books = Books()
    client = WalletClient(wallet.url, key=wallet.key, game=GAME, timeout_s=1.0, attempts=3,
                          backoff_s=0.05, max_wait_s=MAX_WAIT_S)  # fmt: skip
    try:

        def play(group: list[str]) -> None:
            for player in group:
                _player(client, books, player, random.Random(player))

        def batches(group: list[str]) -> None:
            _players_in_batches(client, books, group, {p: random.Random(p) for p in group})

        alone, together = players[: PLAYERS // 2], players[PLAYERS // 2 :]
        threads = [threading.Thread(target=play, args=(alone[i::16],)) for i in range(16)]
        threads += [threading.Thread(target=batches, args=(together[i::4],)) for i in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while _settled(books) < PLAYERS * PLAYS_EACH // 4:  # a quarter of the plays settled
            assert time.monotonic() < deadline, "the storm never got a quarter of the way"
            time.sleep(0.02)
        wallet.kill()  # mid-storm
        assert _settled(books) < PLAYERS * PLAYS_EACH  # still playing when it was killed
        time.sleep(DOWN_S)
        wallet.start()
        for thread in threads:
            thread.join(timeout=300)
            assert not thread.is_alive()
        # the cancels of the debits never confirmed, sent again until they are
        deadline = time.monotonic() + 120
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(
                lambda item: _until_confirmed(
                    lambda: client.cancel(reference=item[0], player=item[1], amount_cents=100),
                    deadline,
                ),
                books.pending_cancels.items(),
            ))  # fmt: skip
        books.not_taken.update(books.pending_cancels)
    finally:
        client.close()
        wallet.stop()
    assert "Traceback" not in wallet.log.read_text()
    assert books.settled_by_cancel + len(books.pending_cancels) > 0, "no debit was lost"

    with WalletStore(wallet.location) as store, store.transaction() as tx:
        rows = tx.execute(
            "SELECT reference, kind, player, amount_cents, moved_cents FROM movements "
            "WHERE kind <> 'deposit'"
        )
        balances = dict(tx.execute("SELECT player, balance_cents FROM accounts"))
    movements = {(r, k): (p, a, m) for r, k, p, a, m in rows}
    for reference, player in books.taken.items():  # every debit confirmed stands, once
        assert movements[reference, "debit"] == (player, 100, -100)
        assert (reference, "cancel") not in movements
    for reference in books.not_taken:  # never taken, or given back
        debit = movements.get((reference, "debit"))
        cancel = movements.get((reference, "cancel"))
        if debit is not None:
            assert cancel is not None and cancel[2] == 100, (reference, debit, cancel)
        assert (reference, "credit") not in movements
    credits = {r: m for (r, k), (_, _, m) in movements.items() if k == "credit"}
    assert credits == books.credited  # every lot credited once, no other
    known = set(books.taken) | set(books.not_taken)
    assert {r for r, _ in movements} <= known  # nothing the game server did not ask
    for player in players:  # money neither made nor lost
        stakes = sum(100 for p in books.taken.values() if p == player)
        lots = sum(books.credited.get(r, 0) for r, p in books.taken.items() if p == player)
        assert balances[player] == OPENING - stakes + lots, player
    assert len(books.taken) + len(books.not_taken) == PLAYERS * PLAYS_EACH
