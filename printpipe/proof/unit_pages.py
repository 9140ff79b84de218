"""The proof pack of an online game (``[output] kind = "feed"``): units as the screen shows them.

No ticket is printed, so the pack shows what the player sees and what the lottery signs:

- the cover (:mod:`.cover`, with this game's facts: the offer's stake split from ``[offer]``,
  and the payout ratio on the game's own price);
- the paytable: every symbol's pictogram with its caption, code and what it pays;
- specimen units, two a page: per prize tier, several compositions, then a plain loser and
  a teaser loser (:func:`~printpipe.proof.specimens.make_composition_specimens`: drawn by the
  game's ``layout`` from the fixed specimen stream, checked by ``evaluate``); each unit's grid
  and extra grid drawn by :mod:`printpipe.render.grid`, winning cells framed in gold, and its
  lot, composition and specimen serial (group 000000) written outside the grids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen.canvas import Canvas

from printpipe import __version__
from printpipe.french import euros
from printpipe.games.base import LOSING_TIER, OnlineGame
from printpipe.ids import SPECIMEN_PACK, TicketId
from printpipe.proof.cover import CoverFacts, draw_cover
from printpipe.proof.page import GREY, INK, MARGIN, PAGE, RED, diagonal_mark, footer, text
from printpipe.proof.specimen_pages import odds_figure
from printpipe.proof.specimens import Specimen, make_composition_specimens
from printpipe.render.grid import draw_grid
from printpipe.render.template import MM

FONTS = {
    "regular": "DejaVuSansCondensed.ttf",
    "bold": "DejaVuSansCondensed-Bold.ttf",
    "digits": "DejaVuSans.ttf",
}
"""The proof's fonts (an online game has no ticket template to name them)."""
PER_PAGE = 2
CELL = 15 * MM


def unit_cover_facts(game: OnlineGame) -> CoverFacts:
    """Cover facts of an online game: the offer (stake split) and the payout ratio, in the
    game's own words."""
    d = game.definition
    words = game.unit_words()
    return CoverFacts(
        subtitle=words.cover_subtitle,
        item="unités de jeu",
        checks=list(words.cover_checks),
        identifiers=[
            ("Définition", f"{d.source.name}  sha256 {d.source_sha256}"),
            ("Logiciel", f"printpipe {__version__}"),
            ("Specimens", "groupe 000000 (jamais émis), tirés par le jeu d'un flux fixe public"),
        ],
        params=list(words.cover_params),
    )


def specimen_label(game: OnlineGame, specimen: Specimen) -> str:
    """The heading of a specimen unit: its tier and lot."""
    if specimen.tier == LOSING_TIER:
        words = game.unit_words()
        return words.teaser_loser if specimen.teaser else words.loser
    return f"Rang {specimen.tier} / {len(game.definition.prizes)} : {euros(specimen.amount_eur)}"


def _draw_unit(
    c: Canvas, game: OnlineGame, specimen: Specimen, top: float, fonts: dict[str, str]
) -> dict[str, Any]:
    d = game.definition
    unit_words = game.unit_words()
    codes = [d.symbol_codes[s] for s in specimen.symbols]
    cells = game.cells
    winning, words = game.unit_wins(np.array(specimen.symbols))
    opens = game.opens_second_grid(specimen.symbols)
    serial = TicketId(d.number, SPECIMEN_PACK, specimen.number).serial
    label = specimen_label(game, specimen)
    composition = game.describe_wins(words)
    if specimen.teaser:
        composition += unit_words.teaser_note
    text(c, MARGIN, top, label, fonts["bold"], 14)
    text(c, PAGE[0] - MARGIN, top, f"unité {serial} (spécimen)", fonts["regular"], 9, GREY, "right")
    text(c, MARGIN, top - 6 * MM, f"Composition : {composition}", fonts["regular"], 9.5)
    grid_w, grid_h = game.columns * CELL, game.rows * CELL
    y = top - 17 * MM - grid_h
    x1 = MARGIN + 10 * MM
    x2 = x1 + grid_w + 30 * MM
    text(c, x1, y + grid_h + 2.5 * MM, "GRILLE", fonts["bold"], 9)
    draw_grid(c, game, x1, y, CELL, game.columns, codes[:cells], d.captions, winning[:cells], fonts)
    if opens:
        text(c, x2, y + grid_h + 2.5 * MM, unit_words.second_grid_title, fonts["bold"], 9)
        draw_grid(
            c, game, x2, y, CELL, game.columns, codes[cells:], d.captions, winning[cells:], fonts
        )
    else:
        c.setStrokeColorCMYK(*GREY)
        c.setDash(3, 3)
        c.rect(x2, y, grid_w, grid_h, stroke=1, fill=0)
        c.setDash()
        text(
            c,
            x2 + grid_w / 2,
            y + grid_h / 2,
            unit_words.no_second_grid,
            fonts["regular"],
            10,
            GREY,
            "centre",
        )
    right = x2 + grid_w + 8 * MM
    # beside the grids, not over them: every symbol stays readable
    diagonal_mark(
        c, right + 30 * MM, y + grid_h * 0.3, 70 * MM, 25, "SPECIMEN - SANS VALEUR", fonts["bold"]
    )
    notes = [
        f"Gain selon les règles : {euros(specimen.amount_eur)}",
        "Cases gagnantes encadrées d'or" if specimen.tier != LOSING_TIER else "",
        _odds(d.block.size, int(d.tier_lots[specimen.tier]))
        if specimen.tier != LOSING_TIER
        else "",
    ]
    for i, note in enumerate(n for n in notes if n):
        text(c, right, y + grid_h - 4 * MM - i * 5 * MM, note, fonts["regular"], 8.5, INK)
    return {
        "specimen": specimen.number + 1,
        "tier": specimen.tier,
        "amount_eur": specimen.amount_eur,
        "teaser": specimen.teaser,
        "label": label,
        "composition": composition,
        "serial": serial,
        "grid": codes[:cells],
        "extra_grid": codes[cells:] if opens else None,
    }


