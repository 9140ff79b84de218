"""The ledger's side of a block's commitment (issue 14, second part): the tree loaded with the
block manifest, each paid claim answered with its inclusion proof, ``prove`` for paid tickets
only, the signed prizes-remaining report checked offline, and a block's closure; every test on
both databases (SQLite and PostgreSQL: the ``backend`` fixture)."""

from __future__ import annotations

import datetime as dt
import io
import json
import sqlite3
import stat
import threading
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.commitment import COMMITMENT_FILE, load_commitment, make_proof, verify_proof_file
from printpipe.commitment.inclusion import parse_proof, proof_problem
from printpipe.commitment.merkle import TreeBuilder, audit_path, tree_levels
from printpipe.commitment.remaining import (
    Remaining,
    prize_tiers,
    proof_line,
    verify_remaining_file,
    write_remaining,
)
from printpipe.commitment.statement import verified_commitment
from printpipe.commitment.tree import store_levels, store_opening
from printpipe.errors import PrintpipeError
from printpipe.handover import BLOCK_MANIFEST, verify_manifest
from printpipe.keys import (
    LOTTERY_IDENTITY,
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    PRODUCER_SIGNING_PUB,
    load_lottery_identity,
    load_public_key,
    load_signing_key,
)
from printpipe.ledger import tree
from printpipe.ledger.book import Ledger, publish_remaining
from printpipe.ledger.importer import import_manifest
from printpipe.ledger.inputs import LOTTERY, TerminalId, parse_pack_ref
from printpipe.ledger.key import LedgerKey, load_ledger_key
from printpipe.ledger.store.sqlite import SCHEMA, SqliteTx
from printpipe.ledger.tree import (
    NODES_PER_ROW,
    TreeRows,
    read_leaf_and_path,
    read_leaves_and_paths,
    read_salt,
    read_salts_at,
)
from tests.conftest import run_cli
from tests.ledger_helpers import OFFICE_SCOPE, db_arg, generate_store, ticket_codes

OFFICE = TerminalId("office")


@pytest.fixture(scope="module")
def block(tmp_path_factory, game, keys_dir) -> Path:
    """Packs 1 to 8 with their manifest; the commitment countersigned by the lottery."""
    out = generate_store(game, keys_dir, tmp_path_factory.mktemp("lp") / "blk", PackRange(1, 8))
    run_cli(
        "commitment", "sign", str(out / COMMITMENT_FILE), "--manifest", str(out / BLOCK_MANIFEST),
        "--keys", str(keys_dir), "--quiet", check=True,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def keys(keys_dir):
    return load_public_key(keys_dir / PRODUCER_SIGNING_PUB), load_public_key(
        keys_dir / LOTTERY_SIGNING_PUB
    )


@pytest.fixture(scope="module")
def key(keys_dir) -> LedgerKey:
    return load_ledger_key(keys_dir)


def load(location, block: Path, keys_dir: Path, keys, key, *, commitment: bool = True) -> str:
    manifest = verify_manifest(block / BLOCK_MANIFEST, keys[0])
    from printpipe.games import load_game

    return import_manifest(
        location,
        manifest=manifest,
        game=load_game("chien-chat"),
        identity=load_lottery_identity(keys_dir / LOTTERY_IDENTITY),
        key=key,
        commitment=(
            verified_commitment(
                path=block / COMMITMENT_FILE, producer_key=keys[0], lottery_key=keys[1]
            )
            if commitment
            else None
        ),
    )


@pytest.fixture(scope="module")
def db(ledgers, block, keys_dir, keys, key):
    """The block and its commitment loaded, every pack activated."""
    location = ledgers.new()
    assert "its commitment" in load(location, block, keys_dir, keys, key)
    with Ledger(location, key=key) as book:
        book.set_pack_state(
            [parse_pack_ref(str(p)) for p in range(1, 9)],
            state="activated",
            terminal=LOTTERY,
            scope=OFFICE_SCOPE,
        )
    return location


@pytest.fixture(scope="module")
def winners(block, game) -> list[tuple[str, int, str]]:
    """(validation code, prize, serial) of every winning ticket of the block."""
    store = BlockStore.open(block)
    out = []
    for row in range(store.summary.tickets):
        ticket, code, _, prize = ticket_codes(store, game, row)
        if prize:
            out.append((code, prize, ticket.serial))
    assert len(out) > 150
    return out


# -- proofs answered by the ledger --------------------------------------------------------------


def test_a_paid_claim_is_answered_with_a_proof_that_verifies_offline(
    db, ledgers, block, winners, key, keys, tmp_path
):
    work = ledgers.copy(db)
    code, prize, serial = winners[0]
    with Ledger(work, key=key) as book:
        answer = book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE)
        assert answer.text == f"PAID {prize}"
        document = answer.as_json()["proof"]
        again = book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE)
        assert again.outcome == "ALREADY_PAID" and "proof" not in again.as_json()
        stored_serial, stored = book.prove(code, terminal=OFFICE)
    assert stored_serial == serial and json.loads(stored) == document
    assert document["ticket"] == {
        "serial": serial,
        "prize_eur": prize,
        "virn": code[13:23],
        "salt": document["ticket"]["salt"],
    }
    path = tmp_path / "proof.json"
    path.write_bytes(stored)
    verified = verify_proof_file(
        proof_path=path,
        commitment_path=block / COMMITMENT_FILE,
        producer_key=keys[0],
        lottery_key=keys[1],
    )
    assert verified.proof.ticket.prize_eur == prize
    assert len(verified.proof.audit_path) == 10  # ceil(log2(1,000))


