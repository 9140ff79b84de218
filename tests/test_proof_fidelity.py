"""Proof = press in every viewer: the proof pack's own PNG previews (pdfium, which does not
simulate overprint) against Ghostscript's overprint simulation of the same page, cell by cell.

A shape that relies on overprint to look right (a 0-tint fill on a spot plate, such as the
LUNE symbol's bite painted in "white" ``Variable`` ink over its disc) shows one way in pdfium,
browsers and the lottery's PNGs, and another on press.  Two comparisons, on a grid of 20-pixel
cells (3.4 mm) at the previews' 150 dpi, each cell's mean colour:

- the PNG against Ghostscript's ``-dOverprint=/simulate`` render: within what two colour
  conversions of the same CMYK differ by (pdfium's and Ghostscript's ICC default);
- Ghostscript simulating overprint against Ghostscript not simulating it (the same colour
  conversion, so a few levels apart at most): a cell that differs more needs overprint
  simulation to look right.  The LUNE of the old symbol set differed by 11 levels (its bite
  white in one, the play area's pale base in the other); every cell now stays within 8.

Ghostscript simulates every spot ink as a transparent ink, the latex too (its symbols show
through the coating, which on press is opaque): the covered front is left out, and the
revealed front beside it shows the same artwork without the coating.  Ghostscript renders at
450 dpi scaled down 3 times (its anti-aliasing of graphics breaks overprint simulation in
Ghostscript 10.0, ``-dGraphicsAlphaBits``: a blank page), so edges compare as averages.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

CELL = 20
"""Pixels of a cell at the previews' resolution."""
COLOUR_CONVERSION = 32
"""Two colour conversions of the same page: the most a cell's channel may differ by (pdfium and
Ghostscript part by up to 23 on the proof's saturated red marks)."""
OVERPRINT = 8
"""The most a cell may change when Ghostscript simulates overprint (the old LUNE: 11)."""


@pytest.fixture(scope="module")
def proof(default_proof) -> tuple[Path, dict]:
    out = default_proof
    return out, json.loads((out / "proof.json").read_text(encoding="utf-8"))


def _ghostscript(pdf: Path, page: int, dpi: int, out: Path, *, simulate: bool) -> np.ndarray:
    subprocess.run(
        ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=png16m", f"-r{dpi * 3}",
         "-dDownScaleFactor=3", f"-dOverprint={'/simulate' if simulate else '/disable'}",
         f"-dFirstPage={page}", f"-dLastPage={page}", f"-sOutputFile={out}", str(pdf)],
        check=True, timeout=120,
    )  # fmt: skip
    return np.asarray(Image.open(out).convert("RGB"), dtype=np.float64)


def _cells(image: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Each cell's mean colour, (rows, cols, 3)."""
    cut = image[: rows * CELL, : cols * CELL]
    return cut.reshape(rows, CELL, cols, CELL, 3).mean(axis=(1, 3))


def _pages(record: dict) -> list[tuple[int, list[float] | None]]:
    """The first specimen page showing LUNE (the symbol of the old 0-tint bite) with its
    covered front's trim box, and the symbol sheet (no coating on it)."""
    lune = next(s for s in record["specimens"] if "LUNE" in s["paws"] + s["bonus"])
    return [
        (lune["page"], lune["trim_pt"]["covered_front"]),
        (record["symbol_sheet"]["page"], None),
    ]


def test_the_proof_pngs_look_as_overprint_simulated_by_ghostscript(proof, tmp_path):
    folder, record = proof
    dpi = record["preview_dpi"]
    pdf = folder / record["pdf"]
    pages = _pages(record)
    assert len(pages) == 2
    for page, covered in pages:
        png = np.asarray(Image.open(folder / record["previews"][page - 1]).convert("RGB"), float)
        simulated = _ghostscript(pdf, page, dpi, tmp_path / f"sim{page}.png", simulate=True)
        plain = _ghostscript(pdf, page, dpi, tmp_path / f"plain{page}.png", simulate=False)
        height = min(png.shape[0], simulated.shape[0])
        rows, cols = height // CELL, min(png.shape[1], simulated.shape[1]) // CELL
        assert rows > 40 and cols > 60
        seen = np.ones((rows, cols), dtype=bool)
        if covered is not None:  # the covered front: Ghostscript shows its latex as clear ink
            x, y, w, h = covered
            scale = dpi / 72
            margin = 10  # points: the crop marks around the trim
            top = int((png.shape[0] - (y + h + margin) * scale) // CELL)
            bottom = int((png.shape[0] - (y - margin) * scale) // CELL) + 1
            left, right = (
                int((x - margin) * scale // CELL),
                int((x + w + margin) * scale // CELL) + 1,
            )
            seen[max(top, 0) : bottom, max(left, 0) : right] = False
            assert seen.sum() > 0.6 * seen.size
        png_cells = _cells(png, rows, cols)
        sim_cells = _cells(simulated, rows, cols)
        plain_cells = _cells(plain, rows, cols)
        apart = np.abs(png_cells - sim_cells).max(axis=2) * seen
        assert apart.max() <= COLOUR_CONVERSION, (
            f"page {page}: the PNG differs from the overprint-simulated render by "
            f"{apart.max():.1f} in cell {np.unravel_index(apart.argmax(), apart.shape)}"
        )
        needs = np.abs(sim_cells - plain_cells).max(axis=2) * seen
        assert needs.max() <= OVERPRINT, (
            f"page {page}: cell {np.unravel_index(needs.argmax(), needs.shape)} changes by "
            f"{needs.max():.1f} when overprint is simulated: it needs overprint to look right"
        )
