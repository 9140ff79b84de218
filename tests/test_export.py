"""The print export: barcodes decode and match the block, PDF structure, resume after kill -9,
reproducibility, and one-line errors on bad input.  Small pack ranges keep it fast."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pikepdf
import pypdfium2
import pytest
import zxingcpp

from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.games import game_template_dir
from printpipe.ids import TicketId
from printpipe.press import export_block
from printpipe.render.imposition import cut_and_stack, impose, parse_sheet
from printpipe.render.template import load_template
from tests.conftest import as_from_a_shell, generate_store, kill_group, run_cli, wait_for_files

TEMPLATES = game_template_dir("chien-chat")


@pytest.fixture(scope="module")
def small_block(tmp_path_factory, game, keys_dir) -> Path:
    """Packs 1 to 8 of block 1 (1,000 tickets)."""
    out = tmp_path_factory.mktemp("export-block") / "block"
    return generate_store(game, keys_dir, out, PackRange(1, 8))


LONG_PACKS = 16
"""Packs of the runs stopped midway, a one-pack chunk each: the kill and the Ctrl-C land once
the first press files are written (the run's own progress, not a time), with the stopped
process held (SIGSTOP) or killed at once, so 16 leave many chunks to do (32 took twice as
long for the same proof)."""


@pytest.fixture(scope="module")
def long_block(tmp_path_factory, game, keys_dir) -> Path:
    """Packs 1 to :data:`LONG_PACKS` of block 1, for runs stopped midway."""
    out = tmp_path_factory.mktemp("export-long-block") / "block"
    return generate_store(game, keys_dir, out, PackRange(1, LONG_PACKS))


@pytest.fixture(scope="module")
def revealed(tmp_path_factory, small_block, keys_dir, approvals_dir) -> Path:
    """Packs 1 to 4, coating off (what a scratched ticket shows), 2 files of 2 packs."""
    out = tmp_path_factory.mktemp("export-revealed") / "print"
    run_cli(
        "export",
        str(small_block),
        "--out",
        str(out),
        "--packs",
        "1:4",
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "--coating",
        "none",
        "--chunk-packs",
        "2",
        "--workers",
        "2",
        "-q",
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def press(tmp_path_factory, small_block, keys_dir, approvals_dir) -> Path:
    out = tmp_path_factory.mktemp("export-press") / "print"
    run_cli(
        "export",
        str(small_block),
        "--out",
        str(out),
        "--packs",
        "1:2",
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "-q",
        check=True,
    )
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _expected(store: BlockStore, first: int, last: int) -> list[tuple[str, str]]:
    """(inventory code, validation code) of every ticket of block packs first..last, in order."""
    tickets = store.read(PackRange(first, last))
    out = []
    for i in range(len(tickets)):
        ticket_id = TicketId(412, first + i // 125, i % 125)
        out.append((ticket_id.inventory_code, ticket_id.validation_code(int(tickets.virn[i]))))
    return out


def _slot_at(imposition, places, x_px: float, y_px: float, scale: float, height_pt: float, t):
    for k, (x, y) in enumerate(places):
        left, top = x * scale, (height_pt - y - t.height * 72 / 25.4) * scale
        right, bottom = left + t.width * 72 / 25.4 * scale, top + t.height * 72 / 25.4 * scale
        if left <= x_px <= right and top <= y_px <= bottom:
            return k
    raise AssertionError(f"barcode at {x_px}, {y_px} is in no slot")


BARCODE_FORMATS = (zxingcpp.BarcodeFormat.ITF, zxingcpp.BarcodeFormat.Code128)
BARCODE_DPI = 300
"""The reader's resolution: the Code 128's 0.2 mm bar is 2.4 pixels at it (at least 2 read)."""


def _read_barcodes(image) -> list:
    # zxing-cpp 3 takes a tuple of formats; its stubs still say BarcodeFormats.  The codes print
    # upright, so the reader is not asked to try them turned (a third of its time): that can
    # only make a code harder to read, never one easier.
    return zxingcpp.read_barcodes(
        image,
        formats=BARCODE_FORMATS,  # type: ignore[arg-type]
        try_rotate=False,
    )


def _barcode_zone(template, front: bool, place: tuple[float, float]) -> tuple[float, ...]:
    """The zone of a slot's barcode (front: the validation scratch zone, back: the inventory
    zone), 1 mm more each side, as ``left, bottom, right, top`` in the page's points."""
    x, y, w, h = template.box(template.validation_scratch if front else template.back["inventory"])
    pad = 72 / 25.4
    return place[0] + x - pad, place[1] + y - pad, place[0] + x + w + pad, place[1] + y + h + pad


