"""The cover page: what the lottery signs.  Every figure comes from the game definition.

The prize structure of a block with odds ("1 in X" = block size / lots) and share of sales
(tier total / (block size x price)), its totals checked again here against the regulation's
(article 3, ``[totals]`` in ``game.toml``), the block parameters, the identifiers that tie
the proof to the files that will print (definition, template and texts SHA-256, version),
and boxes for the approval signatures.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from reportlab.pdfgen.canvas import Canvas

from printpipe import __version__
from printpipe.errors import PrintpipeError
from printpipe.french import cents, euros, number, percent
from printpipe.games.base import Game, PaperGame, is_paper
from printpipe.proof.page import GREY, INK, MARGIN, PAGE, RED, text
from printpipe.proof.specimen_pages import odds_figure
from printpipe.render.template import MM, Template


@dataclass(frozen=True)
class PrizeRow:
    """One line of the cover's prize table."""

    tier: int
    lots: int
    amount_eur: int
    total_eur: int
    odds: float  # 1 in X
    share: float  # of the block's sales


def prize_rows(game: Game) -> tuple[list[PrizeRow], PrizeRow]:
    """The prize table of a block and its totals row; refuses totals the regulation contradicts."""
    definition = game.definition
    size = definition.block.size
    sales_eur = size * definition.price_cents / 100
    rows = [
        PrizeRow(
            p.tier,
            p.lots,
            p.amount_eur,
            p.lots * p.amount_eur,
            size / p.lots,
            p.lots * p.amount_eur / sales_eur,
        )
        for p in definition.prizes
    ]
    lots = sum(r.lots for r in rows)
    total = sum(r.total_eur for r in rows)
    want_lots, want_total = definition.regulation_totals
    if lots != want_lots or total != want_total:
        raise PrintpipeError(
            f"the prize table gives {lots} lots and {total} EUR, the regulation "
            f"{want_lots} lots and {want_total} EUR"
        )
    return rows, PrizeRow(0, lots, 0, total, size / lots, total / sales_eur)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class CoverFacts:
    """What a cover says that depends on the kind of game (paper ticket or online unit)."""

    subtitle: str
    item: str  # what a block is made of: "tickets", "unités"
    checks: list[str]  # lines under the prize table
    identifiers: list[tuple[str, str]]
    params: list[tuple[str, str]]


def ticket_cover_facts(game: PaperGame, template: Template, texts_path: Path) -> CoverFacts:
    """The cover facts of a paper ticket game: its variants, template, texts, packs."""
    d = game.definition
    price = cents(d.price_cents)
    _, totals = prize_rows(game)
    b = d.block
    return CoverFacts(
        subtitle=f"Jeu n° {d.number:04d} ({d.id}) - ticket à {price} - "
        f"visuels {' / '.join(game.variant_captions())}",
        item="tickets",
        checks=[
            f"Contrôle : {number(totals.lots)} lots et {euros(totals.total_eur)}, égaux aux totaux "
            "du règlement (article 3).",
            "Chances = taille du bloc / lots ; part des ventes = total / "
            f"({number(d.block.size)} x {price} = {euros(d.block.size * d.price_cents // 100)}).",
        ],
        identifiers=[
            ("Définition", f"{d.source.name}  sha256 {d.source_sha256}"),
            ("Gabarit", f"{template.path.name}  sha256 {template.sha256}"),
            ("Textes", f"{texts_path.name}  sha256 {_sha(texts_path)}"),
            ("Logiciel", f"printpipe {__version__}"),
            ("Specimens", "lot 000000 (jamais émis), tirés par le jeu d'un flux fixe public"),
        ],
        params=[
            ("Taille d'un bloc", f"{number(b.size)} tickets"),
            ("Pools", f"{b.pools} de {number(b.pool_size)} tickets"),
            (
                "Carnets",
                f"{number(b.packs)} de {b.pack_size} tickets ({number(b.packs_per_pool)} par pool)",
            ),
            ("Perdants consécutifs", f"au plus {b.max_losing_run} dans un carnet"),
            ("Teasers", f"{b.teaser_rate * 100:g} % des perdants montrent le multiplicateur"),
            ("Gros lots", f">= {number(b.high_tier_min_eur)} € : au plus un par carnet"),
            (
                "Lots majeurs",
                f">= {number(b.distinct_pools_min_eur)} € : chacun dans un pool différent",
            ),
        ],
    )


