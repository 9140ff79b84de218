"""PDF/VT-1 (ISO 16612-2) for the imaging files of a conventional press run, written by
reportlab itself as the pages are made: no second pass over the file.

A PDF/VT-1 file is a PDF/X-4 file (ISO 15930-7) whose pages are grouped into a document-part
hierarchy.  :func:`apply` makes a canvas's document one (before its first page), and
:class:`DocumentParts` gives each page its leaf as it is drawn:

- PDF 1.6; Info ``GTS_PDFXVersion (PDF/X-4)`` (:mod:`printpipe.render.pdfx`); an XMP
  metadata stream (uncompressed) naming it, ``pdfxid:GTS_PDFXVersion``,
  ``pdfvtid:GTS_PDFVTVersion (PDF/VT-1)`` and ``pdfvtid:GTS_PDFVTModDate``, with what Info
  says in XMP's words (``dc:title``, ``dc:creator``, ``dc:description`` the Subject, the
  dates, ``pdf:Producer``, ``pdf:Trapped``) and the document and version ids PDF/X-4 asks
  for, derived from the job (same inputs, same bytes);
- the output intent with its ICC profile embedded: PDF/X-4 has no registered-name output
  intent, so a file without one is refused here (``printpipe export`` refuses the run first);
- the catalogue's ``/DPartRoot``: ``/NodeNameList [/File /Sheet /Side]``, ``/RecordLevel 1``
  (a record is a sheet); the file's node (``/DPM << /File << /Name (FILE) /Static << /Name
  (STATIC) /SHA256 (...) >> >> >>``: the static file the imaging prints over), one node per
  sheet, and one leaf per sheet side with ``/Start`` its page.  Every page's ``/DPart`` is its
  leaf.  A page has exactly one leaf (ISO 32000-2, 14.12), and a sheet side carries N tickets,
  so the tickets are the leaf's metadata: ``/DPM << /Sheet n /Side /Front /Tickets [<< /Slot k
  /Serial (...) /Pack p /Ticket t >> ...] >>``, one entry per ticket printed on that page, in
  slot order (``Slot``: the ticket's place in reading order on that page, so a back's slots
  are its front's mirrored).

The objects are reportlab's: each formats itself in one step when the file is saved, its
references resolved then (a leaf and its page refer to each other).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reportlab.pdfbase import pdfdoc

from printpipe.errors import PrintpipeError

if TYPE_CHECKING:
    from printpipe.render.canvas import PressCanvas
    from printpipe.render.pdfx import JobIdentity

PDFX4_VERSION = "PDF/X-4"
PDFVT_VERSION = "PDF/VT-1"
PDF_VERSION = (1, 6)
NODE_NAMES = ("/File", "/Sheet", "/Side")
KIDS_PER_ARRAY = 8192
"""A ``/DParts`` array of arrays: at most this many kids in each inner array."""
_PLAIN = re.compile(r"[\x20-\x7e]*")
_NEEDS_ESCAPE = str.maketrans({"\\": "\\\\", "(": "\\(", ")": "\\)"})


@dataclass(frozen=True, slots=True)
class StaticFile:
    """The static plates an imaging file prints over: its file name and SHA-256."""

    name: str
    sha256: str


def _string(text: str) -> bytes:
    """A PDF literal string of printable ASCII."""
    if _PLAIN.fullmatch(text) is None:
        raise ValueError(f"not printable ASCII: {text!r}")
    return b"(%s)" % text.translate(_NEEDS_ESCAPE).encode("ascii")


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _alt(text: str) -> str:
    """An XMP language alternative with its default only."""
    return f'<rdf:Alt><rdf:li xml:lang="x-default">{_xml(text)}</rdf:li></rdf:Alt>'


def xmp(identity: JobIdentity, producer: str) -> bytes:
    """The XMP packet of an imaging file: Info's entries in XMP's words, and the PDF/X-4 and
    PDF/VT-1 identification."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(identity.date))
    digest = hashlib.sha256(
        "\0".join((identity.title, identity.author, identity.subject, stamp)).encode()
    ).hexdigest()
    uuid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
    return f"""<?xpacket begin="\ufeff" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:pdf="http://ns.adobe.com/pdf/1.3/"
    xmlns:xmpMM="http://ns.adobe.com/xap/1.0/mm/"
    xmlns:pdfxid="http://www.npes.org/pdfx/ns/id/"
    xmlns:pdfvtid="http://www.npes.org/pdfvt/ns/id/">
   <dc:format>application/pdf</dc:format>
   <dc:title>{_alt(identity.title)}</dc:title>
   <dc:creator><rdf:Seq><rdf:li>{_xml(identity.author)}</rdf:li></rdf:Seq></dc:creator>
   <dc:description>{_alt(identity.subject)}</dc:description>
   <xmp:CreateDate>{stamp}</xmp:CreateDate>
   <xmp:ModifyDate>{stamp}</xmp:ModifyDate>
   <xmp:MetadataDate>{stamp}</xmp:MetadataDate>
   <xmp:CreatorTool>printpipe</xmp:CreatorTool>
   <pdf:Producer>{_xml(producer)}</pdf:Producer>
   <pdf:Trapped>False</pdf:Trapped>
   <xmpMM:DocumentID>uuid:{uuid}</xmpMM:DocumentID>
   <xmpMM:InstanceID>uuid:{uuid}</xmpMM:InstanceID>
   <xmpMM:VersionID>1</xmpMM:VersionID>
   <xmpMM:RenditionClass>default</xmpMM:RenditionClass>
   <pdfxid:GTS_PDFXVersion>{PDFX4_VERSION}</pdfxid:GTS_PDFXVersion>
   <pdfvtid:GTS_PDFVTVersion>{PDFVT_VERSION}</pdfvtid:GTS_PDFVTVersion>
   <pdfvtid:GTS_PDFVTModDate>{stamp}</pdfvtid:GTS_PDFVTModDate>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="r"?>""".encode()


