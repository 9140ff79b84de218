"""The dog/cat scratch ticket: its rules, and layouts drawn for a given prize tier.

Regulation: articles 4.2 (nine paw prints, 1 to 5 winning symbols pay 2 to 5,000 EUR) and
4.3 (a bonus box whose multiplier symbol triples that prize).  The decisions the
regulation leaves open (``docs/game-chien-chat.md``, 1 to 8) are enforced by
:meth:`ChienChat.evaluate`, which answers ``INVALID_PRIZE`` for a layout that breaks one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from printpipe.errors import InvalidLayout
from printpipe.games.base import (
    INVALID_PRIZE,
    LOSING_TIER,
    BackArt,
    DefinitionReader,
    Drawing,
    Evaluation,
    FrontArt,
    GameDefinition,
    SpecimenWords,
    SymbolField,
)
from printpipe.rng import KeyStream

PAWS = "paws"
BONUS = "bonus"

VIOLATIONS: tuple[str, ...] = (
    "legal",
    "the effigy is unknown",
    "more winning symbols than the rules allow (decision 1)",
    "two multiplier symbols in the bonus box (decision 2)",
    "the multiplier symbol in a paw (decision 3)",
    "the winning symbol in the bonus box (decision 3)",
    "a paw symbol that is not one of this effigy's paw symbols (decision 4)",
    "a bonus symbol that is not one of this effigy's bonus symbols (decision 4)",
)


@dataclass(frozen=True, slots=True)
class Effigy:
    """A dog or cat ticket's own symbols (regulation 4.1): what wins, what triples, the decoys."""

    code: str
    caption: str
    bonus_box: str
    winning_symbol: str
    multiplier_symbol: str
    paw_decoys: tuple[str, ...]
    bonus_decoys: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WayToWin:
    """How a tier is won: this many winning symbols, with or without the multiplier."""

    winning_symbols: int
    multiplied: bool


