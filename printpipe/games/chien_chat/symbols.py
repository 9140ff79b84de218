"""The play symbols of the dog/cat ticket as vector drawings, one function per symbol code.

Each drawing is made for this game (not a font glyph, not a raster) in a 100 x 100 unit box,
as a black (K) silhouette whose details are holes: silhouettes stay recognisable at 8-12 mm, and
symbols are variable data, which prints in black only.  The renderer
(:func:`printpipe.render.symbols.define_symbol_forms`) makes each one Form XObject with its
caption, drawn once per PDF and placed by reference.

A detail is never painted in white over the black: on the ``Variable`` plate that would be a
0-tint fill, which only a viewer simulating overprint shows as paper (pdfium, browsers and the
proof's PNGs paint it white over the light base, LUNE as a full disc with a white bulge).  A
detail is a hole instead: a shape with holes is one even-odd outline (LUNE's crescent), or the
ink is drawn through a clip that leaves the holes out (:func:`_clipped`, one even-odd clip per
hole, so holes may cross), the same on press and in every viewer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from typing import Any

from reportlab.pdfgen.canvas import FILL_EVEN_ODD, Canvas

from printpipe.games.chien_chat.artwork import polygon, set_colour

Drawing = Callable[[Canvas], None]
Hole = Callable[[Any], None]
"""Adds one closed shape to a reportlab path (a hole of the ink drawn under :func:`_clipped`)."""
INK = (0, 0, 0, 1)
FRAME = (-60.0, -60.0, 220.0, 220.0)
"""Wider than any drawing, even turned: the clip's outer edge."""


@contextmanager
def _clipped(c: Canvas, *holes: Hole) -> Any:
    """Draw the ink inside this block with every hole left out (paper shows through)."""
    c.saveState()
    for hole in holes:
        path = c.beginPath()
        path.rect(*FRAME)
        hole(path)
        c.clipPath(path, stroke=0, fill=0, fillMode=FILL_EVEN_ODD)
    try:
        yield
    finally:
        c.restoreState()


def _circle(x: float, y: float, r: float) -> Hole:
    return lambda path: path.circle(x, y, r)


def _ellipse(x1: float, y1: float, x2: float, y2: float) -> Hole:
    return lambda path: path.ellipse(x1, y1, x2 - x1, y2 - y1)


def _rect(x: float, y: float, w: float, h: float) -> Hole:
    return lambda path: path.rect(x, y, w, h)


def _outline(points: Sequence[tuple[float, float]]) -> Hole:
    def add(path: Any) -> None:
        path.moveTo(*points[0])
        for point in points[1:]:
            path.lineTo(*point)
        path.close()

    return add


def _stroke(points: Sequence[tuple[float, float]], width: float, steps: int = 24) -> Hole:
    """The outline of a stroke of ``width`` along a line (2 points) or a cubic Bezier curve
    (4 control points), butt-ended: a stroke's area as a closed shape."""
    if len(points) == 2:
        (x0, y0), (x3, y3) = points
        curve = [(x0, y0), (x0, y0), (x3, y3), (x3, y3)]
        steps = 1
    else:
        curve = list(points)
    (ax, ay), (bx, by), (cx, cy), (dx, dy) = curve
    left, right = [], []
    for i in range(steps + 1):
        t = i / steps
        u = 1 - t
        x = u**3 * ax + 3 * u * u * t * bx + 3 * u * t * t * cx + t**3 * dx
        y = u**3 * ay + 3 * u * u * t * by + 3 * u * t * t * cy + t**3 * dy
        tx = 3 * u * u * (bx - ax) + 6 * u * t * (cx - bx) + 3 * t * t * (dx - cx)
        ty = 3 * u * u * (by - ay) + 6 * u * t * (cy - by) + 3 * t * t * (dy - cy)
        if tx == 0 and ty == 0:
            tx, ty = dx - ax, dy - ay
        norm = math.hypot(tx, ty)
        nx, ny = -ty / norm * width / 2, tx / norm * width / 2
        left.append((x + nx, y + ny))
        right.append((x - nx, y - ny))
    return _outline(left + right[::-1])


