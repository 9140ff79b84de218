"""Press sheets drawn: the tickets of a chunk on their imposition, marks, slug, page boxes.

Where each ticket goes (the N-up grid, duplex mirroring, cut and stack) is
:mod:`printpipe.render.imposition`; this module draws the sheets.

Marks, in the registration colour (``/Separation /All``) so that every plate carries them,
the ScratchOff plate included: each ticket's crop marks, a register target (circle and cross)
in the middle of each side of the sheet, and the slug line.  A colour bar in the slug band
holds a patch of each process ink, of each spot (Blocking, Variable, ScratchOff,
ScratchDecor) and of the registration colour.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from reportlab.pdfgen.canvas import Canvas

from printpipe.render.canvas import PressCanvas
from printpipe.render.fonts import CachedText
from printpipe.render.imposition import Imposition, cut_and_stack
from printpipe.render.inks import REGISTRATION, SPOTS
from printpipe.render.template import MM, Template
from printpipe.render.ticket import TicketFace, TicketRenderer

PATCH = 4 * MM
"""A colour bar patch, square."""
PROCESS_PATCHES = ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1))
TARGET_RADIUS = 2.5 * MM
SIDES = ("front", "back")


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
    """A patch of every ink, ending at ``right``: process, spots, registration.  The spots'
    operators declare them on the current page: on later pages, :func:`_declare_inks`."""
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


def _declare_inks(c: PressCanvas) -> None:
    """Declare every spot ink and the registration colour on the current page (the colour
    bar and the marks use them)."""
    for ink in (*SPOTS, REGISTRATION):
        c.spot_operators(ink)


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
    colour_bar = _colour_bar(c, bar_right, slug_y)
    fill, stroke = c.spot_operators(REGISTRATION)
    marks = {side: f"q {fill} {stroke} {c.form_operator(f'marks-{side}')}\n" for side in SIDES}
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
            _declare_inks(c)
            c.addLiteral(
                marks[side] + slug_text.literal(slug_x, slug_y, slug(s, sheets, side)) + "Q"
            )
            c.use_forms([f"marks-{side}"])
            c.addLiteral(colour_bar)
            if overlay is not None:
                overlay(c, s, side)
            c.showPage()
            pages += 1
    return pages
