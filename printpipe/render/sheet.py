"""Press sheets drawn: the tickets of a chunk on their imposition, marks, slug, page boxes.

Where each ticket goes (the N-up grid, duplex mirroring, cut and stack) is
:mod:`printpipe.render.imposition`; this module draws the sheets, in three parts that a press
line needs (``docs/print-files.md``, "The press line"):

- the **static** part of a sheet side, what the plates print on every impression of a run:
  every slot's artwork and blocking layer (form ``sheet-SIDE-under``), its coating and
  decoration, the marks and the control strip's static patches (form ``sheet-SIDE-over``).
  A chunk holds tickets of one variant (a press run is a pool of one effigy,
  ``block/plan.py``), so these two forms are the same on every sheet, the blank slots of the
  last sheets included;
- the **variable** part, what the ink-jet line images sheet by sheet on the ``Variable``
  plate: the tickets' symbols and codes, the slug line, the control strip's ``Variable``
  patches;
- the register marks, at the same places in both, so the imaging registers to the plates.

A digital composite page is ``under``, the variable part, ``over`` (in this order, so a
viewer without overprint shows the coating over the symbols); a conventional run writes the
static forms once per side (:func:`write_static_sheets`) and the variable part alone, with its
marks on the ``Variable`` plate (:func:`write_sheets` with ``SheetPart.VARIABLE``).

Marks, in the registration colour ``/Separation /All`` (every plate carries them): crop marks
at the ends of every cut line, outside the imposed grid (the sheet's TrimBox spans the grid
and no crop mark lies inside it), and a register target in the middle of each margin.  The
control strip runs across the sheet's width under the grid, so every ink zone of the press
holds a patch of each process ink and of each spot.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError
from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText
from printpipe.render.imposition import Imposition, cut_and_stack
from printpipe.render.inks import (
    BLOCKING,
    REGISTRATION,
    SCRATCH_DECOR,
    SCRATCH_OFF,
    SPOTS,
    VARIABLE,
)
from printpipe.render.pdfvt import DocumentParts
from printpipe.render.template import MM, Template
from printpipe.render.ticket import TicketFace, TicketRenderer

PATCH = 4 * MM
"""A control strip patch, square."""
PITCH = 5 * MM
"""From a patch to the next: 1 mm of paper between them, so that no patch's edge touches a
neighbour's (each plate's patches stand alone, whatever the order they are drawn in)."""
STRIP_INKS = ("Cyan", "Magenta", "Yellow", "Black", BLOCKING, VARIABLE, SCRATCH_OFF, SCRATCH_DECOR)
"""The control strip's sequence, repeated across the sheet (then a registration patch)."""
PROCESS_PATCHES = {
    "Cyan": (1, 0, 0, 0),
    "Magenta": (0, 1, 0, 0),
    "Yellow": (0, 0, 1, 0),
    "Black": (0, 0, 0, 1),
}
STRIP_GAP = 3.2 * MM
"""From the sheet's margin (the slug line's baseline) to the control strip."""
TARGET_RADIUS = 2.5 * MM
SIDES = ("front", "back")


class SheetPart(enum.Enum):
    """What a page of a press file holds."""

    COMPOSITE = "composite"
    """Plates and imaging together: a digital line's sheet (and the proofs')."""
    VARIABLE = "variable"
    """The imaging only (``Variable`` plate), with register marks: an ink-jet line's sheet."""


@dataclass(frozen=True)
class Slug:
    """The slug line of a chunk's sheets: the one place it is worded (export and proofs)."""

    title: str
    game_number: int
    block: int
    first_pack: int
    last_pack: int
    first_serial: str
    last_serial: str
    prefix: str = ""
    """e.g. ``NOT APPROVED - `` or a proof's warning."""
    suffix: str = ""
    """e.g. the file name."""

    def line(self, sheet: int, sheets: int, side: str) -> str:
        return (
            f"{self.prefix}{self.title} - game {self.game_number:04d} - block {self.block} - "
            f"sheet {sheet + 1}/{sheets} {'FRONT' if side == 'front' else 'BACK (mirrored)'} - "
            f"packs {self.first_pack:06d} to {self.last_pack:06d} ({self.first_serial} to "
            f"{self.last_serial}), cut and stack: slot k holds ticket k x {sheets} + {sheet}"
            + (f" - {self.suffix}" if self.suffix else "")
        )

    def plate_label(self, side: str, variant: str) -> str:
        """The static plates' own line (top margin), the same on every sheet of the block's
        runs of ``variant``: no sheet, pack or file."""
        return (
            f"{self.prefix}{self.title} - game {self.game_number:04d} - block {self.block} - "
            f"static plates {'FRONT' if side == 'front' else 'BACK (mirrored)'} - {variant}"
        )


