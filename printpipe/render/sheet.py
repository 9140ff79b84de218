"""Press sheets: N-up imposition, crop marks, slug line, page boxes, duplex and cut-and-stack.

Geometry (all from the template, in mm): each ticket occupies a cell of its trim plus, on
every side, its bleed, a small gap and its crop marks, so no ticket's marks fall on another's
bleed.  The grid is the largest that fits the sheet's margins above the slug band, centred.

Duplex: every front sheet is followed by its back sheet, mirrored left-right about the sheet's
centre, so the back of the ticket at front slot (row r, col c) is at (row r, col ncols-1-c).

Marks, in the registration colour (``/Separation /All``) so that every plate carries them,
the ScratchOff plate included: each ticket's crop marks, a register target (circle and cross)
in the middle of each side of the sheet, and the slug line.  A colour bar in the slug band
holds a patch of each process ink, of each spot (Blocking, Variable, ScratchOff,
ScratchDecor) and of the registration colour.

Cut and stack: a chunk of T tickets on a sheet of N slots takes S = ceil(T / N) sheets; slot k
(reading order on the front: row by row, top-left first) of sheet s holds chunk ticket
k * S + s.  Stack the S sheets in order, cut, and stack k holds tickets k*S .. k*S+S-1 in
order: putting stack 0 on top of stack 1 and so on gives the chunk in order.  When N does not
divide T, the last slots of the last sheets stay blank (only their crop marks are printed).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError
from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText
from printpipe.render.inks import REGISTRATION, SPOTS
from printpipe.render.template import MM, Template
from printpipe.render.ticket import TicketFace, TicketRenderer

SHEETS = {"A3": (297.0, 420.0), "SRA3": (320.0, 450.0)}
PATCH = 4 * MM
"""A colour bar patch, square."""
PROCESS_PATCHES = ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))
TARGET_RADIUS = 2.5 * MM


def parse_sheet(text: str) -> tuple[float, float]:
    """``A3``, ``SRA3`` or ``WxH`` in mm -> (width, height) in mm."""
    if text.upper() in SHEETS:
        return SHEETS[text.upper()]
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[xX]\s*(\d+(?:\.\d+)?)\s*", text)
    if not match:
        raise PrintpipeError(
            f"unknown sheet size {text!r}: use A3, SRA3 or WIDTHxHEIGHT in mm (e.g. 330x480)"
        )
    width, height = float(match.group(1)), float(match.group(2))
    if not (50 <= width <= 2000 and 50 <= height <= 2000):
        raise PrintpipeError(f"sheet size {text!r} is out of range (50 to 2000 mm a side)")
    return width, height


class PressSheet(NamedTuple):
    """A press sheet as asked (``A3``, ``SRA3`` or ``WxH``) and its size in mm."""

    name: str
    width_mm: float
    height_mm: float

    @staticmethod
    def parse(text: str) -> PressSheet:
        return PressSheet(text, *parse_sheet(text))


@dataclass(frozen=True)
class Imposition:
    """Where each slot's ticket sits on the front and back sheet (trim bottom-left, points)."""

    sheet_w: float  # mm
    sheet_h: float
    cols: int
    rows: int
    front: tuple[tuple[float, float], ...]
    back: tuple[tuple[float, float], ...]
    trim_box: tuple[float, float, float, float]
    bleed_box: tuple[float, float, float, float]

    @property
    def slots(self) -> int:
        return self.cols * self.rows


