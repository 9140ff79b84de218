"""The press line's preflight rules (``printpipe preflight``, :mod:`printpipe.press.intake`).

What a scratch-ticket press line needs beyond PDF/X-1a (``docs/print-files.md``, "The press
line"): files that are what they claim (PDF/X-4 and PDF/VT-1 imaging files, checked against
what they say of themselves), static plates that never change from sheet to sheet, and nothing
that looks right only with overprint simulated.  Each function yields ``(where, rule,
detail)``.

- ``pdfx-4``: a file that claims PDF/X-4 (Info's or the XMP's ``GTS_PDFXVersion``): PDF 1.6 at
  most, XMP metadata naming it with the ids PDF/X-4 asks for, every Info entry and its XMP
  equivalent saying the same (Title ``dc:title``, Author ``dc:creator``, Subject
  ``dc:description``, Creator ``xmp:CreatorTool``, Producer ``pdf:Producer``, the dates,
  Trapped); its output profile embedded (the ``output-intent`` rule);
- ``pdf-vt``: a file that claims PDF/VT-1 (``pdfvtid:GTS_PDFVTVersion``), or an imaging file:
  PDF/X-4, ``GTS_PDFVTModDate``, a ``/DPartRoot`` whose leaves, in the tree's order, start at
  the pages in page order, each kid's ``/Parent`` its node, every page's ``/DPart`` its leaf;
  the leaves' metadata (sheet, side, tickets) exactly what ``job.json`` says the file holds
  (cut and stack; a back's slots mirrored), each serial's pack and ticket as written beside
  it; the static file it names is the one in the folder (:func:`static_named`);
- ``imaging`` (imaging files): the ``Variable`` plate only, in the pages and in every form
  they place, nested forms included; no image but a stencil mask (which paints in the current
  colour) or one on the ``Variable`` plate, inline images included;
- ``static-plates``: every composite page is ``q /under Do Q``, ``Variable`` imaging, ``q /over
  Do Q``, with the same two forms on every page of a side; a static file's pages are those two
  forms alone.  The forms' fingerprint (their content, and that of every form they place,
  recursively) goes back to :mod:`printpipe.press.intake`, which compares it across the composite
  files of one variant;
- ``zero-tint``: a fill (or a stroke) at tint 0 of a one-component (separation) colour, which
  only a RIP or an overprint preview shows as no ink (a plain viewer paints it white), painted
  directly or, a fill, through a form that paints in the colour it is placed with;
- ``crop-marks``: a segment stroked in the registration colour ``/All`` inside the TrimBox;
- ``black-overprint``: 100 % process black text under 12 pt without fill overprint and
  overprint mode 1 (with mode 0 a process colour paints its zero components too: the black
  would still knock the C, M and Y under it out).

The last two follow the graphics state through the first front and back page and every form
they place (a small interpreter on qpdf's content parser): the static plates rule makes every
other page's marks and artwork the same forms.  ``zero-tint`` scans every form of the file
and every page's own content.
"""

from __future__ import annotations

import calendar
import hashlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import pikepdf
from pikepdf import Name

from printpipe.ids import TicketId, parse_inventory_code
from printpipe.render.inks import REGISTRATION, VARIABLE
from printpipe.render.pdfvt import PDFVT_VERSION, PDFX4_VERSION

Found = tuple[str, str, str]
REGISTRATION_NAME = str(REGISTRATION.spotName)
VARIABLE_NAME = str(VARIABLE.spotName)
SMALL_TEXT = 12.0
"""Points: black text under this size must overprint."""
_COMPOSITE = re.compile(rb"^(.*?)q (/\S+) Do Q\n(.*)q (/\S+) Do Q\n\s*$", re.S)
_STATIC = re.compile(rb"^(.*?)q (/\S+) Do Q\nq (/\S+) Do Q\n\s*$", re.S)
_PREAMBLE = re.compile(rb"^[\s\d.\-]*cm\s*$|^\s*$")
_COLOUR_SPACE = re.compile(rb"/([^\s/\[\]<>()]+)\s+(?:cs|CS)(?=\s)")
_DEVICE_COLOUR = re.compile(rb"[\d.]\s+(?:k|K|g|G|rg|RG)(?=\s|$)")
_ZERO_FILL = re.compile(
    rb"(?:^|\s)(?:0|0\.0*|\.0+)\s+(?:scn|sc)\s((?:(?!(?:^|\s)(?:scn|sc|k|g|rg|cs|Q)\s).)*?)"
    rb"(?:(?:^|\s)(f|f\*|F|B|B\*|b|b\*|Tj|TJ|')|/([^\s/\[\]<>()]+)\s+Do)(?=\s|$)",
    re.S,
)
_MARKING = {"S", "s", "B", "B*", "b", "b*", "Tj", "TJ", "'", '"'}
"""What the walk looks at: strokes (marks) and text."""
_ZERO_STROKE = re.compile(
    rb"(?:^|\s)(?:0|0\.0*|\.0+)\s+(?:SCN|SC)\s(?:(?!(?:^|\s)(?:SCN|SC|K|G|RG|CS|Q)\s).)*?"
    rb"(?:^|\s)(?:S|s|B|B\*|b|b\*)(?=\s|$)",
    re.S,
)
_FORM_PLACE = re.compile(rb"/([^\s/\[\]<>()]+)\s+Do(?=\s|$)")
_INLINE_IMAGE = re.compile(rb"(?:^|\s)BI(?=\s)")
_FILL_SETTERS = {"cs", "sc", "scn", "k", "g", "rg"}
_FILL_PAINTERS = {"f", "F", "f*", "B", "B*", "b", "b*", "Tj", "TJ", "'", '"', "sh"}
XMP_OF_INFO = {
    "/Title": "dc:title",
    "/Author": "dc:creator",
    "/Subject": "dc:description",
    "/Creator": "xmp:CreatorTool",
    "/Producer": "pdf:Producer",
    "/CreationDate": "xmp:CreateDate",
    "/ModDate": "xmp:ModifyDate",
    "/Trapped": "pdf:Trapped",
}
"""Info's entries and their XMP equivalents, which a PDF/X-4 file keeps in step."""


