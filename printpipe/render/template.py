"""The ticket template: geometry in millimetres, read from a TOML file and checked on load.

Geometry lives in data, not code, so a second ticket size is a second file.  Every zone is a
rectangle given from the top-left corner of the trim with y downwards, as a designer measures
it; :meth:`Template.box` converts to PDF points (origin bottom-left, y upwards).  Loading
refuses, in one line naming the zone, a zone outside the safe area, two zones of one face that
overlap, or a barcode or symbol that does not fit its zone.

The symbol slots are data too: ``[[play]]`` lists the play areas in the order of the game's
symbol fields, each a zone of the front cut into ``cols`` x ``rows`` slots, one symbol a slot,
and how its coating is laid: ``paw`` (each slot its own coating, shaped as a paw print: a pad
over the symbol and its caption, four toes above) or ``area`` (one coating over all the area's
slots).  The renderer places whatever the template lists, so a paper game with another face
needs only its own template and game package.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from printpipe.errors import PrintpipeError

MM = 72 / 25.4
"""PDF points per millimetre."""

FRONT_ZONES = (
    "artwork", "title", "price", "toprize", "howto", "grid", "bonus", "paytable", "validation",
    "legal",
)  # fmt: skip
BACK_ZONES = ("title", "odds", "legal", "serial", "inventory")
ARTWORK_ROLES = ("front", "back", "decoration")
"""What a designer's SVG may be given for (``[artwork]``): see :mod:`printpipe.render.designer`."""
DEFAULT_COATING = {"spread": 1.35, "corner": 1.5}
"""The coating's spread beyond what it hides (printers spread 1 to 1.5 mm) and its corners."""


class PlayCoating(StrEnum):
    """How a play area's slots are coated: each its own ``paw`` print, or one coating over the
    whole ``area``."""

    PAW = "paw"
    AREA = "area"


class Coating(StrEnum):
    """What covers the scratch zones of a drawn ticket: the press's ``plate`` (the coating and
    its decoration), or ``none`` (the ticket as scratched)."""

    PLATE = "plate"
    NONE = "none"


LABEL_GAP = 1.0
"""Between the retailer zone's label band (if it has one) and its scratch zone, mm."""
BONUS_INSET = (1.5, 0.2, 1.5, 0.8)
"""The bonus box's scratch zone inside the box less its roof, mm: left, top (a gap below the
roof), right, bottom (the box's floor).  The scratch zone's symbols are centred in it, so the
coating, spread beyond them, stands clear of the roof and of the floor alike."""
MIN_MODULE = 0.17
"""The narrowest bar a template may ask for, mm: 4 dots of a 600 dpi ink-jet head.  The print
shop sets ``code128_module`` to what its imaging line prints reliably (recorded in job.json)."""
CODE128_MODULES = 189  # 25 digits: start C, 12 pairs, code B, 1 digit, check, stop (11 x 16 + 13)
ITF_MODULES = 135  # 14 digits, narrow 1 wide 3: start 4 + 7 pairs x 18 + stop 5


@dataclass(frozen=True, slots=True)
class Rect:
    """A rectangle in mm, from the trim's top-left corner, y downwards."""

    x: float
    y: float
    w: float
    h: float

    def overlaps(self, other: Rect) -> bool:
        return (
            self.x < other.x + other.w
            and other.x < self.x + self.w
            and self.y < other.y + other.h
            and other.y < self.y + self.h
        )

    def inset(self, left: float, top: float, right: float, bottom: float) -> Rect:
        return Rect(self.x + left, self.y + top, self.w - left - right, self.h - top - bottom)


@dataclass(frozen=True, slots=True)
class PlayArea:
    """One play area: a front zone cut into symbol slots, in reading order."""

    zone: str
    """The front zone it lies in (e.g. ``grid``, ``bonus``)."""
    area: Rect
    """Where its slots lie: the zone, or, for a zone with a ``roof``, the zone below the roof
    less :data:`BONUS_INSET`."""
    slots: tuple[Rect, ...]
    coating: PlayCoating


@dataclass(frozen=True)
class Template:
    """One ticket size: trim, bleed, zones of both faces, sheet marks, fonts, barcode sizes."""

    path: Path
    sha256: str
    width: float
    height: float
    bleed: float
    safe: float
    sheet: dict[str, float]
    fonts: dict[str, str]
    symbols: dict[str, float]
    barcodes: dict[str, float]
    front: dict[str, Rect]
    back: dict[str, Rect]
    play_areas: tuple[PlayArea, ...]
    """The play areas, in the order of the game's symbol fields."""
    bonus_roof: float
    validation_label: float
    coating: dict[str, float]
    """``spread``: how far the coating reaches beyond what it hides; ``corner``: its radius."""
    artwork: dict[str, Path] = field(default_factory=dict)
    """Designer files by role (``front``, ``back``, ``decoration``); none: the game's own."""

    @property
    def name(self) -> str:
        return self.path.stem

    # -- derived zones ------------------------------------------------------------------------
    @property
    def slots(self) -> tuple[Rect, ...]:
        """Every symbol slot, play area after play area: the order of a ticket's symbols."""
        return tuple(slot for area in self.play_areas for slot in area.slots)

    @property
    def validation_scratch(self) -> Rect:
        """The retailer's scratch zone: the validation zone below its label band, a gap between
        them (the coating's rounded corners stand clear of the band); without a band, the
        whole zone."""
        if self.validation_label == 0:
            return self.front["validation"]
        return self.front["validation"].inset(0, self.validation_label + LABEL_GAP, 0, 0)

    def box(self, rect: Rect) -> tuple[float, float, float, float]:
        """``rect`` in PDF points relative to the trim's bottom-left corner: x, y, w, h."""
        return (rect.x * MM, (self.height - rect.y - rect.h) * MM, rect.w * MM, rect.h * MM)


