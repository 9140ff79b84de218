"""Play symbols as Form XObjects: each game's vector drawing with its caption under it.

The drawings come from the game (:meth:`printpipe.games.base.PaperGame.symbol_drawings`), each
in a 100 x 100 unit box.  A form is drawn once per PDF and placed by reference, which is what
keeps a million tickets fast and small.  Symbols are variable imaging, printed in one ink: each
form paints in tints of the colour space its page selects (the ``Variable`` separation), as
reportlab writes no colour spaces into a form's resources.
"""

from __future__ import annotations

from collections.abc import Mapping

from printpipe.games.base import Drawing
from printpipe.render.canvas import PressCanvas
from printpipe.render.template import MM, Template

INK = (0, 0, 0, 1)


def symbol_block_height(template: Template) -> float:
    """Height in points of a symbol with its caption (what a grid cell must hold)."""
    s = template.symbols
    return (s["size"] + s["caption_gap"]) * MM + s["caption_pt"]


def define_symbol_forms(
    c: PressCanvas,
    template: Template,
    captions: Mapping[str, str],
    font: str,
    drawings: Mapping[str, Drawing],
) -> dict[str, str]:
    """Draw every symbol with its caption as a form; returns code -> form name.

    A form's origin is the bottom centre of the symbol-and-caption block, so placing one is a
    single translation to the middle of its zone.
    """
    size = template.symbols["size"] * MM
    caption_pt = template.symbols["caption_pt"]
    lift = caption_pt + template.symbols["caption_gap"] * MM
    names = {}
    for code, drawing in drawings.items():
        if code not in captions:
            continue
        name = f"sym-{code}"
        c.beginForm(name, -size * 0.75, 0, size * 0.75, lift + size)
        c.saveState()
        c.translate(-size / 2, lift)
        c.scale(size / 100, size / 100)
        drawing(c)
        c.restoreState()
        c.setFillColorCMYK(*INK)
        c.setFont(font, caption_pt)
        c.drawCentredString(0, caption_pt * 0.22, captions[code])
        c.tint_current_form(f"symbol {code}")
        c.endForm()
        names[code] = name
    missing = sorted(set(captions) - set(drawings))
    if missing:
        raise KeyError(f"no drawing for symbol(s) {', '.join(missing)}")
    return names
