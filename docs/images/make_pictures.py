"""The README's pictures, cut from a real proof pack: a covered and a scratched Chien Chat ticket.

``printpipe proof`` draws each specimen with the press renderer (the covered front with the
press file's coating, the scratched one without); this script renders one specimen page of
that PDF with pypdfium2 and cuts both fronts out at their trim, using the trim boxes the pack
records in ``proof.json``. Run from the checkout, with the virtual environment's Python::

    .venv/bin/python docs/images/make_pictures.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pypdfium2 as pdfium

HERE = Path(__file__).resolve().parent
DPI = 150
SPECIMEN_LABEL = "CHIEN - Rang 7 / 10 : 10 €"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proof = Path(tmp) / "proof"
        printpipe = [sys.executable, "-m", "printpipe"]
        subprocess.run([*printpipe, "proof", "--out", str(proof)], check=True)
        record = json.loads((proof / "proof.json").read_text(encoding="utf-8"))
        specimen = next(s for s in record["specimens"] if s["label"] == SPECIMEN_LABEL)
        pdf = pdfium.PdfDocument(proof / record["pdf"])
        page = pdf[specimen["page"] - 1]
        height_pt = page.get_height()
        image = page.render(scale=DPI / 72).to_pil().convert("RGB")
        for name, key in (
            ("ticket-covered.png", "covered_front"),
            ("ticket-scratched.png", "revealed_front"),
        ):
            x, y, w, h = specimen["trim_pt"][key]
            box = (x, height_pt - y - h, x + w, height_pt - y)
            image.crop(tuple(round(v * DPI / 72) for v in box)).save(HERE / name, optimize=True)
            print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
