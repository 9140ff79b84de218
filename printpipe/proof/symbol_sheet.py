"""The symbol sheet: every play symbol, large, with its caption, code and role, for artwork
approval; each also at 100 % beside it, as it prints in a grid cell.

The symbols are the renderer's own forms (the ones every ticket places), only scaled.
"""

from __future__ import annotations

from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError
from printpipe.games.base import PaperGame
from printpipe.proof.page import GREY, INK, MARGIN, PAGE, fit_size, text
from printpipe.render.inks import VARIABLE
from printpipe.render.symbols import symbol_block_height
from printpipe.render.template import MM
from printpipe.render.ticket import TicketRenderer

COLS = 5
SCALE = 2.0


def draw_symbol_sheet(c: Canvas, renderer: TicketRenderer, game: PaperGame) -> list[str]:
    """Draw the symbol sheet (without showPage); returns the codes in the order shown."""
    d, fonts, t = game.definition, renderer.fonts, renderer.t
    w, h = PAGE
    text(c, MARGIN, h - 14 * MM, f"PLANCHE DES SYMBOLES - {d.title}", fonts["bold"], 17)
    text(
        c,
        MARGIN,
        h - 20.5 * MM,
        f"{len(d.symbol_codes)} symboles, agrandis x{SCALE:g} ; à droite de chacun, taille "
        f"réelle ({t.symbols['size']:g} mm). Légende et code tels qu'imprimés et enregistrés.",
        fonts["regular"],
        9.5,
    )
    roles = game.symbol_roles()
    rows = -(-len(d.symbol_codes) // COLS)
    cell_w = (w - 2 * MARGIN) / COLS
    grid_top, grid_bottom = h - 26 * MM, 14 * MM
    cell_h = (grid_top - grid_bottom) / rows
    block_h = symbol_block_height(t)
    for i, code in enumerate(d.symbol_codes):
        r, col = divmod(i, COLS)
        x = MARGIN + col * cell_w
        y = grid_top - (r + 1) * cell_h
        c.setStrokeColorCMYK(*GREY)
        c.setLineWidth(0.3)
        c.rect(x + 1 * MM, y + 1 * MM, cell_w - 2 * MM, cell_h - 2 * MM, stroke=1, fill=0)
        form = renderer.symbol_forms[i]
        c.setFillColor(VARIABLE)  # symbol forms paint in tints of the page's colour space
        c.setStrokeColor(VARIABLE)
        big_y = y + cell_h - 2.5 * MM - block_h * SCALE
        if big_y < y + 12 * MM:  # keep the caption clear of the code line
            raise PrintpipeError("symbol sheet: cells too small for the symbols and their codes")
        c.saveState()
        c.translate(x + cell_w * 0.42, big_y)
        c.scale(SCALE, SCALE)
        c.doForm(form)
        c.restoreState()
        c.saveState()
        c.translate(x + cell_w - 8 * MM, big_y)
        c.doForm(form)
        c.restoreState()
        text(c, x + 3 * MM, y + 8 * MM, f"code {code}", fonts["bold"], 8, INK)
        role = " ; ".join(roles[code]) or "non utilisé"
        size = fit_size(role, fonts["regular"], 7, cell_w - 6 * MM)
        text(c, x + 3 * MM, y + 4 * MM, role, fonts["regular"], size, GREY)
    return list(d.symbol_codes)
