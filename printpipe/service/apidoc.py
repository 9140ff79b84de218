"""The OpenAPI document each server serves at ``/v1/openapi.json``, and its check against the
server's routes: one home for both, for the validation service, the game server and the
reference wallet (which import it from here: ``play`` and ``wallet`` rank above ``service``).

Each server's document is written by hand (its ``openapi.py``); who each operation admits
(:data:`~printpipe.service.access.ROLES_MEMBER`) is not, it is added here from the server's
route table, and a route without an operation, or an operation without a route, is refused
(ValueError, one line naming them and the document).  Each ``create_app`` calls
:meth:`ApiDocument.check`, so that a route left out of the document stops the server as it
starts (and any test that builds the application), not at the first request of the document.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from printpipe.service.access import ROLES_MEMBER, Access

Served = tuple[str, str, Access]
"""A route as the document sees it: its path (as the document names it), method, access."""


class ApiDocument:
    """A server's OpenAPI document as served: ``written`` (its ``openapi_document``), each
    operation listing who its route admits (with ``roles``; the wallet lists none: its
    routes admit the game servers it trusts, not terminal roles), checked against
    ``routes()`` (the route table, read when checked).  Called, it is that document."""

    def __init__(
        self,
        written: Callable[[], dict[str, Any]],
        routes: Callable[[], Iterable[Served]],
        *,
        roles: bool = True,
    ) -> None:
        self._written = written
        self._routes = routes
        self._roles = roles
        self._document: dict[str, Any] | None = None

    def check(self) -> None:
        """Build the document from the route table as it is now; ValueError if the two
        disagree (what each ``create_app`` calls before it serves)."""
        self._document = self._build()

    def __call__(self) -> dict[str, Any]:
        if self._document is None:
            self.check()
        assert self._document is not None
        return self._document

    def _build(self) -> dict[str, Any]:
        result = copy.deepcopy(self._written())
        paths: dict[str, dict[str, Any]] = result["paths"]
        described = {(path, method) for path, item in paths.items() for method in item}
        served: set[tuple[str, str]] = set()
        source = self._written.__module__
        for path, method, access in self._routes():
            operation = paths.get(path, {}).get(method.lower())
            if operation is None:
                raise ValueError(f"{method} {path} is served but not in the OpenAPI document "
                                 f"({source})")  # fmt: skip
            if self._roles:
                operation[ROLES_MEMBER] = access.listed()
            served.add((path, method.lower()))
        if described - served:
            missing = ", ".join(f"{m.upper()} {p}" for p, m in sorted(described - served))
            raise ValueError(f"described in the OpenAPI document ({source}) but not served: "
                             f"{missing}")  # fmt: skip
        return result
