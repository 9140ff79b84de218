"""The house's import graph, read from the source (ast), not from a running interpreter.

A subsystem is a top-level module or package of ``printpipe`` (``manifest``, ``ledger``,
``service``, ...).  Two rules: no import circle passes through modules of two subsystems
(each subsystem can be understood, tested and moved on its own), and the ledger's engine modules
(``ledger/store/sqlite.py``, ``ledger/store/postgresql.py``) are imported only by the store
(``ledger/store/__init__.py``): nothing else in the package names an engine.  Every import
counts, those inside functions and under ``TYPE_CHECKING`` too.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "printpipe"
ENGINES = {"printpipe.ledger.store.sqlite", "printpipe.ledger.store.postgresql"}
STORE = "printpipe.ledger.store"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The printpipe modules ``name`` imports: ``from a.b import c`` is ``a.b.c`` when that is a
    module, else ``a.b``; relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in known else base)
    return {module for module in found if module in known and module != name}


Graph = dict[str, set[str]]


@functools.cache
def _read_graph() -> tuple[tuple[str, frozenset[str]], ...]:
    modules = _modules()
    return tuple(
        (name, frozenset(_imports(name, path, set(modules)))) for name, path in modules.items()
    )


def _graph() -> Graph:
    """Each module -> the modules it imports (a fresh copy: a test may add an edge)."""
    return {name: set(targets) for name, targets in _read_graph()}


def _reach(graph: Graph, start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _circles(graph: Graph) -> list[set[str]]:
    """The strongly connected components of more than one module: the import circles."""
    reversed_graph: Graph = {name: set() for name in graph}
    for name, targets in graph.items():
        for target in targets:
            reversed_graph[target].add(name)
    circles, placed = [], set()
    for name in sorted(graph):
        if name in placed:
            continue
        component = _reach(graph, name) & _reach(reversed_graph, name)
        placed |= component
        if len(component) > 1:
            circles.append(component)
    return circles


def _subsystem(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "printpipe"


def test_the_graph_is_read_from_every_module():
    graph = _graph()
    # a sample of edges the package is known to have: the reader finds real imports
    assert "printpipe.ledger.rules" in graph["printpipe.ledger.book"]
    assert "printpipe.ledger.book" in graph["printpipe.ledger"]
    assert "printpipe.ledger.store.sqlite" in graph["printpipe.ledger.store"]
    assert len(graph) > 100


KNOWN_CIRCLES: list[list[str]] = []
"""None: issue 19's second circle (approval -> proof -> export -> approval) went with the demo
workflow's move to ``main_job.py`` and the chunk size's to ``render/imposition.py``.  A new
circle across subsystems fails the test; one that must stay is listed here exactly."""


def test_no_import_circle_spans_two_subsystems():
    graph = _graph()
    spanning = [
        sorted(circle) for circle in _circles(graph) if len({_subsystem(m) for m in circle}) > 1
    ]
    assert sorted(spanning) == KNOWN_CIRCLES


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_only_the_store_imports_an_engine(engine):
    graph = _graph()
    importers = {name for name, targets in graph.items() if engine in targets} - ENGINES
    assert importers == {STORE}


def test_the_ledger_wing_has_no_circle():
    graph = _graph()
    assert [c for c in _circles(graph) if any(_subsystem(m) == "ledger" for m in c)] == []


def test_a_circle_across_subsystems_would_be_seen():
    """The check itself can fail: an edge back from the ledger to the service makes a circle."""
    graph = _graph()
    graph["printpipe.ledger.book"].add("printpipe.service.app")
    assert any(len({_subsystem(m) for m in circle}) > 1 for circle in _circles(graph))


def test_the_ledger_is_used_through_its_public_surface():
    """Outside ``printpipe/ledger/``, the package imports the wing only as
    ``printpipe.ledger`` (its ``__init__``), never one of its modules."""
    graph = _graph()
    reaching_in = sorted(
        (name, target)
        for name, targets in graph.items()
        if _subsystem(name) != "ledger"
        for target in targets
        if _subsystem(target) == "ledger" and target != "printpipe.ledger"
    )
    assert reaching_in == []
    assert "printpipe.ledger" in graph["printpipe.service.app"]


def test_every_public_name_of_the_ledger_resolves():
    import printpipe.ledger

    for name in printpipe.ledger.__all__:
        assert getattr(printpipe.ledger, name) is not None, name
