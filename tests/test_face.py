"""The face of the dog/cat ticket, as the regulation and a lottery want it (issue 18).

- the 9 play zones are paw prints (regulation 4.2.1): each slot's coating a pad over its symbol
  and caption with the template's spread, corners included (a property of the geometry), and
  four toes above it, on the ``ScratchOff`` plate;
- the top prize is on the front, from the game's definition, written by ``french``;
- the retailer's zone is labelled once and is not the largest coating;
- every text of the front and back forms is at least 6 pt, and 100 % black text under 12 pt
  overprints (``op`` and ``OPM 1``) instead of knocking the tinted artwork out;
- the symbol slots are template data: a template whose play areas do not hold the game's
  symbol fields is refused in one line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pikepdf
import pypdfium2 as pdfium
import pytest
from hypothesis import given
from hypothesis import strategies as st

from printpipe import french
from printpipe.errors import PrintpipeError
from printpipe.games import game_template_dir
from printpipe.render.canvas import new_canvas
from printpipe.render.template import MM, Coating, PlayCoating, load_template
from printpipe.render.ticket import TicketFace, TicketRenderer, load_texts, paw_pad, paw_toes

TEMPLATES = game_template_dir("chien-chat")


def _render(game, path: Path, template: Path = TEMPLATES / "ticket.toml") -> TicketRenderer:
    """One covered front and one back on a page of their own size, saved to ``path``."""
    t = load_template(template)
    canvas = new_canvas(path, (2 * t.width * MM, t.height * MM), t.fonts)
    renderer = TicketRenderer(canvas, t, game, load_texts(TEMPLATES / "texts.toml"), Coating.PLATE)
    face = TicketFace.of(game.definition.number, 1, 0, 0, (0,) * 11, 7)
    renderer.draw_front(0, 0, face)
    renderer.draw_back(t.width * MM, 0, face)
    renderer.finish_page()
    canvas.showPage()
    canvas.save()
    return renderer


@pytest.fixture(scope="module")
def drawn(game, tmp_path_factory) -> tuple[TicketRenderer, Path]:
    path = tmp_path_factory.mktemp("face") / "ticket.pdf"
    return _render(game, path), path


def test_the_play_areas_are_paws_over_their_symbols(drawn):
    renderer, _ = drawn
    paws = [zone for zone in renderer.zones if zone.toes]
    assert len(paws) == 9
    spread = renderer.t.coating["spread"] * MM
    assert spread >= 1.35 * MM
    for zone in paws:
        x, y, w, h = zone.pad
        hx, hy, hw, hh = zone.hidden
        assert x <= hx - spread and x + w >= hx + hw + spread
        assert y <= hy - spread and y + h >= hy + hh + spread
        assert len(zone.toes) == 4
        assert all(cy > y + h - 0.3 * h for _, cy, *_ in zone.toes), "toes above the pad"
        assert zone.words == "GRATTEZ ICI"


@given(
    w=st.floats(5 * MM, 40 * MM),
    h=st.floats(5 * MM, 40 * MM),
    spread=st.floats(0.5 * MM, 3 * MM),
)
def test_a_pad_keeps_the_spread_round_its_corners(w, h, spread):
    """The pad's rounded corner stays at least ``spread`` from the hidden box's corner, and
    its straight sides at least ``spread`` from the box's sides."""
    (px, py, pw, ph), radius = paw_pad((0.0, 0.0, w, h), spread)
    assert radius <= min(pw, ph) / 2
    assert px <= -spread + 1e-9 and py <= -spread + 1e-9
    assert px + pw >= w + spread - 1e-9 and py + ph >= h + spread - 1e-9
    # the corner arc's centre, inside the pad's corner; the hidden corner (w, h)
    cx, cy = px + pw - radius, py + ph - radius
    assert radius - math.hypot(w - cx, h - cy) >= spread - 1e-6 or (w <= cx and h <= cy)
    toes = paw_toes((px, py, pw, ph))
    assert len(toes) == 4 and all(t[1] > py + ph - radius for t in toes)


def test_the_coating_plate_is_shaped_as_paws(game, drawn, tmp_path):
    """On the ScratchOff plate: ink at each toe's centre, none between the two middle toes
    (toes, not a block), and the pad solid."""
    import subprocess

    import numpy as np
    from PIL import Image

    renderer, pdf = drawn
    dpi = 150
    command = ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=tiffsep", f"-r{dpi}"]
    subprocess.run([*command, f"-sOutputFile={tmp_path}/p.tif", str(pdf)], check=True, timeout=120)
    plate = 255 - np.asarray(Image.open(tmp_path / "p(ScratchOff).tif").convert("L")) > 127
    height = plate.shape[0]

    def inked(x: float, y: float) -> bool:
        return bool(plate[int(height - y * dpi / 72), int(x * dpi / 72)])

    for zone in (z for z in renderer.zones if z.toes):
        for cx, cy, *_ in zone.toes:
            assert inked(cx, cy)
        (x1, y1, *_), (x2, y2, *_) = zone.toes[1], zone.toes[2]
        assert not inked((x1 + x2) / 2, (y1 + y2) / 2)
        x, y, w, h = zone.pad
        assert inked(x + w / 2, y + h / 2)


