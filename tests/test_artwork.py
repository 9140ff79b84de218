"""Designer artwork: SVG files a template names for the sides and the coating's decoration,
placed as vectors, once per file, in process CMYK (or the decoration's one ink); refused in one
line when they hold what a press file cannot (live text)."""

from __future__ import annotations

import json
from pathlib import Path

import pikepdf
import pytest

from printpipe.block import PackRange
from printpipe.games import game_template_dir
from tests.conftest import assert_preflight_passes, generate_store, run_cli

FRONT = """<svg xmlns="http://www.w3.org/2000/svg" width="82mm" height="133mm" viewBox="0 0 82 133">
  <rect width="82" height="133" fill="#2a6f97"/>
  <circle cx="41" cy="20" r="18" fill="rgb(255, 200, 40)" fill-opacity="0.6"/>
</svg>"""
BACK = """<svg xmlns="http://www.w3.org/2000/svg" width="82mm" height="133mm" viewBox="0 0 82 133">
  <rect width="82" height="133" fill="#f4f1de"/>
</svg>"""
STAR = """<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" viewBox="0 0 100 100">
  <polygon points="50,5 61,38 95,38 67,58 78,92 50,72 22,92 33,58 5,38 39,38" fill="#333"/>
</svg>"""
TEXT = """<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">
  <text x="5" y="50">Bonjour</text></svg>"""


def _template(folder: Path, artwork: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["[artwork]"]
    for role, svg in artwork.items():
        (folder / f"{role}.svg").write_text(svg)
        lines.append(f'{role} = "{role}.svg"')
    text = (game_template_dir("chien-chat") / "ticket.toml").read_text()
    path = folder / "designed.toml"
    path.write_text(text.replace("[fonts]", "\n".join(lines) + "\n\n[fonts]", 1))
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory, game, keys_dir) -> Path:
    return generate_store(game, keys_dir, tmp_path_factory.mktemp("art") / "blk", PackRange(1, 1))


def test_designer_svgs_are_placed_once_as_vectors(store, keys_dir, tmp_path):
    template = _template(tmp_path / "t", {"front": FRONT, "back": BACK, "decoration": STAR})
    out = tmp_path / "print"
    run_cli("export", str(store), "--out", str(out), "--keys", str(keys_dir), "--template",
            str(template), "--unapproved", "-q", check=True)  # fmt: skip
    assert_preflight_passes(out)  # CMYK only, fonts embedded
    job = json.loads((out / "job.json").read_text())
    with pikepdf.open(out / job["files"][0]["path"]) as pdf:
        forms: dict[str, set[tuple[int, int]]] = {}

        def collect(resources: pikepdf.Object) -> None:
            for name, xobject in (resources.get("/XObject") or {}).items():
                forms.setdefault(str(name), set()).add(xobject.objgen)
                assert xobject.Subtype == pikepdf.Name.Form, "vector forms only, no image"
                if "/Resources" in xobject:
                    collect(xobject.Resources)

        for page in pdf.pages[:2]:
            collect(page.Resources)
        for role in ("front", "back"):
            (name,) = [n for n in forms if n.endswith(f"art-{role}")]
            assert len(forms[name]) == 1, f"the {role} artwork is one shared form"
        decor = next(
            xobject
            for page in pdf.pages[:1]
            for name, xobject in page.Resources.XObject.items()
            if str(name).endswith("layer-decor")
        )
        content = decor.read_bytes()
        assert b" k" not in content and b" rg" not in content  # tints of the decoration's ink
        assert content.count(b" l\n") + content.count(b" l ") >= 9  # the star's edges


def test_the_artwork_files_are_inputs_of_the_approval(store, keys_dir, tmp_path):
    template = _template(tmp_path / "t", {"front": FRONT})
    proof, approvals = tmp_path / "proof", tmp_path / "approvals"
    run_cli("proof", "--out", str(proof), "--template", str(template), check=True)
    inputs = json.loads((proof / "proof.json").read_text())["inputs"]
    assert set(inputs["artwork"]) == {"front"} and len(inputs["artwork"]["front"]) == 64
    run_cli("proof", "approve", str(proof), "--keys", str(keys_dir), "--approvals",
            str(approvals), check=True)  # fmt: skip
    (tmp_path / "t" / "front.svg").write_text(FRONT.replace("#2a6f97", "#2a6f98"))
    result = run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
                     "--template", str(template), "--approvals", str(approvals))  # fmt: skip
    assert result.returncode == 1 and "the front artwork (sha256" in result.stderr


@pytest.mark.parametrize(
    ("artwork", "words"),
    [
        ({"front": TEXT}, "has live text ('Bonjour'): convert it to outlines"),
        ({"sides": BACK}, "zone artwork.sides: unknown"),
    ],
)
def test_unusable_artwork_is_one_line(store, keys_dir, tmp_path, artwork, words):
    template = _template(tmp_path / "t", artwork)
    result = run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
                     "--template", str(template), "--unapproved")  # fmt: skip
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert words in result.stderr and not (tmp_path / "p").exists()


def test_the_default_artwork_needs_no_svg_machinery():
    """reportlab.graphics and svglib (50 ms a process) are loaded only for designer artwork:
    a run on the built-in drawings imports neither, in the coordinator nor in a worker."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from printpipe.press import export_block\n"
        "from printpipe.press.export import render_chunk\n"
        "from printpipe.render import sheet, ticket\n"
        "from printpipe.proof import make_proof\n"
        "loaded = [m for m in sys.modules if m.startswith(('reportlab.graphics', 'svglib'))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
