"""What the player's screen shows, as JSON: the game (pictograms, paytable, words) and a unit.

The page decides nothing: it draws what the game server sends.  Everything here comes from
the game plug-in through :class:`~printpipe.games.base.OnlineGame` (its pictograms drawn as
SVG by the same functions as the proofs, its words, ``unit_wins`` for what the rules pay), so
this module names no symbol of any game: a unit's winning cells, its wins in words and its lot
are the rules' own reckoning, never a second one.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from printpipe import french
from printpipe.games.base import OnlineGame
from printpipe.render.svg import SvgCanvas, rgb_of

HELP_LINE = "Joueurs Info Service : 09 74 75 13 13 (appel non surtaxé)"
"""The French help line for gambling problems, shown on the screen (responsible play)."""


def _lighten(hex_colour: str, by: float = 0.7) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    r, g, b = (round(v + (255 - v) * by) for v in (r, g, b))
    return f"#{r:02x}{g:02x}{b:02x}"


def game_screen(game: OnlineGame) -> dict[str, Any]:
    """The fixed part of the screen: the game's symbols (SVG pictogram, caption, cell tint),
    its paytable and its words; the same for every player (``GET /v1/game``)."""
    definition = game.definition
    words = game.unit_words()
    blank = definition.records.blank_symbol
    symbols = {}
    for code in definition.symbol_codes:
        if code == blank:
            continue
        canvas = SvgCanvas()
        game.draw_pictogram(canvas, code, 0.0, 0.0, 1.0, canvas.font)
        caption = definition.captions[code]
        tint = game.pictogram_tint(code)
        symbols[code] = {
            "caption": caption,
            "svg": canvas.svg(label=caption),
            "tint": _lighten(rgb_of(tint)) if tint else "#f4f1ea",
        }
    offer = game.offer_price_cents
    return {
        "game": definition.id,
        "number": definition.number,
        "title": definition.title,
        "stake_cents": offer,
        "stake_text": french.cents(offer),
        "rows": game.rows,
        "columns": game.columns,
        "symbols": symbols,
        "paytable": [{"symbol": code, "text": text} for code, text in words.paytable],
        "rules": words.rules,
        "second_grid_title": words.second_grid_title,
        "second_grid_opened": words.second_grid_opened,
        "help_line": HELP_LINE,
    }


class ScreenMaker:
    """The screen of one game: its fixed part made once, each unit's cached (units never
    change, and a history shows the same ones again and again)."""

    def __init__(self, game: OnlineGame, *, cached_units: int = 8192) -> None:
        self.game = game
        self.fixed = game_screen(game)
        self.unit = lru_cache(maxsize=cached_units)(self._unit)

    def _unit(self, symbols: bytes, lot_eur: int) -> dict[str, Any]:
        return unit_screen(self.game, symbols, lot_eur)


def unit_screen(game: OnlineGame, symbols: bytes, lot_eur: int) -> dict[str, Any]:
    """One unit as the screen shows it: its grid, and its second grid when it opens one, each
    with its symbol codes row by row, which cells win (the rules' groups and money symbols)
    and its wins in words; and its lot (the unit's record, which the import checked against
    the rules).  ``symbols``: the record's symbol indices, one byte each."""
    indices = np.frombuffer(bytes(symbols), dtype=np.uint8).astype(np.int64)
    row = list(bytes(symbols))
    codes = game.definition.symbol_codes
    cells = game.cells
    winning, words = game.unit_wins(indices)
    opens = game.opens_second_grid(row)
    grids = []
    for g in range(2 if opens else 1):
        grids.append(
            {
                "symbols": [codes[s] for s in row[g * cells : (g + 1) * cells]],
                "winning": winning[g * cells : (g + 1) * cells].tolist(),
                "wins": words[g],
            }
        )
    return {
        "grids": grids,
        "second_grid": opens,
        "lot_eur": lot_eur,
        "wins_text": game.describe_wins(words),
    }
