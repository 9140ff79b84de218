"""Export benchmark: tickets/s with 1 and 2 workers, peak RSS per worker, PDF bytes per ticket,
and the ratio to a minimal hand-written PDF writer drawing the same tickets in the same run,
for both press models (``--press digital``: composite files; ``conventional``: the static
files and the PDF/VT imaging files).

    python bench/bench_export.py [--packs 200] [--repeat 3] [--store-packs 12000]
                                 [--baseline DIR] [--no-layers] [--whole-block]
                                 [--output-intent FILE.icc]

``--whole-block``: then one export of the whole store per model of this checkout (not the
baseline's) with 2 workers, its wall time,
its CPU time (workers and coordinator) and the conventional model's CPU over the digital's
(a checkout from before the press models measures the digital model only).  Every run embeds
the same ICC output profile (``--output-intent``, default Debian Ghostscript's CMYK profile):
a conventional run's PDF/VT-1 imaging files must, and the digital model carries it too, so
that the two models' files differ only by what the models do.

The run is what ``printpipe run`` exports: ``--packs`` packs (25,000 tickets) of a block store
of ``--store-packs`` packs (default the whole block: the store check hashes every column of
it).  Every figure is taken in a fresh process, the configurations interleaved repetition by
repetition, medians printed.  With ``--baseline DIR`` (a checkout of another commit, from
9a793ff on, e.g. ``git worktree add /tmp/base main``), the same measurements run that
checkout's code in the same repetitions, against the same store: on a shared machine, compare
the two columns and the ratios, not figures from different runs.

- whole run: one ``export_block`` call (store check, process pool, the PDFs, the manifest,
  ``job.json``) in a fresh process; peak RSS per worker is its children's maximum.
- render only: the first 40 packs (5,000 tickets, one chunk) through ``render_chunk`` in one
  process, after a first render (fonts, imports); the hand-written writer draws the same
  tickets in the same process just before, so ``writer / render`` is measured in one process.
- the hand-written writer is the pure-Python ceiling: the same per-ticket work (the faces
  built from the store's arrays, the same cached barcode operators, 11 symbol form
  placements, two strings of digits, the front and back static forms placed by reference,
  Flate per page) with none of reportlab's canvas, fonts, marks or layers.

Then (this checkout only, unless ``--no-layers``) the cost of each layer of the press file
(``docs/print-files.md``): the same chunk rendered with everything, and with one layer taken
out at a time (the bench removes its operators; the product has no such switch).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
CODE_ENV = "PRINTPIPE_BENCH_CODE"
"""Set in a child's environment: the checkout whose printpipe it measures."""
sys.path.insert(0, os.environ.get(CODE_ENV, str(ROOT)))

from printpipe.block import PackRange  # noqa: E402
from printpipe.games import game_template_dir, load_game  # noqa: E402
from printpipe.render.barcodes import Code128Digits, InterleavedTwoOfFive  # noqa: E402
from printpipe.render.ticket import TicketFace, faces_of_packs  # noqa: E402

if TYPE_CHECKING:
    from printpipe.press.export import ChunkJob


def _module(name: str, before_the_wings: str) -> ModuleType:
    """A module of the measured checkout; a ``--baseline`` from before the printer's side moved
    into wings (``printpipe/press/``, ``printpipe/handover/``) has it at the package's top."""
    code = Path(os.environ.get(CODE_ENV, str(ROOT)))
    return import_module(name if (code / "printpipe" / "press").is_dir() else before_the_wings)


EXPORT = _module("printpipe.press.export", "printpipe.export")
export_block = EXPORT.export_block
render_chunk = EXPORT.render_chunk
BlockStore = _module("printpipe.block.store", "printpipe.store").BlockStore

SAMPLE_PACKS = 40
"""The render-only chunk: the export's default chunk, 5,000 tickets."""