# -- what a file claims ----------------------------------------------------------------------
@dataclass(frozen=True)
class Claims:
    """What a file says it is: Info's ``GTS_PDFXVersion``, and its XMP metadata's."""

    info: str
    xmp_pdfx: str
    xmp_pdfvt: str
    metadata: dict[str, Any]
    """The XMP's entries (``prefix:Name`` -> value), empty without XMP."""
    xmp_error: str = ""

    @property
    def pdfx(self) -> str:
        return self.xmp_pdfx or self.info


def claims_of(pdf: pikepdf.Pdf) -> Claims:
    info = _info(pdf)
    stream = pdf.Root.get("/Metadata")
    metadata: dict[str, Any] = {}
    error = ""
    if isinstance(stream, pikepdf.Stream):
        try:
            with pdf.open_metadata(set_pikepdf_as_editor=False, update_docinfo=False) as meta:
                metadata = {str(key): meta[key] for key in meta}
        except Exception as exc:  # a malformed XMP packet: the rule names it
            error = f"the XMP metadata cannot be read: {exc}"
    return Claims(
        str(info.get("/GTS_PDFXVersion", "")),
        str(_xmp(metadata, "pdfxid:GTS_PDFXVersion")),
        str(_xmp(metadata, "pdfvtid:GTS_PDFVTVersion")),
        metadata,
        error,
    )


_NAMESPACES = {
    "dc": "http://purl.org/dc/elements/1.1/",
    "xmp": "http://ns.adobe.com/xap/1.0/",
    "pdf": "http://ns.adobe.com/pdf/1.3/",
    "xmpMM": "http://ns.adobe.com/xap/1.0/mm/",
    "pdfxid": "http://www.npes.org/pdfx/ns/id/",
    "pdfvtid": "http://www.npes.org/pdfvt/ns/id/",
}


def _xmp(metadata: dict[str, Any], key: str) -> Any:
    """An XMP entry by its usual prefix (pikepdf keys entries by namespace URI)."""
    prefix, name = key.split(":", 1)
    return metadata.get(f"{{{_NAMESPACES[prefix]}}}{name}", metadata.get(key, ""))


def _info(pdf: pikepdf.Pdf) -> pikepdf.Dictionary:
    info = pdf.trailer.get("/Info")
    return info if isinstance(info, pikepdf.Dictionary) else pikepdf.Dictionary()


def _seconds(text: str) -> int | None:
    """A PDF date (``D:YYYYMMDDHHmmSS+HH'mm'``) or an XMP date, as seconds (UTC)."""
    pdf = re.fullmatch(r"D:(\d{14})(?:([+-])(\d\d)'?(\d\d)'?|Z)?", text.strip())
    if pdf is not None:
        stamp = calendar.timegm(time.strptime(pdf.group(1), "%Y%m%d%H%M%S"))
        offset = int(pdf.group(3) or 0) * 3600 + int(pdf.group(4) or 0) * 60
        return stamp - offset if pdf.group(2) == "+" else stamp + offset
    xmp = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.\d+)?(Z|([+-])(\d\d):(\d\d))", text)
    if xmp is not None:
        stamp = calendar.timegm(time.strptime(xmp.group(1), "%Y-%m-%dT%H:%M:%S"))
        offset = int(xmp.group(4) or 0) * 3600 + int(xmp.group(5) or 0) * 60
        return stamp - offset if xmp.group(3) == "+" else stamp + offset
    return None


def _same(key: str, info_value: str, xmp_value: Any) -> bool:
    if key in ("/CreationDate", "/ModDate"):
        return _seconds(info_value) is not None and _seconds(info_value) == _seconds(str(xmp_value))
    if key == "/Trapped":
        return info_value.lstrip("/") == str(xmp_value)
    if key == "/Author" and isinstance(xmp_value, list):
        return [info_value] == [str(v) for v in xmp_value]
    return info_value == str(xmp_value)


