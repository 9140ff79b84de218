"""The registry of games: a game id -> its module and its definition in ``templates/``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path

from printpipe.errors import PrintpipeError
from printpipe.games.base import Game
from printpipe.games.chien_chat import ChienChat
from printpipe.games.golden_animals import GoldenAnimals

TEMPLATES_DIR = Path(str(files("printpipe.templates")))
"""The game templates (``templates/`` of the checkout, installed as ``printpipe.templates``:
an installed wheel finds them anywhere)."""

GAMES: dict[str, Callable[[Path], Game]] = {
    "chien-chat": ChienChat,
    "golden-animals": GoldenAnimals,
}


def game_template_dir(game_id: str) -> Path:
    return TEMPLATES_DIR / game_id


@cache
def load_game(game_id: str, definition: Path | None = None) -> Game:
    """The game of this id, its definition loaded and checked (from ``templates/`` by default)."""
    if game_id not in GAMES:
        raise PrintpipeError(f"unknown game {game_id!r} (known: {', '.join(sorted(GAMES))})")
    path = definition or game_template_dir(game_id) / "game.toml"
    game = GAMES[game_id](path)
    if game.definition.id != game_id:
        raise PrintpipeError(
            f"game definition {path}: field game.id: is {game.definition.id!r}, "
            f"expected {game_id!r}"
        )
    return game
