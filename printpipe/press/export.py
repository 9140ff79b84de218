"""A print export run: a pack range cut into chunks of whole packs, rendered by a local process
pool or by the workers of a Dask cluster (``cluster.py``: the same work unit, only the engine
differs).

Each chunk is one duplex PDF (front sheet, back sheet, ...), written under a temporary name
and fsynced by its worker, then renamed by this process, so a file with its final name is
always a finished one.  Re-running the same command after a crash or ``kill -9`` renders only
the chunks whose file is missing; since rendering is deterministic (``invariant=1``) the
result is byte-identical to an uninterrupted run.  A marker file records the settings of the
run a folder belongs to, so a rerun with other settings cannot mix files of two jobs.
``job.json`` is written last: every file with its SHA-256, pages and serials, the settings,
and the block summary's hash.

What the coordinator does while the workers render, on two threads of its own (hashing,
encryption and the disk release the GIL): it proves the block store intact (every column
against the SHA-256 of the producer's signed summary, whose signature is checked before
anything else), and it seals the run manifest's records (:func:`handover.seal_run_records`).
Nothing is finalised before the store is proven intact: the first chunk to be renamed into
place waits for the proof (then the folder's marker is written and a stale ``job.json``
removed), and a store that fails it stops the run, removes every partial file (the rendered
chunks and the sealed records among them) and is refused in one line, as if it had been
checked first.  The manifest is written once every chunk is final, with their SHA-256.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from printpipe import __version__
from printpipe.atomic import (
    FolderLock,
    make_private_dir,
    promote,
    remove_partials,
    sha256_file,
    write_atomic,
    write_staged,
)
from printpipe.block import BlockStore, PackRange, Tickets
from printpipe.errors import PrintpipeError
from printpipe.games import game_template_dir, load_game
from printpipe.games.base import is_online, is_paper
from printpipe.generation import ChunkRunner, make_runner, run_in_order
from printpipe.handover import APPROVALS_DIR, NOT_APPROVED, Approval, find_approval, inputs_of
from printpipe.ids import TicketId
from printpipe.progress import progress_bar
from printpipe.render.imposition import (
    DEFAULT_CHUNK_PACKS,
    SRA3,
    Press,
    PressSheet,
    cut_and_stack,
    impose,
)
from printpipe.render.pdfvt import StaticFile
from printpipe.render.pdfx import (
    FOGRA39,
    PDFX_VERSION,
    JobIdentity,
    OutputIntent,
    icc_output_intent,
    pdf_date,
)
from printpipe.render.template import Coating, Template

if TYPE_CHECKING:
    from printpipe.render.sheet import Slug

JOB_FORMAT = "printpipe-print-job/1"
JOB_FILE = "job.json"
MARKER = ".printpipe-export.json"
MANIFEST_FILE = "manifest.ppm"
RENDERED = "rendered_tickets"
"""In the record :func:`export_block` returns (not in ``job.json``): the tickets this run
rendered, fewer than the job's on a resume, none when every file was already there."""


@dataclass(frozen=True)
class ExportSettings:
    """Everything that decides the bytes of the press files (recorded in job.json)."""

    sheet: str
    sheet_mm: tuple[float, float]
    template: str
    template_sha256: str
    chunk_packs: int
    coating: Coating
    output_intent: str = "FOGRA39"
    """The PDF/X output intent's identifier (a registered name, or the embedded profile's)."""
    output_intent_sha256: str | None = None
    """SHA-256 of the embedded ICC profile; None for a registered name."""
    approval: str = NOT_APPROVED
    """The SHA-256 of the approval file the run prints under, or ``NOT APPROVED``."""
    press: Press = Press.DIGITAL
    """Composite files for a digital line, or static files and PDF/VT imaging files."""
    code128_module_mm: float = 0.0
    """The validation barcode's narrow bar: the template's ``barcodes.code128_module``, which
    the print shop sets to the narrowest bar its imaging line prints reliably."""


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk of a run, as the coordinator lists it: a file name and its packs."""

    file_name: str
    first: int  # block-relative packs
    last: int


@dataclass(frozen=True)
class ChunkJob:
    """One chunk to render: the work unit sent to a local process or to a Dask worker.

    It carries everything rendering needs (the chunk's ticket columns, the loaded template,
    the settings), so a worker needs neither the block store nor any key: only printpipe
    installed.  ``out_dir`` None means "return the PDF bytes" (``--collect``).
    """

    game_id: str
    block: int
    printed_first: int  # the pack number printed on the chunk's first pack
    first: int  # block-relative packs
    last: int
    pack_size: int
    file_name: str
    out_dir: str | None
    settings: ExportSettings
    date: int
    """The job's date (seconds since the epoch, UTC): every file's CreationDate and ModDate."""
    template: Template = field(repr=False)
    tickets: Tickets = field(repr=False)
    output_intent: OutputIntent = field(repr=False, default=FOGRA39)
    static: StaticFile | None = None
    """An imaging chunk's static file (its name and SHA-256), which its metadata names."""