# -- PDF/X-4 and PDF/VT-1 --------------------------------------------------------------------
def pdfx4_document(pdf: pikepdf.Pdf, claims: Claims) -> Iterator[Found]:
    """A file that claims PDF/X-4 (ISO 15930-7): its version, XMP and Info."""
    if pdf.pdf_version > "1.6":
        yield "", "pdfx-4", f"PDF {pdf.pdf_version}: PDF/X-4 is PDF 1.6 at most"
    info = _info(pdf)
    if claims.info and claims.info != PDFX4_VERSION:
        yield (
            "",
            "pdfx-4",
            f"Info's GTS_PDFXVersion is {claims.info!r}, the XMP's {PDFX4_VERSION!r}",
        )
    if info.get("/Trapped") not in (Name("/True"), Name("/False")):
        yield "", "pdfx-4", "Info's Trapped is not /True or /False"
    if claims.xmp_error:
        yield "", "pdfx-4", claims.xmp_error
        return
    if not claims.metadata:
        yield "", "pdfx-4", "no XMP metadata stream in the catalogue"
        return
    if claims.xmp_pdfx != PDFX4_VERSION:
        yield "", "pdfx-4", f"the XMP metadata's pdfxid:GTS_PDFXVersion is not {PDFX4_VERSION!r}"
    for key in ("xmpMM:DocumentID", "xmpMM:VersionID", "xmpMM:RenditionClass", "dc:title"):
        if not _xmp(claims.metadata, key):
            yield "", "pdfx-4", f"the XMP metadata has no {key}"
    for key in ("xmp:CreateDate", "xmp:ModifyDate", "pdf:Trapped"):
        if not _xmp(claims.metadata, key):
            yield "", "pdfx-4", f"the XMP metadata has no {key}"
    for key, xmp_key in XMP_OF_INFO.items():
        if key not in info:
            continue
        value = _xmp(claims.metadata, xmp_key)
        if value in ("", None, []):
            yield "", "pdfx-4", f"Info's {key[1:]} has no XMP equivalent ({xmp_key})"
        elif not _same(key, str(info[key]), value):
            yield "", "pdfx-4", f"Info's {key[1:]} and the XMP's {xmp_key} differ"


@dataclass(frozen=True)
class Expected:
    """What ``job.json`` says an imaging file holds."""

    game: int
    first: TicketId
    pack_size: int
    tickets: int
    sheets: int
    columns: int | None
    static: str | None
    static_sha256: str | None

    @staticmethod
    def of(entry: dict[str, Any], game: int, columns: int | None) -> Expected | None:
        try:
            first = parse_inventory_code(str(entry["first_serial"]))
            packs = int(entry["packs"]["last"]) - int(entry["packs"]["first"]) + 1
            tickets, sheets = int(entry["tickets"]), int(entry["sheets"])
        except (KeyError, TypeError, ValueError):
            return None
        if first is None or packs < 1 or tickets % packs:
            return None
        return Expected(
            game, first, tickets // packs, tickets, sheets, columns,
            entry.get("static"), entry.get("static_sha256"),
        )  # fmt: skip

    def page(self, sheet: int, side: str) -> list[tuple[int, str]]:
        """(slot on the page, serial) of the tickets on side ``side`` of sheet ``sheet``
        (from 0), in slot order: cut and stack, a back's columns mirrored."""
        placed = []
        k = 0
        while (index := k * self.sheets + sheet) < self.tickets:
            pack, ticket = divmod(index, self.pack_size)
            serial = TicketId(self.game, self.first.pack + pack, ticket).serial
            slot = k
            if side == "/Back" and self.columns:
                row, col = divmod(k, self.columns)
                slot = row * self.columns + self.columns - 1 - col
            placed.append((slot, serial))
            k += 1
        return sorted(placed)


def pdfvt_document(
    pdf: pikepdf.Pdf, claims: Claims, expected: Expected | None, named: dict[str, str]
) -> Iterator[Found]:
    """A file that claims PDF/VT-1 (ISO 16612-2), or an imaging file: its claim and its
    document parts; ``named`` receives the static file its metadata names (name -> SHA-256)."""
    if claims.xmp_pdfvt != PDFVT_VERSION:
        found = claims.xmp_pdfvt or "missing"
        yield (
            "",
            "pdf-vt",
            f"the XMP metadata's pdfvtid:GTS_PDFVTVersion is {found!r}, not PDF/VT-1",
        )
    if claims.pdfx != PDFX4_VERSION:
        yield "", "pdf-vt", "PDF/VT-1 is PDF/X-4, which the file does not claim"
    if claims.metadata and _seconds(str(_xmp(claims.metadata, "pdfvtid:GTS_PDFVTModDate"))) is None:
        yield "", "pdf-vt", "the XMP metadata has no pdfvtid:GTS_PDFVTModDate"
    yield from _dparts(pdf, expected, named)


def _kids(node: pikepdf.Object) -> list[pikepdf.Object] | None:
    kids = node.get("/DParts")
    if kids is None:
        return None
    return [kid for group in kids if isinstance(group, pikepdf.Array) for kid in group]