def _targets(imposition: Imposition, t: Template) -> list[tuple[float, float, float]]:
    """Register targets (x, y, radius in points): the middle of the sheet's four margins."""
    outer = (t.bleed + t.sheet["mark_gap"] + t.sheet["mark_length"]) * MM
    w, h = imposition.sheet_w * MM, imposition.sheet_h * MM
    left, bottom, _, top = imposition.trim_box
    side = left - outer  # sheet edge to the outermost crop mark, left and right alike
    above = h - top - outer
    below = bottom - outer - t.sheet["margin"] * MM - t.sheet["slug_height"] * MM
    targets = [(side / 2, h / 2, side / 2), (w - side / 2, h / 2, side / 2)]
    targets += [(w / 2, h - above / 2, above / 2)]
    if below > 2 * MM:
        targets.append((w / 2, bottom - outer - below / 2, below / 2))
    return [(x, y, min(TARGET_RADIUS, r - 0.5 * MM)) for x, y, r in targets if r > 1.5 * MM]


def crop_marks(
    places: Sequence[tuple[float, float]], t: Template, trim_box: tuple[float, ...]
) -> list[tuple[float, float, float, float]]:
    """The crop marks of a sheet side as segments (x0, y0, x1, y1), points: one at each end of
    every cut line, outside the grid's trim by the bleed and the mark gap."""
    w, h = t.width * MM, t.height * MM
    start = (t.bleed + t.sheet["mark_gap"]) * MM
    end = start + t.sheet["mark_length"] * MM
    left, bottom, right, top = trim_box
    xs = sorted({round(x, 2) for x, _ in places} | {round(x + w, 2) for x, _ in places})
    ys = sorted({round(y, 2) for _, y in places} | {round(y + h, 2) for _, y in places})
    marks = []
    for x in xs:
        marks += [(x, top + start, x, top + end), (x, bottom - start, x, bottom - end)]
    for y in ys:
        marks += [(left - start, y, left - end, y), (right + start, y, right + end, y)]
    return marks


def _define_marks(c: Canvas, name: str, places: Sequence[tuple[float, float]], t: Template,
                  imposition: Imposition) -> None:  # fmt: skip
    """One form with every crop mark of a sheet side and the register targets; it strokes in
    the colour the page selects (registration; ``Variable`` in an imaging file)."""
    c.beginForm(name)
    c.setLineWidth(0.25)
    ops = [
        f"{x0:.2f} {y0:.2f} m {x1:.2f} {y1:.2f} l"
        for x0, y0, x1, y1 in crop_marks(places, t, imposition.trim_box)
    ]
    c.addLiteral("\n".join(ops) + "\nS")
    for x, y, r in _targets(imposition, t):
        c.circle(x, y, r * 0.6, stroke=1, fill=0)
        c.line(x - r, y, x + r, y)
        c.line(x, y - r, x, y + r)
    c.endForm()


