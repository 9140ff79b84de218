"""One grid of an online unit as the player sees it: rows x columns of pictograms and captions.

Used by the proofs of a game whose output is a feed (an online game): there is no ticket to
print, so the unit is drawn as the game screen shows it, each cell the game's pictogram
(:meth:`~printpipe.games.base.OnlineGame.draw_pictogram`) over its caption, winning cells
(what the rules pay) framed in gold so a reviewer sees at once why a unit wins.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from reportlab.pdfgen.canvas import Canvas

from printpipe.games.base import OnlineGame

WIN_FRAME: tuple[float, float, float, float] = (0, 0.4, 1, 0.25)
FRAME: tuple[float, float, float, float] = (0.85, 0.55, 0, 0.35)
CELL_BG: tuple[float, float, float, float] = (0.03, 0.02, 0, 0.02)
WIN_BG: tuple[float, float, float, float] = (0, 0.12, 0.45, 0)
INK: tuple[float, float, float, float] = (0, 0, 0, 1)


def _lighten(colour: tuple[float, float, float, float], by: float) -> tuple[float, ...]:
    return tuple(v * by for v in colour)


def draw_grid(
    c: Canvas,
    game: OnlineGame,
    x: float,
    y: float,
    cell: float,
    columns: int,
    codes: Sequence[str],
    captions: dict[str, str],
    winning: Sequence[bool] | np.ndarray,
    fonts: dict[str, str],
) -> None:
    """A grid with its bottom-left corner at (x, y), ``cell`` points a side, row 0 on top."""
    rows = len(codes) // columns
    pad = cell * 0.06
    c.saveState()
    c.setFillColorCMYK(*FRAME)
    c.roundRect(x - pad, y - pad, columns * cell + 2 * pad, rows * cell + 2 * pad, pad * 2, 0, 1)
    for i, code in enumerate(codes):
        r, col = divmod(i, columns)
        cx, cy = x + col * cell, y + (rows - 1 - r) * cell
        win = bool(winning[i])
        background = WIN_BG if win else _lighten(game.pictogram_tint(code) or CELL_BG, 0.25)
        c.setFillColorCMYK(*background)
        c.setStrokeColorCMYK(*(WIN_FRAME if win else FRAME))
        c.setLineWidth(cell * (0.07 if win else 0.012))
        inset = cell * (0.07 if win else 0.03)
        c.roundRect(cx + inset, cy + inset, cell - 2 * inset, cell - 2 * inset, cell * 0.08, 1, 1)
        art = cell * 0.64
        game.draw_pictogram(c, code, cx + (cell - art) / 2, cy + cell * 0.27, art, fonts["bold"])
        c.setFillColorCMYK(*INK)
        caption = captions[code]
        size = cell * 0.13
        font = fonts["bold"] if win else fonts["regular"]
        while size > 3 and c.stringWidth(caption, font, size) > cell * 0.78:
            size -= 0.25
        c.setFont(font, size)
        c.drawCentredString(cx + cell / 2, cy + cell * 0.11, caption)
    c.restoreState()
