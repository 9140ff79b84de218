"""Vector pictograms of Golden Animals' symbols: 8 animal heads, the ANIMALS coin, EXTRA.

Why drawn by the game and simple: the proofs must show every symbol without artwork files, as
vectors (sharp at any zoom, CMYK only), and each animal must be told apart at a glance even
printed in grey, so each has its own silhouette (tufts, trunk, mane, ossicones...) and its
own tint.  Each function draws in a unit square (0..1, origin bottom-left); the caller
translates and scales.
"""

from __future__ import annotations

from collections.abc import Callable

from reportlab.pdfgen.canvas import Canvas

from printpipe import french

CMYK = tuple[float, float, float, float]
BLACK: CMYK = (0, 0, 0, 1)
WHITE: CMYK = (0, 0, 0, 0)
GOLD: CMYK = (0, 0.25, 0.9, 0.05)
DEEP_GOLD: CMYK = (0, 0.4, 1, 0.25)

TINTS: dict[str, CMYK] = {
    "HIBOU": (0, 0.35, 0.6, 0.45),
    "SINGE": (0, 0.45, 0.75, 0.4),
    "ZEBRE": (0, 0, 0, 0.08),
    "PANDA": (0, 0, 0, 0.03),
    "GIRAFE": (0, 0.2, 0.85, 0.02),
    "ELEPHANT": (0.1, 0.05, 0, 0.45),
    "TIGRE": (0, 0.55, 1, 0),
    "LION": (0, 0.3, 0.9, 0.1),
}
"""The main colour of each animal (also the background tint of its cell, lightened)."""


def _fill(c: Canvas, colour: CMYK) -> None:
    c.setFillColorCMYK(*colour)


def _eyes(c: Canvas, y: float, dx: float, r: float, x: float = 0.5) -> None:
    _fill(c, BLACK)
    c.circle(x - dx, y, r, stroke=0, fill=1)
    c.circle(x + dx, y, r, stroke=0, fill=1)


def _ears(
    c: Canvas, y: float, dx: float, r: float, colour: CMYK, inner: CMYK | None = None
) -> None:
    _fill(c, colour)
    c.circle(0.5 - dx, y, r, stroke=0, fill=1)
    c.circle(0.5 + dx, y, r, stroke=0, fill=1)
    if inner:
        _fill(c, inner)
        c.circle(0.5 - dx, y, r * 0.55, stroke=0, fill=1)
        c.circle(0.5 + dx, y, r * 0.55, stroke=0, fill=1)


def _triangle(c: Canvas, points: list[tuple[float, float]], colour: CMYK) -> None:
    _fill(c, colour)
    path = c.beginPath()
    path.moveTo(*points[0])
    for p in points[1:]:
        path.lineTo(*p)
    path.close()
    c.drawPath(path, stroke=0, fill=1)


def owl(c: Canvas) -> None:
    body = TINTS["HIBOU"]
    _triangle(c, [(0.2, 0.78), (0.3, 0.95), (0.38, 0.78)], body)
    _triangle(c, [(0.62, 0.78), (0.7, 0.95), (0.8, 0.78)], body)
    _fill(c, body)
    c.ellipse(0.18, 0.05, 0.82, 0.85, stroke=0, fill=1)
    _fill(c, (0, 0.15, 0.3, 0.1))
    c.ellipse(0.3, 0.08, 0.7, 0.45, stroke=0, fill=1)
    _fill(c, WHITE)
    c.circle(0.37, 0.62, 0.13, stroke=0, fill=1)
    c.circle(0.63, 0.62, 0.13, stroke=0, fill=1)
    _eyes(c, 0.62, 0.13, 0.06)
    _triangle(c, [(0.45, 0.5), (0.55, 0.5), (0.5, 0.38)], (0, 0.4, 1, 0))


def monkey(c: Canvas) -> None:
    fur, face = TINTS["SINGE"], (0, 0.2, 0.35, 0.05)
    _ears(c, 0.55, 0.33, 0.12, fur, face)
    _fill(c, fur)
    c.circle(0.5, 0.5, 0.36, stroke=0, fill=1)
    _fill(c, face)
    c.ellipse(0.27, 0.16, 0.73, 0.62, stroke=0, fill=1)
    c.ellipse(0.3, 0.45, 0.5, 0.72, stroke=0, fill=1)
    c.ellipse(0.5, 0.45, 0.7, 0.72, stroke=0, fill=1)
    _eyes(c, 0.57, 0.09, 0.045)
    _fill(c, BLACK)
    c.circle(0.46, 0.38, 0.018, stroke=0, fill=1)
    c.circle(0.54, 0.38, 0.018, stroke=0, fill=1)
    c.setStrokeColorCMYK(*BLACK)
    c.setLineWidth(0.025)
    c.arc(0.4, 0.2, 0.6, 0.34, 200, 140)