def impose(template: Template, sheet_w: float, sheet_h: float) -> Imposition:
    """The largest grid of tickets that fits the sheet; refuses a sheet that holds none."""
    s = template.sheet
    outer = template.bleed + s["mark_gap"] + s["mark_length"]
    cell_w, cell_h = template.width + 2 * outer, template.height + 2 * outer
    usable_w = sheet_w - 2 * s["margin"]
    usable_h = sheet_h - 2 * s["margin"] - s["slug_height"]
    cols, rows = int(usable_w // cell_w), int(usable_h // cell_h)
    if cols < 1 or rows < 1:
        raise PrintpipeError(
            f"sheet {sheet_w:g}x{sheet_h:g} mm is too small for one {template.width:g}x"
            f"{template.height:g} mm ticket with bleed and crop marks"
        )
    x0 = (sheet_w - cols * cell_w) / 2 + outer
    y_top = s["margin"] + s["slug_height"] + (usable_h + cols * 0 - rows * cell_h) / 2
    front, back = [], []
    for r in range(rows):
        for col in range(cols):
            x = x0 + col * cell_w
            y = y_top + (rows - 1 - r) * cell_h + outer
            front.append((x * MM, y * MM))
            back.append(((sheet_w - x - template.width) * MM, y * MM))
    left, bottom = x0 * MM, (y_top + outer) * MM
    right = (x0 + (cols - 1) * cell_w + template.width) * MM
    top = (y_top + outer + (rows - 1) * cell_h + template.height) * MM
    b = template.bleed * MM
    return Imposition(
        sheet_w,
        sheet_h,
        cols,
        rows,
        tuple(front),
        tuple(back),
        (left, bottom, right, top),
        (left - b, bottom - b, right + b, top + b),
    )


def cut_and_stack(tickets: int, slots: int) -> tuple[int, list[list[int]]]:
    """Sheets needed, and for each sheet the chunk ticket of each slot (-1: blank)."""
    sheets = max(1, math.ceil(tickets / slots))
    order = [
        [k * sheets + s if k * sheets + s < tickets else -1 for k in range(slots)]
        for s in range(sheets)
    ]
    return sheets, order


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


def _define_marks(
    c: Canvas, name: str, places: Sequence[tuple[float, float]], t: Template,
    imposition: Imposition,
) -> None:  # fmt: skip
    """One form with every crop mark of a sheet side (two short lines at each trim corner)
    and the register targets; it strokes in the colour the page selects (registration)."""
    w, h = t.width * MM, t.height * MM
    start = (t.bleed + t.sheet["mark_gap"]) * MM
    end = start + t.sheet["mark_length"] * MM
    c.beginForm(name)
    c.setLineWidth(0.25)
    ops = []
    for x, y in places:
        for cx, cy, dx, dy in (
            (x, y, -1, -1),
            (x + w, y, 1, -1),
            (x, y + h, -1, 1),
            (x + w, y + h, 1, 1),
        ):
            ops.append(f"{cx + dx * start:.2f} {cy:.2f} m {cx + dx * end:.2f} {cy:.2f} l")
            ops.append(f"{cx:.2f} {cy + dy * start:.2f} m {cx:.2f} {cy + dy * end:.2f} l")
    c.addLiteral("\n".join(ops) + "\nS")
    for x, y, r in _targets(imposition, t):
        c.circle(x, y, r * 0.6, stroke=1, fill=0)
        c.line(x - r, y, x + r, y)
        c.line(x, y - r, x, y + r)
    c.endForm()


def _colour_bar(c: PressCanvas, right: float, bottom: float) -> str:
    """A patch of every ink, ending at ``right``: process, spots, registration (per page)."""
    selects = [
        f"{cyan:g} {magenta:g} {yellow:g} {black:g} k"
        for cyan, magenta, yellow, black in PROCESS_PATCHES
    ]
    selects += [c.spot_operators(ink)[0] for ink in (*SPOTS, REGISTRATION)]
    x = right - len(selects) * PATCH
    ops = ["q"]
    for i, select in enumerate(selects):
        ops.append(f"{select} {x + i * PATCH:.2f} {bottom:.2f} {PATCH:.2f} {PATCH:.2f} re f")
    ops.append("Q\n")
    return "\n".join(ops)


def write_sheets(
    c: PressCanvas,
    renderer: TicketRenderer,
    imposition: Imposition,
    faces: Sequence[TicketFace],
    slug: Callable[[int, int, str], str],
    only: Collection[int] | None = None,
    overlay: Callable[[Canvas, int, str], None] | None = None,
) -> int:
    """Draw ``faces`` (one chunk, in order) as duplex sheets on ``c``; returns pages drawn.

    ``slug(sheet_index, sheets, side)`` gives each sheet's slug line.  Press proofs draw
    ``only`` some sheet indices of the chunk (each exactly as in the press file) and add an
    ``overlay(canvas, sheet_index, side)`` (their PROOF mark) on top of each page.
    """
    t = renderer.t
    c.setTrimBox(imposition.trim_box)
    c.setBleedBox(imposition.bleed_box)
    _define_marks(c, "marks-front", imposition.front, t, imposition)
    _define_marks(c, "marks-back", imposition.back, t, imposition)
    bar_right = (imposition.sheet_w - t.sheet["margin"]) * MM
    sheets, order = cut_and_stack(len(faces), imposition.slots)
    slug_x, slug_y = t.sheet["margin"] * MM, t.sheet["margin"] * MM
    slug_text = CachedText(c, renderer.fonts["regular"], 6)
    pages = 0
    for s, slots in enumerate(order):
        if only is not None and s not in only:
            continue
        for side, places, draw in (
            ("front", imposition.front, renderer.draw_front),
            ("back", imposition.back, renderer.draw_back),
        ):
            for k, index in enumerate(slots):
                if index >= 0:
                    draw(*places[k], faces[index])
            renderer.finish_page()
            fill, stroke = c.spot_operators(REGISTRATION)
            c.addLiteral(f"q {fill} {stroke} {c.form_operator(f'marks-{side}')}\n")
            c.addLiteral(f"{slug_text.literal(slug_x, slug_y, slug(s, sheets, side))}Q")
            c.use_forms([f"marks-{side}"])
            c.addLiteral(_colour_bar(c, bar_right, slug_y))
            if overlay is not None:
                overlay(c, s, side)
            c.showPage()
            pages += 1
    return pages
