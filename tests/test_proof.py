"""`printpipe proof`: the approval pack, checked end to end from the files a user gets.

The specimens are checked three ways: the sidecar's symbols give the labelled amount under
the game's own rules; the PDF page really carries that label and serial; and the revealed
validation barcode, read by an independent decoder from a 300 dpi render, is a specimen code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
import zxingcpp
from PIL import Image

from printpipe.games.base import LOSING_TIER
from printpipe.generation import pack_tallies
from printpipe.ids import SPECIMEN_PACK, parse_inventory_code, parse_validation_code
from printpipe.proof.specimens import make_specimens
from tests.conftest import run_cli

DECODE_DPI = 300
TICKET_ID = re.compile(r"\d{4}-\d{6}-\d{3}[- ]\d+")


@pytest.fixture(scope="module")
def proof_dir(default_proof) -> Path:
    return default_proof


@pytest.fixture(scope="module")
def record(proof_dir) -> dict:
    return json.loads((proof_dir / "proof.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pdf(proof_dir, record):
    document = pdfium.PdfDocument(str(proof_dir / record["pdf"]))
    yield document
    document.close()


def page_text(document, page: int) -> str:
    """The text of a 1-based page, as a PDF viewer would extract it."""
    return document[page - 1].get_textpage().get_text_range()


def test_pack_holds_pdf_previews_and_sidecar(proof_dir, record, pdf):
    assert len(pdf) == record["pages"] == 2 + len(record["specimens"])
    assert sorted(p.name for p in proof_dir.glob("*.png")) == sorted(record["previews"])
    assert len(record["previews"]) == len(pdf)
    with Image.open(proof_dir / record["previews"][0]) as image:
        assert image.size == (1754, 1240) or image.size == (1754, 1241)  # A4 landscape, 150 dpi
    assert record["press_proof"] is None and record["plot"] is None
    assert not list(proof_dir.glob("press-proof-*")), "real sheets only when asked"
    assert not list(proof_dir.parent.glob(".*partial*"))


def test_every_specimen_evaluates_to_its_label(game, record):
    d = game.definition
    seen: dict[str, list[tuple[int, bool]]] = {v: [] for v in d.variants}
    for s in record["specimens"]:
        prize = game.prize_eur(s["effigy"], s["paws"], s["bonus"])  # the rules, not a copy
        assert prize == s["amount_eur"] == int(d.tier_amounts[s["tier"]]), s["label"]
        variant = d.variants.index(s["effigy"])
        symbols = np.array([[d.symbol_index(c) for c in s["paws"] + s["bonus"]]])
        teaser = bool(game.teasers(np.array([variant]), symbols, np.array([prize]))[0])
        assert teaser == s["teaser"], s["label"]
        seen[s["effigy"]].append((s["tier"], s["teaser"]))
    for effigy, shown in seen.items():
        tiers = [t for t, _ in shown]
        assert sorted(set(tiers) - {LOSING_TIER}) == [p.tier for p in d.prizes], effigy
        assert sorted(t for t in shown if t[0] == LOSING_TIER) == [(0, False), (0, True)]
    serials = [s["serial"] for s in record["specimens"]]
    assert len(set(serials)) == len(serials)


def test_specimens_are_reproducible(game, record):
    again = make_specimens(game)
    codes = game.definition.symbol_codes
    assert [[codes[i] for i in s.symbols[:9]] for s in again] == [
        s["paws"] for s in record["specimens"]
    ]


def test_pages_carry_labels_serials_and_marks(record, pdf):
    for s in record["specimens"]:
        text = page_text(pdf, s["page"])
        assert s["label"] in text
        assert s["serial"] in text  # on the back, and in the line under the tickets
        assert "SPECIMEN - SANS VALEUR" in text
        assert "GRATTEZ ICI" in text  # the covered front
        assert f"Gain selon les règles du jeu : {s['amount_eur']:,} €".replace(",", " ") in text


def test_cover_prize_structure(pdf, game):
    text = page_text(pdf, 1)
    for needle in ("437 316", "1 950 000 €", "750 000", "65,000 %", "Signature", "sha256"):
        assert needle in text, needle
    assert game.definition.source_sha256 in text


def test_symbol_sheet_lists_every_symbol(pdf, record, game):
    text = page_text(pdf, record["symbol_sheet"]["page"])
    for code, caption in game.definition.captions.items():
        assert f"code {code}" in text and caption in text


def _render_trim(document, page: int, trim_pt: list[float]) -> Image.Image:
    """A 300 dpi grayscale render of one ticket's trim box (PDF points, origin bottom-left)."""
    pdf_page = document[page - 1]
    width, height = pdf_page.get_size()
    x, y, w, h = trim_pt
    crop = (x, y, width - x - w, height - y - h)  # left, bottom, right, top margins cut off
    return pdf_page.render(scale=DECODE_DPI / 72, crop=crop, grayscale=True).to_pil()


