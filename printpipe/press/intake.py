"""``printpipe preflight``: what a security printer's prepress checks at intake, on our files.

Every PDF of a print folder is checked against PDF/X-1a:2003 (ISO 15930-4) and the job's own
rules; each violation is one line naming the file, where, and the rule::

    chien-chat-b0001-p000001-000040.pdf: page 3: colour: DeviceRGB fill (rg) in the content

Rules (``RULES``): the PDF version, no encryption, the Info keys (``GTS_PDFXVersion``,
``Trapped``, Title, CreationDate, ModDate, and a job's own Title, Author and Subject, not a
library's defaults), a trailer ``/ID``, exactly one ``GTS_PDFX`` output intent with its
identifier and either a registry name or an embedded CMYK profile, page boxes (a TrimBox, not
with an ArtBox, inside the BleedBox inside the MediaBox), fonts embedded with one tag per
subset, colour (DeviceCMYK, DeviceGray and named separations only: no RGB, no Lab, no ICC
colour spaces in the pages), no transparency (soft masks, constant alpha, blend modes,
transparency groups), no JavaScript and no LZW; and the job: every file listed in ``job.json``
is there with its SHA-256.  Read with pikepdf (qpdf): reportlab writes PDFs but cannot read
them back, and no free PDF/X validator installs here.

The press line's rules (``docs/print-files.md``, "The press line"), by the file's kind in
``job.json`` (``duplex``: a digital composite; ``static``: a conventional run's plates;
``variable``: its PDF/VT-1 imaging):

- ``pdfx-4`` and ``pdf-vt`` (imaging files): PDF 1.6 at most, XMP metadata naming PDF/X-4 and
  PDF/VT-1, Info's ``GTS_PDFXVersion`` PDF/X-4; a ``/DPartRoot`` whose leaves are the pages
  in order, every page's ``/DPart`` a leaf starting at that page with its metadata (the
  sheet, the side, and each ticket's serial and pack);
- ``imaging`` (imaging files): the ``Variable`` plate only;
- ``static-plates``: every composite page is the run's two static forms of its side with
  only ``Variable`` imaging between them; the forms are the same, byte for byte, in every file
  of the same variant and in its static file;
- ``zero-tint``: no fill at tint 0 on a separation (it knocks out only with overprint
  simulated; a plain viewer paints it white);
- ``crop-marks``: no segment stroked in the registration colour inside the TrimBox;
- ``black-overprint``: 100 % black text under 12 pt overprints (``op`` true).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pikepdf

from printpipe.atomic import sha256_file
from printpipe.errors import PrintpipeError
from printpipe.press import preflight_press
from printpipe.render.inks import REGISTRATION, SPOT_NAMES
from printpipe.render.pdfvt import PDFVT_VERSION, PDFX4_VERSION
from printpipe.render.pdfx import PDFX_VERSION

RULES = (
    "job",
    "pdf-version",
    "encryption",
    "info",
    "trailer-id",
    "output-intent",
    "page-boxes",
    "fonts",
    "colour",
    "separations",
    "transparency",
    "actions",
    "compression",
    "pdfx-4",
    "pdf-vt",
    "imaging",
    "static-plates",
    "zero-tint",
    "crop-marks",
    "black-overprint",
)
PDF_VERSIONS = {"duplex": ("1.3", "1.4"), "static": ("1.3", "1.4"), "variable": ("1.6",)}
PDFX_VERSIONS = (PDFX_VERSION, "PDF/X-1:2001", "PDF/X-1a:2001")
LIBRARY_DEFAULTS = {"untitled", "anonymous", "unspecified", ""}
SEPARATIONS = {*SPOT_NAMES, str(REGISTRATION.spotName), "Cyan", "Magenta", "Yellow", "Black"}
FORBIDDEN_SPACES = {
    "/DeviceRGB",
    "/CalRGB",
    "/CalGray",
    "/Lab",
    "/ICCBased",
    "/Indexed",
    "/Pattern",
}
INLINE_IMAGE = re.compile(rb"(?:^|\s)BI(?=\s)")
INLINE_SPACES = {
    "/G": "/DeviceGray",
    "/RGB": "/DeviceRGB",
    "/CMYK": "/DeviceCMYK",
    "/I": "/Indexed",
}
"""An inline image's abbreviated colour space names."""
RGB_OPERATOR = re.compile(rb"(?:^|\s)[-+.\d]+\s+[-+.\d]+\s+[-+.\d]+\s+(rg|RG)(?=\s|$)")
TOLERANCE = 0.01


