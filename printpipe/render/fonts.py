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


class CachedText:
    """Strings as literal PDF text operators, each glyph's code cached.

    ``drawString`` splits every string into font subsets and escapes it again; a press sheet
    prints 19 strings (two per ticket and its slug), which at press speed was a quarter of the
    render time.  Each character's code is asked of reportlab once per document (which also
    puts the glyph in the embedded subset), so a string is a join of cached codes.  The text
    stays real text: extractable, drawn with the embedded font.  All of a writer's characters
    must fall in one font subset (the first 256 glyphs a document uses), or it refuses them.
    """

    def __init__(self, canvas: Canvas, font_name: str, size: float, alphabet: str = "") -> None:
        self._font = pdfmetrics.getFont(font_name)
        self._canvas = canvas
        self._doc = canvas._doc  # reportlab's document: where the font subsets live
        self._codes: dict[str, str] = {}
        self._subset: int | None = None
        self._size = size
        for char in alphabet:
            self._encode(char)

    def _encode(self, char: str) -> str:
        parts = self._font.splitString(char, self._doc)
        subset = parts[0][0]
        if len(parts) != 1 or self._subset not in (None, subset):
            raise ValueError(f"{self._font.fontName}: {char!r} is not in the writer's subset")
        if self._subset is None:
            self._subset = subset
            name = self._font.getSubsetInternalName(subset, self._doc)
            self._prefix = f"BT {name} {self._size:.2f} Tf "
        code = self._codes[char] = self._canvas._escape(parts[0][1])
        return code

    def literal(self, x: float, y: float, text: str) -> str:
        """Operators drawing ``text`` with its baseline starting at (x, y), in the fill colour."""
        codes = self._codes
        encoded = "".join([codes[c] if c in codes else self._encode(c) for c in text])
        return f"{self._prefix}1 0 0 1 {x:.2f} {y:.2f} Tm ({encoded}) Tj ET\n"