def _dparts(pdf: pikepdf.Pdf, expected: Expected | None, named: dict[str, str]) -> Iterator[Found]:
    root = pdf.Root.get("/DPartRoot")
    if not isinstance(root, pikepdf.Dictionary) or "/DPartRootNode" not in root:
        yield "", "pdf-vt", "no /DPartRoot with a /DPartRootNode in the catalogue"
        return
    top = root.DPartRootNode
    top_dpm = top.get("/DPM")
    file_dpm = top_dpm.get("/File") if isinstance(top_dpm, pikepdf.Dictionary) else None
    static = file_dpm.get("/Static") if isinstance(file_dpm, pikepdf.Dictionary) else None
    if isinstance(static, pikepdf.Dictionary) and "/Name" in static:
        named[str(static.Name)] = str(static.get("/SHA256", ""))
    if expected is not None and expected.static is not None:
        if not isinstance(static, pikepdf.Dictionary):
            yield "", "pdf-vt", "its document parts name no static file it prints over"
        elif str(static.get("/Name")) != expected.static:
            yield (
                "",
                "pdf-vt",
                f"its document parts name the static file {str(static.Name)!r}, job.json "
                f"{expected.static!r}",
            )
    leaves: list[pikepdf.Object] = []
    stack: list[tuple[pikepdf.Object, int]] = [(top, 0)]
    parents_wrong = 0
    while stack:
        node, depth = stack.pop()
        kids = _kids(node)
        if kids is None:
            leaves.append(node)
            continue
        for kid in kids:
            if (
                not isinstance(kid, pikepdf.Dictionary)
                or kid.get("/Parent") is None
                or kid.Parent.objgen != node.objgen
            ):
                parents_wrong += 1
        stack.extend(
            (kid, depth + 1) for kid in reversed(kids) if isinstance(kid, pikepdf.Dictionary)
        )
    if parents_wrong:
        yield (
            "",
            "pdf-vt",
            f"{parents_wrong} document part(s) whose /Parent is not the node that lists them",
        )
    pages = pdf.pages
    if len(leaves) != len(pages):
        yield "", "pdf-vt", f"{len(leaves)} leaf document parts for {len(pages)} pages"
    order = {page.obj.objgen: number for number, page in enumerate(pages, start=1)}
    starts = [order.get(leaf.Start.objgen) if "/Start" in leaf else None for leaf in leaves]
    out_of_order = [(i + 1, start) for i, start in enumerate(starts) if start != i + 1]
    if out_of_order:
        i, start = out_of_order[0]
        yield (
            "",
            "pdf-vt",
            (
                f"{len(out_of_order)} leaf document part(s) out of page order: the tree's leaf {i} "
                f"starts at {'no page' if start is None else f'page {start}'}"
            ),
        )
    for number, page in enumerate(pages, start=1):
        where = f"page {number}"
        leaf = page.obj.get("/DPart")
        if leaf is None:
            yield where, "pdf-vt", "the page has no /DPart"
            continue
        if "/Start" not in leaf or leaf.Start.objgen != page.obj.objgen:
            yield where, "pdf-vt", "its /DPart is not the leaf that starts at this page"
        if "/End" in leaf and leaf.End.objgen != page.obj.objgen:
            yield where, "pdf-vt", "its /DPart ends at another page (a page side is one leaf)"
        yield from ((where, "pdf-vt", d) for d in _leaf_metadata(leaf, number, expected))


def _leaf_metadata(leaf: pikepdf.Object, number: int, expected: Expected | None) -> Iterator[str]:
    dpm = leaf.get("/DPM")
    tickets = dpm.get("/Tickets") if isinstance(dpm, pikepdf.Dictionary) else None
    if not isinstance(tickets, pikepdf.Array) or any(
        not isinstance(t, pikepdf.Dictionary) or "/Serial" not in t or "/Pack" not in t
        for t in tickets
    ):
        yield "its /DPart has no metadata naming each ticket's serial and pack"
        return
    assert isinstance(dpm, pikepdf.Dictionary)
    sheet, side = (number - 1) // 2, "/Front" if number % 2 else "/Back"
    if dpm.get("/Sheet") != sheet + 1 or str(dpm.get("/Side")) != side:
        yield (
            f"its /DPart says sheet {dpm.get('/Sheet')} {dpm.get('/Side')}, not sheet "
            f"{sheet + 1} {side}"
        )
    parent = leaf.get("/Parent")
    parent_dpm = parent.get("/DPM") if isinstance(parent, pikepdf.Dictionary) else None
    if not isinstance(parent_dpm, pikepdf.Dictionary) or parent_dpm.get("/Sheet") != sheet + 1:
        yield f"its /DPart's parent is not sheet {sheet + 1}'s node"
    listed = []
    for t in tickets:
        serial = str(t.Serial)
        listed.append((int(t.get("/Slot", -1)), serial))
        ticket_id = parse_inventory_code(serial)
        if (
            ticket_id is None
            or ticket_id.pack != t.Pack
            or ticket_id.ticket != t.get("/Ticket", ticket_id.ticket)
        ):
            yield f"its /DPart names {serial}, whose pack or ticket number is not the one beside it"
    if expected is not None:
        want = expected.page(sheet, side)
        if listed != want:
            wrong = sorted(set(listed) ^ set(want))[:1]
            yield (
                f"its /DPart names {len(listed)} ticket(s) that are not the {len(want)} job.json "
                f"puts on this page (first difference at slot {wrong[0][0] if wrong else '?'})"
            )


