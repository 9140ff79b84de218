"""docs/play-screen.png: the player's screen of ``printpipe play --demo``, in Debian's Chromium.

The online game's walkthrough of docs/tutorial.md in a temporary folder (keys, a Golden
Animals block, its commitment countersigned, the ledger, the game server, a player), then the
page played as a player does, until a unit opens the EXTRA step and wins: the screenshot shows
that unit, its lot, the paytable, the history and the unit's proof checked in the browser.
Run from the checkout, with the virtual environment's Python (``pip install -e '.[test]'``
brings Playwright; no browser is downloaded)::

    .venv/bin/python docs/images/make_play_screen.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent.parent / "play-screen.png"
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def printpipe(*args: str, cwd: Path) -> str:
    command = [sys.executable, "-m", "printpipe", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        printpipe("keys", "init", "keys", cwd=work)
        printpipe("generate", "--game", "golden-animals", "--packs", "1:1", "--keys", "keys",
                  "--out", "ga-block", "-q", cwd=work)  # fmt: skip
        printpipe("commitment", "sign", "ga-block/commitment.json", "--manifest",
                  "ga-block/manifest.ppm", "--keys", "keys", "-q", cwd=work)  # fmt: skip
        printpipe("ledger", "import", "ga-block/manifest.ppm", "--commitment",
                  "ga-block/commitment.json", "--db", "play.sqlite", "--keys", "keys", "-q",
                  cwd=work)  # fmt: skip
        printpipe("play", "--db", "play.sqlite", "--keys", "keys", "--demo", "--port", "0",
                  "--url-file", "play.url", "--pid-file", "play.pid", "--log", "play.log",
                  "--detach", cwd=work)  # fmt: skip
        try:
            url = (work / "play.url").read_text().strip()
            added = printpipe("players", "add", "alice", "--balance", "100", "--db",
                              "play.sqlite", "--keys", "keys", "--url", url, cwd=work)  # fmt: skip
            link = added.strip().rsplit(" ", 1)[-1]
            shoot(link)
        finally:
            os.kill(int((work / "play.pid").read_text()), signal.SIGTERM)
    print(f"wrote {OUT}")


def shoot(link: str) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.set_default_timeout(30_000)
        page.emulate_media(reduced_motion="reduce")
        page.goto(link)
        page.wait_for_selector("#play:enabled")
        for _ in range(100):
            page.click("#play")
            page.wait_for_selector("#go:enabled")
            page.click("#go")
            page.wait_for_selector("#go-2:enabled, #lot:not([hidden])")
            extra = page.is_visible("#go-2:enabled")
            if extra:
                page.click("#go-2")
                page.wait_for_selector("#lot:not([hidden])")
            if extra and int(page.get_attribute("#lot", "data-lot-eur") or 0) > 0:
                break
        else:
            raise SystemExit("no winning unit with EXTRA in 100 plays")
        serial = page.get_attribute("#grid-1", "data-serial")
        page.wait_for_selector(f'#history li:first-child button[data-serial="{serial}"]')
        page.click("#history li:first-child button")
        page.click("#verify")
        page.wait_for_selector("#verify-result[data-ok]")
        page.screenshot(path=str(OUT), full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
