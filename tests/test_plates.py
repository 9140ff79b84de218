"""The plates, as a press's separations: each press page rendered by Ghostscript's ``tiffsep``
into one image per ink, and checked the way a prepress operator looks at them.

- ``ScratchOff`` covers everything the ``Variable`` plate images on a front with at least the
  template's spread on every side, and inks nothing else inside the tickets;
- ``Blocking`` lies under every play area (all the coating hides), and the light base of the
  play areas (their blocking, and the process plates' white knock-out) stays inside the
  coating on every side, corners included: no white rim nor white corner frames a coating;
- ``ScratchOff`` is solid under the decoration (``ScratchDecor`` does not knock it out);
- the register targets are on every plate, spots included;
- pick-out: outside the coating, two tickets of the same variant differ on no plate, and
  their backs only in the serial and the inventory barcode.

Rendered at 127 dpi (5 pixels a millimetre: every ticket sits on whole pixels, so two
tickets' pixels compare one for one); an edge may still land a pixel apart, so a difference is
ink in one ticket with no ink within a pixel of it in the other.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pikepdf
import pytest
from PIL import Image
from scipy import ndimage

from printpipe.block import BlockStore
from printpipe.games import game_template_dir
from printpipe.render.canvas import new_canvas
from printpipe.render.imposition import Imposition, cut_and_stack, impose, parse_sheet
from printpipe.render.sheet import _targets
from printpipe.render.template import MM, Template, load_template
from printpipe.render.ticket import Coating, TicketRenderer, load_texts
from tests.conftest import run_cli

DPI = 127
PX = DPI / 72  # pixels per point
PROCESS = ("Cyan", "Magenta", "Yellow", "Black")
INKS = (*PROCESS, "Blocking", "Variable", "ScratchOff", "ScratchDecor")


@pytest.fixture(scope="module")
def sheet(tmp_path_factory, game, keys_dir, approvals_dir):
    """Sheet 1 (front and back) of a press file, one image per plate, and its geometry."""
    from printpipe.block import PackRange
    from tests.conftest import generate_store

    work = tmp_path_factory.mktemp("plates")
    store = generate_store(game, keys_dir, work / "block", PackRange(1, 1))
    out = work / "print"
    run_cli("export", str(store), "--out", str(out), "--keys", str(keys_dir), "--approvals",
            str(approvals_dir), "-q", check=True)  # fmt: skip
    job = json.loads((out / "job.json").read_text())
    pdf = out / job["files"][0]["path"]
    subprocess.run(
        ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=tiffsep", f"-r{DPI}", "-dFirstPage=1",
         "-dLastPage=2", f"-sOutputFile={work}/p%d.tif", str(pdf)],
        check=True, timeout=300,
    )  # fmt: skip
    # ink coverage 0 (paper) to 255 (solid): tiffsep writes each plate as a negative
    coverage = {
        (page, ink): 255 - np.asarray(Image.open(work / f"p{page}({ink}).tif").convert("L"))
        for page in (1, 2)
        for ink in INKS
    }
    plates = {key: level > 127 for key, level in coverage.items()}
    process = coverage[1, "Cyan"].copy()
    for ink in PROCESS[1:]:
        np.maximum(process, coverage[1, ink], out=process)
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    canvas = new_canvas(work / "unused.pdf", (100, 100), template.fonts)
    texts = load_texts(game_template_dir("chien-chat") / "texts.toml")
    renderer = TicketRenderer(canvas, template, game, texts, Coating.PLATE)
    imposition = impose(template, *parse_sheet("SRA3"))
    tickets = BlockStore.open(store).read()
    _, order = cut_and_stack(len(tickets), imposition.slots)
    variants = [int(tickets.variant[i]) for i in order[0]]
    return Sheet(plates, process, template, renderer, imposition, variants, pdf)


@dataclass(frozen=True)
class Sheet:
    plates: dict[tuple[int, str], np.ndarray]
    """(page, ink) -> inked pixels; page 1 the front, 2 the back."""
    process: np.ndarray
    """The front's process inks: each pixel's highest coverage of C, M, Y or K (0 to 255)."""
    template: Template
    renderer: TicketRenderer
    imposition: Imposition
    variants: list[int]
    """The variant of each slot of sheet 1."""
    pdf: Path
    """The press file."""


def _box_px(box, origin, height_px):
    """A box in points relative to a ticket's trim origin -> (row0, row1, col0, col1)."""
    x, y, w, h = box
    ox, oy = origin
    left, right = (ox + x) * PX, (ox + x + w) * PX
    top, bottom = height_px - (oy + y + h) * PX, height_px - (oy + y) * PX
    return round(top), round(bottom), round(left), round(right)


def _mask(shape, boxes) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    for r0, r1, c0, c1 in boxes:
        mask[max(r0, 0) : r1, max(c0, 0) : c1] = True
    return mask


