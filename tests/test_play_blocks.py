"""Blocks that follow one another, on both databases: two small Golden Animals blocks imported
into one ledger take places 1 and 2 of its dealing order (recorded, MACed); any split of plays
deals block 1 then block 2, in their deal orders, none twice, each play naming its block (its
history line and its proof too); two workers go on to block 2 without a pause; sold out only
when block 2 is dealt out; ``ledger remaining`` per block; an order a database writer changed
is named by ``verify-log`` and not dealt from."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.ledger import LOTTERY, Ledger, PlayRequest, SoldOut, configure, load_ledger_key
from printpipe.ledger.plays import PlayUnavailable
from printpipe.play.server import open_dealer
from tests.ledger_helpers import db_arg, run_in_process
from tests.play_helpers import PlayWorld, import_next_block, make_block, make_world
from tests.storm import storm

pytestmark = pytest.mark.xdist_group("play")

UNITS = 1000
"""Units a block (one pack of Golden Animals)."""
LEFT_IN_FIRST = 12
"""Units of block 1 left to deal in the snapshot near the boundary."""
PLAYERS = 16


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("blocks"), packs=1)


@pytest.fixture(scope="module")
def world(block, ledgers, tmp_path_factory):
    """Block 1 then block 2 imported into one ledger, players with money and no daily limit
    that matters, nothing dealt."""
    w = make_world(block, ledgers.new(), tmp_path_factory.mktemp("blocks-world"),
                   players=PLAYERS, balance_eur=400)  # fmt: skip
    import_next_block(w, 2)
    configure(w.location, terminal=LOTTERY, daily_stake_limit_eur=100_000)
    return w


def deal(dealer, count: int, tag: str, *, batch: int = 128) -> list:
    """``count`` plays in batches of ``batch``, the players in turn: the outcomes in order."""
    outcomes = []
    for start in range(0, count, batch):
        requests = []
        for n in range(start, min(count, start + batch)):
            player = f"player-{n % PLAYERS:02d}"
            fingerprint = dealer.ledger.request_fingerprint(
                "POST", f"/v1/players/{player}/plays", b""
            )
            requests.append(PlayRequest(player, f"{tag}-{n}", fingerprint))
        outcomes += dealer.play_batch(requests)
    return outcomes


def plays_of(outcomes: list) -> list:
    """The plays made: every outcome must be one (no refusal)."""
    refused = [o for o in outcomes if not isinstance(o, tuple)]
    assert not refused, refused[:3]
    return [play for play, _ in outcomes]


@pytest.fixture(scope="module")
def near_boundary(world, ledgers):
    """A copy of the world's ledger with all but :data:`LEFT_IN_FIRST` units of block 1 dealt."""
    location = ledgers.copy(world.location)
    ledger, dealer = open_dealer(location, world.keys)
    with ledger:
        made = plays_of(deal(dealer, UNITS - LEFT_IN_FIRST, "before"))
    assert {p.block for p in made} == {1}
    return location


def remaining(location) -> str:
    result = run_in_process("ledger", "remaining", "--db", db_arg(location))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_each_block_imported_takes_the_next_place_in_the_dealing_order(world):
    rows = world.query(
        "SELECT c.block, d.place, d.mac FROM deal_orders d JOIN commitments c "
        "ON c.id = d.commitment ORDER BY d.commitment"
    )
    assert [(block, place) for block, place, _ in rows] == [(1, 1), (2, 2)]
    assert all(mac is not None for *_, mac in rows)
    answers = [a for (a,) in world.query(
        "SELECT answer FROM audit_log WHERE action = 'import' ORDER BY id")]  # fmt: skip
    assert "in place 1 of the ledger's dealing order (dealt first" in answers[0]
    assert (
        "in place 2 of the ledger's dealing order (dealt after the block in place 1" in (answers[1])
    )
    with Ledger(world.location, key=load_ledger_key(world.keys), read_only=True) as book:
        report = book.verify_log()
    assert report.ok, report.problems


@given(sizes=st.lists(st.integers(1, 2 * LEFT_IN_FIRST), min_size=1, max_size=4))
@settings(max_examples=10, deadline=None)
def test_any_split_of_plays_deals_block_1_then_block_2_in_their_orders(
    near_boundary, world, ledgers, sizes
):
    """Whatever batches the plays come in, the units dealt are block 1's last positions then
    block 2's first, each the unit its block's deal order deals there, none twice; each play,
    its history line and its proof name its block."""
    location = ledgers.copy(near_boundary)
    ledger, dealer = open_dealer(location, world.keys)
    with ledger:
        made = []
        for n, size in enumerate(sizes):
            made += plays_of(deal(dealer, size, f"split-{n}", batch=size))
        expected = [(1, p) for p in range(UNITS - LEFT_IN_FIRST, UNITS)] + [
            (2, p) for p in range(UNITS)
        ]
        assert [(p.block, p.position) for p in made] == expected[: len(made)]
        assert len({p.serial for p in made}) == len(made)
        for play in made:
            order, loaded = dealer._orders[play.commitment]
            assert order.leaf(play.position) == play.leaf
            assert loaded.commitment.block == play.block
        last = made[-1]
        history = dealer.history(player=last.player, limit=1)
        assert [(h.id, h.block) for h in history] == [(last.id, last.block)]
        proof = dealer.proof(player=last.player, play_id=last.id)
        assert proof.block == last.block and proof.ticket.serial == last.serial