def static_named(
    name: str, sha256: str, named_by: dict[str, dict[str, str]], listed: str | None
) -> Iterator[str]:
    """A static file of a conventional folder against what the imaging files printed over it
    say of it (``named_by``: imaging file -> {static file: SHA-256}) and ``job.json`` (its
    ``static_sha256``, ``listed``)."""
    for imaging, statics in sorted(named_by.items()):
        if name in statics and statics[name] != sha256:
            yield f"its SHA-256 is not the one {imaging} was made to print over"
    if listed is not None and listed != sha256:
        yield "its SHA-256 is not the one job.json's imaging files name"


# -- the plates ----------------------------------------------------------------------------
def check(pdf: pikepdf.Pdf, kind: str, static: dict[str, str]) -> Iterator[Found]:
    """The press line's rules on one open file of ``kind``; ``static`` receives each side's
    fingerprint of static forms (``front``, ``back``)."""
    pages = pdf.pages
    if kind == "variable":
        checked: set[tuple[int, int]] = set()
        for number, page in enumerate(pages, start=1):
            yield from _imaging_only(page.obj, f"page {number}", checked=checked)
    elif kind == "static":
        if len(pages) != 2:
            yield "", "static-plates", f"{len(pages)} pages: a static file is a front and a back"
        for number, page in enumerate(pages, start=1):
            forms = _static_page(page.obj)
            if forms is None:
                yield f"page {number}", "static-plates", "not the two static forms alone"
            elif number <= 2:
                static["front" if number == 1 else "back"] = _fingerprint(page.obj, forms)
    else:
        yield from _composite_pages(pdf, static)
    yield from _zero_tints(pdf)
    for number, page in enumerate(pages[:2], start=1):
        if not _boxes_sound(page.obj):
            continue  # the page-boxes rule names it; marks cannot be placed against it
        state = _Walk(page.obj)
        state.run(page.obj, page.obj.get("/Resources"), _State((1, 0, 0, 1, 0, 0)))
        where = f"page {number}"
        for segment in state.marks_inside:
            yield (
                where,
                "crop-marks",
                (
                    f"a registration-colour segment from ({segment[0]:.1f}, {segment[1]:.1f}) to "
                    f"({segment[2]:.1f}, {segment[3]:.1f}) pt lies inside the TrimBox"
                ),
            )
        for text in state.black_text[:5]:
            yield where, "black-overprint", text


def _boxes_sound(page: pikepdf.Object) -> bool:
    """A TrimBox inside the BleedBox (or the MediaBox)."""
    boxes = [page.get(name) for name in ("/TrimBox", "/BleedBox", "/MediaBox")]
    trim, outer = boxes[0], boxes[1] or boxes[2]
    if trim is None or outer is None:
        return False
    (a, b, c, d), (e, f, g, h) = ([float(v) for v in box] for box in (trim, outer))
    return (
        min(a, c) >= min(e, g) - 0.01
        and min(b, d) >= min(f, h) - 0.01
        and (max(a, c) <= max(e, g) + 0.01 and max(b, d) <= max(f, h) + 0.01)
    )


def _content(owner: pikepdf.Object) -> bytes:
    contents = owner.get("/Contents") if "/Contents" in owner else owner
    streams = contents if isinstance(contents, pikepdf.Array) else [contents]
    return b"\n".join(s.read_bytes() for s in streams if isinstance(s, pikepdf.Stream))


def _resource(owner: pikepdf.Object, kind: str, name: str) -> pikepdf.Object | None:
    resources = owner.get("/Resources")
    entries = resources.get(kind) if isinstance(resources, pikepdf.Dictionary) else None
    if not isinstance(entries, pikepdf.Dictionary):
        return None
    return entries.get(name if name.startswith("/") else f"/{name}")


def _xobject(owner: pikepdf.Object, name: bytes) -> pikepdf.Object | None:
    return _resource(owner, "/XObject", name.decode())


def _spot_of(owner: pikepdf.Object, name: str, resources: pikepdf.Object) -> str | None:
    space = _resource(resources, "/ColorSpace", name)
    if space is None and resources is not owner:
        space = _resource(owner, "/ColorSpace", name)
    if isinstance(space, pikepdf.Array) and str(space[0]) == "/Separation":
        return str(space[1])[1:]
    return None


def _is_form(obj: object) -> TypeGuard[pikepdf.Stream]:
    return isinstance(obj, pikepdf.Stream) and obj.get("/Subtype") == Name.Form


def _image_on_variable(image: pikepdf.Object, owner: pikepdf.Object) -> bool:
    """An image that paints on the ``Variable`` plate only: a stencil mask (it paints in the
    current colour) or an image in the ``Variable`` separation."""
    if image.get("/ImageMask") is True or image.get("/IM") is True:
        return True
    space = image.get("/ColorSpace", image.get("/CS"))
    if isinstance(space, pikepdf.Name):
        space = _resource(owner, "/ColorSpace", str(space)) or space
    return (
        isinstance(space, pikepdf.Array)
        and str(space[0]) == "/Separation"
        and str(space[1])[1:] == VARIABLE_NAME
    )