def test_the_command_line_writes_the_proof_0600_and_anyone_checks_it(
    db, ledgers, block, winners, keys_dir, tmp_path
):
    work = ledgers.copy(db)
    code, prize, serial = winners[1]
    receipt = tmp_path / "receipt.json"
    paid = run_cli(
        "claim", code, "--db", db_arg(work), "--keys", str(keys_dir), "--terminal", "T1",
        "--proof-out", str(receipt),
    )  # fmt: skip
    assert paid.returncode == 0 and paid.stdout.startswith(f"PAID {prize}\n"), paid.stderr
    assert stat.S_IMODE(receipt.stat().st_mode) == 0o600
    proved = run_cli(
        "prove", code, "--db", db_arg(work), "--keys", str(keys_dir), cwd=tmp_path
    )  # fmt: skip
    assert proved.returncode == 0, proved.stderr
    written = tmp_path / f"proof-{serial}.json"
    assert written.read_bytes() == receipt.read_bytes()
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    check = run_cli(
        "verify-proof", str(written), "--commitment", str(block / COMMITMENT_FILE),
        "--keys", str(keys_dir),
    )  # fmt: skip
    assert check.returncode == 0 and f"proof OK: ticket {serial} wins {prize} EUR" in check.stdout


def test_a_proof_is_given_only_for_a_paid_ticket_and_every_request_is_logged(
    db, ledgers, winners, key, keys_dir, tmp_path
):
    work = ledgers.copy(db)
    code, _, serial = winners[2]
    wrong = code[:13] + f"{(int(code[13:23]) + 1) % 10**10:010d}" + code[23:]
    with Ledger(work, key=key) as book:
        with pytest.raises(PrintpipeError, match=f"ticket {serial} is not paid"):
            book.prove(code, terminal=OFFICE)
        book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE)
        from printpipe.ids import parse_validation_code

        if parse_validation_code(wrong) is not None:  # a check digit may refuse it first
            with pytest.raises(PrintpipeError, match="wrong validation number"):
                book.prove(wrong, terminal=OFFICE)
        assert book.prove(code, terminal=OFFICE)[0] == serial
        logged = [a for (a,) in book.query("SELECT answer FROM audit_log WHERE action = 'prove'")]
        assert logged[0].startswith("REFUSED ticket") and logged[-1] == "PROOF GIVEN"
        assert book.verify_log().ok
    bad = run_cli("prove", "0412", "--db", db_arg(work), "--keys", str(keys_dir), cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert not list(tmp_path.glob("proof-*"))


@given(data=st.data())
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_changing_any_field_of_a_ledger_proof_fails(ledger_proof, block, data):
    proof, document = ledger_proof
    commitment = load_commitment(block / COMMITMENT_FILE)
    assert proof_problem(proof, commitment) is None
    changed = json.loads(json.dumps(document))
    field = data.draw(
        st.sampled_from(["serial", "prize_eur", "virn", "salt", "path", "root", "leaf_index"])
    )
    if field in ("serial", "virn", "salt"):
        text = changed["ticket"][field]
        at = data.draw(st.integers(0, len(text) - 1))
        alphabet = "0123456789" if field != "salt" else "0123456789abcdef"
        digit = data.draw(st.sampled_from([c for c in alphabet if c != text[at]]))
        if field == "serial" and text[at] == "-":
            return
        changed["ticket"][field] = text[:at] + digit + text[at + 1 :]
    elif field == "prize_eur":
        changed["ticket"]["prize_eur"] = data.draw(
            st.sampled_from(sorted(commitment.tier_amounts() - {proof.ticket.prize_eur}))
        )
    elif field == "path":
        at = data.draw(st.integers(0, len(changed["audit_path"]) - 1))
        flipped = bytearray.fromhex(changed["audit_path"][at])
        flipped[data.draw(st.integers(0, 31))] ^= 1 << data.draw(st.integers(0, 7))
        changed["audit_path"][at] = flipped.hex()
    elif field == "root":
        changed["root"] = ("0" if changed["root"][0] != "0" else "1") + changed["root"][1:]
    else:
        changed["leaf_index"] = data.draw(
            st.integers(0, commitment.tickets - 1).filter(lambda i: i != proof.leaf_index)
        )
    try:
        tampered = parse_proof(json.dumps(changed).encode())
    except PrintpipeError:
        return  # refused as malformed: fails too
    assert proof_problem(tampered, commitment) is not None


@pytest.fixture(scope="module")
def ledger_proof(db, ledgers, winners, key):
    work = ledgers.copy(db)
    code, _, _ = winners[3]
    with Ledger(work, key=key) as book:
        document = book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE).as_json()["proof"]
    return parse_proof(json.dumps(document).encode()), document