def test_sold_out_only_when_the_last_block_is_dealt_out_and_remaining_per_block(
    near_boundary, world, ledgers
):
    location = ledgers.copy(near_boundary)
    text = remaining(location)
    assert f"2 blocks dealt in this order, 2,000 units: {UNITS - LEFT_IN_FIRST:,} dealt" in text
    # place, block, packs (3 words), units, dealt, left, lots left, EUR left; then the total
    lines = [line.split() for line in text.splitlines()[2:]]
    assert [line[:2] for line in lines[:2]] == [["1", "1"], ["2", "2"]]
    assert lines[0][6:8] == [f"{UNITS - LEFT_IN_FIRST:,}", f"{LEFT_IN_FIRST}"]
    assert lines[1][6:8] == ["0", "1,000"] and lines[2][:1] == ["total"]
    assert lines[2][2:4] == [f"{UNITS - LEFT_IN_FIRST:,}", f"{UNITS + LEFT_IN_FIRST:,}"]
    ledger, dealer = open_dealer(location, world.keys)
    with ledger:
        made = plays_of(deal(dealer, LEFT_IN_FIRST + 500, "half"))
        assert dealer.account(player="player-00")["units_left"] == 500
        text = remaining(location)
        lines = [line.split() for line in text.splitlines()[2:]]
        assert lines[0][6:8] == ["1,000", "0"] and lines[1][6:8] == ["500", "500"]
        made += plays_of(deal(dealer, 500, "rest"))  # none refused: block 2 is not out yet
        assert [p.block for p in made].count(2) == UNITS
        (last,) = deal(dealer, 1, "after")
        assert isinstance(last, SoldOut)
    text = remaining(location)
    assert "0 left to deal (sold out)" in text
    for line in text.splitlines()[2:]:  # every lot of each block credited, none left
        assert line.split()[-2:] == ["0", "0"], line


@pytest.mark.parametrize("backend", ["postgresql"], scope="module")  # production's concurrency
def test_two_workers_go_on_to_the_next_block_without_a_pause(
    near_boundary, world, ledgers, tmp_path
):
    """``printpipe play --workers 2``: a storm of plays across the boundary is answered whole
    (no refusal, no 503), each unit once, each answer naming the block of its serial; once
    quiet, the next play is the first block's if it has any left."""
    location = ledgers.copy(near_boundary)
    server = PlayWorld(world.block, location, tmp_path, world.platform, players=world.players)
    server.start(workers=2, args=["--witness", str(tmp_path / "witness")])  # its copy's own
    try:
        per_player = [[server.play_request(name) for _ in range(3)] for name in server.players]
        outcomes, _ = storm(server.url, per_player)
    finally:
        server.stop()
    assert [o.status if o else None for o in outcomes] == [201] * len(outcomes)
    answers = [json.loads(o.body) for o in outcomes if o]
    first_pack = {1: 1, 2: 1501}
    for answer in answers:  # the serial's pack: 000001 is block 1's, 001501 block 2's
        assert int(answer["serial"].split("-")[1]) == first_pack[answer["block"]], answer
    assert len({a["serial"] for a in answers}) == len(answers)
    assert {a["block"] for a in answers} == {1, 2}
    totals = server.check_books(sum(world.players.values()))
    assert totals["plays"] == UNITS - LEFT_IN_FIRST + len(answers)
    ledger, dealer = open_dealer(location, world.keys)
    with ledger:
        ((left,),) = ledger.query(
            "SELECT COALESCE(SUM(end_position - next_position), 0) FROM deal_ranges r "
            "JOIN deal_orders d ON d.commitment = r.commitment WHERE d.place = 1"
        )
        (play,) = plays_of(deal(dealer, 1, "quiet"))
        assert play.block == (1 if left else 2)


def test_an_order_a_database_writer_changed_is_named_and_not_dealt_from(world, ledgers, caplog):
    """Block 2 moved ahead of block 1 (their places swapped): ``verify-log`` names both, and
    the game server deals from neither (503, nothing debited, said in its log)."""
    location = ledgers.copy(world.location)
    key = load_ledger_key(world.keys)
    with Ledger(location, key=key) as book, book.db.transaction() as tx:
        tx.execute("UPDATE deal_orders SET place = place + 10")  # (one place each, always)
        tx.execute("UPDATE deal_orders SET place = CASE place WHEN 11 THEN 2 ELSE 1 END")
    ledger, dealer = open_dealer(location, world.keys)
    with ledger, caplog.at_level(logging.ERROR):
        before = dealer.account(player="player-00")["balance_cents"]
        (outcome,) = deal(dealer, 1, "tampered")
        assert isinstance(outcome, PlayUnavailable), outcome
        assert dealer.account(player="player-00")["balance_cents"] == before
    refusals = [r.getMessage() for r in caplog.records if "dealing order" in r.getMessage()]
    assert len(refusals) == 2 and "does not verify" in refusals[0], refusals  # once a block
    result = run_in_process("ledger", "verify-log", "--db", db_arg(location),
                            "--keys", str(world.keys))  # fmt: skip
    assert result.returncode == 1 and "in the dealing order (1) was edited" in result.stderr
    with Ledger(location, key=key, read_only=True) as book:
        problems = book.verify_log().problems
    for block, place in ((1, 2), (2, 1)):
        assert any(f"block {block} (packs" in p and f"dealing order ({place}) was edited" in p
                   for p in problems), problems  # fmt: skip