def hand_written_pdf(
    path: Path, faces: list[TicketFace], slots: int = 9, *, static: bool = True
) -> None:
    """A minimal PDF writer: same sheets, same per-ticket operators, Helvetica (not embedded);
    without ``static``, the imaging alone (no static form placed)."""
    code128 = Code128Digits(25, 0.25, 8)
    itf = InterleavedTwoOfFive(14, 0.3, 12)
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    forms = {}
    for name in ["front0", "front1", "back", *[f"s{i}" for i in range(19)]]:
        stream = b"0 0 0 0.2 k 0 0 20 20 re f"
        forms[name] = add(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 216 360] /Length %d >>\n"
            b"stream\n%s\nendstream" % (len(stream), stream)
        )
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    xobjects = b" ".join(b"/%s %d 0 R" % (n.encode(), i) for n, i in forms.items())
    resources = add(b"<< /Font << /F1 %d 0 R >> /XObject << %s >> >>" % (font, xobjects))
    pages_id = len(objects) + 1 + 0  # reserved below
    objects.append(b"")  # placeholder for /Pages
    kids = []
    for start in range(0, len(faces), slots):
        for side in ("front", "back"):
            ops = []
            for k, face in enumerate(faces[start : start + slots]):
                x, y = 30 + (k % 3) * 250, 30 + (k // 3) * 400
                ops.append(f"q 1 0 0 1 {x:.2f} {y:.2f} cm")
                if side == "front":
                    if static:
                        ops.append(f"/front{face.variant} Do")
                    for j, s in enumerate(face.symbols):
                        ops.append(f"q 1 0 0 1 {20 + j * 15:.2f} {100:.2f} cm /s{s} Do Q")
                    ops.append("q 0 0 0 1 k 1 0 0 1 10 40 cm")
                    ops.append(code128.literal(face.validation_code) + "Q")
                    ops.append(f"BT /F1 6.5 Tf 20 30 Td ({face.validation_text}) Tj ET")
                else:
                    ops.append(("/back Do " if static else "") + "q 0 0 0 1 k 1 0 0 1 10 40 cm")
                    ops.append(itf.literal(face.inventory_code) + "Q")
                    ops.append(f"BT /F1 8 Tf 20 30 Td ({face.serial}) Tj ET")
                ops.append("Q")
            data = zlib.compress("\n".join(ops).encode())
            content = add(
                b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
            )
            kids.append(
                add(
                    b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 907 1276] /Resources %d 0 R "
                    b"/Contents %d 0 R >>" % (pages_id, resources, content)
                )
            )
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        catalog,
        xref,
    )
    path.write_bytes(bytes(out))


# -- the children: one measurement each, in a fresh process ------------------------------------


def _press(press: str) -> dict[str, Any]:
    """The export's press keyword: none for the digital model (a checkout from before the
    press models knows no such keyword)."""
    if press == "digital":
        return {}
    from printpipe.render.imposition import Press  # type: ignore[attr-defined,unused-ignore]

    return {"press": Press(press)}


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def child_export(
    block: Path, out: Path, keys: Path, approvals: Path, workers: int, packs: int, press: str,
    profile: Path,
) -> dict[str, Any]:  # fmt: skip
    started = time.perf_counter()
    cpu = _cpu(resource.RUSAGE_SELF)
    job = export_block(
        block_dir=block,
        out_dir=out,
        keys_dir=keys,
        approvals_dir=approvals,
        packs=PackRange(1, packs),
        workers=workers,
        show_progress=False,
        output_intent=profile,
        **_press(press),
    )
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "cpu_seconds": _cpu(resource.RUSAGE_SELF) - cpu + _cpu(resource.RUSAGE_CHILDREN),
        "tickets": job["tickets"],
        "worker_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "coordinator_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "bytes": sum(f["bytes"] for f in job["files"]),
    }


