"""The fonts of the press files: TrueType files shipped in ``fonts/``, embedded as subsets.

reportlab embeds a TrueType font it draws with, so nothing refers to an unembedded base-14
font as long as the canvas is created with ``initialFontName`` set to one of these.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFError, TTFont

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
