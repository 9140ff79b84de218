"""A design agency's artwork, placed as vectors: SVG files named by the ticket template.

A template may name, in its ``[artwork]`` table, an SVG file for the static artwork of each
side (``front``, ``back``: the background every variant's face is drawn on, full bleed) and for
the coating's decoration (``decoration``: the picture printed on every play area's coating, in
place of the game's own mark).  svglib reads the SVG into reportlab's vector shapes, so the
artwork stays vector; each file becomes one Form XObject, drawn once per PDF and placed by
reference.  What PDF/X-1a cannot hold is refused or made so, in one line naming the file:

- live text is refused (artwork for print has its text converted to outlines), and so are
  raster images (they would not stay vector);
- sRGB colours are converted to process CMYK (naive under-colour removal: K = 1 - max(R, G, B));
  a decoration, which prints in one ink, is converted to tints of it (its darkness);
- opacity is dropped: PDF/X-1a has no transparency.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reportlab.graphics import renderPDF
from reportlab.graphics.shapes import Drawing, Image, String
from reportlab.lib.colors import CMYKColor, Color

from printpipe.errors import PrintpipeError
from printpipe.render.canvas import PressCanvas

ROLES = ("front", "back", "decoration")


def load_svg(path: Path, *, one_ink: bool = False) -> Drawing:
    """The SVG at ``path`` as reportlab shapes in process CMYK (or, ``one_ink``, in greys that
    become tints of the page's ink); refuses text, images and unreadable files."""
    from svglib.svglib import svg2rlg

    try:
        drawing = svg2rlg(str(path))
    except Exception as exc:  # svglib raises what its XML and CSS parsers raise
        raise PrintpipeError(f"artwork {path} is not a readable SVG: {exc}") from None
    if drawing is None or not drawing.width or not drawing.height:
        raise PrintpipeError(f"artwork {path} is not a readable SVG (no size)")
    _convert(drawing, path, one_ink)
    return drawing


def _convert(node: Any, path: Path, one_ink: bool) -> None:
    for child in getattr(node, "contents", ()):
        if isinstance(child, String):
            raise PrintpipeError(
                f"artwork {path} has live text ({child.text[:20]!r}): convert it to outlines"
            )
        if isinstance(child, Image):
            raise PrintpipeError(f"artwork {path} holds a raster image: give vector artwork")
        for attribute in ("fillColor", "strokeColor"):
            colour = getattr(child, attribute, None)
            if isinstance(colour, Color):
                setattr(child, attribute, _cmyk(colour, one_ink))
        for attribute in ("fillOpacity", "strokeOpacity"):
            if getattr(child, attribute, None) is not None:
                setattr(child, attribute, 1)
        _convert(child, path, one_ink)


def _cmyk(colour: Color, one_ink: bool) -> CMYKColor:
    if isinstance(colour, CMYKColor) and not one_ink:
        return CMYKColor(colour.cyan, colour.magenta, colour.yellow, colour.black)
    red, green, blue = colour.red, colour.green, colour.blue
    if one_ink:
        return CMYKColor(0, 0, 0, round(1 - (0.299 * red + 0.587 * green + 0.114 * blue), 4))
    black = 1 - max(red, green, blue)
    if black >= 1:
        return CMYKColor(0, 0, 0, 1)
    cyan, magenta, yellow = ((1 - v - black) / (1 - black) for v in (red, green, blue))
    return CMYKColor(round(cyan, 4), round(magenta, 4), round(yellow, 4), round(black, 4))


def draw_into(
    c: PressCanvas, drawing: Drawing, x: float, y: float, w: float, h: float, font: str
) -> None:
    """Draw ``drawing`` stretched onto the box (x, y, w, h) of the current page or form;
    ``font`` (an embedded one) stands for reportlab's default Helvetica, which the graphics
    renderer selects even for a drawing without text and which would not be embedded."""
    drawing.initialFontName = font
    c.saveState()
    c.translate(x, y)
    c.scale(w / drawing.width, h / drawing.height)
    renderPDF.draw(drawing, c, 0, 0, showBoundary=False)
    c.restoreState()


def define_form(
    c: PressCanvas, name: str, drawing: Drawing, box: tuple[float, ...], font: str
) -> str:
    """One Form XObject holding ``drawing`` stretched onto ``box`` (x, y, w, h)."""
    x, y, w, h = box
    c.beginForm(name, x, y, x + w, y + h)
    draw_into(c, drawing, x, y, w, h, font)
    c.endForm()
    return name


def check_artwork(files: dict[str, Path]) -> None:
    """Load every designer file a template names, so that a bad one is refused before a run
    writes anything (the renderer loads them again in each worker)."""
    for role, path in files.items():
        load_svg(path, one_ink=role == "decoration")