def child_render(block: Path, work: Path, press: str, profile: Path) -> dict[str, float]:
    """The hand-written writer, then the press renderer, on the same 5,000 tickets."""
    chunk = first_chunk(block, work / "render", press, profile)
    render_chunk(chunk)  # the process's first render: imports, fonts
    tickets = chunk.tickets
    started = time.perf_counter()  # faces included: the export builds them too
    faces = faces_of_packs(412, 1, 125, tickets.variant, tickets.symbols, tickets.virn)
    hand_written_pdf(work / "hand.pdf", faces, static=press == "digital")
    hand = len(faces) / (time.perf_counter() - started)
    started = time.perf_counter()
    render_chunk(chunk)
    render = len(faces) / (time.perf_counter() - started)
    return {"hand": hand, "render": render}


def child_approve(work: Path) -> dict[str, str]:
    """The lottery's approval of a proof of the default inputs, as a press run needs."""
    from printpipe.keys import LOTTERY_SIGNING_KEY, load_signing_key
    from printpipe.proof import make_proof

    approval = _module("printpipe.handover.approval", "printpipe.approval")
    make_proof(game_id="chien-chat", out_dir=work / "proof")
    key = load_signing_key(work.parent / "keys", LOTTERY_SIGNING_KEY)
    approval.approve_proof(work / "proof", signing_key=key, approvals_dir=work / "approvals")
    return {"approvals": str(work / "approvals")}


def first_chunk(
    block: Path, out: Path, press: str = "digital", profile: Path | None = None
) -> ChunkJob:
    """The first 40 packs of the block as the export's own work unit, for a render-only time."""
    from printpipe.render.imposition import SRA3
    from printpipe.render.pdfx import FOGRA39, icc_output_intent
    from printpipe.render.template import Coating, load_template

    store = BlockStore.open(block)
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    settings = EXPORT.ExportSettings(
        SRA3.name, SRA3.size_mm, template.name, template.sha256, SAMPLE_PACKS, Coating.PLATE,
        **_press(press),
    )  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    name = EXPORT.chunk_file_name(store.game_id, store.block, 1, SAMPLE_PACKS)
    spec = EXPORT.ChunkSpec(name, 1, SAMPLE_PACKS)
    intent = icc_output_intent(profile) if profile is not None else FOGRA39
    job: ChunkJob = EXPORT._chunk_job(
        store, spec, str(out), template, settings, EXPORT.job_date(), intent
    )
    return job


