"""A drawing made for a reportlab canvas, written as SVG for a web page.

The online game's screen shows the same pictograms as its proofs, drawn by the game's own
functions (``OnlineGame.draw_pictogram``), which speak reportlab's canvas.  :class:`SvgCanvas`
answers the part of that interface a pictogram uses (colours in CMYK, circles, ellipses,
rectangles, paths with lines and Bézier curves, arcs, centred text) and records it as SVG
elements, so the page needs no second drawing of any symbol and no artwork file.  Coordinates
stay the canvas's (origin bottom-left, y up): the SVG flips them once, in its root group.
Text is written in a CSS font family (the page ships DejaVu Sans, the proofs' font); its
widths are reportlab's for that font, so amounts are fitted the same way on both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape, quoteattr

from reportlab.pdfbase import pdfmetrics

from printpipe.render.fonts import register_font

CMYK = tuple[float, float, float, float]
FONT_FILE = "DejaVuSans-Bold.ttf"
FONT_FAMILY = "DejaVu Sans, Verdana, sans-serif"


def rgb_of(colour: CMYK) -> str:
    """A process colour on screen: the naive conversion (no ICC profile on a web page)."""
    c, m, y, k = colour
    r, g, b = (round(255 * (1 - v) * (1 - k)) for v in (c, m, y))
    return f"#{r:02x}{g:02x}{b:02x}"


def _n(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") or "0"


class SvgPath:
    """``canvas.beginPath()``: the path commands, in the canvas's coordinates."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def moveTo(self, x: float, y: float) -> None:
        self.parts.append(f"M{_n(x)} {_n(y)}")

    def lineTo(self, x: float, y: float) -> None:
        self.parts.append(f"L{_n(x)} {_n(y)}")

    def curveTo(self, x1: float, y1: float, x2: float, y2: float, x3: float, y3: float) -> None:
        self.parts.append(f"C{_n(x1)} {_n(y1)} {_n(x2)} {_n(y2)} {_n(x3)} {_n(y3)}")

    def close(self) -> None:
        self.parts.append("Z")


@dataclass
class _State:
    fill: str = "#000000"
    stroke: str = "#000000"
    line_width: float = 1.0
    font_size: float = 1.0
    transforms: list[str] = field(default_factory=list)


class SvgCanvas:
    """Records what a pictogram draws; :meth:`svg` gives the document."""

    def __init__(self, size: float = 1.0) -> None:
        self.size = size
        self.font = register_font(FONT_FILE)
        self._state = _State()
        self._stack: list[_State] = []
        self._elements: list[str] = []

    # -- state ---------------------------------------------------------------------------------

    def saveState(self) -> None:
        s = self._state
        self._stack.append(_State(s.fill, s.stroke, s.line_width, s.font_size, list(s.transforms)))

    def restoreState(self) -> None:
        self._state = self._stack.pop()

    def translate(self, dx: float, dy: float) -> None:
        self._state.transforms.append(f"translate({_n(dx)} {_n(dy)})")

    def scale(self, sx: float, sy: float) -> None:
        self._state.transforms.append(f"scale({_n(sx)} {_n(sy)})")

    def setFillColorCMYK(self, c: float, m: float, y: float, k: float) -> None:
        self._state.fill = rgb_of((c, m, y, k))

    def setStrokeColorCMYK(self, c: float, m: float, y: float, k: float) -> None:
        self._state.stroke = rgb_of((c, m, y, k))

    def setLineWidth(self, width: float) -> None:
        self._state.line_width = width

    def setFont(self, name: str, size: float) -> None:
        self._state.font_size = size

    def stringWidth(self, text: str, font: str, size: float) -> float:
        return float(pdfmetrics.stringWidth(text, self.font, size))

    # -- shapes --------------------------------------------------------------------------------

    def _paint(self, stroke: int, fill: int) -> str:
        s = self._state
        paint = f'fill="{s.fill}"' if fill else 'fill="none"'
        if stroke:
            paint += f' stroke="{s.stroke}" stroke-width="{_n(s.line_width)}"'
        return paint

    def _add(self, element: str) -> None:
        transforms = self._state.transforms
        if transforms:
            element = f'<g transform="{" ".join(transforms)}">{element}</g>'
        self._elements.append(element)

    def circle(self, x: float, y: float, r: float, stroke: int = 1, fill: int = 0) -> None:
        paint = self._paint(stroke, fill)
        self._add(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="{_n(r)}" {paint}/>')

    def ellipse(
        self, x1: float, y1: float, x2: float, y2: float, stroke: int = 1, fill: int = 0
    ) -> None:
        cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, abs(x2 - x1) / 2, abs(y2 - y1) / 2
        paint = self._paint(stroke, fill)
        self._add(f'<ellipse cx="{_n(cx)}" cy="{_n(cy)}" rx="{_n(rx)}" ry="{_n(ry)}" {paint}/>')

    def rect(self, x: float, y: float, w: float, h: float, stroke: int = 1, fill: int = 0) -> None:
        paint = self._paint(stroke, fill)
        self._add(f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" {paint}/>')

    def line(self, x1: float, y1: float, x2: float, y2: float) -> None:
        paint = self._paint(1, 0)
        self._add(f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" {paint}/>')

    def arc(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        startAng: float = 0,
        extent: float = 90,
    ) -> None:
        """reportlab's arc: part of the ellipse inscribed in the box, counter-clockwise from
        ``startAng`` degrees over ``extent``; stroked."""
        cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, abs(x2 - x1) / 2, abs(y2 - y1) / 2
        a0, a1 = math.radians(startAng), math.radians(startAng + extent)
        sx, sy = cx + rx * math.cos(a0), cy + ry * math.sin(a0)
        ex, ey = cx + rx * math.cos(a1), cy + ry * math.sin(a1)
        large = 1 if abs(extent) > 180 else 0
        sweep = 1 if extent > 0 else 0
        d = f"M{_n(sx)} {_n(sy)} A{_n(rx)} {_n(ry)} 0 {large} {sweep} {_n(ex)} {_n(ey)}"
        self._add(f'<path d="{d}" {self._paint(1, 0)}/>')

    def beginPath(self) -> SvgPath:
        return SvgPath()

    def drawPath(self, path: SvgPath, stroke: int = 1, fill: int = 0) -> None:
        self._add(f'<path d="{" ".join(path.parts)}" {self._paint(stroke, fill)}/>')

    def drawCentredString(self, x: float, y: float, text: str) -> None:
        size = self._state.font_size
        # the root group flips y: flip the text back about its baseline
        self._add(
            f'<text transform="translate({_n(x)} {_n(y)}) scale(1 -1)" text-anchor="middle" '
            f'font-family={quoteattr(FONT_FAMILY)} font-weight="bold" font-size="{_n(size)}" '
            f'fill="{self._state.fill}">{escape(text)}</text>'
        )

    # -- the document --------------------------------------------------------------------------

    def svg(self, *, label: str) -> str:
        """The SVG element (inline in a page): a ``size`` square, y up, titled ``label``."""
        s = _n(self.size)
        body = "".join(self._elements)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {s} {s}" role="img" '
            f"aria-label={quoteattr(label)}><title>{escape(label)}</title>"
            f'<g transform="matrix(1 0 0 -1 0 {s})">{body}</g></svg>'
        )