def _inline_images(stream: pikepdf.Object) -> list[pikepdf.PdfInlineImage]:
    return [
        item.iimage
        for item in pikepdf.parse_content_stream(stream)
        if isinstance(item, pikepdf.ContentStreamInlineImage)
    ]


def _imaging_only(
    owner: pikepdf.Object,
    where: str,
    content: bytes | None = None,
    checked: set[tuple[int, int]] | None = None,
    resources: pikepdf.Object | None = None,
) -> Iterator[Found]:
    """Content painting on the ``Variable`` plate only: no process colour, no colour space
    but the ``Variable`` separation, no image but a stencil mask or one on that plate, and
    every form it places (nested forms included) likewise."""
    data = _content(owner) if content is None else content
    scope = owner if resources is None else resources
    if _DEVICE_COLOUR.search(data):
        yield where, "imaging", "a process (device) colour: imaging is the Variable plate only"
        return
    for name in set(_COLOUR_SPACE.findall(data)):
        if _spot_of(owner, name.decode(), scope) != VARIABLE_NAME:
            yield where, "imaging", f"colour space {name.decode()!r} is not the Variable plate"
            return
    if b"BI" in data and _INLINE_IMAGE.search(data):  # the page holds no other
        streams = owner.get("/Contents", owner)
        for stream in streams if isinstance(streams, pikepdf.Array) else [streams]:
            if not isinstance(stream, pikepdf.Stream):
                continue
            for image in _inline_images(stream):
                if not _image_on_variable(image.obj, scope):
                    yield where, "imaging", "an inline image not on the Variable plate"
                    return
    for name in set(_FORM_PLACE.findall(data)):
        xobject = _xobject(scope, b"/" + name) or _xobject(owner, b"/" + name)
        if not isinstance(xobject, pikepdf.Stream):
            continue
        if checked is not None:
            if xobject.objgen in checked:
                continue
            checked.add(xobject.objgen)
        label = f"{where}, form {name.decode()}"
        if xobject.get("/Subtype") == Name.Image:
            if not _image_on_variable(xobject, scope):
                yield where, "imaging", f"image {name.decode()} is not on the Variable plate"
                return
            continue
        if xobject.get("/Subtype") != Name.Form:
            continue
        inner = xobject if "/Resources" in xobject else scope
        problems = list(_imaging_only(xobject, label, None, checked, inner))
        if problems:
            yield problems[0]
            return


def _static_page(page: pikepdf.Object) -> tuple[bytes, bytes] | None:
    match = _STATIC.match(_content(page))
    if match is None or not _PREAMBLE.match(match.group(1)):
        return None
    return match.group(2), match.group(3)


def _composite_pages(pdf: pikepdf.Pdf, static: dict[str, str]) -> Iterator[Found]:
    """Every page: its side's two static forms around ``Variable`` imaging only."""
    seen: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {}
    checked: set[tuple[int, int]] = set()
    for number, page in enumerate(pdf.pages, start=1):
        where, side = f"page {number}", "front" if number % 2 else "back"
        data = _content(page.obj)
        match = _COMPOSITE.match(data)
        if match is None or not _PREAMBLE.match(match.group(1)):
            yield where, "static-plates", "the page is not its side's static forms around imaging"
            continue
        under, over = (_xobject(page.obj, match.group(i)) for i in (2, 4))
        if under is None or over is None:
            yield where, "static-plates", "a static form it places is missing"
            continue
        pair = (under.objgen, over.objgen)
        if side not in seen:
            seen[side] = pair
            static[side] = _fingerprint(page.obj, (match.group(2), match.group(4)))
        elif pair != seen[side]:
            yield where, "static-plates", f"its static plates differ from the first {side}'s"
            continue
        problems = list(_imaging_only(page.obj, where, match.group(3), checked))
        if problems:
            yield (
                where,
                "static-plates",
                (
                    "between its static forms it paints on a plate other than Variable ("
                    + problems[0][2]
                    + ")"
                ),
            )


def _fingerprint(page: pikepdf.Object, names: tuple[bytes, bytes]) -> str:
    digest = hashlib.sha256()
    for name in names:
        form = _xobject(page, name)
        digest.update(_form_digest(form, set()) if form is not None else b"missing")
    return digest.hexdigest()


def _form_digest(form: pikepdf.Object, path: set[tuple[int, int]]) -> bytes:
    data = _content(form)
    digest = hashlib.sha256(data)
    if form.objgen in path:
        return digest.digest()
    inner = path | {form.objgen}
    for name in _FORM_PLACE.findall(data):
        kid = _xobject(form, b"/" + name)
        if _is_form(kid):
            digest.update(_form_digest(kid, inner))
    return digest.digest()


