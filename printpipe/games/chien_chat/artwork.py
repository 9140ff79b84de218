"""The fixed artwork of the front: the dog and the cat, the kennel and the basket, a paw print.

Drawn in process CMYK in a 100 x 100 unit box (the caller scales it into its zone), once per
PDF inside the static front form of each effigy.
"""

from __future__ import annotations

from collections.abc import Sequence

from reportlab.pdfgen.canvas import Canvas

BROWN = (0, 0.45, 0.8, 0.35)
DARK_BROWN = (0, 0.5, 0.8, 0.65)
CREAM = (0, 0.06, 0.2, 0)
BLACK = (0, 0, 0, 1)
WHITE = (0, 0, 0, 0)
GREY_CAT = (0.1, 0.1, 0.05, 0.45)
GINGER = (0, 0.55, 0.95, 0)
PINK = (0, 0.45, 0.15, 0)
RED = (0, 0.9, 0.85, 0.1)
DARK_RED = (0, 0.9, 0.85, 0.4)
WICKER = (0, 0.25, 0.65, 0.15)


def set_colour(c: Canvas, cmyk: tuple[float, float, float, float]) -> None:
    """Fill and stroke in one process colour (artwork is drawn in one colour at a time)."""
    c.setFillColorCMYK(*cmyk)
    c.setStrokeColorCMYK(*cmyk)


def polygon(c: Canvas, points: Sequence[tuple[float, float]], stroke: bool = False) -> None:
    """A filled closed polygon through ``points``."""
    path = c.beginPath()
    path.moveTo(*points[0])
    for point in points[1:]:
        path.lineTo(*point)
    path.close()
    c.drawPath(path, fill=1, stroke=int(stroke))


def draw_dog(c: Canvas) -> None:
    """A friendly dog's head with floppy ears."""
    set_colour(c, DARK_BROWN)
    c.ellipse(4, 30, 30, 92, stroke=0, fill=1)
    c.ellipse(70, 30, 96, 92, stroke=0, fill=1)
    set_colour(c, BROWN)
    c.ellipse(18, 8, 82, 90, stroke=0, fill=1)
    set_colour(c, CREAM)
    c.ellipse(30, 8, 70, 46, stroke=0, fill=1)
    set_colour(c, BLACK)
    c.circle(37, 60, 5, stroke=0, fill=1)
    c.circle(63, 60, 5, stroke=0, fill=1)
    c.ellipse(42, 32, 58, 44, stroke=0, fill=1)
    c.setLineWidth(2.5)
    c.line(50, 32, 50, 22)
    path = c.beginPath()
    path.moveTo(40, 22)
    path.curveTo(44, 16, 56, 16, 60, 22)
    c.drawPath(path, stroke=1, fill=0)
    set_colour(c, PINK)
    c.ellipse(45, 6, 55, 18, stroke=0, fill=1)


def draw_cat(c: Canvas) -> None:
    """A cat's head: pointed ears, whiskers."""
    set_colour(c, GINGER)
    for points in (((12, 60), (18, 98), (44, 78)), ((88, 60), (82, 98), (56, 78))):
        polygon(c, points)
    c.ellipse(10, 10, 90, 84, stroke=0, fill=1)
    set_colour(c, PINK)
    for points in (((20, 70), (22, 90), (36, 78)), ((80, 70), (78, 90), (64, 78))):
        polygon(c, points)
    set_colour(c, CREAM)
    c.ellipse(32, 14, 68, 42, stroke=0, fill=1)
    set_colour(c, BLACK)
    c.ellipse(30, 50, 40, 64, stroke=0, fill=1)
    c.ellipse(60, 50, 70, 64, stroke=0, fill=1)
    set_colour(c, PINK)
    path = c.beginPath()
    path.moveTo(44, 38)
    path.lineTo(56, 38)
    path.lineTo(50, 31)
    path.close()
    c.drawPath(path, stroke=0, fill=1)
    set_colour(c, BLACK)
    c.setLineWidth(1.5)
    for y0, y1 in ((32, 36), (28, 26), (24, 16)):
        c.line(36, y0, 2, y1)
        c.line(64, y0, 98, y1)


def draw_paw(c: Canvas) -> None:
    """A paw print: a pad and four toes."""
    c.ellipse(26, 8, 74, 52, stroke=0, fill=1)
    for x, y in ((16, 56), (36, 76), (64, 76), (84, 56)):
        c.ellipse(x - 10, y - 13, x + 10, y + 13, stroke=0, fill=1)


def draw_kennel(c: Canvas, w: float, h: float, roof: float) -> None:
    """A kennel filling w x h points: walls across the whole width, a floor, and a roof in the
    top ``roof``, exactly as wide as the walls: nothing sticks out past them, and nothing of
    the roof reaches below ``h - roof``, where the scratch zone may begin."""
    eaves = h - roof  # the roof's base, on the walls' top
    set_colour(c, BROWN)
    c.rect(0, 0, w, eaves + 0.5, stroke=0, fill=1)
    set_colour(c, DARK_BROWN)
    c.rect(0, 0, w, 1.6, stroke=0, fill=1)  # the floor
    set_colour(c, RED)
    polygon(c, ((0, eaves), (w / 2, h), (w, eaves)))
    set_colour(c, DARK_RED)
    c.rect(0, eaves, w, 1.2, stroke=0, fill=1)  # the roof's edge, along the walls' top


def draw_basket(c: Canvas, w: float, h: float, roof: float) -> None:
    """A wicker basket filling w x h points, its hood in the top ``roof`` (nothing of it below
    ``h - roof``, where the scratch zone may begin).

    The hood is filled dark, like the kennel's roof: the white "BONUS PANIER" label sits on
    it, and on the bare background of an open handle it could not be read.
    """
    rim = h - roof  # the hood's base; the basket's body reaches 1 pt above it, under the hood
    set_colour(c, DARK_BROWN)
    hood = c.beginPath()
    hood.moveTo(2, rim)
    hood.curveTo(6, h + roof * 0.25, w - 6, h + roof * 0.25, w - 2, rim)
    hood.close()
    c.drawPath(hood, stroke=0, fill=1)
    set_colour(c, WICKER)
    c.setLineWidth(1.5)
    c.bezier(2, rim, 6, h + roof * 0.25, w - 6, h + roof * 0.25, w - 2, rim)
    c.roundRect(0, 0, w, rim + 1, 6, stroke=0, fill=1)
    set_colour(c, DARK_BROWN)
    c.setLineWidth(0.6)
    c.saveState()  # the weave stays inside the basket's rounded body
    body = c.beginPath()
    body.roundRect(0, 0, w, rim + 1, 6)
    c.clipPath(body, stroke=0, fill=0)
    step = 5.0
    x = 2.0
    while x < w:
        c.line(x, 0, x, rim + 1)
        x += step
    c.restoreState()