def _assert_whole_page_reads_its_slots(page, imposition, template, slots, front: bool) -> None:
    """The whole page read at once: one barcode a filled slot, each in its slot, none else."""
    scale = BARCODE_DPI / 72
    results = _read_barcodes(page.render(scale=scale, grayscale=True).to_pil())
    places = imposition.front if front else imposition.back
    assert len(results) == sum(1 for i in slots if i >= 0)
    filled = set()
    for result in results:
        p = result.position
        cx, cy = (p.top_left.x + p.bottom_right.x) / 2, (p.top_left.y + p.bottom_right.y) / 2
        k = _slot_at(imposition, places, cx, cy, scale, page.get_height(), template)
        assert slots[k] >= 0 and k not in filled
        filled.add(k)


def test_every_barcode_decodes_and_matches_its_ticket(revealed, small_block):
    """Each slot's barcode zone, rendered alone at 300 dpi (all of every page was 3 times as
    long), holds the one barcode of its ticket, and an empty slot none; each file's first sheet
    is also read whole: no barcode anywhere else."""
    store = BlockStore.open(small_block)
    job = json.loads((revealed / "job.json").read_text())
    template = load_template(TEMPLATES / "ticket.toml")
    imposition = impose(template, *parse_sheet("SRA3"))
    scale = BARCODE_DPI / 72
    seen_inventory, seen_validation = [], []
    for entry in job["files"]:
        expected = _expected(store, entry["packs"]["first"], entry["packs"]["last"])
        sheets, order = cut_and_stack(len(expected), imposition.slots)
        pdf = pypdfium2.PdfDocument(revealed / entry["path"])
        assert len(pdf) == entry["pages"] == 2 * sheets
        for page_index in range(len(pdf)):
            page = pdf[page_index]
            width_pt, height_pt = page.get_size()
            sheet, side = divmod(page_index, 2)
            front = side == 0
            slots = order[sheet]
            if sheet == 0:
                _assert_whole_page_reads_its_slots(page, imposition, template, slots, front)
            places = imposition.front if front else imposition.back
            for k, place in enumerate(places):
                left, bottom, right, top = _barcode_zone(template, front, place)
                crop = (left, bottom, width_pt - right, height_pt - top)
                image = page.render(scale=scale, grayscale=True, crop=crop).to_pil()
                results = _read_barcodes(image)
                if slots[k] < 0:
                    assert results == [], (page_index, k)
                    continue
                assert len(results) == 1, (page_index, k, results)
                (result,) = results
                inventory, validation = expected[slots[k]]
                if front:
                    assert result.format == zxingcpp.BarcodeFormat.Code128
                    assert result.text == validation
                    seen_validation.append(result.text)
                else:
                    assert result.format == zxingcpp.BarcodeFormat.ITF
                    assert result.symbology_identifier == "]I1"  # valid mod-10 check
                    assert result.text == inventory
                    seen_inventory.append(result.text)
    wanted = _expected(store, 1, 4)
    assert len(seen_inventory) == len(set(seen_inventory)) == 4 * 125
    assert sorted(seen_inventory) == sorted(i for i, _ in wanted)
    assert sorted(seen_validation) == sorted(v for _, v in wanted)


def test_no_validation_barcode_reads_through_the_coating(press):
    """The press fronts at 300 dpi: the coating hides every Code 128; the backs' ITF reads."""
    job = json.loads((press / "job.json").read_text())
    pdf = pypdfium2.PdfDocument(press / job["files"][0]["path"])
    try:
        for index in (0, 1, 2, 3):
            image = pdf[index].render(scale=300 / 72, grayscale=True).to_pil()
            formats = (zxingcpp.BarcodeFormat.ITF, zxingcpp.BarcodeFormat.Code128)
            found = zxingcpp.read_barcodes(image, formats=formats)  # type: ignore[arg-type]
            if index % 2 == 0:
                assert found == [], "a validation code reads through the coating"
            else:
                assert len(found) == 9 and {r.format for r in found} == {zxingcpp.BarcodeFormat.ITF}
    finally:
        pdf.close()