@dataclass
class _Inherits:
    """Which forms paint in the fill colour they are placed with (memoised by object)."""

    known: dict[tuple[int, int], bool] = field(default_factory=dict)

    def __call__(self, form: pikepdf.Object, scope: pikepdf.Object) -> bool:
        key = form.objgen
        if key in self.known:
            return self.known[key]
        self.known[key] = False  # a form that places itself paints nothing new
        inner = form if "/Resources" in form else scope
        fill_set = [False]
        answer = False
        for item in pikepdf.parse_content_stream(form):
            if isinstance(item, pikepdf.ContentStreamInlineImage):
                if item.iimage.obj.get("/IM") is True and not fill_set[-1]:
                    answer = True
                    break
                continue
            op = str(item.operator)
            if op == "q":
                fill_set.append(fill_set[-1])
            elif op == "Q" and len(fill_set) > 1:
                fill_set.pop()
            elif op in _FILL_SETTERS:
                fill_set[-1] = True
            elif not fill_set[-1] and (
                op in _FILL_PAINTERS
                or (
                    op == "Do"
                    and _is_form(kid := _resource(inner, "/XObject", str(item.operands[0])))
                    and self(kid, inner)
                )
            ):
                answer = True
                break
        self.known[key] = answer
        return answer


def _zero_tints(pdf: pikepdf.Pdf) -> Iterator[Found]:
    """A fill at tint 0 of a separation, in any form of the file or any page's content,
    painted there or through a form placed in that colour."""
    seen: set[tuple[int, int]] = set()
    named: set[str] = set()
    inherits = _Inherits()

    def zero_fill(data: bytes, owner: pikepdf.Object) -> bool:
        if _ZERO_STROKE.search(data):
            return True
        for match in _ZERO_FILL.finditer(data):
            if match.group(2) is not None:
                return True
            form = _resource(owner, "/XObject", match.group(3).decode())
            if _is_form(form) and inherits(form, owner):
                return True
        return False

    for number, page in enumerate(pdf.pages, start=1):
        if zero_fill(_content(page.obj), page.obj):
            yield f"page {number}", "zero-tint", "a fill or stroke at tint 0 of a separation"
        resources = page.obj.get("/Resources")
        stack = [resources] if isinstance(resources, pikepdf.Dictionary) else []
        while stack:
            res = stack.pop()
            xobjects = res.get("/XObject")
            if not isinstance(xobjects, pikepdf.Dictionary):
                continue
            for name, form in xobjects.items():
                if not _is_form(form) or form.objgen in seen:
                    continue
                seen.add(form.objgen)
                scope = form if "/Resources" in form else page.obj
                if zero_fill(form.read_bytes(), scope) and name not in named:
                    named.add(name)
                    yield (
                        f"form {name[1:]}",
                        "zero-tint",
                        (
                            "a fill at tint 0 of a separation: only overprint simulation shows it "
                            "as no ink, a plain viewer paints it white (draw the hole as a path)"
                        ),
                    )
                inner = form.get("/Resources")
                if isinstance(inner, pikepdf.Dictionary):
                    stack.append(inner)


# -- a small interpreter -------------------------------------------------------------------
Matrix = tuple[float, float, float, float, float, float]


def _mul(a: Matrix, b: Matrix) -> Matrix:
    """a then b (PDF's row-vector convention: a x b)."""
    return (
        a[0] * b[0] + a[1] * b[2],
        a[0] * b[1] + a[1] * b[3],
        a[2] * b[0] + a[3] * b[2],
        a[2] * b[1] + a[3] * b[3],
        a[4] * b[0] + a[5] * b[2] + b[4],
        a[4] * b[1] + a[5] * b[3] + b[5],
    )


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5])


@dataclass
class _State:
    ctm: Matrix
    stroke_spot: str | None = None
    fill_black: bool = False
    fill_overprint: bool = False
    stroke_overprint: bool = False
    overprint_mode: int = 0
    font_size: float = 0.0


