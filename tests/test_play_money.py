"""Money that cannot be bent (issue 25), on both databases: the daily stake limit and the lock
order under concurrent batches on several workers; every money row bound to the sealed record
(a play inserted, a unit's lot raised, a balance set by a database writer without the key);
entries inserted without the key never sealed; the deal order not narrowed by anything the
database holds; a rewind named by the servers' witness."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from printpipe.block import PackRange
from printpipe.commitment import load_commitment
from printpipe.ledger import (
    LOTTERY,
    DailyLimitReached,
    Ledger,
    PlayRequest,
    TerminalId,
    configure,
    load_ledger_key,
)
from printpipe.ledger.deal import DEAL_PURPOSE, DealOrder, deal_key
from printpipe.ledger.log import PlayRecord, play_answer
from printpipe.play.app import create_app
from printpipe.play.server import open_dealer
from tests.ledger_helpers import (
    OFFICE_SCOPE,
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)
from tests.play_helpers import make_block, make_world

pytestmark = pytest.mark.xdist_group("play")

WORKERS = 4
LIMIT_EUR = 5


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("money-block"), packs=1)


@pytest.fixture(scope="module")
def world(block, ledgers, tmp_path_factory):
    return make_world(
        block, ledgers.new(), tmp_path_factory.mktemp("money"), players=2, balance_eur=20
    )


def _fingerprint(dealer, player: str) -> bytes:
    return dealer.ledger.request_fingerprint("POST", f"/v1/players/{player}/plays", b"")


def _verify(location, keys, *more: str):
    return run_in_process("ledger", "verify-log", "--db", db_arg(location), "--keys", str(keys),
                          *more)  # fmt: skip


def _unguarded(book: Ledger, tx, *tables: str) -> None:
    """What a database writer does first: the append-only rules dropped."""
    for table in tables:
        if book.db.dialect == "sqlite":
            tx.execute(f"DROP TRIGGER IF EXISTS {table}_no_update")
            tx.execute(f"DROP TRIGGER IF EXISTS {table}_no_delete")
        else:
            tx.execute(f"ALTER TABLE {table} DISABLE TRIGGER {table}_append_only")


# -- limits and locks by design ---------------------------------------------------------------


@pytest.fixture(scope="module")
def workers(ledgers, block, tmp_path_factory):
    """A ledger with a daily limit of 5 EUR and ``WORKERS`` dealers on it, each on its own
    connection, as the workers of ``printpipe play --workers N`` are."""
    limited = make_world(block, ledgers.new(), tmp_path_factory.mktemp("workers"), players=0,
                         balance_eur=0)  # fmt: skip
    configure(limited.location, terminal=LOTTERY, daily_stake_limit_eur=LIMIT_EUR)
    opened = [open_dealer(limited.location, limited.keys, shared=True) for _ in range(WORKERS)]
    yield limited, [dealer for _, dealer in opened]
    for ledger, _ in opened:
        ledger.close()


EXAMPLES = itertools.count()


@given(
    batches=st.lists(
        st.lists(st.integers(0, 3), min_size=1, max_size=12), min_size=2, max_size=WORKERS
    )
)
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_batches_on_several_workers_never_deadlock_nor_exceed_the_daily_limit(workers, batches):
    """Batches of plays with repeated players, each on its own worker, all at once: none
    fails (a deadlock would fail a whole batch), every player gets exactly as many plays as the
    limit allows, never more, and the books hold."""
    limited, dealers = workers
    example = next(EXAMPLES)
    names = [f"x{example}-p{i}" for i in range(4)]
    for name in names:
        dealers[0].add_player(player=name, balance_cents=2000, by="test")
        limited.players[name] = 2000
    start = threading.Barrier(len(batches))

    def run(worker: int) -> list:
        dealer = dealers[worker]
        requests = [
            PlayRequest(names[p], f"k-{worker}-{n}-{example}", _fingerprint(dealer, names[p]))
            for n, p in enumerate(batches[worker])
        ]
        start.wait()
        return dealer.play_batch(requests)

    with ThreadPoolExecutor(len(batches)) as pool:
        outcomes = [o for batch in pool.map(run, range(len(batches))) for o in batch]
    refused = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(o, DailyLimitReached) for o in refused), refused
    asked = {name: 0 for name in names}
    for batch in batches:
        for p in batch:
            asked[names[p]] += 1
    per_limit = LIMIT_EUR * 100 // dealers[0].stake
    staked = dict(
        limited.query(
            "SELECT player, SUM(stake_cents) FROM plays WHERE player LIKE "
            f"'x{example}-%' GROUP BY player"
        )
    )
    for name in names:
        assert staked.get(name, 0) == min(asked[name], per_limit) * dealers[0].stake, name
    limited.check_books(sum(limited.players.values()))


# -- every money row bound -------------------------------------------------------------------


def _next_position(tx) -> tuple[int, int]:
    """What a database writer takes to deal a unit: the next position (layout 7's cursor, or
    the first deal range), moved on."""
    try:
        ((commitment, position),) = tx.execute("SELECT commitment, next_position FROM deal_orders")
        tx.execute("UPDATE deal_orders SET next_position = next_position + 1")
    except Exception:  # the layout of the ranges: no cursor
        tx.execute("ROLLBACK TO SAVEPOINT attack")
        ((commitment, start, position),) = tx.execute(
            "SELECT commitment, start, next_position FROM deal_ranges ORDER BY start LIMIT 1"
        )
        tx.execute("UPDATE deal_ranges SET next_position = next_position + 1 WHERE start = ?",
                   (start,))  # fmt: skip
    return int(commitment), int(position)


def test_a_play_inserted_by_a_database_writer_is_named_and_its_entry_never_sealed(world, ledgers):
    """A database writer without the key deals itself the best unit left at the next
    position: its play row, its entry in the log (a play's answer, as the server writes it)
    and a credit of its lot.  The next keyed process does not seal that entry, and
    ``verify-log`` names the play (exit 1, one line)."""
    work = ledgers.copy(world.location)
    key = load_ledger_key(world.keys)
    ledger, dealer = open_dealer(work, world.keys)
    with ledger:
        dealer.play(player="player-00", key="honest-play-1", fingerprint=b"f" * 32)
    assert _verify(work, world.keys).returncode == 0
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        _unguarded(book, tx, "plays", "wallet_entries")
        tx.execute("SAVEPOINT attack")
        commitment, position = _next_position(tx)
        ((unit, prize),) = tx.execute(
            "SELECT id, prize_eur FROM units WHERE id NOT IN (SELECT unit FROM plays) "
            "ORDER BY prize_eur DESC, id LIMIT 1"
        )
        ((balance,),) = tx.execute("SELECT balance_cents FROM players WHERE id = 'player-01'")
        at = "2026-12-01T10:00:00.000000Z"
        lot = 100 * int(prize)
        forged = PlayRecord("e" * 32, "player-01", int(unit), commitment, position, 100, lot,
                            int(balance) - 100 + lot, at)  # fmt: skip
        tx.execute(
            "INSERT INTO plays (id, player, unit, commitment, position, stake_cents, lot_cents, "
            "balance_cents, played_at, idempotency_key, fingerprint, day) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'forged-key', ?, '2026-12-01')",
            (*dataclasses.astuple(forged)[:-1], b"f" * 32),
        )
        for kind, amount in (("debit", 100), ("credit", 100 * int(prize))):
            tx.execute(
                "INSERT INTO wallet_entries (reference, kind, player, amount_cents, at) "
                "VALUES (?, ?, 'player-01', ?, ?)",
                (forged.id, kind, amount, at),
            )
        tx.execute("UPDATE players SET balance_cents = ? WHERE id = 'player-01'",
                   (forged.balance_cents,))  # fmt: skip
        tx.execute(
            "INSERT INTO audit_log (at, terminal, action, input, ticket, answer, request) "
            "VALUES (?, 'session', 'play', 'player-01', NULL, ?, NULL)",
            (at[:19] + "Z", play_answer(forged)),
        )
    with Ledger(work, key=key) as book:  # a keyed process: it seals what is pending
        book.seal_all()
        pending = book.query(
            "SELECT l.answer FROM audit_pending p JOIN audit_log l ON l.id = p.entry"
        )
    assert [answer for (answer,) in pending] == [play_answer(forged)]  # never sealed
    result = _verify(work, world.keys)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1, result
    assert "inserted without the ledger key" in result.stderr, result.stderr


def test_a_lot_raised_on_undealt_units_is_never_credited_and_is_named(world, ledgers, caplog):
    """``UPDATE units SET prize_eur = 500`` on the units not dealt yet: the game server
    refuses to deal such a unit (503 for that play, nothing debited, one line in its log), and
    ``verify-log`` names the unit; put back, the server deals again."""
    work = ledgers.copy(world.location)
    key = load_ledger_key(world.keys)
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        tx.execute("UPDATE units SET prize_eur = prize_eur + 500 WHERE id NOT IN "
                   "(SELECT unit FROM plays)")  # fmt: skip
    ledger, dealer = open_dealer(work, world.keys)
    token = dealer.add_player(player="lucky", balance_cents=500, by="test")
    app = create_app(ledger, dealer, threads=1, demo=True)
    with caplog.at_level(logging.ERROR), TestClient(app, base_url="http://play.test") as client:
        assert client.post("/v1/sessions", json={"token": token}).status_code == 201
        answer = client.post("/v1/players/lucky/plays", json={},
                             headers={"Idempotency-Key": "lucky-play-1"})  # fmt: skip
        assert answer.status_code == 503, answer.text
        assert answer.json()["error"] == "unavailable"
        assert client.get("/v1/players/lucky").json()["balance_cents"] == 500  # nothing debited
    refusals = [r for r in caplog.records if "refused to deal" in r.getMessage()]
    assert len(refusals) == 1, [r.getMessage() for r in caplog.records]
    result = _verify(work, world.keys)
    assert result.returncode == 1 and "was edited" in result.stderr, result
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        tx.execute("UPDATE units SET prize_eur = prize_eur - 500 WHERE id NOT IN "
                   "(SELECT unit FROM plays)")  # fmt: skip
    ledger, dealer = open_dealer(work, world.keys)
    with ledger:
        play, _ = dealer.play(player="lucky", key="lucky-play-2", fingerprint=b"f" * 32)
        assert play.lot_eur < 500
    assert _verify(work, world.keys).returncode == 0


@pytest.mark.parametrize(
    "tampering",
    [
        ("UPDATE players SET balance_cents = balance_cents + 100000 WHERE id = 'player-00'",
         "the balance of player-00"),
        ("DELETE FROM wallet_entries WHERE kind = 'deposit' AND player = 'player-01'",
         "opening deposit of player-01"),
        ("UPDATE wallet_entries SET amount_cents = 1 WHERE kind = 'debit'", "wallet entry"),
        ("UPDATE players SET staked_cents = 0", "stake counter"),
    ],
)  # fmt: skip
def test_a_balance_or_a_wallet_entry_changed_by_a_database_writer_is_named(
    world, ledgers, tampering
):
    """A balance set, an opening deposit deleted (its balance lowered with it), a debit
    edited, a player's stakes of the day reset: ``verify-log`` names each."""
    sql, named = tampering
    work = ledgers.copy(world.location)
    key = load_ledger_key(world.keys)
    ledger, dealer = open_dealer(work, world.keys)
    with ledger:
        dealer.play(player="player-00", key="before-tamper", fingerprint=b"f" * 32)
    assert _verify(work, world.keys).returncode == 0
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        _unguarded(book, tx, "wallet_entries")
        tx.execute(sql)
        if "deposit" in sql:
            tx.execute("UPDATE players SET balance_cents = balance_cents - 2000 "
                       "WHERE id = 'player-01'")  # fmt: skip
    result = _verify(work, world.keys)
    assert result.returncode == 1 and named in result.stderr, result


# -- the deal order secret ---------------------------------------------------------------------


def test_the_deal_order_cannot_be_narrowed_from_what_the_database_holds(world):
    """A reader of the database without the key, once all but the last 6 units are dealt
    (their positions and units are in ``plays``), tries each order of the 6 left against
    every digest the ledger holds or logged: none matches (a plain hash of the order, as
    stored before, gave the order away)."""
    key = load_ledger_key(world.keys)
    commitment = load_commitment(world.block.commitment)
    order = DealOrder(deal_key(key.derive(DEAL_PURPOSE), commitment.root), commitment.tickets)
    leaves = order.leaves(np.arange(commitment.tickets)).tolist()
    dealt, left = leaves[:-6], leaves[-6:]  # what the plays would show, what they would not
    stored = {str(value) for row in world.query("SELECT * FROM deal_orders") for value in row}
    logged = world.query("SELECT answer FROM audit_log WHERE action = 'import'")
    texts = stored | {word.strip(",;()") for (answer,) in logged for word in answer.split()}
    found = []
    for guess in itertools.permutations(sorted(left)):
        digest = hashlib.sha256(np.array(dealt + list(guess), dtype=">u4").tobytes()).hexdigest()
        if digest in texts:
            found.append(guess)
    assert found == []
    truth = hashlib.sha256(np.array(leaves, dtype=">u4").tobytes()).hexdigest()
    assert truth not in json.dumps(sorted(texts))


# -- rewinds witnessed ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper(tmp_path_factory, ledgers, game, keys_dir):
    db = ledgers.new()
    store = imported_ledger(game, keys_dir, tmp_path_factory.mktemp("rewind"), db,
                            PackRange(1, 1), activate=("1",))  # fmt: skip
    tickets = [ticket_codes(store, game, row) for row in range(store.pack_size)]
    return db, [code for _, code, _, prize in tickets if prize > 0]


def test_a_rewind_is_named_by_the_witness_the_servers_keep(paper, ledgers, keys_dir, tmp_path):
    """The head row saved, a winner paid, then everything since deleted and the head row put
    back: the ticket validates WIN again and the sealed log alone verifies, but the witness a
    server wrote after the payment (``--witness``, by default ``KEYS/witness``) names the
    rewind in ``verify-log``."""
    from printpipe.ledger.witness import write_witness

    db, winners = paper
    work = ledgers.copy(db)
    key = load_ledger_key(keys_dir)
    witness = tmp_path / "witness"
    with Ledger(work, key=key) as book:
        book.seal_all()
        (saved,) = book.query("SELECT seq, hash, mac FROM audit_head")
        (last,) = book.query("SELECT MAX(id) FROM audit_log")
        assert book.claim(winners[0], terminal=LOTTERY, scope=OFFICE_SCOPE).outcome == "PAID"
        assert write_witness(book, witness) is None
    assert _verify(work, keys_dir, "--witness", str(witness)).returncode == 0
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        _unguarded(book, tx, "audit_log", "audit_seal", "payments", "payment_proofs")
        tx.execute("DELETE FROM payment_proofs")
        tx.execute("DELETE FROM payments")
        tx.execute("DELETE FROM audit_seal WHERE seq > ?", (saved[0],))
        tx.execute("DELETE FROM audit_pending WHERE entry > ?", (last[0],))
        tx.execute("DELETE FROM audit_log WHERE id > ?", (last[0],))
        tx.execute("UPDATE audit_head SET seq = ?, hash = ?, mac = ?", saved)
    alone = _verify(work, keys_dir, "--no-witness")
    assert alone.returncode == 0, alone.stderr  # what the sealed log alone cannot see
    named = _verify(work, keys_dir, "--witness", str(witness))
    assert named.returncode == 1 and "witness" in named.stderr, named
    assert "no longer in the sealed log" in named.stderr
    with Ledger(work, key=key) as book:  # the paid ticket wins again, the log goes on
        assert book.validate(
            winners[0], terminal=TerminalId("T1"), scope=OFFICE_SCOPE
        ).text.startswith("WIN ")
    named = _verify(work, keys_dir, "--witness", str(witness))
    assert named.returncode == 1 and "was rewritten after it" in named.stderr, named
    with Ledger(work, key=key) as book:  # a server finds it rewound: the witness is kept
        kept = (witness / f"{book.ledger_id()}.json").read_bytes()
        assert "rewound" in (write_witness(book, witness) or "")
        assert (witness / f"{book.ledger_id()}.json").read_bytes() == kept


def test_the_game_server_keeps_its_witness_as_it_runs_and_at_shutdown(
    world, ledgers, tmp_path, monkeypatch
):
    """A witness every interval (here 0.2 s instead of 60) while plays are made, and one when
    the server stops, at the head it leaves; ``verify-log`` checks it."""
    monkeypatch.setattr("printpipe.service.app.WITNESS_INTERVAL_S", 0.2)
    work = ledgers.copy(world.location)
    witness = tmp_path / "play-witness"
    ledger, dealer = open_dealer(work, world.keys)
    token = dealer.add_player(player="witnessed", balance_cents=500, by="test")
    app = create_app(ledger, dealer, threads=1, demo=True, witness=witness)
    with TestClient(app, base_url="http://play.test") as client:
        assert client.post("/v1/sessions", json={"token": token}).status_code == 201
        seen: list[int] = []
        for n in range(3):
            made = client.post("/v1/players/witnessed/plays", json={},
                               headers={"Idempotency-Key": f"witnessed-{n}"})  # fmt: skip
            assert made.status_code == 201
            deadline = time.monotonic() + 30
            while True:  # the next witness, after the play's entry was sealed
                files = list(witness.glob("*.json"))
                at = json.loads(files[0].read_text())["seq"] if files else 0
                if at > (seen[-1] if seen else 0):
                    seen.append(at)
                    break
                assert time.monotonic() < deadline, "no witness while the server runs"
                time.sleep(0.05)
    assert len(seen) == 3 and seen == sorted(seen)
    (kept,) = witness.glob("*.json")
    assert kept.stat().st_mode & 0o777 == 0o600
    with Ledger(work, key=load_ledger_key(world.keys), read_only=True) as book:
        head = book.query("SELECT seq, hash FROM audit_head")[0]
    document = json.loads(kept.read_text())
    assert (document["seq"], document["head"]) == (head[0], bytes(head[1]).hex())
    result = _verify(work, world.keys, "--witness", str(witness))
    assert result.returncode == 0 and "witness" in result.stdout, result.stdout