def draw_cover(
    c: Canvas,
    game: Game,
    template: Template | None,
    texts_path: Path | None,
    fonts: dict[str, str],
    contents: list[str],
    facts: CoverFacts | None = None,
) -> None:
    """Draw the cover page (without showPage); ``facts`` default to a paper ticket's."""
    d = game.definition
    if facts is None:
        assert template is not None and texts_path is not None and is_paper(game)
        facts = ticket_cover_facts(game, template, texts_path)
    bold, regular = fonts["bold"], fonts["regular"]
    w, h = PAGE
    text(c, MARGIN, h - 17 * MM, f"BON À TIRER - {d.title}", bold, 22)
    text(c, MARGIN, h - 25 * MM, facts.subtitle, regular, 11)
    text(c, w - MARGIN, h - 17 * MM, "ÉPREUVES - SANS VALEUR", bold, 12, RED, "right")

    # the prize table of a block
    rows, totals = prize_rows(game)
    cols = [  # (header, right edge in mm from the margin)
        ("Rang", 12),
        ("Lots par bloc", 42),
        ("Gain", 66),
        ("Total", 96),
        ("Chances : 1 sur", 130),
        ("Part des ventes", 160),
    ]
    top = h - 37 * MM
    text(
        c,
        MARGIN,
        top + 3 * MM,
        f"Tableau des lots d'un bloc de {number(d.block.size)} {facts.item}",
        bold,
        10,
    )
    line = 5.6 * MM
    y = top - line
    for head, right in cols:
        text(c, MARGIN + right * MM, y, head, bold, 8.5, align="right")
    c.setStrokeColorCMYK(*INK)
    c.setLineWidth(0.5)
    c.line(MARGIN, y - 1.8 * MM, MARGIN + 162 * MM, y - 1.8 * MM)

    def row(values: list[str], font: str) -> None:
        for value, (_, right) in zip(values, cols, strict=True):
            text(c, MARGIN + right * MM, y, value, font, 8.5, align="right")

    for r in rows:
        y -= line
        row(
            [
                str(r.tier),
                number(r.lots),
                euros(r.amount_eur),
                euros(r.total_eur),
                odds_figure(d.block.size, r.lots),
                percent(r.share, 3),
            ],
            regular,
        )
    losers = d.block.size - totals.lots
    y -= line
    row(["-", number(losers), "perdant", "-", "-", "-"], regular)
    c.line(MARGIN, y - 1.8 * MM, MARGIN + 162 * MM, y - 1.8 * MM)
    y -= line
    row(
        [
            "Total",
            number(totals.lots),
            "",
            euros(totals.total_eur),
            odds_figure(d.block.size, totals.lots),
            percent(totals.share, 3),
        ],
        bold,
    )
    y -= line * 1.2
    checks = facts.checks
    for i, line_text in enumerate(checks):
        text(c, MARGIN, y - i * 4.2 * MM, line_text, regular, 8)

    # identifiers, in full: they tie the signed proof to the files that will print
    y -= 15 * MM
    text(c, MARGIN, y, "Identifiants", bold, 10)
    ids = facts.identifiers
    for name, value in ids:
        y -= 4.2 * MM
        text(c, MARGIN, y, name, bold, 7.5)
        text(c, MARGIN + 20 * MM, y, value, regular, 7.5)

    # the block parameters and identifiers, right column
    x = MARGIN + 178 * MM
    params = facts.params
    y = top + 3 * MM
    text(c, x, y, "Paramètres du bloc", bold, 10)
    for name, value in params:
        y -= 5 * MM
        text(c, x, y, name, bold, 8)
        text(c, x + 32 * MM, y, value, regular, 8)
    y -= 9 * MM
    text(c, x, y, "Contenu", bold, 10)
    for item in contents:
        y -= 4.5 * MM
        text(c, x, y, item, regular, 8)

    # approval
    box_y, box_h = 14 * MM, 34 * MM
    box_w = (w - 2 * MARGIN - 10 * MM) / 2
    for i, who in enumerate(("Pour la loterie : bon pour accord", "Pour le producteur")):
        bx = MARGIN + i * (box_w + 10 * MM)
        c.setStrokeColorCMYK(*INK)
        c.setLineWidth(0.6)
        c.rect(bx, box_y, box_w, box_h, stroke=1, fill=0)
        text(c, bx + 3 * MM, box_y + box_h - 6 * MM, who, bold, 9.5)
        for j, field in enumerate(("Nom et fonction :", "Date :", "Signature :")):
            text(c, bx + 3 * MM, box_y + box_h - (13 + j * 8) * MM, field, regular, 8.5, GREY)
