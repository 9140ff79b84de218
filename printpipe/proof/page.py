"""What every page of a proof pack shares: the page size, type sizes and the proof marks.

Proof pages are A4 landscape so that a product manager can print them on an office printer
at 100 % ("actual size") and lay a real ticket on the specimen: tickets are never scaled.
"""

from __future__ import annotations

from reportlab.lib.pagesizes import A4, landscape
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen.canvas import Canvas

from printpipe.render.template import MM, Template

PAGE = landscape(A4)
MARGIN = 12 * MM
INK = (0, 0, 0, 1)
GREY = (0, 0, 0, 0.55)
RED = (0, 0.95, 0.9, 0)
TRIM_LINE = (1, 0, 0, 0)  # cyan: the trim, where the ticket is cut
BLEED_LINE = (0, 1, 0, 0)  # magenta, dashed: how far the background runs past the trim
SPECIMEN_TEXT = "SPECIMEN - SANS VALEUR"


def text(
    c: Canvas,
    x: float,
    y: float,
    line: str,
    font: str,
    size: float,
    colour: tuple[float, float, float, float] = INK,
    align: str = "left",
) -> None:
    """One line of text, left, centred or right aligned at x."""
    c.setFillColorCMYK(*colour)
    c.setFont(font, size)
    if align == "centre":
        c.drawCentredString(x, y, line)
    elif align == "right":
        c.drawRightString(x, y, line)
    else:
        c.drawString(x, y, line)


def fit_size(line: str, font: str, size: float, width: float) -> float:
    """The largest type size <= ``size`` at which ``line`` fits ``width``."""
    while size > 4 and stringWidth(line, font, size) > width:
        size -= 0.25
    return size


def diagonal_mark(
    c: Canvas,
    cx: float,
    cy: float,
    length: float,
    angle: float,
    line: str,
    font: str,
    colour: tuple[float, float, float, float] = RED,
    largest: float = 60,
) -> None:
    """``line`` across a ticket or sheet: outlined and see-through, so what is under it
    (the symbols the proof is about) stays readable, yet no copy can pass for a ticket."""
    size = fit_size(line, font, largest, length)
    c.saveState()
    c.translate(cx, cy)
    c.rotate(angle)
    c.setFillColorCMYK(*colour)
    c.setStrokeColorCMYK(*colour)
    c.setFillAlpha(0.1)
    c.setLineWidth(max(size / 45, 0.4))
    c.setFont(font, size)
    t = c.beginText()
    t.setTextRenderMode(2)  # fill and stroke
    width = stringWidth(line, font, size)
    t.setTextOrigin(-width / 2, -size * 0.35)
    t.textLine(line)
    c.drawText(t)
    c.restoreState()


def trim_and_bleed(c: Canvas, template: Template, x: float, y: float) -> None:
    """The trim (solid cyan), the bleed (dashed magenta) and crop marks of one ticket at x, y."""
    w, h = template.width * MM, template.height * MM
    b = template.bleed * MM
    c.saveState()
    c.setLineWidth(0.4)
    c.setStrokeColorCMYK(*BLEED_LINE)
    c.setDash(3, 2)
    c.rect(x - b, y - b, w + 2 * b, h + 2 * b, stroke=1, fill=0)
    c.setDash()
    c.setStrokeColorCMYK(*TRIM_LINE)
    c.rect(x, y, w, h, stroke=1, fill=0)
    c.setStrokeColorCMYK(*INK)
    c.setLineWidth(0.3)
    start = (template.bleed + template.sheet["mark_gap"]) * MM
    end = start + template.sheet["mark_length"] * MM
    for cx, cy, dx, dy in (
        (x, y, -1, -1),
        (x + w, y, 1, -1),
        (x, y + h, -1, 1),
        (x + w, y + h, 1, 1),
    ):
        c.line(cx + dx * start, cy, cx + dx * end, cy)
        c.line(cx, cy + dy * start, cx, cy + dy * end)
    c.restoreState()


def scale_bar(c: Canvas, x: float, y: float, font: str, length_mm: int = 50) -> None:
    """A ruler of ``length_mm`` mm: measure it on paper to check the page printed at 100 %."""
    c.saveState()
    c.setStrokeColorCMYK(*INK)
    c.setLineWidth(0.5)
    c.line(x, y, x + length_mm * MM, y)
    for mm in range(0, length_mm + 1, 10):
        c.line(x + mm * MM, y, x + mm * MM, y + (2.5 if mm % 50 == 0 else 1.5) * MM)
    c.restoreState()
    text(c, x + length_mm * MM + 2 * MM, y, f"{length_mm} mm : échelle 100 %", font, 7)


def footer(c: Canvas, fonts: dict[str, str], left: str, page: int, pages: int) -> None:
    """The line at the foot of every page: what the pack is, and page n of N."""
    text(c, MARGIN, 6 * MM, left, fonts["regular"], 7, GREY)
    text(c, PAGE[0] - MARGIN, 6 * MM, f"page {page}/{pages}", fonts["regular"], 7, GREY, "right")