def test_the_front_shows_the_top_prize_from_the_definition(game, drawn):
    _, pdf = drawn
    text = pdfium.PdfDocument(str(pdf))[0].get_textpage().get_text_range()
    top = max(p.amount_eur for p in game.definition.prizes)
    assert top == 15_000
    assert f"JUSQU'À {french.euros(top)}" in text
    assert text.count("RÉSERVÉE AU DÉTAILLANT") == 1, "the retailer's zone labelled once"


def test_the_retailer_zone_is_not_the_largest_coating(drawn):
    renderer, _ = drawn
    area = {zone.name: zone.pad[2] * zone.pad[3] for zone in renderer.zones}
    assert area["front.validation"] < area["front.bonus"]
    assert max(area, key=area.__getitem__) != "front.validation"


def _text_runs(pdf: Path):
    """(form name, font size, fill colour, overprint on, OPM) of every text run of the tickets'
    forms: the static artwork of the fronts and back, and the spot inks' forms (fill
    ``("spot",)``)."""
    with pikepdf.open(pdf) as document:
        page = document.pages[0]
        for name, form in page.Resources.XObject.items():
            if not (str(name).startswith("/FormXob")):
                continue
            resources = form.get("/Resources")
            states: Any = resources.get("/ExtGState", {}) if resources is not None else {}
            stack: list[tuple[list, bool, int, float]] = [([0.0] * 4, False, 0, 0.0)]
            for instruction in pikepdf.parse_content_stream(form):
                operands, operator = instruction.operands, instruction.operator
                op = str(operator)
                fill, overprint, mode, size = stack[-1]
                if op == "q":
                    stack.append(stack[-1])
                elif op == "Q":
                    stack.pop()
                elif op == "k":
                    stack[-1] = ([float(v) for v in operands], overprint, mode, size)
                elif op == "scn":  # a tint of a spot ink: the symbols' captions, the decoration
                    stack[-1] = (["spot"], overprint, mode, size)
                elif op == "gs":
                    state = states[operands[0]]
                    overprint = bool(state.get("/op", overprint))
                    mode = int(state.get("/OPM", mode))
                    stack[-1] = (fill, overprint, mode, size)
                elif op == "Tf":
                    stack[-1] = (fill, overprint, mode, float(operands[1]))
                elif op in ("Tj", "TJ", "'", '"'):
                    yield str(name), size, tuple(fill), overprint, mode


def test_texts_are_at_least_6_pt_and_small_black_text_overprints(drawn):
    _, pdf = drawn
    runs = [run for run in _text_runs(pdf) if run[2] != ("spot",)]  # the process artwork
    assert len(runs) > 30
    sizes = [size for _, size, *_ in runs]
    assert min(sizes) >= 6, f"a text of the ticket at {min(sizes):.1f} pt"
    black = [run for run in runs if run[2] == (0.0, 0.0, 0.0, 1.0) and run[1] < 12]
    assert len(black) > 20
    knocking_out = [run for run in black if not (run[3] and run[4] == 1)]
    assert not knocking_out, f"black text knocks the artwork out: {knocking_out[:3]}"


def test_the_slots_are_template_data(game, tmp_path):
    template = load_template(TEMPLATES / "ticket.toml")
    paws, bonus = template.play_areas
    assert (paws.zone, len(paws.slots), paws.coating) == ("grid", 9, PlayCoating.PAW)
    assert (bonus.zone, len(bonus.slots), bonus.coating) == ("bonus", 2, PlayCoating.AREA)
    text = (TEMPLATES / "ticket.toml").read_text()
    assert 'zone = "grid"\ncols = 3\n' in text
    other = tmp_path / "twelve.toml"
    other.write_text(text.replace('zone = "grid"\ncols = 3\n', 'zone = "grid"\ncols = 4\n'))
    assert len(load_template(other).play_areas[0].slots) == 12  # the template allows it
    with pytest.raises(PrintpipeError, match=r"12 \(grid\), 2 \(bonus\) symbols; the game's "
                       r"fields need 9 \(paws\), 2 \(bonus\)"):  # fmt: skip
        _render(game, tmp_path / "twelve.pdf", other)