def control_strip(imposition: Imposition, t: Template) -> list[tuple[float, float, object]]:
    """The control strip's patches (x, y, ink), left to right across the sheet: the sequence
    of :data:`STRIP_INKS` repeated, and a registration patch at each end."""
    margin = t.sheet["margin"] * MM
    y = margin + STRIP_GAP
    count = int((imposition.sheet_w * MM - 2 * margin - PATCH) // PITCH) + 1
    inks: list[object] = [REGISTRATION]
    inks += [STRIP_INKS[i % len(STRIP_INKS)] for i in range(count - 2)]
    inks.append(REGISTRATION)
    return [(margin + i * PITCH, y, ink) for i, ink in enumerate(inks)]


def _patches(
    c: PressCanvas, patches: Sequence[tuple[float, float, object]], ink: object = None
) -> str:
    """The patches' operators (each in its ink, or all in ``ink``)."""
    ops = ["q"]
    for x, y, own in patches:
        paint = own if ink is None else ink
        if isinstance(paint, str):
            select = "{:g} {:g} {:g} {:g} k".format(*PROCESS_PATCHES[paint])
        else:
            select = c.spot_operators(paint)[0]
        ops.append(f"{select} {x:.2f} {y:.2f} {PATCH:.2f} {PATCH:.2f} re f")
    ops.append("Q\n")
    return "\n".join(ops)


def one_variant(faces: Sequence[TicketFace]) -> int:
    """The variant of every ticket of a chunk; refuses a chunk that mixes them (its static
    plates would change from sheet to sheet)."""
    variants = {faces[i].variant for i in (0, len(faces) - 1)} if faces else {0}
    if len(variants) > 1 or any(face.variant not in variants for face in faces):
        raise PrintpipeError(
            "the packs of one press file hold tickets of several variants (effigies): the "
            "static plates would change from sheet to sheet; was the block generated by an "
            "older printpipe? generate it again"
        )
    return variants.pop()


class _Sheets:
    """What every sheet side of a file shares: its forms and its pieces of content."""

    def __init__(
        self, c: PressCanvas, renderer: TicketRenderer, imposition: Imposition, variant: int,
        slug: Slug, *, static: bool,
    ) -> None:  # fmt: skip
        self.c, self.renderer, self.imposition = c, renderer, imposition
        self.slug, self.variant_name = slug, renderer.variants[variant]
        t = renderer.t
        c.setTrimBox(imposition.trim_box)
        c.setBleedBox(imposition.bleed_box)
        for side in SIDES:
            _define_marks(c, f"marks-{side}", self.places(side), t, imposition)
        strip = control_strip(imposition, t)
        self.static_patches = [p for p in strip if p[2] is not VARIABLE]
        self.variable_patches = [p for p in strip if p[2] is VARIABLE]
        self.slug_at = (t.sheet["margin"] * MM, t.sheet["margin"] * MM)
        self.label_at = (t.sheet["margin"] * MM, (imposition.sheet_h - t.sheet["margin"]) * MM - 6)
        self.slug_text = CachedText(c, renderer.fonts["regular"], 6)
        self.forms: dict[str, tuple[str, str]] = {}
        if static:
            for side in SIDES:
                self.forms[side] = self._define_static(side, variant)
        else:
            for side in SIDES:
                self._define_imaging_marks(side)

    def places(self, side: str) -> tuple[tuple[float, float], ...]:
        return self.imposition.front if side == "front" else self.imposition.back

    def _define_static(self, side: str, variant: int) -> tuple[str, str]:
        """The side's two static forms: under the imaging, over it."""
        c, renderer = self.c, self.renderer
        w, h = self.imposition.sheet_w * MM, self.imposition.sheet_h * MM
        names = (f"sheet-{side}-under", f"sheet-{side}-over")
        for i, name in enumerate(names):
            for x, y in self.places(side):
                if side == "front":
                    renderer.draw_front_static(x, y, variant)
                else:
                    renderer.draw_back_static(x, y)
            c.beginForm(name, 0, 0, w, h)
            under, _, over = renderer.take_layers()
            if i == 0:
                c.addLiteral(under)
            else:
                fill, stroke = c.spot_operators(REGISTRATION)
                marks = c.form_operator(f"marks-{side}")
                label = self.slug.plate_label(side, self.variant_name)
                c.addLiteral(
                    over
                    + f"q {fill} {stroke} {marks}\n"
                    + self.slug_text.literal(*self.label_at, label)
                    + "Q\n"
                    + _patches(c, self.static_patches)
                )
                c.use_forms([f"marks-{side}"])
            c.use_forms(renderer.form_names)
            c.endForm()
        return names

    def _define_imaging_marks(self, side: str) -> None:
        """What an imaging file's every page of a side adds to its imaging, the same on each:
        the register marks, the plates' label and the control strip's registration and
        ``Variable`` patches, as one form painted in the colour the page selects
        (``Variable``)."""
        c = self.c
        w, h = self.imposition.sheet_w * MM, self.imposition.sheet_h * MM
        patches = [p for p in self.static_patches if p[2] is REGISTRATION]
        patches += self.variable_patches
        c.beginForm(f"imaging-marks-{side}", 0, 0, w, h)
        c.addLiteral(
            f"{c.form_operator(f'marks-{side}')}\n"
            + self.slug_text.literal(*self.label_at, self.slug.plate_label(side, self.variant_name))
            + "".join(f"{x:.2f} {y:.2f} {PATCH:.2f} {PATCH:.2f} re f\n" for x, y, _ in patches)
        )
        c.use_forms([f"marks-{side}"])
        c.endForm()

    def static_ops(self, side: str) -> tuple[str, str]:
        under, over = self.forms[side]
        return (f"q {self.c.form_operator(under)} Q\n", f"q {self.c.form_operator(over)} Q\n")

    def variable_ops(self, side: str, slug: str, *, marks: bool) -> str:
        """The side's imaging (drawn since the last call), slug, ``Variable`` patches, and with
        ``marks`` the register marks on the ``Variable`` plate."""
        c = self.c
        _, variable, _ = self.renderer.take_layers()
        fill, stroke = c.spot_operators(VARIABLE)
        overprint = c.gstate_operator(op=True, OP=True, OPM=0)
        ops = [variable, f"q {fill} {stroke} {overprint}\n"]
        if marks:  # what the static plates' registration colour puts on this plate too, and
            # the strip's Variable patches: one form, the same on every page of the side
            ops.append(f"{c.form_operator(f'imaging-marks-{side}')}\n")
            c.use_forms([f"imaging-marks-{side}"])
        ops.append(self.slug_text.literal(*self.slug_at, slug))
        ops.append("Q\n")
        if not marks:
            ops.append(_patches(c, self.variable_patches))
        return "".join(ops)


def write_sheets(
    c: PressCanvas,
    renderer: TicketRenderer,
    imposition: Imposition,
    faces: Sequence[TicketFace],
    slug: Slug,
    *,
    part: SheetPart = SheetPart.COMPOSITE,
    only: Collection[int] | None = None,
    overlay: Callable[[Canvas, int, str], None] | None = None,
    parts: DocumentParts | None = None,
) -> int:
    """Draw ``faces`` (one chunk, in order, one variant) as duplex sheets on ``c``; returns
    the pages drawn.

    ``part``: the composite sheets, or the imaging alone.  Press proofs draw ``only`` some
    sheet indices of the chunk (each exactly as in the press file) and add an
    ``overlay(canvas, sheet_index, side)`` (their PROOF mark) on top of each page.  ``parts``
    (an imaging file's) receives each page's tickets by their place on that page.
    """
    variant = one_variant(faces)
    composite = part is SheetPart.COMPOSITE
    shared = _Sheets(c, renderer, imposition, variant, slug, static=composite)
    sheets, order = cut_and_stack(len(faces), imposition.slots)
    pages = 0
    for s, slots in enumerate(order):
        if only is not None and s not in only:
            continue
        for side in SIDES:
            places = shared.places(side)
            draw = renderer.draw_front_variable if side == "front" else renderer.draw_back_variable
            for k, index in enumerate(slots):
                if index >= 0:
                    draw(*places[k], faces[index])
            variable = shared.variable_ops(side, slug.line(s, sheets, side), marks=not composite)
            if composite:
                under, over = shared.static_ops(side)
                c.addLiteral(under + variable + over)
                c.use_forms(shared.forms[side])
            else:
                c.addLiteral(variable)
            c.use_forms(renderer.form_names)
            if overlay is not None:
                overlay(c, s, side)
            if parts is not None:
                on_page = (lambda k: k) if side == "front" else imposition.back_slot
                parts.page(
                    s + 1, side, sorted((on_page(k), i) for k, i in enumerate(slots) if i >= 0)
                )
            c.showPage()
            pages += 1
    return pages


def write_static_sheets(
    c: PressCanvas, renderer: TicketRenderer, imposition: Imposition, variant: int, slug: Slug
) -> int:
    """The static plates of a run, once: a front page and a back page, each exactly the
    static forms every composite sheet of the run places (and nothing else)."""
    shared = _Sheets(c, renderer, imposition, variant, slug, static=True)
    for side in SIDES:
        under, over = shared.static_ops(side)
        c.addLiteral(under + over)
        c.use_forms([*shared.forms[side], *renderer.form_names])
        c.showPage()
    return len(SIDES)


__all__ = [
    "SPOTS",
    "SheetPart",
    "Slug",
    "control_strip",
    "crop_marks",
    "one_variant",
    "write_sheets",
    "write_static_sheets",
]
