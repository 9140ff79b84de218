"""`printpipe preflight`: every file the export writes passes; a file with one violation
injected (an RGB fill, no output intent, no TrimBox, a font not embedded, and more) fails,
naming exactly that rule, in one line per violation."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pikepdf
import pytest

from printpipe.press.intake import RULES
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def exported(tmp_path_factory, keys_dir, approvals_dir) -> Path:
    """Packs 1 and 2 of a block, one file per pack, as `printpipe export` writes them."""
    work = tmp_path_factory.mktemp("preflight")
    run_cli("generate", "--packs", "1:2", "--keys", str(keys_dir), "--out", str(work / "block"),
            "-q", check=True)  # fmt: skip
    run_cli("export", str(work / "block"), "--out", str(work / "print"), "--chunk-packs", "1",
            "--keys", str(keys_dir), "--approvals", str(approvals_dir), "-q",
            check=True)  # fmt: skip
    return work / "print"


def test_every_exported_file_passes(exported):
    result = run_cli("preflight", str(exported))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "preflight: 2 file(s) pass PDF/X-1a:2003 and the job's rules\n"


def _lines(folder: Path) -> list[str]:
    return run_cli("preflight", str(folder)).stdout.splitlines()


def _add_rgb_fill(pdf: pikepdf.Pdf) -> None:
    """In the front form of the effigy this file does not print (declared, placed nowhere):
    anywhere a sheet places, the static-plates rule would see it as well."""
    forms = pdf.pages[0].Resources.XObject
    placed = forms["/FormXob.sheet-front-under"].read_bytes()
    name = next(
        str(n)
        for n in forms.keys()  # noqa: SIM118 (a pikepdf dictionary's names)
        if str(n).startswith("/FormXob.front-") and str(n)[1:].encode() not in placed
    )
    forms[name].write(forms[name].read_bytes() + b"\nq 1 0 0 rg 0 0 10 10 re f Q\n")


def _drop_output_intent(pdf: pikepdf.Pdf) -> None:
    del pdf.Root["/OutputIntents"]


def _drop_trim_box(pdf: pikepdf.Pdf) -> None:
    del pdf.pages[1].obj["/TrimBox"]


def _unembed_a_font(pdf: pikepdf.Pdf) -> None:
    font = next(iter(pdf.pages[0].Resources.Font.values()))
    del font.FontDescriptor["/FontFile2"]


def _no_pdfx_version(pdf: pikepdf.Pdf) -> None:
    del pdf.docinfo["/GTS_PDFXVersion"]


def _library_author(pdf: pikepdf.Pdf) -> None:
    pdf.docinfo["/Author"] = "anonymous"


def _transparency(pdf: pikepdf.Pdf) -> None:
    states = pdf.pages[0].Resources.ExtGState
    states["/Half"] = pikepdf.Dictionary(ca=0.5)


def _unnamed_ink(pdf: pikepdf.Pdf) -> None:
    spaces = pdf.pages[0].Resources.ColorSpace
    name = next(iter(spaces.keys()))
    space = spaces[name]
    spaces["/Odd"] = pikepdf.Array([space[0], pikepdf.Name("/Gold"), space[2], space[3]])


def _trim_outside_bleed(pdf: pikepdf.Pdf) -> None:
    page = pdf.pages[0].obj
    left, bottom, right, top = (float(v) for v in page.BleedBox)
    page.TrimBox = pikepdf.Array([left - 5, bottom, right, top])


INJECTIONS: dict[str, tuple[Callable[[pikepdf.Pdf], None], str, str]] = {
    "an RGB fill": (_add_rgb_fill, "colour", "colour: DeviceRGB"),
    "no output intent": (_drop_output_intent, "output-intent", "0 GTS_PDFX output intents"),
    "no TrimBox": (_drop_trim_box, "page-boxes", "page 2: page-boxes: no TrimBox"),
    "a font not embedded": (_unembed_a_font, "fonts", "is not embedded"),
    "no GTS_PDFXVersion": (_no_pdfx_version, "info", "claims no PDF/X version"),
    "a library's author": (_library_author, "info", "Author is 'anonymous'"),
    "constant alpha": (_transparency, "transparency", "constant alpha ca 0.5"),
    "an ink not of the job": (_unnamed_ink, "separations", "'Gold' is not one of this job's"),
    "a TrimBox outside the BleedBox": (_trim_outside_bleed, "page-boxes", "not inside the"),
}


@pytest.mark.parametrize("what", sorted(INJECTIONS))
def test_one_injected_violation_fails_naming_its_rule(exported, tmp_path, what):
    inject, rule, words = INJECTIONS[what]
    folder = tmp_path / "print"
    shutil.copytree(exported, folder)
    baseline = set(_lines(folder))
    job = json.loads((folder / "job.json").read_text())
    entry = job["files"][0]
    path = folder / entry["path"]
    with pikepdf.open(path, allow_overwriting_input=True) as pdf:
        inject(pdf)
        pdf.save(path, static_id=True)
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()  # the job's own record
    (folder / "job.json").write_text(json.dumps(job))
    result = run_cli("preflight", str(folder))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line not in baseline]
    assert lines and all(line.startswith(f"{entry['path']}: ") for line in lines), lines
    named = {r for line in lines for r in RULES if f": {r}: " in line}
    assert named == {rule}, lines
    assert any(words in line for line in lines), lines
    assert rule in result.stderr.strip().splitlines()[-1].rsplit(": ", 1)[1].split(", ")


def test_a_file_changed_after_the_export_is_named(exported, tmp_path):
    folder = tmp_path / "print"
    shutil.copytree(exported, folder)
    baseline = set(_lines(folder))
    victim = sorted(folder.glob("*.pdf"))[1]
    victim.write_bytes(victim.read_bytes() + b"\n")
    result = run_cli("preflight", str(folder))
    assert result.returncode == 1
    new = [line for line in result.stdout.splitlines() if line not in baseline]
    assert new == [f"{victim.name}: job: its SHA-256 differs from job.json's"]


def test_not_a_print_folder_is_one_line(tmp_path):
    result = run_cli("preflight", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "holds no PDF file" in result.stderr