# -- loading the tree ---------------------------------------------------------------------------


def test_payments_made_before_the_commitment_was_loaded_get_their_proofs_then(
    ledgers, block, winners, keys_dir, keys, key
):
    location = ledgers.new()
    load(location, block, keys_dir, keys, key, commitment=False)
    code, prize, serial = winners[4]
    with Ledger(location, key=key) as book:
        book.set_pack_state(
            [parse_pack_ref(serial[5:11])], state="activated", terminal=LOTTERY, scope=OFFICE_SCOPE
        )
        answer = book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE)
        assert answer.text == f"PAID {prize}" and "proof" not in answer.as_json()
        with pytest.raises(PrintpipeError, match="holds no commitment of its block"):
            book.prove(code, terminal=OFFICE)
    summary = load(location, block, keys_dir, keys, key)
    assert "(0 new)" in summary and "the 1 made before included" in summary
    again = load(location, block, keys_dir, keys, key)
    assert "already imported with its commitment" in again
    with Ledger(location, key=key) as book:
        _, proof = book.prove(code, terminal=OFFICE)
    assert parse_proof(proof).ticket.serial == serial


def test_a_commitment_its_manifest_does_not_rebuild_is_refused_with_the_whole_import(
    ledgers, block, game, keys_dir, keys, key, tmp_path
):
    other = generate_store(game, keys_dir, tmp_path / "other", PackRange(1, 8), block=2)
    location = ledgers.new()
    result = run_cli(
        "ledger", "import", str(other / BLOCK_MANIFEST), "--keys", str(keys_dir),
        "--db", db_arg(location), "--commitment", str(block / COMMITMENT_FILE), "-q",
    )  # fmt: skip
    assert result.returncode == 1 and "is not of its game, definition, block and packs" in (
        result.stderr
    )
    unsigned = run_cli(
        "ledger", "import", str(other / BLOCK_MANIFEST), "--keys", str(keys_dir),
        "--db", db_arg(location), "--commitment", str(other / COMMITMENT_FILE), "-q",
    )  # fmt: skip
    assert unsigned.returncode == 1 and "not signed by the lottery" in unsigned.stderr
    from tests.ledger_helpers import ledger_exists

    assert not ledger_exists(location)


# -- prizes remaining ---------------------------------------------------------------------------


def report(location, keys_dir: Path, out: Path):
    return publish_remaining(
        location, out=out, signing_key=load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    )


def check(out: Path, block: Path, keys):
    return verify_remaining_file(
        report_path=out,
        commitment_path=block / COMMITMENT_FILE,
        producer_key=keys[0],
        lottery_key=keys[1],
    ).remaining


