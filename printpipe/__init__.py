"""printpipe: the production pipeline for lottery instant tickets.

Beside the version, the one loader of the wings' faces (``printpipe/<wing>/__init__.py``): a
face names what others may use and where each name lives, and loads a name's module only when
it is first used, so that importing a face costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__version__ = "0.1.0"


def load_on_first_use(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the face ``package``: a name of ``homes`` is imported from
    its module (``homes[name]``, inside ``package``) on first use, then kept in the face."""
    face = import_module(package)

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{home}"), name)
        setattr(face, name, value)
        return value

    return __getattr__