def load_template(path: Path) -> Template:
    """Read and check a ticket template; any problem is one line naming the file and zone."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PrintpipeError(f"ticket template {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise PrintpipeError(f"ticket template {path} is unreadable: {exc}") from None
    reader = _Reader(path, data)
    ticket = reader.table("ticket")
    width, height = reader.number(ticket, "ticket.width"), reader.number(ticket, "ticket.height")
    bleed, safe = reader.number(ticket, "ticket.bleed"), reader.number(ticket, "ticket.safe")
    front = {name: reader.rect(f"front.{name}") for name in FRONT_ZONES}
    back = {name: reader.rect(f"back.{name}") for name in BACK_ZONES}
    play_areas = reader.play_areas(front)
    template = Template(
        path=path,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        width=width,
        height=height,
        bleed=bleed,
        safe=safe,
        sheet=reader.numbers("sheet", ("margin", "mark_gap", "mark_length", "slug_height")),
        fonts=reader.strings("fonts", ("regular", "bold", "digits")),
        symbols=reader.numbers("symbols", ("size", "caption_pt", "caption_gap")),
        barcodes=reader.numbers(
            "barcodes",
            (
                "code128_module",
                "code128_height",
                "itf_narrow",
                "itf_height",
                "quiet_modules",
                "digits_pt",
            ),
        ),
        front=front,
        back=back,
        play_areas=play_areas,
        bonus_roof=reader.number(reader.table("front.bonus"), "front.bonus.roof"),
        validation_label=reader.number(reader.table("front.validation"), "front.validation.label"),
        coating=reader.optional_numbers("coating", DEFAULT_COATING),
        artwork=reader.artwork(ARTWORK_ROLES),
    )
    _check(template, reader)
    return template


def _check(t: Template, reader: _Reader) -> None:
    safe = Rect(t.safe, t.safe, t.width - 2 * t.safe, t.height - 2 * t.safe)
    for face, zones in (("front", t.front), ("back", t.back)):
        names = list(zones)
        for i, name in enumerate(names):
            zone = zones[name]
            if not (
                zone.x >= safe.x - 1e-9
                and zone.y >= safe.y - 1e-9
                and zone.x + zone.w <= safe.x + safe.w + 1e-9
                and zone.y + zone.h <= safe.y + safe.h + 1e-9
            ):
                raise reader.error(
                    f"{face}.{name}",
                    f"falls outside the trim's safe area ({t.width:g} x {t.height:g} mm, "
                    f"{t.safe:g} mm inside the trim)",
                )
            for other in names[i + 1 :]:
                if zone.overlaps(zones[other]):
                    raise reader.error(f"{face}.{name}", f"overlaps {face}.{other}")
    b, s = t.barcodes, t.symbols
    symbol_h = s["size"] + s["caption_gap"] + s["caption_pt"] / MM
    for area in t.play_areas:
        slot = area.slots[0]
        if symbol_h > slot.h - 1 or s["size"] > slot.w - 1:
            raise reader.error(
                f"front.{area.zone}", "a slot is too small for a symbol and its caption"
            )
    # the bars and their quiet zones on the zone's white base, which the coating covers by
    # its spread on every side: white, not the ticket's background, on both sides of the bars
    quiet = (CODE128_MODULES + 2 * b["quiet_modules"]) * b["code128_module"]
    needed = quiet + 2 * t.coating["spread"]
    scratch = t.validation_scratch
    if needed > scratch.w + 1e-9 or b["code128_height"] + b["digits_pt"] / MM + 2 > scratch.h:
        raise reader.error(
            "front.validation",
            f"too small for the Code 128 barcode and digits: {needed:.2f} mm wide needed (the "
            f"bars, {b['quiet_modules']} narrow bars of white each side, the coating's spread)",
        )
    needed = (ITF_MODULES + 2 * b["quiet_modules"]) * b["itf_narrow"]
    if needed > t.back["inventory"].w or b["itf_height"] + 1 > t.back["inventory"].h:
        raise reader.error("back.inventory", "too small for the ITF barcode")
    if b["code128_module"] < MIN_MODULE or b["itf_narrow"] < MIN_MODULE:
        raise reader.error(
            "barcodes", f"narrow bars must be >= {MIN_MODULE} mm (4 dots of a 600 dpi ink-jet)"
        )
    if b["code128_height"] < 8:
        raise reader.error("barcodes", "bars must be >= 8 mm tall")
    if b["itf_height"] < 8 or b["quiet_modules"] < 10:
        raise reader.error("barcodes", "bars >= 8 mm tall and quiet zones >= 10 narrow bars")


class _Reader:
    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data

    def error(self, where: str, problem: str) -> PrintpipeError:
        return PrintpipeError(f"ticket template {self.path}: zone {where}: {problem}")

    def table(self, where: str) -> dict[str, Any]:
        node: Any = self.data
        for part in where.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise self.error(where, "missing (expected a table)")
        return node

    def number(self, table: dict[str, Any], where: str) -> float:
        value = table.get(where.rsplit(".", 1)[-1])
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.error(where, f"expected a number >= 0, found {value!r}")
        return float(value)

    def numbers(self, where: str, keys: tuple[str, ...]) -> dict[str, float]:
        table = self.table(where)
        return {key: self.number(table, f"{where}.{key}") for key in keys}

    def artwork(self, roles: tuple[str, ...]) -> dict[str, Path]:
        """``[artwork]``: role -> an SVG file, relative to the template's folder."""
        node = self.data.get("artwork")
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise self.error("artwork", "expected a table")
        files = {}
        for role, name in node.items():
            where = f"artwork.{role}"
            if role not in roles:
                raise self.error(where, f"unknown (known: {', '.join(roles)})")
            if not isinstance(name, str) or not name.lower().endswith(".svg"):
                raise self.error(where, f"expected an SVG file name, found {name!r}")
            path = (self.path.parent / name).resolve()
            if not path.is_file():
                raise self.error(where, f"{path} does not exist")
            files[role] = path
        return files

    def play_areas(self, front: dict[str, Rect]) -> tuple[PlayArea, ...]:
        """``[[play]]``: the play areas in the game's field order, each cut into its slots."""
        node = self.data.get("play")
        if not isinstance(node, list) or not node or not all(isinstance(n, dict) for n in node):
            raise self.error("play", "missing (expected [[play]] tables, one per play area)")
        areas = []
        for i, table in enumerate(node):
            where = f"play {i + 1}"
            zone = table.get("zone")
            if zone not in front:
                raise self.error(f"{where}.zone", f"expected a front zone, found {zone!r}")
            try:
                coating = PlayCoating(table.get("coating"))
            except ValueError:
                known = ", ".join(c.value for c in PlayCoating)
                raise self.error(f"{where}.coating", f"expected one of {known}") from None
            cols = self.number(table, f"{where}.cols")
            rows = self.number(table, f"{where}.rows")
            gap = self.number(table, f"{where}.gap") if "gap" in table else 0.0
            if cols != int(cols) or rows != int(rows) or cols < 1 or rows < 1:
                raise self.error(where, "cols and rows must be whole numbers >= 1")
            area = front[zone]
            roof = self.data["front"][zone].get("roof")
            if roof is not None:
                left, top, right, bottom = BONUS_INSET
                roof_mm = self.number(self.data["front"][zone], f"front.{zone}.roof")
                area = area.inset(left, roof_mm + top, right, bottom)
            cols, rows = int(cols), int(rows)
            w, h = (area.w - gap * (cols - 1)) / cols, (area.h - gap * (rows - 1)) / rows
            if w <= 0 or h <= 0:
                raise self.error(where, "its slots have no area")
            slots = tuple(
                Rect(area.x + c * (w + gap), area.y + r * (h + gap), w, h)
                for r in range(rows)
                for c in range(cols)
            )
            areas.append(PlayArea(zone, area, slots, coating))
        return tuple(areas)

    def optional_numbers(self, where: str, defaults: dict[str, float]) -> dict[str, float]:
        """A table of numbers that may be absent, each key defaulting to ``defaults``."""
        node = self.data.get(where)
        if node is None:
            return dict(defaults)
        if not isinstance(node, dict):
            raise self.error(where, "expected a table")
        unknown = sorted(set(node) - set(defaults))
        if unknown:
            raise self.error(f"{where}.{unknown[0]}", f"unknown (known: {', '.join(defaults)})")
        return {
            key: self.number(node, f"{where}.{key}") if key in node else value
            for key, value in defaults.items()
        }

    def strings(self, where: str, keys: tuple[str, ...]) -> dict[str, str]:
        table = self.table(where)
        out = {}
        for key in keys:
            if not isinstance(table.get(key), str):
                raise self.error(f"{where}.{key}", "expected a string")
            out[key] = table[key]
        return out

    def rect(self, where: str) -> Rect:
        table = self.table(where)
        x, y, w, h = (self.number(table, f"{where}.{k}") for k in ("x", "y", "w", "h"))
        if w <= 0 or h <= 0:
            raise self.error(where, "has no area")
        return Rect(x, y, w, h)