def test_remaining_agrees_with_the_payments_and_verifies_offline(
    db, ledgers, block, winners, key, keys_dir, keys, tmp_path
):
    work = ledgers.copy(db)
    commitment = load_commitment(block / COMMITMENT_FILE)
    chosen = winners[5:45:3]
    with Ledger(work, key=key) as book:
        for code, _, _ in chosen:
            assert book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE).outcome == "PAID"
        payments = dict(book.query("SELECT amount_eur, COUNT(*) FROM payments GROUP BY amount_eur"))
    out = tmp_path / "remaining.txt"
    made = report(work, keys_dir, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    checked = check(out, block, keys)
    assert checked == made
    committed = {t.amount_eur: t.tickets for t in commitment.tiers if t.amount_eur}
    for tier in checked.tiers:
        assert tier.paid == payments.get(tier.amount_eur, 0)
        assert tier.committed == committed[tier.amount_eur]
        assert tier.paid + tier.remaining == tier.committed
    assert checked.paid == len(chosen)
    lines = out.read_bytes().splitlines(keepends=True)
    serials = {parse_proof(line).ticket.serial for line in lines[3:]}
    assert serials == {serial for _, _, serial in chosen}
    cli = run_cli(
        "verify-remaining", str(out), "--commitment", str(block / COMMITMENT_FILE),
        "--keys", str(keys_dir),
    )  # fmt: skip
    assert cli.returncode == 0 and "prizes remaining OK" in cli.stdout, cli.stderr
    standing = run_cli("ledger", "remaining", "--db", db_arg(work))  # without --out: per block
    assert standing.returncode == 0, standing.stderr
    head, _, row, total = standing.stdout.splitlines()
    assert f"1 block, {commitment.tickets:,} tickets" in head
    assert row.split()[:2] == ["-", str(commitment.block)]  # no place: a printed block
    lots_left = sum(committed.values()) - len(chosen)
    eur_left = sum(t.amount_eur * t.tickets for t in commitment.tiers) - sum(
        amount * count for amount, count in payments.items()
    )
    assert row.split()[-4:] == ["-", "-", f"{lots_left:,}", f"{eur_left:,}"]  # dealt, left
    assert total.split()[-2:] == [f"{lots_left:,}", f"{eur_left:,}"]


def _tamper(lines: list[bytes], how: str) -> list[bytes]:
    header = json.loads(lines[1])
    if how == "drop a paid lot":
        return lines[:3] + lines[4:]
    if how == "repeat a paid lot":
        return [*lines, lines[3]]
    if how == "hide a payment":
        tier = next(t for t in header["tiers"] if t["paid"])
        tier["paid"] -= 1
        tier["remaining"] += 1
        header["paid"] -= 1
        return [
            lines[0],
            json.dumps(header, sort_keys=True, separators=(",", ":")).encode() + b"\n",
            *lines[2:],
        ]
    if how == "change a prize":
        proof = json.loads(lines[3])
        proof["ticket"]["prize_eur"] = 10 if proof["ticket"]["prize_eur"] != 10 else 4
        return [*lines[:3], json.dumps(proof).encode() + b"\n", *lines[4:]]
    raise AssertionError(how)


@pytest.mark.parametrize(
    "how", ["drop a paid lot", "repeat a paid lot", "hide a payment", "change a prize"]
)
def test_a_changed_report_is_refused(
    db, ledgers, block, winners, key, keys_dir, keys, tmp_path, how
):
    work = ledgers.copy(db)
    with Ledger(work, key=key) as book:
        for code, _, _ in winners[50:53]:
            book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE)
    out = tmp_path / "remaining.txt"
    report(work, keys_dir, out)
    changed = tmp_path / "changed.txt"
    changed.write_bytes(b"".join(_tamper(out.read_bytes().splitlines(keepends=True), how)))
    with pytest.raises(PrintpipeError, match="refused"):
        check(changed, block, keys)


