"""reportlab's Canvas with two shortcuts for pages that place thousands of forms.

A press sheet places ~120 Form XObjects (symbols, static ticket faces, marks).  Through the
public API each placement is three calls (``addLiteral``, ``doForm``, ``addLiteral``), and
every page formats its own copy of the same XObject dictionary when the file is saved:
together about a third of the export's time.  This subclass lets a renderer:

- write a ticket's placements as one literal (``form_operator`` gives the ``/Name Do``
  operator of a form, ``use_forms`` declares the forms a page uses, as ``doForm`` would);
- share one XObject dictionary, written once as an indirect object, between every page and
  form that uses the same set of forms; and likewise one whole resource dictionary between
  every page with the same forms, graphics states and colour spaces (a press file has two:
  fronts and backs);
- write each page's dictionary and content stream in one step (:class:`_PressPage`,
  :class:`_FlateStream`): a press file's 1,112 pages differ only in their content, and
  reportlab's generic formatting of each (a dictionary of objects, each formatted in turn)
  was a fifth of the render.

These rely on reportlab internals (``Canvas._formsinuse``, ``_setXObjects``,
``_setShadingUsed``, ``_extgstate``, the resource building of ``PDFPage.check_format``, and
what ``Canvas.showPage`` does for the pages printpipe draws), kept to this one class;
``tests/test_export.py`` checks the PDFs' structure and renders them.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reportlab.lib.colors import CMYKColorSep
from reportlab.lib.rl_accel import fp_str
from reportlab.pdfbase import pdfdoc
from reportlab.pdfgen.canvas import Canvas

from printpipe.errors import PrintpipeError
from printpipe.render import pdfvt, pdfx
from printpipe.render.pdfx import JobIdentity

_GREY_FILL = re.compile(r"^0 0 0 (\S+) (k|K)$")


class _SubsetTags:
    """Renames every embedded font subset with a tag drawn from its own bytes.

    reportlab tags the first subset of every font ``AAAAAA+``, so two fonts of a file share a
    tag, which prepress preflights reject.  Placed last in the document's delayed fonts, this
    runs after every font has made its objects and gives each subset six letters of the
    SHA-256 of its face name and embedded font program: deterministic, and unique per subset.
    """

    def addObjects(self, doc: pdfdoc.PDFDocument) -> None:  # reportlab calls it so
        fonts = doc.idToObject["BasicFonts"].dict
        for font in fonts.values():
            old = getattr(font, "BaseFont", "")
            if not isinstance(old, str) or "+" not in old:
                continue
            descriptor = doc.idToObject[font.FontDescriptor.name]
            program = doc.idToObject[descriptor.dict["FontFile2"].name]
            digest = hashlib.sha256(old.split("+", 1)[1].encode() + program.content).digest()
            tag = "".join(chr(ord("A") + b % 26) for b in digest[:6])
            new = f"{tag}+{old.split('+', 1)[1]}"
            font.BaseFont = new
            descriptor.dict["FontName"] = pdfdoc.PDFName(new)


class _FlateStream(pdfdoc.PDFObject):
    """A page's content stream: Flate-compressed (zlib's default level, as reportlab's) and
    written with its dictionary in one step."""

    __RefOnly__ = 1

    def __init__(self, content: str) -> None:
        self.content = content

    def format(self, document: pdfdoc.PDFDocument) -> bytes:
        data = zlib.compress(self.content.encode("utf-8"))
        return b"<< /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream\n" % (
            len(data),
            data,
        )


class _PressPage(pdfdoc.PDFPage):
    """A page whose dictionary is written in one step: its boxes formatted once per canvas
    (``head``), then its parent, resources and content stream by reference."""

    def __init__(self, head: bytes, content: str, part: str | None = None) -> None:
        super().__init__()
        self.head = head
        self.content = content
        self.part = part
        """The page's leaf document part (a PDF/VT file), by its reportlab name."""

    def format(self, document: pdfdoc.PDFDocument) -> bytes:
        numbers = document.idToObjectNumberAndVersion
        contents = document.Reference(_FlateStream(self.content))
        parent = document.Reference(document.Pages)
        part = b"" if self.part is None else b" /DPart %d 0 R" % numbers[self.part][0]
        return b"<<\n/Type /Page %s /Parent %d 0 R /Resources %d 0 R /Contents %d 0 R%s\n>>" % (
            self.head,
            numbers[parent.name][0],
            numbers[self.Resources.name][0],
            numbers[contents.name][0],
            part,
        )


