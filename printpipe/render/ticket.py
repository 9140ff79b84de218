"""One ticket, front or back, drawn anywhere on a canvas: the one drawing path of the project.

The press export and the proofs draw tickets through :class:`TicketRenderer`, layer by layer,
each layer on its own separation (:mod:`printpipe.render.inks`), bottom to top:

1. the static artwork, process CMYK: one Form XObject per variant's front, one for the back;
2. ``Blocking``, the opaque layer under every play area (against candling);
3. ``Variable``, the variable imaging: symbols with their captions, the validation barcode
   and digits on the front, the serial and inventory barcode on the back;
4. ``ScratchOff``, the coating over every scratch zone, spread beyond everything it hides by
   the template's ``coating.spread`` and shaped by its ``coating.corner``;
5. ``ScratchDecor``, the decoration printed on the coating: the game's mark and
   "GRATTEZ ICI" on the play areas, the retailer's words on the validation zone.

Layers 2 to 5 overprint, so none erases another on its plate.  Forms cannot carry spot
colours in reportlab (their resources have no colour spaces), so the blocking, symbol, coating
and decoration forms paint in *tints of the current colour space*, which the page sets before
placing them: one form, drawn once per PDF, prints on its layer's plate.

What covers the scratch zones is the :class:`Coating`: ``plate`` (press, and the proofs'
covered front: layers 4 and 5) or ``none`` (the ticket as scratched: the proofs' revealed
front, and what tests decode).

A page is written layer by layer: ``draw_front`` and ``draw_back`` collect the page's
tickets, and :meth:`TicketRenderer.finish_page` writes each layer of all of them in turn
(tickets do not overlap, so a page's layer is one run of placements in one colour space).
Usage::

    renderer = TicketRenderer(canvas, template, game, texts, Coating.PLATE)
    renderer.draw_front(x, y, face)     # x, y: the trim's bottom-left corner, in points
    renderer.draw_back(x, y, face)
    renderer.finish_page()              # then draw over the tickets, then canvas.showPage()

Each side splits into what the plates print (``draw_front_static``, ``draw_back_static``: the
artwork, blocking, coating and decoration) and what is imaged (``draw_front_variable``,
``draw_back_variable``); ``draw_front`` and ``draw_back`` are both.  A press sheet draws the
first once per file into two forms and each page's imaging alone
(:mod:`printpipe.render.sheet`, :meth:`TicketRenderer.take_layers`); an imaging file's renderer
(``imaging_only``) defines no static form at all.

A ticket adds only placements of forms, its barcodes as literal bars, and two strings of
digits.  Outside the scratch zones, tickets differ only by their serial and inventory barcode
(and the variant, which carries no information about the prize).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from reportlab.lib.utils import simpleSplit
from reportlab.pdfbase.pdfmetrics import stringWidth

from printpipe import french
from printpipe.errors import PrintpipeError
from printpipe.games.base import FrontArt, PaperGame
from printpipe.ids import TicketId, printed_codes
from printpipe.render.barcodes import Code128Digits, InterleavedTwoOfFive
from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText, register_fonts
from printpipe.render.inks import BLOCKING, SCRATCH_DECOR, SCRATCH_OFF, VARIABLE
from printpipe.render.symbols import define_symbol_forms, symbol_block_height
from printpipe.render.template import MM, Coating, Rect, Template

K = (0, 0, 0, 1)
WHITE = (0, 0, 0, 0)
MARK_TINT = 0.6
"""The decoration's mark (e.g. a paw print) in a lighter tint than its words."""
Box = tuple[float, float, float, float]
"""x, y, width, height in points from the trim's bottom-left corner."""
FIT = 0.01
"""What a scratch zone may lack of the coating's spread, points (rounding)."""


@dataclass(frozen=True, slots=True)
class ScratchZone:
    """One scratch zone as laid out: what it hides, its coating, the light base of the play
    area under it, and its blocking layer."""

    name: str
    hidden: Box
    """The bounding box of what the coating hides (symbols and captions, or the code)."""
    coating: Box
    """The coating: the zone, which holds ``hidden`` with ``spread`` to spare on every side."""
    base: Box
    """The play area's light base (static artwork) and its blocking layer: the coating less
    its spread on every side, so at least ``hidden``, and the coating covers it with its
    spread, corners included: nothing of the base frames the coating."""
    words: str
    """The decoration's words on the coating."""
    mark: bool
    """Whether the game's mark is printed on the coating too."""