def test_remaining_stays_consistent_under_concurrent_claims(
    db, ledgers, block, winners, key, keys_dir, keys, tmp_path
):
    """Reports taken while 8 threads pay: each holds exactly the payments logged before its
    audit-log head, and checks out offline."""
    work = ledgers.copy(db)
    codes = [code for code, _, _ in winners[60:140]]
    errors: list[BaseException] = []

    def pay(share: list[str], name: str) -> None:
        try:
            with Ledger(work, key=key) as book:
                for code in share:
                    book.claim(code, terminal=TerminalId(name), scope=OFFICE_SCOPE)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=pay, args=(codes[i::8], f"T{i}")) for i in range(8)]
    for thread in threads:
        thread.start()
    reports: list[Path] = []
    while any(t.is_alive() for t in threads) or len(reports) < 2:
        out = tmp_path / f"r{len(reports)}.txt"
        report(work, keys_dir, out)
        reports.append(out)
    for thread in threads:
        thread.join()
    assert not errors, errors
    reports.append(tmp_path / "after.txt")
    report(work, keys_dir, reports[-1])
    with Ledger(work, key=key) as book:
        log = book.query(
            "SELECT s.seq, l.ticket FROM audit_log l JOIN audit_seal s ON s.entry = l.id "
            "WHERE l.action = 'claim' AND l.answer LIKE 'PAID %'"
        )
        paid = {serial for _, serial in log}
        assert book.query("SELECT COUNT(*) FROM payments")[0][0] == len(codes)
    for out in reports:
        remaining = check(out, block, keys)
        lines = out.read_bytes().splitlines(keepends=True)[3:]
        listed = {parse_proof(line).ticket.serial for line in lines}
        logged = {serial for seq, serial in log if seq <= remaining.audit_entries}
        assert logged <= listed <= paid  # sealed before it: in it; the claims meanwhile may be
    assert check(reports[-1], block, keys).paid == len(codes)


# -- closure ------------------------------------------------------------------------------------


def test_a_closed_block_pays_nothing_after_its_day(db, ledgers, winners, key, keys_dir, tmp_path):
    work = ledgers.copy(db)
    code, _, serial = winners[150]
    day = dt.datetime(2027, 3, 31, 12, tzinfo=dt.UTC)
    with Ledger(work, key=key, clock=lambda: day) as book:
        with pytest.raises(PrintpipeError, match="after today"):
            book.close_block(closed_on=dt.date(2027, 4, 1), terminal=LOTTERY)
        assert "closed on 2027-03-31" in book.close_block(
            closed_on=dt.date(2027, 3, 31), terminal=LOTTERY
        )
        assert book.claim(code, terminal=OFFICE, scope=OFFICE_SCOPE).outcome == "PAID"  # that day
        with pytest.raises(PrintpipeError, match="a closure is final"):
            book.close_block(closed_on=dt.date(2027, 3, 30), terminal=LOTTERY)
    later = day + dt.timedelta(days=1)
    with Ledger(work, key=key, clock=lambda: later) as book:
        before = book.query("SELECT COUNT(*) FROM payments")
        answer = book.claim(winners[151][0], terminal=OFFICE, scope=OFFICE_SCOPE)
        assert answer.text == "BLOCK CLOSED 2027-03-31" and not answer.ok
        assert book.query("SELECT COUNT(*) FROM payments") == before
    assert report(work, keys_dir, tmp_path / "r.txt").closed_on == "2027-03-31"
    with Ledger(work, key=key) as book:
        closed = book.query("SELECT answer FROM audit_log WHERE action = 'close'")
    assert closed == [
        (
            "chien-chat block 1 (packs 000001 to 000008): closed on 2027-03-31; "
            "no ticket of it is paid after that day",
        )
    ]
    assert serial not in closed[0][0]


# -- the stored tree: properties ----------------------------------------------------------------


def _memory_tx() -> SqliteTx:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(SCHEMA)
    return SqliteTx(conn)