def _objects(data: bytes) -> list[bytes]:
    return re.findall(rb"\d+ 0 obj\r?\n(.*?)endobj", data, re.S)


def test_pdf_structure(press):
    job = json.loads((press / "job.json").read_text())
    assert (press / job["manifest"]).is_file()
    for entry in job["files"]:
        data = (press / entry["path"]).read_bytes()
        assert _sha(press / entry["path"]) == entry["sha256"]
        objects = _objects(data)
        pages = [o for o in objects if re.search(rb"/Type /Page\b(?!s)", o)]
        assert len(pages) == entry["pages"]
        spots = {
            name: {
                n
                for n, _ in re.findall(
                    rb"(\d+) 0 obj\r?\n(\[ /Separation /%s .*?)endobj" % name, data, re.S
                )
            }
            for name in (b"All", b"Blocking", b"Variable", b"ScratchOff", b"ScratchDecor")
        }
        assert all(spots.values()), f"missing separations: {spots}"
        for page in pages:
            assert b"/TrimBox" in page and b"/BleedBox" in page
        with pikepdf.open(press / entry["path"]) as pdf:
            for sheet in pdf.pages:  # the control strip has a patch of every ink
                owners = [sheet.obj] + [
                    form
                    for name, form in sheet.Resources.XObject.items()
                    if name.startswith("/FormXob.sheet-")
                ]
                inks = {
                    str(space[1])[1:]
                    for owner in owners
                    for space in owner.Resources.get("/ColorSpace", {}).values()
                }
                assert {name.decode() for name in spots} <= inks, inks
        descriptors = [o for o in objects if b"/Type /FontDescriptor" in o]
        assert descriptors and all(b"/FontFile2" in d for d in descriptors)
        assert not re.search(rb"/BaseFont /(Helvetica|Times|Courier)", data)
        assert b"/DeviceRGB" not in data
        for stream in re.findall(rb"stream\r?\n(.*?)\r?\nendstream", data, re.S):
            try:
                content = zlib.decompress(stream)
            except zlib.error:
                continue
            if b" re" in content or b" Tf" in content:
                assert not re.search(rb"\s(rg|RG)\s", content), "an RGB colour"


def test_layers_above_the_artwork_overprint(press):
    """Blocking, variable imaging, coating and decoration are drawn with fill and stroke
    overprint on (op, OP) so that none erases another on its plate (the plates test sees it)."""
    data = (press / json.loads((press / "job.json").read_text())["files"][0]["path"]).read_bytes()
    assert re.search(rb"/op true", data) and re.search(rb"/OP true", data)


def test_job_json_lists_every_ticket_once(press):
    job = json.loads((press / "job.json").read_text())
    assert job["tickets"] == 2 * 125
    assert sum(f["tickets"] for f in job["files"]) == job["tickets"]
    assert job["files"][0]["first_serial"] == TicketId(412, 1, 0).serial
    assert job["files"][-1]["last_serial"] == TicketId(412, 2, 124).serial
    assert set(job["settings"]) >= {"sheet", "template", "chunk_packs", "coating"}
    # the template's narrowest bar, which the print shop sets to its ink-jet line's minimum
    assert job["settings"]["code128_module_mm"] == 0.2


def test_cut_and_stack_puts_every_ticket_once():
    sheets, order = cut_and_stack(250, 9)
    assert sheets == 28
    flat = [i for sheet in order for i in sheet if i >= 0]
    assert sorted(flat) == list(range(250))
    stack0 = [order[s][0] for s in range(sheets)]
    assert stack0 == list(range(28))  # each cut stack comes out in order


def test_back_sheet_is_mirrored():
    template = load_template(TEMPLATES / "ticket.toml")
    imp = impose(template, *parse_sheet("SRA3"))
    assert (imp.cols, imp.rows) == (3, 3)
    for r in range(imp.rows):
        for c in range(imp.cols):
            fx, fy = imp.front[r * imp.cols + c]
            bx, by = imp.back[r * imp.cols + (imp.cols - 1 - c)]
            assert by == fy and abs(bx - fx) < 0.01


