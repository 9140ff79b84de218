"""``printpipe ledger upgrade``: a ledger of layout 5, 6 or 7 brought to this printpipe's in
place, its tickets, payments, log and plays kept (the plays entered in the log, every money row
given its MAC, the deal order its keyed digest and its ranges), then checked whole; refused
while a service or game server may still be running, for a ledger a database writer changed,
and for anything else."""

from __future__ import annotations

import contextlib
import datetime as dt
import time

import pytest

from printpipe.block import PackRange
from printpipe.errors import PrintpipeError
from printpipe.ledger import LOTTERY, Admission, Ledger, TerminalId, load_ledger_key
from printpipe.ledger.store import LAYOUT, Location, PostgresLocation
from printpipe.play.server import open_dealer
from printpipe.service.signatures import key_id_of, raw_public_key
from tests.ledger_helpers import (
    OFFICE_SCOPE,
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)
from tests.play_helpers import import_next_block, make_block, make_world

OLD_NONCES = (
    "CREATE TABLE nonces (key_id TEXT NOT NULL, nonce TEXT NOT NULL, seen_at BIGINT NOT NULL, "
    "PRIMARY KEY (key_id, nonce))"
)
"""Layout 5's table, as that printpipe made it."""


LAYOUT_9 = [
    ("DROP INDEX deal_orders_by_place", ()),
    ("ALTER TABLE deal_orders DROP COLUMN mac", ()),
    ("ALTER TABLE deal_orders DROP COLUMN place", ()),
]
"""This printpipe's tables taken back to layout 9's (what issue 27's wallet made)."""
LAYOUT_8 = [
    *LAYOUT_9,
    ("ALTER TABLE plays DROP COLUMN jackpot_cents", ()),
    ("DROP TABLE wallet_outbox", ()),
]
"""This printpipe's tables taken back to layout 8's (what issue 25 made)."""
LAYOUT_7 = [
    *LAYOUT_8,
    ("ALTER TABLE audit_log DROP COLUMN mac", ()),
    ("ALTER TABLE units DROP COLUMN mac", ()),
    ("ALTER TABLE plays DROP COLUMN mac", ()),
    ("ALTER TABLE wallet_entries DROP COLUMN mac", ()),
    ("ALTER TABLE players DROP COLUMN stake_day", ()),
    ("ALTER TABLE players DROP COLUMN staked_cents", ()),
    ("DROP TABLE deal_ranges", ()),
    ("DROP TABLE deal_orders", ()),
    ("CREATE TABLE deal_orders (commitment BIGINT PRIMARY KEY REFERENCES commitments(id), "
     "units BIGINT NOT NULL, order_sha256 TEXT NOT NULL, next_position BIGINT NOT NULL "
     "CHECK (next_position <= units))", ()),
    ("CREATE INDEX plays_by_day ON plays (player, day)", ()),
    ("DELETE FROM ledger_meta WHERE key IN ('ledger_id', 'ledger_id_mac')", ()),
]  # fmt: skip
"""This printpipe's tables taken back to layout 7's (what issue 21 and 20 made)."""


def _to_layout(location: Location, layout: int, *more: tuple[str, tuple[object, ...]]) -> None:
    """A ledger of this printpipe taken back to ``layout`` (9, 8, or 7 or earlier: 7's tables),
    the deal cursors at the plays made, and ``more`` statements run."""
    with Ledger(location, read_only=True) as book:
        blocks = book.query("SELECT commitment, units FROM deal_orders")
        dealt = dict(book.query("SELECT commitment, COUNT(*) FROM plays GROUP BY commitment"))
    cursors = [
        ("INSERT INTO deal_orders VALUES (?, ?, ?, ?)", (c, n, "0" * 64, dealt.get(c, 0)))
        for c, n in blocks
    ]
    mark = ("UPDATE ledger_meta SET value = ? WHERE key = 'layout'", (str(layout),))
    if layout in (8, 9):
        _raw(location, *(LAYOUT_9 if layout == 9 else LAYOUT_8), mark, *more)
    else:
        _raw(location, *LAYOUT_7, *cursors, mark, *more)
    if not isinstance(location, PostgresLocation):
        _raw(location, (f"PRAGMA user_version={layout}", ()))