@dataclass(frozen=True)
class Violation:
    file: str
    where: str
    rule: str
    detail: str

    def __str__(self) -> str:
        where = f" {self.where}:" if self.where else ""
        return f"{self.file}:{where} {self.rule}: {self.detail}"


def preflight(print_dir: Path) -> tuple[list[Violation], dict[str, int]]:
    """Every violation in the PDFs of ``print_dir``, and how many files were checked against
    each standard (PDF/X-1a:2003 for composite and static files, PDF/VT-1 for imaging files)."""
    if not print_dir.is_dir():
        raise PrintpipeError(f"{print_dir} is not a folder")
    pdfs = sorted(print_dir.glob("*.pdf"))
    if not pdfs:
        raise PrintpipeError(f"{print_dir} holds no PDF file")
    found = list(_job_rules(print_dir, pdfs))
    job = _job(print_dir)
    entries = _job_entries(job)
    game, columns = _job_grid(job)
    fingerprints: dict[tuple[str, str], dict[str, str]] = {}
    named_by: dict[str, dict[str, str]] = {}
    checked: dict[str, int] = {}
    for path in pdfs:
        entry = entries.get(path.name, {})
        kind = str(entry.get("kind", "duplex"))
        standard = PDFVT_VERSION if kind == "variable" else PDFX_VERSION
        checked[standard] = checked.get(standard, 0) + 1
        static: dict[str, str] = {}
        named: dict[str, str] = {}
        expected = (
            preflight_press.Expected.of(entry, game, columns)
            if kind == "variable" and game is not None
            else None
        )
        found += [
            Violation(path.name, where, rule, detail)
            for where, rule, detail in check_file(
                path, kind=kind, static=static, expected=expected, named=named
            )
        ]
        if named:
            named_by[path.name] = named
        if kind == "duplex":  # a static file's forms are its own file's (its font subsets)
            for side, digest in static.items():
                key = (str(entry.get("variant", "")), side)
                fingerprints.setdefault(key, {})[path.name] = digest
    found += list(_same_static_plates(fingerprints))
    found += list(_static_files(print_dir, entries, named_by))
    return found, checked


