"""Press proofs: real sheets of a block, exactly as the press file draws them, marked PROOF.

For the print shop's first-sheet sign-off.  The sheets come from the export's own imposition
(:mod:`printpipe.render.imposition`: ``impose``, cut and stack) and drawing
(:mod:`printpipe.render.sheet`: ``write_sheets``), so sheet *s* here is sheet *s* of
``printpipe export --packs FIRST:LAST --chunk-packs COUNT``.  They show real outcomes, so they
are written only when asked for, and every page says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reportlab.pdfgen.canvas import Canvas

from printpipe.block import BlockStore, PackRange, Tickets
from printpipe.errors import PrintpipeError
from printpipe.games.base import PaperGame
from printpipe.proof.page import RED, diagonal_mark
from printpipe.render.canvas import new_canvas
from printpipe.render.imposition import cut_and_stack, impose
from printpipe.render.sheet import Slug, write_sheets
from printpipe.render.template import MM, Template
from printpipe.render.ticket import Coating, TicketFace, TicketRenderer

PROOF_TEXT = "PROOF - NE PAS IMPRIMER"
CONFIDENTIAL = "vrais tickets : gains réels, CONFIDENTIEL, à détruire après accord"


def parse_sheets(text: str) -> list[int]:
    """``1,3,5-7`` -> [1, 3, 5, 6, 7] (1-based sheet numbers)."""
    sheets: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise PrintpipeError(f"sheet list {text!r} must be like 1,3,5-7")
        low, high = int(first), int(last) if dash else int(first)
        if low < 1 or high < low:
            raise PrintpipeError(
                f"sheet list {text!r}: sheets are numbered from 1, ranges low-high"
            )
        sheets.update(range(low, high + 1))
    return sorted(sheets)


class _Faces(Sequence[TicketFace]):
    """The faces of a pack range, built only for the tickets a drawn sheet holds."""

    def __init__(self, tickets: Tickets, game_number: int, first_pack: int, pack_size: int):
        self.tickets, self.number = tickets, game_number
        self.first_pack, self.pack_size = first_pack, pack_size

    def __len__(self) -> int:
        return len(self.tickets)

    def __getitem__(self, i):
        t = self.tickets
        return TicketFace.of(
            self.number,
            self.first_pack + i // self.pack_size,
            i % self.pack_size,
            int(t.variant[i]),
            t.symbols[i],
            int(t.virn[i]),
        )


def write_press_proof(
    path: Path,
    store: BlockStore,
    game: PaperGame,
    template: Template,
    sheet_mm: tuple[float, float],
    packs: PackRange,
    sheets: list[int],
    coating: Coating,
) -> dict[str, Any]:
    """Write the asked sheets of the pack range's press file, PROOF-marked, to ``path``."""
    from printpipe.games import game_template_dir
    from printpipe.render.ticket import load_texts

    stored = store.pack_range
    if not stored.first <= packs.first <= packs.last <= stored.last:
        raise PrintpipeError(f"pack range {packs} is not in the block store (it holds {stored})")
    imposition = impose(template, *sheet_mm)
    tickets = store.read(packs)
    count, _ = cut_and_stack(len(tickets), imposition.slots)
    beyond = [s for s in sheets if s > count]
    if beyond:
        raise PrintpipeError(
            f"sheet {beyond[0]} does not exist: packs {packs} make {count} sheet(s) of "
            f"{imposition.slots} tickets"
        )
    number = game.definition.number
    base = store.printed_pack(packs.first)
    faces = _Faces(tickets, number, base, store.pack_size)
    texts = load_texts(game_template_dir(game.definition.id) / "texts.toml")
    canvas = new_canvas(path, (imposition.sheet_w * MM, imposition.sheet_h * MM), template.fonts)
    canvas.setTitle(f"PROOF {game.definition.title} block {store.block} packs {packs}")
    canvas.setCreator("printpipe proof")
    renderer = TicketRenderer(canvas, template, game, texts, coating)
    last_pack = base + packs.count - 1

    slug = Slug(
        game.definition.title,
        number,
        store.block,
        base,
        last_pack,
        faces[0].serial,
        faces[len(faces) - 1].serial,
        prefix=f"{PROOF_TEXT} - {CONFIDENTIAL} - ",
        suffix=f"coating {coating.value}",
    )

    def overlay(c: Canvas, sheet: int, side: str) -> None:
        w, h = imposition.sheet_w * MM, imposition.sheet_h * MM
        diagonal_mark(
            c, w / 2, h / 2, min(w, h) * 1.1, 54.7, "PROOF", renderer.fonts["bold"], RED, 260
        )
        c.setFillColorCMYK(*RED)
        c.setFont(renderer.fonts["bold"], 9)
        top = h - template.sheet["margin"] * MM + 1
        c.drawCentredString(w / 2, top, f"{PROOF_TEXT} - {CONFIDENTIAL} - feuille {sheet + 1}")

    pages = write_sheets(
        canvas, renderer, imposition, faces, slug, only={s - 1 for s in sheets}, overlay=overlay
    )
    canvas.save()
    return {
        "file": path.name,
        "block": store.block,
        "packs": {"first": packs.first, "last": packs.last},
        "printed_packs": {"first": base, "last": last_pack},
        "sheets": sheets,
        "sheets_in_file": count,
        "pages": pages,
        "sheet_mm": list(sheet_mm),
        "coating": coating.value,
        "real_outcomes": True,
    }