def _raw(location: Location, *statements: tuple[str, tuple[object, ...]]) -> None:
    """Statements run on the database itself, past the ledger's checks (what layout 5 was)."""
    if isinstance(location, PostgresLocation):
        import psycopg

        with psycopg.connect(location.dsn, autocommit=True) as conn, conn.transaction():
            for sql, params in statements:
                conn.execute(sql.replace("?", "%s"), params or None)
        return
    import sqlite3

    file = sqlite3.connect(location, isolation_level=None)
    try:
        for sql, params in statements:
            file.execute(sql, params)
    finally:
        file.close()


@pytest.fixture(scope="module")
def layout_5(tmp_path_factory, ledgers, game, keys_dir):
    """A ledger with a payment and a validation, then taken back to layout 5 by hand."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    db = ledgers.new()
    store = imported_ledger(game, keys_dir, tmp_path_factory.mktemp("upgrade"), db,
                            PackRange(1, 1), activate=("1",))  # fmt: skip
    tickets = [ticket_codes(store, game, row) for row in range(store.pack_size)]
    winner = next(code for _, code, _, prize in tickets if prize > 0)
    key = load_ledger_key(keys_dir)
    private = Ed25519PrivateKey.generate()
    with Ledger(db, key=key) as book:
        book.add_terminal(TerminalId("till-1"), public_key=raw_public_key(private.public_key()),
                          key_id=key_id_of(private.public_key()), retailer=None, role="office",
                          by=LOTTERY)  # fmt: skip
        assert book.claim(winner, terminal=LOTTERY, scope=OFFICE_SCOPE).outcome == "PAID"
    old = int(time.time()) - 1_000
    old_nonce = ("INSERT INTO nonces VALUES (?, ?, ?)", ("k", "an-old-nonce-0123", old))
    _to_layout(db, 5, ("DROP TABLE nonces", ()), (OLD_NONCES, ()), old_nonce)
    return db, key, private, tickets


def test_a_layout_5_ledger_is_upgraded_in_place_keeping_its_payments(layout_5, keys_dir):
    db, key, private, tickets = layout_5
    with pytest.raises(PrintpipeError, match="printpipe ledger upgrade --db"):
        Ledger(db, key=key)
    recent = ("INSERT INTO nonces VALUES (?, ?, ?)", ("k", "a-recent-nonce-01", int(time.time())))
    _raw(db, recent)
    upgrade = ["ledger", "upgrade", "--db", db_arg(db), "--keys", str(keys_dir)]
    refused = run_in_process(*upgrade)
    assert refused.returncode == 1 and "stop the service" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    with pytest.raises(PrintpipeError, match="layout 5"):  # nothing was changed
        Ledger(db, key=key)
    _raw(db, ("DELETE FROM nonces WHERE nonce = ?", ("a-recent-nonce-01",)))

    done = run_in_process(*upgrade)
    assert done.returncode == 0, done.stderr
    assert f"upgraded from layout 5 to {LAYOUT}: " in done.stdout
    with Ledger(db, key=key) as book:
        assert book.query("SELECT COUNT(*) FROM payments") == [(1,)]
        entry = book.query("SELECT terminal, action FROM audit_log WHERE action = 'upgrade'")
        assert entry == [("lottery", "upgrade")]
        assert book.verify_log().ok
        signed = Admission(key_id_of(private.public_key()), "a-nonce-after-01", int(time.time()))
        code = next(code for _, code, _, prize in tickets if prize == 0)  # never paid
        assert book.validate(
            code, terminal=TerminalId("till-1"), scope=OFFICE_SCOPE, admission=signed
        ).ok
        assert book.query("SELECT COUNT(*) FROM nonces WHERE nonce = ?", (signed.nonce,)) == [(1,)]
    again = run_in_process(*upgrade)
    assert again.returncode == 0 and "already layout" in again.stdout


def test_a_ledger_of_an_older_layout_is_not_upgraded(tmp_path, keys_dir):
    import sqlite3

    old = tmp_path / "old.sqlite"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute(f"PRAGMA application_id={0x50504C47}")
    conn.execute("PRAGMA user_version=3")
    conn.close()
    before = old.read_bytes()
    result = run_in_process("ledger", "upgrade", "--db", str(old), "--keys", str(keys_dir))
    assert result.returncode == 1 and "rebuild it by importing" in result.stderr
    assert old.read_bytes() == before


def _delete_play(location: Location, play_id: str) -> None:
    _delete_appended(location, "plays", "id", play_id)


def _delete_wallet_entry(location: Location, reference: str) -> None:
    _delete_appended(location, "wallet_entries", "reference", reference)


def _delete_appended(location: Location, table: str, column: str, value: str) -> None:
    """Past the append-only rule, which is put back."""
    delete = (f"DELETE FROM {table} WHERE {column} = ?", (value,))
    if isinstance(location, PostgresLocation):
        _raw(location, (f"ALTER TABLE {table} DISABLE TRIGGER USER", ()), delete,
             (f"ALTER TABLE {table} ENABLE TRIGGER USER", ()))  # fmt: skip
        return
    import sqlite3

    with contextlib.closing(sqlite3.connect(location)) as file:
        (rule,) = file.execute(f"SELECT sql FROM sqlite_master WHERE name = '{table}_no_delete'")
    _raw(location, (f"DROP TRIGGER {table}_no_delete", ()), delete, (rule[0], ()))


@pytest.fixture(scope="module")
def online_block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("upgrade-online"), packs=1)


def _dealt_unit(db: Location, key, position: int) -> tuple[int, int, int]:
    """The unit the deal order deals at ``position`` of the ledger's block: (id, block, lot)."""
    from printpipe.ledger.units import deal_order_of

    with Ledger(db, key=key) as book:
        ((commitment,),) = book.query("SELECT commitment FROM deal_orders")
        with book.db.snapshot() as tx:
            loaded = book.commitments.by_id(tx, int(commitment))
        leaf = deal_order_of(loaded, key).leaf(position)
        ((unit, prize),) = book.query(
            "SELECT id, prize_eur FROM units WHERE commitment = ? AND leaf = ?", (commitment, leaf)
        )
    return int(unit), int(commitment), int(prize)