class PressCanvas(Canvas):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shared_xobjects: dict[frozenset[str], object] = {}
        self._shared_resources: dict[tuple, object] = {}
        self._subset_tags = _SubsetTags()
        self._spot_ops: dict[tuple[object, float], tuple[str, str, str, str]] = {}
        self._page_heads: dict[tuple, bytes] = {}
        self._gstates: dict[tuple, object] = {}
        self.next_page_part: str | None = None
        """The leaf document part of the page being drawn (``pdfvt.DocumentParts.page``)."""

    def _tag_subsets_last(self) -> None:
        fonts = self._doc.delayedFonts
        if self._subset_tags in fonts:
            fonts.remove(self._subset_tags)
        fonts.append(self._subset_tags)

    def save(self) -> None:
        self._tag_subsets_last()
        super().save()

    def getpdfdata(self) -> bytes:
        self._tag_subsets_last()
        return super().getpdfdata()

    def showPage(self) -> None:
        """What ``Canvas.showPage`` does for the pages printpipe draws (no crop marks of
        reportlab's, rotation, transitions, annotations or PostScript), with the page written
        by :class:`_PressPage`; anything else takes reportlab's own path."""
        if (
            self._cropMarks
            or self._pageRotation
            or self._pageDuration is not None
            or self._annotationrefs
            or self._psCommandsBeforePage
            or self._psCommandsAfterPage
            or self._onPage
            or any(self._pageTransition or ())
        ):
            if self.next_page_part is not None:
                raise RuntimeError("a page with a document part takes printpipe's own path")
            super().showPage()
            return
        self._code.append(" ")
        page = _PressPage(
            self._page_head(),
            "\n".join([self._preamble, *self._code]) + "\n",
            self.next_page_part,
        )
        self.next_page_part = None
        page.hasImages = self._currentPageHasImages
        self._setColorSpace(page)
        self._setExtGState(page)
        self._setXObjects(page)
        self._setShadingUsed(page)
        self._doc.addPage(page)
        self._startPage()

    def _page_head(self) -> bytes:
        """The page's boxes, formatted as reportlab would, once per distinct set."""
        boxes = (
            ("MediaBox", (0, 0, *self._pagesize)),
            ("CropBox", self._cropBox),
            ("ArtBox", self._artBox),
            ("BleedBox", self._bleedBox),
            ("TrimBox", self._trimBox),
        )
        key = tuple(box for _, box in boxes)
        head = self._page_heads.get(key)
        if head is None:
            head = self._page_heads[key] = b" ".join(
                b"/%s [ %s ]" % (name.encode(), " ".join(fp_str(v) for v in box).encode())
                for name, box in boxes
                if box
            )
        return head

    def form_operator(self, name: str) -> str:
        """The operator drawing form ``name`` (declare it with ``use_forms`` on each page)."""
        return f"/{self._doc.getXObjectName(name)} Do"

    def use_forms(self, names: Iterable[str]) -> None:
        """Declare forms drawn through literals on the current page (or form)."""
        self._formsinuse.extend(names)

    def spot_operators(self, ink: CMYKColorSep, tint: float = 1) -> tuple[str, str]:
        """The fill and stroke operators selecting separation ``ink`` at ``tint``, declared on
        the current page (call once per page that uses them; cached, a dict update a call)."""
        key = (ink.spotName, tint)
        known = self._spot_ops.get(key)
        if known is None:
            name = self._checkSeparation(ink)
            known = self._spot_ops[key] = (
                name,
                self._colorsUsed[name],
                f"/{name} cs {tint:g} scn",
                f"/{name} CS {tint:g} SCN",
            )
        self._colorsUsed[known[0]] = known[1]
        return known[2], known[3]

    def gstate_operator(self, **entries: bool | int) -> str:
        """``gs`` operators setting graphics-state entries (``op``, ``OP``, ``OPM``) on the
        current page or form: reportlab starts each page with no states and lists those used
        in its resources, so call it on every page that uses them."""
        state = self._extgstate
        ops = []
        for key, value in entries.items():
            entry = (key, str(value).lower() if isinstance(value, bool) else value)
            name = state._c.get(entry)
            if name is None:
                name = state._c[entry] = f"gRLs{len(state._c)}"
            ops.append(f"/{name} gs")
        return " ".join(ops)

    def black_overprint(self) -> None:
        """Fill with 100 % black (process K) that overprints: the text or shape drawn next
        prints its black over the tinted artwork under it instead of knocking it out (a hair
        of misregistration then shows no white rim).  ``OPM 1``: the zero C, M and Y of the
        black leave the plates under it as they are.  Call between ``saveState`` and
        ``restoreState``; works in forms too (their resources then list the states)."""
        self.addLiteral(self.gstate_operator(op=True, OPM=1))
        self.setFillColorCMYK(0, 0, 0, 1)

    def tint_current_form(self, what: str) -> None:
        """Turn the greys of the form being drawn into tints of whatever colour space the page
        sets before placing it (black 1 = full tint), so that one form prints on a separation
        although reportlab gives forms no colour space of their own.  White (a 0 tint) is
        refused: on its plate it would knock out only with overprint simulated, and every
        other viewer (pdfium, browsers, the proofs' PNGs) would paint it white."""
        for i, line in enumerate(self._code):
            if not isinstance(line, str) or not line.endswith(("k", "K")):
                continue
            match = _GREY_FILL.match(line)
            if match is None:
                if re.fullmatch(r"(\S+ ){4}[kK]", line):
                    raise PrintpipeError(f"{what} is drawn in colour: it prints in one ink")
                continue
            if float(match.group(1)) == 0:
                raise PrintpipeError(
                    f"{what} paints white on its ink (a 0 tint, which only a viewer simulating "
                    "overprint shows as nothing): draw the white parts as holes of the shape"
                )
            op = "scn" if match.group(2) == "k" else "SCN"
            self._code[i] = f"{match.group(1)} {op}"

    def _setExtGState(self, obj: Any) -> None:
        """reportlab's graphics-state dictionary, built once per distinct set of states (it
        builds one per page and form otherwise; a press file has one set)."""
        key = tuple(self._extgstate._c.items())
        state = self._gstates.get(key)
        if state is None:
            state = self._gstates[key] = self._extgstate.getState()
        obj.ExtGState = state

    def _setXObjects(self, thing: Any) -> None:
        used = frozenset(self._formsinuse)
        if not used:
            thing.XObjects = None
        else:
            shared = self._shared_xobjects.get(used)
            if shared is None:
                shared = self._doc.Reference(self._doc.xobjDict(sorted(used)))
                self._shared_xobjects[used] = shared
            thing.XObjects = shared
        if isinstance(thing, pdfdoc.PDFFormXObject) and (self._colorsUsed or self._extgstate._c):
            self._give_form_resources(thing)

    def _give_form_resources(self, form: pdfdoc.PDFFormXObject) -> None:
        """A form that selects spot colours (``spot_operators``) gets them, and the graphics
        states, in its own resources: reportlab writes a form's resources with fonts and
        forms only (``endForm`` calls this after setting the form's colours and states)."""
        resources = pdfdoc.PDFResourceDictionary()
        resources.basicFonts()
        resources.basicProcs()
        if form.XObjects:
            resources.XObject = form.XObjects
        if form.ExtGState:
            resources.ExtGState = form.ExtGState
        if self._colorsUsed:
            resources.setColorSpace(self._colorsUsed)
        form.Resources = resources

    def _setShadingUsed(self, page: object) -> None:
        super()._setShadingUsed(page)
        if not isinstance(page, pdfdoc.PDFPage):
            return
        key = (
            id(page.XObjects),
            frozenset(self._extgstate._c.items()),
            frozenset(self._colorsUsed),
            frozenset(self._shadingUsed),
            page.hasImages,
        )
        shared = self._shared_resources.get(key)
        if shared is None:  # what PDFPage.check_format would build for this page
            resources = pdfdoc.PDFResourceDictionary()
            resources.basicFonts()
            if page.hasImages:
                resources.allProcs()
            else:
                resources.basicProcs()
            if page.XObjects:
                resources.XObject = page.XObjects
            if page.ExtGState:
                resources.ExtGState = page.ExtGState
            resources.setShading(page._shadingUsed)
            resources.setColorSpace(page._colorsUsed)
            shared = self._doc.Reference(resources)
            self._shared_resources[key] = shared
        page.Resources = shared