class ChienChat:
    """The dog/cat game: a definition, its rules (``evaluate``, ``layout``) and its printed
    ticket (:class:`~printpipe.games.base.PaperGame`)."""

    violations = VIOLATIONS

    def __init__(self, path: Path) -> None:
        reader = DefinitionReader(path)
        effigies = self._effigies(reader)
        fields = (
            SymbolField(PAWS, reader.integer("rules.paw_count", 1)),
            SymbolField(BONUS, reader.integer("rules.bonus_symbol_count", 2)),
        )
        self.definition: GameDefinition = reader.common(tuple(e.code for e in effigies), fields)
        self.effigies = effigies
        self.multiplier = reader.integer("rules.bonus_multiplier", 2)
        self.max_winning_symbols = reader.integer("rules.max_winning_symbols", 1)
        if self.max_winning_symbols > fields[0].width:
            raise reader.error("rules.max_winning_symbols", "more than there are paws")
        table = reader.table("rules.prize_by_winning_symbols")
        self.prize_by_count = np.full(fields[0].width + 1, INVALID_PRIZE, dtype=np.int64)
        self.prize_by_count[0] = 0
        for count in range(1, self.max_winning_symbols + 1):
            key = f"rules.prize_by_winning_symbols.{count}"
            self.prize_by_count[count] = reader.integer(key, 1, table.get(str(count)) or None)
        self._index_tables()
        self.ways = self._derive_ways(reader)

    # -- the rules -------------------------------------------------------------------------

    def evaluate(self, variants: np.ndarray, symbols: np.ndarray) -> Evaluation:
        """The prize of each ticket in EUR, by the regulation and decisions 1-4 alone.

        ``variants`` holds effigy indices (n,), ``symbols`` symbol indices (n, 9 + 2): the
        paws in reading order (row by row, top-left first), then the bonus box.
        """
        variants = np.asarray(variants, dtype=np.int64)
        symbols = np.asarray(symbols, dtype=np.int64)
        paw_count = self.definition.fields[0].width
        known = (variants >= 0) & (variants < len(self.effigies))
        v = np.where(known, variants, 0)
        paws, bonus = symbols[:, :paw_count], symbols[:, paw_count:]
        winning = (paws == self.winning_ids[v][:, None]).sum(axis=1)
        multipliers = (bonus == self.multiplier_ids[v][:, None]).sum(axis=1)
        rows = v[:, None]
        broken = [
            ~known,
            winning > self.max_winning_symbols,
            multipliers > 1,
            (paws == self.multiplier_ids[v][:, None]).any(axis=1),
            (bonus == self.winning_ids[v][:, None]).any(axis=1),
            ~self.paw_allowed[rows, paws].all(axis=1),
            ~self.bonus_allowed[rows, bonus].all(axis=1),
        ]
        violation = np.zeros(len(variants), dtype=np.int64)
        for code in range(len(broken), 0, -1):  # the first rule broken is the one named
            violation[broken[code - 1]] = code
        base = self.prize_by_count[np.minimum(winning, paw_count)]
        prize = base * np.where(multipliers == 1, self.multiplier, 1)
        return Evaluation(np.where(violation == 0, prize, INVALID_PRIZE), violation)

    def prize_eur(self, effigy: str, paws: Sequence[str], bonus: Sequence[str]) -> int:
        """The prize of one ticket given as symbol codes; raises InvalidLayout if forbidden."""
        paw_count, bonus_count = (f.width for f in self.definition.fields)
        if len(paws) != paw_count or len(bonus) != bonus_count:
            raise InvalidLayout(
                f"invalid layout: expected {paw_count} paws and {bonus_count} "
                f"bonus symbols, got {len(paws)} and {len(bonus)}"
            )
        row = self.definition.symbol_row([*paws, *bonus])
        variant = (
            self.definition.variants.index(effigy) if effigy in self.definition.variants else -1
        )
        result = self.evaluate(np.array([variant]), np.array([row]))
        if result.violation[0]:
            raise InvalidLayout(f"invalid layout: {VIOLATIONS[result.violation[0]]}")
        return int(result.prize_eur[0])

    # -- layouts ---------------------------------------------------------------------------

    def layout(self, tiers: np.ndarray, variants: np.ndarray, stream: KeyStream) -> np.ndarray:
        """Symbols for tickets of the given tiers and effigies; they evaluate back to the tier.

        Every ticket consumes the same amount of the stream whatever its tier, so where a
        ticket sits never shifts the draws of the others.
        """
        n = len(tiers)
        paw_count = self.definition.fields[0].width
        v = np.asarray(variants, dtype=np.int64)
        way_choice = stream.below(self.way_counts[tiers], n)
        counts = self.way_winning[tiers, way_choice]
        multiplied = self.way_multiplied[tiers, way_choice]
        teaser = stream.bernoulli(self.definition.block.teaser_rate, n) & (tiers == LOSING_TIER)

        ranks = stream.row_ranks((n, paw_count))
        paw_picks = stream.below(self.paw_decoy_counts[v][:, None], (n, paw_count))
        decoys = self.paw_decoy_table[v[:, None], paw_picks]
        paws = np.where(ranks < counts[:, None], self.winning_ids[v][:, None], decoys)

        first = stream.below(self.bonus_decoy_counts[v], n)
        second = stream.below(self.bonus_decoy_counts[v] - 1, n)
        second = second + (second >= first)  # two different decoys
        bonus = np.stack([self.bonus_decoy_table[v, first], self.bonus_decoy_table[v, second]], 1)
        slot = stream.below(2, n)
        shows_multiplier = multiplied | teaser
        bonus[np.arange(n), slot] = np.where(
            shows_multiplier, self.multiplier_ids[v], bonus[np.arange(n), slot]
        )
        return np.concatenate([paws, bonus], axis=1).astype(np.uint8)

    def teasers(self, variants: np.ndarray, symbols: np.ndarray, prizes: np.ndarray) -> np.ndarray:
        """Losing tickets that show the multiplier in their bonus box (decision 5)."""
        bonus = symbols[:, self.definition.fields[0].width :]
        shows = (bonus == self.multiplier_ids[variants][:, None]).any(axis=1)
        return shows & (prizes == 0)

    # -- the printed ticket (PaperGame) ------------------------------------------------------

    def variant_captions(self) -> tuple[str, ...]:
        return tuple(e.caption for e in self.effigies)

    def symbol_drawings(self) -> Mapping[str, Drawing]:
        from printpipe.games.chien_chat.symbols import DRAWINGS

        return DRAWINGS

    def coating_mark(self) -> Drawing:
        from printpipe.games.chien_chat.artwork import draw_paw

        return draw_paw

    def fronts(self, texts: Mapping[str, Any]) -> tuple[FrontArt, ...]:
        from printpipe.games.chien_chat.ticket import fronts

        return fronts(self, texts)

    def back(self, texts: Mapping[str, Any]) -> BackArt:
        from printpipe.games.chien_chat.ticket import back

        return back(self, texts)

    def symbol_roles(self) -> dict[str, list[str]]:
        from printpipe.games.chien_chat.ticket import symbol_roles

        return symbol_roles(self)

    def specimen_words(
        self, variant: int, symbols: Sequence[int], tier: int, teaser: bool
    ) -> SpecimenWords:
        from printpipe.games.chien_chat.ticket import specimen_words

        return specimen_words(self, variant, symbols, tier, teaser)

    # -- loading ---------------------------------------------------------------------------

    @staticmethod
    def _effigies(reader: DefinitionReader) -> tuple[Effigy, ...]:
        table = reader.table("effigies")
        symbols = reader.table("symbols")
        if not table:
            raise reader.error("effigies", "needs at least one effigy")
        effigies = []
        for code in table:
            at = f"effigies.{code}"
            winning = reader.text(f"{at}.winning_symbol")
            multiplier = reader.text(f"{at}.multiplier_symbol")
            for where, symbol in (("winning_symbol", winning), ("multiplier_symbol", multiplier)):
                if symbol not in symbols:
                    raise reader.error(f"{at}.{where}", f"{symbol!r} is not in [symbols]")
            paw_decoys = reader.code_list(f"{at}.paw_decoys", symbols)
            bonus_decoys = reader.code_list(f"{at}.bonus_decoys", symbols)
            if len(bonus_decoys) < 2:
                raise reader.error(f"{at}.bonus_decoys", "needs at least two symbols")
            if winning == multiplier:
                raise reader.error(f"{at}.multiplier_symbol", "is the winning symbol")
            for where, decoys in (("paw_decoys", paw_decoys), ("bonus_decoys", bonus_decoys)):
                for decoy in decoys:
                    for special in (winning, multiplier):
                        if _alike(decoy, special):
                            raise reader.error(
                                f"{at}.{where}", f"decoy {decoy!r} is too like {special!r}"
                            )
            shared = set(paw_decoys) & set(bonus_decoys)
            if shared:
                raise reader.error(
                    f"{at}.bonus_decoys", f"{sorted(shared)[0]!r} is a paw decoy too"
                )
            effigies.append(
                Effigy(
                    code=code,
                    caption=reader.text(f"{at}.caption"),
                    bonus_box=reader.text(f"{at}.bonus_box"),
                    winning_symbol=winning,
                    multiplier_symbol=multiplier,
                    paw_decoys=paw_decoys,
                    bonus_decoys=bonus_decoys,
                )
            )
        return tuple(effigies)

    def _index_tables(self) -> None:
        codes = self.definition.symbol_codes
        index = {c: i for i, c in enumerate(codes)}
        effigies = self.effigies
        self.winning_ids = np.array([index[e.winning_symbol] for e in effigies])
        self.multiplier_ids = np.array([index[e.multiplier_symbol] for e in effigies])
        self.paw_decoy_counts = np.array([len(e.paw_decoys) for e in effigies])
        self.bonus_decoy_counts = np.array([len(e.bonus_decoys) for e in effigies])
        self.paw_decoy_table = _padded([[index[c] for c in e.paw_decoys] for e in effigies])
        self.bonus_decoy_table = _padded([[index[c] for c in e.bonus_decoys] for e in effigies])
        self.paw_allowed = np.zeros((len(effigies), len(codes)), dtype=bool)
        self.bonus_allowed = np.zeros((len(effigies), len(codes)), dtype=bool)
        for v, e in enumerate(effigies):
            self.paw_allowed[v, [index[c] for c in (e.winning_symbol, *e.paw_decoys)]] = True
            self.bonus_allowed[v, [index[c] for c in (e.multiplier_symbol, *e.bonus_decoys)]] = True

    def _derive_ways(self, reader: DefinitionReader) -> dict[int, tuple[WayToWin, ...]]:
        """Each tier's ways to be won, found by asking the rules, never written down by hand."""
        paw_count = self.definition.fields[0].width
        found: dict[int, set[WayToWin]] = {}
        for v, e in enumerate(self.effigies):
            codes = self.definition.symbol_codes
            for count in range(paw_count + 1):
                for multiplied in (False, True):
                    paws = [e.winning_symbol] * count + [e.paw_decoys[0]] * (paw_count - count)
                    bonus = [
                        e.multiplier_symbol if multiplied else e.bonus_decoys[1],
                        e.bonus_decoys[0],
                    ]
                    row = np.array([[codes.index(c) for c in (*paws, *bonus)]])
                    prize = int(self.evaluate(np.array([v]), row).prize_eur[0])
                    if prize > 0:
                        found.setdefault(prize, set()).add(WayToWin(count, multiplied))
        ways: dict[int, tuple[WayToWin, ...]] = {LOSING_TIER: (WayToWin(0, False),)}
        for i, tier in enumerate(self.definition.prizes):
            if tier.amount_eur not in found:
                raise reader.error(
                    f"prizes[{i}].amount_eur",
                    f"{tier.amount_eur} EUR cannot be won under the rules",
                )
            ways[tier.tier] = tuple(
                sorted(found[tier.amount_eur], key=lambda w: (w.winning_symbols, w.multiplied))
            )
        most = max(len(w) for w in ways.values())
        tiers = len(ways)
        self.way_counts = np.array([len(ways[t]) for t in range(tiers)])
        self.way_winning = np.zeros((tiers, most), dtype=np.int64)
        self.way_multiplied = np.zeros((tiers, most), dtype=bool)
        for t in range(tiers):
            for j, way in enumerate(ways[t]):
                self.way_winning[t, j] = way.winning_symbols
                self.way_multiplied[t, j] = way.multiplied
        return ways


def _alike(decoy: str, special: str) -> bool:
    """Named like a winning or multiplier symbol: one name in the other, or the same start."""
    return decoy in special or special in decoy or decoy[:3] == special[:3]


def _padded(rows: list[list[int]]) -> np.ndarray:
    table = np.zeros((len(rows), max(len(r) for r in rows)), dtype=np.int64)
    for i, row in enumerate(rows):
        table[i, : len(row)] = row
    return table
