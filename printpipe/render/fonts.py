"""The fonts of the press files: TrueType files shipped in ``fonts/``, embedded as subsets.

reportlab embeds a TrueType font it draws with, so nothing refers to an unembedded base-14
font as long as the canvas is created with ``initialFontName`` set to one of these.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFError, TTFont
from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError

FONTS_DIR = Path(__file__).resolve().parent.parent.parent / "fonts"


@cache
def register_font(file_name: str) -> str:
    """Register ``fonts/<file_name>`` once per process; returns the reportlab font name."""
    name = "PP-" + Path(file_name).stem
    try:
        pdfmetrics.registerFont(TTFont(name, str(FONTS_DIR / file_name)))
    except (OSError, TTFError) as exc:
        raise PrintpipeError(f"font {FONTS_DIR / file_name} is unusable: {exc}") from None
    return name


def register_fonts(fonts: dict[str, str]) -> dict[str, str]:
    """Role (``regular``, ``bold``, ``digits``) -> registered font name."""
    return {role: register_font(file_name) for role, file_name in fonts.items()}


class FixedAlphabetText:
    """Strings of a small alphabet (digits, separators) as literal PDF text operators.

    ``drawString`` splits every string into font subsets and escapes it again; a ticket prints
    two such strings, which at press speed was a quarter of the render time.  The glyph codes
    of the alphabet are asked of reportlab once per document (which also puts the glyphs in
    the embedded subset), so a string is a join of cached codes.  The text stays real text:
    extractable, and drawn with the embedded font.
    """

    def __init__(self, canvas: Canvas, font_name: str, size: float, alphabet: str) -> None:
        font = pdfmetrics.getFont(font_name)
        doc = canvas._doc  # reportlab's document: where the font subsets live
        subsets = set()
        self._codes: dict[str, str] = {}
        for char in alphabet:
            for subset, data in font.splitString(char, doc):
                subsets.add(subset)
                self._codes[char] = canvas._escape(data)
        if len(subsets) != 1:
            raise ValueError(f"{font_name}: the alphabet {alphabet!r} spans font subsets")
        self._prefix = f"BT {font.getSubsetInternalName(subsets.pop(), doc)} {size:.2f} Tf "

    def literal(self, x: float, y: float, text: str) -> str:
        """Operators drawing ``text`` with its baseline starting at (x, y), in the fill colour."""
        codes = self._codes
        return (
            f"{self._prefix}1 0 0 1 {x:.2f} {y:.2f} Tm ({''.join(codes[c] for c in text)}) Tj ET\n"
        )