class _Node(pdfdoc.PDFObject):
    """A document part, written in one step: its parent, its kids or its page, its DPM."""

    __RefOnly__ = 1

    def __init__(self, parent: str, dpm: bytes, *, start: str | None = None) -> None:
        self.parent, self.dpm, self.start = parent, dpm, start
        self.kids: list[str] = []

    def format(self, document: pdfdoc.PDFDocument) -> bytes:
        number = document.idToObjectNumberAndVersion
        if self.start is not None:
            link = b"/Start %d 0 R" % number[self.start][0]
        else:
            groups = (
                self.kids[i : i + KIDS_PER_ARRAY] for i in range(0, len(self.kids), KIDS_PER_ARRAY)
            )
            link = b"/DParts [%s]" % b" ".join(
                b"[%s]" % b" ".join(b"%d 0 R" % number[kid][0] for kid in group) for group in groups
            )
        return b"<< /Type /DPart /Parent %d 0 R %s /DPM %s >>" % (
            number[self.parent][0],
            link,
            self.dpm,
        )


class _Root(pdfdoc.PDFObject):
    __RefOnly__ = 1

    def __init__(self, node: str) -> None:
        self.node = node

    def format(self, document: pdfdoc.PDFDocument) -> bytes:
        names = " ".join(NODE_NAMES).encode()
        return b"<< /Type /DPartRoot /DPartRootNode %d 0 R /RecordLevel 1 /NodeNameList [%s] >>" % (
            document.idToObjectNumberAndVersion[self.node][0],
            names,
        )


