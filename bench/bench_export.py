"""Export benchmark: tickets/s with 1 and 2 workers, peak RSS per worker, PDF bytes per ticket,
and the ratio to a minimal hand-written PDF writer drawing the same ticket in the same run.

    python bench/bench_export.py [--packs 200] [--repeat 3]

Then the cost of each layer of the press file (``docs/print-files.md``): the same 5,000-ticket
chunk rendered in process with everything, and with one layer taken out at a time (the bench
removes its operators; the product has no such switch), medians of ``--repeat`` runs.

The hand-written writer is the pure-Python ceiling: the same per-ticket work (the faces built
from the store's arrays, the same cached barcode operators, 11 symbol form placements, two
strings of digits, the front and back static forms placed by reference, Flate per page) with
none of reportlab's canvas.  The export's figure includes everything a run does (store check,
process pool, job.json, manifest), so the ratio is an upper bound on reportlab's overhead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from printpipe.block import PackRange  # noqa: E402
from printpipe.export import ChunkJob, export_block, render_chunk  # noqa: E402
from printpipe.games import game_template_dir, load_game  # noqa: E402
from printpipe.generate import generate_block  # noqa: E402
from printpipe.keys import init_keys, load_secrets, load_signing_key  # noqa: E402
from printpipe.render.barcodes import Code128Digits, InterleavedTwoOfFive  # noqa: E402
from printpipe.render.ticket import TicketFace, faces_of_packs  # noqa: E402
from printpipe.store import BlockStore  # noqa: E402


def hand_written_pdf(path: Path, faces: list[TicketFace], slots: int = 9) -> None:
    """A minimal PDF writer: same sheets, same per-ticket operators, Helvetica (not embedded)."""
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
                    ops.append(f"/front{face.variant} Do")
                    for j, s in enumerate(face.symbols):
                        ops.append(f"q 1 0 0 1 {20 + j * 15:.2f} {100:.2f} cm /s{s} Do Q")
                    ops.append("q 0 0 0 1 k 1 0 0 1 10 40 cm")
                    ops.append(code128.literal(face.validation_code) + "Q")
                    ops.append(f"BT /F1 6.5 Tf 20 30 Td ({face.validation_text}) Tj ET")
                else:
                    ops.append("/back Do q 0 0 0 1 k 1 0 0 1 10 40 cm")
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--packs", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one export in a fresh process, so RUSAGE_CHILDREN is this run's workers
        block, out, keys, approvals, workers = args.child.split(",")
        started = time.perf_counter()
        job = export_block(
            block_dir=Path(block),
            out_dir=Path(out),
            keys_dir=Path(keys),
            approvals_dir=Path(approvals),
            workers=int(workers),
            show_progress=False,
        )
        elapsed = time.perf_counter() - started
        child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        size = sum(f["bytes"] for f in job["files"])
        print(
            json.dumps(
                {"seconds": elapsed, "tickets": job["tickets"], "rss_mb": child_rss, "bytes": size}
            )
        )
        return
    game = load_game("chien-chat")
    with tempfile.TemporaryDirectory() as tmp_text:
        tmp = Path(tmp_text)
        init_keys(tmp / "keys")
        block = tmp / "block"
        generate_block(
            game,
            secrets=load_secrets(tmp / "keys"),
            signing_key=load_signing_key(tmp / "keys"),
            block=1,
            out=block,
            packs=PackRange(1, args.packs),
            show_progress=False,
        )
        approvals = _approve(tmp)
        store = BlockStore.open(block)
        tickets = store.read()
        sample = slice(0, min(len(tickets), 5000))
        rows: dict[str, list[float]] = {
            "1": [],
            "2": [],
            "ratio": [],
            "hand": [],
            "render": [],
            "render_ratio": [],
        }
        chunk = _first_chunk(block, tmp / "render-only")
        rss: dict[str, float] = {"1": 0.0, "2": 0.0}
        per_ticket = 0.0
        for run in range(args.repeat):
            for workers in ("1", "2"):
                out = tmp / f"print-{run}-{workers}"
                text = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        f"{block},{out},{tmp / 'keys'},{approvals},{workers}",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                result = json.loads(text)
                rows[workers].append(result["tickets"] / result["seconds"])
                rss[workers] = max(rss[workers], result["rss_mb"])
                per_ticket = result["bytes"] / result["tickets"]
            started = time.perf_counter()  # faces included: the export builds them too
            faces = faces_of_packs(
                412, 1, 125, tickets.variant[sample], tickets.symbols[sample], tickets.virn[sample]
            )
            hand_written_pdf(tmp / "hand.pdf", faces)
            hand_rate = len(faces) / (time.perf_counter() - started)
            rows["hand"].append(hand_rate)
            rows["ratio"].append(hand_rate / rows["1"][-1])
            started = time.perf_counter()  # the same 5,000 tickets through the press renderer
            render_chunk(chunk)
            render_rate = len(faces) / (time.perf_counter() - started)
            rows["render"].append(render_rate)
            rows["render_ratio"].append(hand_rate / render_rate)
        costs = layer_costs(chunk, args.repeat)
    print(f"tickets exported per run: {args.packs * 125:,} (front + back, both barcodes)")
    print(f"1 worker : {statistics.median(rows['1']):8,.0f} tickets/s (median of {args.repeat})")
    print(f"2 workers: {statistics.median(rows['2']):8,.0f} tickets/s")
    print(f"peak RSS per worker: {max(rss.values()):.0f} MB")
    print(f"PDF bytes per ticket: {per_ticket:,.0f}")
    print(
        f"render only (1 chunk of 5,000 tickets, in process): "
        f"{statistics.median(rows['render']):8,.0f} tickets/s"
    )
    print(
        f"hand-written writer: {statistics.median(rows['hand']):8,.0f} tickets/s, "
        f"{statistics.median(rows['render_ratio']):.2f}x the render of the same tickets, "
        f"{statistics.median(rows['ratio']):.2f}x the whole export run with 1 worker"
    )
    base = costs.pop("everything")
    print(f"cost of each layer (render of 5,000 tickets in process, {base:,.0f} tickets/s in all):")
    for name, rate in costs.items():
        print(
            f"  {name:<50} costs {100 * (rate / base - 1):+5.1f} % ({rate:,.0f} tickets/s without)"
        )


def _approve(tmp: Path) -> Path:
    """The lottery's approval of a proof of the default inputs, as a press run needs."""
    from printpipe.approval import approve_proof
    from printpipe.keys import LOTTERY_SIGNING_KEY
    from printpipe.proof import make_proof

    make_proof(game_id="chien-chat", out_dir=tmp / "proof")
    key = load_signing_key(tmp / "keys", LOTTERY_SIGNING_KEY)
    approve_proof(tmp / "proof", signing_key=key, approvals_dir=tmp / "approvals")
    return tmp / "approvals"