@given(
    size=st.integers(1, 3 * NODES_PER_ROW + 5),
    cuts=st.lists(st.integers(1, 70), max_size=6),
    data=st.data(),
)
@settings(max_examples=60)
def test_the_stored_rows_give_every_leaf_its_path_and_salt(size, cuts, data):
    """Whatever the batches, the rows give back each leaf's hash, audit path and salt."""
    rng = np.random.default_rng(size)
    hashes = rng.integers(0, 256, (size, 32), dtype=np.uint8)
    salts = rng.integers(0, 256, (size, 32), dtype=np.uint8)
    key = LedgerKey(bytes(range(32)))
    tx = _memory_tx()
    rows = TreeRows(tx, commitment=7, key=key, salt_nonce=b"n" * 8)
    builder = TreeBuilder(on_nodes=rows)
    at = 0
    for cut in [*cuts, size]:
        end = min(size, at + cut)
        builder.add(hashes[at:end])
        rows.add_salts(salts[at:end])
        at = end
    builder.root()
    rows.finish()
    levels = tree_levels(hashes)
    for index in data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=5)):
        own, path = read_leaf_and_path(tx, commitment=7, index=index, size=size)
        assert own == bytes(hashes[index]) and path == audit_path(levels, index)
        salt = read_salt(tx, commitment=7, index=index, key=key, salt_nonce=b"n" * 8)
        assert salt == bytes(salts[index])
    # a page of leaves at once (a report's): each row read once, in statements of a few rows
    # here (of hundreds in use), the same answers in order
    page = data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=3 * size))
    with (
        mock.patch.object(tree, "_PAIRS_PER_STATEMENT", 3),
        mock.patch.object(tree, "_CHUNKS_PER_STATEMENT", 2),
    ):
        found = read_leaves_and_paths(tx, commitment=7, indices=page, size=size)
        opened = read_salts_at(tx, commitment=7, indices=page, key=key, salt_nonce=b"n" * 8)
    assert found == [(bytes(hashes[i]), audit_path(levels, i)) for i in page]
    assert opened == [bytes(salts[i]) for i in page]
    sealed = tx.execute("SELECT sealed FROM sealed_salts")
    assert all(bytes(salts[0]) not in bytes(s) for (s,) in sealed)  # never in clear
    other = LedgerKey(bytes(32))
    with pytest.raises(PrintpipeError, match="do not open with this ledger key"):
        read_salt(tx, commitment=7, index=0, key=other, salt_nonce=b"n" * 8)


# -- the report's invariants, without a ledger --------------------------------------------------


@pytest.fixture(scope="module")
def block_proofs(block, game):
    """Every winning ticket's proof, from the store's own tree."""
    store = BlockStore.open(block)
    commitment = load_commitment(block / COMMITMENT_FILE)
    levels = store_levels(store, game.definition)
    out = []
    for index in range(commitment.tickets):
        opening = store_opening(store, game.definition, index)
        if opening.prize_eur:
            out.append(make_proof(commitment, opening, audit_path(levels, index)))
    return commitment, out


@given(data=st.data())
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_paid_subset_makes_a_report_that_verifies_and_any_changed_byte_fails(
    block_proofs, keys_dir, keys, tmp_path_factory, data
):
    commitment, proofs = block_proofs
    chosen = sorted(
        data.draw(st.sets(st.integers(0, len(proofs) - 1), max_size=30)),
    )
    paid: dict[int, int] = {}
    lines = io.BytesIO()
    for i in chosen:
        proof = proofs[i]
        paid[proof.ticket.prize_eur] = paid.get(proof.ticket.prize_eur, 0) + 1
        lines.write(proof_line(proof.to_json()))
    remaining = Remaining(
        commitment=commitment,
        at="2026-11-30T12:00:00Z",
        audit_entries=len(chosen),
        audit_head=bytes(32),
        closed_on=None,
        tiers=prize_tiers(commitment, paid),
    )
    folder = tmp_path_factory.mktemp("report")
    out = folder / "remaining.txt"
    write_remaining(
        out=out,
        remaining=remaining,
        proof_lines=lines,
        signing_key=load_signing_key(keys_dir, LOTTERY_SIGNING_KEY),
    )
    commitment_path = folder / COMMITMENT_FILE
    commitment_path.write_bytes(commitment.to_json())
    checked = verify_remaining_file(
        report_path=out, commitment_path=commitment_path, producer_key=keys[0], lottery_key=keys[1]
    ).remaining
    assert checked == remaining
    prize_tiers_committed = [t for t in commitment.tiers if t.amount_eur]
    for tier, committed in zip(checked.tiers, prize_tiers_committed, strict=True):
        assert tier.paid + tier.remaining == committed.tickets == tier.committed
    body = bytearray(out.read_bytes())
    at = data.draw(st.integers(0, len(body) - 1))
    body[at] ^= 1 << data.draw(st.integers(0, 6))
    changed = folder / "changed.txt"
    changed.write_bytes(bytes(body))
    with pytest.raises(PrintpipeError):
        verify_remaining_file(
            report_path=changed,
            commitment_path=commitment_path,
            producer_key=keys[0],
            lottery_key=keys[1],
        )