def new_canvas(
    path: Path,
    pagesize: tuple[float, float],
    fonts: dict[str, str],
    *,
    identity: JobIdentity | None = None,
) -> PressCanvas:
    """A canvas set up as every printpipe PDF must be: process CMYK or spot colours only,
    no dates or random IDs (same inputs, same bytes), the given fonts (role -> file in
    ``fonts/``) embedded and the page preamble on the regular one (never an unembedded
    Helvetica).  The one canvas set-up, shared by the press files and the proofs.  With an
    ``identity`` the file is PDF/X (:mod:`printpipe.render.pdfx`): a press file, PDF/X-1a, or
    PDF/X-4 for an imaging file (:mod:`printpipe.render.pdfvt`, which adds its document parts
    as the pages are made).
    """
    from reportlab import rl_config

    from printpipe.render.fonts import register_fonts

    rl_config.useA85 = 0  # ASCII85 on top of Flate: +17 % size and time for nothing
    rl_config.invariant = 1  # no dates or random IDs: same inputs, same bytes
    registered = register_fonts(fonts)
    canvas = PressCanvas(
        str(path),
        pagesize=pagesize,
        initialFontName=registered["regular"],
        enforceColorSpace="sep_cmyk",
        pageCompression=1,
    )
    if identity is not None:
        pdfx.apply(canvas._doc, identity)
        if identity.pdfx_version == pdfvt.PDFX4_VERSION:
            pdfvt.apply(canvas, identity)
    return canvas
