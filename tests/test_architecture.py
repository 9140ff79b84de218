"""The house's import graph, read from the source (ast), not from a running interpreter.

A subsystem is a top-level module or package of ``printpipe`` (``block``, ``handover``,
``ledger``, ``service``, ...).  The rules: no import goes up the pipeline (each subsystem imports
only the shared modules and the subsystems :data:`BELOW` it); a wing (:data:`WINGS`) is used
from outside only through its face, its ``__init__``; no import circle passes through modules of
two subsystems (each subsystem can be understood, tested and moved on its own); at most eight
shared modules stand at the package's top; nothing outside ``games/`` names a game's module or
its symbols; and the ledger's engine modules
(``ledger/store/sqlite.py``, ``ledger/store/postgresql.py``) are imported only by the store
(``ledger/store/__init__.py``): nothing else in the package names an engine.  Every import
counts, those inside functions and under ``TYPE_CHECKING`` too.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "printpipe"
SHARED = {"printpipe", "atomic", "errors", "french", "ids", "keys", "progress", "rng"}
"""The shared modules at the package's top (``printpipe`` is its ``__init__``: the version and
the faces' loader): any subsystem may import them, and they import only each other."""
BELOW: dict[str, set[str]] = {
    "games": set(),
    "block": {"games"},
    "render": {"games"},
    "handover": {"block", "render"},  # render: the ticket template an approval's inputs name
    "commitment": {"handover"},
    "generation": {"commitment"},
    "proof": {"generation", "render"},
    "press": {"proof"},
    "wallet_api": set(),  # printpipe/wallet/api.py: see WALLET_API
    "ledger": {"commitment", "wallet_api"},
    "service": {"ledger"},
    "wallet": {"service"},
    "play": {"wallet", "render"},
    "cli": {"press", "play"},
    "__main__": {"cli"},
}
"""The pipeline as layers: each subsystem over those it reads (and, through them, over theirs).

game -> block -> press files and proofs -> manifest -> ledger -> services is the order in which
the data flows; the imports follow it, with one turn: the formats that pass between the parties
(the manifest, the unit feed and the proof's approval: ``handover``; the commitment) rank below
both the printer's runs that write or check them (``generation``, ``proof``, ``press``) and the
lottery's side that reads them (``ledger`` and the services), and neither side imports the
other."""
WALLET_API = "printpipe.wallet.api"
"""The operator's wallet API (the calls, receipts, statements and outcomes that pass between the
game server and the operator's wallet) is a contract, as ``handover``'s formats are: it ranks
below the ledger, which records the calls in its outbox, while the reference wallet's server (the
rest of ``wallet/``) sits above the service it is built on."""
WINGS = {"block", "handover", "generation", "press", "ledger"}
"""The wings with a face: outside the wing, only ``printpipe.<wing>`` is imported, whose names
are loaded on first use.  ``render``, ``proof``, ``commitment`` and ``games`` are used module by
module, as they always were."""
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
    if module == WALLET_API:
        return "wallet_api"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "printpipe"


def test_the_graph_is_read_from_every_module():
    graph = _graph()
    # a sample of edges the package is known to have: the reader finds real imports
    assert "printpipe.ledger.rules" in graph["printpipe.ledger.book"]
    assert "printpipe.ledger.book" in graph["printpipe.ledger"]
    assert "printpipe.ledger.store.sqlite" in graph["printpipe.ledger.store"]
    assert "printpipe.block.tickets" in graph["printpipe.block.store"]
    assert "printpipe.handover" in graph["printpipe.press.export"]
    assert "printpipe.press.preflight_press" in graph["printpipe.press.intake"]
    assert len(graph) > 100


def _allowed(subsystem: str) -> set[str]:
    """What ``subsystem`` may import: itself, the shared modules, and every layer below it."""
    if subsystem in SHARED:
        return set(SHARED)
    allowed, todo = {subsystem} | SHARED, [subsystem]
    while todo:
        for lower in BELOW[todo.pop()]:
            if lower not in allowed:
                allowed.add(lower)
                todo.append(lower)
    return allowed


