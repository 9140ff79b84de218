"""``printpipe ledger upgrade``: a ledger of layout 5 brought to layout 6 in place, its tickets,
payments and log kept; refused while a service may still be running, and for anything else."""

from __future__ import annotations

import time

import pytest

from printpipe.block import PackRange
from printpipe.errors import PrintpipeError
from printpipe.ledger import LOTTERY, Admission, Ledger, TerminalId
from printpipe.ledger.store import LAYOUT, Location, PostgresLocation
from printpipe.service.signatures import key_id_of, raw_public_key
from tests.ledger_helpers import (
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)

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

    from printpipe.ledger import load_ledger_key

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
        assert book.claim(winner, terminal=LOTTERY, office=True).outcome == "PAID"
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
        assert book.validate(code, terminal=TerminalId("till-1"), admission=signed).ok
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
