"""``printpipe ledger upgrade``: a ledger of layout 5 or 6 brought to this printpipe's in place,
its tickets, payments, log and plays kept (and the plays entered in the log); refused while a
service or game server may still be running, and for anything else."""

from __future__ import annotations

import contextlib
import time

import pytest

from printpipe.block import PackRange
from printpipe.errors import PrintpipeError
from printpipe.ledger import LOTTERY, Admission, Ledger, TerminalId, load_ledger_key
from printpipe.ledger.store import LAYOUT, Location, PostgresLocation
from printpipe.service.signatures import key_id_of, raw_public_key
from tests.ledger_helpers import (
    OFFICE_SCOPE,
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)
from tests.play_helpers import make_block, make_world

OLD_NONCES = (
    "CREATE TABLE nonces (key_id TEXT NOT NULL, nonce TEXT NOT NULL, seen_at BIGINT NOT NULL, "
    "PRIMARY KEY (key_id, nonce))"
)
"""Layout 5's table, as that printpipe made it."""


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
    layout = "UPDATE ledger_meta SET value = '5' WHERE key = 'layout'"
    old = int(time.time()) - 1_000
    _raw(db, ("DROP TABLE nonces", ()), (OLD_NONCES, ()), (layout, ()),
         ("INSERT INTO nonces VALUES (?, ?, ?)", ("k", "an-old-nonce-0123", old)))  # fmt: skip
    if not isinstance(db, PostgresLocation):
        _raw(db, ("PRAGMA user_version=5", ()))
    return db, key, private, tickets


def test_a_layout_5_ledger_is_upgraded_in_place_keeping_its_payments(layout_5):
    db, key, private, tickets = layout_5
    with pytest.raises(PrintpipeError, match="printpipe ledger upgrade --db"):
        Ledger(db, key=key)
    recent = ("INSERT INTO nonces VALUES (?, ?, ?)", ("k", "a-recent-nonce-01", int(time.time())))
    _raw(db, recent)
    refused = run_in_process("ledger", "upgrade", "--db", db_arg(db))
    assert refused.returncode == 1 and "stop the service" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    with pytest.raises(PrintpipeError, match="layout 5"):  # nothing was changed
        Ledger(db, key=key)
    _raw(db, ("DELETE FROM nonces WHERE nonce = ?", ("a-recent-nonce-01",)))

    done = run_in_process("ledger", "upgrade", "--db", db_arg(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"upgraded from layout 5 to {LAYOUT}")
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
    again = run_in_process("ledger", "upgrade", "--db", db_arg(db))
    assert again.returncode == 0 and "already layout" in again.stdout


def test_a_ledger_of_an_older_layout_is_not_upgraded(tmp_path):
    import sqlite3

    old = tmp_path / "old.sqlite"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute(f"PRAGMA application_id={0x50504C47}")
    conn.execute("PRAGMA user_version=3")
    conn.close()
    before = old.read_bytes()
    result = run_in_process("ledger", "upgrade", "--db", str(old))
    assert result.returncode == 1 and "rebuild it by importing" in result.stderr
    assert old.read_bytes() == before


def _delete_play(location: Location, play_id: str) -> None:
    """Past the append-only rule, which is put back."""
    delete = ("DELETE FROM plays WHERE id = ?", (play_id,))
    if isinstance(location, PostgresLocation):
        _raw(location, ("ALTER TABLE plays DISABLE TRIGGER USER", ()), delete,
             ("ALTER TABLE plays ENABLE TRIGGER USER", ()))  # fmt: skip
        return
    import sqlite3

    with contextlib.closing(sqlite3.connect(location)) as file:
        (rule,) = file.execute("SELECT sql FROM sqlite_master WHERE name = 'plays_no_delete'")
    _raw(location, ("DROP TRIGGER plays_no_delete", ()), delete, (rule[0], ()))


@pytest.fixture(scope="module")
def online_block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("upgrade-online"), packs=1)


def test_a_layout_6_ledger_is_upgraded_its_plays_entered_in_the_log(
    online_block, ledgers, tmp_path
):
    """Plays made before layout 7 have no entry in the log: the upgrade enters each, as the
    database holds it, so that from then on the sealed log binds them; it is refused while a
    play was made in the last 150 s (a game server of the old printpipe still running)."""
    world = make_world(online_block, ledgers.new(), tmp_path, players=1, balance_eur=5)
    db, key = world.location, load_ledger_key(world.keys)
    with Ledger(db, key=key) as book:
        (unit, commitment) = book.query("SELECT MIN(id), MIN(commitment) FROM units")[0]
    columns = ("id, player, idempotency_key, fingerprint, unit, commitment, position, "
               "stake_cents, lot_cents, balance_cents, day, played_at")  # fmt: skip
    play = f"INSERT INTO plays ({columns}) VALUES ({', '.join('?' * 12)})"
    old = ("a" * 32, "player-00", "old-play-key", b"f" * 32, unit, commitment, 0, 100, 0, 400,
           "2026-06-01", "2026-06-01T10:00:00.000000Z")  # fmt: skip
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    recent = ("b" * 32, "player-00", "new-play-key", b"f" * 32, unit + 1, commitment, 1, 100,
              0, 300, now[:10], now)  # fmt: skip
    layout = ("UPDATE ledger_meta SET value = '6' WHERE key = 'layout'", ())
    _raw(db, (play, old), (play, recent), layout)
    if not isinstance(db, PostgresLocation):
        _raw(db, ("PRAGMA user_version=6", ()))
    refused = run_in_process("ledger", "upgrade", "--db", db_arg(db))
    assert refused.returncode == 1 and "1 signed requests or plays" in refused.stderr
    _delete_play(db, recent[0])  # as if made 150 s ago

    done = run_in_process("ledger", "upgrade", "--db", db_arg(db))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"upgraded from layout 6 to {LAYOUT}")
    with Ledger(db, key=key) as book:
        report = book.verify_log()
        assert report.ok and report.plays == 1, report.problems
        (entry,) = book.query("SELECT terminal, input, answer FROM audit_log WHERE action = 'play'")
        assert entry[:2] == ("lottery", "player-00") and entry[2].startswith(f"PLAY id={old[0]} ")