def _bone(c: Canvas, cx: float, cy: float, length: float, angle: float, r: float) -> None:
    """A bone: a shaft with two knobs at each end (the classic cartoon bone)."""
    c.saveState()
    c.translate(cx, cy)
    c.rotate(angle)
    half = length / 2
    c.rect(-half, -r * 0.55, length, r * 1.1, stroke=0, fill=1)
    for x in (-half, half):
        for y in (-r * 0.62, r * 0.62):
            c.circle(x, y, r * 0.72, stroke=0, fill=1)
    c.restoreState()


def draw_os(c: Canvas) -> None:
    set_colour(c, INK)
    _bone(c, 50, 50, 62, 30, 20)


def draw_gamelle(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _outline([(6, 52), (94, 52), (84, 14), (16, 14)])):  # paper round the bowl
        _bone(c, 33, 64, 40, 115, 12)
        _bone(c, 67, 64, 40, 65, 12)
    with _clipped(c, _stroke([(30, 32), (70, 32)], 3)):
        polygon(c, [(10, 50), (90, 50), (81, 16), (19, 16)])
        c.roundRect(4, 46, 92, 9, 4, stroke=0, fill=1)


def draw_souris(c: Canvas) -> None:
    set_colour(c, INK)
    c.setLineWidth(5)
    path = c.beginPath()
    path.moveTo(78, 30)
    path.curveTo(96, 30, 98, 10, 80, 8)
    c.drawPath(path, stroke=1, fill=0)
    with _clipped(c, _circle(38, 64, 8), _circle(20, 42, 3.5)):  # the ear's inside, the eye
        path = c.beginPath()  # body: a teardrop pointing left (the nose)
        path.moveTo(4, 34)
        path.curveTo(20, 70, 70, 72, 84, 36)
        path.curveTo(88, 24, 78, 16, 60, 16)
        path.lineTo(30, 16)
        path.curveTo(18, 18, 8, 26, 4, 34)
        c.drawPath(path, stroke=0, fill=1)
        c.circle(38, 64, 15, stroke=0, fill=1)
    c.circle(5, 34, 3.5, stroke=0, fill=1)
    c.rect(38, 12, 6, 8, stroke=0, fill=1)
    c.rect(62, 12, 6, 8, stroke=0, fill=1)


def draw_pelote(c: Canvas) -> None:
    set_colour(c, INK)
    threads = [
        _stroke([(20, 64 + o * 1.2), (36, 70 + o), (56, 40 + o), (74, 46 + o * 0.8)], 3.5)
        for o in (-18, -6, 6, 18)
    ]
    with _clipped(c, *threads, _stroke([(40, 22), (30, 44), (40, 72), (58, 86)], 3.5)):
        c.circle(46, 54, 36, stroke=0, fill=1)
    c.setLineWidth(4.5)
    path = c.beginPath()  # the loose thread
    path.moveTo(70, 26)
    path.curveTo(84, 10, 92, 22, 96, 6)
    c.drawPath(path, stroke=1, fill=0)


def draw_collier(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _ellipse(15, 40, 85, 86)):
        c.ellipse(4, 29, 96, 97, stroke=0, fill=1)
    with _clipped(c, _rect(45, 81, 10, 10)):
        c.rect(40, 76, 20, 20, stroke=0, fill=1)  # buckle
    c.setLineWidth(4)
    c.line(50, 34, 50, 22)
    with _clipped(c, _circle(50, 14, 4)):
        c.circle(50, 14, 12, stroke=0, fill=1)  # the medal


def draw_arbre(c: Canvas) -> None:
    """A fir tree: three stacked tiers and a trunk.  Not a round canopy: at 10 mm a round
    one read as the cloud (NUAGE), a decoy of the same ticket."""
    set_colour(c, INK)
    c.rect(43, 2, 14, 18, stroke=0, fill=1)
    for base, top, half in ((16, 52, 42), (40, 74, 33), (62, 98, 24)):
        polygon(c, [(50 - half, base), (50 + half, base), (50, top)])