def zebra(c: Canvas) -> None:
    c.setStrokeColorCMYK(*BLACK)
    c.setLineWidth(0.025)
    _fill(c, WHITE)
    for side in (-1, 1):  # ears, outlined so they show on a white cell
        path = c.beginPath()
        path.moveTo(0.5 + side * 0.1, 0.78)
        path.lineTo(0.5 + side * 0.24, 0.97)
        path.lineTo(0.5 + side * 0.25, 0.72)
        path.close()
        c.drawPath(path, stroke=1, fill=1)
    _fill(c, BLACK)
    c.rect(0.44, 0.8, 0.12, 0.16, stroke=0, fill=1)  # mane tuft
    _fill(c, WHITE)
    path = c.beginPath()  # a long horse head, wide at the brow, narrow at the muzzle
    path.moveTo(0.5, 0.88)
    path.curveTo(0.82, 0.88, 0.72, 0.3, 0.64, 0.12)
    path.lineTo(0.36, 0.12)
    path.curveTo(0.28, 0.3, 0.18, 0.88, 0.5, 0.88)
    path.close()
    c.drawPath(path, stroke=1, fill=1)
    c.setLineWidth(0.055)
    for y in (0.76, 0.64, 0.52, 0.4):
        w = 0.2 - (0.76 - y) * 0.15
        c.line(0.5 - w - 0.05, y, 0.5 - w + 0.08, y - 0.05)
        c.line(0.5 + w + 0.05, y, 0.5 + w - 0.08, y - 0.05)
    c.line(0.5, 0.86, 0.5, 0.72)
    _fill(c, (0, 0, 0, 0.8))
    c.ellipse(0.34, 0.04, 0.66, 0.26, stroke=0, fill=1)
    _fill(c, WHITE)
    c.circle(0.44, 0.13, 0.03, stroke=0, fill=1)
    c.circle(0.56, 0.13, 0.03, stroke=0, fill=1)
    _eyes(c, 0.6, 0.14, 0.04)


def panda(c: Canvas) -> None:
    _ears(c, 0.8, 0.27, 0.13, BLACK)
    c.setStrokeColorCMYK(*BLACK)
    c.setLineWidth(0.02)
    _fill(c, WHITE)
    c.circle(0.5, 0.47, 0.38, stroke=1, fill=1)
    _fill(c, BLACK)
    c.ellipse(0.26, 0.42, 0.45, 0.64, stroke=0, fill=1)
    c.ellipse(0.55, 0.42, 0.74, 0.64, stroke=0, fill=1)
    _fill(c, WHITE)
    c.circle(0.37, 0.54, 0.035, stroke=0, fill=1)
    c.circle(0.63, 0.54, 0.035, stroke=0, fill=1)
    _fill(c, BLACK)
    c.ellipse(0.44, 0.3, 0.56, 0.38, stroke=0, fill=1)


def giraffe(c: Canvas) -> None:
    coat, spot = TINTS["GIRAFE"], (0, 0.55, 0.9, 0.3)
    c.setStrokeColorCMYK(*spot)
    c.setLineWidth(0.05)
    c.line(0.4, 0.72, 0.36, 0.94)
    c.line(0.6, 0.72, 0.64, 0.94)
    _fill(c, spot)
    c.circle(0.36, 0.94, 0.05, stroke=0, fill=1)
    c.circle(0.64, 0.94, 0.05, stroke=0, fill=1)
    _fill(c, coat)
    c.rect(0.4, 0.0, 0.2, 0.4, stroke=0, fill=1)  # neck
    c.ellipse(0.27, 0.3, 0.73, 0.82, stroke=0, fill=1)
    _triangle(c, [(0.27, 0.7), (0.1, 0.78), (0.3, 0.62)], coat)
    _triangle(c, [(0.73, 0.7), (0.9, 0.78), (0.7, 0.62)], coat)
    _fill(c, spot)
    for x, y, r in ((0.45, 0.1, 0.05), (0.55, 0.24, 0.04), (0.35, 0.7, 0.04), (0.64, 0.72, 0.035)):
        c.circle(x, y, r, stroke=0, fill=1)
    _fill(c, (0, 0.3, 0.5, 0.15))
    c.ellipse(0.35, 0.3, 0.65, 0.48, stroke=0, fill=1)
    _eyes(c, 0.6, 0.11, 0.04)


def elephant(c: Canvas) -> None:
    skin = TINTS["ELEPHANT"]
    _fill(c, (0.1, 0.05, 0, 0.6))
    c.ellipse(0.02, 0.3, 0.42, 0.88, stroke=0, fill=1)
    c.ellipse(0.58, 0.3, 0.98, 0.88, stroke=0, fill=1)
    _fill(c, skin)
    c.circle(0.5, 0.6, 0.26, stroke=0, fill=1)
    path = c.beginPath()  # trunk
    path.moveTo(0.42, 0.45)
    path.curveTo(0.4, 0.2, 0.5, 0.05, 0.62, 0.08)
    path.lineTo(0.62, 0.18)
    path.curveTo(0.56, 0.18, 0.56, 0.3, 0.58, 0.45)
    path.close()
    c.drawPath(path, stroke=0, fill=1)
    _fill(c, WHITE)
    _triangle(c, [(0.36, 0.42), (0.3, 0.28), (0.4, 0.38)], WHITE)
    _triangle(c, [(0.64, 0.42), (0.7, 0.28), (0.6, 0.38)], WHITE)
    _eyes(c, 0.64, 0.11, 0.035)


