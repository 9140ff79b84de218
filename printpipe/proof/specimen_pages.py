"""Specimen pages: one specimen a page, covered front, revealed front and back, at 100 %.

The tickets are drawn by the press renderer (:class:`~printpipe.render.ticket.TicketRenderer`),
never by a drawing of their own, with the press file's layers: the covered front with
``Coating.PLATE`` (the ScratchOff coating and its decoration, exactly what the press prints),
the revealed one with ``Coating.NONE``.  One renderer serves both, because a
PDF can define each of its forms only once; :func:`draw_revealed` switches its coating for
one ticket.  Everything the page says about the specimen (tier, amount, symbols) is printed
outside the trim, so the ticket itself stays exactly as printed apart from the SPECIMEN mark.
"""

from __future__ import annotations

from typing import Any

from reportlab.pdfgen.canvas import Canvas

from printpipe import french
from printpipe.games.base import LOSING_TIER, VARIANT_COLUMN, PaperGame
from printpipe.ids import SPECIMEN_PACK
from printpipe.proof.page import (
    BLEED_LINE,
    GREY,
    MARGIN,
    PAGE,
    SPECIMEN_TEXT,
    TRIM_LINE,
    diagonal_mark,
    fit_size,
    scale_bar,
    text,
    trim_and_bleed,
)
from printpipe.proof.specimens import Specimen
from printpipe.render.template import MM, Template
from printpipe.render.ticket import Coating, TicketFace, TicketRenderer

GAP = 16 * MM  # between trims: room for both tickets' bleed and crop marks
TRIM_BOTTOM = 42 * MM
COLUMNS = (
    ("covered_front", "RECTO COUVERT (tel qu'en vente)"),
    ("revealed_front", "RECTO DÉCOUVERT (gratté)"),
    ("back", "VERSO"),
)


def draw_revealed(renderer: TicketRenderer, x: float, y: float, face: TicketFace) -> None:
    """The front with nothing over the scratch zones, from the same renderer and forms."""
    coating = renderer.coating
    renderer.coating = Coating.NONE
    try:
        renderer.draw_front(x, y, face)
    finally:
        renderer.coating = coating


def specimen_label(game: PaperGame, specimen: Specimen) -> str:
    """The heading of a specimen: its variant, tier and amount, in the game's words."""
    return game.specimen_words(
        specimen.variant, specimen.symbols, specimen.tier, specimen.teaser
    ).label


def draw_specimen_page(
    c: Canvas,
    renderer: TicketRenderer,
    game: PaperGame,
    specimen: Specimen,
    index: int,
    count: int,
) -> dict[str, Any]:
    """Draw one specimen's page (without showPage); returns its record for ``proof.json``."""
    definition, t, fonts = game.definition, renderer.t, renderer.fonts
    codes = definition.symbol_codes
    words = game.specimen_words(specimen.variant, specimen.symbols, specimen.tier, specimen.teaser)
    face = TicketFace.of(
        definition.number,
        SPECIMEN_PACK,
        specimen.number,
        specimen.variant,
        specimen.symbols,
        specimen.virn,
    )
    width = t.width * MM
    x0 = (PAGE[0] - 3 * width - 2 * GAP) / 2
    places = {name: (x0 + i * (width + GAP), TRIM_BOTTOM) for i, (name, _) in enumerate(COLUMNS)}
    renderer.draw_front(*places["covered_front"], face)
    draw_revealed(renderer, *places["revealed_front"], face)
    renderer.draw_back(*places["back"], face)
    renderer.finish_page()

    # the SPECIMEN mark across each ticket, clear of both barcodes
    height = t.height * MM
    grid = t.box(t.front["grid"])
    odds = t.box(t.back["odds"])
    for name, (x, y) in places.items():
        zx, zy, zw, zh = odds if name == "back" else grid
        diagonal_mark(
            c, x + zx + zw / 2, y + zy + zh / 2, 100 * MM, 58, SPECIMEN_TEXT, fonts["bold"]
        )
        trim_and_bleed(c, t, x, y)
    top = TRIM_BOTTOM + height
    for name, caption in COLUMNS:
        x, _ = places[name]
        text(c, x + width / 2, top + 10 * MM, caption, fonts["bold"], 9, align="centre")

    # labels, all outside the trim
    label = words.label
    text(c, MARGIN, PAGE[1] - 14 * MM, label, fonts["bold"], 17)
    text(
        c,
        PAGE[0] - MARGIN,
        PAGE[1] - 14 * MM,
        f"SPECIMEN {index}/{count}",
        fonts["bold"],
        12,
        align="right",
    )
    tier_lots = int(definition.tier_lots[specimen.tier])
    shows = words.shows
    if specimen.tier != LOSING_TIER:
        odds_text = f"1 chance sur {odds_figure(definition.block.size, tier_lots)}"
        shows += f"  {french.number(tier_lots)} lots par bloc ({odds_text})."
    text(c, MARGIN, PAGE[1] - 21 * MM, shows, fonts["regular"], 9.5)

    lines = [
        f"N° de série (verso) : {face.serial}    Code de validation (sous la zone détaillant) : "
        f"{face.validation_text}    Lot 000000 : jamais émis, la validation répond SPECIMEN.",
        f"{words.symbols}    Gain selon les règles du jeu : {french.euros(specimen.amount_eur)}",
    ]
    for i, line in enumerate(lines):
        size = fit_size(line, fonts["regular"], 8.5, PAGE[0] - 2 * MARGIN)
        text(c, MARGIN, 28 * MM - i * 5.5 * MM, line, fonts["regular"], size)
    _legend(c, fonts, t, 14 * MM)
    fields: dict[str, list[str]] = {}
    start = 0
    for field in definition.fields:
        fields[field.name] = [codes[s] for s in specimen.symbols[start : start + field.width]]
        start += field.width
    return {
        "page": None,  # set by the caller, who knows the page number
        "specimen": index,
        VARIANT_COLUMN: definition.variants[specimen.variant],
        "tier": specimen.tier,
        "amount_eur": specimen.amount_eur,
        "teaser": specimen.teaser,
        "label": label,
        "serial": face.serial,
        "validation_code": face.validation_code,
        "inventory_code": face.inventory_code,
        **fields,
        "trim_pt": {
            name: [round(x, 2), round(y, 2), round(width, 2), round(height, 2)]
            for name, (x, y) in places.items()
        },
    }


def odds_figure(block_size: int, lots: int) -> str:
    odds = block_size / lots
    return french.number(odds) if odds >= 100 else french.number(odds, 2)


def _legend(c: Canvas, fonts: dict[str, str], t: Template, y: float) -> None:
    x = MARGIN
    c.saveState()
    c.setLineWidth(0.8)
    c.setStrokeColorCMYK(*TRIM_LINE)
    c.line(x, y + 1, x + 8 * MM, y + 1)
    c.setStrokeColorCMYK(*BLEED_LINE)
    c.setDash(3, 2)
    c.line(x + 62 * MM, y + 1, x + 70 * MM, y + 1)
    c.restoreState()
    text(
        c,
        x + 10 * MM,
        y,
        f"coupe (format fini {t.width:g} x {t.height:g} mm)",
        fonts["regular"],
        7.5,
        GREY,
    )
    text(c, x + 72 * MM, y, f"fond perdu ({t.bleed:g} mm)", fonts["regular"], 7.5, GREY)
    scale_bar(c, PAGE[0] - MARGIN - 85 * MM, y, fonts["regular"])
    text(
        c,
        x + 105 * MM,
        y,
        "Imprimer à 100 % (taille réelle).",
        fonts["regular"],
        7.5,
        GREY,
    )