@dataclass
class _Walk:
    """The graphics state through a page and the forms it places: registration strokes and
    black text, as they land on the page."""

    page: pikepdf.Object
    marks_inside: list[tuple[float, float, float, float]] = field(default_factory=list)
    black_text: list[str] = field(default_factory=list)
    parsed: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    """Each form's instructions, parsed once (a sheet places the same forms hundreds of
    times)."""
    inert: dict[tuple[int, int], bool] = field(default_factory=dict)
    """Forms that stroke nothing and show no text, nor place a form that does: nothing of
    theirs can be a mark or black text, so the walk does not enter them."""

    def _instructions(self, owner: pikepdf.Object) -> list[Any]:
        key = owner.objgen
        if key == (0, 0):
            return list(pikepdf.parse_content_stream(owner))
        if key not in self.parsed:
            self.parsed[key] = list(pikepdf.parse_content_stream(owner))
        return self.parsed[key]

    def _is_inert(self, form: pikepdf.Object, resources: object) -> bool:
        key = form.objgen
        if key in self.inert:
            return self.inert[key]
        self.inert[key] = True  # a form that places itself adds nothing
        xobjects = resources.get("/XObject") if isinstance(resources, pikepdf.Dictionary) else None
        inert = True
        for instruction in self._instructions(form):
            if isinstance(instruction, pikepdf.ContentStreamInlineImage):
                continue
            op = str(instruction.operator)
            if op in _MARKING:
                inert = False
                break
            if op == "Do" and isinstance(xobjects, pikepdf.Dictionary):
                kid = xobjects.get(str(instruction.operands[0]))
                if _is_form(kid) and not self._is_inert(kid, kid.get("/Resources", resources)):
                    inert = False
                    break
        self.inert[key] = inert
        return inert

    def __post_init__(self) -> None:
        box = self.page.get("/TrimBox") or self.page.get("/MediaBox")
        left, bottom, right, top = (float(v) for v in box or (0, 0, 0, 0))
        self.trim = (min(left, right), min(bottom, top), max(left, right), max(bottom, top))

    def _inside(self, x: float, y: float) -> bool:
        left, bottom, right, top = self.trim
        return left + 0.01 < x < right - 0.01 and bottom + 0.01 < y < top - 0.01

    def run(self, owner: pikepdf.Object, resources: object, first: _State) -> None:
        """Follow ``owner``'s content from the graphics state ``first`` (a form inherits the
        state of the place it is drawn)."""
        stack = [first]
        state = first
        path: list[tuple[float, float, float, float]] = []
        point = (0.0, 0.0)
        tm: Matrix = (1, 0, 0, 1, 0, 0)
        spaces = resources.get("/ColorSpace") if isinstance(resources, pikepdf.Dictionary) else None
        gstates = resources.get("/ExtGState") if isinstance(resources, pikepdf.Dictionary) else None
        xobjects = resources.get("/XObject") if isinstance(resources, pikepdf.Dictionary) else None
        for instruction in self._instructions(owner):
            if isinstance(instruction, pikepdf.ContentStreamInlineImage):
                continue
            operands, op = instruction.operands, str(instruction.operator)
            if op == "q":
                stack.append(_State(**vars(state)))
                state = stack[-1]
            elif op == "Q" and len(stack) > 1:
                stack.pop()
                state = stack[-1]
            elif op == "cm":
                state.ctm = _mul(tuple(float(v) for v in operands), state.ctm)  # type: ignore[arg-type]
            elif op == "CS":
                space = (
                    spaces.get(str(operands[0])) if isinstance(spaces, pikepdf.Dictionary) else None
                )
                state.stroke_spot = (
                    str(space[1])[1:]
                    if isinstance(space, pikepdf.Array) and str(space[0]) == "/Separation"
                    else None
                )
            elif op == "k":
                state.fill_black = [float(v) for v in operands] == [0, 0, 0, 1]
            elif op == "g":
                state.fill_black = float(operands[0]) == 0
            elif op in ("cs", "scn", "sc", "rg"):
                state.fill_black = False
            elif op == "gs" and isinstance(gstates, pikepdf.Dictionary):
                entry = gstates.get(str(operands[0]))
                if isinstance(entry, pikepdf.Dictionary):
                    if "/OP" in entry:
                        state.stroke_overprint = bool(entry.OP)
                        state.fill_overprint = bool(entry.get("/op", entry.OP))
                    if "/op" in entry:
                        state.fill_overprint = bool(entry.op)
                    if "/OPM" in entry:
                        state.overprint_mode = int(entry.OPM)
            elif op == "m":
                point = (float(operands[0]), float(operands[1]))
            elif op == "l":
                end = (float(operands[0]), float(operands[1]))
                path.append((*point, *end))
                point = end
            elif op in ("S", "s"):
                if state.stroke_spot == REGISTRATION_NAME:
                    for x0, y0, x1, y1 in path:
                        a, b = _apply(state.ctm, x0, y0), _apply(state.ctm, x1, y1)
                        mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
                        if self._inside(*a) or self._inside(*b) or self._inside(*mid):
                            self.marks_inside.append((*a, *b))
                path = []
            elif op in ("f", "F", "f*", "B", "B*", "b", "b*", "n", "re"):
                if op != "re":
                    path = []
            elif op == "BT":
                tm = (1, 0, 0, 1, 0, 0)
            elif op == "Tf":
                state.font_size = float(operands[1])
            elif op == "Tm":
                tm = tuple(float(v) for v in operands)  # type: ignore[assignment]
            elif op in ("Tj", "TJ", "'", '"'):
                if state.fill_black and not (state.fill_overprint and state.overprint_mode == 1):
                    m = _mul(tm, state.ctm)
                    size = state.font_size * abs(m[0] * m[3] - m[1] * m[2]) ** 0.5
                    if 0 < size < SMALL_TEXT and len(self.black_text) < 5:
                        self.black_text.append(
                            f"100 % black text of {size:.1f} pt at ({m[4]:.0f}, {m[5]:.0f}) pt "
                            "knocks out what is under it: set it to overprint (op true, OPM 1)"
                        )
            elif op == "Do" and isinstance(xobjects, pikepdf.Dictionary):
                form = xobjects.get(str(operands[0]))
                if _is_form(form):
                    inner = form.get("/Resources", resources)
                    if self._is_inert(form, inner):
                        continue
                    matrix = tuple(float(v) for v in form.get("/Matrix", [1, 0, 0, 1, 0, 0]))
                    placed = _State(**vars(state))
                    placed.ctm = _mul(matrix, state.ctm)  # type: ignore[arg-type]
                    self.run(form, inner, placed)
