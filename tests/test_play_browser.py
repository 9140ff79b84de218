"""The player's screen in a real browser: Debian's Chromium, headless, driven by Playwright
(``executable_path``: no browser is downloaded).  A player logs in with the link of
``printpipe players add``, plays units by keyboard and mouse, and each unit shown (both grids,
symbol by symbol, and the lot) is the feed's record of it (``printpipe feed show``); the
history lists them; "Vérifier" says the proof holds, and that it fails once one hash of it is
changed; the page logs no error.  The ledger key is chosen so that the first units dealt
include one with EXTRA and one with an ANIMALS symbol (found from the deal order and the
feed, as an auditor holding the key would)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from printpipe.commitment import load_commitment
from printpipe.games import load_game
from printpipe.ledger import LedgerKey
from printpipe.ledger.deal import DEAL_PURPOSE, DealOrder, deal_key
from tests.ledger_helpers import run_in_process
from tests.play_helpers import make_block, make_world

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
PLAYS = 10

pytestmark = [
    pytest.mark.xdist_group("play"),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed"),
]


def first_units_dealt(block, key: bytes, count: int) -> list[str]:
    """The serials of the first ``count`` units the ledger key ``key`` deals."""
    commitment = load_commitment(block.commitment)
    order = DealOrder(
        deal_key(LedgerKey(key).derive(DEAL_PURPOSE), commitment.root), commitment.tickets
    )
    serials = list(block.feed_units())  # block order: leaf i is the i-th record
    return [serials[leaf] for leaf in order.leaves(np.arange(count)).tolist()]


def choose_ledger_key(block) -> int:
    """Write a ledger key whose first plays show EXTRA, ANIMALS and a losing unit; how many
    plays show all three."""
    game = load_game("golden-animals")
    money = set(game.money_codes.values())  # type: ignore[attr-defined]
    units = block.feed_units()
    for seed in range(200):
        key = hashlib.sha256(f"printpipe browser test {seed}".encode()).digest()
        dealt = first_units_dealt(block, key, 16)
        extra = [i for i, s in enumerate(dealt) if units[s][1] is not None]
        animals = [i for i, s in enumerate(dealt) if money & set(units[s][0] + (units[s][1] or []))]
        losing = [i for i, s in enumerate(dealt) if units[s][2] == 0]
        if extra and animals and losing:
            path = block.keys / "ledger.key"
            path.unlink()
            fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
            os.write(fd, key)
            os.close(fd)
            return max(PLAYS, extra[0] + 1, animals[0] + 1, losing[0] + 1)
    raise AssertionError("no ledger key found")  # pragma: no cover - about 1 in 2 keys fits


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("play-browser")
    block = make_block(folder, packs=1)
    plays = choose_ledger_key(block)
    w = make_world(block, folder / "ledger.sqlite", folder / "world", players=1, balance_eur=20)
    w.start(demo=True)
    yield w, plays
    w.stop()


def feed_show(world, serial: str) -> tuple[list[str], list[str] | None, int]:
    result = run_in_process("feed", "show", str(world.block.feed), "--unit", serial)
    assert result.returncode == 0, result.stderr
    lines = dict(line.split(": ", 1) for line in result.stdout.splitlines()[1:])
    extra = None if lines["extra_grid"] == "(none)" else lines["extra_grid"].split()
    lot = int(re.match(r"(\d+) EUR", lines["lot recorded"]).group(1))  # type: ignore[union-attr]
    return lines["grid"].split(), extra, lot


def shown(page, selector: str) -> list[str]:
    return [c.get_attribute("data-symbol") for c in page.locator(f"{selector} .cell").all()]


CAPTION_WHOLE = """captions => captions.map(caption => {
    const text = document.createRange();
    text.selectNodeContents(caption);
    const glyphs = text.getBoundingClientRect(), box = caption.getBoundingClientRect();
    return glyphs.top >= box.top - 0.5 && glyphs.bottom <= box.bottom + 0.5;
})"""
"""For each caption, whether its text's box (the font's ascent to descent: an accent on a
capital, the É of Éléphant, included) fits in the caption's own box, which clips the rest."""


def gos_shown(page) -> int:
    return page.locator("button.go:visible").count()


