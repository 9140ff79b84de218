"""Where tickets go on a press sheet: the sheet's size, the N-up grid, duplex, cut and stack.

Pure geometry, from the ticket template (mm) and the sheet: no drawing and no PDF library, so
the export's coordinator and the command line's sheet type use it without reportlab; the
drawing of the sheets is :mod:`printpipe.render.sheet`.

Grid: each ticket occupies a cell of its trim plus, on every side, its bleed, a small gap and
its crop marks, so no ticket's marks fall on another's bleed.  The grid is the largest that
fits the sheet's margins above the slug band, centred.

Duplex: every front sheet is followed by its back sheet, mirrored left-right about the sheet's
centre, so the back of the ticket at front slot (row r, col c) is at (row r, col ncols-1-c).

Cut and stack: a chunk of T tickets on a sheet of N slots takes S = ceil(T / N) sheets; slot k
(reading order on the front: row by row, top-left first) of sheet s holds chunk ticket
k * S + s.  Stack the S sheets in order, cut, and stack k holds tickets k*S .. k*S+S-1 in
order: putting stack 0 on top of stack 1 and so on gives the chunk in order.  When N does not
divide T, the last slots of the last sheets stay blank (only their crop marks are printed).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from printpipe.errors import PrintpipeError
from printpipe.render.template import MM, Template

SHEETS = {"A3": (297.0, 420.0), "SRA3": (320.0, 450.0)}
"""The named press sheets, in mm."""

DEFAULT_CHUNK_PACKS = 40
"""Packs a press file holds (the export's chunk, and what a press proof shows by default):
5,000 tickets, 556 SRA3 sheets, about 60 MB of reportlab memory until save()."""


def parse_sheet(text: str) -> tuple[float, float]:
    """``A3``, ``SRA3`` or ``WxH`` in mm -> (width, height) in mm."""
    if text.upper() in SHEETS:
        return SHEETS[text.upper()]
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[xX]\s*(\d+(?:\.\d+)?)\s*", text)
    if not match:
        raise PrintpipeError(
            f"unknown sheet size {text!r}: use A3, SRA3 or WIDTHxHEIGHT in mm (e.g. 330x480)"
        )
    width, height = float(match.group(1)), float(match.group(2))
    if not (50 <= width <= 2000 and 50 <= height <= 2000):
        raise PrintpipeError(f"sheet size {text!r} is out of range (50 to 2000 mm a side)")
    return width, height


class PressSheet(NamedTuple):
    """A press sheet as asked (``A3``, ``SRA3`` or ``WxH``) and its size in mm."""

    name: str
    width_mm: float
    height_mm: float

    @staticmethod
    def parse(text: str) -> PressSheet:
        return PressSheet(text, *parse_sheet(text))

    @property
    def size_mm(self) -> tuple[float, float]:
        return (self.width_mm, self.height_mm)


@dataclass(frozen=True)
class Imposition:
    """Where each slot's ticket sits on the front and back sheet (trim bottom-left, points)."""

    sheet_w: float  # mm
    sheet_h: float
    cols: int
    rows: int
    front: tuple[tuple[float, float], ...]
    back: tuple[tuple[float, float], ...]
    trim_box: tuple[float, float, float, float]
    bleed_box: tuple[float, float, float, float]

    @property
    def slots(self) -> int:
        return self.cols * self.rows

    def back_slot(self, slot: int) -> int:
        """Where the back of front slot ``slot`` is on the back sheet, in the back's own
        reading order (row by row, top-left first): the same row, the mirrored column."""
        row, col = divmod(slot, self.cols)
        return row * self.cols + self.cols - 1 - col


def impose(template: Template, sheet_w: float, sheet_h: float) -> Imposition:
    """The largest grid of tickets that fits the sheet; refuses a sheet that holds none."""
    s = template.sheet
    outer = template.bleed + s["mark_gap"] + s["mark_length"]
    cell_w, cell_h = template.width + 2 * outer, template.height + 2 * outer
    usable_w = sheet_w - 2 * s["margin"]
    usable_h = sheet_h - 2 * s["margin"] - s["slug_height"]
    cols, rows = int(usable_w // cell_w), int(usable_h // cell_h)
    if cols < 1 or rows < 1:
        raise PrintpipeError(
            f"sheet {sheet_w:g}x{sheet_h:g} mm is too small for one {template.width:g}x"
            f"{template.height:g} mm ticket with bleed and crop marks"
        )
    x0 = (sheet_w - cols * cell_w) / 2 + outer
    y_top = s["margin"] + s["slug_height"] + (usable_h + cols * 0 - rows * cell_h) / 2
    front, back = [], []
    for r in range(rows):
        for col in range(cols):
            x = x0 + col * cell_w
            y = y_top + (rows - 1 - r) * cell_h + outer
            front.append((x * MM, y * MM))
            back.append(((sheet_w - x - template.width) * MM, y * MM))
    left, bottom = x0 * MM, (y_top + outer) * MM
    right = (x0 + (cols - 1) * cell_w + template.width) * MM
    top = (y_top + outer + (rows - 1) * cell_h + template.height) * MM
    b = template.bleed * MM
    return Imposition(
        sheet_w,
        sheet_h,
        cols,
        rows,
        tuple(front),
        tuple(back),
        (left, bottom, right, top),
        (left - b, bottom - b, right + b, top + b),
    )


def cut_and_stack(tickets: int, slots: int) -> tuple[int, list[list[int]]]:
    """Sheets needed, and for each sheet the chunk ticket of each slot (-1: blank)."""
    sheets = max(1, math.ceil(tickets / slots))
    order = [
        [k * sheets + s if k * sheets + s < tickets else -1 for k in range(slots)]
        for s in range(sheets)
    ]
    return sheets, order


SRA3 = PressSheet.parse("SRA3")
"""The default press sheet (320 x 450 mm)."""


class Press(StrEnum):
    """The press line a run's files are made for (``docs/print-files.md``, "The press line")."""

    DIGITAL = "digital"
    """One composite file per chunk: plates and imaging on every page (a digital line)."""
    CONVENTIONAL = "conventional"
    """Static files from which the plates are made once, and the imaging as PDF/VT-1."""
