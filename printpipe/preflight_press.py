"""The press line's preflight rules (``printpipe preflight``, :mod:`printpipe.preflight`).

What a scratch-ticket press line needs beyond PDF/X-1a (``docs/print-files.md``, "The press
line"): imaging files that are PDF/VT-1, static plates that never change from sheet to sheet,
and nothing that looks right only with overprint simulated.  Each function yields
``(where, rule, detail)``.

- ``pdfx-4``, ``pdf-vt``: an imaging file's identification and document-part hierarchy;
- ``imaging``: an imaging file paints on the ``Variable`` plate only;
- ``static-plates``: a composite page is ``q /under Do Q``, ``Variable`` imaging, ``q /over
  Do Q``, with the same two forms on every page of a side; a static file's pages are those
  two forms alone.  The forms' fingerprint (their content, and that of every form they place,
  recursively) goes back to :mod:`printpipe.preflight`, which compares it across the files of
  one variant;
- ``zero-tint``: a fill at tint 0 of a one-component (separation) colour, which only a RIP
  or an overprint preview shows as no ink (a plain viewer paints it white);
- ``crop-marks``: a segment stroked in the registration colour ``/All`` inside the TrimBox;
- ``black-overprint``: 100 % process black text under 12 pt without fill overprint and
  overprint mode 1 (with mode 0 a process colour paints its zero components too: the black
  would still knock the C, M and Y under it out).

The last three follow the graphics state through the first front and back page and every
form they place (a small interpreter on qpdf's content parser): the static plates rule makes
every other page's marks and artwork the same forms.  ``zero-tint`` also scans every form of
the file and every page's own content.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import pikepdf
from pikepdf import Name

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
_COLOUR_SPACE = re.compile(rb"/(\S+)\s+(?:cs|CS)(?=\s)")
_DEVICE_COLOUR = re.compile(rb"[\d.]\s+(?:k|K|g|G|rg|RG)(?=\s|$)")
_ZERO_FILL = re.compile(
    rb"(?:^|\s)(?:0|0\.0*|\.0+)\s+(?:scn|sc)\s((?:(?!(?:^|\s)(?:scn|sc|k|g|rg|cs|Q)\s).)*?)"
    rb"(?:^|\s)(f|f\*|F|B|B\*|b|b\*|Tj|TJ|')(?=\s|$)",
    re.S,
)
_FORM_PLACE = re.compile(rb"/(\S+)\s+Do(?=\s|$)")


# -- PDF/VT-1 --------------------------------------------------------------------------------
def pdfvt_document(pdf: pikepdf.Pdf) -> Iterator[Found]:
    """An imaging file's identification: PDF/X-4 and PDF/VT-1."""
    if pdf.pdf_version > "1.6":
        yield "", "pdfx-4", f"PDF {pdf.pdf_version}: PDF/X-4 is PDF 1.6 at most"
    info = pdf.trailer.get("/Info")
    info = info if isinstance(info, pikepdf.Dictionary) else pikepdf.Dictionary()
    version = str(info.get("/GTS_PDFXVersion", ""))
    if version and version != PDFX4_VERSION:
        yield "", "pdfx-4", f"Info's GTS_PDFXVersion is {version!r}, expected {PDFX4_VERSION!r}"
    if info.get("/Trapped") not in (Name("/True"), Name("/False")):
        yield "", "pdfx-4", "Info's Trapped is not /True or /False"
    metadata = pdf.Root.get("/Metadata")
    xmp = metadata.read_bytes() if isinstance(metadata, pikepdf.Stream) else b""
    if not xmp:
        yield "", "pdfx-4", "no XMP metadata stream in the catalogue"
    else:
        for key, value in (
            (b"pdfxid:GTS_PDFXVersion", PDFX4_VERSION),
            (b"pdfvtid:GTS_PDFVTVersion", PDFVT_VERSION),
        ):
            found = re.search(rb"<%s>([^<]*)</%s>" % (key, key), xmp)
            if found is None or found.group(1).decode() != value:
                rule = "pdf-vt" if b"pdfvt" in key else "pdfx-4"
                yield "", rule, f"the XMP metadata's {key.decode()} is not {value!r}"
        for key in (b"xmpMM:DocumentID", b"xmpMM:VersionID", b"xmpMM:RenditionClass"):
            if b"<%s>" % key not in xmp:
                yield "", "pdfx-4", f"the XMP metadata has no {key.decode()}"
    yield from _dparts(pdf)