def test_a_player_plays_sees_every_unit_as_the_feed_records_it_and_checks_its_proof(world):
    from playwright.sync_api import sync_playwright

    w, plays = world
    player, token = next(iter(w.logins.items()))
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})  # a phone's screen
        page.set_default_timeout(15_000)

        def console(message) -> None:
            if message.type == "error":
                problems.append(message.text)

        page.on("console", console)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{w.url}/#login={token}")
        page.wait_for_selector("#play:enabled")
        assert page.text_content("#player") == player
        assert page.text_content("#play") == "JOUEZ 1€"
        assert "Interdit aux mineurs" in page.text_content("body")  # type: ignore[operator]
        assert "09 74 75 13 13" in page.text_content("body")  # type: ignore[operator]
        assert page.locator("#paytable li").count() == 16
        body = page.locator("body").bounding_box()
        assert body is not None and body["width"] <= 390  # no sideways scrolling on a phone

        played: list[str] = []
        for number in range(plays):
            if number == 0:  # by keyboard: focus is on JOUEZ, then moves to GO
                page.keyboard.press("Enter")
                page.wait_for_selector("#go:enabled")
                assert page.locator("#go:focus").count() == 1
                page.keyboard.press("Enter")
            else:
                if number == 1:
                    page.emulate_media(reduced_motion="reduce")  # the rest without animation
                page.click("#play")
                page.wait_for_selector("#go:enabled")
                page.click("#go")
            page.wait_for_selector("#go-2:enabled, #lot:not([hidden])")
            serial = page.get_attribute("#grid-1", "data-serial")
            assert serial is not None
            grid, extra, lot = feed_show(w, serial)
            assert shown(page, "#grid-1") == grid
            captions = page.locator("#grid-1 .cell .caption").evaluate_all(CAPTION_WHOLE)
            assert captions == [True] * 20, captions  # no accent cut off
            if extra is not None:
                assert page.is_visible("#extra")
                assert gos_shown(page) == 1  # the EXTRA step's own GO, not two
                page.click("#go-2")
                page.wait_for_selector("#lot:not([hidden])")
                assert shown(page, "#grid-2") == extra
            else:
                assert page.is_hidden("#extra")
            assert gos_shown(page) == 1
            assert page.locator("#grid-1 .cell:not(.revealed)").count() == 0
            assert page.get_attribute("#lot", "data-lot-eur") == str(lot)
            text = page.text_content("#lot") or ""
            assert (f"{lot}\u00a0€" in text) if lot else ("Pas de gain" in text)
            if lot:
                assert page.locator(".stage .cell.win").count() > 0
            played.append(serial)
        with_extra = [s for s in played if feed_show(w, s)[1] is not None]
        assert with_extra, "the chosen key deals an EXTRA unit among the first"

        page.wait_for_selector(f"#history li:nth-child({plays}) button")
        page.wait_for_selector(f'#history li:first-child button[data-serial="{played[-1]}"]')
        listed = [b.get_attribute("data-serial") for b in page.locator("#history button").all()]
        assert listed == played[::-1]
        for line in page.locator("#history button").all():  # each history line names its block
            assert line.get_attribute("data-block") == "1" and " · bloc 1 · " in line.inner_text()
        page.set_viewport_size({"width": 1280, "height": 800})  # a desktop's: two columns
        card = page.locator("section.game").bounding_box()
        page.click(f'#history button[data-serial="{with_extra[0]}"]')
        page.wait_for_selector("#replay:not([hidden])")
        opened = page.locator("section.game").bounding_box()
        assert card is not None and opened is not None
        assert opened["height"] == card["height"]  # the replay beside it stretches nothing
        assert shown(page, '#replay-grids .grid[data-grid="2"]') == feed_show(w, with_extra[0])[1]
        page.click("#verify")
        page.wait_for_selector("#verify-result[data-ok]")
        assert page.get_attribute("#verify-result", "data-ok") == "true"
        assert "Preuve valide" in (page.text_content("#verify-result") or "")

        def one_hash_changed(route) -> None:
            proof = json.loads(route.fetch().text())
            first = proof["audit_path"][0]
            proof["audit_path"][0] = ("0" if first[0] != "0" else "1") + first[1:]
            route.fulfill(status=200, content_type="application/json", body=json.dumps(proof))

        lost = [s for s in played if feed_show(w, s)[2] == 0]
        page.click(f'#history button[data-serial="{lost[0]}"]')
        page.click("#verify")
        page.wait_for_selector("#verify-result[data-ok]")
        said = page.text_content("#verify-result") or ""
        assert page.get_attribute("#verify-result", "data-ok") == "true", said
        assert f"l'unité {lost[0]}, perdante, fait partie du bloc" in said, said
        assert "0\u00a0€" not in said  # no "lot de 0 €"

        again = browser.new_page()  # another browser's: no session cookie
        again.goto(f"{w.url}/#login={token}")  # the link, used above, opened a second time
        again.wait_for_selector("#status:has-text('lien')")
        assert "déjà servi" in (again.text_content("#status") or "")
        assert again.is_disabled("#play")
        again.close()

        page.route("**/proof", one_hash_changed)
        page.click(f'#history button[data-serial="{played[0]}"]')
        page.click("#verify")
        page.wait_for_selector("#verify-result[data-ok]")
        assert page.get_attribute("#verify-result", "data-ok") == "false"
        assert "Preuve invalide" in (page.text_content("#verify-result") or "")
        browser.close()
    assert problems == []
    (totals,) = w.query("SELECT COUNT(*), SUM(lot_cents) FROM plays")
    balance = w.query("SELECT balance_cents FROM players")[0][0]
    assert totals[0] == plays and balance == 2000 - 100 * plays + int(totals[1])
    shutil.rmtree(w.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def operator(tmp_path_factory):
    """``printpipe play --wallet`` and the reference wallet, each in its subprocess, and the
    platform's key its launch links are signed with."""
    import datetime as dt

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from printpipe.ledger import LOTTERY, Ledger, TerminalId, load_ledger_key
    from printpipe.service.signatures import key_id_of, raw_public_key
    from printpipe.wallet.store import WalletStore
    from tests.wallet_helpers import WalletProcess

    folder = tmp_path_factory.mktemp("play-browser-wallet")
    block = make_block(folder, packs=1)
    w = make_world(block, folder / "ledger.sqlite", folder / "world", players=0, balance_eur=0)
    platform = Ed25519PrivateKey.generate()
    with Ledger(w.location, key=load_ledger_key(w.keys)) as book:
        book.add_terminal(
            TerminalId("operator-launch"), public_key=raw_public_key(platform.public_key()),
            key_id=key_id_of(platform.public_key()), retailer=None, role="platform", by=LOTTERY,
        )  # fmt: skip
    wallet = WalletProcess(folder / "wallet.sqlite", folder / "wallet")
    with WalletStore(wallet.location) as store:
        store.deposit(player="alice", amount_cents=2000, now=dt.datetime.now(dt.UTC))
    wallet.start()
    w.start(args=["--wallet", wallet.url, "--wallet-key", str(wallet.key_file)])
    yield w, wallet, platform
    w.stop()
    wallet.stop()


def test_a_launched_player_plays_through_the_operators_wallet(operator):
    """The operator's launch link opens the page for alice, whom the game server has never
    seen; her balance is the wallet's; each play is debited there, its lot credited there, and
    the page shows the wallet's balance."""
    from playwright.sync_api import sync_playwright

    from printpipe.play.launch import launch_link, make_launch_token
    from printpipe.wallet.store import WalletStore

    w, wallet, platform = operator
    problems: list[str] = []
    link = launch_link(w.url, make_launch_token(platform, player="alice"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(link)
        page.wait_for_selector("#play:enabled")
        assert page.text_content("#player") == "alice"
        assert page.get_attribute("#balance", "data-cents") == "2000"
        for _ in range(3):
            page.click("#play")
            page.wait_for_selector("#go:enabled")
            page.click("#go")
            page.wait_for_selector("#go-2:enabled, #lot:not([hidden])")
            if page.is_visible("#go-2"):
                page.click("#go-2")
                page.wait_for_selector("#lot:not([hidden])")
        page.wait_for_selector("#history li:nth-child(3) button")
        shown_cents = int(page.get_attribute("#balance", "data-cents") or -1)
        browser.close()
    assert problems == []
    (plays,) = w.query("SELECT COUNT(*), COALESCE(SUM(lot_cents), 0) FROM plays")
    assert plays[0] == 3
    expected = 2000 - 300 + int(plays[1])
    assert shown_cents == expected
    deadline = time.monotonic() + 15
    while True:  # the credit is sent from the outbox just after the play
        with WalletStore(wallet.location) as store:
            if store.balance(player="alice") == expected:
                break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert w.query("SELECT COUNT(*) FROM wallet_entries")[0][0] == 0  # not the built-in wallet