def test_a_layout_6_ledger_is_upgraded_its_plays_entered_in_the_log(
    online_block, ledgers, tmp_path
):
    """Plays made before layout 7 have no entry in the log: the upgrade enters each, as the
    database holds it, so that from then on the sealed log binds them; it is refused while a
    play was made in the last 150 s (a game server of the old printpipe still running)."""
    world = make_world(online_block, ledgers.new(), tmp_path, players=1, balance_eur=5)
    db, key = world.location, load_ledger_key(world.keys)
    (unit, commitment, lot), (other, _, other_lot) = (_dealt_unit(db, key, p) for p in (0, 1))
    columns = ("id, player, idempotency_key, fingerprint, unit, commitment, position, "
               "stake_cents, lot_cents, balance_cents, day, played_at")  # fmt: skip
    play = f"INSERT INTO plays ({columns}) VALUES ({', '.join('?' * 12)})"
    balance = 400 + 100 * lot
    old = ("a" * 32, "player-00", "old-play-key", b"f" * 32, unit, commitment, 0, 100, 100 * lot,
           balance, "2026-06-01", "2026-06-01T10:00:00.000000Z")  # fmt: skip
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    recent = ("b" * 32, "player-00", "new-play-key", b"f" * 32, other, commitment, 1, 100,
              100 * other_lot, balance - 100 + 100 * other_lot, now[:10], now)  # fmt: skip
    wallet = "INSERT INTO wallet_entries (reference, kind, player, amount_cents, at) VALUES "
    moves: list[tuple[str, tuple[object, ...]]] = [
        (wallet + "(?, 'debit', 'player-00', 100, ?)", (old[0], old[-1]))
    ]
    if lot:
        moves.append((wallet + "(?, 'credit', 'player-00', ?, ?)", (old[0], 100 * lot, old[-1])))
    _raw(db, (play, old), *moves, ("UPDATE players SET balance_cents = ?", (balance,)))
    _to_layout(db, 6)
    _raw(db, (play, recent))  # made just now by the earlier printpipe: its cursor not moved
    upgrade = ["ledger", "upgrade", "--db", db_arg(db), "--keys", str(world.keys)]
    refused = run_in_process(*upgrade)
    assert refused.returncode == 1 and "1 signed requests or plays" in refused.stderr
    _delete_play(db, recent[0])  # as if made 150 s ago

    done = run_in_process(*upgrade)
    assert done.returncode == 0, done.stderr
    assert f"upgraded from layout 6 to {LAYOUT}: " in done.stdout
    with Ledger(db, key=key) as book:
        report = book.verify_log()
        assert report.ok and report.plays == 1, report.problems
        (entry,) = book.query("SELECT terminal, input, answer FROM audit_log WHERE action = 'play'")
        assert entry[:2] == ("lottery", "player-00") and entry[2].startswith(f"PLAY id={old[0]} ")