def _grow(box: Box, by: float) -> Box:
    x, y, w, h = box
    return (x - by, y - by, w + 2 * by, h + 2 * by)


def _holds(outer: Box, inner: Box) -> bool:
    """Whether ``inner`` lies inside ``outer`` (give or take :data:`FIT`)."""
    x, y, w, h = outer
    ix, iy, iw, ih = inner
    return ix >= x - FIT and iy >= y - FIT and ix + iw <= x + w + FIT and iy + ih <= y + h + FIT


def _union(*boxes: Box) -> Box:
    left = min(b[0] for b in boxes)
    bottom = min(b[1] for b in boxes)
    right = max(b[0] + b[2] for b in boxes)
    top = max(b[1] + b[3] for b in boxes)
    return (left, bottom, right - left, top - bottom)


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
        game_number: int, pack: int, ticket: int, variant: int, symbols: Sequence[int], virn: int
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


class TicketRenderer:
    """Draws ticket fronts and backs of one game and template on one canvas (see module doc)."""

    def __init__(
        self,
        canvas: PressCanvas,
        template: Template,
        game: PaperGame,
        texts: dict[str, Any],
        coating: Coating = Coating.PLATE,
        *,
        imaging_only: bool = False,
        static_only: bool = False,
    ) -> None:
        """``imaging_only``: draws only the ``Variable`` layer (an imaging file), so the
        static artwork's forms are not even defined (they would be written in the file);
        ``static_only``: the plates only (a static file), no symbol form defined."""
        self.c = canvas
        self.imaging_only = imaging_only
        self.t = template
        self.game = game
        self.texts = texts
        self.coating = coating
        self.fonts = register_fonts(template.fonts)
        definition = game.definition
        self.codes = definition.symbol_codes
        self.variants = definition.variants
        self.symbol_forms: list[str] = []
        if not static_only:
            forms = define_symbol_forms(
                canvas, template, definition.captions, self.fonts["bold"], game.symbol_drawings()
            )
            self.symbol_forms = [forms[code] for code in self.codes]
        self._layout()
        self.zones = self._scratch_zones()
        self.artwork = self._designer_forms() if not imaging_only else {}
        if not imaging_only:
            self.front_forms = [self._define_front(art) for art in game.fronts(texts)]
            self.back_form = self._define_back()
            self._define_layer_forms()
        self._static: list[str] = []
        """This page's tickets, not yet written: their static artwork's placements, their
        variable imaging, the placements of the fronts and of those coated."""
        self._variable: list[str] = []
        self._fronts: list[str] = []
        self._coated: list[str] = []
        self._operators()

    # -- per ticket ---------------------------------------------------------------------------
    def draw_front(self, x: float, y: float, face: TicketFace) -> None:
        """The front of ``face`` with its trim's bottom-left corner at (x, y) points (written to
        the page by :meth:`finish_page`)."""
        self.draw_front_static(x, y, face.variant)
        self.draw_front_variable(x, y, face)

    def draw_front_static(self, x: float, y: float, variant: int) -> None:
        """The plates' part of a front (artwork, blocking, coating and decoration): what a
        press position prints on every impression."""
        place = f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n"
        self._static.append(place + self._front_ops[variant])
        self._fronts.append(place)
        if self.coating is Coating.PLATE:
            self._coated.append(place)

    def draw_front_variable(self, x: float, y: float, face: TicketFace) -> None:
        """The imaged part of a front: symbols, validation barcode and digits."""
        place = f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n"
        symbols = self._symbol_ops
        self._variable.append(
            place
            + "".join([symbols[i][symbol] for i, symbol in enumerate(face.symbols)])
            + self.code128_place
            + self.code128.literal(face.validation_code)
            + "Q\n"
            + self.validation_digits.literal(
                self.validation_text_x, self.validation_text_y, face.validation_text
            )
            + "Q\n"
        )

    def draw_back(self, x: float, y: float, face: TicketFace) -> None:
        """The back of ``face`` with its trim's bottom-left corner at (x, y) points (written to
        the page by :meth:`finish_page`)."""
        self.draw_back_static(x, y)
        self.draw_back_variable(x, y, face)

    def draw_back_static(self, x: float, y: float) -> None:
        """The plates' part of a back: its artwork."""
        self._static.append(f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n" + self._back_ops)

    def draw_back_variable(self, x: float, y: float, face: TicketFace) -> None:
        """The imaged part of a back: the inventory barcode and the serial."""
        self._variable.append(
            f"q 1 0 0 1 {x:.2f} {y:.2f} cm\n"
            + self.itf_place
            + self.itf.literal(face.inventory_code)
            + "Q\n"
            + self.serial_digits.literal(self.serial_x, self.serial_y, face.serial)
            + "Q\n"
        )

    def finish_page(self) -> None:
        """Write the tickets drawn since the last call onto the page, one layer after the other
        (the module's stack): every ticket's static artwork, the blocking layer under every
        front, the variable imaging, then, ``plate`` coating only, the coating and its
        decoration over the fronts drawn coated.  Call it after a page's tickets, before
        drawing over them and before every ``showPage``."""
        if not self._static and not self._variable:
            return
        under, variable, over = self.take_layers()
        self.c.addLiteral(under + variable + over)
        self.c.use_forms(self.form_names)

    def take_layers(self) -> tuple[str, str, str]:
        """The layers of the tickets drawn since the last call, as three runs of operators for
        the current page or form: under the imaging (artwork, blocking), the imaging
        (``Variable``), over it (coating, decoration); then forgets them.  A press sheet puts
        the first and last in forms of its own, the same on every sheet
        (:mod:`printpipe.render.sheet`)."""
        overprint = self.c.gstate_operator(op=True, OP=True, OPM=0)  # each page has its own
        under = "".join(self._static + self._blocking_layer(overprint))
        variable = "".join(self._variable_layer(overprint)) if self._variable else ""
        over = "".join(self._coating_layers(overprint))
        self._static, self._variable, self._fronts, self._coated = [], [], [], []
        return under, variable, over

    @property
    def form_names(self) -> list[str]:
        """The forms the tickets' layers place (declare them on each page or form using them)."""
        return self._coated_form_names if self.coating is Coating.PLATE else self._form_names

    def _blocking_layer(self, overprint: str) -> list[str]:
        if not self._fronts:
            return []
        fill, _ = self.c.spot_operators(BLOCKING)
        return [
            f"q {fill} {overprint}\n",
            *[place + self._blocking_op for place in self._fronts],
            "Q\n",
        ]

    def _variable_layer(self, overprint: str) -> list[str]:
        fill, stroke = self.c.spot_operators(VARIABLE)
        return [f"q {fill} {stroke} {overprint}\n", *self._variable, "Q\n"]

    def _coating_layers(self, overprint: str) -> list[str]:
        ops: list[str] = []
        for ink, form_op in self._coating_ops if self._coated else ():
            fill, stroke = self.c.spot_operators(ink)
            ops.append(f"q {fill} {stroke} {overprint}\n")
            ops.extend([place + form_op for place in self._coated])
            ops.append("Q\n")
        return ops

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
        descent = digits_h * 0.25  # below the digits' baseline, which is 0.2 of them up
        stack = b["code128_height"] * MM + 1.0 * MM + digits_h
        bottom = y + (h - stack + descent - digits_h * 0.2) / 2  # all it hides, centred
        bars_y = bottom + digits_h + 1.0 * MM
        bars_x = x + (w - bars_w) / 2
        self.code128_place = f"q 1 0 0 1 {bars_x:.2f} {bars_y:.2f} cm\n"
        text_w = stringWidth(sample.validation_text, digits_font, digits_h)
        self.validation_text_x = x + (w - text_w) / 2
        self.validation_text_y = bottom + digits_h * 0.2
        self.code_box = _union(
            (bars_x, bars_y, bars_w, b["code128_height"] * MM),
            (self.validation_text_x, self.validation_text_y - descent, text_w, digits_h),
        )
        x, y, w, h = t.box(t.back["inventory"])
        self.itf = InterleavedTwoOfFive(
            len(sample.inventory_code), b["itf_narrow"], b["itf_height"]
        )
        bars_w = self.itf.width_modules * b["itf_narrow"] * MM
        bars_y = y + (h - b["itf_height"] * MM) / 2
        self.itf_place = f"q 1 0 0 1 {x + (w - bars_w) / 2:.2f} {bars_y:.2f} cm\n"
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
        self.symbol_boxes = self._symbol_boxes(places)

    def _symbol_boxes(self, places: list[tuple[float, float]]) -> list[Box]:
        """The box each placed symbol with its caption covers (the widest caption counts)."""
        t = self.t
        size = t.symbols["size"] * MM
        widest = max(
            stringWidth(caption, self.fonts["bold"], t.symbols["caption_pt"])
            for caption in self.game.definition.captions.values()
        )
        half = max(size, widest) / 2
        height = symbol_block_height(t)
        return [(px - half, py, 2 * half, height) for px, py in places]

    def _scratch_zones(self) -> tuple[ScratchZone, ...]:
        """Every scratch zone: what it hides, its coating (the zone itself) and its base;
        refuses, in one line naming it, a zone too small to hold what it hides with the
        coating's spread on every side (the coating would reach over the artwork around it)."""
        t = self.t
        spread = t.coating["spread"] * MM
        front = self.texts["front"]
        cells = len(t.grid_cells)
        hidden: list[tuple[str, Rect, Box, str, bool]] = [
            (f"front.grid cell {i + 1}", cell, self.symbol_boxes[i], front["scratch"], True)
            for i, cell in enumerate(t.grid_cells)
        ]
        hidden.append(
            (
                "front.bonus",
                t.bonus_scratch,
                _union(*self.symbol_boxes[cells:]),
                front["scratch"],
                True,
            )
        )
        hidden.append(
            (
                "front.validation",
                t.validation_scratch,
                self.code_box,
                front["retailer_coating"],
                False,
            )
        )
        zones = []
        for name, zone, box, words, mark in hidden:
            coating = t.box(zone)
            needed = _grow(box, spread)
            if not _holds(coating, needed):
                raise PrintpipeError(
                    f"ticket template {t.path}: zone {name}: too small for its coating, spread "
                    f"{t.coating['spread']:g} mm beyond what it hides ({needed[2] / MM:.2f} x "
                    f"{needed[3] / MM:.2f} mm needed, {zone.w:.2f} x {zone.h:.2f} mm given)"
                )
            zones.append(ScratchZone(name, box, coating, _grow(coating, -spread), words, mark))
        return tuple(zones)

    def _rounded(self, box: Box, corner: float) -> None:
        """Fill ``box`` with corners of radius ``corner`` (at most half its height)."""
        self.c.roundRect(*box, min(corner, box[3] / 2, box[2] / 2), stroke=0, fill=1)

    def _bases(self) -> None:
        """Every play area's light base, corners rounded so that the coating's, ``spread``
        further out, cover them (an offset curve's radius grows by the offset)."""
        corner = max(self.t.coating["corner"] - self.t.coating["spread"], 0) * MM
        self.c.setFillColorCMYK(*WHITE)
        for zone in self.zones:
            self._rounded(zone.base, corner)

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
        if art.motif is not None and "front" not in self.artwork:
            self._define_motif(art)
        c.beginForm(name, -bleed, -bleed, width + bleed, height + bleed)
        if "front" in self.artwork:  # the designer's background, one form for every variant
            c.doForm(self.artwork["front"])
        else:
            c.setFillColorCMYK(*art.background)
            c.rect(-bleed, -bleed, width + 2 * bleed, height + 2 * bleed, stroke=0, fill=1)
            if art.motif is not None:
                self._motif(art, -bleed, -bleed, width + 2 * bleed, height + 2 * bleed)
        self._price(t.box(t.front["price"]), art)
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
        x, y, w, h = t.box(t.front["bonus"])
        c.saveState()
        c.translate(x, y)
        roof = t.bonus_roof * MM
        art.bonus_box(c, w, h, roof)
        c.restoreState()
        label_pt = min(roof * 0.55, 7)
        room = w * art.bonus_label_room
        while label_pt > 4 and stringWidth(art.bonus_label, fonts["bold"], label_pt) > room:
            label_pt -= 0.1
        c.setFillColorCMYK(*WHITE)
        c.setFont(fonts["bold"], label_pt)
        c.drawCentredString(x + w / 2, y + h - roof + roof * 0.14, art.bonus_label)
        self._paytable(t.box(t.front["paytable"]), art)
        # validation zone: a label band, then the retailer's scratch zone
        x, y, w, h = t.box(t.front["validation"])
        label_h = t.validation_label * MM
        c.setFillColorCMYK(*K)
        c.rect(x, y + h - label_h, w, label_h, stroke=0, fill=1)
        c.setFillColorCMYK(*WHITE)
        c.setFont(fonts["bold"], min(label_h * 0.6, 6.5))
        c.drawCentredString(x + w / 2, y + h - label_h * 0.72, front["validation_label"])
        self._bases()  # the play areas' light bases, under their coating
        self._text_fit(front["legal"], t.box(t.front["legal"]), fonts["regular"], 5.5, centred=True)
        c.endForm()
        return name

    def _define_motif(self, art: FrontArt) -> None:
        """The motif's picture as one form, in its colour (placed by :meth:`_motif`)."""
        assert art.motif is not None
        c = self.c
        c.beginForm(f"motif-{art.name}", 0, 0, 100, 100)
        c.setFillColorCMYK(*art.motif_colour)
        c.setStrokeColorCMYK(*art.motif_colour)
        art.motif(c)
        c.endForm()

    def _motif(self, art: FrontArt, x0: float, y0: float, w: float, h: float) -> None:
        """The variant's motif scattered over the background: a staggered grid of small,
        alternately turned pictures in a shade of the background (part of the static art).
        The picture is one form, placed by one literal."""
        assert art.motif is not None
        c = self.c
        step, size = 9 * MM, 4.2 * MM
        name = f"motif-{art.name}"  # defined before the front's form (forms do not nest)
        do = c.form_operator(name)
        places = []
        for r in range(int(h // step) + 2):
            for k in range(int(w // step) + 2):
                angle = math.radians(25 if (r + k) % 2 else -20)
                cos, sin = math.cos(angle) * size / 100, math.sin(angle) * size / 100
                x = x0 + k * step + (step / 2 if r % 2 else 0)
                y = y0 + r * step
                # rotate about the picture's centre (50, 50): translate, turn, scale, recentre
                e = x - 50 * cos + 50 * sin
                f = y - 50 * sin - 50 * cos
                places.append(
                    f"q {cos:.4f} {sin:.4f} {-sin:.4f} {cos:.4f} {e:.2f} {f:.2f} cm {do} Q"
                )
        c.addLiteral("\n".join(places))
        c.use_forms([name])

    def _price(self, zone: tuple[float, float, float, float], art: FrontArt) -> None:
        """The price, prominent: white on the variant's accent colour."""
        c, font = self.c, self.fonts["bold"]
        x, y, w, h = zone
        price = french.cents(self.game.definition.price_cents)
        c.setFillColorCMYK(*art.accent)
        c.roundRect(x, y, w, h, min(w, h) * 0.25, stroke=0, fill=1)
        size = h * 0.72
        while size > 4 and stringWidth(price, font, size) > w * 0.86:
            size -= 0.25
        c.setFillColorCMYK(*WHITE)
        c.setFont(font, size)
        c.drawCentredString(x + w / 2, y + (h - size * 0.72) / 2, price)

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
        if "back" in self.artwork:
            c.doForm(self.artwork["back"])
        else:
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
        odds = french.number(definition.block.size / lots, 2)
        x, y, w, h = t.box(t.back["odds"])
        c.setFillColorCMYK(*WHITE)
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        rows = [
            (f"{french.number(p.lots)} lots de", french.euros(p.amount_eur))
            for p in definition.prizes
        ]
        line = h / (len(rows) + 2.4)
        size = min(line * 0.8, 7)
        c.setFillColorCMYK(*K)
        c.setFont(fonts["bold"], size)
        head = back["odds_title"].format(odds=odds, block_size=french.number(definition.block.size))
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

    def _designer_forms(self) -> dict[str, str]:
        """The template's designer files: the sides' artwork as forms (full bleed), the
        decoration as shapes drawn in the decoration's form (see render/designer.py)."""
        t, c = self.t, self.c
        self.artwork_drawings: dict[str, Any] = {}
        if not t.artwork:
            return {}
        from printpipe.render import designer  # reportlab.graphics: only for designer artwork

        self.artwork_drawings = {
            role: designer.load_svg(path, one_ink=role == "decoration")
            for role, path in t.artwork.items()
        }
        bleed = t.bleed * MM
        box = (-bleed, -bleed, t.width * MM + 2 * bleed, t.height * MM + 2 * bleed)
        return {
            role: designer.define_form(c, f"art-{role}", drawing, box, self.fonts["regular"])
            for role, drawing in self.artwork_drawings.items()
            if role != "decoration"
        }

    def _define_layer_forms(self) -> None:
        """The blocking, coating and decoration forms of a front: each paints in tints of the
        colour space the page selects, so each prints on its own separation."""
        c, t, fonts = self.c, self.t, self.fonts
        corner = t.coating["corner"] * MM
        width, height = t.width * MM, t.height * MM
        self.blocking_form = "layer-blocking"
        c.beginForm(self.blocking_form, 0, 0, width, height)
        c.addLiteral("1 scn")
        base_corner = max(t.coating["corner"] - t.coating["spread"], 0) * MM
        for zone in self.zones:
            self._rounded(zone.base, base_corner)
        c.endForm()
        self.coating_form = "layer-coating"
        c.beginForm(self.coating_form, 0, 0, width, height)
        c.addLiteral("1 scn")
        for zone in self.zones:
            self._rounded(zone.coating, corner)
        c.endForm()
        self.decor_form = "layer-decor"
        mark = self.game.coating_mark()
        if "decoration" in self.artwork_drawings:
            designed = self.artwork_drawings["decoration"]

            def mark(c: PressCanvas) -> None:
                from printpipe.render.designer import draw_into

                draw_into(c, designed, 0, 0, 100, 100, fonts["regular"])

        c.beginForm(self.decor_form, 0, 0, width, height)
        for zone in self.zones:
            x, y, w, h = zone.coating
            size = min(h * 0.16, 6.0)
            if zone.mark:
                side = min(h * 0.6, w * 0.5)
                c.addLiteral(f"{MARK_TINT:g} scn")
                c.saveState()
                c.translate(x + (w - side) / 2, y + h - side - h * 0.1)
                c.scale(side / 100, side / 100)
                mark(c)
                c.restoreState()
            else:
                size = min(h * 0.2, 7.0)
            c.addLiteral("1 scn")
            c.setFont(fonts["bold"], size)
            words = zone.words
            while size > 3.5 and stringWidth(words, fonts["bold"], size) > w - 2 * MM:
                size -= 0.1
                c.setFont(fonts["bold"], size)
            text_y = y + h * 0.1 if zone.mark else y + (h - size * 0.72) / 2
            c.drawCentredString(x + w / 2, text_y, words)
        c.tint_current_form("the coating's decoration")
        c.endForm()

    def _operators(self) -> None:
        """Each form placement as its final operators, formatted once for every ticket."""
        draw = self.c.form_operator
        self._symbol_ops = [
            [f"{place} {draw(form)} Q\n" for form in self.symbol_forms]
            for place in self.symbol_places
        ]
        if self.imaging_only:
            self._form_names = self._coated_form_names = list(self.symbol_forms)
            return
        self._front_ops = [f"{draw(form)} Q\n" for form in self.front_forms]
        self._back_ops = f"{draw(self.back_form)} Q\n"
        self._blocking_op = f"{draw(self.blocking_form)} Q\n"
        self._coating_ops = (
            (SCRATCH_OFF, f"{draw(self.coating_form)} Q\n"),
            (SCRATCH_DECOR, f"{draw(self.decor_form)} Q\n"),
        )
        # every page declares the same forms, so that pages share one XObject dictionary
        self._form_names = [
            *self.front_forms,
            *self.symbol_forms,
            self.blocking_form,
            self.back_form,
        ]
        self._coated_form_names = [*self._form_names, self.coating_form, self.decor_form]
