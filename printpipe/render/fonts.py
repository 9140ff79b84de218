"""The fonts of the press files: TrueType files shipped in the package, embedded as subsets.

reportlab embeds a TrueType font it draws with, so nothing refers to an unembedded base-14
font as long as the canvas is created with ``initialFontName`` set to one of these.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path

from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFError, TTFont
from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError

FONTS_DIR = Path(str(files("printpipe.fonts")))
"""The TrueType files and their licence (``fonts/`` of the checkout, installed as
``printpipe.fonts``)."""


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
    render time.  Each character's subset and code are asked of reportlab once per document
    (which also puts the glyph in the embedded subset), so a string is one ``str.translate``
    through the cached codes, with a font switch where it crosses subsets (a document's 257th
    glyph starts a new one).  The text stays real text: extractable, drawn with the embedded
    font.
    """

    def __init__(self, canvas: Canvas, font_name: str, size: float, alphabet: str = "") -> None:
        self._font = pdfmetrics.getFont(font_name)
        self._canvas = canvas
        self._doc = canvas._doc  # reportlab's document: where the font subsets live
        self._size = size
        self._glyphs: dict[str, tuple[int, str]] = {}
        self._fonts: dict[int, str] = {}
        self._first: dict[int, str] = {}  # codes of the glyphs in the first subset seen
        self._in_first: dict[int, None] = {}  # the same characters, to delete (a check)
        self._first_subset = -1  # none seen yet
        for char in alphabet:
            self._glyph(char)

    def _glyph(self, char: str) -> tuple[int, str]:
        ((subset, data),) = self._font.splitString(char, self._doc)
        if subset not in self._fonts:
            name = self._font.getSubsetInternalName(subset, self._doc)
            self._fonts[subset] = f"{name} {self._size:.2f} Tf "
        glyph = self._glyphs[char] = (subset, self._canvas._escape(data))
        if self._first_subset == -1:
            self._first_subset = subset
        if subset == self._first_subset:
            self._first[ord(char)] = glyph[1]
            self._in_first[ord(char)] = None
        return glyph

    def literal(self, x: float, y: float, text: str) -> str:
        """Operators drawing ``text`` with its baseline starting at (x, y), in the fill colour."""
        if not text:
            return ""
        if text.translate(self._in_first):  # a character not yet known, or in another subset
            return self._literal_runs(x, y, text)
        encoded = text.translate(self._first)
        font = self._fonts[self._first_subset]
        return f"BT {font}1 0 0 1 {x:.2f} {y:.2f} Tm ({encoded}) Tj ET\n"

    def _literal_runs(self, x: float, y: float, text: str) -> str:
        """The general case: new characters, or a string crossing font subsets."""
        glyphs = self._glyphs
        runs: list[tuple[int, list[str]]] = []
        for char in text:
            subset, code = glyphs[char] if char in glyphs else self._glyph(char)
            if not runs or runs[-1][0] != subset:
                runs.append((subset, []))
            runs[-1][1].append(code)
        (first, codes), *others = runs
        ops = [f"BT {self._fonts[first]}1 0 0 1 {x:.2f} {y:.2f} Tm ({''.join(codes)}) Tj "]
        ops += [f"{self._fonts[subset]}({''.join(codes)}) Tj " for subset, codes in others]
        ops.append("ET\n")
        return "".join(ops)
