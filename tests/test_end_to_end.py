"""The whole chain as the lottery meets it, issue 4's "Done when".

Export a pack range, import its manifest, activate a pack, then scan the validation barcodes
read back from the printed PDF with zxing-cpp: each answer must be the prize that the rules
give for the symbols printed on that same ticket, read back from the same PDF (the captions
under the symbols are real text).  The press file is exported with ``--coating none``: the
same drawing minus the ScratchOff plate, i.e. the ticket as a scratched one looks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pypdfium2 as pdfium
import pytest
import zxingcpp

from printpipe.games import game_template_dir, load_game
from printpipe.games.base import symbol_code
from printpipe.games.chien_chat import ChienChat
from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import TerminalId
from printpipe.ledger.key import load_ledger_key
from printpipe.render.imposition import impose, parse_sheet
from printpipe.render.template import load_template
from tests.conftest import run_cli
from tests.ledger_helpers import OFFICE_SCOPE

DPI = 300


@pytest.fixture(scope="module")
def printed_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("e2e")
    keys, block, press, db = work / "keys", work / "block", work / "press", work / "ledger.db"
    run_cli("keys", "init", str(keys), check=True)
    run_cli(
        "generate", "--keys", str(keys), "--packs", "1:2", "--out", str(block), "-q", check=True
    )
    run_cli(
        "export",
        str(block),
        "--keys",
        str(keys),
        "--packs",
        "1:2",
        "--out",
        str(press),
        "--coating",
        "none",
        "--unapproved",  # these keys' lottery approved no proof: the run says NOT APPROVED
        "-q",
        check=True,
    )
    run_cli(
        "ledger",
        "import",
        str(press / "manifest.ppm"),
        "--keys",
        str(keys),
        "--db",
        str(db),
        check=True,
    )
    run_cli("packs", "activate", "--db", str(db), "000001", check=True)
    return press, db, keys


def printed_tickets(pdf_path: Path, game):
    """(validation code, effigy, paws, bonus) of every ticket on the front pages, as printed."""
    template = load_template(game_template_dir(game.definition.id) / "ticket.toml")
    imposition = impose(template, *parse_sheet("SRA3"))
    effigy_of_box = {e.bonus_box: e.code for e in game.effigies}
    pdf = pdfium.PdfDocument(pdf_path)
    found = []
    for index in range(0, len(pdf), 2):  # duplex: front, back, front, back...
        page = pdf[index]
        height = page.get_height()
        text = page.get_textpage()
        image = page.render(scale=DPI / 72, grayscale=True).to_pil()
        code128 = (zxingcpp.BarcodeFormat.Code128,)  # zxing-cpp 3 takes a tuple; its stubs lag
        for barcode in zxingcpp.read_barcodes(image, formats=code128):  # type: ignore[arg-type]
            corners = barcode.position
            cx = (corners.top_left.x + corners.bottom_right.x) / 2 * 72 / DPI
            cy = height - (corners.top_left.y + corners.bottom_right.y) / 2 * 72 / DPI
            x0, y0 = next(
                (x, y)
                for x, y in imposition.front
                if x <= cx <= x + template.width * 72 / 25.4
                and y <= cy <= y + template.height * 72 / 25.4
            )

            def read(rect, above=0.0, x0=x0, y0=y0, text=text):
                x, y, w, h = template.box(rect)
                return text.get_text_bounded(x0 + x, y0 + y, x0 + x + w, y0 + y + h + above)

            paw_area, bonus_area = template.play_areas
            paws = [symbol_code(read(cell).strip()) for cell in paw_area.slots]
            bonus = [symbol_code(w) for w in read(bonus_area.area).split()]
            label = read(bonus_area.area, above=20).split()  # "BONUS NICHE" or "PANIER"
            effigy = next(effigy_of_box[w] for w in label if w in effigy_of_box)
            found.append((barcode.text, effigy, paws, bonus))
    return found


def test_scanned_codes_get_the_prize_of_the_printed_symbols(printed_run):
    press, db, _ = printed_run
    game = load_game("chien-chat")
    assert isinstance(game, ChienChat)
    job = json.loads((press / "job.json").read_text())
    tickets = printed_tickets(press / job["files"][0]["path"], game)
    assert len(tickets) == 250 and len({code for code, *_ in tickets}) == 250
    amounts = set()
    with Ledger(db, key=load_ledger_key(db.parent / "keys")) as ledger:
        for code, effigy, paws, bonus in tickets:
            prize = game.prize_eur(effigy, paws, bonus)  # the rules, on what is printed
            answer = ledger.validate(code, terminal=TerminalId("T-E2E"), scope=OFFICE_SCOPE)
            if code[4:10] == "000002":
                assert answer.text == "PACK NOT ACTIVATED"
            elif prize == 0:
                assert answer.text == "NO WIN"
            elif prize <= 150:
                assert answer.text == f"WIN {prize}"
            else:
                assert answer.text == f"WIN {prize} - claim at the lottery"
            amounts.add(prize)
    assert 0 in amounts and len(amounts) >= 3  # losers and several tiers were scanned


def test_a_scanned_winner_is_paid_once_through_the_cli(printed_run):
    press, db, _ = printed_run
    game = load_game("chien-chat")
    assert isinstance(game, ChienChat)
    job = json.loads((press / "job.json").read_text())
    tickets = printed_tickets(press / job["files"][0]["path"], game)
    code = next(
        code
        for code, effigy, paws, bonus in tickets
        if code[4:10] == "000001" and 0 < game.prize_eur(effigy, paws, bonus) <= 150
    )
    keys = ["--keys", str(db.parent / "keys")]
    first = run_cli("claim", code, "--db", str(db), "--terminal", "T-1", *keys)
    assert first.returncode == 0 and first.stdout.startswith("PAID ")
    again = run_cli("claim", code, "--db", str(db), "--terminal", "T-2", *keys)
    assert again.returncode != 0 and again.stdout.startswith("ALREADY PAID ")
    assert "T-1" in again.stdout