def test_a_layout_7_ledger_is_upgraded_its_money_rows_bound(online_block, ledgers, tmp_path):
    """A ledger of layout 7 with plays made (its deal cursor, unkeyed digest, no MAC on any
    money row): the upgrade enters the keyed digest, the ranges left to deal, a MAC on every
    unit, play and wallet entry and the stakes of the day, says so, and the ledger verifies
    and deals on; one whose balance a database writer set is refused, nothing changed."""
    world = make_world(online_block, ledgers.new(), tmp_path, players=2, balance_eur=5)
    db, key = world.location, load_ledger_key(world.keys)
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=200)  # the old server stopped since
    ledger, dealer = open_dealer(db, world.keys)
    dealer.clock = lambda: past
    dealer.jackpot = None  # plays as layout 7 made them
    with ledger:
        made = [dealer.play(player=f"player-0{n % 2}", key=f"before-{n}", fingerprint=b"f" * 32)
                for n in range(3)]  # fmt: skip
    tampered = ledgers.copy(db)
    _to_layout(db, 7)
    _to_layout(tampered, 7, ("UPDATE players SET balance_cents = 99900 WHERE id = 'player-01'", ()))
    refused = run_in_process("ledger", "upgrade", "--db", db_arg(tampered), "--keys",
                             str(world.keys))  # fmt: skip
    assert refused.returncode == 1 and "the balance of player-01" in refused.stderr, refused
    assert "it was not upgraded" in refused.stderr
    with pytest.raises(PrintpipeError, match="layout 7"):
        Ledger(tampered, key=key)

    done = run_in_process("ledger", "upgrade", "--db", db_arg(db), "--keys", str(world.keys))
    assert done.returncode == 0, done.stderr
    assert f"upgraded from layout 7 to {LAYOUT}: " in done.stdout
    for entered in ("3 plays MACed", "1,000 units MACed", "1 deal orders given a keyed digest"):
        assert entered in done.stdout, done.stdout
    verified = run_in_process("ledger", "verify-log", "--db", db_arg(db), "--keys",
                              str(world.keys))  # fmt: skip
    assert verified.returncode == 0 and "1000 units to their committed leaves" in verified.stdout
    ledger, dealer = open_dealer(db, world.keys)
    with ledger:
        after, _ = dealer.play(player="player-00", key="after-upgrade", fingerprint=b"f" * 32)
        assert after.position == 3 and after.position not in [p.position for p, _ in made]
        today = after.played_at[:10] == made[0][0].played_at[:10]
        assert dealer.account(player="player-00")["staked_today_cents"] == 100 + 200 * today
    world.check_books(sum(world.players.values()))


