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
from reportlab.pdfgen.canvas import FILL_NON_ZERO

from printpipe import french
from printpipe.errors import PrintpipeError
from printpipe.games.base import CMYK, BackArt, Drawing, FrontArt, PaperGame
from printpipe.ids import TicketId, printed_codes
from printpipe.render.barcodes import Code128Digits, InterleavedTwoOfFive
from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText, register_fonts
from printpipe.render.inks import BLOCKING, SCRATCH_DECOR, SCRATCH_OFF, VARIABLE
from printpipe.render.symbols import define_symbol_forms, symbol_block_height
from printpipe.render.template import MM, Coating, PlayCoating, Rect, Template

K = (0, 0, 0, 1)
WHITE = (0, 0, 0, 0)
MARK_TINT = 0.6
"""The decoration's mark (e.g. a paw print) in a lighter tint than its words."""
CONTOUR_TINT = 0.45
"""The fine line drawn inside a paw's edge, in the decoration's ink."""
Box = tuple[float, float, float, float]
"""x, y, width, height in points from the trim's bottom-left corner."""
DIGITS_GAP = 0.5 * MM
"""Between the validation barcode's bars and its digits."""
MIN_TEXT_PT = 6.0
"""The smallest type of the ticket's texts (rules, how to play, legal lines, the tables)."""
FIT = 0.01
"""What a scratch zone may lack of the coating's spread, points (rounding)."""


Toe = tuple[float, float, float, float, float]
"""A paw's toe: an ellipse's centre x, y, its radii along and across, its turn in degrees."""


@dataclass(frozen=True, slots=True)
class ScratchZone:
    """One scratch zone as laid out: what it hides, its coating, the light base of the play
    area under it, and its blocking layer."""

    name: str
    hidden: Box
    """The bounding box of what the coating hides (symbols and captions, or the code)."""
    pad: Box
    """The coating's body, a rectangle with corners of radius ``corner``, which holds
    ``hidden`` with the spread to spare on every side (rounded corners included)."""
    corner: float
    toes: tuple[Toe, ...]
    """A paw print's four toes above its pad (coating that hides nothing); none for a plain
    zone."""
    base: Box
    """The play area's light base (static artwork) and its blocking layer: the pad less the
    spread on every side, so at least ``hidden``, corners of radius ``base_corner``: the
    coating covers it with its spread, corners included, and nothing of the base frames it."""
    base_corner: float
    words: str
    """The decoration's words on the coating."""
    mark: bool
    """Whether the game's mark is printed on the coating too."""

    @property
    def coating(self) -> Box:
        """The bounding box of the whole coating (pad and toes)."""
        return _union(self.pad, *(_toe_box(toe) for toe in self.toes))


PAD_ROUNDING = 0.15
"""A paw's pad: its corner radius is the spread plus this share of the smaller side of what it
hides (a rounded pad, not a rectangle); the pad grows just enough that its rounded corners
still keep the spread from every corner of what it hides."""
TOE_WIDTH = 0.22
"""A toe's width, as a share of the pad's."""
TOE_ASPECT = 1.25
"""A toe's height over its width."""
TOE_GAP = 0.5 * MM
"""Between the pad and its toes."""


def paw_pad(hidden: Box, spread: float) -> tuple[Box, float]:
    """The pad of a paw print over ``hidden``, and its corner radius: a rounded rectangle
    that keeps ``spread`` from every side of ``hidden`` and, round its corners, from every
    corner of it.  With corners of radius r = spread + e, the pad is ``hidden`` grown by
    spread + e (1 - 1/sqrt 2): a corner's centre then lies e / sqrt 2 inside the hidden corner
    along the diagonal, e + spread - e = spread short of the arc."""
    extra = PAD_ROUNDING * min(hidden[2], hidden[3])
    corner = spread + extra
    return _grow(hidden, spread + extra * (1 - 1 / math.sqrt(2))), corner


def paw_toes(pad: Box) -> tuple[Toe, ...]:
    """Four toes in an arc above ``pad``: the middle two upright and highest, the outer two
    lower and turned outwards, overlapping the pad's upper corners (the coating is their
    union: ``TicketRenderer._coat``)."""
    x, y, w, h = pad
    rx = w * TOE_WIDTH / 2
    ry = rx * TOE_ASPECT
    top = y + h + TOE_GAP
    centre = x + w / 2
    inner = [(centre + side * w * 0.17, top + ry, rx, ry, -side * 6.0) for side in (-1, 1)]
    outer = [
        (centre + side * (w * 0.5 + rx * 0.35), top - ry * 0.2, rx, ry, -side * 35.0)
        for side in (-1, 1)
    ]
    return (outer[0], inner[0], inner[1], outer[1])


