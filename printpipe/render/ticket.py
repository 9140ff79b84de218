"""One ticket, front or back, drawn anywhere on a canvas: the one drawing path of the project.

The press export and the proofs (issue 5) both draw tickets through :class:`TicketRenderer`;
only the coating differs (:class:`Coating`):

- ``Coating.PLATE`` (press): the scratch zones are covered by the ``ScratchOff`` spot plate,
  overprinting, drawn at page level by :meth:`TicketRenderer.finish_page` (forms cannot carry
  spot colours or overprint states);
- ``Coating.PANEL`` (proof, covered): a silver process-colour panel with the game's mark and
  "GRATTEZ ICI" over each zone, as a player sees the ticket on the shelf;
- ``Coating.NONE`` (proof, revealed; also what tests decode): nothing over the zones.

Usage::

    renderer = TicketRenderer(canvas, template, game, texts, Coating.PANEL)
    renderer.draw_front(x, y, face)     # x, y: the trim's bottom-left corner, in points
    renderer.draw_back(x, y, face)
    renderer.finish_page()              # before every canvas.showPage()

Everything that is the same on every ticket of a variant is one Form XObject drawn once per
PDF; a ticket adds only placements of symbol forms, its barcodes as literal bars, and two
strings of digits.  Outside the scratch zones, tickets differ only by their serial and
inventory barcode (and the variant, which carries no information about the prize).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
from reportlab.lib.colors import CMYKColorSep
from reportlab.lib.utils import simpleSplit
from reportlab.pdfbase.pdfmetrics import stringWidth

from printpipe.errors import PrintpipeError
from printpipe.games.base import FrontArt, PaperGame
from printpipe.ids import TicketId, printed_codes
from printpipe.render.barcodes import Code128Digits, InterleavedTwoOfFive
from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText, register_fonts
from printpipe.render.symbols import define_symbol_forms, symbol_block_height
from printpipe.render.template import MM, Template

SCRATCH_OFF = CMYKColorSep(0, 0, 0, 0.35, spotName="ScratchOff", density=1)
"""The coating plate; its CMYK alternate (a light grey) is what a viewer without the plate shows."""
SILVER = (0.08, 0.05, 0.04, 0.3)
SILVER_DARK = (0.1, 0.07, 0.05, 0.45)
K = (0, 0, 0, 1)
WHITE = (0, 0, 0, 0)


class Coating(StrEnum):
    """What covers the scratch zones."""

    PLATE = "plate"
    PANEL = "panel"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class TicketFace:
    """What differs from one ticket to the next: all a renderer needs to draw one."""

    variant: int
    symbols: tuple[int, ...]  # the game's fields in order (grid cells, then the bonus box)
    serial: str
    inventory_code: str
    validation_code: str
    validation_text: str

    @staticmethod
    def of(
        game_number: int, pack: int, ticket: int, variant: int, symbols, virn: int
    ) -> TicketFace:
        """The face of ticket ``ticket`` of printed pack number ``pack``."""
        ticket_id = TicketId(game_number, pack, ticket)
        return TicketFace(
            int(variant),
            tuple(int(s) for s in symbols),
            ticket_id.serial,
            ticket_id.inventory_code,
            ticket_id.validation_code(int(virn)),
            ticket_id.validation_text(int(virn)),
        )


def faces_of_packs(
    game_number: int,
    first_pack: int,
    pack_size: int,
    variants: np.ndarray,
    symbols: np.ndarray,
    virns: np.ndarray,
) -> list[TicketFace]:
    """The faces of consecutive whole packs starting at printed pack ``first_pack``."""
    rows = np.arange(len(variants))
    codes = printed_codes(game_number, first_pack + rows // pack_size, rows % pack_size, virns)
    return [
        TicketFace(
            variant,
            tuple(row),
            code.serial,
            code.inventory_code,
            code.validation_code,
            code.validation_text,
        )
        for variant, row, code in zip(variants.tolist(), symbols.tolist(), codes, strict=True)
    ]


def load_texts(path: Path) -> dict[str, Any]:
    """The ticket's French texts (``templates/<game>/texts.toml``)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PrintpipeError(f"ticket texts {path} are unreadable: {exc}") from None