def _job(print_dir: Path) -> dict[str, Any]:
    try:
        job = json.loads((print_dir / "job.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return job if isinstance(job, dict) else {}


def _job_entries(job: dict[str, Any]) -> dict[str, dict]:
    try:
        return {entry["path"]: entry for entry in job["files"] if isinstance(entry, dict)}
    except (KeyError, TypeError):
        return {}


def _job_grid(job: dict[str, Any]) -> tuple[int | None, int | None]:
    """The job's game number and its sheet's columns (a back's slots are mirrored)."""
    try:
        game = int(job["game"]["number"])
    except (KeyError, TypeError, ValueError):
        return None, None
    try:
        columns = int(job["imposition"]["columns"])
    except (KeyError, TypeError, ValueError):
        columns = None
    return game, columns


def _static_files(
    print_dir: Path, entries: dict[str, dict], named_by: dict[str, dict[str, str]]
) -> Iterator[Violation]:
    """Each static file is the one its imaging files were made to print over (their own
    metadata and ``job.json`` name its SHA-256); each one they name is in the folder."""
    statics = {name for named in named_by.values() for name in named}
    listed = {
        str(entry.get("static")): str(entry.get("static_sha256"))
        for entry in entries.values()
        if entry.get("kind") == "variable" and entry.get("static_sha256")
    }
    statics |= {name for name, entry in entries.items() if entry.get("kind") == "static"}
    for name in sorted(statics | set(listed)):
        path = print_dir / name
        if not path.is_file():
            users = sorted(imaging for imaging, named in named_by.items() if name in named)
            for imaging in users:
                yield Violation(
                    imaging,
                    "",
                    "static-plates",
                    f"the static file {name} it prints over is missing",
                )
            continue
        digest = sha256_file(path)
        for detail in preflight_press.static_named(name, digest, named_by, listed.get(name)):
            yield Violation(name, "", "static-plates", detail)


def _same_static_plates(
    fingerprints: dict[tuple[str, str], dict[str, str]],
) -> Iterator[Violation]:
    """Every file of one variant places the same static forms on each side."""
    for (variant, side), files in sorted(fingerprints.items()):
        counts: dict[str, int] = {}
        for digest in files.values():
            counts[digest] = counts.get(digest, 0) + 1
        usual = max(counts, key=lambda d: (counts[d], d))
        for name, digest in sorted(files.items()):
            if digest != usual:
                yield Violation(
                    name,
                    "",
                    "static-plates",
                    f"its {side} static plates differ from the other files' of "
                    f"{variant or 'the run'}",
                )


def preflight_summary(violations: list[Violation], checked: dict[str, int]) -> str:
    """The closing line of ``printpipe preflight`` (``checked``: files per standard)."""
    files = sum(checked.values())
    if not violations:
        standards = " and ".join(
            f"{count} file(s) pass {standard}" if len(checked) > 1 else f"pass {standard}"
            for standard, count in sorted(checked.items())
        )
        lead = "" if len(checked) > 1 else f"{files} file(s) "
        return f"preflight: {lead}{standards} and the job's rules"
    rules = sorted({v.rule for v in violations})
    return f"preflight: {len(violations)} violation(s) in {files} file(s): {', '.join(rules)}"


def _job_rules(print_dir: Path, pdfs: list[Path]) -> Iterator[Violation]:
    job_path = print_dir / "job.json"
    try:
        job = json.loads(job_path.read_text(encoding="utf-8"))
        listed = {entry["path"]: entry["sha256"] for entry in job["files"]}
    except FileNotFoundError:
        yield Violation("job.json", "", "job", "missing: the folder is not a finished export")
        return
    except (OSError, ValueError, KeyError, TypeError) as exc:
        yield Violation("job.json", "", "job", f"unreadable: {exc}")
        return
    names = {path.name for path in pdfs}
    for name in sorted(set(listed) - names):
        yield Violation(name, "", "job", "listed in job.json but missing")
    for path in pdfs:
        if path.name not in listed:
            yield Violation(path.name, "", "job", "not listed in job.json")
        elif sha256_file(path) != listed[path.name]:
            yield Violation(path.name, "", "job", "its SHA-256 differs from job.json's")


def check_file(
    path: Path,
    *,
    kind: str = "duplex",
    static: dict[str, str] | None = None,
    expected: preflight_press.Expected | None = None,
    named: dict[str, str] | None = None,
) -> Iterator[tuple[str, str, str]]:
    """(where, rule, detail) of every violation in one PDF of ``kind`` (``duplex``,
    ``static`` or ``variable``); ``static`` receives the fingerprint of each side's static
    forms, ``named`` the static file an imaging file names (name -> SHA-256); ``expected``:
    what ``job.json`` says an imaging file holds."""
    try:
        pdf = pikepdf.open(path)
    except pikepdf.PasswordError:
        yield "", "encryption", "the file is encrypted"
        return
    except pikepdf.PdfError as exc:
        yield "", "pdf-version", f"not a readable PDF: {exc}"
        return
    with pdf:
        yield from _document_rules(pdf, kind, expected, {} if named is None else named)
        forms_seen: set[tuple[int, int]] = set()
        for number, page in enumerate(pdf.pages, start=1):
            where = f"page {number}"
            yield from ((where, rule, detail) for rule, detail in _box_rules(page))
            yield from _resource_rules(page.obj, where, forms_seen)
            for rule, detail in _content_rules(page.obj):
                yield where, rule, detail
        yield from preflight_press.check(pdf, kind, static if static is not None else {})


def _document_rules(
    pdf: pikepdf.Pdf,
    kind: str = "duplex",
    expected: preflight_press.Expected | None = None,
    named: dict[str, str] | None = None,
) -> Iterator[tuple[str, str, str]]:
    """The file is what it claims (Info's and the XMP's ``GTS_PDFXVersion``, the XMP's
    ``GTS_PDFVTVersion``), and the kind of file ``job.json`` says it is."""
    claims = preflight_press.claims_of(pdf)
    claimed = claims.pdfx
    wanted = "PDF/X-4 and PDF/VT-1" if kind == "variable" else PDFX_VERSION
    if claims.info and claims.xmp_pdfx and claims.info != claims.xmp_pdfx:
        yield "", "info", f"Info claims {claims.info!r}, the XMP metadata {claims.xmp_pdfx!r}"
    if not claimed:
        yield "", "info", f"the file claims no PDF/X version (GTS_PDFXVersion): expected {wanted}"
    elif claimed == PDFX4_VERSION:
        yield from preflight_press.pdfx4_document(pdf, claims)
        if kind != "variable":
            yield "", "info", f"it claims PDF/X-4: job.json's {kind} files are {PDFX_VERSION}"
    elif claimed in PDFX_VERSIONS:
        if pdf.pdf_version not in ("1.3", "1.4"):
            yield "", "pdf-version", f"PDF {pdf.pdf_version}: {claimed} is PDF 1.3 or 1.4"
        if kind == "variable":
            yield "", "pdf-vt", f"it claims {claimed}: an imaging file is PDF/X-4 and PDF/VT-1"
    else:
        yield "", "info", f"it claims {claimed!r}, which is not {wanted}"
    if claims.xmp_pdfvt or kind == "variable":
        yield from preflight_press.pdfvt_document(
            pdf, claims, expected, {} if named is None else named
        )
    if pdf.is_encrypted:
        yield "", "encryption", "the file is encrypted"
    info = pdf.trailer.get("/Info")
    info = info if isinstance(info, pikepdf.Dictionary) else pikepdf.Dictionary()
    trapped = info.get("/Trapped")
    if trapped not in (pikepdf.Name("/True"), pikepdf.Name("/False")):
        yield "", "info", f"Trapped is {trapped or 'missing'}, expected /True or /False"
    for key in ("/Title", "/CreationDate", "/ModDate"):
        if not str(info.get(key, "")).strip():
            yield "", "info", f"{key[1:]} is missing"
    for key in ("/Title", "/Author", "/Subject"):
        if key in info and str(info[key]).strip().lower() in LIBRARY_DEFAULTS:
            yield "", "info", f"{key[1:]} is {str(info[key])!r}: it must name the job"
    if str(info.get("/CreationDate", "")).startswith("D:2000010100"):
        yield "", "info", "CreationDate is a library's fixed date (2000-01-01), not the job's"
    if "/ID" not in pdf.trailer:
        yield "", "trailer-id", "the trailer has no /ID"
    embedded = claimed == PDFX4_VERSION
    yield from (("", "output-intent", detail) for detail in _output_intent_rules(pdf, embedded))
    root = pdf.Root
    if "/Names" in root and "/JavaScript" in root.Names:
        yield "", "actions", "the document holds JavaScript"
    if "/OpenAction" in root or "/AA" in root:
        yield "", "actions", "the document runs an action when opened"


def _output_intent_rules(pdf: pikepdf.Pdf, embedded: bool = False) -> Iterator[str]:
    """Exactly one PDF/X output intent, a registered name or an embedded CMYK output profile;
    ``embedded`` (PDF/X-4): the profile itself."""
    intents = pdf.Root.get("/OutputIntents")
    pdfx = [
        i
        for i in (intents or [])
        if isinstance(i, pikepdf.Dictionary) and i.get("/S") == pikepdf.Name("/GTS_PDFX")
    ]
    if len(pdfx) != 1:
        yield f"{len(pdfx)} GTS_PDFX output intents in /OutputIntents, expected exactly 1"
        return
    (intent,) = pdfx
    if not str(intent.get("/OutputConditionIdentifier", "")).strip():
        yield "the output intent has no OutputConditionIdentifier"
    profile = intent.get("/DestOutputProfile")
    if profile is None:
        if embedded:
            yield (
                "PDF/X-4 embeds the output profile (DestOutputProfile); this output intent "
                "only names a printing condition"
            )
        elif not str(intent.get("/RegistryName", "")).strip():
            yield "the output intent embeds no profile and names no registered characterisation"
    else:
        data = profile.read_bytes()
        if data[36:40] != b"acsp" or data[16:20] != b"CMYK" or profile.get("/N") != 4:
            yield "the embedded output profile is not a CMYK ICC profile"
        elif data[12:16] != b"prtr":
            yield "the embedded output profile is not an output (printer) profile"


def _box(page: pikepdf.Page, name: str) -> tuple[float, float, float, float] | None:
    value = page.obj.get(name)
    if value is None:
        return None
    left, bottom, right, top = (float(v) for v in value)
    return min(left, right), min(bottom, top), max(left, right), max(bottom, top)


def _inside(inner: tuple[float, ...], outer: tuple[float, ...]) -> bool:
    return (
        inner[0] >= outer[0] - TOLERANCE
        and inner[1] >= outer[1] - TOLERANCE
        and inner[2] <= outer[2] + TOLERANCE
        and inner[3] <= outer[3] + TOLERANCE
    )


def _box_rules(page: pikepdf.Page) -> Iterator[tuple[str, str]]:
    media = _box(page, "/MediaBox")
    trim, art, bleed = _box(page, "/TrimBox"), _box(page, "/ArtBox"), _box(page, "/BleedBox")
    if trim is None and art is None:
        yield "page-boxes", "no TrimBox"
    if trim is not None and art is not None:
        yield "page-boxes", "both a TrimBox and an ArtBox"
    if media is None:
        yield "page-boxes", "no MediaBox"
        return
    outer = bleed or media
    if bleed is not None and not _inside(bleed, media):
        yield "page-boxes", "the BleedBox is not inside the MediaBox"
    for box, name in ((trim, "TrimBox"), (art, "ArtBox")):
        if box is not None and not _inside(box, outer):
            yield (
                "page-boxes",
                f"the {name} is not inside the {'BleedBox' if bleed else 'MediaBox'}",
            )


def _resource_rules(
    owner: pikepdf.Object, where: str, seen: set[tuple[int, int]]
) -> Iterator[tuple[str, str, str]]:
    """Fonts, colour spaces, graphics states and images of a page or form, forms recursively
    (each shared form or resource dictionary once)."""
    group = owner.get("/Group")
    if isinstance(group, pikepdf.Dictionary) and group.get("/S") == pikepdf.Name("/Transparency"):
        yield where, "transparency", "a transparency group"
    resources = owner.get("/Resources")
    if not isinstance(resources, pikepdf.Dictionary):
        return
    if resources.is_indirect:
        if resources.objgen in seen:
            return
        seen.add(resources.objgen)
    for name, font in (resources.get("/Font") or {}).items():
        yield from ((where, "fonts", f"{name}: {d}") for d in _font_rules(font))
    for name, space in (resources.get("/ColorSpace") or {}).items():
        yield from ((where, rule, f"{name}: {d}") for rule, d in _colour_space_rules(space))
    for name, state in (resources.get("/ExtGState") or {}).items():
        yield from ((where, "transparency", f"{name}: {d}") for d in _gstate_rules(state))
    for name, xobject in (resources.get("/XObject") or {}).items():
        if not isinstance(xobject, pikepdf.Stream):
            continue
        if xobject.is_indirect:
            if xobject.objgen in seen:
                continue
            seen.add(xobject.objgen)
        label = f"{where}, {xobject.get('/Subtype')} {name}"
        if xobject.get("/Subtype") == pikepdf.Name("/Image"):
            if "/SMask" in xobject or "/Mask" in xobject:
                yield label, "transparency", "an image with a soft mask"
            image_space = xobject.get("/ColorSpace")
            if image_space is not None:
                yield from ((label, rule, d) for rule, d in _colour_space_rules(image_space))
            if "/LZWDecode" in str(xobject.get("/Filter", "")):
                yield label, "compression", "LZW"
        else:
            yield from _resource_rules(xobject, label, seen)
            for rule, detail in _content_rules(xobject):
                yield label, rule, detail


def _font_rules(font: pikepdf.Object) -> Iterator[str]:
    subtype = font.get("/Subtype")
    if subtype == pikepdf.Name("/Type0"):
        font = font.DescendantFonts[0]
    elif subtype == pikepdf.Name("/Type3"):
        return
    descriptor = font.get("/FontDescriptor")
    base = str(font.get("/BaseFont", "?"))
    if descriptor is None or not any(
        key in descriptor for key in ("/FontFile", "/FontFile2", "/FontFile3")
    ):
        yield f"{base} is not embedded"
    if base[1:8].endswith("+") and base[1:7] == "AAAAAA":
        yield f"{base}: the subset tag AAAAAA is a library's default, not the subset's own"


def _colour_space_rules(space: pikepdf.Object) -> Iterator[tuple[str, str]]:
    family = space[0] if isinstance(space, pikepdf.Array) else space
    family_name = str(family)
    if family_name in FORBIDDEN_SPACES:
        yield "colour", f"colour space {family_name[1:]} (PDF/X-1a: CMYK, Gray and spots only)"
    elif family_name == "/Separation":
        name = str(space[1])[1:]
        if name in ("", "None"):
            yield "separations", "a separation without a name"
        elif name not in SEPARATIONS:
            yield "separations", f"separation {name!r} is not one of this job's inks"
        alternate = str(space[2])
        if alternate != "/DeviceCMYK":
            yield "colour", f"separation {name!r} has a {alternate[1:]} alternate, not DeviceCMYK"
    elif family_name == "/DeviceN":
        for ink in space[1]:
            if str(ink)[1:] not in SEPARATIONS:
                yield "separations", f"DeviceN ink {str(ink)[1:]!r} is not one of this job's inks"


def _gstate_rules(state: pikepdf.Object) -> Iterator[str]:
    smask = state.get("/SMask")
    if smask is not None and smask != pikepdf.Name("/None"):
        yield "a soft mask"
    for key in ("/CA", "/ca"):
        if key in state and float(state[key]) != 1:
            yield f"constant alpha {key[1:]} {float(state[key]):g}"
    blend = state.get("/BM")
    if blend is not None and str(blend) not in ("/Normal", "/Compatible"):
        yield f"blend mode {str(blend)[1:]}"


def _content_rules(owner: pikepdf.Object) -> Iterator[tuple[str, str]]:
    """RGB operators in a page's or form's content (a fast scan, confirmed by the parser)."""
    contents = owner.get("/Contents") if "/Contents" in owner else owner
    streams = contents if isinstance(contents, pikepdf.Array) else [contents]
    for stream in streams:
        if not isinstance(stream, pikepdf.Stream):
            continue
        if "/LZWDecode" in str(stream.get("/Filter", "")):
            yield "compression", "LZW"
        data = stream.read_bytes()
        if _has_rgb_operator(data) and _parsed_rgb(stream):
            yield "colour", "DeviceRGB colour (rg or RG) in the content"
        if b"BI" in data and INLINE_IMAGE.search(data):
            for image in _inline_images(stream):
                space = image.obj.get("/CS", image.obj.get("/ColorSpace"))
                family = str(space[0] if isinstance(space, pikepdf.Array) else space)
                family = INLINE_SPACES.get(family, family)
                if family in FORBIDDEN_SPACES:
                    yield (
                        "colour",
                        f"an inline image in {family[1:]} (PDF/X-1a: CMYK, Gray and spots only)",
                    )


def _has_rgb_operator(data: bytes) -> bool:
    """:data:`RGB_OPERATOR` in ``data``: looked for only where ``rg`` or ``RG`` is, a byte
    search many times faster than the pattern's scan of a press file's 150 MB of content."""
    return (b"rg" in data or b"RG" in data) and RGB_OPERATOR.search(data) is not None


def _inline_images(stream: pikepdf.Stream) -> list[pikepdf.PdfInlineImage]:
    return [
        item.iimage
        for item in pikepdf.parse_content_stream(stream)
        if isinstance(item, pikepdf.ContentStreamInlineImage)
    ]


def _parsed_rgb(stream: pikepdf.Stream) -> bool:
    return any(
        str(instruction.operator) in ("rg", "RG")
        for instruction in pikepdf.parse_content_stream(stream)
    )
