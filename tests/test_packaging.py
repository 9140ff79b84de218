"""The wheel holds the whole package: every package on disk is listed in pyproject.toml, and
every data file of ``templates/`` and ``fonts/`` (installed as ``printpipe.templates`` and
``printpipe.fonts``) is matched by its package data.

``.ci/run`` builds the wheel, installs it outside the checkout and runs ``printpipe run`` and
``printpipe proof`` there; these checks catch, in a second, the omission that would make that
fail: a new subpackage or template file the list does not name.
"""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
    "setuptools"
]


def folder_of(package: str) -> Path:
    """Where setuptools takes a package from: its ``package-dir`` entry, else its dotted path."""
    mapped = SETUPTOOLS.get("package-dir", {})
    parts = package.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in mapped:
            return ROOT / mapped[".".join(parts[:i])] / Path(*parts[i:])
    return ROOT / Path(*parts)


def packages_on_disk() -> set[str]:
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "printpipe").rglob("__init__.py")
    }
    for package, folder in SETUPTOOLS.get("package-dir", {}).items():
        found |= {
            ".".join((package, *init.parent.relative_to(ROOT / folder).parts))
            for init in (ROOT / folder).rglob("__init__.py")
        }
    return found


def test_the_listed_packages_are_the_packages_on_disk():
    listed = set(SETUPTOOLS["packages"])
    assert {"printpipe", "printpipe.templates", "printpipe.fonts"} <= listed
    assert listed == packages_on_disk(), (
        f"in pyproject.toml, not on disk: {sorted(listed - packages_on_disk())}; "
        f"on disk, not in pyproject.toml: {sorted(packages_on_disk() - listed)}"
    )
    for package in listed:
        assert (folder_of(package) / "__init__.py").is_file(), package


def test_every_folder_of_code_is_a_package():
    """A folder of modules without ``__init__.py`` would be left out of the wheel silently."""
    for module in (ROOT / "printpipe").rglob("*.py"):
        assert (module.parent / "__init__.py").is_file(), f"{module.parent} has no __init__.py"


def test_the_data_folders_are_at_the_top_level_and_shipped_whole():
    assert SETUPTOOLS["package-dir"] == {
        "printpipe.templates": "templates",
        "printpipe.fonts": "fonts",
    }
    assert not (ROOT / "printpipe" / "templates").exists()
    assert not (ROOT / "printpipe" / "fonts").exists()
    data = SETUPTOOLS["package-data"]
    for package in ("printpipe.templates", "printpipe.fonts"):
        folder = folder_of(package)
        files = [
            path.relative_to(folder).as_posix()
            for path in folder.rglob("*")
            if path.is_file() and path.suffix not in {".py", ".pyc"}
        ]
        assert files, folder
        unshipped = [f for f in files if not any(fnmatch(f, glob) for glob in data[package])]
        assert not unshipped, f"{folder}: not in package-data: {unshipped}"


def test_the_installed_package_reads_its_data_from_the_top_level_folders():
    from printpipe.games import TEMPLATES_DIR, game_template_dir
    from printpipe.render.fonts import FONTS_DIR

    assert TEMPLATES_DIR.resolve() == ROOT / "templates"
    assert FONTS_DIR.resolve() == ROOT / "fonts"
    assert (game_template_dir("chien-chat") / "game.toml").is_file()
