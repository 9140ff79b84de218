"""The proof pack (issue 5): what the lottery approves before a print run.

``make_proof`` writes, into a temporary folder renamed into place when complete:

- ``proof-GAME.pdf``: the cover page (:mod:`.cover`), one page per specimen ticket
  (:mod:`.specimens`, :mod:`.specimen_pages`) and the symbol sheet (:mod:`.symbol_sheet`),
  all drawn by the press renderer with proof coatings; and a 150 dpi PNG of every page
  (:mod:`.previews`);
- ``proof.json``: what each specimen shows (page, place, variant, tier, amount, serial,
  symbols), so tests and reviewers check the pack against the rules without reading pixels;
- with a block store only (``from_block``): PROOF-marked press sheets of real tickets
  (:mod:`.press`) and the per-pack plot for the audit report (:mod:`.plot`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from printpipe.atomic import make_private_dir, make_tree_private, partial_path, sha256_file
from printpipe.block import PackRange
from printpipe.errors import PrintpipeError
from printpipe.games.base import is_online, is_paper
from printpipe.handover import inputs_of
from printpipe.render.imposition import DEFAULT_CHUNK_PACKS, SRA3, PressSheet
from printpipe.render.template import Coating

if TYPE_CHECKING:
    from printpipe.games.base import Game, PaperGame
    from printpipe.render.template import Template

PROOF_FORMAT = "printpipe-proof/1"
SIDECAR = "proof.json"


@dataclass(frozen=True, kw_only=True)
class PressRequest:
    """Which real sheets to proof: a block store, a pack range (default: the first file an
    export of the store writes), sheet numbers (1-based), sheet size, coating."""

    block_dir: Path
    keys_dir: Path
    packs: PackRange | None = None
    sheets: tuple[int, ...] = (1,)
    sheet: PressSheet = SRA3
    coating: Coating = Coating.PLATE


def make_proof(
    *,
    game_id: str,
    out_dir: Path,
    force: bool = False,
    press: PressRequest | None = None,
    template: Path | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Write the proof pack of ``game_id`` to ``out_dir``; returns the ``proof.json`` record.

    ``template``: the ticket template the press run will use (default the game's own); the
    pack records its inputs, which ``printpipe proof approve`` signs. ``show_progress``: a bar
    on stderr over the pages drawn and previewed (a paper game's pack)."""
    from printpipe.games import game_template_dir, load_game
    from printpipe.render.template import load_template

    started = time.perf_counter()
    game = load_game(game_id)
    if is_online(game):  # units as the screen shows them
        from printpipe.proof.unit_pages import write_unit_pack

        online = game
        if press:
            raise PrintpipeError(
                f"--from-block: {game_id} is an online game, it has no press sheets"
            )

        def write(tmp: Path) -> dict[str, Any]:
            return write_unit_pack(tmp, online)
    else:
        assert is_paper(game)
        loaded = load_template((template or game_template_dir(game_id) / "ticket.toml").resolve())
        if loaded.artwork:
            from printpipe.render.designer import check_artwork

            check_artwork(loaded.artwork)
        texts_path = game_template_dir(game_id) / "texts.toml"
        press_job = _check_press(press, game) if press else None

        def write(tmp: Path) -> dict[str, Any]:
            return _write_pack(tmp, game, loaded, texts_path, press_job, show_progress)

    if out_dir.exists() and not force:
        raise PrintpipeError(f"{out_dir} already exists (use --force to replace it)")
    tmp = partial_path(out_dir)
    try:
        make_private_dir(out_dir.parent)
        shutil.rmtree(tmp, ignore_errors=True)
        make_private_dir(tmp)
    except OSError as exc:
        raise PrintpipeError(f"cannot write to {out_dir.parent}: {exc.strerror}") from None
    try:
        record = write(tmp)
        record["seconds"] = round(time.perf_counter() - started, 2)
        (tmp / SIDECAR).write_text(
            json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        make_tree_private(tmp)  # a press proof shows real outcomes
        if out_dir.exists():
            old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return record


def _check_press(press: PressRequest, game: Game) -> dict[str, Any]:
    """Open and check everything a press proof needs before anything is written."""
    from printpipe.block import BlockStore
    from printpipe.keys import PRODUCER_SIGNING_PUB, load_public_key

    store = BlockStore.open(press.block_dir)
    if store.game_id != game.definition.id:
        raise PrintpipeError(
            f"block store {press.block_dir} is of game {store.game_id}, not {game.definition.id}"
        )
    store.check_intact(load_public_key(press.keys_dir / PRODUCER_SIGNING_PUB))
    stored = store.pack_range
    packs = press.packs
    if packs is None:  # the first press file an export of the store writes
        packs = PackRange(stored.first, min(stored.first + DEFAULT_CHUNK_PACKS - 1, stored.last))
    packs.check_within(game.definition.block.packs)
    return {
        "store": store,
        "packs": packs,
        "sheets": list(press.sheets),
        "sheet_mm": press.sheet.size_mm,
        "coating": press.coating,
    }


def _write_pack(
    out: Path,
    game: PaperGame,
    template: Template,
    texts_path: Path,
    press_job: dict[str, Any] | None,
    show_progress: bool = False,
) -> dict[str, Any]:
    from printpipe.progress import progress_bar
    from printpipe.proof.cover import draw_cover
    from printpipe.proof.page import PAGE, footer
    from printpipe.proof.previews import PREVIEW_DPI, write_previews
    from printpipe.proof.specimen_pages import draw_specimen_page
    from printpipe.proof.specimens import make_specimens
    from printpipe.proof.symbol_sheet import draw_symbol_sheet
    from printpipe.render.canvas import new_canvas
    from printpipe.render.ticket import Coating, TicketRenderer, load_texts

    d = game.definition
    specimens = make_specimens(game)
    pages = len(specimens) + 2
    name = f"proof-{d.id}.pdf"
    canvas = new_canvas(out / name, PAGE, template.fonts)
    canvas.setTitle(f"Proof pack - {d.title} - game {d.number:04d}")
    canvas.setCreator("printpipe proof")
    renderer = TicketRenderer(canvas, template, game, load_texts(texts_path), Coating.PLATE)
    fonts = renderer.fonts
    slug = f"{d.title} - jeu {d.number:04d} - épreuves, sans valeur - gabarit {template.name}"
    per_effigy = len(specimens) // len(d.variants)
    contents = [
        "p. 1 : cette page",
        f"p. 2-{len(specimens) + 1} : {len(specimens)} specimens, {per_effigy} par effigie :",
        "    chaque rang, un perdant, un perdant teaser",
        f"p. {pages} : planche des symboles",
        f"{SIDECAR}, aperçus PNG {PREVIEW_DPI} dpi de chaque page",
    ]
    with progress_bar(2 * pages, "proof", "pages", show_progress) as bar:  # drawn, previewed
        draw_cover(canvas, game, template, texts_path, fonts, contents)
        footer(canvas, fonts, slug, 1, pages)
        canvas.showPage()
        bar.update()
        records = []
        for i, specimen in enumerate(specimens, start=1):
            page = draw_specimen_page(canvas, renderer, game, specimen, i, len(specimens))
            page["page"] = i + 1
            records.append(page)
            footer(canvas, fonts, slug, i + 1, pages)
            renderer.finish_page()
            canvas.showPage()
            bar.update()
        symbols = draw_symbol_sheet(canvas, renderer, game)
        footer(canvas, fonts, slug, pages, pages)
        canvas.showPage()
        canvas.save()
        bar.update()
        previews = write_previews(
            out / name, out, name.removesuffix(".pdf"), on_page=lambda: bar.update()
        )
    record: dict[str, Any] = {
        "format": PROOF_FORMAT,
        "game": {"id": d.id, "number": d.number, "definition_sha256": d.source_sha256},
        "template": {"name": template.name, "sha256": template.sha256},
        "inputs": inputs_of(d.id, d.source_sha256, template).to_json(),
        "pdf": name,
        "pdf_sha256": sha256_file(out / name),
        "pages": pages,
        "previews": previews,
        "preview_dpi": PREVIEW_DPI,
        "symbol_sheet": {"page": pages, "codes": symbols},
        "specimens": records,
        "press_proof": None,
        "plot": None,
    }
    if press_job:
        record.update(_write_press(out, game, template, press_job))
    return record


def _write_press(
    out: Path, game: PaperGame, template: Template, job: dict[str, Any]
) -> dict[str, Any]:
    import sys

    from printpipe.proof.plot import have_matplotlib, write_pack_plot
    from printpipe.proof.press import write_press_proof
    from printpipe.proof.previews import write_previews

    store, packs = job["store"], job["packs"]
    name = f"press-proof-b{store.block:04d}-packs-{packs.first}-{packs.last}.pdf"
    press = write_press_proof(
        out / name,
        store,
        game,
        template,
        job["sheet_mm"],
        packs,
        job["sheets"],
        job["coating"],
    )
    press["previews"] = write_previews(out / name, out, name.removesuffix(".pdf"))
    plot = None
    if have_matplotlib():
        plot = write_pack_plot(out / f"block-{store.block:04d}-per-pack.png", store, game)
    else:
        print(
            "printpipe: no per-pack plot: matplotlib is not installed "
            "(pip install 'printpipe[plot]')",
            file=sys.stderr,
        )
    return {"press_proof": press, "plot": plot}


def proof_summary(record: dict[str, Any], out_dir: Path) -> list[str]:
    """What ``printpipe proof`` prints about a written pack."""
    lines = [
        f"wrote {record['pdf']} ({record['pages']} pages, {len(record['specimens'])} specimens) "
        f"and {len(record['previews'])} PNG previews to {out_dir} in {record['seconds']:.1f} s"
    ]
    if record["press_proof"]:
        done = record["press_proof"]
        lines.append(
            f"wrote {done['file']} (sheets {','.join(map(str, done['sheets']))} of "
            f"{done['sheets_in_file']}): REAL OUTCOMES, CONFIDENTIAL - destroy after sign-off"
        )
    if record["plot"]:
        lines.append(f"wrote {record['plot']['file']} (per-pack winners and prize money)")
    return lines