def paw_height(hidden_h: float, hidden_w: float, spread: float) -> tuple[float, float]:
    """A paw's height over what it hides, and how far below its top what it hides begins."""
    pad, _ = paw_pad((0, 0, hidden_w, hidden_h), spread)
    top = max(_toe_box(t)[1] + _toe_box(t)[3] for t in paw_toes(pad))
    return top - pad[1], top


def _toe_box(toe: Toe) -> Box:
    cx, cy, rx, ry, turn = toe
    a = math.radians(turn)
    half_w = math.hypot(rx * math.cos(a), ry * math.sin(a))
    half_h = math.hypot(rx * math.sin(a), ry * math.cos(a))
    return (cx - half_w, cy - half_h, 2 * half_w, 2 * half_h)


def add_toe(path: Any, toe: Toe) -> None:
    """A turned ellipse as four Bezier arcs (reportlab's ellipses are upright only)."""
    cx, cy, rx, ry, turn = toe
    a = math.radians(turn)
    cos, sin = math.cos(a), math.sin(a)
    k = 0.5522847498

    def at(u: float, v: float) -> tuple[float, float]:
        return (cx + u * cos - v * sin, cy + u * sin + v * cos)

    path.moveTo(*at(rx, 0))
    for (u0, v0), (u1, v1) in (((rx, 0), (0, ry)), ((0, ry), (-rx, 0)),
                               ((-rx, 0), (0, -ry)), ((0, -ry), (rx, 0))):  # fmt: skip
        path.curveTo(*at(u0 + k * u1, v0 + k * v1), *at(u1 + k * u0, v1 + k * v0), *at(u1, v1))
    path.close()


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
        variant: int | None = None,
    ) -> None:
        """``imaging_only``: draws only the ``Variable`` layer (an imaging file), so the
        static artwork's forms are not even defined (they would be written in the file);
        ``static_only``: the plates only (a static file), no symbol form defined; ``variant``:
        only this variant's front artwork is defined (a static file holds one effigy's)."""
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
        self._check_fields()
        self._layout()
        self.zones = self._scratch_zones()
        self.artwork = self._designer_forms() if not imaging_only else {}
        if not imaging_only:
            self.front_forms = [
                self._define_front(art) if variant in (None, i) else ""
                for i, art in enumerate(game.fronts(texts))
            ]
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
        front = self._front_ops[variant]
        if not front:
            raise ValueError(f"variant {variant}'s front is not defined on this canvas")
        self._static.append(place + front)
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
        self.hidden_w = self._hidden_width()
        spread = t.coating["spread"] * MM
        places = []
        for area in t.play_areas:
            for slot in area.slots:
                x, y, w, h = t.box(slot)
                if area.coating is PlayCoating.PAW:  # the paw centred in its slot
                    height, below_top = paw_height(block_h, self.hidden_w, spread)
                    top = y + h - (h - height) / 2
                    places.append((x + w / 2, top - below_top))
                else:
                    places.append((x + w / 2, y + (h - block_h) / 2))
        self.symbol_places = [f"q 1 0 0 1 {px:.2f} {py:.2f} cm" for px, py in places]
        b = t.barcodes
        digits_font = self.fonts["digits"]
        x, y, w, h = t.box(t.validation_scratch)
        width = self.game.definition.symbol_width
        sample = TicketFace.of(self.game.definition.number, 1, 0, 0, (0,) * width, 0)
        self.code128 = Code128Digits(
            len(sample.validation_code), b["code128_module"], b["code128_height"]
        )
        bars_w = self.code128.width_modules * b["code128_module"] * MM
        digits_h = b["digits_pt"]
        descent = digits_h * 0.25  # below the digits' baseline, which is 0.2 of them up
        stack = b["code128_height"] * MM + DIGITS_GAP + digits_h
        bottom = y + (h - stack + descent - digits_h * 0.2) / 2  # all it hides, centred
        bars_y = bottom + digits_h + DIGITS_GAP
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

    def _hidden_width(self) -> float:
        """The width a placed symbol with its caption covers (the widest caption counts)."""
        t = self.t
        widest = max(
            stringWidth(caption, self.fonts["bold"], t.symbols["caption_pt"])
            for caption in self.game.definition.captions.values()
        )
        return max(t.symbols["size"] * MM, widest)

    def _symbol_boxes(self, places: list[tuple[float, float]]) -> list[Box]:
        """The box each placed symbol with its caption covers."""
        half = self.hidden_w / 2
        height = symbol_block_height(self.t)
        return [(px - half, py, 2 * half, height) for px, py in places]

    def _check_fields(self) -> None:
        """The template's play areas must hold the game's symbol fields, slot for symbol."""
        t, fields = self.t, self.game.definition.fields
        areas = [(a.zone, len(a.slots)) for a in t.play_areas]
        wanted = [(f.name, f.width) for f in fields]
        if [n for _, n in areas] != [n for _, n in wanted]:
            raise PrintpipeError(
                f"ticket template {t.path}: its play areas hold "
                + ", ".join(f"{n} ({zone})" for zone, n in areas)
                + " symbols; the game's fields need "
                + ", ".join(f"{n} ({name})" for name, n in wanted)
            )

    def _scratch_zones(self) -> tuple[ScratchZone, ...]:
        """Every scratch zone: what it hides, its coating and its base; refuses, in one line
        naming it, a zone too small to hold what it hides with the coating's spread on every
        side (the coating would reach over the artwork around it)."""
        t = self.t
        spread = t.coating["spread"] * MM
        corner = t.coating["corner"] * MM
        front = self.texts["front"]
        zones: list[ScratchZone] = []

        def plain(name: str, zone: Rect, hidden: Box, words: str, mark: bool) -> ScratchZone:
            coating = t.box(zone)
            needed = _grow(hidden, spread)
            if not _holds(coating, needed):
                raise PrintpipeError(
                    f"ticket template {t.path}: zone {name}: too small for its coating, spread "
                    f"{t.coating['spread']:g} mm beyond what it hides ({needed[2] / MM:.2f} x "
                    f"{needed[3] / MM:.2f} mm needed, {zone.w:.2f} x {zone.h:.2f} mm given)"
                )
            base_corner = max(corner - spread, 0)
            return ScratchZone(name, hidden, coating, corner, (), _grow(coating, -spread),
                               base_corner, words, mark)  # fmt: skip

        first = 0
        for area in t.play_areas:
            boxes = self.symbol_boxes[first : first + len(area.slots)]
            first += len(area.slots)
            if area.coating is PlayCoating.AREA:
                zones.append(
                    plain(f"front.{area.zone}", area.area, _union(*boxes), front["scratch"], True)
                )
                continue
            for i, (slot, hidden) in enumerate(zip(area.slots, boxes, strict=True)):
                pad, pad_corner = paw_pad(hidden, spread)
                zone = ScratchZone(
                    f"front.{area.zone} cell {i + 1}", hidden, pad, pad_corner, paw_toes(pad),
                    _grow(pad, -spread), pad_corner - spread, front["scratch"], False,
                )  # fmt: skip
                if not _holds(t.box(slot), zone.coating):
                    need = zone.coating
                    raise PrintpipeError(
                        f"ticket template {t.path}: zone {zone.name}: too small for its paw, "
                        f"spread {t.coating['spread']:g} mm beyond what it hides "
                        f"({need[2] / MM:.2f} x {need[3] / MM:.2f} mm needed, "
                        f"{slot.w:.2f} x {slot.h:.2f} mm given)"
                    )
                zones.append(zone)
        zones.append(
            plain(
                "front.validation",
                t.validation_scratch,
                self.code_box,
                front["retailer_coating"],
                False,
            )
        )
        return tuple(zones)

    def _rounded(self, box: Box, corner: float) -> None:
        """Fill ``box`` with corners of radius ``corner`` (at most half its height)."""
        self.c.roundRect(*box, min(corner, box[3] / 2, box[2] / 2), stroke=0, fill=1)

    def _coat(self, zone: ScratchZone) -> None:
        """Fill a zone's coating: its pad and, a paw, its toes, as one path filled by the
        nonzero rule, so that the coating is their union: pad and toes all turn the same way
        (counter-clockwise), and where an outer toe overlaps the pad's corner the latex is
        solid (even-odd would leave bare paper there, a hole in the coating)."""
        path = self.c.beginPath()
        x, y, w, h = zone.pad
        path.roundRect(x, y, w, h, min(zone.corner, w / 2, h / 2))
        for toe in zone.toes:
            add_toe(path, toe)
        self.c.drawPath(path, stroke=0, fill=1, fillMode=FILL_NON_ZERO)

    def _bases(self) -> None:
        """Every play area's light base, inside its coating by the spread, corners rounded so
        that the coating's cover them (an offset curve's radius grows by the offset)."""
        self.c.setFillColorCMYK(*WHITE)
        for zone in self.zones:
            self._rounded(zone.base, zone.base_corner)

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
        *,
        minimum: float = 3.5,
        middle: bool = False,
    ) -> float:
        """Wrap ``text`` into the zone, shrinking the type until it fits, never below
        ``minimum`` (a template whose zone is too small for it is refused in one line);
        ``middle``: centred vertically.  Black text overprints the artwork under it.  Returns
        the size used."""
        x, y, w, h = zone
        c = self.c
        while True:
            lines = simpleSplit(text, font, size, w)
            if len(lines) * size * leading <= h or size <= minimum:
                break
            size = max(size - 0.1, minimum)
        if len(lines) * size * leading > h + 0.01:
            raise PrintpipeError(
                f"ticket template {self.t.path}: text does not fit at {minimum:g} pt or more: "
                f"{text[:40]!r}"
            )
        c.saveState()
        if colour == K:
            c.black_overprint()
        else:
            c.setFillColorCMYK(*colour)
        c.setFont(font, size)
        top = y + h - size * 0.95
        if middle:
            top -= (h - len(lines) * size * leading) / 2
        for i, line in enumerate(lines):
            ly = top - i * size * leading
            if centred:
                c.drawCentredString(x + w / 2, ly, line)
            else:
                c.drawString(x, ly, line)
        c.restoreState()
        return size

    def _top_prize(self, zone: Box, art: FrontArt) -> None:
        """The top prize, the ticket's selling line (e.g. JUSQU'À 15 000 €): the amount from
        the game's definition, written by :mod:`printpipe.french`, the words from the texts,
        white on a banner of the variant's accent colour."""
        top = max(p.amount_eur for p in self.game.definition.prizes)
        words = self.texts["front"]["top_prize"].format(amount=french.euros(top))
        self._badge(zone, words, art, radius=zone[3] * 0.28, height=0.62, width=0.92)

    def _define_front(self, art: FrontArt) -> str:
        t, c, fonts = self.t, self.c, self.fonts
        front = self.texts["front"]
        name = f"front-{art.name}"
        bleed = t.bleed * MM
        width, height = t.width * MM, t.height * MM
        if art.motif is not None and "front" not in self.artwork:
            self._define_motif(art.name, art.motif, art.motif_colour)
        c.beginForm(name, -bleed, -bleed, width + bleed, height + bleed)
        if "front" in self.artwork:  # the designer's background, one form for every variant
            c.doForm(self.artwork["front"])
        else:
            c.setFillColorCMYK(*art.background)
            c.rect(-bleed, -bleed, width + 2 * bleed, height + 2 * bleed, stroke=0, fill=1)
            if art.motif is not None:
                self._motif(art.name, -bleed, -bleed, width + 2 * bleed, height + 2 * bleed)
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
        self._text_fit(
            art.howto, t.box(t.front["howto"]), fonts["regular"], 6.5, minimum=MIN_TEXT_PT
        )
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
        # validation zone: a label band if the template has one, then the retailer's zone
        x, y, w, h = t.box(t.front["validation"])
        label_h = t.validation_label * MM
        if label_h > 0:
            c.setFillColorCMYK(*K)
            c.rect(x, y + h - label_h, w, label_h, stroke=0, fill=1)
            c.setFillColorCMYK(*WHITE)
            c.setFont(fonts["bold"], min(label_h * 0.6, 6.5))
            c.drawCentredString(x + w / 2, y + h - label_h * 0.72, front["validation_label"])
        self._bases()  # the play areas' light bases, under their coating
        self._top_prize(t.box(t.front["toprize"]), art)
        self._text_fit(
            front["legal"], t.box(t.front["legal"]), fonts["regular"], 6.5, centred=True,
            minimum=MIN_TEXT_PT, middle=True,
        )  # fmt: skip
        c.endForm()
        return name

    def _define_motif(self, name: str, motif: Drawing, colour: CMYK) -> None:
        """A motif's picture as one form, in its colour (placed by :meth:`_motif`)."""
        c = self.c
        c.beginForm(f"motif-{name}", 0, 0, 100, 100)
        c.setFillColorCMYK(*colour)
        c.setStrokeColorCMYK(*colour)
        motif(c)
        c.endForm()

    def _motif(self, name: str, x0: float, y0: float, w: float, h: float) -> None:
        """A motif scattered over a background: a staggered grid of small, alternately turned
        pictures in a shade of the background (part of the static art).  The picture is one
        form (:meth:`_define_motif`, defined before the side's form: forms do not nest),
        placed by one literal."""
        c = self.c
        step, size = 9 * MM, 4.2 * MM
        do = c.form_operator(f"motif-{name}")
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
        c.use_forms([f"motif-{name}"])

    def _price(self, zone: Box, art: FrontArt) -> None:
        """The price, prominent: white on the variant's accent colour."""
        price = french.cents(self.game.definition.price_cents)
        self._badge(zone, price, art, radius=min(zone[2], zone[3]) * 0.25, height=0.72, width=0.86)

    def _badge(
        self, zone: Box, words: str, art: FrontArt, *, radius: float, height: float, width: float
    ) -> None:
        """``words`` in bold white, centred on a rounded box of the variant's accent colour:
        as large as ``height`` of the box allows, smaller until they fill at most ``width``."""
        c, font = self.c, self.fonts["bold"]
        x, y, w, h = zone
        c.setFillColorCMYK(*art.accent)
        c.roundRect(x, y, w, h, radius, stroke=0, fill=1)
        size = h * height
        while size > 4 and stringWidth(words, font, size) > w * width:
            size -= 0.25
        c.setFillColorCMYK(*WHITE)
        c.setFont(font, size)
        c.drawCentredString(x + w / 2, y + (h - size * 0.72) / 2, words)

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
            while size > MIN_TEXT_PT and (
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
        c.saveState()
        c.black_overprint()
        for i, (left, right) in enumerate(rows):
            ly = top - (i + 1) * line + line * 0.25
            c.setFont(fonts["regular"], size)
            c.drawString(x + pad, ly, left)
            c.setFont(fonts["bold"], size)
            c.drawRightString(x + w - pad, ly, right)
        c.restoreState()

    def _define_back(self) -> str:
        t, c, fonts = self.t, self.c, self.fonts
        back = self.texts["back"]
        art = self.game.back(self.texts)
        bleed = t.bleed * MM
        width, height = t.width * MM, t.height * MM
        if art.motif is not None and "back" not in self.artwork:
            self._define_motif("back", art.motif, art.motif_colour)
        c.beginForm("back", -bleed, -bleed, width + bleed, height + bleed)
        if "back" in self.artwork:
            c.doForm(self.artwork["back"])
        else:
            c.setFillColorCMYK(*art.background)
            c.rect(-bleed, -bleed, width + 2 * bleed, height + 2 * bleed, stroke=0, fill=1)
            if art.motif is not None:
                self._motif("back", -bleed, -bleed, width + 2 * bleed, height + 2 * bleed)
        self._logo(t.box(t.back["title"]), art)
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
        half = -(-len(rows) // 2)  # the lots in two columns
        line = h / (half + 2.6)
        size = min(line * 0.8, 7.5)
        head = back["odds_title"].format(odds=odds, block_size=french.number(definition.block.size))
        while stringWidth(head, fonts["bold"], size) > w - 2 * MM and size > MIN_TEXT_PT:
            size -= 0.1
        c.saveState()
        c.black_overprint()
        c.setFont(fonts["bold"], size)
        top = y + h - line
        c.drawCentredString(x + w / 2, top + line * 0.1, head)
        c.setFont(fonts["regular"], size)
        c.drawCentredString(x + w / 2, top - line * 0.9, back["lots_title"])
        for i, (left, right) in enumerate(rows):
            column, row = divmod(i, half)
            ly = top - (row + 2) * line
            middle = x + w * (0.25 + 0.5 * column) + 4 * MM
            c.drawRightString(middle - 1 * MM, ly, left)
            c.setFont(fonts["bold"], size)
            c.drawString(middle + 1 * MM, ly, right)
            c.setFont(fonts["regular"], size)
        c.restoreState()
        self._rules(t.box(t.back["legal"]), art)
        x, y, w, h = t.box(t.back["inventory"])
        c.setFillColorCMYK(*WHITE)
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        x, y, w, h = t.box(t.back["serial"])
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        c.saveState()
        c.black_overprint()
        c.setFont(fonts["bold"], self.serial_pt)
        c.drawString(self.serial_label_x, self.serial_y, back["serial_label"])
        c.restoreState()
        c.endForm()
        return "back"

    def _logo(self, zone: Box, art: BackArt) -> None:
        """The game's logo: its title in white on a band of its colour, between its emblems."""
        c, font = self.c, self.fonts["bold"]
        x, y, w, h = zone
        c.setFillColorCMYK(*art.band)
        c.roundRect(x, y, w, h, h * 0.3, stroke=0, fill=1)
        side = h * 0.82
        pad = (h - side) / 2
        for i, emblem in enumerate(art.emblems[:2]):
            ex = x + pad if i == 0 else x + w - pad - side
            c.setFillColorCMYK(*WHITE)
            c.circle(ex + side / 2, y + h / 2, side / 2, stroke=0, fill=1)
            c.saveState()
            inner = side * 0.86
            c.translate(ex + (side - inner) / 2, y + (h - inner) / 2)
            c.scale(inner / 100, inner / 100)
            emblem(c)
            c.restoreState()
        room = w - 2 * (side + 2 * pad)
        title = self.game.definition.title
        size = h * 0.62
        while stringWidth(title, font, size) > room:
            size -= 0.25
        c.setFillColorCMYK(*WHITE)
        c.setFont(font, size)
        c.drawCentredString(x + w / 2, y + (h - size * 0.72) / 2, title)

    def _rules(self, zone: Box, art: BackArt) -> None:
        """The rules in full on a white panel filling ``zone``: a heading, then paragraphs in
        the largest type (at most 7.5 pt, at least :data:`MIN_TEXT_PT`) that fills the panel."""
        c, fonts = self.c, self.fonts
        x, y, w, h = zone
        c.setFillColorCMYK(*WHITE)
        c.roundRect(x, y, w, h, 1.5 * MM, stroke=0, fill=1)
        pad = 1.8 * MM
        inner_w, inner_h = w - 2 * pad, h - 2 * pad
        leading, gap = 1.18, 0.35  # line spacing, and between paragraphs (in lines)
        size = 7.5

        def laid(size: float) -> tuple[list[list[str]], float]:
            blocks = [simpleSplit(p, fonts["regular"], size, inner_w) for p in art.rules]
            lines = sum(len(b) for b in blocks) + gap * (len(blocks) - 1) + 1.5
            return blocks, lines * size * leading

        blocks, needed = laid(size)
        while needed > inner_h and size > MIN_TEXT_PT:
            size = max(size - 0.1, MIN_TEXT_PT)
            blocks, needed = laid(size)
        if needed > inner_h + 0.01:
            raise PrintpipeError(
                f"ticket template {self.t.path}: zone back.legal: the rules do not fit at "
                f"{MIN_TEXT_PT:g} pt"
            )
        c.saveState()
        c.black_overprint()
        top = y + h - pad - size * 0.95 - (inner_h - needed) / 2
        c.setFont(fonts["bold"], size)
        c.drawString(x + pad, top, art.rules_title)
        ly = top - size * leading * 1.5
        c.setFont(fonts["regular"], size)
        for block in blocks:
            for line in block:
                c.drawString(x + pad, ly, line)
                ly -= size * leading
            ly -= size * leading * gap
        c.restoreState()

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
        width, height = t.width * MM, t.height * MM
        self.blocking_form = "layer-blocking"
        c.beginForm(self.blocking_form, 0, 0, width, height)
        c.addLiteral("1 scn")
        for zone in self.zones:
            self._rounded(zone.base, zone.base_corner)
        c.endForm()
        self.coating_form = "layer-coating"
        c.beginForm(self.coating_form, 0, 0, width, height)
        c.addLiteral("1 scn")
        for zone in self.zones:
            self._coat(zone)
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
            x, y, w, h = zone.pad
            if zone.toes:
                self._decorate_paw(zone)
                continue
            size = min(h * 0.16, 6.0)
            if zone.mark:
                side = min(h * 0.6, w * 0.5)
                c.addLiteral(f"{MARK_TINT:g} scn")
                c.saveState()
                c.translate(x + (w - side) / 2, y + h - side - h * 0.1)
                c.scale(side / 100, side / 100)
                mark(c)
                c.restoreState()
                c.addLiteral("1 scn")
                self._words(zone.words, x + w / 2, y + h * 0.1, w - 2 * MM, size)
            else:
                self._lines(zone.words, zone.pad, 7.0)
        c.tint_current_form("the coating's decoration")
        c.endForm()

    def _words(self, words: str, cx: float, y: float, room: float, size: float) -> float:
        """One line of the decoration, centred at cx, shrunk to ``room``; returns its size."""
        c, font = self.c, self.fonts["bold"]
        while size > 3.5 and stringWidth(words, font, size) > room:
            size -= 0.1
        c.setFont(font, size)
        c.drawCentredString(cx, y, words)
        return size

    def _lines(self, words: str, box: Box, size: float) -> None:
        """The decoration's words centred in ``box`` on one line, or on two if they fit better
        (the retailer's zone: its one label)."""
        x, y, w, h = box
        room = w - 3 * MM
        font = self.fonts["bold"]
        one = min(size, h * 0.3)
        while one > 3.5 and stringWidth(words, font, one) > room:
            one -= 0.1
        head, _, tail = words.partition(" - ")
        if one >= min(size, h * 0.3) or not tail:
            self.c.addLiteral("1 scn")
            self._words(words, x + w / 2, y + (h - one * 0.72) / 2, room, one)
            return
        two = min(size, h * 0.22)
        for line in (head, tail):
            while two > 3.5 and stringWidth(line, font, two) > room:
                two -= 0.1
        self.c.addLiteral("1 scn")
        middle = y + h / 2
        self._words(head, x + w / 2, middle + two * 0.25, room, two)
        self._words(tail, x + w / 2, middle - two * 0.97, room, two)

    def _decorate_paw(self, zone: ScratchZone) -> None:
        """A paw's decoration: a fine line inside its pad and toes, and the words (e.g.
        GRATTEZ ICI) on the pad, in two lines when one is too wide."""
        c = self.c
        inset = 0.6 * MM
        c.addLiteral(f"{CONTOUR_TINT:g} SCN")
        c.setLineWidth(0.4)
        x, y, w, h = _grow(zone.pad, -inset)
        path = c.beginPath()
        path.roundRect(x, y, w, h, max(zone.corner - inset, 0))
        for cx, cy, rx, ry, turn in zone.toes:
            add_toe(path, (cx, cy, rx - inset, ry - inset, turn))
        c.drawPath(path, stroke=1, fill=0)
        c.addLiteral("1 scn")
        x, y, w, h = zone.pad
        words = zone.words.split(" ", 1) if " " in zone.words else [zone.words]
        room = w - 2.4 * MM
        size = 7.0
        font = self.fonts["bold"]
        while size > 3.5 and max(stringWidth(line, font, size) for line in words) > room:
            size -= 0.1
        leading = size * 1.05
        first = y + h / 2 + (len(words) - 1) * leading / 2 - size * 0.36
        for i, line in enumerate(words):
            self._words(line, x + w / 2, first - i * leading, room, size)

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
        self._front_ops = [f"{draw(form)} Q\n" if form else "" for form in self.front_forms]
        self._back_ops = f"{draw(self.back_form)} Q\n"
        self._blocking_op = f"{draw(self.blocking_form)} Q\n"
        self._coating_ops = (
            (SCRATCH_OFF, f"{draw(self.coating_form)} Q\n"),
            (SCRATCH_DECOR, f"{draw(self.decor_form)} Q\n"),
        )
        # every page declares the same forms, so that pages share one XObject dictionary
        self._form_names = [
            *filter(None, self.front_forms),
            *self.symbol_forms,
            self.blocking_form,
            self.back_form,
        ]
        self._coated_form_names = [*self._form_names, self.coating_form, self.decor_form]