def apply(canvas: PressCanvas, identity: JobIdentity) -> None:
    """Make ``canvas``'s document (already PDF/X by :func:`printpipe.render.pdfx.apply`, with
    Info's ``GTS_PDFXVersion`` ``PDF/X-4``) a PDF/X-4 file: PDF 1.6 and its XMP metadata."""
    if identity.output_intent.profile is None:
        raise PrintpipeError(
            "a PDF/VT-1 imaging file is PDF/X-4, which embeds the output profile: give the "
            "press's CMYK profile with --output-intent FILE.icc"
        )
    doc = canvas._doc
    doc._pdfVersion = PDF_VERSION
    metadata = pdfdoc.PDFStream(
        pdfdoc.PDFDictionary(
            {"Type": pdfdoc.PDFName("Metadata"), "Subtype": pdfdoc.PDFName("XML")}
        ),
        xmp(identity, doc.info.producer),
        filters=[],  # XMP stays readable to tools that do not parse PDF
    )
    doc.Catalog.Metadata = metadata


TicketOf = Callable[[int], tuple[str, int, int]]
"""A chunk's ticket (its index in the chunk) -> its serial, printed pack and ticket number."""


class DocumentParts:
    """The document-part hierarchy of an imaging file, made as its pages are: call
    :meth:`page` for each page before it is shown (``showPage``)."""

    def __init__(
        self, canvas: PressCanvas, name: str, static: StaticFile | None, ticket_of: TicketOf
    ) -> None:
        self.canvas = canvas
        self.ticket_of = ticket_of
        doc = canvas._doc
        file_dpm = b"/Name %s" % _string(name)
        if static is not None:
            file_dpm += b" /Static << /Name %s /SHA256 %s >>" % (
                _string(static.name),
                _string(static.sha256),
            )
        self._root_name = "printpipe:DPartRoot"
        self._node = _Node(self._root_name, b"<< /File << %s >> >>" % file_dpm)
        self._node_name = doc.Reference(self._node, "printpipe:DPartFile").name
        doc.Reference(_Root(self._node_name), self._root_name)
        catalog = doc.Catalog
        catalog.DPartRoot = pdfdoc.PDFObjectReference(self._root_name)
        if "DPartRoot" not in catalog.__NoDefault__:
            catalog.__NoDefault__ = [*catalog.__NoDefault__, "DPartRoot"]
        self._sheet = self._node
        self._sheet_name = ""
        self._sheet_number = 0
        self._entries: dict[int, bytes] = {}

    def _entry(self, index: int, side: str) -> bytes:
        """A ticket's entry after its slot, formatted once for its two sides (front, then
        back)."""
        entry = self._entries.pop(index, None) if side == "back" else None
        if entry is None:
            serial, pack, ticket = self.ticket_of(index)
            entry = b" /Serial %s /Pack %d /Ticket %d >>" % (_string(serial), pack, ticket)
            if side == "front":
                self._entries[index] = entry
        return entry

    def page(self, sheet: int, side: str, placed: Sequence[tuple[int, int]]) -> None:
        """The leaf of the next page: side ``side`` (``front`` or ``back``) of sheet
        ``sheet`` (from 1), printing ``placed``: (its slot on the page in reading order, the
        chunk's ticket), in slot order."""
        doc = self.canvas._doc
        if sheet != self._sheet_number:
            self._sheet_number = sheet
            self._sheet = _Node(self._node_name, b"<< /Sheet %d >>" % sheet)
            self._sheet_name = doc.Reference(self._sheet, f"printpipe:DPartSheet{sheet}").name
            self._node.kids.append(self._sheet_name)
        entries = b" ".join([b"<< /Slot %d%s" % (slot, self._entry(i, side)) for slot, i in placed])
        dpm = b"<< /Sheet %d /Side /%s /Tickets [%s] >>" % (
            sheet,
            b"Front" if side == "front" else b"Back",
            entries,
        )
        page = doc.thisPageName()
        leaf = doc.Reference(
            _Node(self._sheet_name, dpm, start=page), f"printpipe:DPart-{page}"
        ).name
        self._sheet.kids.append(leaf)
        self.canvas.next_page_part = leaf