def test_revealed_barcode_is_a_specimen_code_and_covered_one_hidden(record, pdf):
    for s in record["specimens"]:
        boxes = s["trim_pt"]
        revealed = zxingcpp.read_barcodes(_render_trim(pdf, s["page"], boxes["revealed_front"]))
        codes = [r.text for r in revealed if r.format == zxingcpp.BarcodeFormat.Code128]
        assert codes == [s["validation_code"]], s["label"]
        parsed = parse_validation_code(codes[0])
        assert parsed is not None and parsed.ticket_id.pack == SPECIMEN_PACK
        covered = zxingcpp.read_barcodes(_render_trim(pdf, s["page"], boxes["covered_front"]))
        assert covered == [], "the silver panel must hide the validation barcode"
        back = zxingcpp.read_barcodes(_render_trim(pdf, s["page"], boxes["back"]))
        assert [r.text for r in back] == [s["inventory_code"]]
        ticket = parse_inventory_code(back[0].text)
        assert ticket is not None and ticket.pack == SPECIMEN_PACK


def test_existing_out_dir_is_refused(proof_dir):
    result = run_cli("proof", "--out", str(proof_dir))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "already exists" in result.stderr


def test_press_proof_is_the_export_sheet_marked_proof(tmp_path, keys_dir, approvals_dir):
    block = tmp_path / "block"
    run_cli("generate", "--packs", "1:2", "--keys", str(keys_dir), "--out", str(block), "-q",
            check=True)  # fmt: skip
    press = tmp_path / "press"
    run_cli("export", str(block), "--packs", "1:2", "--chunk-packs", "2", "--keys",
            str(keys_dir), "--approvals", str(approvals_dir), "--out", str(press), "-q",
            check=True)  # fmt: skip
    out = tmp_path / "PROOF"
    run_cli("proof", "--out", str(out), "--from-block", str(block), "--packs", "1:2",
            "--sheets", "2,4", "--keys", str(keys_dir), check=True)  # fmt: skip
    record = json.loads((out / "proof.json").read_text(encoding="utf-8"))
    proof = record["press_proof"]
    assert proof["real_outcomes"] and proof["sheets"] == [2, 4] and proof["pages"] == 4
    assert len(proof["previews"]) == 4
    exported = pdfium.PdfDocument(str(next(press.glob("*.pdf"))))
    proofed = pdfium.PdfDocument(str(out / proof["file"]))
    try:
        for i, sheet in enumerate(proof["sheets"]):
            for side in (0, 1):
                mine = page_text(proofed, 2 * i + side + 1)
                theirs = page_text(exported, 2 * (sheet - 1) + side + 1)
                assert "PROOF" in mine and "CONFIDENTIEL" in mine and "PROOF" not in theirs
                ids = TICKET_ID.findall(mine)  # validation texts (front), serials (back)
                assert len(ids) == 11  # SRA3: 3 x 3, and the slug's first and last
                assert TICKET_ID.findall(theirs)[:9] == ids[:9]  # same tickets, same slots
    finally:
        exported.close()
        proofed.close()
    plot = record["plot"]
    assert (out / plot["file"]).stat().st_size > 10_000
    assert plot["winners_per_pack"]["min"] >= 1


def test_press_proof_sheet_out_of_range(tmp_path, keys_dir):
    block = tmp_path / "block"
    run_cli("generate", "--packs", "1:1", "--keys", str(keys_dir), "--out", str(block), "-q",
            check=True)  # fmt: skip
    result = run_cli("proof", "--out", str(tmp_path / "P"), "--from-block", str(block),
                     "--sheets", "99", "--keys", str(keys_dir))  # fmt: skip
    assert result.returncode == 1 and "sheet 99 does not exist" in result.stderr
    assert not (tmp_path / "P").exists()


def test_pack_tallies():
    amounts = np.array([0, 10, 2])
    tier = np.array([0, 1, 2, 2, 0, 0, 0, 1])
    counts, prize = pack_tallies(tier, amounts, 4)
    assert counts.tolist() == [[1, 1, 2], [3, 1, 0]]
    assert prize.tolist() == [14, 10]
