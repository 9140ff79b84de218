"""The press line (issue 18): static plates the same on every sheet in both press models, the
conventional split faithful to the composite plate by plate, the imaging files as PDF/VT-1
whose document parts name the tickets printed on each page, codes that decode from the
imaging files, the effigy-versus-prize split of a full block, and the preflight rules of the
press line, each failing on one injected violation.  Few packs and low resolutions."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pikepdf
import pypdfium2
import pytest
import zxingcpp
from PIL import Image

from printpipe.block import BlockStore, PackRange
from printpipe.games import game_template_dir
from printpipe.ids import TicketId
from printpipe.press import preflight
from printpipe.press.preflight_press import check
from printpipe.render.imposition import cut_and_stack, impose, parse_sheet
from printpipe.render.sheet import crop_marks
from printpipe.render.template import MM, load_template
from tests.conftest import CMYK_PROFILE, generate_store, run_cli

DPI = 36
STATIC_INKS = ("Cyan", "Magenta", "Yellow", "Black", "Blocking", "ScratchOff", "ScratchDecor")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, game, keys_dir, approvals_dir) -> dict[str, Path]:
    """Packs 1 to 3 (375 tickets, 42 sheets) of a block, exported in both press models, and
    with the coating off."""
    work = tmp_path_factory.mktemp("press-line")
    store = generate_store(game, keys_dir, work / "block", PackRange(1, 3))
    out = {"block": store}
    profile = ("--output-intent", str(CMYK_PROFILE))
    for name, extra in (
        ("digital", ()),
        ("conventional", ("--press", "conventional", *profile)),
        ("none", ("--press", "conventional", "--coating", "none", *profile)),
    ):
        out[name] = work / name
        run_cli("export", str(store), "--out", str(out[name]), "--keys", str(keys_dir),
                "--approvals", str(approvals_dir), "--chunk-packs", "3", "-q", *extra,
                check=True)  # fmt: skip
    return out


def _entries(folder: Path) -> list[dict]:
    return json.loads((folder / "job.json").read_text())["files"]


def _files(folder: Path, kind: str) -> list[Path]:
    return [folder / e["path"] for e in _entries(folder) if e["kind"] == kind]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_conventional_run_needs_the_presss_profile(runs, keys_dir, approvals_dir, tmp_path):
    """PDF/X-4 embeds the output profile: without one, the run is refused in one line naming
    the option, and nothing is written."""
    out = tmp_path / "line"
    refused = run_cli("export", str(runs["block"]), "--out", str(out), "--keys",
                      str(keys_dir), "--approvals", str(approvals_dir), "--press",
                      "conventional", "-q")  # fmt: skip
    assert refused.returncode == 1 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert "--output-intent FILE.icc" in line and "PDF/X-4" in line
    assert not out.exists()


def test_a_static_file_holds_its_effigys_artwork_only(runs, game):
    (static,) = _files(runs["conventional"], "static")
    (entry,) = [e for e in _entries(runs["conventional"]) if e["kind"] == "static"]
    names: set[str] = set()
    with pikepdf.open(static) as pdf:
        for obj in pdf.objects:  # every form of the file, placed or not
            if isinstance(obj, pikepdf.Stream) and obj.get("/Subtype") == pikepdf.Name.Form:
                resources = obj.get("/Resources")
                if isinstance(resources, pikepdf.Dictionary) and "/XObject" in resources:
                    names |= {str(name) for name in resources.XObject}
            elif isinstance(obj, pikepdf.Dictionary) and "/XObject" in obj:
                names |= {str(name) for name in obj.XObject}
    fronts = {n for n in names if ".front-" in n}
    assert fronts == {f"/FormXob.front-{entry['variant']}"}, fronts


def _plates(pdf: Path, pages: list[int], work: Path) -> dict[tuple[int, str], np.ndarray]:
    """(page, ink) -> ink coverage (0 paper to 255 solid), one Ghostscript tiffsep per page."""
    plates = {}
    for page in pages:
        prefix = work / f"{pdf.stem}-{page}"
        subprocess.run(
            ["gs", "-q", "-dNOPAUSE", "-dBATCH", "-sDEVICE=tiffsep", f"-r{DPI}",
             f"-dFirstPage={page}", f"-dLastPage={page}", f"-sOutputFile={prefix}.tif", str(pdf)],
            check=True, timeout=300,
        )  # fmt: skip
        for tif in work.glob(f"{prefix.name}(*).tif"):
            ink = tif.name[len(prefix.name) + 1 : -5]
            plates[page, ink] = 255 - np.asarray(Image.open(tif).convert("L"))
    return plates


def test_static_plates_are_the_same_on_every_sheet_and_the_split_is_faithful(runs, tmp_path):
    (composite,) = _files(runs["digital"], "duplex")
    (static,) = _files(runs["conventional"], "static")
    (imaging,) = _files(runs["conventional"], "variable")
    pages = len(pikepdf.open(composite).pages)
    chosen = [1, 2, 3, 4, pages - 1, pages]  # sheets 1, 2 and the last, front and back
    digital = _plates(composite, chosen, tmp_path)
    plates = _plates(static, [1, 2], tmp_path)
    variable = _plates(imaging, chosen, tmp_path)
    for (page, ink), plate in variable.items():  # the imaging: the Variable plate only
        assert ink == "Variable" or not plate.any(), (page, ink)
    for page in chosen:
        side = 1 if page % 2 else 2
        for ink in STATIC_INKS:
            # the digital model: every sheet's static plates are sheet 1's, pixel for pixel
            assert np.array_equal(digital[page, ink], digital[side, ink]), (page, ink)
            # static file overprinted with the imaging file = the composite, plate by plate
            assert np.array_equal(plates[side, ink], digital[page, ink]), (page, ink)
        # the imaging file = the composite's Variable plate, but for the slug's file name
        slug = -round((6 + 3) / 25.4 * DPI)  # the sheet's margin and the slug line, from below
        assert np.array_equal(variable[page, "Variable"][:slug], digital[page, "Variable"][:slug])
        assert digital[page, "Variable"].any() and plates[side, "Cyan"].any()
    # and what changes from sheet to sheet is on the Variable plate only
    assert not np.array_equal(digital[1, "Variable"], digital[3, "Variable"])


def test_the_imaging_files_are_pdfvt_naming_each_ticket_printed(runs, game):
    (imaging,) = _files(runs["conventional"], "variable")
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    imposition = impose(template, *parse_sheet("SRA3"))
    tickets = BlockStore.open(runs["block"]).read()
    sheets, order = cut_and_stack(len(tickets), imposition.slots)
    with pikepdf.open(imaging) as pdf:
        assert pdf.pdf_version == "1.6"
        xmp = pdf.Root.Metadata.read_bytes()
        assert b"<pdfxid:GTS_PDFXVersion>PDF/X-4<" in xmp
        assert b"<pdfvtid:GTS_PDFVTVersion>PDF/VT-1<" in xmp
        assert len(pdf.Root.OutputIntents) == 1
        info = pdf.trailer.Info
        # Info's entries in XMP's words: the Subject is the XMP's dc:description
        meta = pdf.open_metadata()
        assert meta["dc:description"] == str(info.Subject) != ""
        assert meta["dc:title"] == str(info.Title) and meta["dc:creator"] == [str(info.Author)]
        assert meta["pdf:Producer"] == str(info.Producer)
        (intent,) = pdf.Root.OutputIntents
        assert intent.DestOutputProfile.read_bytes() == CMYK_PROFILE.read_bytes()
        root = pdf.Root.DPartRoot
        assert list(root.NodeNameList) == ["/File", "/Sheet", "/Side"]
        # the static file it prints over, by name and SHA-256, as job.json says too
        (entry,) = [e for e in _entries(runs["conventional"]) if e["kind"] == "variable"]
        static_named = root.DPartRootNode.DPM.File.Static
        static = runs["conventional"] / entry["static"]
        assert str(static_named.Name) == static.name
        assert str(static_named.SHA256) == entry["static_sha256"] == _sha256(static)
        assert len(pdf.pages) == 2 * sheets
        for number, page in enumerate(pdf.pages):
            leaf = page.obj.DPart
            assert leaf.Start.objgen == page.obj.objgen
            assert leaf.Parent.Parent.objgen == root.DPartRootNode.objgen
            listed = [(int(t.Slot), str(t.Serial), int(t.Pack)) for t in leaf.DPM.Tickets]
            slots = order[number // 2]
            on_page = (lambda k: k) if number % 2 == 0 else imposition.back_slot
            expected = sorted(
                (on_page(k), TicketId(game.definition.number, 1 + i // 125, i % 125).serial,
                 1 + i // 125)
                for k, i in enumerate(slots)
                if i >= 0
            )  # fmt: skip
            assert listed == expected, number
    # the serial printed on each back is the one its document part names at that slot, the
    # page's slots in reading order (a back's grid is the front's: the sheet is centred)
    document = pypdfium2.PdfDocument(imaging)
    for number in (1, 2 * sheets - 1):  # sheet 1's back, the last sheet's back
        with pikepdf.open(imaging) as pdf:
            named = {int(t.Slot): str(t.Serial) for t in pdf.pages[number].obj.DPart.DPM.Tickets}
        text = document[number].get_textpage()
        for slot, serial in named.items():
            x, y = imposition.front[slot]
            printed = text.get_text_bounded(x, y, x + template.width * MM, y + template.height * MM)
            assert serial in printed, (number, slot)


# -- an independent check of PDF/VT-1 and PDF/X-4 --------------------------------------------
# Written from ISO 16612-2 (PDF/VT-1) and ISO 15930-7 (PDF/X-4), apart from printpipe's
# preflight: the XMP read with the standard library's XML parser, the document parts walked
# from their definition (ISO 32000-2, 14.12).
RDF = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}"
XMP_NS = {
    "dc": "http://purl.org/dc/elements/1.1/",
    "xmp": "http://ns.adobe.com/xap/1.0/",
    "pdf": "http://ns.adobe.com/pdf/1.3/",
    "xmpMM": "http://ns.adobe.com/xap/1.0/mm/",
    "pdfxid": "http://www.npes.org/pdfx/ns/id/",
    "pdfvtid": "http://www.npes.org/pdfvt/ns/id/",
}


def _xmp_values(packet: bytes) -> dict[str, str]:
    """Every simple property of the packet's descriptions (``prefix:name`` -> text; a
    language alternative or a sequence: its first item)."""
    from xml.etree import ElementTree

    uris = {uri: prefix for prefix, uri in XMP_NS.items()}
    values: dict[str, str] = {}
    for description in ElementTree.fromstring(packet).iter(f"{RDF}Description"):
        for attribute, text in description.attrib.items():  # the attribute form
            uri, _, name = attribute[1:].partition("}")
            if uri in uris:
                values[f"{uris[uri]}:{name}"] = text
        for element in description:
            uri, _, name = element.tag[1:].partition("}")
            if uri not in uris:
                continue
            item = element.find(f".//{RDF}li")
            values[f"{uris[uri]}:{name}"] = (item if item is not None else element).text or ""
    return values


def _xmp_seconds(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _pdf_seconds(text: str) -> float:
    from datetime import datetime

    core = text.removeprefix("D:").replace("'", "")
    zone = "+0000" if core[14:] in ("", "Z") else core[14:]
    return datetime.strptime(core[:14] + zone, "%Y%m%d%H%M%S%z").timestamp()


def pdfvt1_problems(path: Path) -> list[str]:
    """What keeps ``path`` from being PDF/VT-1 (so PDF/X-4); empty when it is one."""
    problems = []
    head = path.read_bytes()[:8]
    if not head.startswith(b"%PDF-1.") or head[7:8] not in b"3456":
        problems.append(f"header {head!r}: PDF/X-4 is PDF 1.6 at most")
    with pikepdf.open(path) as pdf:
        root, info = pdf.Root, pdf.trailer.get("/Info", pikepdf.Dictionary())
        if pdf.is_encrypted or "/ID" not in pdf.trailer:
            problems.append("encrypted, or no trailer /ID")
        intents = [i for i in root.get("/OutputIntents", []) if i.get("/S") == "/GTS_PDFX"]
        profile = intents[0].get("/DestOutputProfile") if len(intents) == 1 else None
        if profile is None:
            problems.append("no single PDF/X output intent with an embedded profile")
        else:
            icc = profile.read_bytes()
            if icc[36:40] != b"acsp" or icc[12:16] != b"prtr" or icc[16:20] != b"CMYK":
                problems.append("the output profile is not a CMYK output profile")
            if int(profile.get("/N", 0)) != 4 or not str(
                intents[0].get("/OutputConditionIdentifier", "")
            ):
                problems.append("the output intent's /N or OutputConditionIdentifier")
        metadata = root.get("/Metadata")
        if not isinstance(metadata, pikepdf.Stream) or metadata.get("/Subtype") != "/XML":
            return [*problems, "no XMP metadata stream"]
        xmp = _xmp_values(metadata.read_bytes())
        wanted = {"pdfxid:GTS_PDFXVersion": "PDF/X-4", "pdfvtid:GTS_PDFVTVersion": "PDF/VT-1"}
        for key, value in wanted.items():
            if xmp.get(key) != value:
                problems.append(f"XMP {key} is {xmp.get(key)!r}")
        for key in ("xmpMM:DocumentID", "xmpMM:VersionID", "xmpMM:RenditionClass", "dc:title",
                    "xmp:CreateDate", "xmp:ModifyDate", "pdfvtid:GTS_PDFVTModDate"):  # fmt: skip
            if not xmp.get(key):
                problems.append(f"XMP has no {key}")
        if "/GTS_PDFXVersion" in info and str(info.GTS_PDFXVersion) != "PDF/X-4":
            problems.append("Info's GTS_PDFXVersion is not PDF/X-4")
        if str(info.get("/Trapped")) not in ("/True", "/False") or xmp.get("pdf:Trapped") != str(
            info.get("/Trapped")
        ).lstrip("/"):
            problems.append("Trapped is not True or False in both Info and XMP")
        same = (("/Title", "dc:title"), ("/Author", "dc:creator"),
                ("/Subject", "dc:description"), ("/Producer", "pdf:Producer"))  # fmt: skip
        for key, xmp_key in same:
            if key in info and str(info[key]) != xmp.get(xmp_key):
                problems.append(f"Info's {key[1:]} has no equal XMP {xmp_key}")
        for key, xmp_key in (("/CreationDate", "xmp:CreateDate"), ("/ModDate", "xmp:ModifyDate")):
            if key in info and _pdf_seconds(str(info[key])) != _xmp_seconds(xmp.get(xmp_key, "")):
                problems.append(f"Info's {key[1:]} and XMP {xmp_key} differ")
        for number, page in enumerate(pdf.pages, start=1):
            boxes = {name: page.obj.get(name) for name in ("/TrimBox", "/ArtBox", "/BleedBox")}
            if (boxes["/TrimBox"] is None) == (boxes["/ArtBox"] is None):
                problems.append(f"page {number}: not exactly one of TrimBox and ArtBox")
        # the document parts: every page in exactly one leaf, leaves in page order
        dpart_root = root.get("/DPartRoot")
        if (
            not isinstance(dpart_root, pikepdf.Dictionary)
            or dpart_root.get("/Type") != "/DPartRoot"
        ):
            return [*problems, "no /DPartRoot"]
        pages = [page.obj.objgen for page in pdf.pages]
        covered: list[tuple[int, int]] = []

        def walk(node: pikepdf.Object, depth: int) -> None:
            if node.get("/Type") != "/DPart":
                problems.append("a document part without /Type /DPart")
            for value in node.get("/DPM", pikepdf.Dictionary()).values():
                if isinstance(value, pikepdf.Stream):
                    problems.append("a stream in a DPM")
            if "/DParts" in node:
                for group in node.DParts:
                    for kid in group:
                        if kid.Parent.objgen != node.objgen:
                            problems.append("a document part whose /Parent is not its node")
                        walk(kid, depth + 1)
                return
            start = pages.index(node.Start.objgen)
            end = pages.index(node.End.objgen) if "/End" in node else start
            covered.extend(pages[start : end + 1])
            for objgen in pages[start : end + 1]:
                if pdf.get_object(objgen).DPart.objgen != node.objgen:
                    problems.append("a page whose /DPart is not the leaf holding it")

        walk(dpart_root.DPartRootNode, 0)
        if covered != pages:
            problems.append("the leaves do not hold every page once, in page order")
    return problems


def test_an_independent_pdfvt1_check_passes_the_imaging_files(runs, tmp_path):
    """The imaging files pass a PDF/VT-1 + PDF/X-4 check written apart from preflight; no
    other file claims PDF/X-4 or PDF/VT; and the check has teeth."""
    (imaging,) = _files(runs["conventional"], "variable")
    assert pdfvt1_problems(imaging) == []
    for kind, run in (("static", "conventional"), ("duplex", "digital")):
        for path in _files(runs[run], kind):
            with pikepdf.open(path) as pdf:
                assert str(pdf.trailer.Info.GTS_PDFXVersion) == "PDF/X-1a:2003"
                assert pdf.pdf_version in ("1.3", "1.4") and "/Metadata" not in pdf.Root
    for fault in (_no_embedded_profile, _parts_out_of_order, _xmp_without("dc:description")):
        folder = tmp_path / fault.__name__
        shutil.copytree(runs["conventional"], folder)
        (victim,) = _files(folder, "variable")
        _inject(folder, victim, fault)
        assert pdfvt1_problems(victim), fault.__name__


def _codes(pdf: Path, pages: list[int]) -> list[str]:
    document = pypdfium2.PdfDocument(pdf)
    found = []
    for page in pages:
        image = document[page].render(scale=300 / 72, grayscale=True).to_pil()
        found += [
            r.text
            for r in zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.Code128)  # type: ignore[arg-type]
            if r.valid
        ]
    return found


def test_validation_codes_decode_from_the_imaging_and_not_through_the_coating(runs, game):
    tickets = BlockStore.open(runs["block"]).read()
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    _, order = cut_and_stack(len(tickets), impose(template, *parse_sheet("SRA3")).slots)

    def expected(sheet: int) -> set[str]:
        return {
            TicketId(game.definition.number, 1 + i // 125, i % 125).validation_code(
                int(tickets.virn[i])
            )
            for i in order[sheet]
            if i >= 0
        }

    for folder, kind in (("conventional", "variable"), ("none", "variable")):
        (imaging,) = _files(runs[folder], kind)
        assert set(_codes(imaging, [0])) == expected(0)
    (composite,) = _files(runs["digital"], "duplex")
    assert _codes(composite, [0]) == [], "a validation code reads through the coating"


@pytest.mark.fullblock
@pytest.mark.xdist_group("fullblock")
def test_the_effigy_tells_nothing_of_the_prize_in_a_full_block(full_block, game):
    """Decision 6: in every tier the effigies' counts differ by at most 1, and every pool (a
    press run) is of one effigy."""
    store = BlockStore.open(full_block)
    rules = game.definition.block
    variants = len(game.definition.variants)
    split = np.zeros((len(game.definition.tier_amounts), variants), dtype=np.int64)
    for pool in range(rules.pools):
        packs = PackRange(pool * rules.packs_per_pool + 1, (pool + 1) * rules.packs_per_pool)
        rows = store.read(packs)
        assert len(np.unique(rows.variant)) == 1, f"pool {pool + 1} mixes effigies"
        np.add.at(split, (np.asarray(rows.tier, dtype=np.int64), rows.variant), 1)
    assert (split.max(axis=1) - split.min(axis=1) <= 1).all(), split
    assert (split.sum(axis=0) == rules.size // variants).all()


# -- preflight ------------------------------------------------------------------------------
def _new_rules(folder: Path, baseline: set[str]) -> set[tuple[str, str]]:
    violations, _ = preflight(folder)
    return {(v.file, v.rule) for v in violations if str(v) not in baseline}


def _baseline(folder: Path) -> set[str]:
    violations, _ = preflight(folder)
    return {str(v) for v in violations}


def _inject(folder: Path, path: Path, change) -> None:
    with pikepdf.open(path, allow_overwriting_input=True) as pdf:
        change(pdf)
        pdf.save(path, static_id=True)
    job = json.loads((folder / "job.json").read_text())
    for entry in job["files"]:
        if entry["path"] == path.name:
            entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (folder / "job.json").write_text(json.dumps(job))


def test_the_exported_runs_break_no_rule(runs):
    """Both press models' files, artwork included, break none of the press line's rules."""
    for name in ("digital", "conventional"):
        violations, files = preflight(runs[name])
        assert sum(files.values()) >= 1
        assert not violations, violations


def _drop_dpart(pdf: pikepdf.Pdf) -> None:
    del pdf.pages[3].obj["/DPart"]


def _mark_inside_trim(pdf: pikepdf.Pdf) -> None:
    """A crop mark in the static plates (the front's form over the imaging)."""
    left, bottom, right, _top = (float(v) for v in pdf.pages[0].obj.TrimBox)
    mid = (left + right) / 2
    form = pdf.pages[0].Resources.XObject["/FormXob.sheet-front-over"]
    mark = f"\nq /All CS 1 SCN {mid} {bottom + 20} m {mid} {bottom + 40} l S Q\n"
    form.write(form.read_bytes() + mark.encode())


def _one_sheet_differs(pdf: pikepdf.Pdf) -> None:
    page = pdf.pages[2].obj  # sheet 2's front: a cyan patch between its static forms
    data = page.Contents.read_bytes()
    cut = data.index(b"\nq /FormXob.sheet-front-over")
    page.Contents = pdf.make_stream(data[:cut] + b"\nq 1 0 0 0 k 100 100 20 20 re f Q" + data[cut:])


def _root_kids(pdf: pikepdf.Pdf) -> Any:
    return pdf.Root.DPartRoot.DPartRootNode.DParts[0]


def _parts_out_of_order(pdf: pikepdf.Pdf) -> None:
    """Sheets 2 and 3's document parts swapped in the tree (each still names its page)."""
    kids = _root_kids(pdf)
    second, third = kids[1], kids[2]
    kids[1], kids[2] = third, second


def _leaves_swapped(pdf: pikepdf.Pdf) -> None:
    """Sheet 1's front and back leaves swapped in their node."""
    leaves = _root_kids(pdf)[0].DParts[0]
    front, back = leaves[0], leaves[1]
    leaves[0], leaves[1] = back, front


def _wrong_parent(pdf: pikepdf.Pdf) -> None:
    _root_kids(pdf)[1].DParts[0][0].Parent = _root_kids(pdf)[0]


def _leaf_ends_further(pdf: pikepdf.Pdf) -> None:
    pdf.pages[4].obj.DPart.End = pdf.pages[5].obj


def _tickets_of(pdf: pikepdf.Pdf, page: int) -> Any:
    return pdf.pages[page].obj.DPart.DPM.Tickets


def _names_another_ticket(pdf: pikepdf.Pdf) -> None:
    """Sheet 2's front names, in its slot 0, a ticket printed on sheet 1 (serial, pack and
    ticket number all that ticket's)."""
    elsewhere = _tickets_of(pdf, 0)[0]
    entry = _tickets_of(pdf, 2)[0]
    entry.Serial, entry.Pack, entry.Ticket = elsewhere.Serial, elsewhere.Pack, elsewhere.Ticket


def _slots_swapped(pdf: pikepdf.Pdf) -> None:
    tickets = _tickets_of(pdf, 2)
    tickets[0].Slot, tickets[1].Slot = 1, 0
    first, second = tickets[0], tickets[1]
    tickets[0], tickets[1] = second, first


def _back_not_mirrored(pdf: pikepdf.Pdf) -> None:
    """The back's document part with the front's slot numbers (issue 26: 2 columns of 3
    named the wrong ticket)."""
    back = pdf.pages[1].obj.DPart.DPM
    back.Tickets = pikepdf.Array([pikepdf.Dictionary(dict(t.items())) for t in _tickets_of(pdf, 0)])


def _pack_not_the_serials(pdf: pikepdf.Pdf) -> None:
    _tickets_of(pdf, 0)[0].Pack = 7


def _wrong_side(pdf: pikepdf.Pdf) -> None:
    pdf.pages[3].obj.DPart.DPM.Side = pikepdf.Name.Front


def _append(pdf: pikepdf.Pdf, page: pikepdf.Page, ops: bytes) -> None:
    """``ops`` added to the page's imaging: at its end, or a composite page's before its
    static form over the imaging."""
    data = _content_of(page)
    cut = data.rfind(b"\nq /FormXob.sheet-")
    cut = len(data) if cut < 0 or b"Do Q" not in data[cut:] or cut < data.find(b"Do Q") else cut
    page.obj.Contents = pdf.make_stream(data[:cut] + b"\n" + ops + b"\n" + data[cut:])


def _placed_symbol(page: pikepdf.Page) -> pikepdf.Name:
    """A symbol form the page places."""
    data = _content_of(page)
    start = data.index(b"/FormXob.sym-")
    return pikepdf.Name(data[start : data.index(b" ", start)].decode())


def _content_of(page: pikepdf.Page) -> bytes:
    contents = page.obj.Contents
    streams = contents if isinstance(contents, pikepdf.Array) else [contents]
    return b"\n".join(stream.read_bytes() for stream in streams)


def _zero_tint_through_a_form(pdf: pikepdf.Pdf) -> None:
    """A form that paints in the colour it is placed with, placed at tint 0 of Variable."""
    page = pdf.pages[2]
    patch = pdf.make_stream(b"0 0 10 10 re f", Type=pikepdf.Name.XObject,
                            Subtype=pikepdf.Name.Form, BBox=[0, 0, 10, 10])  # fmt: skip
    page.Resources.XObject = pikepdf.Dictionary(dict(page.Resources.XObject.items()))
    page.Resources.XObject.Patch = patch
    _append(pdf, page, b"q /Variable cs 0 scn 1 0 0 1 200 200 cm /Patch Do Q")


def _zero_tint_stroke(pdf: pikepdf.Pdf) -> None:
    _append(pdf, pdf.pages[2], b"q /Variable CS 0 SCN 100 100 m 200 100 l S Q")


def _inline_image(space: bytes) -> Callable[[pikepdf.Pdf], None]:
    def inject(pdf: pikepdf.Pdf) -> None:
        size = {b"/RGB": 3, b"/G": 1}[space]
        _append(
            pdf,
            pdf.pages[2],
            b"q 20 0 0 20 60 60 cm BI /W 1 /H 1 /CS %s /BPC 8 ID\n%s\nEI Q"
            % (space, b"\x80" * size),
        )

    inject.__name__ = f"_inline_{space[1:].decode().lower()}_image"
    return inject


def _image_xobject(pdf: pikepdf.Pdf) -> None:
    page = pdf.pages[2]
    image = pdf.make_stream(b"\x80", Type=pikepdf.Name.XObject, Subtype=pikepdf.Name.Image,
                            Width=1, Height=1, ColorSpace=pikepdf.Name.DeviceGray,
                            BitsPerComponent=8)  # fmt: skip
    page.Resources.XObject = pikepdf.Dictionary(dict(page.Resources.XObject.items()))
    page.Resources.XObject.Logo = image
    _append(pdf, page, b"q 20 0 0 20 60 60 cm /Logo Do Q")


def _nested_form_paints_cyan(pdf: pikepdf.Pdf) -> None:
    """A form nested in a symbol form paints process cyan: another plate than Variable."""
    page = pdf.pages[0]
    symbol = page.Resources.XObject[_placed_symbol(page)]
    nested = pdf.make_stream(b"0.5 0 0 0 k 0 0 5 5 re f", Type=pikepdf.Name.XObject,
                             Subtype=pikepdf.Name.Form, BBox=[0, 0, 5, 5])  # fmt: skip
    resources = symbol.get("/Resources") or pikepdf.Dictionary()
    if "/XObject" not in resources:
        resources.XObject = pikepdf.Dictionary()
    resources.XObject.Nested = nested
    symbol.Resources = resources
    symbol.write(symbol.read_bytes() + b"\n/Nested Do")


def _no_embedded_profile(pdf: pikepdf.Pdf) -> None:
    """The output intent names FOGRA39 by its registry, as a PDF/X-1a file may."""
    (intent,) = pdf.Root.OutputIntents
    del intent["/DestOutputProfile"]
    intent.RegistryName = pikepdf.String("http://www.color.org")
    intent.OutputConditionIdentifier = pikepdf.String("FOGRA39")


def _xmp_without(key: str) -> Callable[[pikepdf.Pdf], None]:
    def inject(pdf: pikepdf.Pdf) -> None:
        xmp = pdf.Root.Metadata.read_bytes()
        start = xmp.index(b"<" + key.encode())
        end = xmp.index(b"</" + key.encode() + b">") + len(key) + 3
        pdf.Root.Metadata.write(xmp[:start] + xmp[end:])

    inject.__name__ = f"_xmp_without_{key.replace(':', '_')}"
    return inject


def _info_title_differs(pdf: pikepdf.Pdf) -> None:
    pdf.trailer.Info.Title = pikepdf.String("another job")


def _claims_pdfx3(pdf: pikepdf.Pdf) -> None:
    pdf.trailer.Info.GTS_PDFXVersion = pikepdf.String("PDF/X-3:2002")


def _static_recoloured(pdf: pikepdf.Pdf) -> None:
    """The static front's artwork altered (its form's first process colour), job.json's
    SHA-256 of the static file brought up to date: only the imaging files still name the
    static file they were made for."""
    under = pdf.pages[0].Resources.XObject["/FormXob.sheet-front-under"]
    form = next(
        f for n, f in under.Resources.XObject.items() if str(n).startswith("/FormXob.front-")
    )
    data = form.read_bytes()
    start = data.index(b" k")
    form.write(data[:start] + b" 0 1 0 0 k" + data[start + 2 :].split(b"\n", 1)[1])


FAULTS = [
    ("conventional", "variable", _drop_dpart, {"pdf-vt"}),
    ("digital", "duplex", _mark_inside_trim, {"crop-marks"}),
    ("conventional", "static", _mark_inside_trim, {"crop-marks", "static-plates"}),
    ("digital", "duplex", _one_sheet_differs, {"static-plates"}),
    # document parts
    ("conventional", "variable", _parts_out_of_order, {"pdf-vt"}),
    ("conventional", "variable", _leaves_swapped, {"pdf-vt"}),
    ("conventional", "variable", _wrong_parent, {"pdf-vt"}),
    ("conventional", "variable", _leaf_ends_further, {"pdf-vt"}),
    ("conventional", "variable", _wrong_side, {"pdf-vt"}),
    # their metadata
    ("conventional", "variable", _names_another_ticket, {"pdf-vt"}),
    ("conventional", "variable", _slots_swapped, {"pdf-vt"}),
    ("conventional", "variable", _back_not_mirrored, {"pdf-vt"}),
    ("conventional", "variable", _pack_not_the_serials, {"pdf-vt"}),
    # zero tint through a form
    ("conventional", "variable", _zero_tint_through_a_form, {"zero-tint"}),
    ("digital", "duplex", _zero_tint_through_a_form, {"zero-tint"}),
    ("conventional", "variable", _zero_tint_stroke, {"zero-tint"}),
    # images in an imaging file (an RGB one is no PDF/X colour either)
    ("conventional", "variable", _inline_image(b"/RGB"), {"imaging", "colour"}),
    ("conventional", "variable", _inline_image(b"/G"), {"imaging"}),
    ("conventional", "variable", _image_xobject, {"imaging"}),
    ("digital", "duplex", _inline_image(b"/RGB"), {"colour", "static-plates"}),
    ("digital", "duplex", _inline_image(b"/G"), {"static-plates"}),
    # nested forms painting another plate
    ("conventional", "variable", _nested_form_paints_cyan, {"imaging"}),
    ("digital", "duplex", _nested_form_paints_cyan, {"static-plates"}),
    # what the file claims
    ("conventional", "variable", _no_embedded_profile, {"output-intent"}),
    ("conventional", "variable", _xmp_without("dc:description"), {"pdfx-4"}),
    ("conventional", "variable", _xmp_without("pdfvtid:GTS_PDFVTModDate"), {"pdf-vt"}),
    ("conventional", "variable", _info_title_differs, {"pdfx-4"}),
    ("digital", "duplex", _claims_pdfx3, {"info"}),
    # a static file altered in a conventional folder
    ("conventional", "static", _static_recoloured, {"static-plates"}),
]


@pytest.mark.parametrize(
    ("run", "kind", "change", "rules"),
    FAULTS,
    ids=[f"{run}-{change.__name__.strip('_')}" for run, _, change, _ in FAULTS],
)
def test_preflight_names_the_rule_of_one_injected_violation(
    runs, tmp_path, run, kind, change, rules
):
    """Each fault, injected into a good file (``job.json``'s SHA-256 of it brought up to
    date), is named by preflight on that file, by its rule, and nothing else is."""
    folder = tmp_path / run
    shutil.copytree(runs[run], folder)
    victim = _files(folder, kind)[0]
    _inject(folder, victim, change)
    assert _new_rules(folder, baselines(runs, run)) == {(victim.name, rule) for rule in rules}


def test_preflight_names_an_imaging_file_whose_static_file_is_missing(runs, tmp_path):
    folder = tmp_path / "line"
    shutil.copytree(runs["conventional"], folder)
    (static,) = _files(folder, "static")
    (imaging,) = _files(folder, "variable")
    static.unlink()
    job = json.loads((folder / "job.json").read_text())
    job["files"] = [e for e in job["files"] if e["path"] != static.name]
    (folder / "job.json").write_text(json.dumps(job))
    violations, _ = preflight(folder)
    assert {(v.file, v.rule) for v in violations} == {(imaging.name, "static-plates")}
    assert static.name in str(violations[0])


_BASELINES: dict[Path, set[str]] = {}


def baselines(runs: dict[str, Path], run: str) -> set[str]:
    """The run's own violations (none expected), once per run and test process."""
    if runs[run] not in _BASELINES:
        _BASELINES[runs[run]] = _baseline(runs[run])
    return _BASELINES[runs[run]]


def _synthetic(content: bytes, *, overprint: bool = False) -> pikepdf.Pdf:
    """A one-page PDF with a Blocking separation, a black font and an overprint state."""
    pdf = pikepdf.new()
    tint = pdf.make_stream(b"{0 0 0 4 -1 roll}", FunctionType=4, Domain=[0, 1],
                           Range=[0, 1, 0, 1, 0, 1, 0, 1])  # fmt: skip
    resources = pikepdf.Dictionary(
        ColorSpace=pikepdf.Dictionary(
            Blocking=pikepdf.Array(
                [pikepdf.Name.Separation, pikepdf.Name.Blocking, pikepdf.Name.DeviceCMYK, tint]
            )
        ),
        ExtGState=pikepdf.Dictionary(
            OP=pikepdf.Dictionary(op=overprint, OP=overprint, OPM=1),
            OP0=pikepdf.Dictionary(op=True, OP=True, OPM=0),
        ),
        Font=pikepdf.Dictionary(
            F1=pikepdf.Dictionary(
                Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name.Helvetica
            )
        ),
    )
    page = pikepdf.Dictionary(
        Type=pikepdf.Name.Page,
        MediaBox=[0, 0, 300, 300],
        TrimBox=[20, 20, 280, 280],
        Resources=resources,
        Contents=pdf.make_stream(content),
    )
    pdf.pages.append(pikepdf.Page(page))
    return pdf


@pytest.mark.parametrize(
    ("content", "overprint", "rule"),
    [
        (
            b"/Blocking cs 1 scn 50 50 80 80 re f /Blocking cs 0 scn 60 60 20 20 re f",
            False,
            "zero-tint",
        ),
        (b"/Blocking cs 1 scn 50 50 80 80 re f", False, None),
        (b"q /OP gs 0 0 0 1 k BT /F1 8 Tf 50 50 Td (Grattez) Tj ET Q", False, "black-overprint"),
        (b"q /OP gs 0 0 0 1 k BT /F1 8 Tf 50 50 Td (Grattez) Tj ET Q", True, None),
        (b"q /OP0 gs 0 0 0 1 k BT /F1 8 Tf 50 50 Td (Grattez) Tj ET Q", False, "black-overprint"),
        (b"q /OP gs 0 0 0 1 k BT /F1 14 Tf 50 50 Td (Grattez) Tj ET Q", False, None),
        (b"q /OP gs 0 0.5 0 1 k BT /F1 8 Tf 50 50 Td (Grattez) Tj ET Q", False, None),
        (b"q 2 0 0 2 0 0 cm 0 0 0 1 k BT /F1 8 Tf 50 50 Td (Big) Tj ET Q", False, None),
    ],
)
def test_synthetic_files_break_exactly_their_rule(content, overprint, rule):
    pdf = _synthetic(content, overprint=overprint)
    rules = {found[1] for found in check(pdf, "static", {}) if found[1] != "static-plates"}
    assert rules == ({rule} if rule else set())


def test_no_crop_mark_lies_inside_the_sheets_trim_box():
    template = load_template(game_template_dir("chien-chat") / "ticket.toml")
    for sheet in ("SRA3", "A3", "500x700"):
        imposition = impose(template, *parse_sheet(sheet))
        left, bottom, right, top = imposition.trim_box
        for places in (imposition.front, imposition.back):
            marks = crop_marks(places, template, imposition.trim_box)
            assert len(marks) == 2 * 2 * (imposition.cols + imposition.rows)
            for x0, y0, x1, y1 in marks:
                for x, y in ((x0, y0), (x1, y1)):
                    assert not (left < x < right and bottom < y < top), (sheet, x, y)