def test_kill_midway_then_rerun_gives_the_clean_run(tmp_path, long_block, keys_dir, approvals_dir):
    args = [
        "export",
        str(long_block),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "--chunk-packs",
        "1",
        "--workers",
        "1",
        "-q",
    ]
    clean = tmp_path / "clean"
    run_cli(*args, "--out", str(clean), check=True)
    crashed = tmp_path / "crashed"
    process = subprocess.Popen(
        [sys.executable, "-m", "printpipe", *args, "--out", str(crashed)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for_files(process, crashed, "*.pdf", count=2)  # its own progress, not a time
    kill_group(process)
    done = list(crashed.glob("*.pdf"))
    assert 2 <= len(done) < LONG_PACKS, "the kill must land midway"
    assert not (crashed / "job.json").exists()
    run_cli(*args, "--out", str(crashed), check=True)
    names = sorted(p.name for p in clean.iterdir() if not p.name.startswith("."))
    assert names == sorted(p.name for p in crashed.iterdir() if not p.name.startswith("."))
    for name in names:
        if name == "manifest.ppm":  # age encryption is randomised by design: compare the rest
            continue
        assert _sha(clean / name) == _sha(crashed / name), name
    assert not list(crashed.glob(".*.partial-*"))


def test_ctrl_c_stops_cleanly_and_the_rerun_finishes(tmp_path, long_block, keys_dir, approvals_dir):
    args = [
        "export",
        str(long_block),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
    ]
    args += ["--chunk-packs", "1", "--workers", "2", "-q"]
    out = tmp_path / "interrupted"
    process = subprocess.Popen(
        [sys.executable, "-m", "printpipe", *args, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_from_a_shell,
    )
    wait_for_files(process, out, "*.pdf")  # the run's own progress: its first press file
    # Stopped while the signal is sent, the coordinator (which alone renames finished chunks
    # into place) cannot finish the run before Ctrl-C lands, however busy the machine is.
    process.send_signal(signal.SIGSTOP)
    finished_when_stopped = len(list(out.glob("*.pdf")))
    process.send_signal(signal.SIGINT)  # what Ctrl-C sends to the command
    process.send_signal(signal.SIGCONT)
    _, stderr = process.communicate(timeout=600)
    assert finished_when_stopped < LONG_PACKS
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert not (out / "job.json").exists() and not list(out.glob(".*.partial-*"))
    assert len(list(out.glob("*.pdf"))) < LONG_PACKS, "Ctrl-C must land before the end"
    run_cli(*args, "--out", str(out), check=True)
    job = json.loads((out / "job.json").read_text())
    assert [f["path"] for f in job["files"]] == sorted(p.name for p in out.glob("*.pdf"))
    for entry in job["files"]:
        assert _sha(out / entry["path"]) == entry["sha256"]


def test_second_template_size_works_and_unapproved_says_so(tmp_path, small_block, keys_dir):
    """ticket-small has no approved proof here: --unapproved prints it, saying NOT APPROVED
    in every sheet's slug and in job.json."""
    out = tmp_path / "small"
    run_cli(
        "export", str(small_block), "--out", str(out), "--packs", "3:3", "--keys", str(keys_dir),
        "--template", str(TEMPLATES / "ticket-small.toml"), "--sheet", "A3", "--unapproved", "-q",
        check=True,
    )  # fmt: skip
    job = json.loads((out / "job.json").read_text())
    assert job["settings"]["template"] == "ticket-small"
    assert job["files"][0]["first_serial"] == TicketId(412, 3, 0).serial
    assert job["approval"] == job["settings"]["approval"] == "NOT APPROVED"
    pdf = pypdfium2.PdfDocument(out / job["files"][0]["path"])
    try:
        for page in pdf:
            assert "NOT APPROVED - CHIEN CHAT" in page.get_textpage().get_text_range()
    finally:
        pdf.close()


def _assert_one_line_error(result, out: Path, words: str, code: int = 1) -> None:
    assert result.returncode == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert not (out / "job.json").exists() and not list(out.glob("*.pdf"))


def test_tampered_store_is_refused(tmp_path, small_block, keys_dir, approvals_dir):
    copy = tmp_path / "block"
    shutil.copytree(small_block, copy)
    virn = bytearray((copy / "virn.npy").read_bytes())
    virn[-1] ^= 1
    (copy / "virn.npy").write_bytes(bytes(virn))
    out = tmp_path / "print"
    result = run_cli(
        "export",
        str(copy),
        "--out",
        str(out),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
    )
    _assert_one_line_error(result, out, "tampered")
    assert not out.exists(), "a refused run leaves no folder behind"


def test_the_store_is_proven_intact_before_any_file_is_final(
    tmp_path, small_block, keys_dir, approvals_dir, monkeypatch
):
    """The columns are hashed while the chunks render: chunks finished before the proof fails
    are never renamed into place, the sealed manifest records are removed, and an earlier
    run's files (job.json included) stay as they were."""
    out = tmp_path / "print"
    export = dict(
        keys_dir=keys_dir, approvals_dir=approvals_dir, chunk_packs=1, show_progress=False
    )
    export_block(block_dir=small_block, out_dir=out, packs=PackRange(1, 2), **export)
    before = {p.name: _sha(p) for p in out.iterdir()}
    for name in before:
        if name.endswith(".pdf"):
            (out / name).unlink()  # a run to resume: every chunk to render again

    watched = [out]

    def late_refusal(self: BlockStore) -> None:
        deadline = time.monotonic() + 60
        while not list(watched[0].glob(".*.pdf.partial-*")) and time.monotonic() < deadline:
            time.sleep(0.01)  # until a chunk is rendered, complete under its partial name
        assert list(watched[0].glob(".*.pdf.partial-*")), "no chunk rendered before the refusal"
        raise PrintpipeError(f"block store {self.path} is tampered or damaged: virn.npy ...")

    monkeypatch.setattr(BlockStore, "check_columns", late_refusal)
    with pytest.raises(PrintpipeError, match="tampered"):
        export_block(block_dir=small_block, out_dir=out, packs=PackRange(1, 2), **export)
    assert not list(out.glob("*.pdf")) and not list(out.glob(".*partial*"))
    left = {p.name: _sha(p) for p in out.iterdir()}
    assert left == {name: sha for name, sha in before.items() if not name.endswith(".pdf")}

    fresh = watched[0] = tmp_path / "fresh"
    with pytest.raises(PrintpipeError, match="tampered"):
        export_block(block_dir=small_block, out_dir=fresh, packs=PackRange(1, 1), **export)
    assert not fresh.exists()


@pytest.mark.parametrize(
    ("extra", "words", "code"),
    [
        (["--packs", "7:12"], "pack range", 1),  # not in this store: the library knows
        (["--packs", "0:3"], "outside the block", 2),  # not a pack range: a usage line
        (["--packs", "1:99999"], "outside the block", 2),  # nor is this one, in any block
        (["--packs", "8:1"], "FIRST <= LAST", 2),
        (["--sheet", "B9"], "unknown sheet size", 2),
        (["--sheet", "100x100"], "too small", 1),  # for this template's tickets
        (["--coating", "panel"], "--coating", 2),
    ],
)
def test_bad_options_are_refused(
    tmp_path, small_block, keys_dir, approvals_dir, extra, words, code
):
    out = tmp_path / "print"
    result = run_cli(
        "export",
        str(small_block),
        "--out",
        str(out),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        *extra,
    )
    _assert_one_line_error(result, out, words, code)


def test_missing_store_and_unwritable_folder(tmp_path, small_block, keys_dir, approvals_dir):
    out = tmp_path / "print"
    result = run_cli(
        "export",
        str(tmp_path / "nope"),
        "--out",
        str(out),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
    )
    _assert_one_line_error(result, out, "not a block store")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = run_cli(
        "export",
        str(small_block),
        "--out",
        str(blocker / "print"),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "--packs",
        "1:1",
    )
    _assert_one_line_error(result, blocker, "cannot write")


@pytest.mark.parametrize(
    ("edit", "zone"),
    [
        (("y = 86\nw = 40", "y = 80\nw = 40"), "overlaps front.bonus"),
        (("[back.inventory]\nx = 4", "[back.inventory]\nx = 40"), "back.inventory"),
    ],
)
def test_bad_template_names_the_zone(tmp_path, small_block, keys_dir, approvals_dir, edit, zone):
    text = (TEMPLATES / "ticket.toml").read_text()
    assert edit[0] in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(edit[0], edit[1]))
    out = tmp_path / "print"
    result = run_cli(
        "export",
        str(small_block),
        "--out",
        str(out),
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "--template",
        str(bad),
    )
    _assert_one_line_error(result, out, zone)


def test_a_scratch_zone_too_small_for_its_coating_is_refused(tmp_path, small_block, keys_dir):
    """2 mm of coating beyond the symbols makes a paw 20.05 mm tall in a grid cell of 18.63:
    it would reach over the paws around it, so the run stops before any file, naming the
    zone."""
    text = (TEMPLATES / "ticket.toml").read_text()
    assert "spread = 1.4" in text
    bad = tmp_path / "bad.toml"
    # a narrower bar (the least allowed), so that the retailer's zone still holds the barcode
    # with its quiet zones on white inside the wider spread: the paws are what is refused
    bad.write_text(
        text.replace("spread = 1.4", "spread = 2.0").replace(
            "code128_module = 0.2 ", "code128_module = 0.17"
        )
    )
    out = tmp_path / "print"
    result = run_cli("export", str(small_block), "--out", str(out), "--keys", str(keys_dir),
                     "--template", str(bad), "--unapproved")  # fmt: skip
    _assert_one_line_error(
        result, out, "zone front.grid cell 1: too small for its paw, spread 2 mm"
    )


def test_a_retailers_zone_without_white_quiet_zones_is_refused(tmp_path, small_block, keys_dir):
    """The Code 128's quiet zones lie on the zone's white base, inside the coating by its
    spread: with 2 mm of spread the 45 mm zone is too narrow for 0.2 mm bars."""
    text = (TEMPLATES / "ticket.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("spread = 1.4", "spread = 2.0"))
    out = tmp_path / "print"
    result = run_cli("export", str(small_block), "--out", str(out), "--keys", str(keys_dir),
                     "--template", str(bad), "--unapproved")  # fmt: skip
    _assert_one_line_error(result, out, "zone front.validation: too small for the Code 128")
    assert "45.80 mm wide needed" in result.stderr


def test_same_inputs_same_bytes(tmp_path, small_block, keys_dir, approvals_dir):
    """Two runs of the same job, dated by SOURCE_DATE_EPOCH, give the same bytes."""
    runs = []
    for name in ("first", "again"):
        out = tmp_path / name
        run_cli(
            "export", str(small_block), "--out", str(out), "--packs", "1:2",
            "--keys", str(keys_dir), "--approvals", str(approvals_dir), "--workers", "1", "-q",
            check=True, env={"SOURCE_DATE_EPOCH": "1767225600"},
        )  # fmt: skip
        runs.append(out)
    first, again = runs
    assert (again / "job.json").read_bytes() == (first / "job.json").read_bytes()
    for entry in json.loads((first / "job.json").read_text())["files"]:
        assert _sha(again / entry["path"]) == entry["sha256"]


def test_press_files_are_pdfx_1a(press):
    """What a prepress intake reads first: the PDF/X keys, the output intent, a job's name and
    date (never 2000-01-01), and one subset tag per font subset (never AAAAAA+ for all)."""
    job = json.loads((press / "job.json").read_text())
    for entry in job["files"]:
        with pikepdf.open(press / entry["path"]) as pdf:
            info = pdf.docinfo
            assert pdf.pdf_version == "1.4"
            assert str(info["/GTS_PDFXVersion"]) == "PDF/X-1a:2003"
            assert info["/Trapped"] == pikepdf.Name("/False")
            assert entry["path"] in str(info["/Title"]) and "CHIEN CHAT" in str(info["/Title"])
            assert entry["first_serial"] in str(info["/Subject"])
            assert "block 1" in str(info["/Author"])
            assert str(info["/CreationDate"]) == str(info["/ModDate"]) == job["date"]
            assert not str(info["/CreationDate"]).startswith("D:2000")
            (intent,) = pdf.Root.OutputIntents
            assert intent.S == pikepdf.Name.GTS_PDFX
            assert str(intent.OutputConditionIdentifier) == "FOGRA39"
            assert str(intent.RegistryName) == "http://www.color.org"
            tags = set()
            for page in pdf.pages[:2]:
                for font in page.Resources.Font.values():
                    tag, _, name = str(font.BaseFont)[1:].partition("+")
                    assert len(tag) == 6 and tag.isupper() and tag != "AAAAAA", font.BaseFont
                    assert str(font.FontDescriptor.FontName) == str(font.BaseFont)
                    tags.add((tag, name))
            assert len({tag for tag, _ in tags}) == len(tags) >= 3


def test_a_resumed_job_keeps_its_date(tmp_path, small_block, keys_dir, approvals_dir):
    out = tmp_path / "print"
    args = ["export", str(small_block), "--out", str(out), "--packs", "1:2", "--chunk-packs",
            "1", "--keys", str(keys_dir), "--approvals", str(approvals_dir), "-q"]  # fmt: skip
    wall_clock = {"SOURCE_DATE_EPOCH": ""}  # the job's own date, not the session's fixed one
    done = run_cli(*args, check=True, env=wall_clock)
    assert done.stdout.startswith("exported 250 tickets (packs 1 to 2) to 2 press PDF(s)")
    first = json.loads((out / "job.json").read_text())
    assert first["date"] != "D:20260101000000+00'00'"
    (out / first["files"][1]["path"]).unlink()
    time.sleep(1.1)
    resumed = run_cli(*args, check=True, env=wall_clock)
    assert resumed.stdout.startswith("resumed: rendered 125 of the 250 tickets (packs 1 to 2;")
    again = json.loads((out / "job.json").read_text())
    assert again["date"] == first["date"] and again["files"] == first["files"]
    finished = {name: (out / name).read_bytes() for name in ("job.json", "manifest.ppm")}
    nothing = run_cli(*args, check=True, env=wall_clock)
    assert nothing.stdout.startswith(
        "nothing to render: the 250 tickets (packs 1 to 2) were already in 2 press PDF(s)"
    )
    for name, data in finished.items():  # a manifest saying the same is kept, byte for byte
        assert (out / name).read_bytes() == data, name
    assert not [p.name for p in out.iterdir() if ".partial-" in p.name]
    damaged = bytearray(finished["manifest.ppm"])
    damaged[-1] ^= 1  # one bit of the encrypted body: no longer the manifest it was
    (out / "manifest.ppm").write_bytes(damaged)
    run_cli(*args, check=True, env=wall_clock)
    verified = run_cli("manifest", "verify", str(out / "manifest.ppm"), "--keys", str(keys_dir))
    assert verified.returncode == 0, verified.stderr  # written anew
    assert (out / "manifest.ppm").read_bytes() != finished["manifest.ppm"]


def test_a_second_export_into_the_same_folder_at_once_is_refused(
    tmp_path, small_block, keys_dir, approvals_dir
):
    """The first export holds the folder's lock; the second one fails at once, in one line,
    and touches nothing of the first's (here the lock is held by this process, as a running
    export holds it)."""
    from printpipe.atomic import FolderLock

    out = tmp_path / "print"
    first = FolderLock(out, "export")
    try:
        result = run_cli("export", str(small_block), "--out", str(out), "--packs", "1:1",
                         "--keys", str(keys_dir), "--approvals", str(approvals_dir))  # fmt: skip
        _assert_one_line_error(result, out, "is being written by another export (process", 1)
        assert str(os.getpid()) in result.stderr
    finally:
        first.release()
    assert not (tmp_path / ".print.lock").exists()
    run_cli("export", str(small_block), "--out", str(out), "--packs", "1:1", "--keys",
            str(keys_dir), "--approvals", str(approvals_dir), "-q", check=True)  # fmt: skip
    assert not (tmp_path / ".print.lock").exists()  # released, and removed, at the end


def test_output_intent_embeds_the_print_shops_profile(
    tmp_path, small_block, keys_dir, approvals_dir
):
    profile = Path("/usr/share/color/icc/ghostscript/default_cmyk.icc")  # Debian ghostscript
    out = tmp_path / "print"
    run_cli("export", str(small_block), "--out", str(out), "--packs", "1:1", "--keys",
            str(keys_dir), "--approvals", str(approvals_dir), "--output-intent", str(profile),
            "-q", check=True)  # fmt: skip
    job = json.loads((out / "job.json").read_text())
    assert job["settings"]["output_intent_sha256"] == _sha(profile)
    with pikepdf.open(out / job["files"][0]["path"]) as pdf:
        (intent,) = pdf.Root.OutputIntents
        assert intent.DestOutputProfile.read_bytes() == profile.read_bytes()
        assert intent.DestOutputProfile.N == 4 and "/RegistryName" not in intent
    rgb = Path("/usr/share/color/icc/ghostscript/default_rgb.icc")
    bad = run_cli("export", str(small_block), "--out", str(tmp_path / "bad"), "--keys",
                  str(keys_dir), "--approvals", str(approvals_dir), "--output-intent",
                  str(rgb))  # fmt: skip
    _assert_one_line_error(bad, tmp_path / "bad", "not a CMYK output profile")
