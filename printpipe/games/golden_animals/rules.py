"""Golden Animals, the online instant game: its rules, and layouts drawn for a given lot.

Regulation: articles 5.2 to 5.8 (a grid of 4 x 5 symbols; 4 identical animals linked
horizontally, vertically or diagonally pay the animal's amount; an ``ANIMALS`` symbol pays the
amount it carries; ``EXTRA`` opens an extra grid counted the same way; all wins add up into
one lot).  The decisions the regulation leaves open (``docs/game-golden-animals.md``) are
enforced by :meth:`GoldenAnimals.evaluate`, which answers ``INVALID_PRIZE`` for a unit that
breaks one, plus decision 6, ours: at most ``max_animals_symbols_per_grid`` (3) ``ANIMALS``
symbols in a grid, so that they can never look like a chain of 4.

A unit is stored as two fields of 20 symbol indices each, row by row: ``grid`` and
``extra_grid``.  A unit without ``EXTRA`` has an extra grid of 20 ``EMPTY`` marks (a symbol
code that is never shown), which the auditor's CSV writes as an empty field.

Linked groups are found with a table over the 2**20 subsets of the grid's cells (built once,
in about 0.1 s, by bitwise flood fill): for each subset, how many linked groups of exactly 4
it holds, whether it holds a larger one, and which of its cells lie in groups of 4 or more.
A grid is then 8 table lookups, one per animal's cells, so a block is audited in seconds.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np

from printpipe import french
from printpipe.errors import InvalidLayout, PrintpipeError
from printpipe.games.base import (
    CMYK,
    INVALID_PRIZE,
    LOSING_TIER,
    DefinitionReader,
    Evaluation,
    GameDefinition,
    SymbolField,
    UnitWords,
)
from printpipe.rng import KeyStream, Purpose

GRID = "grid"
EXTRA_GRID = "extra_grid"
EMPTY = "EMPTY"
"""The mark filling the extra grid of a unit without ``EXTRA``; never shown to a player."""
VARIANTS = ("STANDARD",)
"""One variant: an online unit has no effigy or other look that must not tell the lot."""
EVALUATE_CHUNK = 1 << 16
"""Units evaluated at once: bounds the audit's working memory whatever the batch it passes."""
MAX_REDRAWS = 1000
"""Rounds of chain placement or repair before a layout is declared impossible (a bug)."""

VIOLATIONS: tuple[str, ...] = (
    "legal",
    "the variant is unknown",
    "a symbol index outside the game's symbol codes",
    "the EMPTY mark in the first grid",
    "more than one EXTRA in the first grid (decision 2)",
    "EXTRA in the extra grid (decision 2)",
    "an extra grid without EXTRA in the first grid",
    "EXTRA in the first grid but the extra grid is not full",
    "a linked group of 5 or more identical animals (decision 1)",
    "more ANIMALS symbols in a grid than allowed (decision 6)",
)


@dataclass(frozen=True, slots=True, order=True)
class Win:
    """One win inside a grid: a chain of an animal, or one ``ANIMALS`` symbol."""

    amount_eur: int
    symbol: str
    is_chain: bool


@dataclass(frozen=True, slots=True)
class Composition:
    """How a lot is made up: the wins of the first grid, whether EXTRA opens, the extra wins."""

    grid: tuple[Win, ...]
    extra: bool
    extra_grid: tuple[Win, ...]
    weight: Fraction
    """Probability of this composition among those of its lot."""

    @property
    def amount_eur(self) -> int:
        return sum(w.amount_eur for w in (*self.grid, *self.extra_grid))

    def __str__(self) -> str:
        first = " + ".join(_win_text(w) for w in self.grid) or "nothing"
        if not self.extra:
            return first
        second = " + ".join(_win_text(w) for w in self.extra_grid) or "nothing"
        return f"{first} + EXTRA, extra grid: {second}"


