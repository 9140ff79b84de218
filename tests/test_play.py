"""The game server in process, on both databases: the deal order (a keyed permutation, fixed
and recorded at import), a play's money and idempotency, the daily stake limit, a sold-out
block, a play's proof checked by ``printpipe verify-proof``, and the demo's cookie session
(HttpOnly, SameSite=Strict, refused from another site)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from printpipe.commitment import load_commitment
from printpipe.errors import InvalidInput
from printpipe.ledger import (
    DailyLimitReached,
    InsufficientFunds,
    KeyReused,
    Ledger,
    NoSuchPlayer,
    SoldOut,
    load_ledger_key,
    parse_euros,
)
from printpipe.ledger.deal import DEAL_PURPOSE, DIGEST_PURPOSE, DealOrder, deal_key, order_mac
from printpipe.ledger.plays import LoginExpired
from printpipe.play.app import create_app
from printpipe.play.launch import make_launch_token
from printpipe.play.server import open_dealer
from printpipe.service.signatures import RequestSigner
from tests.ledger_helpers import db_arg, run_in_process
from tests.play_helpers import make_block, make_world
from tests.service_helpers import register_terminal

pytestmark = pytest.mark.xdist_group("play")


@given(units=st.integers(1, 5000), key=st.binary(min_size=32, max_size=32))
@settings(max_examples=40)
def test_the_deal_order_is_a_permutation_and_its_inverse(units, key):
    order = DealOrder(key, units)
    leaves = order.leaves(np.arange(units))
    assert sorted(leaves.tolist()) == list(range(units))
    assert order.positions(leaves).tolist() == list(range(units))
    some = range(0, units, max(1, units // 50))
    assert [order.leaf(p) for p in some] == leaves[list(some)].tolist()  # one at a time, alike


def test_the_deal_order_depends_on_the_key():
    one, two = DealOrder(bytes(32), 1000), DealOrder(b"\x01" * 32, 1000)
    assert one.leaves(np.arange(20)).tolist() != two.leaves(np.arange(20)).tolist()
    key, root = b"k" * 32, b"r" * 32
    assert order_mac(one, key, root) != order_mac(two, key, root)
    assert order_mac(one, key, root) == order_mac(DealOrder(bytes(32), 1000), key, root)
    assert order_mac(one, key, root) != order_mac(one, b"x" * 32, root)


@pytest.mark.parametrize("text", ["20", "20.5", "20,50", "0.05"])
def test_amounts_in_euros(text):
    assert parse_euros(text) == round(float(text.replace(",", ".")) * 100)


@pytest.mark.parametrize("text", ["", "-1", "1.234", "1e3", "twenty", "1" * 14])
def test_bad_amounts_are_refused(text):
    with pytest.raises(InvalidInput):
        parse_euros(text)


@pytest.fixture(scope="module")
def block(tmp_path_factory):
    return make_block(tmp_path_factory.mktemp("play-unit-block"), packs=1)


@pytest.fixture(scope="module")
def world(block, ledgers, tmp_path_factory):
    return make_world(
        block, ledgers.new(), tmp_path_factory.mktemp("play-unit"), players=3, balance_eur=5
    )


@pytest.fixture
def dealer(world):
    ledger, dealer = open_dealer(world.location, world.keys)
    yield dealer
    ledger.close()


def fingerprint(dealer, player: str) -> bytes:
    return dealer.ledger.request_fingerprint("POST", f"/v1/players/{player}/plays", b"")


def test_the_import_fixes_and_records_the_deal_order(world):
    (row,) = world.query("SELECT order_mac, units FROM deal_orders")
    commitment = load_commitment(world.block.commitment)
    key = load_ledger_key(world.keys)
    order = DealOrder(deal_key(key.derive(DEAL_PURPOSE), commitment.root), commitment.tickets)
    digest = order_mac(order, key.derive(DIGEST_PURPOSE), commitment.root)
    assert row == (digest, 1000)  # an auditor with the key replays it
    (logged,) = world.query("SELECT answer FROM audit_log WHERE action = 'import'")
    assert row[0] in logged[0]


def test_a_play_debits_once_deals_the_next_unit_and_credits_its_lot(world, dealer):
    units = world.block.feed_units()
    fp = fingerprint(dealer, "player-00")
    before = dealer.account(player="player-00")["balance_cents"]
    play, replayed = dealer.play(player="player-00", key="first-play-key", fingerprint=fp)
    assert not replayed and units[play.serial][2] == play.lot_eur
    assert play.balance_cents == before - 100 + 100 * play.lot_eur
    order = dealer._orders[play.commitment][0]
    assert order.leaf(play.position) == play.leaf
    again, replayed = dealer.play(player="player-00", key="first-play-key", fingerprint=fp)
    assert replayed and again == play  # the same unit, not debited again
    assert dealer.account(player="player-00")["balance_cents"] == play.balance_cents
    with pytest.raises(KeyReused):
        dealer.play(player="player-00", key="first-play-key", fingerprint=b"another" * 4)
    with pytest.raises(NoSuchPlayer):
        dealer.play(player="nobody", key="some-play-key", fingerprint=fp)
    world.check_books(sum(world.players.values()))


def test_a_play_the_balance_does_not_cover_changes_nothing(world, dealer):
    dealer.add_player(player="poor", balance_cents=50, by="test")
    world.players["poor"] = 50
    before = world.totals()
    with pytest.raises(InsufficientFunds):
        dealer.play(player="poor", key="poor-play-key", fingerprint=fingerprint(dealer, "poor"))
    assert world.totals() == before


def test_the_daily_stake_limit(world, dealer):
    result = run_in_process("ledger", "config", "--db", db_arg(world.location),
                            "--daily-stake-limit", "2")  # fmt: skip
    assert result.returncode == 0 and "stakes at most 2 EUR a day" in result.stdout
    dealer.ledger.reload_settings()
    fp = fingerprint(dealer, "player-01")
    for i in range(2):
        dealer.play(player="player-01", key=f"limit-key-{i}", fingerprint=fp)
    before = world.totals()
    with pytest.raises(DailyLimitReached):
        dealer.play(player="player-01", key="limit-key-2", fingerprint=fp)
    assert world.totals() == before
    run_in_process("ledger", "config", "--db", db_arg(world.location), "--daily-stake-limit", "100")


def test_a_plays_proof_holds_for_anyone_offline(world, dealer, tmp_path):
    fp = fingerprint(dealer, "player-02")
    play, _ = dealer.play(player="player-02", key="proof-play-key", fingerprint=fp)
    proof = dealer.proof(player="player-02", play_id=play.id)
    assert proof.ticket.serial == play.serial and proof.ticket.prize_eur == play.lot_eur
    path = tmp_path / "proof.json"
    path.write_bytes(proof.to_json())
    result = run_in_process("verify-proof", str(path), "--commitment", str(world.block.commitment),
                            "--keys", str(world.keys))  # fmt: skip
    assert result.returncode == 0, result.stderr
    wins = f"wins {play.lot_eur} EUR" if play.lot_eur else "wins nothing"
    assert f"proof OK: ticket {play.serial} {wins}" in result.stdout


@given(steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), min_size=1, max_size=8))
@settings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_sequence_of_plays_and_retries_keeps_the_books(world, dealer, steps):
    salt = os.urandom(4).hex()
    seen: dict[tuple[int, int], str] = {}
    for who, key in steps:
        player = f"player-{who:02d}"
        try:
            play, replayed = dealer.play(
                player=player, key=f"prop-{salt}-{key}", fingerprint=fingerprint(dealer, player)
            )
        except (InsufficientFunds, DailyLimitReached):
            continue
        assert replayed == ((who, key) in seen)
        assert seen.setdefault((who, key), play.id) == play.id
    world.check_books(sum(world.players.values()))


def test_a_sold_out_block_says_so_and_debits_nothing(world, ledgers, block, tmp_path):
    sold = make_world(block, ledgers.new(), tmp_path / "sold", players=1, balance_eur=5)
    ledger, dealer = open_dealer(sold.location, sold.keys)
    with ledger, ledger.db.transaction() as tx:  # as if 999 units had been dealt
        tx.execute("DELETE FROM deal_ranges WHERE end_position < 1000")
        tx.execute("UPDATE deal_ranges SET next_position = 999")
    ledger, dealer = open_dealer(sold.location, sold.keys)
    with ledger:
        fp = fingerprint(dealer, "player-00")
        play, _ = dealer.play(player="player-00", key="last-unit-key", fingerprint=fp)
        assert play.position == 999
        before = dealer.account(player="player-00")
        with pytest.raises(SoldOut, match="sold out"):
            dealer.play(player="player-00", key="after-the-last", fingerprint=fp)
        assert dealer.account(player="player-00") == {**before, "units_left": 0}


def _play_row(book, play_id: str) -> tuple:
    (row,) = book.query(f"SELECT {PLAY_COLUMNS} FROM plays WHERE id = ?", (play_id,))
    return row


PLAY_COLUMNS = ("id, player, idempotency_key, fingerprint, unit, commitment, position, "
                "stake_cents, lot_cents, balance_cents, day, played_at, mac, "
                "jackpot_cents")  # fmt: skip
PUT_BACK = f"INSERT INTO plays ({PLAY_COLUMNS}) VALUES ({', '.join('?' * 14)})"


def test_verify_log_names_a_play_edited_deleted_or_inserted_by_a_database_writer(world, ledgers):
    """Each play is entered in the audit log by its own transaction.  Someone with write
    access to the database (the append-only triggers dropped) but not the ledger key raises a
    lot, deletes a play, or deals a unit with no entry: ``verify-log`` names each (exit 1, one
    line), and passes again once it is put back."""
    work = ledgers.copy(world.location)
    key = load_ledger_key(world.keys)
    ledger, dealer = open_dealer(work, world.keys)
    with ledger:
        dealer.add_player(player="tampered", balance_cents=1000, by="test")
        fp = fingerprint(dealer, "tampered")
        made = [dealer.play(player="tampered", key=f"tamper-{n}-key", fingerprint=fp)[0]
                for n in range(3)]  # fmt: skip
    verify = ["ledger", "verify-log", "--db", db_arg(work), "--keys", str(world.keys)]
    untouched = run_in_process(*verify)
    assert untouched.returncode == 0, untouched.stderr
    with Ledger(work, key=key) as book:
        (plays,) = book.query("SELECT COUNT(*) FROM plays")
        assert f"{plays[0]} plays to theirs" in untouched.stdout, untouched.stdout
        (entry,) = book.query("SELECT terminal, input, answer FROM audit_log WHERE answer LIKE ?",
                              (f"PLAY id={made[0].id} %",))  # fmt: skip
        assert (
            entry[:2] == ("session", "tampered")
            and f"lot_cents={made[0].lot_eur * 100}" in entry[2]
        )
        kept = _play_row(book, made[1].id)
        (undealt,) = book.query("SELECT MIN(id) FROM units WHERE id NOT IN "
                                "(SELECT unit FROM plays)")  # fmt: skip
        with book.db.transaction() as tx:
            if book.db.dialect == "sqlite":
                tx.execute("DROP TRIGGER plays_no_update")
                tx.execute("DROP TRIGGER plays_no_delete")
            else:
                tx.execute("ALTER TABLE plays DISABLE TRIGGER USER")
    forged = (f"{'f' * 32}", "tampered", "forged-key", kept[3], undealt[0], kept[5], 10**6,
              *kept[7:])  # fmt: skip
    tamperings = [
        ("UPDATE plays SET lot_cents = lot_cents + 500000 WHERE id = ?", (made[0].id,),
         "does not match its entry",
         "UPDATE plays SET lot_cents = lot_cents - 500000 WHERE id = ?", (made[0].id,)),
        ("DELETE FROM plays WHERE id = ?", (made[1].id,), "was deleted", PUT_BACK, kept),
        (PUT_BACK, forged, "has no entry in the log", "DELETE FROM plays WHERE id = ?",
         (forged[0],)),
    ]  # fmt: skip
    for sql, params, named, undo, undo_params in tamperings:
        with Ledger(work, key=key) as book, book.db.transaction() as tx:
            tx.execute(sql, params)
        result = run_in_process(*verify)
        assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1, result
        assert named in result.stderr and "play" in result.stderr, result.stderr
        with Ledger(work, key=key) as book, book.db.transaction() as tx:
            tx.execute(undo, undo_params)
        assert run_in_process(*verify).returncode == 0  # put back, it passes again


def test_the_demo_session_cookie_and_cross_site_requests(world):
    ledger, dealer = open_dealer(world.location, world.keys)
    token = dealer.add_player(player="cookie", balance_cents=500, by="test")
    world.players["cookie"] = 500
    app = create_app(ledger, dealer, threads=1, demo=True)
    with TestClient(app, base_url="http://play.test") as client:
        assert client.get("/v1/me").status_code == 401
        response = client.post("/v1/sessions", json={"token": token})
        assert response.status_code == 201 and response.json() == {"player": "cookie"}
        cookie = response.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        again = client.post("/v1/sessions", json={"token": token})  # once: the page says so
        assert again.status_code == 409 and again.json()["error"] == "login_used"
        unknown = client.post("/v1/sessions", json={"token": "y" * 20})
        assert unknown.status_code == 409 and unknown.json()["error"] == "login_unknown"
        assert client.get("/v1/me").json() == {"player": "cookie"}
        plays = "/v1/players/cookie/plays"
        key = {"Idempotency-Key": "cookie-play-1"}
        for headers, status in (
            ({**key, "Origin": "http://evil.test"}, 403),
            ({**key, "Sec-Fetch-Site": "cross-site"}, 403),
        ):
            assert client.post(plays, json={}, headers=headers).status_code == status
        form = client.post(plays, content=b"", headers={**key, "Content-Type": "text/plain"})
        assert form.status_code == 415
        assert client.get("/v1/players/player-00/plays").status_code == 403  # not hers
        made = client.post(plays, json={}, headers={**key, "Origin": "http://play.test"})
        assert made.status_code == 201 and made.json()["stake_cents"] == 100
        assert client.get(plays).json()["plays"][0]["play"] == made.json()["play"]
        assert (
            client.delete("/v1/sessions", headers={"Content-Type": "application/json"}).status_code
            == 200
        )
        assert client.get(plays).status_code == 401
        page = client.get("/")
        assert (
            "Content-Security-Policy" in page.headers
            and '<script src="/static/play.js"' in page.text
        )
    ledger3, dealer3 = open_dealer(world.location, world.keys)
    try:
        late = dealer3.add_player(player="late", balance_cents=0, by="test")
        world.players["late"] = 0
        opened_at = dealer3.clock()
        dealer3.clock = lambda: opened_at + dt.timedelta(hours=25)  # past the link's 24 h
        with pytest.raises(LoginExpired):
            dealer3.start_session(login_token=late)
    finally:
        ledger3.close()
    world.check_books(sum(world.players.values()))
    ledger2, dealer2 = open_dealer(world.location, world.keys)
    with TestClient(create_app(ledger2, dealer2, threads=1, demo=False)) as client:
        assert client.post("/v1/sessions", json={"token": "x" * 20}).status_code == 404
    with world.ledger() as book:  # only the login token's hash is kept, and it is spent
        stored = book.query(
            "SELECT used_at FROM player_logins WHERE token_hash = ?",
            (hashlib.sha256(token.encode()).digest(),),
        )
        assert len(stored) == 1 and stored[0][0] is not None
        assert not book.query("SELECT 1 FROM player_logins WHERE token_hash = ?", (token,))


def _terminal(world, name: str, role: str, retailer: str | None = None) -> RequestSigner:
    """A terminal of ``role`` registered in the world's ledger: its signer."""
    with Ledger(world.location, key=load_ledger_key(world.keys)) as book:
        return RequestSigner(register_terminal(book, name, role=role, retailer=retailer))


