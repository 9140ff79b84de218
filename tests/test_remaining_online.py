"""The signed prizes-remaining report of an online block (Golden Animals), on both databases:
its lots are won by plays, never paid at a terminal, so the report counts each
winning play's lot in its tier and carries its unit's inclusion proof, made from the ledger's
tree; ``verify-remaining`` checks them as it checks a printed block's payments, and says
"won" where it says "paid" of a printed block.  A report missing a lot, or with a lot changed,
fails; a ledger whose play no longer matches its unit writes no report."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.commitment.inclusion import parse_proof
from printpipe.commitment.remaining import Remaining, verify_remaining_file
from printpipe.errors import PrintpipeError
from printpipe.keys import (
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    PRODUCER_SIGNING_PUB,
    load_public_key,
    load_signing_key,
)
from printpipe.ledger import LOTTERY, Ledger, Location, configure, load_ledger_key
from printpipe.ledger.book import publish_remaining
from tests.ledger_helpers import db_arg, run_in_process
from tests.play_helpers import PlayWorld, make_block, make_world, play_many

pytestmark = pytest.mark.xdist_group("play")

PLAYERS = 8


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("remaining-online"), packs=1)  # 1,000 units


@pytest.fixture(scope="module")
def world(block, ledgers, tmp_path_factory) -> PlayWorld:
    """The block imported, players with money enough to play it out, nothing dealt."""
    w = make_world(block, ledgers.new(), tmp_path_factory.mktemp("remaining-world"),
                   players=PLAYERS, balance_eur=1000)  # fmt: skip
    configure(w.location, terminal=LOTTERY, daily_stake_limit_eur=100_000)
    return w


@pytest.fixture(scope="module")
def played(world, ledgers) -> Location:
    """A copy of the world's ledger with 300 of its 1,000 units played."""
    location = ledgers.copy(world.location)
    play_many(location, world.keys, 300, tag="some", players=PLAYERS)
    return location