def _up_the_pipeline(graph: Graph) -> list[tuple[str, str]]:
    """Every import of a subsystem that is not below the importer's: (importer, imported)."""
    return sorted(
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if _subsystem(target) not in _allowed(_subsystem(name))
    )


def test_every_subsystem_has_its_place_in_the_pipeline():
    subsystems = {_subsystem(name) for name in _graph()}
    assert subsystems == SHARED | set(BELOW)
    assert all(set(lower) <= set(BELOW) for lower in BELOW.values())


def test_no_import_goes_up_the_pipeline():
    assert _up_the_pipeline(_graph()) == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("printpipe.block.store", "printpipe.press"),  # the block reaching for the press
        ("printpipe.games.base", "printpipe.block.tickets"),  # a game reaching for the block
        ("printpipe.handover.manifest", "printpipe.generation"),  # a format, for its writer
        ("printpipe.render.ticket", "printpipe.proof"),  # the drawing, for the proof
        ("printpipe.ledger.importer", "printpipe.press"),  # the lottery's side, the printer's
        ("printpipe.press.export", "printpipe.ledger"),  # and the other way
        ("printpipe.ids", "printpipe.block"),  # a shared module, for a stage
    ],
)
def test_an_import_up_the_pipeline_would_be_seen(importer, imported):
    """The check itself can fail: each of these edges, added to the real graph, is named."""
    graph = _graph()
    graph[importer].add(imported)
    assert set(_up_the_pipeline(graph)) - set(_up_the_pipeline(_graph())) == {(importer, imported)}


def test_at_most_eight_modules_stand_at_the_top():
    """``ls printpipe/`` shows the pipeline: the wings, the few modules every stage shares and
    the entry point ``__main__`` (``python -m printpipe``), eight at most, beside the package's
    ``__init__`` (its version, the faces' loader)."""
    top = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    assert top == (SHARED - {"printpipe"}) | {"__main__"}
    assert len(top) <= 8


KNOWN_CIRCLES: list[list[str]] = []
"""None: issue 19's second circle (approval -> proof -> export -> approval) went with the demo
workflow's move to ``press/main_job.py`` and the chunk size's to ``render/imposition.py``.  A new
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


def _reaching_in(graph: Graph, wing: str) -> list[tuple[str, str]]:
    """Every import, from outside ``wing``, of one of its modules rather than its face."""
    return sorted(
        (name, target)
        for name, targets in graph.items()
        if _subsystem(name) != wing
        for target in targets
        if _subsystem(target) == wing and target != f"printpipe.{wing}"
    )


@pytest.mark.parametrize("wing", sorted(WINGS))
def test_a_wing_is_used_through_its_face(wing):
    """Outside ``printpipe/ledger/`` (``block/``, ``handover/``, ...), the package imports the
    wing only as ``printpipe.ledger`` (its ``__init__``), never one of its modules."""
    assert _reaching_in(_graph(), wing) == []


def test_the_faces_are_what_the_package_imports():
    graph = _graph()
    assert "printpipe.ledger" in graph["printpipe.service.app"]
    assert "printpipe.block" in graph["printpipe.handover.manifest"]
    assert "printpipe.handover" in graph["printpipe.ledger.importer"]
    assert "printpipe.generation" in graph["printpipe.press.export"]
    assert "printpipe.press" in graph["printpipe.cli.press"]


def test_reaching_past_a_face_would_be_seen():
    graph = _graph()
    graph["printpipe.cli.press"].add("printpipe.press.export")
    assert _reaching_in(graph, "press") == [("printpipe.cli.press", "printpipe.press.export")]


def test_a_wing_imports_its_own_modules_not_its_face():
    """Inside a wing, a module names its neighbour, never the face: the face lists every module,
    so going through it would put the wing's modules in one circle."""
    graph = _graph()
    through_own_face = sorted(
        (name, wing)
        for wing in WINGS
        for name, targets in graph.items()
        if name.startswith(f"printpipe.{wing}.") and f"printpipe.{wing}" in targets
    )
    assert through_own_face == []