def tiger(c: Canvas) -> None:
    coat = TINTS["TIGRE"]
    _ears(c, 0.8, 0.28, 0.11, coat, WHITE)
    _fill(c, coat)
    c.circle(0.5, 0.48, 0.38, stroke=0, fill=1)
    _fill(c, WHITE)
    c.ellipse(0.3, 0.14, 0.5, 0.4, stroke=0, fill=1)
    c.ellipse(0.5, 0.14, 0.7, 0.4, stroke=0, fill=1)
    c.setStrokeColorCMYK(*BLACK)
    c.setLineWidth(0.045)
    for y in (0.72, 0.6, 0.48):
        c.line(0.13, y, 0.28, y - 0.04)
        c.line(0.87, y, 0.72, y - 0.04)
    c.line(0.5, 0.84, 0.5, 0.7)
    c.line(0.42, 0.82, 0.44, 0.72)
    c.line(0.58, 0.82, 0.56, 0.72)
    _eyes(c, 0.55, 0.13, 0.045)
    _triangle(c, [(0.44, 0.36), (0.56, 0.36), (0.5, 0.28)], (0, 0.6, 0.4, 0.3))


def lion(c: Canvas) -> None:
    mane, face = (0, 0.55, 1, 0.35), TINTS["LION"]
    _fill(c, mane)
    for i in range(12):
        import math

        a = i * math.pi / 6
        c.circle(0.5 + 0.32 * math.cos(a), 0.5 + 0.32 * math.sin(a), 0.16, stroke=0, fill=1)
    c.circle(0.5, 0.5, 0.36, stroke=0, fill=1)
    _ears(c, 0.72, 0.2, 0.07, face)
    _fill(c, face)
    c.circle(0.5, 0.48, 0.26, stroke=0, fill=1)
    _fill(c, (0, 0.1, 0.35, 0))
    c.ellipse(0.38, 0.26, 0.62, 0.44, stroke=0, fill=1)
    _eyes(c, 0.56, 0.1, 0.04)
    _triangle(c, [(0.44, 0.42), (0.56, 0.42), (0.5, 0.34)], (0, 0.5, 0.5, 0.5))


def coin(c: Canvas, font: str, amount: str, name: str = "ANIMALS") -> None:
    """The ANIMALS money symbol: a gold coin with the amount it pays."""
    c.setStrokeColorCMYK(*DEEP_GOLD)
    c.setLineWidth(0.05)
    _fill(c, GOLD)
    c.circle(0.5, 0.5, 0.45, stroke=1, fill=1)
    c.setLineWidth(0.015)
    c.circle(0.5, 0.5, 0.37, stroke=1, fill=0)
    _fill(c, (0, 0.6, 1, 0.45))
    c.setFont(font, 0.11)
    c.drawCentredString(0.5, 0.62, name)
    size = 0.34
    while c.stringWidth(amount, font, size) > 0.6:  # inside the inner ring
        size -= 0.01
    c.setFont(font, size)
    c.drawCentredString(0.5, 0.5 - size * 0.5, amount)


def extra(c: Canvas, font: str, name: str = "EXTRA") -> None:
    """The EXTRA symbol: a star burst (a second grid opens)."""
    import math

    c.setStrokeColorCMYK(*DEEP_GOLD)
    c.setLineWidth(0.03)
    _fill(c, (0.9, 0.2, 0, 0))
    path = c.beginPath()
    for i in range(24):
        r = 0.48 if i % 2 == 0 else 0.34
        a = math.pi / 2 + i * math.pi / 12
        point = (0.5 + r * math.cos(a), 0.5 + r * math.sin(a))
        if i == 0:
            path.moveTo(*point)
        else:
            path.lineTo(*point)
    path.close()
    c.drawPath(path, stroke=1, fill=1)
    _fill(c, WHITE)
    c.setFont(font, 0.2)
    c.drawCentredString(0.5, 0.43, name)


ANIMALS: dict[str, Callable[[Canvas], None]] = {
    "HIBOU": owl,
    "SINGE": monkey,
    "ZEBRE": zebra,
    "PANDA": panda,
    "GIRAFE": giraffe,
    "ELEPHANT": elephant,
    "TIGRE": tiger,
    "LION": lion,
}


def draw_symbol(
    c: Canvas,
    code: str,
    x: float,
    y: float,
    size: float,
    font: str,
    money: str = "ANIMALS",
    extra_symbol: str = "EXTRA",
) -> None:
    """The pictogram of ``code`` in the square (x, y, size); unknown codes are refused."""
    c.saveState()
    c.translate(x, y)
    c.scale(size, size)
    if code in ANIMALS:
        ANIMALS[code](c)
    elif code.startswith(f"{money}:"):
        coin(c, font, french.euros(int(code.split(":", 1)[1])), money)
    elif code == extra_symbol:
        extra(c, font, extra_symbol)
    else:
        c.restoreState()
        raise ValueError(f"no pictogram for symbol {code!r}")
    c.restoreState()