def _child(code: Path, *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        env={**os.environ, CODE_ENV: str(code)},
    )
    if result.returncode:
        raise SystemExit(f"bench child {args[0]} of {code} failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# -- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store-packs", type=int, default=None, help="default: the whole block")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to compare")
    parser.add_argument("--no-layers", action="store_true", help="skip the cost of each layer")
    parser.add_argument(
        "--whole-block", action="store_true", help="then export the whole store in each model"
    )
    parser.add_argument(
        "--output-intent",
        type=Path,
        default=Path("/usr/share/color/icc/ghostscript/default_cmyk.icc"),
        help="the CMYK output profile every run embeds (default: Debian Ghostscript's)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "export":
            block, out, keys, approvals, workers, packs, press, profile = rest
            result = child_export(
                Path(block), Path(out), Path(keys), Path(approvals), int(workers), int(packs),
                press, Path(profile),
            )  # fmt: skip
        elif kind == "render":
            result = child_render(Path(rest[0]), Path(rest[1]), rest[2], Path(rest[3]))
        else:
            result = child_approve(Path(rest[0]))
        print(json.dumps(result))
        return

    codes = {"digital": (ROOT, "digital"), "conventional": (ROOT, "conventional")}
    profile = str(args.output_intent.resolve())
    if args.baseline is not None:
        codes["baseline (digital)"] = (args.baseline.resolve(), "digital")
    game = load_game("chien-chat")
    store_packs = args.store_packs or game.definition.block.packs
    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        block = _make_block(tmp, store_packs)
        approvals = {
            name: Path(_child(code, "approve", str(tmp / f"code-{i}"))["approvals"])
            for i, (name, (code, _)) in enumerate(codes.items())
        }
        runs: dict[str, list[dict[Any, Any]]] = {name: [] for name in codes}
        for repeat in range(args.repeat):
            for i, (name, (code, press)) in enumerate(codes.items()):
                row: dict[Any, Any] = {}
                for workers in (1, 2):
                    out = tmp / f"print-{i}-{repeat}-{workers}"
                    row[workers] = _child(
                        code, "export", str(block), str(out), str(tmp / "keys"),
                        str(approvals[name]), str(workers), str(args.packs), press, profile,
                    )  # fmt: skip
                    shutil.rmtree(out)
                row["render"] = _child(
                    code, "render", str(block), str(tmp / f"render-{i}"), press, profile
                )
                runs[name].append(row)
        _report(runs, args.packs, store_packs * game.definition.block.pack_size, args.repeat)
        if args.whole_block:
            print(f"whole store ({store_packs:,} packs), 2 workers, one run each:")
            cpu: dict[str, float] = {}
            for i, (name, (code, press)) in enumerate(codes.items()):
                if name.startswith("baseline"):
                    continue  # the two models of this checkout: a whole block is long
                out = tmp / f"whole-{i}"
                whole = _child(
                    code, "export", str(block), str(out), str(tmp / "keys"),
                    str(approvals[name]), "2", str(store_packs), press, profile,
                )  # fmt: skip
                rate = whole["tickets"] / whole["seconds"]
                cpu[name] = whole["cpu_seconds"]
                print(
                    f"  {name:<20} {whole['seconds']:7.1f} s, {whole['cpu_seconds']:7.1f} s of "
                    f"CPU, {rate:,.0f} tickets/s, {whole['bytes'] / 1e6:,.0f} MB, peak RSS per "
                    f"worker {whole['worker_rss_mb']:.0f} MB"
                )
                shutil.rmtree(out)
            if "digital" in cpu and "conventional" in cpu:
                ratio = cpu["conventional"] / cpu["digital"]
                print(f"  conventional / digital, CPU of the whole block: {ratio:.2f} x")
        if not args.no_layers:
            chunk = first_chunk(block, tmp / "layers")
            render_chunk(chunk)
            _report_layers(layer_costs(chunk, args.repeat))


def _make_block(tmp: Path, packs: int) -> Path:
    from printpipe.generation import generate_block
    from printpipe.keys import init_keys, load_secrets, load_signing_key

    init_keys(tmp / "keys")
    generate_block(
        load_game("chien-chat"),
        secrets=load_secrets(tmp / "keys"),
        signing_key=load_signing_key(tmp / "keys"),
        block=1,
        out=tmp / "block",
        packs=PackRange(1, packs),
        show_progress=False,
    )
    return tmp / "block"


def _report(runs: dict[str, list[dict[Any, Any]]], packs: int, store: int, repeat: int) -> None:
    tickets = packs * 125
    print(
        f"{tickets:,} tickets (packs 1 to {packs}) of a block store of {store:,}; median of "
        f"{repeat}, each figure a fresh process, the checkouts interleaved"
    )
    names = list(runs)
    figures: dict[str, list[str]] = {}

    def median(name: str, value: Any) -> float:
        return statistics.median(value(row) for row in runs[name])

    rows = {
        "CPU of the whole run, 1 worker (s)": lambda r: r[1]["cpu_seconds"],
        "CPU of the whole run, 2 workers (s)": lambda r: r[2]["cpu_seconds"],
        "whole run, 1 worker (tickets/s)": lambda r: r[1]["tickets"] / r[1]["seconds"],
        "whole run, 2 workers (tickets/s)": lambda r: r[2]["tickets"] / r[2]["seconds"],
        "render only, 5,000 tickets (tickets/s)": lambda r: r["render"]["render"],
        "hand-written writer (tickets/s)": lambda r: r["render"]["hand"],
        "writer / render, same process": lambda r: r["render"]["hand"] / r["render"]["render"],
        "writer / whole run, 1 worker": lambda r: (
            r["render"]["hand"] / (r[1]["tickets"] / r[1]["seconds"])
        ),
        "peak RSS per worker (MB)": lambda r: max(r[w]["worker_rss_mb"] for w in (1, 2)),
        "coordinator peak RSS (MB)": lambda r: max(r[w]["coordinator_rss_mb"] for w in (1, 2)),
        "PDF bytes per ticket": lambda r: r[1]["bytes"] / r[1]["tickets"],
    }
    for label, value in rows.items():
        figures[label] = []
        for name in names:
            m = median(name, value)
            figures[label].append(
                f"{m:.2f} x"
                if label.startswith("writer /")
                else f"{m:,.1f}"
                if label.startswith("CPU")
                else f"{m:,.0f}"
            )
    width = max(len(label) for label in figures)
    print(" " * width + "".join(f"  {name:>24}" for name in names))
    for label, cells in figures.items():
        print(f"{label:<{width}}" + "".join(f"  {cell:>24}" for cell in cells))
    for label, value in list(rows.items())[:5]:
        if "digital" in runs and "conventional" in runs:
            ratio = median("conventional", value) / median("digital", value)
            print(f"  conventional / digital, {label}: {ratio:.2f} x")
        base = next((name for name in names if name.startswith("baseline")), None)
        if base is not None and "digital" in runs:
            ratio = median("digital", value) / median(base, value)
            print(f"  digital / baseline, {label}: {ratio:.2f} x")
    for name in names:
        each = ", ".join(
            f"{r['render']['hand'] / (r[1]['tickets'] / r[1]['seconds']):.2f}" for r in runs[name]
        )
        renders = ", ".join(
            f"{r['render']['hand'] / r['render']['render']:.2f}" for r in runs[name]
        )
        print(f"  {name}: writer / whole run {each}; writer / render {renders}")


def layer_costs(chunk: ChunkJob, repeat: int) -> dict[str, float]:
    """Render rate of ``chunk`` with everything, and without each layer in turn."""
    from dataclasses import replace
    from unittest import mock

    from printpipe.render import canvas, pdfx, sheet, ticket
    from printpipe.render.template import Coating

    def process_black(self: ticket.TicketRenderer, overprint: str) -> list[str]:
        return ["q 0 0 0 1 k 0 0 0 1 K\n", *self._variable, "Q\n"]

    without: dict[str, tuple[contextlib.AbstractContextManager[object], ...]] = {
        "everything": (),
        "coating and decoration (ScratchOff, ScratchDecor)": (),
        "blocking layer (Blocking)": (
            mock.patch.object(ticket.TicketRenderer, "_blocking_layer", lambda self, o: []),
        ),
        "variable imaging on its own plate (vs process K)": (
            mock.patch.object(ticket.TicketRenderer, "_variable_layer", process_black),
        ),
        "control strip": (mock.patch.object(sheet, "control_strip", lambda imposition, t: []),),
        "PDF/X-1a (Info, output intent)": (
            mock.patch.object(pdfx, "apply", lambda doc, identity: None),
        ),
        "unique subset tags": (
            mock.patch.object(canvas.PressCanvas, "_tag_subsets_last", lambda self: None),
        ),
    }
    rates: dict[str, list[float]] = {name: [] for name in without}
    tickets = len(chunk.tickets)
    names = list(without)
    for turn in range(repeat):  # each round in another order: no layer always runs first
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            job = chunk
            if name.startswith("coating"):
                job = replace(chunk, settings=replace(chunk.settings, coating=Coating.NONE))
            with contextlib.ExitStack() as stack:
                for patch in without[name]:
                    stack.enter_context(patch)
                started = time.perf_counter()
                render_chunk(job)
                rates[name].append(tickets / (time.perf_counter() - started))
    return {name: statistics.median(values) for name, values in rates.items()}


def _report_layers(costs: dict[str, float]) -> None:
    base = costs.pop("everything")
    print(f"cost of each layer (render of 5,000 tickets in process, {base:,.0f} tickets/s in all):")
    for name, rate in costs.items():
        print(
            f"  {name:<50} costs {100 * (rate / base - 1):+5.1f} % ({rate:,.0f} tickets/s without)"
        )


if __name__ == "__main__":
    main()