def test_a_layout_8_ledger_is_upgraded_its_outbox_made(online_block, ledgers, tmp_path):
    """A ledger of layout 8 with plays made (no Super Jackpot share recorded, no outbox): the
    upgrade adds the column and the table, binds nothing anew, and the ledger verifies; its
    plays from then on record their share, bound by their MAC and entry."""
    world = make_world(online_block, ledgers.new(), tmp_path, players=1, balance_eur=5)
    db = world.location
    past = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=200)
    ledger, dealer = open_dealer(db, world.keys)
    dealer.clock, dealer.jackpot = (lambda: past), None  # as layout 8 made them
    with ledger:
        dealer.play(player="player-00", key="before-9", fingerprint=b"f" * 32)
    _to_layout(db, 8)
    with pytest.raises(PrintpipeError, match="layout 8"):
        Ledger(db, key=load_ledger_key(world.keys))
    done = run_in_process("ledger", "upgrade", "--db", db_arg(db), "--keys", str(world.keys))
    assert done.returncode == 0, done.stderr
    assert f"upgraded from layout 8 to {LAYOUT}: " in done.stdout
    ledger, dealer = open_dealer(db, world.keys)
    with ledger:
        dealer.play(player="player-00", key="after-9", fingerprint=b"f" * 32)
        shares = ledger.query("SELECT idempotency_key, jackpot_cents FROM plays ORDER BY 1")
    assert shares == [("after-9", 3), ("before-9", None)]
    verified = run_in_process("ledger", "verify-log", "--db", db_arg(db), "--keys",
                              str(world.keys))  # fmt: skip
    assert verified.returncode == 0 and "2 plays to theirs" in verified.stdout, verified
    world.check_books(sum(world.players.values()))


def test_a_layout_9_ledger_is_upgraded_its_blocks_placed_in_the_order_of_import(
    online_block, ledgers, tmp_path
):
    """A ledger of layout 9 holding two online blocks, plays made: the upgrade gives each its
    place in the dealing order, in the order they were imported (the order layout 9 dealt
    them in), MACed; the ledger verifies and deals on from the first block."""
    world = make_world(online_block, ledgers.new(), tmp_path, players=1, balance_eur=5)
    import_next_block(world, 2)
    db, past = world.location, dt.datetime.now(dt.UTC) - dt.timedelta(seconds=200)
    ledger, dealer = open_dealer(db, world.keys)
    dealer.clock = lambda: past
    with ledger:
        dealer.play(player="player-00", key="before-10", fingerprint=b"f" * 32)
    _to_layout(db, 9)
    with pytest.raises(PrintpipeError, match="layout 9"):
        Ledger(db, key=load_ledger_key(world.keys))
    done = run_in_process("ledger", "upgrade", "--db", db_arg(db), "--keys", str(world.keys))
    assert done.returncode == 0, done.stderr
    assert f"upgraded from layout 9 to {LAYOUT}: " in done.stdout
    assert "2 online blocks given their place in the dealing order" in done.stdout, done.stdout
    with Ledger(db, read_only=True) as book:
        placed = book.query("SELECT c.block, d.place FROM deal_orders d JOIN commitments c "
                            "ON c.id = d.commitment ORDER BY d.place")  # fmt: skip
    assert placed == [(1, 1), (2, 2)]
    verified = run_in_process("ledger", "verify-log", "--db", db_arg(db), "--keys",
                              str(world.keys))  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    ledger, dealer = open_dealer(db, world.keys)
    with ledger:
        after, _ = dealer.play(player="player-00", key="after-10", fingerprint=b"f" * 32)
    assert (after.block, after.position) == (1, 1)