def _dparts(pdf: pikepdf.Pdf) -> Iterator[Found]:
    root = pdf.Root.get("/DPartRoot")
    if not isinstance(root, pikepdf.Dictionary) or "/DPartRootNode" not in root:
        yield "", "pdf-vt", "no /DPartRoot with a /DPartRootNode in the catalogue"
        return
    leaves: list[pikepdf.Object] = []
    stack = [root.DPartRootNode]
    while stack:
        node = stack.pop()
        kids = node.get("/DParts")
        if kids is None:
            leaves.append(node)
            continue
        stack.extend(reversed([kid for group in kids for kid in group]))
    pages = pdf.pages
    if len(leaves) != len(pages):
        yield "", "pdf-vt", f"{len(leaves)} leaf document parts for {len(pages)} pages"
    for number, page in enumerate(pages, start=1):
        where = f"page {number}"
        leaf = page.obj.get("/DPart")
        if leaf is None:
            yield where, "pdf-vt", "the page has no /DPart"
            continue
        if "/Start" not in leaf or leaf.Start.objgen != page.obj.objgen:
            yield where, "pdf-vt", "its /DPart is not the leaf that starts at this page"
        dpm = leaf.get("/DPM")
        tickets = dpm.get("/Tickets") if isinstance(dpm, pikepdf.Dictionary) else None
        if not isinstance(tickets, pikepdf.Array) or any(
            "/Serial" not in t or "/Pack" not in t for t in tickets
        ):
            yield where, "pdf-vt", "its /DPart has no metadata naming each ticket's serial and pack"


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


def _xobject(owner: pikepdf.Object, name: bytes) -> pikepdf.Object | None:
    resources = owner.get("/Resources")
    xobjects = resources.get("/XObject") if isinstance(resources, pikepdf.Dictionary) else None
    if not isinstance(xobjects, pikepdf.Dictionary):
        return None
    return xobjects.get(name.decode())


def _spot_of(owner: pikepdf.Object, name: str) -> str | None:
    resources = owner.get("/Resources")
    spaces = resources.get("/ColorSpace") if isinstance(resources, pikepdf.Dictionary) else None
    space = spaces.get(f"/{name}") if isinstance(spaces, pikepdf.Dictionary) else None
    if isinstance(space, pikepdf.Array) and str(space[0]) == "/Separation":
        return str(space[1])[1:]
    return None


def _imaging_only(
    owner: pikepdf.Object,
    where: str,
    content: bytes | None = None,
    checked: set[tuple[int, int]] | None = None,
) -> Iterator[Found]:
    """Content painting on the ``Variable`` plate only (forms it places: no colour of their
    own, they paint in the current one)."""
    data = _content(owner) if content is None else content
    if _DEVICE_COLOUR.search(data):
        yield where, "imaging", "a process (device) colour: imaging is the Variable plate only"
        return
    for name in set(_COLOUR_SPACE.findall(data)):
        if _spot_of(owner, name.decode()) != VARIABLE_NAME:
            yield where, "imaging", f"colour space {name.decode()!r} is not the Variable plate"
            return
    for name in set(_FORM_PLACE.findall(data)):
        form = _xobject(owner, b"/" + name)
        if form is None or form.get("/Subtype") != Name.Form:
            continue
        if checked is not None:
            if form.objgen in checked:
                continue
            checked.add(form.objgen)
        inner = _content(form)
        if _DEVICE_COLOUR.search(inner) or _COLOUR_SPACE.search(inner):
            yield where, "imaging", f"form {name.decode()} sets a colour of its own"
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
        if isinstance(kid, pikepdf.Stream) and kid.get("/Subtype") == Name.Form:
            digest.update(_form_digest(kid, inner))
    return digest.digest()


def _zero_tints(pdf: pikepdf.Pdf) -> Iterator[Found]:
    """A fill at tint 0 of a separation, in any form of the file or any page's content."""
    seen: set[tuple[int, int]] = set()
    named: set[str] = set()
    for number, page in enumerate(pdf.pages, start=1):
        if _ZERO_FILL.search(_content(page.obj)):
            yield f"page {number}", "zero-tint", "a fill at tint 0 of a separation"
        resources = page.obj.get("/Resources")
        stack = [resources] if isinstance(resources, pikepdf.Dictionary) else []
        while stack:
            res = stack.pop()
            xobjects = res.get("/XObject")
            if not isinstance(xobjects, pikepdf.Dictionary):
                continue
            for name, form in xobjects.items():
                if not isinstance(form, pikepdf.Stream) or form.get("/Subtype") != Name.Form:
                    continue
                if form.objgen in seen:
                    continue
                seen.add(form.objgen)
                if _ZERO_FILL.search(form.read_bytes()) and name not in named:
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
        for instruction in pikepdf.parse_content_stream(owner):
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
                if isinstance(form, pikepdf.Stream) and form.get("/Subtype") == Name.Form:
                    matrix = tuple(float(v) for v in form.get("/Matrix", [1, 0, 0, 1, 0, 0]))
                    inner = form.get("/Resources", resources)
                    placed = _State(**vars(state))
                    placed.ctm = _mul(matrix, state.ctm)  # type: ignore[arg-type]
                    self.run(form, inner, placed)
