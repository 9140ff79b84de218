"""PDF/X-1a:2003 (ISO 15930-4) for the press files: what reportlab does not write by itself.

A press file is already PDF 1.4, CMYK and spot colours only, fonts embedded, no transparency.
PDF/X-1a adds, written here through reportlab's own document objects (no second pass over
the file, so the export keeps its speed):

- the Info dictionary: ``GTS_PDFXVersion (PDF/X-1a:2003)``, ``Trapped /False``, a Title,
  Author and Subject that name the job, and reproducible dates (``CreationDate`` =
  ``ModDate`` = the job's date, never the wall clock);
- the catalogue's ``/OutputIntents``: one ``/GTS_PDFX`` output intent, by default the
  registered characterisation FOGRA39 named by its identifier (X-1a does not require the
  profile then), or a print shop's own ICC output profile embedded as ``DestOutputProfile``.

The trailer ``/ID`` is reportlab's (deterministic with ``invariant``); the font subsets' tags
are unique (``render/canvas.py``).  An imaging file says ``PDF/X-4`` instead
(``JobIdentity.pdfx_version``) and :mod:`printpipe.render.pdfvt` adds what PDF/X-4 and
PDF/VT-1 need besides (its output intent must embed a profile).  ``printpipe preflight``
checks all of it on the files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from reportlab.pdfbase import pdfdoc

from printpipe.errors import PrintpipeError

PDFX_VERSION = "PDF/X-1a:2003"
REGISTRY = "http://www.color.org"


@dataclass(frozen=True)
class OutputIntent:
    """The printing condition the file is made for."""

    identifier: str
    """``OutputConditionIdentifier``: a registered name (``FOGRA39``) or the profile's."""
    condition: str
    """``Info``: the condition in words."""
    profile: bytes | None = None
    """An ICC output profile to embed (``DestOutputProfile``), or None for a registered name."""

    @property
    def embedded(self) -> bool:
        return self.profile is not None


FOGRA39 = OutputIntent(
    "FOGRA39",
    "Coated FOGRA39 (ISO 12647-2:2004/Amd 1, offset, paper types 1 and 2, 60 l/cm)",
)
"""The default: the registered characterisation for coated paper, by name (no profile shipped)."""


def icc_output_intent(path: Path) -> OutputIntent:
    """A print shop's own ICC profile to embed; refuses, in one line, a file that is not a
    CMYK output (printer) profile."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PrintpipeError(f"cannot read ICC profile {path}: {exc.strerror}") from None
    if len(data) < 132 or data[36:40] != b"acsp":
        raise PrintpipeError(f"{path} is not an ICC profile")
    if data[12:16] != b"prtr" or data[16:20] != b"CMYK":
        raise PrintpipeError(
            f"{path} is not a CMYK output profile (class {data[12:16].decode('latin-1')!r}, "
            f"colour space {data[16:20].decode('latin-1').strip()!r})"
        )
    description = _profile_description(data) or path.stem
    return OutputIntent(description, description, data)


def _profile_description(data: bytes) -> str | None:
    """The profile's ``desc`` tag text (ICC v2 ``desc`` or v4 ``mluc``), if it has one."""
    count = int.from_bytes(data[128:132], "big")
    for i in range(min(count, 200)):
        entry = data[132 + 12 * i : 144 + 12 * i]
        if entry[:4] != b"desc":
            continue
        offset, size = int.from_bytes(entry[4:8], "big"), int.from_bytes(entry[8:12], "big")
        tag = data[offset : offset + size]
        if tag[:4] == b"desc":
            length = int.from_bytes(tag[8:12], "big")
            return tag[12 : 12 + length].rstrip(b"\0").decode("latin-1").strip() or None
        if tag[:4] == b"mluc" and len(tag) >= 28:
            length, start = int.from_bytes(tag[20:24], "big"), int.from_bytes(tag[24:28], "big")
            return tag[start : start + length].decode("utf-16-be", "replace").strip() or None
    return None


@dataclass(frozen=True)
class JobIdentity:
    """What a press file says about itself: its job, its date, its printing condition."""

    title: str
    author: str
    subject: str
    date: int
    """Seconds since the epoch (UTC): the job's date, written as CreationDate and ModDate."""
    output_intent: OutputIntent = FOGRA39
    pdfx_version: str = PDFX_VERSION
    """What the file is: PDF/X-1a:2003, or PDF/X-4 (an imaging file, PDF/VT-1:
    :mod:`printpipe.render.pdfvt`)."""


def pdf_date(seconds: int) -> str:
    """``D:YYYYMMDDHHmmSS+00'00'``, UTC."""
    return time.strftime("D:%Y%m%d%H%M%S+00'00'", time.gmtime(seconds))


class _PdfxInfo(pdfdoc.PDFInfo):
    """reportlab's Info dictionary with the PDF/X keys and the job's own dates."""

    def __init__(self, identity: JobIdentity, producer: str) -> None:
        super().__init__()
        self.identity = identity
        self.title, self.author, self.subject = identity.title, identity.author, identity.subject
        self.creator = "printpipe"
        self.producer = producer

    def format(self, document: pdfdoc.PDFDocument) -> bytes:
        date = pdfdoc.PDFString(pdf_date(self.identity.date))
        entries = {
            "Title": pdfdoc.PDFString(self.title),
            "Author": pdfdoc.PDFString(self.author),
            "Subject": pdfdoc.PDFString(self.subject),
            "Creator": pdfdoc.PDFString(self.creator),
            "Producer": pdfdoc.PDFString(self.producer),
            "CreationDate": date,
            "ModDate": date,
            "Trapped": pdfdoc.PDFName("False"),
            "GTS_PDFXVersion": pdfdoc.PDFString(self.identity.pdfx_version),
        }
        return pdfdoc.PDFDictionary(entries).format(document)


def apply(doc: pdfdoc.PDFDocument, identity: JobIdentity) -> None:
    """Make ``doc`` (a canvas's reportlab document, before saving) a PDF/X-1a file."""
    doc.info = _PdfxInfo(identity, doc.info.producer)
    intent = identity.output_intent
    entries = {
        "Type": pdfdoc.PDFName("OutputIntent"),
        "S": pdfdoc.PDFName("GTS_PDFX"),
        "OutputConditionIdentifier": pdfdoc.PDFString(intent.identifier),
        "OutputCondition": pdfdoc.PDFString(intent.condition),
        "Info": pdfdoc.PDFString(intent.condition),
    }
    if intent.profile is None:
        entries["RegistryName"] = pdfdoc.PDFString(REGISTRY)
    else:
        stream = pdfdoc.PDFStream(pdfdoc.PDFDictionary({"N": 4}), intent.profile)
        stream.filters = [pdfdoc.PDFZCompress]
        entries["DestOutputProfile"] = doc.Reference(stream, "printpipe:DestOutputProfile")
    catalog = doc.Catalog
    catalog.OutputIntents = pdfdoc.PDFArray([pdfdoc.PDFDictionary(entries)])
    catalog.__NoDefault__ = [*type(catalog).__NoDefault__, "OutputIntents"]