@pytest.mark.parametrize("wing", sorted(WINGS))
def test_every_public_name_of_a_wing_resolves(wing):
    face = importlib.import_module(f"printpipe.{wing}")
    assert sorted(face.__all__) == sorted(face._HOMES)
    # a submodule, once imported, becomes the package's attribute: a name must not be one
    modules = {path.stem for path in (PACKAGE / wing).glob("*.py")} | {
        path.name for path in (PACKAGE / wing).iterdir() if (path / "__init__.py").is_file()
    }
    assert not set(face.__all__) & modules
    for name in face.__all__:
        value = getattr(face, name)
        home = importlib.import_module(f"printpipe.{wing}.{face._HOMES[name]}")
        assert value is getattr(home, name), name


def test_a_face_loads_nothing_until_a_name_is_used():
    """``import printpipe.block`` (or any face) costs nothing: its names are loaded on first
    use, so ``printpipe --help`` and a command's own help stay light."""
    faces = ", ".join(f"printpipe.{wing}" for wing in sorted(WINGS))
    code = (
        f"import sys, {faces}\n"
        "wings = tuple(f'printpipe.{w}.' for w in " + repr(sorted(WINGS)) + ")\n"
        "print(sorted(m for m in sys.modules if m.startswith(wings) or m == 'numpy'))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


GAME_MODULES = {"printpipe.games.chien_chat", "printpipe.games.golden_animals"}


def _game_words() -> set[str]:
    """What each game's definition names: its symbols' codes, its effigies and their boxes."""
    from printpipe.games import GAMES, load_game

    words: set[str] = set()
    for game_id in GAMES:
        definition = load_game(game_id).definition
        words |= set(definition.symbol_codes) | set(definition.variants)
        for effigy in definition.raw.get("effigies", {}).values():
            words.add(effigy["bonus_box"])
    return words


def _named_in_code(source: str, words: set[str]) -> set[str]:
    """The ``words`` a module's source names: as a string, a name or an attribute."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            named.add(node.value)
        elif isinstance(node, ast.Name):
            named.add(node.id)
        elif isinstance(node, ast.Attribute):
            named.add(node.attr)
    return named & words


def _named_on_page(text: str, words: set[str]) -> set[str]:
    """The ``words`` a page (HTML, script, style) shows or names, as whole words."""
    return set(re.findall(r"\b(?:" + "|".join(sorted(words)) + r")\b", text))


def _naming_a_game(graph: Graph, words: set[str]) -> set[tuple[str, str]]:
    """Outside ``games/``: every import of a game's own module, and every word of ``words``
    that a module's code or the player's page names."""
    found = {
        (name.removeprefix("printpipe.").replace(".", "/") + ".py", target)
        for name, targets in graph.items()
        if _subsystem(name) != "games"
        for target in targets & GAME_MODULES
    }
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("games/") or not path.is_file():
            continue
        if path.suffix == ".py":
            named = _named_in_code(path.read_text(encoding="utf-8"), words)
        elif path.suffix in {".html", ".js", ".css"}:
            named = _named_on_page(path.read_text(encoding="utf-8"), words)
        else:
            continue
        found |= {(relative, word) for word in named}
    return found


def test_nothing_outside_the_games_names_a_game():
    """A game is a plug-in behind its protocol (``games/base.py``): outside ``games/`` (and
    ``templates/``, its data), no module imports a game's own module or names its symbols."""
    words = _game_words()
    assert {"OS", "GAMELLE", "CHIEN", "NICHE", "HIBOU", "EXTRA"} <= words
    assert _naming_a_game(_graph(), words) == set()


def test_naming_a_game_would_be_seen():
    graph = _graph()
    graph["printpipe.press.export"].add("printpipe.games.chien_chat")
    words = _game_words()
    assert _naming_a_game(graph, words) == {("press/export.py", "printpipe.games.chien_chat")}
    source = 'effigy = "CHIEN"\nif tickets.NICHE or OS:\n    """The OS of a dog."""'
    assert _named_in_code(source, words) == {"CHIEN", "NICHE", "OS"}
    assert _named_on_page('<h3>Étape EXTRA</h3> <p class="lion">Lion</p>', words) == {"EXTRA"}