def _odds(size: int, lots: int) -> str:
    return f"Chances du rang : 1 sur {odds_figure(size, lots)}"


def _draw_paytable(c: Canvas, game: OnlineGame, fonts: dict[str, str]) -> list[str]:
    """The on-screen paytable (decision 3), every symbol's pictogram, caption and code."""
    d = game.definition
    words = game.unit_words()
    w, h = PAGE
    text(c, MARGIN, h - 14 * MM, f"TABLE DES GAINS ET SYMBOLES - {d.title}", fonts["bold"], 17)
    for i, line in enumerate(simpleSplit(words.rules, fonts["regular"], 9.5, w - 2 * MARGIN)):
        text(c, MARGIN, h - 21 * MM - i * 4.5 * MM, line, fonts["regular"], 9.5)
    cols = 8
    cell_w = (w - 2 * MARGIN) / cols
    size = 22 * MM
    for i, (code, role) in enumerate(words.paytable):
        r, col = divmod(i, cols)
        x = MARGIN + col * cell_w
        y = h - 32 * MM - (r + 1) * 46 * MM
        game.draw_pictogram(c, code, x + (cell_w - size) / 2, y + 16 * MM, size, fonts["bold"])
        text(c, x + cell_w / 2, y + 11 * MM, d.captions[code], fonts["bold"], 9.5, INK, "centre")
        text(c, x + cell_w / 2, y + 6.5 * MM, f"code {code}", fonts["regular"], 7.5, GREY, "centre")
        text(c, x + cell_w / 2, y + 2 * MM, role, fonts["bold"], 8.5, RED, "centre")
    return [code for code, _ in words.paytable]


def write_unit_pack(out: Path, game: OnlineGame) -> dict[str, Any]:
    """Write ``proof-GAME.pdf`` and its PNGs into ``out``; returns the ``proof.json`` record."""
    from printpipe.proof import PROOF_FORMAT
    from printpipe.proof.previews import PREVIEW_DPI, write_previews
    from printpipe.render.canvas import new_canvas
    from printpipe.render.fonts import register_fonts

    d = game.definition
    specimens = make_composition_specimens(game)
    unit_pages = -(-len(specimens) // PER_PAGE)
    pages = unit_pages + 2
    name = f"proof-{d.id}.pdf"
    canvas = new_canvas(out / name, PAGE, FONTS)
    canvas.setTitle(f"Proof pack - {d.title} - game {d.number:04d}")
    canvas.setCreator("printpipe proof")
    fonts = register_fonts(FONTS)
    slug = f"{d.title} - jeu {d.number:04d} - épreuves, sans valeur"
    contents = [
        "p. 1 : cette page",
        "p. 2 : table des gains et symboles",
        f"p. 3-{pages} : {len(specimens)} unités spécimens, {PER_PAGE} par page :",
        "    chaque rang en plusieurs compositions, un perdant, un perdant teaser",
        f"proof.json, aperçus PNG {PREVIEW_DPI} dpi de chaque page",
    ]
    draw_cover(canvas, game, None, None, fonts, contents, unit_cover_facts(game))
    footer(canvas, fonts, slug, 1, pages)
    canvas.showPage()
    symbols = _draw_paytable(canvas, game, fonts)
    footer(canvas, fonts, slug, 2, pages)
    canvas.showPage()
    records = []
    for p in range(unit_pages):
        for k, specimen in enumerate(specimens[p * PER_PAGE : (p + 1) * PER_PAGE]):
            record = _draw_unit(canvas, game, specimen, PAGE[1] - (16 + k * 96) * MM, fonts)
            record["page"] = p + 3
            records.append(record)
        footer(canvas, fonts, slug, p + 3, pages)
        canvas.showPage()
    canvas.save()
    previews = write_previews(out / name, out, name.removesuffix(".pdf"))
    return {
        "format": PROOF_FORMAT,
        "game": {"id": d.id, "number": d.number, "definition_sha256": d.source_sha256},
        "template": None,
        "pdf": name,
        "pages": pages,
        "previews": previews,
        "preview_dpi": PREVIEW_DPI,
        "symbol_sheet": {"page": 2, "codes": symbols},
        "specimens": records,
        "press_proof": None,
        "plot": None,
    }
