"""CachedText: literal text operators that stay real, extractable text, across font subsets."""

import pypdfium2 as pdfium

from printpipe.render.canvas import new_canvas
from printpipe.render.fonts import CachedText, register_fonts

FONTS = {"regular": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "digits": "DejaVuSans.ttf"}


def test_text_across_font_subsets_reads_back(tmp_path):
    # A TrueType subset holds 256 glyphs: 300 distinct characters need a font switch midway.
    text = "".join(chr(c) for c in (*range(0x21, 0x7F), *range(0xC0, 0x1B0)))[:300]
    assert len(set(text)) == 300
    path = tmp_path / "text.pdf"
    canvas = new_canvas(path, (2000, 200), FONTS)
    writer = CachedText(canvas, register_fonts(FONTS)["regular"], 5)
    canvas.addLiteral("q 0 0 0 1 k " + writer.literal(10, 100, text) + "Q")
    canvas.showPage()
    canvas.save()
    page = pdfium.PdfDocument(path)[0]
    assert page.get_textpage().get_text_range().strip() == text