def _dilate(mask: np.ndarray, r: int) -> np.ndarray:
    out = mask.copy()
    for axis in (0, 1):
        grown = out.copy()
        for shift in range(1, r + 1):
            grown[tuple(slice(shift, None) if a == axis else slice(None) for a in (0, 1))] |= out[
                tuple(slice(None, -shift) if a == axis else slice(None) for a in (0, 1))
            ]
            grown[tuple(slice(None, -shift) if a == axis else slice(None) for a in (0, 1))] |= out[
                tuple(slice(shift, None) if a == axis else slice(None) for a in (0, 1))
            ]
        out = grown
    return out


def _tickets(imposition, template, side, shape):
    """Each slot's trim box in pixels on a side, all of the same size in pixels."""
    places = imposition.front if side == "front" else imposition.back
    rows, cols = round(template.height * MM * PX), round(template.width * MM * PX)
    trim = (0, 0, template.width * MM, template.height * MM)
    boxes = [_box_px(trim, place, shape[0]) for place in places]
    return [(top, top + rows, left, left + cols) for top, _, left, _ in boxes]


def test_the_coating_covers_all_the_variable_imaging_with_its_spread(sheet):
    plates = sheet.plates
    template = sheet.template
    imposition = sheet.imposition
    variable, coating = plates[1, "Variable"], plates[1, "ScratchOff"]
    inside = _mask(variable.shape, _tickets(imposition, template, "front", variable.shape))
    imaged = variable & inside
    assert imaged.sum() > 1000, "the front images its symbols and codes"
    spread = int(template.coating["spread"] * DPI / 25.4)  # whole pixels, rounded down
    assert spread >= 5
    uncovered = _dilate(imaged, spread - 1) & ~coating
    assert not uncovered.any(), f"{uncovered.sum()} px within the spread are not coated"


def test_the_coating_inks_nothing_else_inside_the_tickets(sheet):
    plates = sheet.plates
    template = sheet.template
    renderer = sheet.renderer
    imposition = sheet.imposition
    coating = plates[1, "ScratchOff"]
    coats = [
        _box_px(zone.coating, place, coating.shape[0])
        for place in imposition.front
        for zone in renderer.zones
    ]
    inside = _mask(coating.shape, _tickets(imposition, template, "front", coating.shape))
    stray = coating & inside & ~_dilate(_mask(coating.shape, coats), 1)
    assert not stray.any(), f"{stray.sum()} px of coating outside the scratch zones"
    assert not (plates[2, "ScratchOff"] & _mask(coating.shape, _tickets(
        imposition, template, "back", coating.shape))).any(), "no coating on the backs"  # fmt: skip


def test_the_blocking_layer_lies_under_every_play_area(sheet):
    plates = sheet.plates
    renderer = sheet.renderer
    imposition = sheet.imposition
    blocking = plates[1, "Blocking"]
    for place in imposition.front:
        for zone in renderer.zones:
            r0, r1, c0, c1 = _box_px(zone.hidden, place, blocking.shape[0])
            assert blocking[r0 + 1 : r1 - 1, c0 + 1 : c1 - 1].all(), zone.name


def _erode(mask: np.ndarray, r: int) -> np.ndarray:
    return ~_dilate(~mask, r)


def test_the_play_areas_light_base_stays_inside_the_coating_on_every_side(sheet):
    """Misregistered by up to half its spread, the coating still covers the whole base: the
    blocking plate lies that far inside the ScratchOff plate, corners included, and right
    around every coating the process plates ink the artwork, never the paper's white of a
    base that reaches past the coating (a white rim or white corners)."""
    plates, template, imposition = sheet.plates, sheet.template, sheet.imposition
    blocking, coating = plates[1, "Blocking"], plates[1, "ScratchOff"]
    inside = _mask(coating.shape, _tickets(imposition, template, "front", coating.shape))
    assert (blocking & inside).sum() > 10_000, "the front prints its blocking layer"
    half_spread = round(template.coating["spread"] * DPI / 25.4 / 2)
    assert half_spread >= 2
    exposed = blocking & inside & ~_erode(coating, half_spread)
    assert not exposed.any(), f"{exposed.sum()} px of blocking within half the spread of the edge"
    # a ring of 0.8 mm around the coatings (the artwork nearest to them is farther: the
    # artwork's white circle 1 mm above the grid, the label band's words 2 mm above the
    # retailer's zone)
    ring = _dilate(coating, 4) & ~coating & inside
    assert ring.sum() > 10_000
    paper = ring & (sheet.process < 13)  # under 5 % of any process ink: the paper shows
    assert not paper.any(), f"{paper.sum()} px of paper white around the coatings"


def test_the_decoration_does_not_knock_the_coating_out(sheet):
    plates, template, imposition = sheet.plates, sheet.template, sheet.imposition
    decoration, coating = plates[1, "ScratchDecor"], plates[1, "ScratchOff"]
    inside = _mask(coating.shape, _tickets(imposition, template, "front", coating.shape))
    decorated = decoration & inside
    assert decorated.sum() > 1000, "the paws and GRATTEZ ICI are printed"
    assert not (decorated & ~coating).any(), "the coating is solid under its decoration"


