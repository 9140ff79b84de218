"""The ledger as a file (issue 11, defects 1 and 6): created whole or not at all, never deleted
by an import that did not create it, opened without "database is locked" races, and a file
that is not a ledger refused untouched; read-only commands write nothing."""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import pwd
import shutil
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from printpipe.block import PackRange
from printpipe.handover import BLOCK_MANIFEST
from printpipe.keys import init_keys
from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import TerminalId
from printpipe.ledger.key import load_ledger_key
from printpipe.ledger.store.sqlite import APPLICATION_ID, SqliteDatabase
from tests.conftest import forked_together, run_cli
from tests.ledger_helpers import OFFICE_SCOPE, generate_store, run_in_process


def start_together(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Run printpipe commands in processes of their own (forked: no interpreter start-up),
    released at the same instant."""
    return forked_together(*(functools.partial(run_in_process, *command) for command in commands))


@pytest.fixture(scope="module")
def two_blocks(tmp_path_factory, game, keys_dir) -> tuple[Path, Path, Path]:
    """Manifests of packs 1:40 and 41:80 (the issue's), and a lottery identity that opens
    neither."""
    root = tmp_path_factory.mktemp("files")
    first = generate_store(game, keys_dir, root / "blk", PackRange(1, 40))
    second = generate_store(game, keys_dir, root / "blkB", PackRange(41, 80))
    init_keys(root / "other")
    return first / BLOCK_MANIFEST, second / BLOCK_MANIFEST, root / "other" / "lottery.age"


def tickets_in(db: Path) -> int:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM tickets").fetchone()[0]
    finally:
        conn.close()


def test_a_failed_import_never_deletes_a_ledger_another_import_filled(
    two_blocks, keys_dir, tmp_path
):
    """The issue's reproduction 1, ten times: before the fix the database was gone after the
    first import's success in about 4 runs in 10 (and both imports failed in 1 in 8)."""
    good, other, wrong_identity = two_blocks
    for attempt in range(10):
        db = tmp_path / f"r{attempt}.sqlite"
        filled, refused = start_together(
            ["ledger", "import", str(other), "--keys", str(keys_dir), "--db", str(db), "-q"],
            ["ledger", "import", str(good), "--keys", str(keys_dir), "--identity",
             str(wrong_identity), "--db", str(db), "-q"],
        )  # fmt: skip
        assert filled.returncode == 0, filled.stderr
        assert "imported 5,000 records" in filled.stdout
        assert refused.returncode == 1 and "identity" in refused.stderr
        assert "Traceback" not in refused.stderr + filled.stderr
        assert db.is_file() and tickets_in(db) == 5000, f"attempt {attempt}"
    assert sorted(p.name for p in tmp_path.iterdir() if "partial" in p.name) == []


def ask_until_answered(db: Path, terminal: str, keys: Path) -> str:
    """A terminal asking the ledger ``db`` over and over (120 s at most) until it answers: every
    distinct thing it was told, sorted, one a line."""
    seen = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ask = ["validate", "0412" + "0" * 21, "--db", str(db), "--terminal", terminal]
        told = run_in_process(*ask, "--keys", str(keys))
        seen.add((told.stdout + told.stderr).strip().replace(str(db), "DB"))
        if told.stdout.strip():
            break
    return "\n".join(sorted(seen))


def test_a_ledger_being_created_is_never_seen_half_made(two_blocks, keys_dir, tmp_path):
    """Two imports create the same new ledger while terminals ask it over and over: no
    import fails, none is lost, and a terminal sees either no ledger or a whole one, never
    an empty file, a missing table or "database is locked" (the WAL switch of a new file)."""
    good, other, _ = two_blocks
    for attempt in range(3):
        db = tmp_path / f"c{attempt}.sqlite"
        imports = [
            functools.partial(run_in_process, "ledger", "import", str(manifest), "--keys",
                              str(keys_dir), "--db", str(db), "-q")
            for manifest in (good, other)
        ]  # fmt: skip
        askers = [functools.partial(ask_until_answered, db, f"T{i}", keys_dir) for i in range(3)]
        answers: list = forked_together(*askers, *imports)
        heard, (first, second) = answers[:3], answers[3:]
        for imported in (first, second):
            assert imported.returncode == 0, imported.stderr
            assert "imported 5,000 records" in imported.stdout
        not_yet = (
            "printpipe: error: validation database DB not found "
            "(create it: printpipe ledger import)"
        )
        for out in heard:
            assert set(out.splitlines()) <= {not_yet, "INVALID CODE"}, out
            assert "INVALID CODE" in out.splitlines()
        assert tickets_in(db) == 10_000


def test_a_new_ledger_is_marked_and_in_wal_mode(two_blocks, keys_dir, tmp_path):
    good, _, _ = two_blocks
    db = tmp_path / "new.sqlite"
    run_cli("ledger", "import", str(good), "--keys", str(keys_dir), "--db", str(db), check=True)
    header = db.read_bytes()[:100]
    assert header[18:20] == b"\x02\x02"  # WAL, in the file itself: nothing left in a -wal
    assert int.from_bytes(header[68:72], "big") == APPLICATION_ID
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.sqlite"]


def _foreign_files(folder: Path) -> dict[str, Path]:
    files = {"empty": folder / "empty.sqlite", "text": folder / "notes.txt"}
    files["empty"].write_bytes(b"")
    files["text"].write_bytes(b"not a database at all\n" * 200)
    for name, journal in (("rollback", "delete"), ("wal", "wal")):
        path = folder / f"{name}.sqlite"
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA journal_mode={journal}")
        conn.execute("CREATE TABLE tickets (id INTEGER PRIMARY KEY, note TEXT)")
        conn.execute("INSERT INTO tickets VALUES (1, 'someone else''s data')")
        conn.commit()
        conn.close()
        files[name] = path
    return files


def _snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in folder.iterdir()
    }


def test_a_file_that_is_not_a_ledger_is_refused_untouched(two_blocks, keys_dir, tmp_path):
    """The issue's reproduction 6: validate --db switched an empty or foreign SQLite file
    to WAL before refusing it."""
    good, _, _ = two_blocks
    folder = tmp_path / "foreign"
    folder.mkdir()
    files = _foreign_files(folder)
    before = _snapshot(folder)
    for path in files.values():
        for command in (
            ["validate", "0" * 25, "--db", str(path), "--keys", str(keys_dir)],
            ["claim", "0" * 25, "--db", str(path), "--terminal", "T1", "--keys", str(keys_dir)],
            ["ledger", "config", "--db", str(path)],
            ["ledger", "locks", "--db", str(path)],
            ["packs", "activate", "1", "--db", str(path)],
            ["ledger", "import", str(good), "--keys", str(keys_dir), "--db", str(path)],
        ):
            result = run_in_process(*command)
            assert result.returncode == 1, (command, result.stdout)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and "not a printpipe validation database" in lines[0], lines
        assert _snapshot(folder) == before, path  # same bytes, same times, no -wal or -shm


def test_read_only_commands_write_nothing_to_a_ledger(two_blocks, keys_dir, tmp_path):
    good, _, _ = two_blocks
    db = tmp_path / "ledger.sqlite"
    run_cli("ledger", "import", str(good), "--keys", str(keys_dir), "--db", str(db), check=True)
    main = (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns)
    for command in (["ledger", "config"], ["ledger", "locks"], ["ledger", "locks", "--json"]):
        assert run_in_process(*command, "--db", str(db)).returncode == 0
        assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns) == main
        wal = db.with_name(db.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0  # not one frame written


def test_a_ledger_of_an_earlier_layout_is_refused_untouched_saying_how_to_rebuild(
    tmp_path, keys_dir
):
    """Ledgers written before issue 12 hold VIRNs in clear, before issue 14 no commitments:
    refused in one line, unchanged."""
    folder = tmp_path / "old"
    folder.mkdir()
    for layout, application_id in ((0, 0), (1, APPLICATION_ID), (2, APPLICATION_ID)):
        db = folder / f"layout-{layout}.sqlite"
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(
            """
            CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE tickets (id INTEGER PRIMARY KEY, virn INTEGER NOT NULL,
                prize_eur INTEGER NOT NULL, manifest INTEGER NOT NULL, record TEXT NOT NULL);
            CREATE TABLE audit_log (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL,
                terminal TEXT NOT NULL, action TEXT NOT NULL, input TEXT NOT NULL, ticket TEXT,
                answer TEXT NOT NULL);
            INSERT INTO tickets VALUES (412000001005, 1234567890, 10, 1, 'x');
            """
        )
        conn.execute(f"PRAGMA application_id={application_id}")
        conn.execute(f"PRAGMA user_version={layout}")
        conn.close()
    before = _snapshot(folder)
    for db in sorted(folder.glob("*.sqlite")):
        for command in (
            ["ledger", "locks", "--db", str(db)],
            ["ledger", "config", "--db", str(db), "--retailer-limit", "250"],
            ["validate", "0" * 25, "--db", str(db), "--keys", str(keys_dir)],
            ["ledger", "verify-log", "--db", str(db)],
        ):
            result = run_in_process(*command)
            lines = result.stderr.strip().splitlines()
            assert result.returncode == 1 and len(lines) == 1, (command, result.stderr)
            assert "earlier printpipe" in lines[0] and "printpipe ledger import" in lines[0]
    assert _snapshot(folder) == before


def test_validations_commit_normal_and_payments_full(two_blocks, keys_dir, tmp_path):
    """The durability policy (docs/validation.md): a validation commits with synchronous=NORMAL
    (WAL: no fsync per answer), a payment or an import with FULL."""
    good, _, _ = two_blocks
    db = tmp_path / "ledger.sqlite"
    run_cli("ledger", "import", str(good), "--keys", str(keys_dir), "--db", str(db), check=True)
    seen = []
    with Ledger(db, key=load_ledger_key(keys_dir)) as book:
        assert isinstance(book.db, SqliteDatabase)
        conn = book.db.conn
        conn.set_trace_callback(lambda sql: seen.append(sql) if "synchronous" in sql else None)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        book.validate("0" * 25, terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)
        assert not [sql for sql in seen if "FULL" in sql]
        book.claim("0" * 25, terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
        assert [sql for sql in seen if "=" in sql] == [
            "PRAGMA synchronous=FULL",
            "PRAGMA synchronous=NORMAL",
        ]


def test_a_commit_that_fails_leaves_the_ledger_usable(two_blocks, keys_dir, tmp_path):
    """A COMMIT SQLite refuses (here a deferred foreign key; a full disk or an I/O error the
    same) raises, and the transaction is rolled back: the next one begins, nothing of the
    refused one is kept (before, the connection stayed inside the failed transaction and every
    later BEGIN failed)."""
    good, _, _ = two_blocks
    db = tmp_path / "ledger.sqlite"
    run_cli("ledger", "import", str(good), "--keys", str(keys_dir), "--db", str(db), check=True)
    with Ledger(db, key=load_ledger_key(keys_dir)) as book:
        assert isinstance(book.db, SqliteDatabase)
        refused = pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY")
        with refused, book.db.transaction() as tx:
            tx.write("PRAGMA defer_foreign_keys=ON")
            tx.write("INSERT INTO tickets (id, virn_hmac, prize_eur, manifest, record_hmac) "
                     "VALUES (-1, x'00', 0, 999999, x'00')")  # fmt: skip
        assert not book.db.conn.in_transaction
        with book.db.transaction() as tx:
            assert tx.execute("SELECT COUNT(*) FROM tickets WHERE id = -1") == [(0,)]


def _as_a_reader(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """``printpipe`` commands run in process by a user who cannot write what its modes forbid:
    this one, or, for root (who writes whatever the modes say), a forked child of this
    process that has become ``nobody`` (the files it reads are its own)."""
    if os.geteuid() != 0:
        return [run_in_process(*command) for command in commands]
    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            results = [run_in_process(*command) for command in commands]
            with os.fdopen(write, "wb") as out:
                pickle.dump(results, out)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answers:
        data = answers.read()
    os.waitpid(child, 0)
    return pickle.loads(data)


def test_read_only_commands_read_a_ledger_nobody_may_write(game, keys_dir):
    """``ledger locks``, ``verify-log`` and ``remaining`` on a ledger file its reader cannot
    write (0400: an archived copy, another user's), then in a folder it cannot write (a
    read-only mount): they answer, and leave nothing beside it (SQLite made its side files
    0400 beside a 0400 ledger, which then refused its owner's next write)."""
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        os.chmod(root, 0o711)
        keys = root / "keys"
        shutil.copytree(keys_dir, keys)
        store = generate_store(game, keys, root / "blk", PackRange(1, 1))
        commitment = str(store / "commitment.json")
        run_cli("commitment", "sign", commitment, "--manifest", str(store / BLOCK_MANIFEST),
                "--keys", str(keys), "-q", check=True)  # fmt: skip
        folder = root / "archive"
        folder.mkdir()
        db = folder / "ledger.sqlite"
        run_cli("ledger", "import", str(store / BLOCK_MANIFEST), "--commitment", commitment,
                "--keys", str(keys), "--db", str(db), "-q", check=True)  # fmt: skip
        out = root / "out"
        out.mkdir()
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            for path in (keys, *keys.iterdir(), folder, db, out):
                os.chown(path, nobody.pw_uid, nobody.pw_gid)
        before = hashlib.sha256(db.read_bytes()).hexdigest()

        def commands(n: int) -> list[list[str]]:
            return [
                ["ledger", "locks", "--db", str(db)],
                ["ledger", "verify-log", "--db", str(db), "--keys", str(keys)],
                ["ledger", "remaining", "--db", str(db), "--keys", str(keys), "--out",
                 str(out / f"remaining-{n}.txt")],
            ]  # fmt: skip

        try:
            os.chmod(db, 0o400)
            for result in _as_a_reader(commands(1)):
                assert result.returncode == 0, (result.args, result.stderr)
            assert sorted(p.name for p in folder.iterdir()) == ["ledger.sqlite"]
            os.chmod(db, 0o600)
            os.chmod(folder, 0o500)
            results = _as_a_reader(commands(2))
            for result in results:
                assert result.returncode == 0, (result.args, result.stderr)
            assert "no locked ticket" in results[0].stdout
            assert "1 entries, every one chained" in results[1].stdout  # the import's
            assert "0 lots paid" in results[2].stdout
        finally:
            os.chmod(folder, 0o700)
            os.chmod(db, 0o600)
        assert sorted(p.name for p in folder.iterdir()) == ["ledger.sqlite"]
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