def draw_chapeau(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _rect(24, 30, 52, 9)):  # the band
        c.ellipse(2, 14, 98, 32, stroke=0, fill=1)
        c.roundRect(24, 22, 52, 66, 5, stroke=0, fill=1)


def draw_fleur(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _circle(50, 66, 10)):
        c.setLineWidth(6)
        c.line(50, 4, 50, 50)
        c.ellipse(50, 14, 76, 28, stroke=0, fill=1)  # a leaf
        for i in range(5):
            a = math.radians(90 + i * 72)
            c.circle(50 + 19 * math.cos(a), 66 + 19 * math.sin(a), 14, stroke=0, fill=1)
    c.circle(50, 66, 6, stroke=0, fill=1)


def draw_soleil(c: Canvas) -> None:
    set_colour(c, INK)
    c.circle(50, 50, 24, stroke=0, fill=1)
    for i in range(12):
        a = math.radians(i * 30)
        side = math.radians(7)
        polygon(
            c,
            [
                (50 + 29 * math.cos(a - side), 50 + 29 * math.sin(a - side)),
                (50 + 48 * math.cos(a), 50 + 48 * math.sin(a)),
                (50 + 29 * math.cos(a + side), 50 + 29 * math.sin(a + side)),
            ],
        )


def draw_nuage(c: Canvas) -> None:
    set_colour(c, INK)
    c.roundRect(6, 24, 88, 24, 12, stroke=0, fill=1)
    for x, y, r in ((28, 46, 18), (52, 56, 24), (74, 46, 16)):
        c.circle(x, y, r, stroke=0, fill=1)


def draw_poisson(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _circle(20, 56, 5), _stroke([(34, 68), (42, 58), (42, 42), (34, 32)], 3)):
        c.ellipse(4, 24, 74, 76, stroke=0, fill=1)
    polygon(c, [(66, 50), (98, 76), (90, 50), (98, 24)])


def draw_oiseau(c: Canvas) -> None:
    set_colour(c, INK)
    polygon(c, [(62, 40), (98, 66), (92, 44)])  # tail
    with _clipped(c, _circle(26, 68, 3.5), _stroke([(36, 46), (50, 52), (64, 50), (70, 40)], 3)):
        c.ellipse(20, 22, 76, 60, stroke=0, fill=1)  # body
        c.circle(28, 64, 15, stroke=0, fill=1)  # head
    polygon(c, [(14, 70), (0, 62), (15, 58)])  # beak
    c.setLineWidth(4)
    c.line(44, 22, 40, 6)
    c.line(54, 22, 56, 6)


def draw_plume(c: Canvas) -> None:
    c.saveState()
    c.translate(50, 50)
    c.rotate(-40)
    set_colour(c, INK)
    veins = [_stroke([(0, 40), (0, -30)], 2.5)]
    for y in (20, 4, -12):
        veins += [_stroke([(0, y), (12, y + 10)], 2.5), _stroke([(0, y - 4), (-12, y + 6)], 2.5)]
    with _clipped(c, *veins):
        path = c.beginPath()
        path.moveTo(0, 48)
        path.curveTo(22, 30, 20, -10, 4, -30)
        path.lineTo(-4, -30)
        path.curveTo(-20, -10, -22, 30, 0, 48)
        c.drawPath(path, stroke=0, fill=1)
    c.setLineWidth(4)
    c.line(0, -30, 0, -50)
    c.restoreState()


def draw_lune(c: Canvas) -> None:
    """A crescent: the disc (46, 50) r 42 less the disc (66, 60) r 36, as one outline (the
    outer disc's arc away from the bite, then the bite's arc back inside it)."""
    set_colour(c, INK)
    (ax, ay, ar), (bx, by, br) = (46.0, 50.0, 42.0), (66.0, 60.0, 36.0)
    towards = math.degrees(math.atan2(by - ay, bx - ax))
    d = math.hypot(bx - ax, by - ay)
    half_a = math.degrees(math.acos((d * d + ar * ar - br * br) / (2 * d * ar)))
    half_b = math.degrees(math.acos((d * d + br * br - ar * ar) / (2 * d * br)))
    path = c.beginPath()
    # outer arc: from the bite's upper end all the way round to its lower end
    path.arc(ax - ar, ay - ar, ax + ar, ay + ar, towards + half_a, 360 - 2 * half_a)
    # the bite: the second disc's arc facing the first, from its lower end back to the upper
    path.arcTo(bx - br, by - br, bx + br, by + br, towards + 180 + half_b, -2 * half_b)
    path.close()
    c.drawPath(path, stroke=0, fill=1)


