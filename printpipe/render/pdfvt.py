"""PDF/VT-1 (ISO 16612-2) for the imaging files of a conventional press run.

A PDF/VT-1 file is a PDF/X-4 file (ISO 15930-7) whose pages are grouped into a document-part
hierarchy.  reportlab writes the pages (PDF/X-1a-style: Info, output intent, embedded fonts);
:func:`make_pdfvt` then turns the finished bytes into PDF/VT-1 with pikepdf (qpdf), without
touching a content stream:

- PDF 1.6; Info ``GTS_PDFXVersion (PDF/X-4)``; an XMP metadata stream naming it
  (``pdfxid:GTS_PDFXVersion``, ``pdfvtid:GTS_PDFVTVersion (PDF/VT-1)``,
  ``pdfvtid:GTS_PDFVTModDate``) with the title, dates, ``pdf:Trapped``, and the document and
  version ids PDF/X-4 asks for, all derived from the file's own content (same inputs, same
  bytes);
- the catalogue's ``/DPartRoot``: ``/NodeNameList [/File /Sheet /Side]``, ``/RecordLevel 1``
  (a record is a sheet); the file's node, one node per sheet, and one leaf per sheet side with
  ``/Start`` its page.  Every page's ``/DPart`` is its leaf.  A page has exactly one leaf
  (ISO 32000-2, 14.12), and a sheet side carries N tickets, so the tickets are the leaf's
  metadata: ``/DPM << /Sheet n /Side /Front /Tickets [<< /Slot k /Serial (...) /Pack (...)
  /Ticket t >> ...] >>``, one entry per ticket printed on that page, in slot order.

The output intent is the press file's (``render/pdfx.py``): PDF/X-4 wants the profile itself
embedded; ``printpipe export --output-intent FILE.icc`` does so, the default names FOGRA39.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pikepdf
from pikepdf import Array, Dictionary, Name

PDFX4_VERSION = "PDF/X-4"
PDFVT_VERSION = "PDF/VT-1"
NODE_NAMES = ("/File", "/Sheet", "/Side")


@dataclass(frozen=True, slots=True)
class PlacedTicket:
    """One ticket as an imaging page holds it."""

    slot: int
    serial: str
    pack: int
    ticket: int


def _xmp(title: str, author: str, date: int, digest: str, producer: str) -> bytes:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(date))
    uuid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"

    def esc(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

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
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">{esc(title)}</rdf:li></rdf:Alt></dc:title>
   <dc:creator><rdf:Seq><rdf:li>{esc(author)}</rdf:li></rdf:Seq></dc:creator>
   <xmp:CreateDate>{stamp}</xmp:CreateDate>
   <xmp:ModifyDate>{stamp}</xmp:ModifyDate>
   <xmp:MetadataDate>{stamp}</xmp:MetadataDate>
   <xmp:CreatorTool>printpipe</xmp:CreatorTool>
   <pdf:Producer>{esc(producer)}</pdf:Producer>
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


def make_pdfvt(
    data: bytes, sheets: Sequence[Sequence[Sequence[PlacedTicket]]], *, date: int, name: str
) -> bytes:
    """PDF/VT-1 from reportlab's imaging file ``data``: its pages are ``sheets``' sides in
    order (front, back of sheet 1, ...), each side the tickets placed on it."""
    digest = hashlib.sha256(data).hexdigest()
    with pikepdf.open(io.BytesIO(data)) as pdf:
        info = pdf.docinfo
        info[Name.GTS_PDFXVersion] = PDFX4_VERSION
        title, author = str(info.get("/Title", name)), str(info.get("/Author", ""))
        producer = str(info.get("/Producer", "printpipe"))
        metadata = pikepdf.Stream(pdf, _xmp(title, author, date, digest, producer))
        metadata[Name.Type], metadata[Name.Subtype] = Name.Metadata, Name.XML
        pdf.Root[Name.Metadata] = pdf.make_indirect(metadata)
        root = pdf.make_indirect(Dictionary(Type=Name.DPartRoot))
        node = pdf.make_indirect(
            Dictionary(Type=Name.DPart, Parent=root, DPM=Dictionary(File=Dictionary(Name=name)))
        )
        root[Name.DPartRootNode] = node
        root[Name.RecordLevel] = 1
        root[Name.NodeNameList] = Array([Name(n) for n in NODE_NAMES])
        pages = pdf.pages
        if len(pages) != 2 * len(sheets):
            raise ValueError(f"{len(pages)} pages for {len(sheets)} duplex sheets")
        sheet_nodes = []
        for s, sides in enumerate(sheets):
            sheet_node = pdf.make_indirect(
                Dictionary(Type=Name.DPart, Parent=node, DPM=Dictionary(Sheet=s + 1))
            )
            leaves = []
            for k, (side, tickets) in enumerate(zip(("/Front", "/Back"), sides, strict=True)):
                page = pages[2 * s + k].obj
                dpm = Dictionary(
                    Sheet=s + 1,
                    Side=Name(side),
                    Tickets=Array(
                        [
                            Dictionary(
                                Slot=t.slot,
                                Serial=pikepdf.String(t.serial),
                                Pack=t.pack,
                                Ticket=t.ticket,
                            )
                            for t in tickets
                        ]
                    ),
                )
                leaf = pdf.make_indirect(
                    Dictionary(Type=Name.DPart, Parent=sheet_node, Start=page, DPM=dpm)
                )
                page[Name.DPart] = leaf
                leaves.append(leaf)
            sheet_node[Name.DParts] = Array([Array(leaves)])
            sheet_nodes.append(sheet_node)
        node[Name.DParts] = Array(
            [Array(sheet_nodes[i : i + 8192]) for i in range(0, len(sheet_nodes), 8192)]
        )
        pdf.Root[Name.DPartRoot] = root
        out = io.BytesIO()
        pdf.save(
            out,
            min_version="1.6",
            force_version="1.6",
            deterministic_id=True,
            # the document parts' dictionaries in compressed object streams (PDF 1.5 on):
            # 240 bytes of metadata a ticket become about 40; the pages' streams are copied
            # as they are, never decoded
            object_stream_mode=pikepdf.ObjectStreamMode.generate,
            stream_decode_level=pikepdf.StreamDecodeLevel.none,
            recompress_flate=False,
            compress_streams=True,
        )
        return out.getvalue()
