"""Launch by the operator: the platform's signed launch token (a JWT, EdDSA), spent once for
a session cookie, a player new to the game server introduced by it; on both databases."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from printpipe.ledger import LOTTERY, Ledger, TerminalId, load_ledger_key
from printpipe.play.app import create_app
from printpipe.play.launch import (
    MAX_TTL_S,
    LaunchRefused,
    launch_link,
    make_launch_token,
    read_launch_token,
)
from printpipe.play.server import open_dealer
from printpipe.service.signatures import generate_terminal_key, key_id_of, raw_public_key
from tests.conftest import run_cli
from tests.play_helpers import make_block, make_world

PLATFORM_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
NOW = 1_796_040_000.0

pytestmark = pytest.mark.xdist_group("play")


def keys_of(*keys: Ed25519PrivateKey):
    return {key_id_of(k.public_key()): k.public_key() for k in keys}.get


# -- the token --------------------------------------------------------------------------------


@given(
    st.from_regex(r"[A-Za-z0-9._@-]{1,64}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9._:@-]{1,128}", fullmatch=True),
    st.integers(1, MAX_TTL_S),
)
def test_a_launch_token_reads_back_its_player_and_session(player, session, ttl):
    token = make_launch_token(PLATFORM_KEY, player=player, session=session, ttl_s=ttl, now=NOW)
    launch = read_launch_token(token, public_key=keys_of(PLATFORM_KEY), now=NOW + ttl - 1)
    assert (launch.player, launch.session) == (player, session)
    assert launch.expires_at - launch.issued_at == ttl
    assert launch.key_id == key_id_of(PLATFORM_KEY.public_key())


def _forged(claims: dict, *, key=PLATFORM_KEY, algorithm="EdDSA", kid=None) -> str:
    kid = kid or key_id_of(PLATFORM_KEY.public_key())
    return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid})


GOOD = {"sub": "alice", "sid": "s-1", "iat": int(NOW), "exp": int(NOW) + 60,
        "jti": "n" * 24, "aud": "printpipe-play"}  # fmt: skip


@pytest.mark.parametrize(
    ("token", "said"),
    [
        (_forged({**GOOD, "exp": int(NOW) - 1}), "expired"),
        (_forged({**GOOD, "iat": int(NOW) - 61, "exp": int(NOW) + 10}), "at most"),
        (_forged({**GOOD, "iat": int(NOW) + 61, "exp": int(NOW) + 100}), "iat"),
        (_forged({**GOOD, "exp": int(NOW) + MAX_TTL_S + 1}), "at most"),
        (_forged({**GOOD, "aud": "elsewhere"}), "(?i)audience"),
        (_forged({k: v for k, v in GOOD.items() if k != "jti"}), "jti"),
        (_forged({**GOOD, "jti": "short"}), "jti"),
        (_forged({**GOOD, "sub": "a/b"}), "sub"),
        (_forged({**GOOD, "sid": ""}), "sid"),
        (_forged(GOOD, key=OTHER_KEY), "(?i)signature"),
        (_forged(GOOD, kid="someone-else"), "no active platform"),
        (jwt.encode(GOOD, "a shared secret of 32 bytes......", algorithm="HS256",
                    headers={"kid": key_id_of(PLATFORM_KEY.public_key())}), "EdDSA"),
        ("e30.e30.", "not a launch token"),
        ("x" * 3000, "not a launch token"),
    ],
    ids=["expired", "old-iat", "future-iat", "too-long", "audience", "no-jti", "short-jti",
         "bad-sub", "bad-sid", "other-key", "unknown-kid", "hs256", "empty", "huge"],
)  # fmt: skip
def test_a_launch_token_out_of_the_profile_is_refused(token, said):
    with pytest.raises(LaunchRefused, match=said):
        read_launch_token(token, public_key=keys_of(PLATFORM_KEY), now=NOW)


def test_a_token_signed_with_alg_none_is_refused():
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": "k"}).encode())
    body = base64.urlsafe_b64encode(json.dumps(GOOD).encode())
    token = f"{header.decode().rstrip('=')}.{body.decode().rstrip('=')}.AAAA"
    with pytest.raises(LaunchRefused, match="EdDSA"):
        read_launch_token(token, public_key=keys_of(PLATFORM_KEY), now=NOW)


def test_play_launch_prints_a_link_whose_token_the_platform_signed(tmp_path):
    key_file = tmp_path / "operator.key"
    generate_terminal_key(key_file)
    result = run_cli("play", "launch", "alice", "--key", str(key_file), "--url",
                     "http://play.example:8788/", "--session", "op-77", check=True)  # fmt: skip
    link = result.stdout.strip()
    prefix = "http://play.example:8788/#launch="
    assert link.startswith(prefix)
    from printpipe.service.signatures import load_terminal_key

    key = load_terminal_key(key_file)
    launch = read_launch_token(link.removeprefix(prefix), public_key=keys_of(key))
    assert (launch.player, launch.session) == ("alice", "op-77")
    refused = run_cli("play", "launch", "a/b", "--key", str(key_file))
    assert refused.returncode == 2
    no_db = run_cli("play", "--keys", str(tmp_path))
    assert no_db.returncode == 2 and "--db" in no_db.stderr


# -- the game server ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world(tmp_path_factory, ledgers):
    block = make_block(tmp_path_factory.mktemp("launch-block"), packs=1)
    w = make_world(block, ledgers.new(), tmp_path_factory.mktemp("launch"), players=1,
                   balance_eur=5)  # fmt: skip
    with Ledger(w.location, key=load_ledger_key(w.keys)) as book:
        for name, key, shop in (("launcher", PLATFORM_KEY, None), ("till-9", RETAILER_KEY, "s-9")):
            book.add_terminal(
                TerminalId(name), public_key=raw_public_key(key.public_key()),
                key_id=key_id_of(key.public_key()), retailer=TerminalId(shop) if shop else None,
                role="retailer" if shop else "platform", by=LOTTERY,
            )  # fmt: skip
    return w


RETAILER_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(2, 34)))
SAME_SITE = {"Origin": "http://play.test"}


@pytest.fixture
def client(world):
    ledger, dealer = open_dealer(world.location, world.keys)
    with TestClient(create_app(ledger, dealer, threads=1, demo=False),
                    base_url="http://play.test") as client:  # fmt: skip
        yield client


def test_a_launch_link_opens_a_session_once_and_introduces_a_new_player(world, client):
    token = make_launch_token(PLATFORM_KEY, player="newcomer", session="op-session-1")
    assert client.get("/v1/me").status_code == 401
    started = client.post("/v1/launches", json={"token": token}, headers=SAME_SITE)
    assert started.status_code == 201 and started.json() == {"player": "newcomer"}
    cookie = started.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/v1/me").json() == {"player": "newcomer"}
    account = client.get("/v1/players/newcomer").json()
    assert account["balance_cents"] == 0  # introduced, with nothing in the built-in wallet
    play = client.post("/v1/players/newcomer/plays", json={},
                       headers={**SAME_SITE, "Idempotency-Key": "launched-play-1"})  # fmt: skip
    assert play.status_code == 402  # the session acts for the player; no money here
    assert client.get("/v1/players/player-00").status_code == 403  # not theirs
    again = client.post("/v1/launches", json={"token": token}, headers=SAME_SITE)
    assert again.status_code == 401 and "used already" in again.json()["detail"]
    with world.ledger() as book:
        (entry,) = book.query(
            "SELECT terminal, input, answer FROM audit_log WHERE action = 'launch'"
        )
    assert entry[0] == "launcher" and entry[1] == "newcomer"
    assert "op-session-1" in entry[2] and "introduced" in entry[2]
    assert token.split(".")[2] not in json.dumps(entry)  # the token itself is never logged


def test_a_launched_player_with_money_plays(world, client):
    token = make_launch_token(PLATFORM_KEY, player="player-00")
    assert client.post("/v1/launches", json={"token": token}, headers=SAME_SITE).status_code == 201
    made = client.post("/v1/players/player-00/plays", json={},
                       headers={**SAME_SITE, "Idempotency-Key": "launched-play-2"})  # fmt: skip
    assert made.status_code == 201 and made.json()["stake_cents"] == 100
    world.players["player-00"] = 500
    world.check_books(sum(world.players.values()))


def test_launches_refused(world, client):
    def launch(token: str, headers: dict[str, str] = SAME_SITE) -> tuple[int, str]:
        response = client.post("/v1/launches", json={"token": token}, headers=headers)
        return response.status_code, response.json().get("error", "")

    assert launch(make_launch_token(RETAILER_KEY, player="x")) == (403, "role_refused")
    stranger = Ed25519PrivateKey.generate()
    assert launch(make_launch_token(stranger, player="x")) == (401, "unauthorized")
    token = make_launch_token(PLATFORM_KEY, player="x")
    assert launch(token, {"Origin": "http://evil.test"}) == (403, "cross_site")
    form = client.post("/v1/launches", content=json.dumps({"token": token}),
                       headers={"Content-Type": "text/plain"})  # fmt: skip
    assert form.status_code == 415
    assert client.post("/v1/launches", json={"token": 5}, headers=SAME_SITE).status_code == 400
    old = make_launch_token(PLATFORM_KEY, player="x", now=time.time() - 90)
    assert launch(old) == (401, "unauthorized")
    # the demo's login links stay under --demo
    assert (
        client.post("/v1/sessions", json={"token": "y" * 20}, headers=SAME_SITE).status_code == 404
    )
    with world.ledger() as book:
        assert not book.query("SELECT 1 FROM players WHERE id = 'x'")  # nothing written


def test_a_revoked_platform_launches_no_one(world, ledgers, tmp_path):
    key = Ed25519PrivateKey.generate()
    with Ledger(world.location, key=load_ledger_key(world.keys)) as book:
        book.add_terminal(TerminalId("launcher-2"), public_key=raw_public_key(key.public_key()),
                          key_id=key_id_of(key.public_key()), retailer=None, role="platform",
                          by=LOTTERY)  # fmt: skip
    token = make_launch_token(key, player="late")
    result = run_cli("terminals", "revoke", "launcher-2", "--db", str(world.location)
                     if not hasattr(world.location, "dsn") else world.location.dsn,
                     "--reason", "key lost")  # fmt: skip
    assert result.returncode == 0, result.stderr
    ledger, dealer = open_dealer(world.location, world.keys)
    with TestClient(create_app(ledger, dealer, threads=1, demo=False),
                    base_url="http://play.test") as client:  # fmt: skip
        refused = client.post("/v1/launches", json={"token": token}, headers=SAME_SITE)
    assert refused.status_code == 401


def test_launch_link_format():
    assert launch_link("http://h:1/", "a.b.c") == "http://h:1/#launch=a.b.c"