LAUNCH = b"<a launch token made for the request>"


def test_every_route_of_the_game_server_admits_exactly_who_its_openapi_operation_lists(world):
    """The table: every operation of the served OpenAPI document x every caller (unsigned, the
    demo player's session, a terminal of each role), generated from the document so that a
    route the application serves without a row here fails the test.  Who the operation's
    ``x-printpipe-roles`` lists is answered; an unsigned caller is 401; a terminal of another
    role 403 ``role_refused`` naming its role (its nonce admitted all the same)."""
    ledger, dealer = open_dealer(world.location, world.keys)
    signers = {"platform": world.platform,
               "retailer": _terminal(world, "roles-till", "retailer", "shop-1"),
               "office": _terminal(world, "roles-office", "office")}  # fmt: skip
    with Ledger(world.location, key=load_ledger_key(world.keys)) as book:
        launcher = register_terminal(book, "roles-launcher", role="platform", retailer=None)
    player = "roles-player"
    tokens = [dealer.add_player(player=player, balance_cents=10_000, by="test")]
    tokens += [dealer.add_player(player=f"roles-{n}", balance_cents=0, by="test") for n in range(5)]
    world.players.update({player: 10_000, **{f"roles-{n}": 0 for n in range(5)}})
    app = create_app(ledger, dealer, threads=1, demo=True)
    json_type = {"Content-Type": "application/json"}
    with TestClient(app, base_url="http://play.test") as client:
        session = client.post("/v1/sessions", json={"token": tokens.pop(0)}).cookies["pp_session"]
        client.cookies.clear()
        first = world.platform.headers("POST", f"http://play.test/v1/players/{player}/plays", b"",
                                       fields={"Idempotency-Key": "roles-first-play"})  # fmt: skip
        made = client.post(f"/v1/players/{player}/plays", headers=first)
        assert made.status_code == 201, made.text
        play = made.json()["play"]
        requests = {
            ("GET", "/"): ("/", b"", 200),
            ("GET", "/static/{name}"): ("/static/play.js", b"", 200),
            ("GET", "/v1/health"): ("/v1/health", b"", 200),
            ("GET", "/v1/health/live"): ("/v1/health/live", b"", 200),
            ("GET", "/v1/health/ready"): ("/v1/health/ready", b"", 200),
            ("GET", "/metrics"): ("/metrics", b"", 200),
            ("GET", "/v1/openapi.json"): ("/v1/openapi.json", b"", 200),
            ("GET", "/v1/game"): ("/v1/game", b"", 200),
            ("GET", "/v1/commitments"): ("/v1/commitments", b"", 200),
            ("POST", "/v1/sessions"): ("/v1/sessions", None, 201),  # a new token each time
            ("POST", "/v1/launches"): ("/v1/launches", LAUNCH, 201),  # a new launch each time
            ("GET", "/v1/me"): ("/v1/me", b"", 200),
            ("GET", "/v1/players/{player}"): (f"/v1/players/{player}", b"", 200),
            ("POST", "/v1/players/{player}/plays"): (f"/v1/players/{player}/plays", b"", 201),
            ("GET", "/v1/players/{player}/plays"): (f"/v1/players/{player}/plays", b"", 200),
            ("GET", "/v1/players/{player}/plays/last"): (f"/v1/players/{player}/plays/last",
                                                        b"", 200),
            ("GET", "/v1/players/{player}/plays/{play}"): (f"/v1/players/{player}/plays/{play}",
                                                          b"", 200),
            ("GET", "/v1/players/{player}/plays/{play}/proof"): (
                f"/v1/players/{player}/plays/{play}/proof", b"", 200),
            ("DELETE", "/v1/sessions"): ("/v1/sessions", b"", 200),  # last: it logs out
        }  # fmt: skip
        document = client.get("/v1/openapi.json").json()
        operations = {(m.upper(), path): op for path, item in document["paths"].items()
                      for m, op in item.items()}  # fmt: skip
        routes = app.app.routes  # type: ignore[attr-defined]
        served = {(route.method, route.path) for route in routes}
        assert served == set(operations) == set(requests), "a route without its row in the table"
        for operation in requests:  # in the table's order: the session logs out last
            admitted = operations[operation]["x-printpipe-roles"]
            method, template = operation
            for caller in ("anyone", "session", "platform", "retailer", "office"):
                path, body, expected = requests[operation]
                if body is None:
                    body = json.dumps({"token": tokens.pop()}).encode()
                elif body is LAUNCH:
                    launched = make_launch_token(launcher, player=f"launched-{uuid.uuid4().hex}")
                    body = json.dumps({"token": launched}).encode()
                headers = dict(json_type)
                if method == "POST" and "plays" in path:
                    headers["Idempotency-Key"] = uuid.uuid4().hex
                if caller == "session":
                    headers["Cookie"] = f"pp_session={session}"
                elif caller != "anyone":
                    url = "http://play.test" + path
                    headers.update(signers[caller].headers(method, url, body, fields={
                        k: v for k, v in headers.items() if k == "Idempotency-Key"}))  # fmt: skip
                client.cookies.clear()
                response = client.request(method, path, content=body, headers=headers)
                row = (method, template, caller, response.status_code, response.text[:200])
                if admitted == ["anyone"] or caller in admitted:
                    assert response.status_code == expected, row
                elif caller in ("anyone", "session"):
                    assert response.status_code == 401, row
                else:
                    assert response.status_code == 403, row
                    problem = response.json()
                    assert problem["error"] == "role_refused" and problem["role"] == caller, row
                    assert f"role {caller}" in problem["detail"], row
    world.check_books(sum(world.players.values()))


