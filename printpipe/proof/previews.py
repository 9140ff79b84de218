"""PNG previews of every page of a PDF, so a proof can be reviewed without a PDF viewer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from printpipe.errors import PrintpipeError

PREVIEW_DPI = 150


def write_previews(
    pdf: Path,
    out_dir: Path,
    stem: str,
    dpi: int = PREVIEW_DPI,
    *,
    on_page: Callable[[], object] | None = None,
) -> list[str]:
    """Render each page of ``pdf`` to ``out_dir/stem-pNN.png``; returns the file names.
    ``on_page`` is called after each page (a progress bar's step)."""
    try:
        import pypdfium2 as pdfium
    except ImportError:  # a dependency: only a broken install lacks it
        raise PrintpipeError(
            "pypdfium2 is missing: reinstall printpipe (pip install -e .)"
        ) from None
    names = []
    document = pdfium.PdfDocument(str(pdf))
    try:
        for i in range(len(document)):
            image = document[i].render(scale=dpi / 72).to_pil()
            name = f"{stem}-p{i + 1:02d}.png"
            image.save(out_dir / name, dpi=(dpi, dpi), compress_level=3)
            names.append(name)
            if on_page is not None:
                on_page()
    finally:
        document.close()
    return names