def won_lots(world: PlayWorld, location: Location) -> dict[str, int]:
    """Each winning play's unit (its serial) and lot, as the ledger holds them."""
    from printpipe.ledger.store import ticket_of_key

    with Ledger(location, read_only=True) as book:
        rows = book.query("SELECT unit, lot_cents FROM plays WHERE lot_cents > 0")
    return {ticket_of_key(int(unit)).serial: int(cents) // 100 for unit, cents in rows}


def report(world: PlayWorld, location: Location, out: Path) -> Remaining:
    return publish_remaining(
        location,
        out=out,
        signing_key=load_signing_key(world.keys, LOTTERY_SIGNING_KEY),
        key=load_ledger_key(world.keys),
    )


def check(world: PlayWorld, out: Path) -> Remaining:
    return verify_remaining_file(
        report_path=out,
        commitment_path=world.block.commitment,
        producer_key=load_public_key(world.keys / PRODUCER_SIGNING_PUB),
        lottery_key=load_public_key(world.keys / LOTTERY_SIGNING_PUB),
    ).remaining


def test_the_report_counts_each_winning_play_and_verifies_offline(world, played, tmp_path):
    won = won_lots(world, played)
    assert 0 < len(won) < 300  # some plays won, some lost
    out = tmp_path / "remaining.txt"
    result = run_in_process(
        "ledger", "remaining", "--db", db_arg(played), "--keys", str(world.keys), "--out", str(out)
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{len(won):,} lots won by plays, " in result.stdout
    assert "paid" not in result.stdout.splitlines()[1]  # the table's columns: won, not paid
    checked = check(world, out)
    per_tier = Counter(won.values())
    assert {t.amount_eur: t.paid for t in checked.tiers if t.paid} == dict(per_tier)
    assert all(t.paid + t.remaining == t.committed for t in checked.tiers)
    proofs = [parse_proof(line) for line in out.read_bytes().splitlines(keepends=True)[3:]]
    assert {p.ticket.serial: p.ticket.prize_eur for p in proofs} == won
    assert [p.leaf_index for p in proofs] == sorted(p.leaf_index for p in proofs)  # unit order
    verified = run_in_process(
        "verify-remaining", str(out), "--commitment", str(world.block.commitment),
        "--keys", str(world.keys),
    )  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    first = verified.stdout.splitlines()[0]
    assert f"each of its {len(won):,} lots won by plays is proven" in first
    assert "won + remaining = committed" in first and "paid" not in first
    standing = run_in_process("ledger", "remaining", "--db", db_arg(played))  # without --out
    lots_left = standing.stdout.splitlines()[2].split()[-2]
    assert lots_left == f"{sum(t.remaining for t in checked.tiers):,}"


def test_a_report_of_a_block_nothing_was_played_of_lists_no_lot(world, ledgers, tmp_path):
    out = tmp_path / "remaining.txt"
    made = report(world, ledgers.copy(world.location), out)
    assert made.paid == 0 and check(world, out) == made
    assert len(out.read_bytes().splitlines()) == 3  # format, header, signature


def _tamper(lines: list[bytes], how: str) -> list[bytes]:
    if how == "a won lot missing":
        return lines[:3] + lines[4:]
    if how == "a won lot twice":
        return [*lines, lines[3]]
    if how == "a lot hidden from its tier":
        header = json.loads(lines[1])
        tier = next(t for t in header["tiers"] if t["paid"])
        tier["paid"] -= 1
        tier["remaining"] += 1
        header["paid"] -= 1
        return [lines[0], json.dumps(header).encode() + b"\n", *lines[2:]]
    proof = json.loads(lines[3])
    if how == "a lot's prize changed":
        proof["ticket"]["prize_eur"] = next(
            t["amount_eur"]
            for t in json.loads(lines[1])["tiers"]
            if t["amount_eur"] != proof["ticket"]["prize_eur"]
        )
    elif how == "a hash of its path changed":
        proof["audit_path"][0] = "00" * 32
    else:
        raise AssertionError(how)
    return [*lines[:3], json.dumps(proof).encode() + b"\n", *lines[4:]]


@pytest.mark.parametrize(
    "how",
    [
        "a won lot missing",
        "a won lot twice",
        "a lot hidden from its tier",
        "a lot's prize changed",
        "a hash of its path changed",
    ],
)
def test_a_changed_report_is_refused(world, played, tmp_path, how):
    out = tmp_path / "remaining.txt"
    report(world, played, out)
    changed = tmp_path / "changed.txt"
    changed.write_bytes(b"".join(_tamper(out.read_bytes().splitlines(keepends=True), how)))
    with pytest.raises(PrintpipeError, match=r"prizes-remaining report .* refused"):
        check(world, changed)


@pytest.mark.parametrize(
    ("cents", "refusal"),
    [(100, r"does not prove unit .* the ledger is damaged"),
     (50, r"play of unit \S+ has a lot of [\d,]+\.50 EUR, not whole euros: .* damaged")],
)  # fmt: skip
def test_a_play_whose_lot_was_changed_in_the_database_writes_no_report(
    world, played, ledgers, tmp_path, cents, refusal
):
    """A database writer gives a winning play another lot (another euro, or half of one more,
    which the lot's whole euros would hide): the ledger's proof of its unit does not lead to
    the committed root, or its lot is no whole euros, and it says so instead of signing a
    report."""
    location = ledgers.copy(played)
    with Ledger(location, key=load_ledger_key(world.keys)) as book, book.db.transaction() as tx:
        row = tx.one("SELECT id, lot_cents FROM plays WHERE lot_cents > 0 ORDER BY unit LIMIT 1")
        assert row is not None
        if book.db.dialect == "sqlite":  # what a database writer does first
            tx.execute("DROP TRIGGER plays_no_update")
        else:
            tx.execute("ALTER TABLE plays DISABLE TRIGGER USER")
        tx.execute("UPDATE plays SET lot_cents = ? WHERE id = ?", (int(row[1]) + cents, row[0]))
    out = tmp_path / "remaining.txt"
    with pytest.raises(PrintpipeError, match=refusal):
        report(world, location, out)
    assert not out.exists()


def test_without_the_ledger_key_an_online_block_gets_one_clear_line(world, played, tmp_path):
    folder = tmp_path / "keys"  # the lottery's signing key only
    folder.mkdir(mode=0o700)
    (folder / LOTTERY_SIGNING_KEY).write_bytes((world.keys / LOTTERY_SIGNING_KEY).read_bytes())
    (folder / LOTTERY_SIGNING_KEY).chmod(0o600)
    out = tmp_path / "remaining.txt"
    result = run_in_process(
        "ledger", "remaining", "--db", db_arg(played), "--keys", str(folder), "--out", str(out)
    )  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "the ledger key is needed to prove the lots won" in result.stderr
    assert not out.exists()


@given(sizes=st.lists(st.integers(1, 200), min_size=1, max_size=3))
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_after_any_plays_the_report_verifies_with_the_plays_won_per_tier(
    world, ledgers, tmp_path, sizes
):
    location = ledgers.copy(world.location)
    for n, size in enumerate(sizes):
        play_many(location, world.keys, size, tag=f"p{n}", players=PLAYERS)
        out = tmp_path / f"remaining-{n}.txt"
        made = report(world, location, out)
        assert check(world, out) == made
        won = Counter(won_lots(world, location).values())
        assert {t.amount_eur: t.paid for t in made.tiers if t.paid} == dict(won)