def test_the_validation_barcodes_quiet_zones_are_white(sheet):
    """Each side of the Code 128's bars, its quiet zone (``barcodes.quiet_modules`` narrow
    bars, >= 2 mm at 0.2 mm) is paper white: no process ink (the zone's white base, not the
    ticket's pale background) and no imaging, over the bars' whole height."""
    renderer, template, imposition = sheet.renderer, sheet.template, sheet.imposition
    b = template.barcodes
    quiet = b["quiet_modules"] * b["code128_module"] * MM
    assert quiet >= 2 * MM - 0.01
    dx, dy = (float(v) for v in renderer.code128_place.split()[5:7])
    bars_w = renderer.code128.width_modules * b["code128_module"] * MM
    bars_h = b["code128_height"] * MM
    shape = sheet.process.shape
    inset = 1  # a pixel at each edge: where the bars' and the base's edges fall
    for x, y in imposition.front:
        for left in (x + dx - quiet, x + dx + bars_w):
            top, bottom, c0, c1 = _box_px((0, 0, quiet, bars_h), (left, y + dy), shape[0])
            area = np.s_[top + inset : bottom - inset, c0 + inset : c1 - inset]
            assert sheet.process[area].size > 100
            assert sheet.process[area].max() < 13, "a quiet zone on the pale background"
            assert not sheet.plates[1, "Variable"][area].any(), "imaging in a quiet zone"


HOLE_DPI = 1200


def test_the_latex_has_no_hole_at_1200_dpi(sheet, tmp_path):
    """The ``ScratchOff`` plate of a whole ticket (its paws, where toes overlap the pad's
    corners, the bonus box, the retailer's zone) at 1,200 dpi: no bare paper enclosed by the
    coating (each hole a spot where the latex would let a symbol show)."""
    x, y = sheet.imposition.front[0]
    w, h = sheet.template.width * MM, sheet.template.height * MM
    cut = tmp_path / "ticket.pdf"
    with pikepdf.open(sheet.pdf) as pdf, pikepdf.new() as one:
        one.pages.append(pdf.pages[0])
        page = one.pages[0].obj
        page.MediaBox = [x, y, x + w, y + h]
        for box in ("/CropBox", "/TrimBox", "/BleedBox"):
            if box in page:
                del page[box]
        one.save(cut)
    subprocess.run(
        ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=tiffsep", f"-r{HOLE_DPI}",
         f"-sOutputFile={tmp_path}/t%d.tif", str(cut)],
        check=True, timeout=300,
    )  # fmt: skip
    latex = np.asarray(Image.open(tmp_path / "t1(ScratchOff).tif").convert("L")) < 128
    assert latex.mean() > 0.1, "the ticket's coatings are on the plate"
    holes, count = ndimage.label(ndimage.binary_fill_holes(latex) & ~latex)
    sizes = np.bincount(holes.ravel())[1:]
    assert count == 0, f"{count} holes in the latex, {sizes.tolist()[:10]} px each"


def test_register_marks_are_on_every_plate(sheet):
    plates, template, imposition = sheet.plates, sheet.template, sheet.imposition
    height = plates[1, "Black"].shape[0]
    for page in (1, 2):
        for ink in INKS:
            plate = plates[page, ink]
            for x, y, r in _targets(imposition, template):
                row, col = int(height - y * PX), int(x * PX)
                reach = int(r * PX) + 2
                assert plate[row - reach : row + reach, col - reach : col + reach].sum() > 10, (
                    f"page {page} {ink}: no register mark at {x:.0f}, {y:.0f} pt"
                )


def test_pick_out_two_tickets_of_a_variant_differ_only_under_the_coating(sheet):
    plates = sheet.plates
    template = sheet.template
    renderer = sheet.renderer
    imposition = sheet.imposition
    variants = sheet.variants
    pairs = [(a, b) for a in range(len(variants)) for b in range(a + 1, len(variants))]
    a, b = next((a, b) for a, b in pairs if variants[a] == variants[b])
    for page, side in ((1, "front"), (2, "back")):
        trims = _tickets(imposition, template, side, plates[1, "Black"].shape)
        if side == "front":
            allowed = [_box_px(z.coating, (0, 0), 0) for z in renderer.zones]
        else:
            zones = (template.back["serial"], template.back["inventory"])
            allowed = [_box_px(template.box(z), (0, 0), 0) for z in zones]
        for ink in INKS:
            plate = plates[page, ink]
            (ra0, ra1, ca0, ca1), (rb0, rb1, cb0, cb1) = trims[a], trims[b]
            one, two = plate[ra0:ra1, ca0:ca1], plate[rb0:rb1, cb0:cb1]
            assert one.shape == two.shape
            # ink in one with no ink within a pixel in the other: edges that land a pixel
            # apart (a glyph's origin rounded the other way) are not a difference
            differ = (one & ~_dilate(two, 1)) | (two & ~_dilate(one, 1))
            # allowed boxes relative to the trim's top-left, in pixels
            free = np.zeros(one.shape, dtype=bool)
            rows = one.shape[0]
            for top, bottom, left, right in allowed:
                free[max(rows + top - 2, 0) : rows + bottom + 2, max(left - 2, 0) : right + 2] = 1
            leak = differ & ~free
            assert not leak.any(), f"{side} {ink}: tickets {a} and {b} differ outside the coating"
