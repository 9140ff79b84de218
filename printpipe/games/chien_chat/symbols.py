"""The play symbols of the dog/cat ticket as vector drawings, one function per symbol code.

Each drawing is made for this game (not a font glyph, not a raster) in a 100 x 100 unit box,
as a black (K) silhouette with white details: silhouettes stay recognisable at 10-12 mm, and
symbols are variable data, which prints in black only.  The renderer
(:func:`printpipe.render.symbols.define_symbol_forms`) makes each one Form XObject with its
caption, drawn once per PDF and placed by reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from reportlab.pdfgen.canvas import Canvas

from printpipe.games.chien_chat.artwork import polygon, set_colour

Drawing = Callable[[Canvas], None]
INK = (0, 0, 0, 1)
GREY = (0, 0, 0, 0.45)
PAPER = (0, 0, 0, 0)


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
    _bone(c, 33, 64, 40, 115, 12)
    _bone(c, 67, 64, 40, 65, 12)
    set_colour(c, PAPER)
    polygon(c, [(6, 52), (94, 52), (84, 14), (16, 14)])
    set_colour(c, INK)
    polygon(c, [(10, 50), (90, 50), (81, 16), (19, 16)])
    c.roundRect(4, 46, 92, 9, 4, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.setLineWidth(3)
    c.line(30, 32, 70, 32)


def draw_souris(c: Canvas) -> None:
    set_colour(c, INK)
    c.setLineWidth(5)
    path = c.beginPath()
    path.moveTo(78, 30)
    path.curveTo(96, 30, 98, 10, 80, 8)
    c.drawPath(path, stroke=1, fill=0)
    path = c.beginPath()  # body: a teardrop pointing left (the nose)
    path.moveTo(4, 34)
    path.curveTo(20, 70, 70, 72, 84, 36)
    path.curveTo(88, 24, 78, 16, 60, 16)
    path.lineTo(30, 16)
    path.curveTo(18, 18, 8, 26, 4, 34)
    c.drawPath(path, stroke=0, fill=1)
    c.circle(38, 64, 15, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.circle(38, 64, 8, stroke=0, fill=1)
    c.circle(20, 42, 3.5, stroke=0, fill=1)
    set_colour(c, INK)
    c.circle(5, 34, 3.5, stroke=0, fill=1)
    c.rect(38, 12, 6, 8, stroke=0, fill=1)
    c.rect(62, 12, 6, 8, stroke=0, fill=1)


def draw_pelote(c: Canvas) -> None:
    set_colour(c, INK)
    c.circle(46, 54, 36, stroke=0, fill=1)
    c.setLineWidth(4.5)
    path = c.beginPath()  # the loose thread
    path.moveTo(70, 26)
    path.curveTo(84, 10, 92, 22, 96, 6)
    c.drawPath(path, stroke=1, fill=0)
    set_colour(c, PAPER)
    c.setLineWidth(3.5)
    for offset in (-18, -6, 6, 18):
        path = c.beginPath()
        path.moveTo(20, 54 + offset * 1.2 + 10)
        path.curveTo(36, 70 + offset, 56, 40 + offset, 74, 54 + offset * 0.8 - 8)
        c.drawPath(path, stroke=1, fill=0)
    path = c.beginPath()
    path.moveTo(40, 22)
    path.curveTo(30, 44, 40, 72, 58, 86)
    c.drawPath(path, stroke=1, fill=0)


def draw_collier(c: Canvas) -> None:
    set_colour(c, INK)
    c.ellipse(4, 29, 96, 97, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.ellipse(15, 40, 85, 86, stroke=0, fill=1)
    set_colour(c, INK)
    c.rect(40, 76, 20, 20, stroke=0, fill=1)  # buckle
    set_colour(c, PAPER)
    c.rect(45, 81, 10, 10, stroke=0, fill=1)
    set_colour(c, INK)
    c.setLineWidth(4)
    c.line(50, 34, 50, 22)
    c.circle(50, 14, 12, stroke=0, fill=1)  # the medal
    set_colour(c, PAPER)
    c.circle(50, 14, 4, stroke=0, fill=1)


def draw_arbre(c: Canvas) -> None:
    """A fir tree: three stacked tiers and a trunk.  Not a round canopy: at 10 mm a round
    one read as the cloud (NUAGE), a decoy of the same ticket."""
    set_colour(c, INK)
    c.rect(43, 2, 14, 18, stroke=0, fill=1)
    for base, top, half in ((16, 52, 42), (40, 74, 33), (62, 98, 24)):
        polygon(c, [(50 - half, base), (50 + half, base), (50, top)])


def draw_chapeau(c: Canvas) -> None:
    set_colour(c, INK)
    c.ellipse(2, 14, 98, 32, stroke=0, fill=1)
    c.roundRect(24, 22, 52, 66, 5, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.rect(24, 30, 52, 9, stroke=0, fill=1)


def draw_fleur(c: Canvas) -> None:
    set_colour(c, INK)
    c.setLineWidth(6)
    c.line(50, 4, 50, 50)
    c.ellipse(50, 14, 76, 28, stroke=0, fill=1)  # a leaf
    for i in range(5):
        a = math.radians(90 + i * 72)
        c.circle(50 + 19 * math.cos(a), 66 + 19 * math.sin(a), 14, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.circle(50, 66, 10, stroke=0, fill=1)
    set_colour(c, INK)
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
    c.ellipse(4, 24, 74, 76, stroke=0, fill=1)
    polygon(c, [(66, 50), (98, 76), (90, 50), (98, 24)])
    set_colour(c, PAPER)
    c.circle(20, 56, 5, stroke=0, fill=1)
    c.setLineWidth(3)
    path = c.beginPath()
    path.moveTo(34, 68)
    path.curveTo(42, 58, 42, 42, 34, 32)
    c.drawPath(path, stroke=1, fill=0)


def draw_oiseau(c: Canvas) -> None:
    set_colour(c, INK)
    polygon(c, [(62, 40), (98, 66), (92, 44)])  # tail
    c.ellipse(20, 22, 76, 60, stroke=0, fill=1)  # body
    c.circle(28, 64, 15, stroke=0, fill=1)  # head
    polygon(c, [(14, 70), (0, 62), (15, 58)])  # beak
    c.setLineWidth(4)
    c.line(44, 22, 40, 6)
    c.line(54, 22, 56, 6)
    set_colour(c, PAPER)
    c.circle(26, 68, 3.5, stroke=0, fill=1)
    c.setLineWidth(3)
    path = c.beginPath()  # the wing
    path.moveTo(36, 46)
    path.curveTo(50, 52, 64, 50, 70, 40)
    c.drawPath(path, stroke=1, fill=0)


def draw_plume(c: Canvas) -> None:
    c.saveState()
    c.translate(50, 50)
    c.rotate(-40)
    set_colour(c, INK)
    path = c.beginPath()
    path.moveTo(0, 48)
    path.curveTo(22, 30, 20, -10, 4, -30)
    path.lineTo(-4, -30)
    path.curveTo(-20, -10, -22, 30, 0, 48)
    c.drawPath(path, stroke=0, fill=1)
    c.setLineWidth(4)
    c.line(0, -30, 0, -50)
    set_colour(c, PAPER)
    c.setLineWidth(2.5)
    c.line(0, 40, 0, -30)
    for y in (20, 4, -12):
        c.line(0, y, 12, y + 10)
        c.line(0, y - 4, -12, y + 6)
    c.restoreState()


def draw_lune(c: Canvas) -> None:
    set_colour(c, INK)
    c.circle(46, 50, 42, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.circle(66, 60, 36, stroke=0, fill=1)


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
    c.circle(24, 62, 22, stroke=0, fill=1)
    c.rect(40, 56, 56, 12, stroke=0, fill=1)
    c.rect(72, 40, 8, 18, stroke=0, fill=1)
    c.rect(86, 44, 8, 14, stroke=0, fill=1)
    set_colour(c, PAPER)
    c.circle(20, 62, 9, stroke=0, fill=1)


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