def chunk_file_name(
    game_id: str, block: int, first_pack: int, last_pack: int, press: Press = Press.DIGITAL
) -> str:
    """File name of a chunk, from its printed pack numbers (``-vt``: an imaging file)."""
    kind = "-vt" if press is Press.CONVENTIONAL else ""
    return f"{game_id}-b{block:04d}-p{first_pack:06d}-{last_pack:06d}{kind}.pdf"


def static_file_name(game_id: str, block: int, variant: str) -> str:
    """File name of a conventional run's static plates for one variant (effigy)."""
    return f"{game_id}-b{block:04d}-static-{variant}.pdf"


def _slug(title: str, number: int, block: int, approval: str, **packs: Any) -> Slug:
    """The run's slug line (``NOT APPROVED`` first when the run has no approved proof)."""
    from printpipe.render.sheet import Slug

    not_approved = f"{NOT_APPROVED} - " if approval == NOT_APPROVED else ""
    return Slug(title, number, block, prefix=not_approved, **packs)


def render_chunk(job: ChunkJob) -> dict[str, Any]:
    """Render one chunk; write its PDF, complete and fsynced, under its partial name
    (``staged``: the coordinator renames it into place) or return its bytes.

    Returns worker statistics and the PDF's SHA-256, so that the coordinator can check the
    file it sees in the shared folder is the one the worker wrote.
    """
    from printpipe.render.canvas import new_canvas
    from printpipe.render.pdfvt import PDFX4_VERSION, DocumentParts
    from printpipe.render.sheet import SheetPart, write_sheets
    from printpipe.render.template import MM
    from printpipe.render.ticket import TicketRenderer, faces_of_packs, load_texts

    started = time.perf_counter()
    game = load_game(job.game_id)
    assert is_paper(game)
    template = job.template
    texts = load_texts(game_template_dir(game.definition.id) / "texts.toml")
    imposition = impose(template, *job.settings.sheet_mm)
    tickets = job.tickets
    pack_size = job.pack_size
    base = job.printed_first
    number = game.definition.number
    faces = faces_of_packs(
        number,
        base,
        pack_size,
        np.asarray(tickets.variant),
        np.asarray(tickets.symbols),
        np.asarray(tickets.virn),
    )
    first_serial, last_serial = faces[0].serial, faces[-1].serial
    title = game.definition.title
    last_printed = base + job.last - job.first
    imaging = job.settings.press is Press.CONVENTIONAL
    what = "Imaging file (PDF/VT-1, Variable plate)" if imaging else "Press file"
    identity = JobIdentity(
        title=f"{title} - game {number:04d} - block {job.block} - packs {base:06d} to "
        f"{last_printed:06d} - {job.file_name}",
        author=f"printpipe {__version__}: press run of {title} block {job.block}",
        subject=f"{what}, duplex {job.settings.sheet} sheets, coating {job.settings.coating}: "
        f"tickets {first_serial} to {last_serial}",
        date=job.date,
        output_intent=job.output_intent,
        pdfx_version=PDFX4_VERSION if imaging else PDFX_VERSION,
    )
    # The path is never written: the bytes are taken with getpdfdata().
    canvas = new_canvas(
        Path(job.file_name),
        (imposition.sheet_w * MM, imposition.sheet_h * MM),
        template.fonts,
        identity=identity,
    )
    parts = None
    if imaging:

        def ticket_of(i: int) -> tuple[str, int, int]:
            return faces[i].serial, base + i // pack_size, i % pack_size

        parts = DocumentParts(canvas, job.file_name, job.static, ticket_of)
    renderer = TicketRenderer(
        canvas, template, game, texts, job.settings.coating, imaging_only=imaging
    )
    slug = _slug(
        title, number, job.block, job.settings.approval, first_pack=base,
        last_pack=last_printed, first_serial=first_serial, last_serial=last_serial,
        suffix=job.file_name,
    )  # fmt: skip
    part = SheetPart.VARIABLE if imaging else SheetPart.COMPOSITE
    pages = write_sheets(canvas, renderer, imposition, faces, slug, part=part, parts=parts)
    data = canvas.getpdfdata()
    result: dict[str, Any] = {
        "file": job.file_name,
        "pages": pages,
        "tickets": len(faces),
        "sha256": hashlib.sha256(data).hexdigest(),
        "seconds": time.perf_counter() - started,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    if job.out_dir is None:
        result["data"] = data
    else:
        result["staged"] = write_staged(Path(job.out_dir) / job.file_name, data).name
    return result


def render_static(
    *,
    game_id: str,
    block: int,
    variant: int,
    file_name: str,
    template: Template,
    settings: ExportSettings,
    date: int,
    output_intent: OutputIntent,
) -> bytes:
    """A conventional run's static plates for one variant: a PDF/X-1a file of two pages, the
    front and the (mirrored) back, each the side's two static forms alone (what every sheet
    of the run places: the same drawing, their text in this file's own font subsets), with
    this variant's artwork only."""
    from printpipe.render.canvas import new_canvas
    from printpipe.render.sheet import write_static_sheets
    from printpipe.render.template import MM
    from printpipe.render.ticket import TicketRenderer, load_texts

    game = load_game(game_id)
    assert is_paper(game)
    texts = load_texts(game_template_dir(game.definition.id) / "texts.toml")
    imposition = impose(template, *settings.sheet_mm)
    title, number = game.definition.title, game.definition.number
    name = game.definition.variants[variant]
    identity = JobIdentity(
        title=f"{title} - game {number:04d} - block {block} - static plates {name} - {file_name}",
        author=f"printpipe {__version__}: press run of {title} block {block}",
        subject=f"Static plates (front, back) of every {settings.sheet} sheet of the run's "
        f"{name} tickets, coating {settings.coating}",
        date=date,
        output_intent=output_intent,
    )
    canvas = new_canvas(
        Path(file_name),
        (imposition.sheet_w * MM, imposition.sheet_h * MM),
        template.fonts,
        identity=identity,
    )
    renderer = TicketRenderer(
        canvas, template, game, texts, settings.coating, static_only=True, variant=variant
    )
    slug = _slug(
        title, number, block, settings.approval, first_pack=0, last_pack=0,
        first_serial="", last_serial="",
    )  # fmt: skip
    write_static_sheets(canvas, renderer, imposition, variant, slug)
    return canvas.getpdfdata()


def _init_worker() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides how a run stops


def export_block(
    *,
    block_dir: Path,
    out_dir: Path,
    keys_dir: Path,
    packs: PackRange | None = None,
    sheet: PressSheet = SRA3,
    template: Path | None = None,
    workers: int | None = None,
    chunk_packs: int = DEFAULT_CHUNK_PACKS,
    coating: Coating = Coating.PLATE,
    press: Press = Press.DIGITAL,
    output_intent: Path | None = None,
    approvals_dir: Path = APPROVALS_DIR,
    unapproved: bool = False,
    show_progress: bool = True,
    scheduler: str | None = None,
    collect: bool = False,
) -> dict[str, Any]:
    """Export a block store's packs (``packs``, block-relative; default all it holds) to
    press PDFs in ``out_dir``; returns the job record.

    ``press``: composite files (a digital line), or a conventional run's static files (one
    per variant of the run) and PDF/VT-1 imaging files.  The chunks run on a local process
    pool, or on a Dask cluster when ``scheduler`` is an address; with ``collect`` the workers
    return the PDF bytes and this process writes them.
    ``output_intent`` is a print shop's ICC output profile to embed (default: FOGRA39 by name).
    The run's inputs must match a proof the lottery approved (a signed file in
    ``approvals_dir``), unless ``unapproved``: then every sheet and ``job.json`` say so.
    """
    from printpipe.handover import seal_run_records, write_sealed_run_manifest
    from printpipe.keys import (
        LOTTERY_RECIPIENT,
        LOTTERY_SIGNING_PUB,
        PRODUCER_SIGNING_PUB,
        load_lottery_recipient,
        load_public_key,
        load_signing_key,
    )
    from printpipe.render.template import load_template

    store = BlockStore.open(block_dir)
    store.check_signature(load_public_key(keys_dir / PRODUCER_SIGNING_PUB))
    # The manifest's keys are loaded before any rendering, so a bad key costs no work.
    recipient = load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT)
    signing_key = load_signing_key(keys_dir)
    game = load_game(store.game_id)
    stored = store.pack_range
    if packs is None:
        packs = stored
    packs.check_within(game.definition.block.packs)
    if not stored.first <= packs.first <= packs.last <= stored.last:
        raise PrintpipeError(
            f"pack range {packs} is not in the block store {block_dir} (it holds packs {stored})"
        )
    if is_online(game):  # the unit feed, no press files
        from printpipe.press.feed_export import export_feed

        store.check_columns()
        return export_feed(store, game, out_dir, packs, recipient, signing_key, show_progress)
    if chunk_packs < 1:
        raise PrintpipeError("--chunk-packs must be at least 1")
    template_path = (template or game_template_dir(game.definition.id) / "ticket.toml").resolve()
    loaded = load_template(template_path)
    if loaded.artwork:  # reportlab.graphics is imported only for a template that needs it
        from printpipe.render.designer import check_artwork

        check_artwork(loaded.artwork)
    grid = impose(loaded, *sheet.size_mm)  # refuse a sheet too small before writing anything
    if press is Press.CONVENTIONAL and output_intent is None:
        raise PrintpipeError(
            "--press conventional writes the imaging as PDF/VT-1, a PDF/X-4 file that embeds "
            "the press's output profile: give its CMYK ICC profile with --output-intent FILE.icc"
        )
    intent = icc_output_intent(output_intent) if output_intent else FOGRA39
    approval = None
    if not unapproved:  # before anything is written
        key_file = keys_dir / LOTTERY_SIGNING_PUB
        inputs = inputs_of(game.definition.id, game.definition.source_sha256, loaded)
        approval = find_approval(inputs, approvals_dir, load_public_key(key_file), key_file)
    settings = ExportSettings(
        sheet.name,
        sheet.size_mm,
        loaded.name,
        loaded.sha256,
        chunk_packs,
        coating,
        intent.identifier,
        hashlib.sha256(intent.profile).hexdigest() if intent.profile else None,
        approval.sha256 if approval else NOT_APPROVED,
        press,
        code128_module_mm=loaded.barcodes["code128_module"],
    )
    folder = _claim_out_dir(out_dir, store, packs, settings, approval)
    intact = _IntactGate(store, folder.open_for_finished_files)
    stop = threading.Event()
    manifest_path = out_dir / MANIFEST_FILE
    sealing = _Background(
        lambda: seal_run_records(
            manifest_path, store, packs, recipient, game=game, stop=stop.is_set
        )
    )
    try:
        specs = chunk_specs(store, packs, chunk_packs, game.definition.block.packs_per_pool, press)
        statics = (
            _static_files(store, packs, game.definition.block.packs_per_pool, game.definition)
            if press is Press.CONVENTIONAL
            else {}
        )
        static_data = {
            name: render_static(
                game_id=game.definition.id, block=store.block, variant=variant,
                file_name=name, template=loaded, settings=settings, date=folder.date,
                output_intent=intent,
            )
            for name, (variant, _) in statics.items()
        }  # fmt: skip
        static_of = {
            spec.file_name: StaticFile(name, hashlib.sha256(static_data[name]).hexdigest())
            for spec in specs
            for name in [_static_of(spec.first, statics)]
        } if statics else {}  # fmt: skip
        todo = [spec for spec in specs if not (out_dir / spec.file_name).exists()]
        target = None if collect else str(out_dir.resolve())
        jobs = (
            _chunk_job(
                store, spec, target, loaded, settings, folder.date, intent,
                static_of.get(spec.file_name),
            )
            for spec in todo
        )  # fmt: skip
        tickets = sum(spec.last - spec.first + 1 for spec in todo) * store.pack_size
        engine = _engine(scheduler, min(workers or os.cpu_count() or 1, max(1, len(todo))))
        rendered = (
            _render(jobs, engine, tickets, show_progress, out_dir, intact) if todo else iter(())
        )
        done = {spec.file_name for spec in todo}
        files = _file_entries(
            specs, done, rendered, out_dir, store, game.definition.number, loaded, settings
        )
        intact.pass_through()  # before the manifest, were every chunk already there
        for name, data in static_data.items():
            if not (out_dir / name).exists():  # one a resumed run wrote stays as it is
                write_atomic(out_dir / name, data)
        files = [
            _static_entry(out_dir, name, variant, runs, game.definition.variants)
            for name, (variant, runs) in statics.items()
        ] + files
        for entry in files:
            if entry["kind"] == "variable":
                static = static_of[entry["path"]]
                entry["static"], entry["static_sha256"] = static.name, static.sha256
        write_sealed_run_manifest(
            manifest_path, store, sealing.result(), recipient, signing_key, files, game=game
        )
        remove_partials(out_dir)  # what a worker killed mid-chunk left (its chunk ran again)
    except BaseException:
        stop.set()
        sealing.wait()
        remove_partials(out_dir)
        folder.remove_if_unused()
        refusal = intact.refusal()
        if refusal is not None:  # a damaged store is the reason, whatever stopped first
            raise refusal from None
        raise
    date = folder.date
    record = {
        "format": JOB_FORMAT,
        "game": {"id": game.definition.id, "number": game.definition.number},
        "block": store.block,
        "packs": {"first": packs.first, "last": packs.last},
        "printed_packs": {
            "first": store.printed_pack(packs.first),
            "last": store.printed_pack(packs.last),
        },
        "tickets": packs.count * store.pack_size,
        "block_summary_sha256": hashlib.sha256(store.summary_bytes).hexdigest(),
        "settings": asdict(settings),
        "imposition": {"columns": grid.cols, "rows": grid.rows},
        "approval": approval.to_json() if approval else NOT_APPROVED,
        "date": pdf_date(date),
        "files": files,
        "manifest": MANIFEST_FILE,
    }
    try:
        write_atomic(out_dir / JOB_FILE, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    finally:
        folder.lock.release()
    return {**record, RENDERED: tickets}  # what this run rendered: job.json does not say


def chunk_specs(
    store: BlockStore,
    packs: PackRange,
    chunk_packs: int,
    packs_per_pool: int,
    press: Press = Press.DIGITAL,
) -> list[ChunkSpec]:
    """The chunks of a run, in block order: whole packs, ``chunk_packs`` at a time, never
    across a pool's end (a pool is a press run of one variant: a chunk's static plates are
    the same on all its sheets)."""
    game_id = store.game_id
    specs = []
    first = packs.first
    while first <= packs.last:
        pool_last = ((first - 1) // packs_per_pool + 1) * packs_per_pool
        last = min(first + chunk_packs - 1, packs.last, pool_last)
        name = chunk_file_name(
            game_id, store.block, store.printed_pack(first), store.printed_pack(last), press
        )
        specs.append(ChunkSpec(name, first, last))
        first = last + 1
    return specs


def _static_files(
    store: BlockStore, packs: PackRange, packs_per_pool: int, definition: Any
) -> dict[str, tuple[int, list[tuple[int, int]]]]:
    """A conventional run's static files: file name -> (variant, the pack ranges printed
    from them), one per variant among the pools of ``packs`` (read from each pool's first
    pack in the range)."""
    files: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    first = packs.first
    while first <= packs.last:
        last = min(((first - 1) // packs_per_pool + 1) * packs_per_pool, packs.last)
        variant = int(store.read(PackRange(first, first)).variant[0])
        name = static_file_name(store.game_id, store.block, definition.variants[variant])
        files.setdefault(name, (variant, []))[1].append((first, last))
        first = last + 1
    return files


def _static_of(first: int, statics: dict[str, tuple[int, list[tuple[int, int]]]]) -> str:
    """The static file an imaging file whose first pack is ``first`` is printed over."""
    for name, (_, runs) in statics.items():
        if any(low <= first <= high for low, high in runs):
            return name
    raise RuntimeError(f"no static file for packs from {first}")


def _static_entry(
    out_dir: Path, name: str, variant: int, runs: list[tuple[int, int]], variants: Any
) -> dict[str, Any]:
    path = out_dir / name
    return {
        "path": name,
        "sha256": sha256_file(path),
        "bytes": path.stat().st_size,
        "pages": 2,
        "kind": "static",
        "variant": variants[variant],
        "runs": [{"first": low, "last": high} for low, high in runs],
    }


def _chunk_job(
    store: BlockStore,
    spec: ChunkSpec,
    out_dir: str | None,
    template: Template,
    settings: ExportSettings,
    date: int,
    output_intent: OutputIntent,
    static: StaticFile | None = None,
) -> ChunkJob:
    """The work unit of one chunk, its ticket columns read (copied) from the store."""
    rows = store.read(PackRange(spec.first, spec.last))
    tickets = Tickets(*(np.array(getattr(rows, column)) for column in Tickets.COLUMNS))
    return ChunkJob(
        store.game_id,
        store.block,
        store.printed_pack(spec.first),
        spec.first,
        spec.last,
        store.pack_size,
        spec.file_name,
        out_dir,
        settings,
        date,
        template,
        tickets,
        output_intent,
        static,
    )


def _engine(scheduler: str | None, workers: int) -> Callable[[], ChunkRunner]:
    """How to start the run's engine (started only when there is something to render)."""
    return lambda: make_runner(scheduler, workers, "export", _init_worker)


def _render(
    jobs: Iterator[ChunkJob],
    engine: Callable[[], ChunkRunner],
    tickets: int,
    show_progress: bool,
    out_dir: Path,
    intact: _IntactGate,
) -> Iterator[dict[str, Any]]:
    """Render the chunks on the run's engine; results in block order, as they arrive.

    Each chunk is renamed into place (collected bytes written) as soon as it arrives, once
    the store is proven intact (any order: files are independent), so only small result
    records wait for their turn.  Ctrl-C, an error or a lost cluster stops the run and
    removes partial files; finished chunk files stay for a resume.
    """
    runner = engine()
    try:
        with progress_bar(tickets, "export", "tickets", show_progress) as bar:

            def arrived(job: ChunkJob, result: dict[str, Any]) -> dict[str, Any]:
                result = _receive(out_dir, result, intact)
                bar.update(result["tickets"])
                return result

            for _job, result in run_in_order(runner, render_chunk, jobs, arrived):
                yield result
    except BaseException:
        runner.close(abort=True)
        remove_partials(out_dir)
        raise
    runner.close(abort=False)


def _receive(out_dir: Path, result: dict[str, Any], intact: _IntactGate) -> dict[str, Any]:
    """Check the chunk a worker wrote (or sent) is the one it rendered, then, the store
    proven intact, rename it into place (or write it)."""
    path = out_dir / result["file"]
    data = result.pop("data", None)
    if data is not None:
        if hashlib.sha256(data).hexdigest() != result["sha256"]:
            raise PrintpipeError(f"{result['file']} was damaged on its way from the worker")
        intact.pass_through()
        write_atomic(path, data)
        return result
    staged = out_dir / result.pop("staged")
    if not staged.is_file() or sha256_file(staged) != result["sha256"]:
        raise PrintpipeError(
            f"{staged} is missing or differs from what the worker wrote: do the workers write "
            "to the same shared folder? (else use --collect)"
        )
    intact.pass_through()
    promote(staged, path)
    return result


def _file_entries(
    specs: list[ChunkSpec],
    done: set[str],
    rendered: Iterator[dict[str, Any]],
    out_dir: Path,
    store: BlockStore,
    game_number: int,
    template: Template,
    settings: ExportSettings,
) -> list[dict[str, Any]]:
    """job.json's file list in block order, built as the rendered chunks come in."""
    entries = []
    for spec in specs:
        sha256 = next(rendered)["sha256"] if spec.file_name in done else None
        entries.append(_file_entry(out_dir, spec, store, game_number, template, settings, sha256))
    for _ in rendered:  # runs the engine's orderly close
        raise RuntimeError("more rendered chunks than chunks")
    return entries


def job_date(recorded: int | None = None, approval: Approval | None = None) -> int:
    """The date every file of a job carries (seconds, UTC): ``SOURCE_DATE_EPOCH`` when set
    (reproducible builds), else the date its proof was approved, else the date recorded when
    the job began, else now (then recorded)."""
    text = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if text:
        if not text.isdigit():
            raise PrintpipeError(f"SOURCE_DATE_EPOCH must be whole seconds, got {text!r}")
        return int(text)
    if approval is not None:
        return approval.approved_at
    return recorded if recorded is not None else int(time.time())


class _Background:
    """``fn()`` on a daemon thread of the coordinator; :meth:`result` waits for it and returns
    its value or raises its error."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self._value = fn()
        except BaseException as exc:  # handed to whoever waits for the result
            self._error = exc

    def wait(self) -> BaseException | None:
        """Wait for the end; its error, if any."""
        self._thread.join()
        return self._error

    def result(self) -> Any:
        if self.wait() is not None:
            raise self._error  # type: ignore[misc]
        return self._value


class _IntactGate:
    """What every file of the run passes before it becomes final: the block store's columns
    proven intact (hashed on a thread from the start of the run), and, at the first passage,
    the folder opened for finished files (``open_folder``)."""

    def __init__(self, store: BlockStore, open_folder: Callable[[], None]) -> None:
        self._check = _Background(store.check_columns)
        self._open_folder = open_folder
        self._passed = False

    def pass_through(self) -> None:
        """Wait for the proof; raise the store's refusal if it fails."""
        if not self._passed:
            self._check.result()
            self._open_folder()
            self._passed = True

    def refusal(self) -> BaseException | None:
        """Why the store is refused, or None (waits for the check to end)."""
        error = self._check.wait()
        return error if isinstance(error, PrintpipeError) else None


@dataclass(frozen=True)
class _OutDir:
    """PRINT_DIR as a run claims it: its job's date, its marker, whether this run made it."""

    path: Path
    date: int
    marker: str
    created: bool
    lock: FolderLock

    def open_for_finished_files(self) -> None:
        """Before the run's first finished file: record the job in the marker, and remove a
        ``job.json`` of an earlier run (rewritten only when this one is complete)."""
        try:
            write_atomic(self.path / MARKER, self.marker)
            (self.path / JOB_FILE).unlink(missing_ok=True)
        except OSError as exc:
            raise PrintpipeError(f"cannot write to {self.path}: {exc.strerror}") from None

    def remove_if_unused(self) -> None:
        """A folder this run made and left empty (a refused run) is removed; the lock goes."""
        if self.created:
            with contextlib.suppress(OSError):  # it holds finished files, or it is gone
                self.path.rmdir()
        self.lock.release()


def _claim_out_dir(
    out_dir: Path,
    store: BlockStore,
    packs: PackRange,
    settings: ExportSettings,
    approval: Approval | None,
) -> _OutDir:
    """Create or reuse PRINT_DIR; refuse one holding another job; clear leftovers of a crash.

    The job's date: a resumed job keeps the date it began with, so its files keep their
    bytes.  Nothing is written in the folder yet (see :meth:`_OutDir.open_for_finished_files`).
    """
    job = {
        "block_summary_sha256": hashlib.sha256(store.summary_bytes).hexdigest(),
        "packs": str(packs),
        "settings": asdict(settings),
    }
    lock = FolderLock(out_dir, "export")  # before anything in the folder is read or removed
    try:
        created = not out_dir.exists()
        make_private_dir(out_dir)
        existing = _read_marker(out_dir / MARKER)
        recorded = existing.pop("date", None) if existing is not None else None
        if existing is not None and existing != json.loads(json.dumps(job)):
            raise PrintpipeError(
                f"{out_dir} holds the files of another export (other block, packs or settings): "
                "use an empty folder"
            )
        if existing is None and any(out_dir.glob("*.pdf")):
            raise PrintpipeError(f"{out_dir} already holds PDF files: use an empty folder")
        date = job_date(recorded if isinstance(recorded, int) else None, approval)
        remove_partials(out_dir)
    except BaseException as exc:
        lock.release()
        if isinstance(exc, OSError):
            raise PrintpipeError(f"cannot write to {out_dir}: {exc.strerror}") from None
        raise
    marker = json.dumps({**job, "date": date}, sort_keys=True)
    return _OutDir(out_dir, date, marker, created, lock)


def _read_marker(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        marker = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"unreadable": True}
    return marker if isinstance(marker, dict) else {"unreadable": True}


def _file_entry(
    out_dir: Path,
    job: ChunkSpec,
    store: BlockStore,
    game_number: int,
    template: Template,
    settings: ExportSettings,
    sha256: str | None,
) -> dict[str, Any]:
    """One file of job.json; ``sha256`` when known from this run (else read from disk)."""
    path = out_dir / job.file_name
    tickets = (job.last - job.first + 1) * store.pack_size
    sheets, _ = cut_and_stack(tickets, impose(template, *settings.sheet_mm).slots)
    first = TicketId(game_number, store.printed_pack(job.first), 0)
    last = TicketId(game_number, store.printed_pack(job.last), store.pack_size - 1)
    variant = int(store.read(PackRange(job.first, job.first)).variant[0])
    return {
        "path": job.file_name,
        "variant": load_game(store.game_id).definition.variants[variant],
        "sha256": sha256 or sha256_file(path),
        "bytes": path.stat().st_size,
        "pages": 2 * sheets,
        "kind": "variable" if settings.press is Press.CONVENTIONAL else "duplex",
        "sheets": sheets,
        "packs": {"first": job.first, "last": job.last},
        "tickets": tickets,
        "first_serial": first.serial,
        "last_serial": last.serial,
    }


def export_summary(job: dict[str, Any], out_dir: Path, seconds: float) -> str:
    """The one line ``printpipe export`` prints about a finished run (press files or feed)."""
    feed = job.get("output") == "feed"
    statics = sum(1 for entry in job["files"] if entry.get("kind") == "static")
    what = (
        f"the unit feed {job['files'][0]['path']}"
        if feed
        else f"{statics} static plate file(s) and {len(job['files']) - statics} PDF/VT imaging "
        "file(s)"
        if statics
        else f"{len(job['files'])} press PDF(s)"
    )
    things = "units" if feed else "tickets"
    packs = f"packs {job['packs']['first']} to {job['packs']['last']}"
    rendered = job.get(RENDERED, job["tickets"])
    if rendered == job["tickets"]:
        done = f"exported {job['tickets']:,} {things} ({packs}) to {what} in {out_dir}"
    elif rendered == 0:
        done = (
            f"nothing to render: the {job['tickets']:,} {things} ({packs}) were already in "
            f"{what} in {out_dir}"
        )
    else:
        done = (
            f"resumed: rendered {rendered:,} of the {job['tickets']:,} {things} ({packs}; the "
            f"rest were already there) to {what} in {out_dir}"
        )
    return f"{done} in {seconds:.1f} s; job.json and {job['manifest']} written" + (
        f"; {NOT_APPROVED}: no approved proof" if job.get("approval") == NOT_APPROVED else ""
    )