def layer_costs(chunk: ChunkJob, repeat: int) -> dict[str, float]:
    """Render rate of ``chunk`` with everything, and without each layer in turn."""
    from dataclasses import replace
    from unittest import mock

    from printpipe.render import canvas, pdfx, sheet, ticket
    from printpipe.render.template import Coating

    def no_blocking(self: ticket.TicketRenderer) -> None:
        declare(self)
        self._blocking_ops = ""

    def process_black(self: ticket.TicketRenderer) -> None:
        declare(self)
        self._variable_on = "0 0 0 1 k 0 0 0 1 K\n"

    declare = ticket.TicketRenderer._declare_page
    without: dict[str, tuple[contextlib.AbstractContextManager[object], ...]] = {
        "everything": (),
        "coating and decoration (ScratchOff, ScratchDecor)": (),
        "blocking layer (Blocking)": (
            mock.patch.object(ticket.TicketRenderer, "_declare_page", no_blocking),
        ),
        "variable imaging on its own plate (vs process K)": (
            mock.patch.object(ticket.TicketRenderer, "_declare_page", process_black),
        ),
        "colour bar": (mock.patch.object(sheet, "_colour_bar", lambda c, right, bottom: ""),),
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
            patches = without[name]
            job = chunk
            if name.startswith("coating"):
                job = replace(chunk, settings=replace(chunk.settings, coating=Coating.NONE))
            with contextlib.ExitStack() as stack:
                for patch in patches:
                    stack.enter_context(patch)
                started = time.perf_counter()
                render_chunk(job)
                rates[name].append(tickets / (time.perf_counter() - started))
    return {name: statistics.median(values) for name, values in rates.items()}


def _first_chunk(block: Path, out: Path) -> ChunkJob:
    """The first 40 packs of the block as the export's own work unit, for a render-only time."""
    from printpipe.export import ExportSettings, _chunk_job, chunk_specs, job_date
    from printpipe.render.imposition import SRA3
    from printpipe.render.pdfx import FOGRA39
    from printpipe.render.template import Coating, load_template

    store = BlockStore.open(block)
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    settings = ExportSettings(
        SRA3.name, SRA3.size_mm, template.name, template.sha256, 40, Coating.PLATE
    )
    out.mkdir()
    spec = chunk_specs(store, PackRange(1, 40), 40)[0]
    return _chunk_job(store, spec, str(out), template, settings, job_date(), FOGRA39)


if __name__ == "__main__":
    main()