def draw_parapluie(c: Canvas) -> None:
    set_colour(c, INK)
    path = c.beginPath()  # canopy: a half disc with a scalloped rim
    path.moveTo(2, 52)
    path.curveTo(6, 100, 94, 100, 98, 52)
    for i in range(4):
        x = 98 - i * 24
        path.curveTo(x - 4, 60, x - 20, 60, x - 24, 52)
    path.close()
    c.drawPath(path, stroke=0, fill=1)
    c.setLineWidth(6)
    c.line(50, 56, 50, 16)
    path = c.beginPath()
    path.moveTo(50, 16)
    path.curveTo(50, 2, 30, 2, 30, 14)
    c.drawPath(path, stroke=1, fill=0)


def draw_cle(c: Canvas) -> None:
    set_colour(c, INK)
    with _clipped(c, _circle(20, 62, 9)):
        c.circle(24, 62, 22, stroke=0, fill=1)
    c.rect(40, 56, 56, 12, stroke=0, fill=1)
    c.rect(72, 40, 8, 18, stroke=0, fill=1)
    c.rect(86, 44, 8, 14, stroke=0, fill=1)


def draw_etoile(c: Canvas) -> None:
    set_colour(c, INK)
    points = []
    for i in range(10):
        a = math.radians(90 + i * 36)
        r = 48 if i % 2 == 0 else 19
        points.append((50 + r * math.cos(a), 46 + r * math.sin(a)))
    polygon(c, points)


def draw_coeur(c: Canvas) -> None:
    set_colour(c, INK)
    path = c.beginPath()
    path.moveTo(50, 6)
    path.curveTo(20, 30, 0, 50, 4, 70)
    path.curveTo(8, 92, 40, 96, 50, 72)
    path.curveTo(60, 96, 92, 92, 96, 70)
    path.curveTo(100, 50, 80, 30, 50, 6)
    c.drawPath(path, stroke=0, fill=1)


def draw_trefle(c: Canvas) -> None:
    """A four-leaf clover: four heart-shaped leaves around a centre, and a curved stem."""
    set_colour(c, INK)
    c.setLineWidth(6)
    path = c.beginPath()
    path.moveTo(50, 50)
    path.curveTo(52, 30, 62, 14, 76, 4)
    c.drawPath(path, stroke=1, fill=0)
    for angle in (45, 135, 225, 315):
        c.saveState()
        c.translate(50, 54)
        c.rotate(angle)
        path = c.beginPath()
        path.moveTo(0, 0)
        path.curveTo(-4, 10, -22, 18, -16, 30)
        path.curveTo(-12, 38, -2, 36, 0, 28)
        path.curveTo(2, 36, 12, 38, 16, 30)
        path.curveTo(22, 18, 4, 10, 0, 0)
        c.drawPath(path, stroke=0, fill=1)
        c.restoreState()


DRAWINGS: dict[str, Drawing] = {
    "OS": draw_os,
    "GAMELLE": draw_gamelle,
    "SOURIS": draw_souris,
    "PELOTE": draw_pelote,
    "COLLIER": draw_collier,
    "ARBRE": draw_arbre,
    "CHAPEAU": draw_chapeau,
    "FLEUR": draw_fleur,
    "SOLEIL": draw_soleil,
    "NUAGE": draw_nuage,
    "POISSON": draw_poisson,
    "OISEAU": draw_oiseau,
    "PLUME": draw_plume,
    "LUNE": draw_lune,
    "PARAPLUIE": draw_parapluie,
    "CLE": draw_cle,
    "ETOILE": draw_etoile,
    "COEUR": draw_coeur,
    "TREFLE": draw_trefle,
}