def test_a_login_body_is_parsed_as_strictly_as_the_services(world, caplog):
    """``POST /v1/sessions`` takes UTF-8 JSON only, as the validation service's bodies: deep
    nesting, a lone surrogate, UTF-16, a BOM or a key twice are one 4xx line of JSON each (no
    503, nothing logged), and the token sent in them is not spent."""
    ledger, dealer = open_dealer(world.location, world.keys)
    token = dealer.add_player(player="strict", balance_cents=0, by="test")
    world.players["strict"] = 0
    app = create_app(ledger, dealer, threads=1, demo=True)
    bodies = {
        "deep": b'{"token": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
        "lone surrogate": b'{"token": "\\ud800' + b"a" * 20 + b'"}',
        "UTF-16": json.dumps({"token": token}).encode("utf-16"),
        "BOM": b"\xef\xbb\xbf" + json.dumps({"token": token}).encode(),
        "a key twice": json.dumps({"token": "x" * 20}).encode()[:-1]
        + f', "token": "{token}"}}'.encode(),
    }
    with TestClient(app, base_url="http://play.test") as client:
        for name, body in bodies.items():
            response = client.post(
                "/v1/sessions", content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 400, (name, response.status_code, response.text)
            assert response.headers["content-type"] == "application/problem+json", name
            assert "\n" not in response.text.strip(), name
            assert response.json()["error"] == "bad_request", name
        assert client.post("/v1/sessions", json={"token": token}).status_code == 201  # unspent
    assert "Traceback" not in caplog.text
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text