@dataclass(frozen=True, slots=True)
class GroupTables:
    """For every subset of the grid's cells (a bit mask), its linked groups (8-neighbourhood)."""

    chains: np.ndarray
    """uint8: groups of exactly ``chain_length`` cells."""
    oversized: np.ndarray
    """bool: holds a group of more than ``chain_length`` cells."""
    crowded: np.ndarray
    """uint32: mask of the cells lying in groups of ``chain_length`` cells or more."""


class GoldenAnimals:
    """The Golden Animals game: a definition plus its two functions, ``evaluate`` and ``layout``."""

    violations = VIOLATIONS

    def __init__(self, path: Path) -> None:
        reader = DefinitionReader(path)
        self.rows = reader.integer("rules.rows", 1)
        self.columns = reader.integer("rules.columns", 1)
        self.cells = self.rows * self.columns
        if self.cells > 24:
            raise reader.error("rules.rows", "a grid has at most 24 cells (group tables)")
        self.chain_length = reader.integer("rules.chain_length", 2)
        self.paytable = self._paytable(reader)
        money_code = reader.text("animals_symbol.code")
        money_caption = reader.text("animals_symbol.caption")
        self.money_amounts = self._money_amounts(reader)
        self.money_symbol = money_code
        self.money_codes = {a: f"{money_code}:{a}" for a in self.money_amounts}
        derived = {
            code: f"{money_caption} {french.euros(a)}" for a, code in self.money_codes.items()
        }
        derived[EMPTY] = "(no extra grid)"
        fields = (SymbolField(GRID, self.cells), SymbolField(EXTRA_GRID, self.cells))
        self.definition: GameDefinition = reader.common(VARIANTS, fields, derived, EMPTY)
        self.extra_symbol = self._extra_symbol(reader)
        self.offer_price_cents = reader.money_cents("offer.price_eur")
        self.linked_game = reader.text("offer.linked_game")
        self.linked_price_cents = reader.money_cents("offer.linked_price_eur")
        if self.definition.price_cents + self.linked_price_cents != self.offer_price_cents:
            raise reader.error(
                "offer.price_eur",
                "must be game.price_eur + offer.linked_price_eur "
                f"({(self.definition.price_cents + self.linked_price_cents) / 100:.2f})",
            )
        self.max_chains = reader.integer("rules.max_chains_per_grid", 1)
        self.max_money = reader.integer("rules.max_animals_symbols_per_grid", 1)
        self.max_wins = reader.integer("rules.max_wins_per_unit", 1)
        self.extra_rate = Fraction(str(reader.fraction("rules.extra_rate_winning")))
        if self.max_chains * self.chain_length + self.max_money + 1 > self.cells:
            raise reader.error("rules.max_chains_per_grid", "the wins would not fit in a grid")
        self.groups = group_tables(self.rows, self.columns, self.chain_length)
        self._index_tables()
        self.compositions = self._compositions()
        self._composition_tables()
        self._check_compositions(reader)

    # -- the rules -------------------------------------------------------------------------

    def evaluate(self, variants: np.ndarray, symbols: np.ndarray) -> Evaluation:
        """The lot of each unit in EUR, by the regulation and decisions 1, 2 and 6 alone.

        ``symbols`` holds symbol indices (n, 20 + 20): the grid row by row, top-left first,
        then the extra grid the same way.
        """
        variants = np.asarray(variants)
        prize = np.empty(len(variants), dtype=np.int64)
        violation = np.empty(len(variants), dtype=np.int64)
        for start in range(0, len(variants), EVALUATE_CHUNK):
            rows = slice(start, start + EVALUATE_CHUNK)
            prize[rows], violation[rows] = self._evaluate_chunk(variants[rows], symbols[rows])
        return Evaluation(prize, violation)

    def _evaluate_chunk(
        self, variants: np.ndarray, symbols: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        symbols = np.asarray(symbols, dtype=np.int64)
        known_symbol = (symbols >= 0) & (symbols < len(self.definition.symbol_codes))
        symbols = np.where(known_symbol, symbols, self.empty_id)
        first, second = symbols[:, : self.cells], symbols[:, self.cells :]
        extras = (first == self.extra_id).sum(axis=1)
        opens_extra = extras == 1
        second_empty = second == self.empty_id
        chains_first, oversized_first = self._chains(first)
        chains_second, oversized_second = self._chains(second)
        broken = [
            (variants < 0) | (variants >= len(VARIANTS)),
            ~known_symbol.all(axis=1),
            (first == self.empty_id).any(axis=1),
            extras > 1,
            (second == self.extra_id).any(axis=1),
            ~opens_extra & ~second_empty.all(axis=1),
            opens_extra & second_empty.any(axis=1),
            oversized_first | oversized_second,
            (self.is_money[first].sum(axis=1) > self.max_money)
            | (self.is_money[second].sum(axis=1) > self.max_money),
        ]
        violation = np.zeros(len(symbols), dtype=np.int64)
        for code in range(len(broken), 0, -1):  # the first rule broken is the one named
            violation[broken[code - 1]] = code
        won = chains_first + self.money_value[first].sum(axis=1)
        won_extra = chains_second + self.money_value[second].sum(axis=1)
        prize = won + np.where(opens_extra, won_extra, 0)
        return np.where(violation == 0, prize, INVALID_PRIZE), violation

    def _chains(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per grid, what its chains pay in EUR, and whether it holds a group too big."""
        paid = np.zeros(len(grid), dtype=np.int64)
        oversized = np.zeros(len(grid), dtype=bool)
        for animal, amount in zip(self.animal_ids, self.animal_amounts, strict=True):
            mask = cell_masks(grid == animal)
            paid += self.groups.chains[mask].astype(np.int64) * amount
            oversized |= self.groups.oversized[mask]
        return paid, oversized

    def prize_eur(self, grid: Sequence[str], extra_grid: Sequence[str] = ()) -> int:
        """The lot of one unit given as symbol codes (no extra grid: empty); raises InvalidLayout.

        This is what a player's unit record is checked with after the fact (article 5.1).
        """
        extra_grid = extra_grid or [EMPTY] * self.cells
        if len(grid) != self.cells or len(extra_grid) != self.cells:
            raise InvalidLayout(
                f"invalid layout: expected grids of {self.cells} symbols, "
                f"got {len(grid)} and {len(extra_grid)}"
            )
        row = np.array([self.definition.symbol_row([*grid, *extra_grid])])
        result = self.evaluate(np.zeros(1, dtype=np.int64), row)
        if result.violation[0]:
            raise InvalidLayout(f"invalid layout: {VIOLATIONS[result.violation[0]]}")
        return int(result.prize_eur[0])

    def field_texts(self, symbols: np.ndarray) -> tuple[str, str]:
        """One unit's fields as the auditor's CSV writes them: codes row by row, spaced.

        The extra grid of a unit without EXTRA is the empty text.
        """
        codes = self.definition.symbol_codes
        first, second = symbols[: self.cells], symbols[self.cells :]
        extra = "" if (second == self.empty_id).all() else " ".join(codes[i] for i in second)
        return " ".join(codes[i] for i in first), extra

    def unit_wins(self, symbols: np.ndarray) -> tuple[np.ndarray, list[list[str]]]:
        """One unit's winning cells (bool per cell, both grids) and its wins per grid, in words.

        Read off the same group tables as ``evaluate``: what a proof or the game screen
        highlights and labels is what the rules pay, never a separate reckoning.  The extra
        grid's list is empty when the unit has no EXTRA.  One unit at a time, in plain Python
        (the game server answers every play with it: numpy's per-call cost would dominate).
        """
        cells = self.cells
        row = [int(s) for s in np.asarray(symbols).tolist()]
        winning = np.zeros(2 * cells, dtype=bool)
        words: list[list[str]] = [[], []]
        chain_words, money_words = self._win_words
        for g in range(2 if self.extra_id in row[:cells] else 1):
            grid = row[g * cells : (g + 1) * cells]
            masks: dict[int, int] = {}
            for i, s in enumerate(grid):
                masks[s] = masks.get(s, 0) | 1 << i
            for animal, _ in self._animal_amounts:
                mask = masks.get(animal, 0)
                chains = int(self.groups.chains[mask])
                if chains:
                    crowded = int(self.groups.crowded[mask])
                    for i in range(cells):
                        if crowded >> i & 1:
                            winning[g * cells + i] = True
                    words[g] += [chain_words[animal]] * chains
            for i, s in enumerate(grid):
                word = money_words[s]
                if word is not None:
                    winning[g * cells + i] = True
                    words[g].append(word)
        return winning, words

    @cached_property
    def _win_words(self) -> tuple[dict[int, str], list[str | None]]:
        """:meth:`unit_wins`'s words, made once: each animal's chain (by symbol index, the
        name shown on the grid and the paytable) and each symbol's money win (None: not money)."""
        codes = self.definition.symbol_codes
        captions = self.definition.captions
        chains = {
            animal: f"chaîne {captions[codes[animal]]} {french.euros(amount)}"
            for animal, amount in self._animal_amounts
        }
        money = [f"ANIMALS {french.euros(v)}" if v > 0 else None for v in self.money_value.tolist()]
        return chains, money

    # -- the units on screen (OnlineGame) ---------------------------------------------------

    def draw_pictogram(
        self, canvas: Any, code: str, x: float, y: float, size: float, font: str
    ) -> None:
        from printpipe.games.golden_animals.pictograms import draw_symbol

        draw_symbol(canvas, code, x, y, size, font, self.money_symbol, self.extra_symbol)

    def pictogram_tint(self, code: str) -> CMYK | None:
        from printpipe.games.golden_animals.pictograms import TINTS

        return TINTS.get(code)

    def unit_words(self) -> UnitWords:
        from printpipe.games.golden_animals.screen import unit_words

        return unit_words(self)

    def describe_wins(self, wins: list[list[str]]) -> str:
        from printpipe.games.golden_animals.screen import describe_wins

        return describe_wins(self, wins)

    def opens_second_grid(self, symbols: Sequence[int]) -> bool:
        return self.extra_id in list(symbols[: self.cells])

    def teasers(self, variants: np.ndarray, symbols: np.ndarray, prizes: np.ndarray) -> np.ndarray:
        """Losing units that show EXTRA, whose extra grid then wins nothing (decision 4)."""
        shows = (np.asarray(symbols[:, : self.cells]) == self.extra_id).any(axis=1)
        return shows & (prizes == 0)

    # -- layouts ---------------------------------------------------------------------------

    def layout(self, tiers: np.ndarray, variants: np.ndarray, stream: KeyStream) -> np.ndarray:
        """Symbols for units of the given tiers; they evaluate back to the tier's lot.

        Each unit draws a composition of its lot (weighted as ``self.compositions`` says),
        then each grid is built: the chains first, on random shapes that cannot touch a chain
        of the same animal, then the ANIMALS and EXTRA symbols on random free cells, then
        random animals everywhere else, redrawn where they form a linked group of 4 or more
        until none is left.  All draws come from ``stream``, in a fixed order.
        """
        n = len(tiers)
        tiers = np.asarray(tiers, dtype=np.int64)
        draw = stream.below(self.tier_weight_totals[tiers], n)
        choice = (draw[:, None] >= self.tier_cumulative_weights[tiers]).sum(axis=1)
        composition = self.tier_compositions[tiers, choice]
        first = self._draw_grid(
            self.composition_chains[composition, 0],
            self.composition_singles[composition, 0],
            stream,
        )
        second = np.full((n, self.cells), self.empty_id, dtype=np.int64)
        opens = np.flatnonzero(self.composition_extra[composition])
        second[opens] = self._draw_grid(
            self.composition_chains[composition[opens], 1],
            self.composition_singles[composition[opens], 1],
            stream,
        )
        return np.concatenate([first, second], axis=1).astype(np.uint8)

    def _draw_grid(self, chains: np.ndarray, singles: np.ndarray, stream: KeyStream) -> np.ndarray:
        """Grids holding exactly these chains (animal ids, -1 for none) and single symbols."""
        n = len(chains)
        grid = np.zeros((n, self.cells), dtype=np.int64)
        shapes = self._draw_shapes(chains, stream)
        present = chains >= 0
        taken = np.bitwise_or.reduce(np.where(present, self.shape_masks[shapes], 0), axis=1)
        for slot in range(chains.shape[1]):
            units = np.flatnonzero(present[:, slot])
            cells = self.shape_cells[shapes[units, slot]]
            grid[units[:, None], cells] = chains[units, slot][:, None]

        keys = stream.uint64((n, self.cells))
        keys = np.where(unpack_masks(taken, self.cells), np.uint64(2**64 - 1), keys)
        free_cells = np.argsort(keys, axis=1, kind="stable")[:, : singles.shape[1]]
        placed = singles >= 0
        rows = np.broadcast_to(np.arange(n)[:, None], placed.shape)
        grid[rows[placed], free_cells[placed]] = singles[placed]
        fixed = unpack_masks(taken, self.cells)
        fixed[rows[placed], free_cells[placed]] = True

        filler = self.animal_ids[stream.below(len(self.animal_ids), (n, self.cells))]
        grid = np.where(fixed, grid, filler)
        fixed_masks = cell_masks(fixed)
        units = np.arange(n)
        for _ in range(MAX_REDRAWS):
            crowded = self._crowded(grid[units])
            bad = crowded & ~fixed_masks[units]
            units, bad = units[bad != 0], bad[bad != 0]
            if not len(units):
                return grid
            unit, cell = np.nonzero(unpack_masks(bad, self.cells))
            redrawn = stream.below(len(self.animal_ids), len(unit))
            grid[units[unit], cell] = self.animal_ids[redrawn]
        raise PrintpipeError(f"no grid without a stray group of 4 after {MAX_REDRAWS} redraws")

    def _crowded(self, grid: np.ndarray) -> np.ndarray:
        """Per grid, the mask of its cells lying in linked groups of 4 or more of one animal."""
        masks = cell_masks(grid[None, :, :] == self.animal_ids[:, None, None])
        return np.bitwise_or.reduce(self.groups.crowded[masks], axis=0)

    def _draw_shapes(self, chains: np.ndarray, stream: KeyStream) -> np.ndarray:
        """A shape per chain, uniform among placements where chains do not overlap and
        chains of the same animal do not touch (they would merge into one group of 8).

        Each round redraws every slot of the units whose chains clash, in unit order, until
        none clashes.  Two chains clash often, so the last units take a hundred rounds or more,
        each on a handful of units: plain Python, where numpy's cost per call was most of the
        work (three times the time a block).
        """
        n, slots = chains.shape
        masks, halos = self._shape_lists
        count = len(masks)
        pairs = list(itertools.combinations(range(slots), 2))
        units = np.flatnonzero(chains[:, 0] >= 0)
        left = list(zip(units.tolist(), chains[units].tolist(), strict=True))
        last_drawn: dict[int, list[int]] = {}
        for _ in range(MAX_REDRAWS):
            words = stream.words(len(left) * slots)
            clashing = []
            for i, (unit, animals) in enumerate(left):
                drawn = [w % count for w in words[i * slots : (i + 1) * slots]]
                last_drawn[unit] = drawn
                for earlier, later in pairs:
                    if animals[later] < 0:
                        continue
                    keep_off = (halos if animals[earlier] == animals[later] else masks)[
                        drawn[earlier]
                    ]
                    if masks[drawn[later]] & keep_off:
                        clashing.append((unit, animals))
                        break
            left = clashing
            if not left:
                shapes = np.zeros((n, slots), dtype=np.int64)
                if last_drawn:
                    shapes[list(last_drawn)] = list(last_drawn.values())
                return shapes
        raise PrintpipeError(f"no room for the chains after {MAX_REDRAWS} draws")

    @cached_property
    def _shape_lists(self) -> tuple[list[int], list[int]]:
        """The shapes' masks and halos as Python lists, for :meth:`_draw_shapes`."""
        return self.shape_masks.tolist(), self.shape_halos.tolist()

    # -- loading ---------------------------------------------------------------------------

    @staticmethod
    def _paytable(reader: DefinitionReader) -> dict[str, int]:
        table = reader.table("paytable")
        symbols = reader.table("symbols")
        if not table:
            raise reader.error("paytable", "needs at least one animal")
        paytable = {}
        for animal, amount in table.items():
            if animal not in symbols:
                raise reader.error(f"paytable.{animal}", f"{animal!r} is not in [symbols]")
            paytable[animal] = reader.integer(f"paytable.{animal}", 1, amount)
        return paytable

    @staticmethod
    def _money_amounts(reader: DefinitionReader) -> tuple[int, ...]:
        values = reader.get("animals_symbol.amounts_eur")
        if not isinstance(values, list) or not values:
            raise reader.error("animals_symbol.amounts_eur", "expected a non-empty list")
        amounts = tuple(reader.integer("animals_symbol.amounts_eur", 1, value) for value in values)
        if len(set(amounts)) != len(amounts):
            raise reader.error("animals_symbol.amounts_eur", "an amount appears twice")
        return amounts

    def _extra_symbol(self, reader: DefinitionReader) -> str:
        extra = reader.text("rules.extra_symbol")
        symbols = reader.table("symbols")
        if extra not in symbols or extra in self.paytable:
            raise reader.error("rules.extra_symbol", f"{extra!r} must be in [symbols], no animal")
        for code in symbols:
            if code != extra and code not in self.paytable:
                raise reader.error(
                    f"symbols.{code}", "is neither an animal of [paytable] nor EXTRA"
                )
        return extra

    def _index_tables(self) -> None:
        codes = self.definition.symbol_codes
        self.animal_ids = np.array([codes.index(a) for a in self.paytable])
        self.animal_amounts = np.array(list(self.paytable.values()), dtype=np.int64)
        self._animal_amounts = [
            (int(a), int(v)) for a, v in zip(self.animal_ids, self.animal_amounts, strict=True)
        ]
        self.extra_id = codes.index(self.extra_symbol)
        self.empty_id = codes.index(EMPTY)
        self.money_value = np.zeros(len(codes), dtype=np.int64)
        for amount, code in self.money_codes.items():
            self.money_value[codes.index(code)] = amount
        self.is_money = self.money_value > 0
        shapes = chain_shapes(self.rows, self.columns, self.chain_length)
        self.shape_masks = np.array([m for m, _ in shapes], dtype=np.uint32)
        self.shape_halos = np.array([h for _, h in shapes], dtype=np.uint32)
        self.shape_cells = np.array(
            [[i for i in range(self.cells) if m >> i & 1] for m, _ in shapes], dtype=np.int64
        )

    def _compositions(self) -> dict[int, tuple[Composition, ...]]:
        """Each lot's compositions and their weights, derived from the paytable and the limits.

        A lot's sets of wins (at most ``max_wins_per_unit``, summing to the lot) are equally
        likely; a set gets EXTRA with probability ``extra_rate_winning`` where it may go either
        way, and then each way of sharing its wins between the two grids is equally likely.
        A losing unit shows EXTRA (a teaser) with probability ``teaser_rate``.
        """
        wins = [Win(amount, animal, True) for animal, amount in self.paytable.items()]
        wins += [Win(amount, code, False) for amount, code in self.money_codes.items()]
        teaser = Fraction(str(self.definition.block.teaser_rate))
        found: dict[int, tuple[Composition, ...]] = {
            LOSING_TIER: (
                Composition((), False, (), 1 - teaser),
                Composition((), True, (), teaser),
            )
        }
        for prize in self.definition.prizes:
            sets = [
                combo
                for count in range(1, self.max_wins + 1)
                for combo in itertools.combinations_with_replacement(wins, count)
                if sum(w.amount_eur for w in combo) == prize.amount_eur
            ]
            ways = [(self._fits(s), self._extra_splits(s)) for s in sets]
            ways = [(plain, splits) for plain, splits in ways if plain or splits]
            compositions = []
            for plain, splits in ways:
                share = Fraction(1, len(ways))
                extra_share = share * (self.extra_rate if plain and splits else int(not plain))
                if plain:
                    compositions.append(Composition(plain, False, (), share - extra_share))
                compositions += [
                    Composition(g1, True, g2, extra_share / len(splits)) for g1, g2 in splits
                ]
            found[prize.tier] = tuple(c for c in compositions if c.weight > 0)
        return found

    def _fits(self, wins: Sequence[Win]) -> tuple[Win, ...]:
        """``wins`` sorted if one grid can hold them (within the limits), else empty."""
        chains = sum(w.is_chain for w in wins)
        fits = chains <= self.max_chains and len(wins) - chains <= self.max_money
        return tuple(sorted(wins)) if fits else ()

    def _extra_splits(self, wins: Sequence[Win]) -> list[tuple[tuple[Win, ...], tuple[Win, ...]]]:
        """The distinct ways of sharing ``wins`` between a first grid and an extra grid."""
        splits = set()
        for sides in itertools.product((0, 1), repeat=len(wins)):
            first = [w for w, side in zip(wins, sides, strict=True) if side == 0]
            second = [w for w, side in zip(wins, sides, strict=True) if side == 1]
            if (self._fits(first) or not first) and (self._fits(second) or not second):
                splits.add((tuple(sorted(first)), tuple(sorted(second))))
        return sorted(splits)

    def _composition_tables(self) -> None:
        """The compositions as padded arrays, and per tier the cumulative integer weights."""
        flat = [c for tier in sorted(self.compositions) for c in self.compositions[tier]]
        codes = self.definition.symbol_codes
        self.composition_chains = np.full((len(flat), 2, self.max_chains), -1, dtype=np.int64)
        self.composition_singles = np.full((len(flat), 2, self.max_money + 1), -1, np.int64)
        self.composition_extra = np.array([c.extra for c in flat])
        for i, c in enumerate(flat):
            for g, wins in enumerate((c.grid, c.extra_grid)):
                chains = [codes.index(w.symbol) for w in wins if w.is_chain]
                singles = [codes.index(w.symbol) for w in wins if not w.is_chain]
                if g == 0 and c.extra:
                    singles.append(self.extra_id)
                self.composition_chains[i, g, : len(chains)] = chains
                self.composition_singles[i, g, : len(singles)] = singles
        tiers = len(self.compositions)
        most = max(len(c) for c in self.compositions.values())
        self.tier_compositions = np.zeros((tiers, most), dtype=np.int64)
        self.tier_cumulative_weights = np.full((tiers, most), np.iinfo(np.int64).max, np.int64)
        self.tier_weight_totals = np.zeros(tiers, dtype=np.int64)
        start = 0
        for tier in range(tiers):
            options = self.compositions[tier]
            scale = math.lcm(*(c.weight.denominator for c in options))
            weights = [int(c.weight * scale) for c in options]
            self.tier_compositions[tier, : len(options)] = np.arange(start, start + len(options))
            self.tier_cumulative_weights[tier, : len(options)] = np.cumsum(weights)
            self.tier_weight_totals[tier] = sum(weights)
            start += len(options)

    def _check_compositions(self, reader: DefinitionReader) -> None:
        """Every lot has enough compositions, and each one, laid out, evaluates back to it."""
        wanted = reader.integer("rules.min_compositions", 1)
        for i, prize in enumerate(self.definition.prizes):
            found = len(self.compositions[prize.tier])
            if found < wanted:
                raise reader.error(
                    f"prizes[{i}].amount_eur",
                    f"{prize.amount_eur} EUR has {found} compositions under the paytable and "
                    f"limits, rules.min_compositions asks for {wanted}",
                )
        flat = [c for tier in sorted(self.compositions) for c in self.compositions[tier]]
        stream = KeyStream(bytes(32), Purpose.PACK, 0)  # a fixed key: no secret is involved
        first = self._draw_grid(
            self.composition_chains[:, 0], self.composition_singles[:, 0], stream
        )
        second = self._draw_grid(
            self.composition_chains[:, 1], self.composition_singles[:, 1], stream
        )
        second[~self.composition_extra] = self.empty_id
        result = self.evaluate(np.zeros(len(flat), np.int64), np.concatenate([first, second], 1))
        for c, prize, violation in zip(flat, result.prize_eur, result.violation, strict=True):
            if violation or prize != c.amount_eur:
                raise reader.error("paytable", f"composition {c} does not evaluate to its lot")


@cache
def chain_shapes(rows: int, columns: int, length: int) -> tuple[tuple[int, int], ...]:
    """Every linked set of ``length`` cells, as (its mask, the mask of it and its neighbours)."""
    tables = group_tables(rows, columns, length)
    masks = np.array(
        [
            sum(1 << c for c in cells)
            for cells in itertools.combinations(range(rows * columns), length)
        ],
        dtype=np.uint32,
    )
    masks = masks[tables.chains[masks] == 1]
    halos = _dilate(masks, rows, columns)
    shapes = [(int(m), int(h)) for m, h in zip(masks, halos, strict=True)]
    return tuple(shapes)


@cache
def group_tables(rows: int, columns: int, length: int) -> GroupTables:
    """Linked groups of every subset of a ``rows`` x ``columns`` grid, by bitwise flood fill.

    Each subset's groups are peeled off one by one: grow the group of its lowest cell until
    it stops growing, record its size, remove it, repeat; vectorised over all subsets.
    """
    size = 1 << (rows * columns)
    chains = np.zeros(size, dtype=np.uint8)
    oversized = np.zeros(size, dtype=bool)
    crowded = np.zeros(size, dtype=np.uint32)
    subsets = np.arange(size, dtype=np.int64)
    remaining = subsets.astype(np.uint32)
    while len(subsets):
        group = remaining & (~remaining + np.uint32(1))  # the lowest cell left
        growing = np.arange(len(subsets))
        while len(growing):
            grown = _dilate(group[growing], rows, columns) & remaining[growing]
            still = grown != group[growing]
            group[growing] = grown
            growing = growing[still]
        cells = np.bitwise_count(group)
        chains[subsets] += cells == length
        oversized[subsets] |= cells > length
        crowded[subsets] |= np.where(cells >= length, group, np.uint32(0))
        remaining ^= group
        left = remaining != 0
        subsets, remaining = subsets[left], remaining[left]
    return GroupTables(chains, oversized, crowded)


def _dilate(masks: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """Each mask with all its cells' 8 neighbours added (cells numbered row by row)."""
    grown = masks.copy()
    for dr, dc in itertools.product((-1, 0, 1), repeat=2):
        if dr == dc == 0:
            continue
        has_neighbour = sum(
            1 << (r * columns + c)
            for r in range(rows)
            for c in range(columns)
            if 0 <= r + dr < rows and 0 <= c + dc < columns
        )
        moved = masks & np.uint32(has_neighbour)
        step = dr * columns + dc
        grown |= moved << np.uint32(step) if step > 0 else moved >> np.uint32(-step)
    return grown


def cell_masks(cells: np.ndarray) -> np.ndarray:
    """Bit masks (uint32) of boolean rows of up to 32 cells: bit ``i`` is cell ``i``.

    The rows are the last axis: a ``(..., cells)`` array gives ``(...)`` masks.
    """
    packed = np.packbits(cells, axis=-1, bitorder="little")
    words = np.zeros((*packed.shape[:-1], 4), dtype=np.uint8)
    words[..., : packed.shape[-1]] = packed
    return words.view("<u4")[..., 0].astype(np.uint32)


def unpack_masks(masks: np.ndarray, cells: int) -> np.ndarray:
    """The boolean rows of bit masks: the inverse of :func:`cell_masks`."""
    return (masks[:, None] >> np.arange(cells, dtype=np.uint32)) & 1 == 1


def _win_text(win: Win) -> str:
    return f"chain {win.symbol} {win.amount_eur}" if win.is_chain else win.symbol
