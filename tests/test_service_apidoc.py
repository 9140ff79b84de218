"""The OpenAPI document each server serves describes exactly its routes, and a server whose
routes and document disagree is refused as its application is created
(``printpipe.service.apidoc``), not at the first request of ``/v1/openapi.json``."""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable
from typing import Any

import pytest

from printpipe.service.access import ROLES_MEMBER

CREATE: dict[str, Callable[[Any], Any]] = {
    # the check comes first: no ledger, dealer nor store is touched before it
    "service": lambda app: app.create_app(None, threads=1),
    "play": lambda app: app.create_app(None, None, threads=1, demo=False),
    "wallet": lambda app: app.create_app(None, trusted=[]),
}


@pytest.mark.parametrize("server", sorted(CREATE))
def test_each_document_describes_its_routes(server):
    app = importlib.import_module(f"printpipe.{server}.app")
    app.api_document.check()
    document = app.api_document()
    operations = {(path, method.upper()) for path, item in document["paths"].items()
                  for method in item}  # fmt: skip
    routes = {(path, method) for path, method, _ in app.api_document._routes()}
    assert operations == routes
    listed = [op.get(ROLES_MEMBER) for item in document["paths"].values() for op in item.values()]
    if server == "wallet":  # its routes admit the game servers it trusts, no terminal roles
        assert listed == [None] * len(listed)
    else:
        assert all(listed)


@pytest.mark.parametrize("server", sorted(CREATE))
def test_a_route_missing_from_the_document_stops_the_app_as_it_is_created(server, monkeypatch):
    app = importlib.import_module(f"printpipe.{server}.app")
    served = app.api_document()  # as served before: the refused check changes nothing
    health = next(r for r in app.ROUTES if r.path == "/v1/health")
    undocumented = dataclasses.replace(health, path="/v1/undocumented")
    monkeypatch.setattr(app, "ROUTES", (*app.ROUTES, undocumented))
    said = (r"^GET /v1/undocumented is served but not in the OpenAPI document "
            rf"\(printpipe\.{server}\.openapi\)$")  # fmt: skip
    with pytest.raises(ValueError, match=said):
        CREATE[server](app)
    assert app.api_document() == served


@pytest.mark.parametrize("server", sorted(CREATE))
def test_an_operation_without_its_route_stops_the_app_as_it_is_created(server, monkeypatch):
    app = importlib.import_module(f"printpipe.{server}.app")
    dropped = next(r for r in app.ROUTES if r.path == "/v1/openapi.json")
    monkeypatch.setattr(app, "ROUTES", tuple(r for r in app.ROUTES if r is not dropped))
    said = (rf"^described in the OpenAPI document \(printpipe\.{server}\.openapi\) but not "
            r"served: GET /v1/openapi\.json$")  # fmt: skip
    with pytest.raises(ValueError, match=said):
        CREATE[server](app)


def test_the_message_names_every_operation_left_unserved(monkeypatch):
    app = importlib.import_module("printpipe.service.app")
    kept = tuple(r for r in app.ROUTES if not r.path.startswith("/v1/packs"))
    monkeypatch.setattr(app, "ROUTES", kept)
    with pytest.raises(ValueError) as refused:
        app.create_app(None, threads=1)
    unserved = re.findall(r"(GET|POST) (/v1/packs\S*?)(?:,|$)", str(refused.value))
    assert sorted(unserved) == [
        ("GET", "/v1/packs/{pack}"),
        ("POST", "/v1/packs/{pack}/activation"),
    ]
