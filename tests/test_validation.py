"""The validation ledger: import, pack states, validate, claim, locks, audit log, fuzz; every
test on both databases (SQLite and PostgreSQL: the ``backend`` fixture)."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.handover import BLOCK_MANIFEST, verify_manifest, write_run_manifest
from printpipe.ids import TicketId, inventory_code_digits, mod97_check, validation_code_digits
from printpipe.keys import (
    LOTTERY_IDENTITY,
    LOTTERY_RECIPIENT,
    LOTTERY_SIGNING_KEY,
    PRODUCER_SIGNING_PUB,
    load_lottery_identity,
    load_lottery_recipient,
    load_public_key,
    load_signing_key,
)
from printpipe.ledger.book import Ledger
from printpipe.ledger.importer import import_manifest
from printpipe.ledger.inputs import LOTTERY, TerminalId, parse_pack_ref
from printpipe.ledger.key import load_ledger_key
from printpipe.ledger.log import GENESIS, Checkpoint, Entry, LogKey, seal_batch, write_checkpoint
from printpipe.ledger.rules import PackScope
from printpipe.ledger.store import Location, database_errors
from tests.conftest import forked_together, run_cli
from tests.ledger_helpers import (
    OFFICE_SCOPE,
    copy_store,
    db_arg,
    generate_store,
    ledger_exists,
    packs_of_every_tier,
    run_in_process,
    ticket_codes,
)


def pack_refs(numbers):
    return [parse_pack_ref(n) for n in sorted(numbers)]


ANSWER_PREFIXES = (
    "WIN ",
    "NO WIN",
    "ALREADY PAID ",
    "PACK NOT ACTIVATED",
    "INVALID CODE",
    "UNKNOWN TICKET",
    "WRONG VALIDATION NUMBER",
    "LOCKED",
    "SPECIMEN, NOT VALID",
    "PACK ISSUED",
    "PACK ACTIVATED",
    "PACK SETTLED",
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, game, keys_dir) -> list[Path]:
    """Packs 1:8, plus one single-pack store for every tier the first 8 packs lack."""
    root = tmp_path_factory.mktemp("v")
    stores = [generate_store(game, keys_dir, root / "p1-8", PackRange(1, 8))]
    for pack in sorted(set(packs_of_every_tier(game, keys_dir).values())):
        if pack > 8:
            stores.append(generate_store(game, keys_dir, root / f"p{pack}", PackRange(pack, pack)))
    return stores


def _import(db, manifest: Path, keys: Path) -> subprocess.CompletedProcess:
    return run_cli("ledger", "import", str(manifest), "--keys", str(keys), "--db", db_arg(db))


@pytest.fixture(scope="module")
def key(keys_dir):
    return load_ledger_key(keys_dir)


@pytest.fixture(scope="module")
def db(ledgers, stores, keys_dir):
    location = ledgers.new()
    for store in stores:
        result = _import(location, store / BLOCK_MANIFEST, keys_dir)
        assert result.returncode == 0, result.stderr
    return location


def _samples(stores: list[Path], game) -> list[tuple[TicketId, str, str, int, Path]]:
    """A few tickets of every tier (losers included) with their codes and true prizes."""
    out = []
    for store_dir in stores:
        store = BlockStore.open(store_dir)
        tiers = np.asarray(store.read().tier)
        for tier in np.unique(tiers):
            for row in np.flatnonzero(tiers == tier)[:2]:
                out.append((*ticket_codes(store, game, int(row)), store_dir))
    return out


def _rules_prize(game, store_dir: Path, ticket: TicketId) -> int:
    """The prize the rules give for the symbols the store holds (what is printed)."""
    store = BlockStore.open(store_dir)
    first = store.summary.packs.first_pack_number
    row = (ticket.pack - first) * store.pack_size + ticket.ticket
    tickets = store.read()
    evaluation = game.evaluate(tickets.variant[row : row + 1], tickets.symbols[row : row + 1])
    return int(evaluation.prize_eur[0])


def test_round_trip_every_tier(db, ledgers, key, stores, game):
    work = ledgers.copy(db)
    samples = _samples(stores, game)
    amounts = {prize for *_, prize, _ in samples}
    assert amounts == set(game.definition.tier_amounts.tolist())  # every tier, losers too
    with Ledger(work, key=key) as book:
        for _ticket, code, inventory, _prize, _ in samples:
            assert (
                book.validate(code, terminal=TerminalId("t"), scope=OFFICE_SCOPE).text
                == "PACK NOT ACTIVATED"
            )
            assert (
                book.validate(inventory, terminal=TerminalId("t"), scope=OFFICE_SCOPE).text
                == "PACK ISSUED"
            )
        packs = sorted({f"{t.pack:06d}" for t, *_ in samples})
        book.set_pack_state(
            pack_refs(packs), state="activated", terminal=TerminalId("t"), scope=OFFICE_SCOPE
        )
        for ticket, code, inventory, prize, store_dir in samples:
            assert prize == _rules_prize(game, store_dir, ticket)
            answer = book.validate(code, terminal=TerminalId("t"), scope=OFFICE_SCOPE)
            if prize == 0:
                assert answer.text == "NO WIN"
            elif prize <= 150:
                assert answer.text == f"WIN {prize}"
            else:
                assert answer.text == f"WIN {prize} - claim at the lottery"
            inv = book.validate(inventory, terminal=TerminalId("t"), scope=OFFICE_SCOPE)
            assert inv.text == "PACK ACTIVATED" and inv.amount_eur is None
            assert str(prize) not in json.dumps(inv.as_json()).replace(ticket.serial, "")


def test_cli_answers_specimens_bad_and_unknown_codes(db, ledgers, stores, game, keys_dir, tmp_path):
    work = ledgers.copy(db)
    _ticket, code, inventory, _prize, _ = _samples(stores, game)[3]
    specimen = TicketId(412, 0, 5)
    unknown = TicketId(412, 999_999, 5)
    cases = {
        specimen.validation_code(123): "SPECIMEN, NOT VALID",
        specimen.inventory_code: "SPECIMEN, NOT VALID",
        unknown.validation_code(123): "UNKNOWN TICKET",
        unknown.inventory_code: "UNKNOWN TICKET",
        code[:-1] + str((int(code[-1]) + 1) % 10): "INVALID CODE",
        code[:24]: "INVALID CODE",
        "abc": "INVALID CODE",
        "-x": "INVALID CODE",
        inventory[:-1] + str((int(inventory[-1]) + 1) % 10): "INVALID CODE",
        code: "PACK NOT ACTIVATED",
    }
    for given_code, want in cases.items():
        result = run_cli(
            "validate",
            given_code,
            "--db",
            db_arg(work),
            "--terminal",
            "T1",
            "--keys",
            str(keys_dir),
        )
        assert result.stdout.strip() == want, given_code
        assert result.returncode == 1 and "Traceback" not in result.stderr
    result = run_cli("validate", inventory, "--db", db_arg(work), "--json", "--keys", str(keys_dir))
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["text"] == "PACK ISSUED" and "amount_eur" not in data
    result = run_cli(
        "validate", code, "--db", str(tmp_path / "missing.sqlite"), "--keys", str(keys_dir)
    )
    assert result.returncode == 1 and "not found" in result.stderr
    assert not (tmp_path / "missing.sqlite").exists()


def test_claim_pays_once_and_respects_the_retailer_limit(db, ledgers, key, stores, game):
    work = ledgers.copy(db)
    samples = _samples(stores, game)
    small = next(s for s in samples if 0 < s[3] <= 150)
    big = next(s for s in samples if s[3] > 150)
    loser = next(s for s in samples if s[3] == 0)
    shop = PackScope.of_retailer("shop-1")  # T1 and T2: its terminals
    with Ledger(work, key=key) as book:
        packs = pack_refs({f"{s[0].pack:06d}" for s in samples})
        book.ship_packs(packs, retailer=TerminalId("shop-1"), terminal=LOTTERY)
        book.set_pack_state(packs, state="activated", terminal=LOTTERY, scope=OFFICE_SCOPE)
        assert (
            book.claim(small[2], terminal=TerminalId("T1"), scope=shop).text == "INVALID CODE"
        )  # the inventory code never pays
        paid = book.claim(small[1], terminal=TerminalId("T1"), scope=shop)
        assert paid.text == f"PAID {small[3]}"
        again = book.claim(small[1], terminal=TerminalId("T2"), scope=shop)
        assert again.text == f"ALREADY PAID {paid.paid_at} T1"
        assert (
            book.validate(small[1], terminal=TerminalId("T3"), scope=OFFICE_SCOPE).text
            == again.text
        )
        assert (
            book.claim(big[1], terminal=TerminalId("T1"), scope=shop).text
            == f"WIN {big[3]} - claim at the lottery"
        )
        assert (
            book.claim(big[1], terminal=TerminalId("OFFICE"), scope=OFFICE_SCOPE).text
            == f"PAID {big[3]}"
        )
        assert book.claim(loser[1], terminal=TerminalId("T1"), scope=shop).text == "NO WIN"
        book.configure(terminal=LOTTERY, retailer_limit_eur=1000)
        assert book.settings.retailer_limit_eur == 1000
        payments = book.query("SELECT COUNT(*), SUM(amount_eur) FROM payments")
        assert [tuple(map(int, row)) for row in payments] == [(2, small[3] + big[3])]
        actions = book.query("SELECT action, answer FROM audit_log")
        assert ("claim", f"PAID {small[3]}") in actions
        for statement in (
            "UPDATE audit_log SET answer = 'x'",
            "DELETE FROM audit_log",
            "DELETE FROM payments",
            "UPDATE payments SET amount_eur = 1",
        ):
            with pytest.raises(database_errors(), match="append-only"), book.db.transaction() as tx:
                tx.execute(statement)
        assert book.verify_log().ok


def test_the_command_line_is_the_office_it_pays_big_prizes_and_takes_no_office_flag(
    db, ledgers, stores, game, keys_dir
):
    """The command line at the database is the lottery's office (it holds the ledger and its
    key): it pays above the retailer limit; the old ``--office`` flag is refused, nothing paid."""
    work = ledgers.copy(db)
    big = next(s for s in _samples(stores, game) if s[3] > 150)
    keys = ["--keys", str(keys_dir)]
    run_cli("packs", "activate", f"{big[0].pack:06d}", "--db", db_arg(work), check=True)
    flagged = run_cli("claim", big[1], "--db", db_arg(work), "--terminal", "desk-1", "--office",
                      *keys)  # fmt: skip
    assert flagged.returncode == 2 and flagged.stdout == ""
    assert len(flagged.stderr.strip().splitlines()) == 1
    with Ledger(work, read_only=True) as book:
        assert book.query("SELECT COUNT(*) FROM payments") == [(0,)]
    paid = run_cli("claim", big[1], "--db", db_arg(work), "--terminal", "desk-1", *keys)
    assert (paid.returncode, paid.stdout.strip()) == (0, f"PAID {big[3]}")
    with Ledger(work, read_only=True) as book:
        assert book.query("SELECT amount_eur, terminal FROM payments") == [(big[3], "desk-1")]


def test_wrong_virns_from_two_terminals_lock_the_ticket(db, ledgers, key, stores, game):
    work = ledgers.copy(db)
    ticket, code, _, _prize, _ = next(s for s in _samples(stores, game) if s[3] > 0)
    virn = int(code[13:23])
    wrong = [ticket.validation_code((virn + k) % 10**10) for k in (1, 2, 3)]
    config = ["ledger", "config", "--db", db_arg(work), "--max-virn-failures", "3"]
    assert "lock after 3" in run_cli(*config, check=True).stdout
    with Ledger(work, key=key) as book:
        book.set_pack_state(
            pack_refs([f"{ticket.pack:06d}"]),
            state="activated",
            terminal=LOTTERY,
            scope=OFFICE_SCOPE,
        )
        t1, t2 = TerminalId("T1"), TerminalId("T2")
        answers = [
            book.validate(c, terminal=t, scope=OFFICE_SCOPE)
            for c, t in zip(wrong, (t1, t1, t2), strict=True)
        ]
        assert [a.text for a in answers] == ["WRONG VALIDATION NUMBER"] * 3
        assert book.validate(code, terminal=t1, scope=OFFICE_SCOPE).text == "LOCKED"
        assert book.claim(code, terminal=TerminalId("OFFICE"), scope=OFFICE_SCOPE).text == "LOCKED"
        failures = book.query("SELECT terminal, failures FROM virn_failures")
        assert sorted(failures) == [("T1", 2), ("T2", 1)]


def test_pack_states_move_forward_only_all_or_none(db, ledgers, key):
    work = ledgers.copy(db)
    result = run_cli("packs", "settle", "--db", db_arg(work), "000001")
    assert result.returncode == 1 and "only an activated pack can be settled" in result.stderr
    result = run_cli("packs", "activate", "--db", db_arg(work), "000001", "777777")
    assert result.returncode == 1 and "777777" in result.stderr
    with Ledger(work, key=key) as book:  # all or none: 000001 is still issued
        assert book.query("SELECT state FROM packs WHERE pack = 1") == [("issued",)]
    run_cli("packs", "activate", "--db", db_arg(work), "000001", "0412-000002", check=True)
    out = run_cli("packs", "settle", "--db", db_arg(work), "1", check=True).stdout
    assert out.strip() == "pack 0412-000001: settled"
    result = run_cli("packs", "activate", "--db", db_arg(work), "1")
    assert result.returncode == 1 and "is settled" in result.stderr


def test_overlapping_manifests_must_agree(ledgers, key, stores, keys_dir, game, tmp_path):
    work = ledgers.new()
    base = stores[0]
    assert _import(work, base / BLOCK_MANIFEST, keys_dir).returncode == 0
    result = _import(work, base / BLOCK_MANIFEST, keys_dir)
    assert result.returncode == 0 and "already imported" in result.stdout
    store = BlockStore.open(base)
    recipient = load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT)
    signing = load_signing_key(keys_dir)
    run = tmp_path / "run.ppm"
    write_run_manifest(run, store, PackRange(3, 5), recipient, signing, [], game=game)
    assert (
        "(0 new)"
        in run_cli(
            "ledger", "import", str(run), "--keys", str(keys_dir), "--db", db_arg(work), check=True
        ).stdout
    )
    # A properly signed manifest whose VIRN for one ticket differs: refused, nothing added.
    changed = copy_store(base, tmp_path / "changed")
    virn = np.load(changed / "virn.npy", mmap_mode="r+")
    virn[300] = (int(virn[300]) + 1) % 10**10
    virn.flush()
    del virn
    conflicting = tmp_path / "conflict.ppm"
    write_run_manifest(
        conflicting, BlockStore.open(changed), PackRange(1, 8), recipient, signing, [], game=game
    )
    with Ledger(work, key=key) as book:
        before = book.query("SELECT COUNT(*) FROM manifests")
    result = _import(work, conflicting, keys_dir)
    assert result.returncode == 1 and "differs from the one already imported" in result.stderr
    with Ledger(work, key=key) as book:
        assert book.query("SELECT COUNT(*) FROM manifests") == before
        assert book.verify_log().ok


def test_a_signed_manifest_whose_prize_breaks_the_rules_is_refused(
    ledgers, stores, keys_dir, game, tmp_path
):
    changed = copy_store(stores[0], tmp_path / "cheat")
    tier = np.load(changed / "tier.npy", mmap_mode="r+")
    loser = int(np.flatnonzero(tier == 0)[0])
    tier[loser] = 1  # a loser recorded as the 15,000 EUR lot
    tier.flush()
    del tier
    path = tmp_path / "cheat.ppm"
    write_run_manifest(
        path,
        BlockStore.open(changed),
        PackRange(1, 8),
        load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT),
        load_signing_key(keys_dir),
        [],
        game=game,
    )
    work = ledgers.new()
    result = _import(work, path, keys_dir)
    assert result.returncode == 1 and "by the rules" in result.stderr
    assert "Traceback" not in result.stderr
    assert not ledger_exists(work), "a refused first import leaves no ledger behind"


def test_import_with_the_wrong_identity_writes_no_rows(ledgers, stores, tmp_path, keys_dir):
    from printpipe.keys import init_keys

    strangers = tmp_path / "strangers"
    init_keys(strangers)
    work = ledgers.new()
    result = run_cli(
        "ledger", "import", str(stores[0] / BLOCK_MANIFEST), "--keys", str(keys_dir),
        "--identity", str(strangers / LOTTERY_IDENTITY), "--db", db_arg(work),
    )  # fmt: skip
    assert result.returncode == 1 and "identity" in result.stderr
    assert not ledger_exists(work), "a refused first import leaves nothing"
    if isinstance(work, Path):
        assert not list(work.parent.glob(f"*{work.name}*")), "not even a temporary file"


def test_an_import_seals_its_own_log_entry(ledgers, stores, keys_dir):
    """The import holds the ledger key: its entry is sealed before it ends, not left for the
    next keyed command (``verify-log`` would count it as awaiting its seal)."""
    work = ledgers.new()
    for store in stores[:2]:
        assert _import(work, store / BLOCK_MANIFEST, keys_dir).returncode == 0
        verified = run_cli("ledger", "verify-log", "--db", db_arg(work), "--keys", str(keys_dir))
        assert verified.returncode == 0, verified.stderr
        assert "awaiting" not in verified.stdout, verified.stdout
    assert ": 2 entries, every one chained" in verified.stdout, verified.stdout


def test_sixteen_concurrent_claims_pay_exactly_once(db, ledgers, key, keys_dir, stores, game):
    work = ledgers.copy(db)
    ticket, code, _, prize, _ = next(s for s in _samples(stores, game) if 0 < s[3] <= 150)
    run_cli("packs", "activate", "--db", db_arg(work), f"{ticket.pack:06d}", check=True)
    claim = ["claim", code, "--db", db_arg(work), "--keys", str(keys_dir), "--terminal"]
    # 16 processes (forked: no interpreter start-up), released at one instant
    results = forked_together(
        *(functools.partial(run_in_process, *claim, f"T{i:02d}") for i in range(16))
    )
    answers = [result.stdout.strip() for result in results]
    assert all("Traceback" not in result.stderr for result in results)
    paid = [a for a in answers if a == f"PAID {prize}"]
    already = [a for a in answers if a.startswith("ALREADY PAID ")]
    assert len(paid) == 1 and len(already) == 15, answers
    assert [result.returncode for result in results].count(0) == 1
    with Ledger(work, key=key) as book:
        assert book.query("SELECT COUNT(*) FROM payments") == [(1,)]
        logged = book.query("SELECT COUNT(*) FROM audit_log WHERE action = 'claim'")
        assert logged == [(16,)]
        assert book.verify_log().ok


@pytest.fixture(scope="module")
def fuzz_book(db, ledgers, key, stores, game):
    work = ledgers.copy(db)
    book = Ledger(work, key=key)
    samples = _samples(stores, game)
    book.set_pack_state(
        pack_refs({f"{s[0].pack:06d}" for s in samples}),
        state="activated",
        terminal=LOTTERY,
        scope=OFFICE_SCOPE,
    )
    book.configure(
        terminal=LOTTERY, max_virn_failures=10**6, max_terminal_virn_failures=10**6
    )  # fuzzing must not lock the tickets it checks
    yield book, samples
    book.close()


def _mutations(samples):
    codes = [s[1] for s in samples]
    digits = st.text("0123456789", min_size=0, max_size=30)
    valid_unknown = st.builds(
        lambda p, t, v: TicketId(412, p, t).validation_code(v),
        st.integers(0, 999_999),
        st.integers(0, 999),
        st.integers(0, 10**10 - 1),
    )
    wrong_virn = st.builds(
        lambda s, v: s[0].validation_code(v), st.sampled_from(samples), st.integers(0, 10**10 - 1)
    )
    edited = st.builds(
        lambda c, i, d: c[:i] + d + c[i + 1 :],
        st.sampled_from(codes),
        st.integers(0, 24),
        st.sampled_from("0123456789x -"),
    )
    recheck = st.builds(  # right check digits over an edited body
        lambda c, i, d: (b := (c[:i] + d + c[i + 1 : 23])) + f"{mod97_check(b):02d}",
        st.sampled_from(codes),
        st.integers(0, 22),
        st.sampled_from("0123456789"),
    )
    return st.one_of(st.text(max_size=40), digits, valid_unknown, wrong_virn, edited, recheck)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_codes_never_crash_and_never_give_a_wrong_prize(fuzz_book, data):
    book, samples = fuzz_book
    code = data.draw(_mutations(samples))
    answer = book.validate(code, terminal=TerminalId("fuzz"), scope=OFFICE_SCOPE)
    assert answer.text.startswith(ANSWER_PREFIXES)
    if answer.outcome in ("WIN", "WIN_AT_LOTTERY", "NO_WIN"):
        truth = {s[1]: s[3] for s in samples}
        digits = validation_code_digits(code)
        assert digits in truth, code  # only a sampled ticket's exact code can win
        assert answer.amount_eur == truth[digits]
    if inventory_code_digits(code) is not None:
        assert answer.amount_eur is None


def test_validate_errors_are_one_line(tmp_path, keys_dir):
    bad = tmp_path / "not.sqlite"
    bad.write_bytes(b"not a database at all" * 100)
    result = run_cli("validate", "1" * 25, "--db", str(bad), "--keys", str(keys_dir))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(PrintpipeError):
        Ledger(tmp_path / "absent.sqlite")


def test_verify_then_import_api(ledgers, key, stores, keys_dir, game):
    manifest = verify_manifest(
        stores[0] / BLOCK_MANIFEST, load_public_key(keys_dir / PRODUCER_SIGNING_PUB)
    )
    identity = load_lottery_identity(keys_dir / LOTTERY_IDENTITY)
    path = ledgers.new()
    text = import_manifest(path, manifest=manifest, game=game, identity=identity, key=key)
    assert "1,000 records (1,000 new)" in text
    with Ledger(path, key=key) as book:
        assert book.query("SELECT COUNT(*) FROM tickets") == [(1000,)]
        if book.db.dialect == "sqlite":
            assert book.query("PRAGMA journal_mode") == [("wal",)]


def test_only_the_printed_forms_of_a_code_are_answered(db, ledgers, key, stores, game):
    """Issue 11, defect 5: a non-canonical check or a padding byte is INVALID CODE."""
    work = ledgers.copy(db)
    store = BlockStore.open(stores[0])
    rows = range(len(store.read().tier))
    ticket, code, _, _ = next(
        c for r in rows if (c := ticket_codes(store, game, r))[1][23:] in ("97", "98")
    )
    text = ticket.validation_text(int(code[13:23]))
    with Ledger(work, key=key) as book:
        for given_code in (code, text, f" {code} ", text.replace(" ", "-")):
            assert (
                book.validate(given_code, terminal=TerminalId("T"), scope=OFFICE_SCOPE).text
                == "PACK NOT ACTIVATED"
            ), given_code
        for given_code in (
            f"{code[:23]}{int(code[23:]) - 97:02d}",  # same value modulo 97, never printed
            code + "\x1c",
            "\u3000" + code,
            code + "\n",
            code.replace("0", "\uff10"),
            text.replace(" ", "  "),
        ):
            assert (
                book.validate(given_code, terminal=TerminalId("T"), scope=OFFICE_SCOPE).text
                == "INVALID CODE"
            ), repr(given_code)


TAMPERINGS = ["entry edited", "sealed entry deleted", "tail deleted and head rewound",
              "chain rewritten from the middle", "payment edited", "payment deleted"]  # fmt: skip
_ENTRY_SQL = (
    "SELECT l.id, l.at, l.terminal, l.action, l.input, l.ticket, l.answer, l.request "
    "FROM audit_seal s JOIN audit_log l ON l.id = s.entry"
)


def _paid_ledger(db, ledgers, key, stores, game) -> Location:
    """A copy of ``db`` with packs activated, validations and two payments, all sealed."""
    work = ledgers.copy(db)
    samples = _samples(stores, game)
    winners = [s for s in samples if 0 < s[3] <= 150][:2]
    with Ledger(work, key=key) as book:
        book.set_pack_state(pack_refs({f"{s[0].pack:06d}" for s in winners}), state="activated",
                            terminal=LOTTERY, scope=OFFICE_SCOPE)  # fmt: skip
        for code in ("1", "2", "3"):
            book.validate(code, terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
        for winner in winners:
            answer = book.claim(winner[1], terminal=TerminalId("T2"), scope=OFFICE_SCOPE)
            assert answer.text.startswith("PAID ")
        book.validate("4", terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
    return work


def _without_triggers(book: Ledger, tx) -> None:
    if book.db.dialect == "sqlite":
        for trigger in (
            "audit_log_no_update",
            "audit_log_no_delete",
            "audit_seal_no_update",
            "audit_seal_no_delete",
            "payments_no_update",
            "payments_no_delete",
        ):
            tx.execute(f"DROP TRIGGER {trigger}")  # fmt: skip
    else:
        for table in ("audit_log", "audit_seal", "payments"):
            tx.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")


def _reseal(tx, key: LogKey, first: int, previous: bytes) -> None:
    """The chain recomputed under ``key`` from seal ``first`` on, the head with it."""
    rows = tx.execute(f"{_ENTRY_SQL} WHERE s.seq >= ? ORDER BY s.seq", (first,))
    new, seq, top = seal_batch(key, first - 1, previous, [Entry(*row) for row in rows])
    tx.execute("DELETE FROM audit_seal WHERE seq >= ?", (first,))
    tx.executemany("INSERT INTO audit_seal VALUES (?, ?, ?)", new)
    tx.execute("UPDATE audit_head SET seq = ?, hash = ?, mac = ? WHERE id = 1",
               (seq, top, key.head_mac(seq, top)))  # fmt: skip


@pytest.mark.parametrize("tamper", TAMPERINGS)
def test_verify_log_names_each_tampering_by_a_database_writer_without_the_key(
    db, ledgers, key, stores, game, keys_dir, tamper
):
    """Someone with write access to the database, its triggers dropped, but not the ledger
    key, changes the log or the payments; ``verify-log`` names it (exit 1, one line)."""
    work = _paid_ledger(db, ledgers, key, stores, game)
    verify = ["ledger", "verify-log", "--db", db_arg(work), "--keys", str(keys_dir)]
    untouched = run_cli(*verify)
    assert untouched.returncode == 0 and "every one chained" in untouched.stdout, untouched.stderr
    assert "2 payments bound to their entries" in untouched.stdout
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        _without_triggers(book, tx)
        seals = tx.execute("SELECT seq, entry, hash FROM audit_seal ORDER BY seq")
        middle = seals[len(seals) // 2]
        if tamper == "entry edited":
            tx.execute("UPDATE audit_log SET answer = 'WIN 15000' WHERE id = ?", (middle[1],))
        elif tamper == "sealed entry deleted":
            tx.execute("DELETE FROM audit_log WHERE id = ?", (middle[1],))
        elif tamper == "tail deleted and head rewound":
            tx.execute("DELETE FROM audit_log WHERE id IN (SELECT entry FROM audit_seal "
                       "WHERE seq > ?)", (middle[0],))  # fmt: skip
            tx.execute("DELETE FROM audit_seal WHERE seq > ?", (middle[0],))
            tx.execute("DELETE FROM payments")
            tx.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1",
                       (middle[0], middle[2]))  # fmt: skip
        elif tamper == "chain rewritten from the middle":  # under a key of the attacker's own
            tx.execute("UPDATE audit_log SET answer = 'NO WIN' WHERE id = ?", (middle[1],))
            previous = bytes(seals[middle[0] - 2][2]) if middle[0] > 1 else GENESIS
            _reseal(tx, LogKey(bytes(32)), middle[0], previous)
        elif tamper == "payment edited":
            tx.execute("UPDATE payments SET amount_eur = amount_eur * 100")
        else:
            ticket = tx.one("SELECT MIN(ticket) FROM payments")[0]  # type: ignore[index]
            tx.execute("DELETE FROM payments WHERE ticket = ?", (ticket,))
    result = run_cli(*verify)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1, result
    expected = {"entry edited": "was edited", "sealed entry deleted": "deleted",
                "tail deleted and head rewound": "rewound", "chain rewritten from the middle":
                "was edited", "payment edited": "the payment of ticket",
                "payment deleted": "was deleted"}[tamper]  # fmt: skip
    assert expected in result.stderr, result.stderr


def test_checkpoints_are_kept_by_verify_log_and_forged_or_out_of_order_ones_refused(
    db, ledgers, key, stores, game, keys_dir, tmp_path
):
    work = _paid_ledger(db, ledgers, key, stores, game)
    checkpoint = ["ledger", "checkpoint", "--db", db_arg(work), "--keys", str(keys_dir)]
    first = run_cli(*checkpoint, "--out", str(tmp_path / "one.json"))
    assert first.returncode == 0 and "wrote" in first.stdout, first.stderr
    with Ledger(work, key=key) as book:
        book.validate("5", terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
    second = run_cli(*checkpoint, "--out", str(tmp_path / "two.json"))
    assert second.returncode == 0, second.stderr
    verify = ["ledger", "verify-log", "--db", db_arg(work), "--keys", str(keys_dir)]
    kept = run_cli(*verify, "--checkpoint", str(tmp_path / "one.json"),
                   "--checkpoint", str(tmp_path / "two.json"))  # fmt: skip
    assert kept.returncode == 0 and "2 checkpoint(s) kept" in kept.stdout, kept.stderr
    one = json.loads((tmp_path / "one.json").read_text())
    two = json.loads((tmp_path / "two.json").read_text())
    (tmp_path / "forged.json").write_text(json.dumps({**two, "seq": one["seq"]}))
    refused = run_cli(*verify, "--checkpoint", str(tmp_path / "forged.json"))
    assert refused.returncode == 1 and "signature is not the lottery's" in refused.stderr
    late = Checkpoint(one["ledger"], one["seq"], bytes.fromhex(one["head"]),
                      "2099-01-01T00:00:00Z")  # fmt: skip
    signing = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    (tmp_path / "late.json").write_bytes(write_checkpoint(late, signing))
    out_of_order = run_cli(*verify, "--checkpoint", str(tmp_path / "two.json"),
                           "--checkpoint", str(tmp_path / "late.json"))  # fmt: skip
    assert out_of_order.returncode == 1 and "out of order" in out_of_order.stderr
    # the ledger key's holder rewrites an entry before the first checkpoint and re-seals
    with Ledger(work, key=key) as book, book.db.transaction() as tx:
        _without_triggers(book, tx)
        tx.execute("UPDATE audit_log SET answer = 'NO WIN' WHERE id = "
                   "(SELECT entry FROM audit_seal WHERE seq = 2)")  # fmt: skip
        _reseal(tx, book._log_key(), 1, GENESIS)
    alone = run_cli(*verify)
    assert alone.returncode == 0  # the key's holder can re-seal: only a checkpoint tells
    witnessed = run_cli(*verify, "--checkpoint", str(tmp_path / "one.json"))
    assert witnessed.returncode == 1 and "rewritten" in witnessed.stderr, witnessed.stderr