def _fmt_eur(amount: int) -> str:
    return f"{amount:,}".replace(",", " ") + " €"


class TicketRenderer:
    """Draws ticket fronts and backs of one game and template on one canvas (see module doc)."""

    def __init__(
        self,
        canvas: PressCanvas,
        template: Template,
        game: PaperGame,
        texts: dict[str, Any],
        coating: Coating = Coating.PLATE,
    ) -> None:
        self.c = canvas
        self.t = template
        self.game = game
        self.texts = texts
        self.coating = coating
        self.fonts = register_fonts(template.fonts)
        definition = game.definition
        self.codes = definition.symbol_codes
        self.variants = definition.variants
        forms = define_symbol_forms(
            canvas, template, definition.captions, self.fonts["bold"], game.symbol_drawings()
        )
        self.symbol_forms = [forms[code] for code in self.codes]
        self._layout()
        self.front_forms = [self._define_front(art) for art in game.fronts(texts)]
        self.back_form = self._define_back()
        self._coated: list[str] = []
        self.panel_places: list[tuple[str, str]] = []
        if coating is Coating.PANEL:
            self._define_panels()
        self._operators()

    # -- per ticket ---------------------------------------------------------------------------
    def draw_front(self, x: float, y: float, face: TicketFace) -> None:
        """The front of ``face`` with its trim's bottom-left corner at (x, y) points."""
        places = self._symbol_ops
        self.c.addLiteral(
            f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n"
            + self._front_ops[face.variant]
            + "".join([places[i][symbol] for i, symbol in enumerate(face.symbols)])
            + self.code128_place
            + self.code128.literal(face.validation_code)
            + "Q\nq 0 0 0 1 k "
            + self.validation_digits.literal(
                self.validation_text_x, self.validation_text_y, face.validation_text
            )
            + "Q\n"
            + (self._panel_ops if self.coating is Coating.PANEL else "")
            + "Q"
        )
        self.c.use_forms(self._front_form_names)
        if self.coating is Coating.PLATE:
            self._coated.append(f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n{self.scratch_rects}Q")

    def draw_back(self, x: float, y: float, face: TicketFace) -> None:
        """The back of ``face`` with its trim's bottom-left corner at (x, y) points."""
        self.c.addLiteral(
            f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n"
            + self._back_ops
            + self.itf_place
            + self.itf.literal(face.inventory_code)
            + "Q\nq 0 0 0 1 k "
            + self.serial_digits.literal(self.serial_x, self.serial_y, face.serial)
            + "Q\nQ"
        )
        self.c.use_forms(self._back_form_names)

    def finish_page(self) -> None:
        """Lay the ScratchOff plate over every front drawn on this page (press coating only)."""
        if not self._coated:
            return
        c = self.c
        c.saveState()
        c.setFillColor(SCRATCH_OFF)
        c.setFillOverprint(True)
        c.setOverprintMask(True)
        c.addLiteral("\n".join(self._coated))
        c.restoreState()
        self._coated = []

    # -- placements computed once -------------------------------------------------------------
    def _layout(self) -> None:
        t = self.t
        block_h = symbol_block_height(t)
        places = []
        for cell in t.grid_cells:
            x, y, w, h = t.box(cell)
            places.append((x + w / 2, y + (h - block_h) / 2))
        x, y, w, h = t.box(t.bonus_scratch)
        for i in (1, 3):
            places.append((x + w * i / 4, y + (h - block_h) / 2))
        self.symbol_places = [f"q 1 0 0 1 {px:.2f} {py:.2f} cm" for px, py in places]
        b = t.barcodes
        digits_font = self.fonts["digits"]
        x, y, w, h = t.box(t.validation_scratch)
        sample = TicketFace.of(self.game.definition.number, 1, 0, 0, (0,) * 11, 0)
        self.code128 = Code128Digits(
            len(sample.validation_code), b["code128_module"], b["code128_height"]
        )
        bars_w = self.code128.width_modules * b["code128_module"] * MM
        digits_h = b["digits_pt"]
        stack = b["code128_height"] * MM + 1.0 * MM + digits_h
        bottom = y + (h - stack) / 2
        bars_y = bottom + digits_h + 1.0 * MM
        self.code128_place = f"q 0 0 0 1 k 1 0 0 1 {x + (w - bars_w) / 2:.2f} {bars_y:.2f} cm\n"
        text_w = stringWidth(sample.validation_text, digits_font, digits_h)
        self.validation_text_x = x + (w - text_w) / 2
        self.validation_text_y = bottom + digits_h * 0.2
        x, y, w, h = t.box(t.back["inventory"])
        self.itf = InterleavedTwoOfFive(
            len(sample.inventory_code), b["itf_narrow"], b["itf_height"]
        )
        bars_w = self.itf.width_modules * b["itf_narrow"] * MM
        bars_y = y + (h - b["itf_height"] * MM) / 2
        self.itf_place = f"q 0 0 0 1 k 1 0 0 1 {x + (w - bars_w) / 2:.2f} {bars_y:.2f} cm\n"
        x, y, w, h = t.box(t.back["serial"])
        self.serial_pt = min(h * 0.8, 10.0)
        label = self.texts["back"]["serial_label"] + " "
        label_w = stringWidth(label, self.fonts["bold"], self.serial_pt)
        serial_w = stringWidth(sample.serial, digits_font, self.serial_pt)
        self.serial_label_x = x + (w - label_w - serial_w) / 2
        self.serial_x = self.serial_label_x + label_w
        self.serial_y = y + (h - self.serial_pt * 0.7) / 2
        alphabet = "0123456789- "
        self.validation_digits = CachedText(self.c, digits_font, digits_h, alphabet)
        self.serial_digits = CachedText(self.c, digits_font, self.serial_pt, alphabet)
        self.scratch_rects = (
            "".join(
                "{:.2f} {:.2f} {:.2f} {:.2f} re\n".format(*t.box(zone))
                for zone in t.scratch_zones()
            )
            + "f\n"
        )

    # -- static forms ---------------------------------------------------------------------------
    def _text_fit(
        self,
        text: str,
        zone: tuple[float, float, float, float],
        font: str,
        size: float,
        colour: tuple[float, float, float, float] = K,
        centred: bool = False,
        leading: float = 1.15,
    ) -> None:
        """Wrap ``text`` into the zone, shrinking the type until it fits."""
        x, y, w, h = zone
        c = self.c
        while True:
            lines = simpleSplit(text, font, size, w)
            if len(lines) * size * leading <= h or size <= 3.5:
                break
            size -= 0.1
        if len(lines) * size * leading > h:
            raise PrintpipeError(f"ticket template {self.t.path}: text does not fit: {text[:40]!r}")
        c.setFillColorCMYK(*colour)
        c.setFont(font, size)
        top = y + h - size * 0.95
        for i, line in enumerate(lines):
            ly = top - i * size * leading
            if centred:
                c.drawCentredString(x + w / 2, ly, line)
            else:
                c.drawString(x, ly, line)

    def _define_front(self, art: FrontArt) -> str:
        t, c, fonts = self.t, self.c, self.fonts
        front = self.texts["front"]
        name = f"front-{art.name}"
        bleed = t.bleed * MM
        width, height = t.width * MM, t.height * MM
        c.beginForm(name, -bleed, -bleed, width + bleed, height + bleed)
        c.setFillColorCMYK(*art.background)
        c.rect(-bleed, -bleed, width + 2 * bleed, height + 2 * bleed, stroke=0, fill=1)
        # title and artwork
        x, y, w, h = t.box(t.front["title"])
        size = h * 0.8
        while stringWidth(self.game.definition.title, fonts["bold"], size) > w:
            size -= 0.5
        c.setFillColorCMYK(*art.accent)
        c.setFont(fonts["bold"], size)
        c.drawCentredString(x + w / 2, y + (h - size * 0.72) / 2, self.game.definition.title)
        x, y, w, h = t.box(t.front["artwork"])
        c.setFillColorCMYK(*WHITE)
        c.circle(x + w / 2, y + h / 2, min(w, h) / 2, stroke=0, fill=1)
        c.saveState()
        side = min(w, h) * 0.86
        c.translate(x + (w - side) / 2, y + (h - side) / 2)
        c.scale(side / 100, side / 100)
        art.emblem(c)
        c.restoreState()
        self._text_fit(art.howto, t.box(t.front["howto"]), fonts["regular"], 6)
        # the grid's cells and the bonus box: white under the coating
        c.setFillColorCMYK(*WHITE)
        for cell in t.grid_cells:
            c.roundRect(*t.box(cell), 1.2 * MM, stroke=0, fill=1)
        x, y, w, h = t.box(t.front["bonus"])
        c.saveState()
        c.translate(x, y)
        roof = t.bonus_roof * MM
        art.bonus_box(c, w, h, roof)
        c.restoreState()
        c.setFillColorCMYK(*WHITE)
        c.setFont(fonts["bold"], min(roof * 0.55, 7))
        c.drawCentredString(x + w / 2, y + h - roof + roof * 0.12, art.bonus_label)
        c.rect(*t.box(t.bonus_scratch), stroke=0, fill=1)
        self._paytable(t.box(t.front["paytable"]), art)
        # validation zone: a label band, then the retailer's scratch zone
        x, y, w, h = t.box(t.front["validation"])
        label_h = t.validation_label * MM
        c.setFillColorCMYK(*K)
        c.rect(x, y + h - label_h, w, label_h, stroke=0, fill=1)
        c.setFillColorCMYK(*WHITE)
        c.setFont(fonts["bold"], min(label_h * 0.6, 6.5))
        c.drawCentredString(x + w / 2, y + h - label_h * 0.72, front["validation_label"])
        c.rect(*t.box(t.validation_scratch), stroke=0, fill=1)
        self._text_fit(front["legal"], t.box(t.front["legal"]), fonts["regular"], 5.5, centred=True)
        c.endForm()
        return name

    def _paytable(self, zone: tuple[float, float, float, float], art: FrontArt) -> None:
        c, fonts = self.c, self.fonts
        x, y, w, h = zone
        c.setFillColorCMYK(*WHITE)
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        rows = art.paytable
        line = h / (len(rows) + 1.3)
        size = min(line * 0.78, 7)
        pad = 1.2 * MM
        for left, right in rows:  # one size for the whole table, the widest row fitting
            while size > 3.5 and (
                stringWidth(left, fonts["regular"], size)
                + stringWidth(right, fonts["bold"], size)
                + 3 * pad
                > w
            ):
                size -= 0.1
        c.setFillColorCMYK(*art.accent)
        c.setFont(fonts["bold"], size)
        top = y + h - line
        c.drawCentredString(x + w / 2, top + line * 0.2, self.texts["front"]["paytable_title"])
        c.setFillColorCMYK(*K)
        for i, (left, right) in enumerate(rows):
            ly = top - (i + 1) * line + line * 0.25
            c.setFont(fonts["regular"], size)
            c.drawString(x + pad, ly, left)
            c.setFont(fonts["bold"], size)
            c.drawRightString(x + w - pad, ly, right)

    def _define_back(self) -> str:
        t, c, fonts = self.t, self.c, self.fonts
        back = self.texts["back"]
        bleed = t.bleed * MM
        width, height = t.width * MM, t.height * MM
        c.beginForm("back", -bleed, -bleed, width + bleed, height + bleed)
        c.setFillColorCMYK(0, 0, 0, 0.06)
        c.rect(-bleed, -bleed, width + 2 * bleed, height + 2 * bleed, stroke=0, fill=1)
        x, y, w, h = t.box(t.back["title"])
        title = self.game.definition.title
        size = h * 0.75
        while stringWidth(title, fonts["bold"], size) > w:
            size -= 0.5
        c.setFillColorCMYK(*K)
        c.setFont(fonts["bold"], size)
        c.drawCentredString(x + w / 2, y + (h - size * 0.72) / 2, title)
        definition = self.game.definition
        lots = sum(p.lots for p in definition.prizes)
        odds = f"{definition.block.size / lots:.2f}".replace(".", ",")
        x, y, w, h = t.box(t.back["odds"])
        c.setFillColorCMYK(*WHITE)
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        rows = [
            (f"{p.lots:,}".replace(",", " ") + " lots de", _fmt_eur(p.amount_eur))
            for p in definition.prizes
        ]
        line = h / (len(rows) + 2.4)
        size = min(line * 0.8, 7)
        c.setFillColorCMYK(*K)
        c.setFont(fonts["bold"], size)
        head = back["odds_title"].format(
            odds=odds, block_size=f"{definition.block.size:,}".replace(",", " ")
        )
        while stringWidth(head, fonts["bold"], size) > w - 2 * MM:
            size -= 0.1
        top = y + h - line
        c.drawCentredString(x + w / 2, top + line * 0.1, head)
        c.setFont(fonts["regular"], size)
        c.drawCentredString(x + w / 2 + 3 * MM, top - line * 0.9, back["lots_title"])
        for i, (left, right) in enumerate(rows):
            ly = top - (i + 2) * line
            c.drawRightString(x + w / 2 + 2 * MM, ly, left)
            c.drawString(x + w / 2 + 4 * MM, ly, right)
        self._text_fit(" ".join(back["legal"]), t.box(t.back["legal"]), fonts["regular"], 6.5)
        x, y, w, h = t.box(t.back["inventory"])
        c.setFillColorCMYK(*WHITE)
        c.rect(x, y, w, h, stroke=0, fill=1)
        c.setFillColorCMYK(*K)
        c.setFont(fonts["bold"], self.serial_pt)
        c.drawString(self.serial_label_x, self.serial_y, back["serial_label"])
        c.endForm()
        return "back"

    def _define_panels(self) -> None:
        """Proof coating: silver panels with the game's mark and words, one form per zone size."""
        t, c = self.t, self.c
        self.panel_places = []
        kinds: dict[tuple[float, float], str] = {}
        for zone in t.scratch_zones():
            x, y, w, h = t.box(zone)
            key = (round(w, 2), round(h, 2))
            if key not in kinds:
                kinds[key] = name = f"panel-{len(kinds)}"
                c.beginForm(name, 0, 0, w, h)
                c.setFillColorCMYK(*SILVER)
                c.roundRect(0, 0, w, h, 1.2 * MM, stroke=0, fill=1)
                c.setFillColorCMYK(*SILVER_DARK)
                side = min(h * 0.62, w * 0.5)
                c.saveState()
                c.translate((w - side) / 2, h - side - h * 0.08)
                c.scale(side / 100, side / 100)
                self.game.coating_mark()(c)
                c.restoreState()
                c.setFillColorCMYK(*K)
                c.setFont(self.fonts["bold"], min(h * 0.16, 6))
                c.drawCentredString(w / 2, h * 0.08, self.texts["front"]["scratch"])
                c.endForm()
            self.panel_places.append((f"q 1 0 0 1 {x:.2f} {y:.2f} cm", kinds[key]))

    def _operators(self) -> None:
        """Each form placement as its final operators, formatted once for every ticket."""
        draw = self.c.form_operator
        self._symbol_ops = [
            [f"{place} {draw(form)} Q\n" for form in self.symbol_forms]
            for place in self.symbol_places
        ]
        self._front_ops = [f"{draw(form)}\n" for form in self.front_forms]
        self._back_ops = f"{draw(self.back_form)}\n"
        self._panel_ops = "".join(f"{place} {draw(form)} Q\n" for place, form in self.panel_places)
        panels = [form for _, form in self.panel_places]
        self._front_form_names = [*self.front_forms, *self.symbol_forms, *panels]
        self._back_form_names = [self.back_form]
