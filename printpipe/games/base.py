"""What every game shares: its definition as data, and the protocols the pipeline calls.

A game is a TOML definition in ``templates/<game-id>/game.toml`` plus a plug-in in
``printpipe/games/`` with two functions over numpy arrays of symbol indices:

- ``evaluate(variants, symbols)``: the rules of the game, the only place they live;
- ``layout(tiers, variants, stream)``: the inverse, symbols for tickets of given tiers.

Everything downstream (block store, audit, export, manifest, validation) sees only the
:class:`Game` protocol.  What a game *shows* is behind one of two protocols, chosen by its
definition's ``[output] kind`` in one place (:func:`output_of`):

- :class:`PaperGame` (``press``): a printed scratch ticket.  The renderer and the proofs
  ask it for its symbol drawings, the front of each variant (artwork, texts, paytable
  rows), the decoration printed over the coating, and the words of its specimens;
- :class:`OnlineGame` (``feed``): units dealt by a game server.  The proofs ask it for its
  pictograms and the words of its units.

No module outside ``printpipe/games/`` and ``templates/`` names a game's symbols or variants,
or reads a definition's raw TOML: they ask these protocols.
"""

from __future__ import annotations

import hashlib
import tomllib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal, Protocol, TypeGuard

import numpy as np

from printpipe.errors import InvalidLayout, PrintpipeError
from printpipe.rng import KeyStream

LOSING_TIER = 0
INVALID_PRIZE = -1
"""What ``evaluate`` answers for a layout the rules forbid."""


@dataclass(frozen=True, slots=True)
class PrizeTier:
    """One line of the regulation's prize table; tier 0 is the losing "tier"."""

    tier: int
    amount_eur: int
    lots: int


@dataclass(frozen=True, slots=True)
class BlockRules:
    """How a block is cut and spread: pools, packs, and the limits on where prizes may fall."""

    size: int
    pools: int
    pack_size: int
    max_losing_run: int
    high_tier_min_eur: int
    distinct_pools_min_eur: int
    teaser_rate: float

    @property
    def packs(self) -> int:
        return self.size // self.pack_size

    @property
    def pool_size(self) -> int:
        return self.size // self.pools

    @property
    def packs_per_pool(self) -> int:
        return self.pool_size // self.pack_size


@dataclass(frozen=True, slots=True)
class SymbolField:
    """A named run of symbol columns in the block store, e.g. the 9 paws."""

    name: str
    width: int


OUTPUT_KINDS = ("press", "feed")
"""What an export run of a game writes: press PDFs of tickets, or the unit feed of a game server."""
PLACE_COLUMNS = ("serial", "game", "block", "pool", "pack", "ticket", "unit")
"""Record columns that say where a ticket sits; ``unit`` is its 1-based place in the block."""
VARIANT_COLUMN = "effigy"
"""The record column of the ticket's variant (the spec's name for chien-chat's effigy)."""
DEFAULT_RECORD_COLUMNS = ("serial", "game", "block", "pool", "pack", "ticket", VARIANT_COLUMN)
"""Place columns of a game whose definition names none (then its fields, prize_eur, virn)."""


@dataclass(frozen=True, slots=True)
class RecordLayout:
    """The columns of a game's records: the manifest's plaintext, which is the auditor's CSV.

    From ``[records] columns`` in the game definition (default: the paper ticket's
    ``serial,game,block,pool,pack,ticket,effigy,<fields>,prize_eur,virn``).  A symbol field
    holding only ``blank_symbol`` (a mark the game names, e.g. "no extra grid") is written as
    the empty text.
    """

    columns: tuple[str, ...]
    blank_symbol: str | None = None

    @property
    def has_virn(self) -> bool:
        return "virn" in self.columns


@dataclass(frozen=True)
class GameDefinition:
    """The data of a game, checked on load; shared by every game."""

    id: str
    title: str
    number: int
    price_cents: int
    block: BlockRules
    prizes: tuple[PrizeTier, ...]
    symbol_codes: tuple[str, ...]
    captions: dict[str, str]
    variants: tuple[str, ...]
    """Ticket variants that must not tell the prize (the dog/cat effigies); at least one."""
    fields: tuple[SymbolField, ...]
    source: Path
    source_sha256: str
    raw: dict[str, Any] = field(repr=False)
    records: RecordLayout = RecordLayout(())
    """The record columns (manifest plaintext, auditor's CSV)."""
    output: str = "press"
    """What an export writes (``[output] kind``): ``press`` PDFs, or the unit ``feed``."""
    regulation_totals: tuple[int, int] = (0, 0)
    """``[totals]``: the lots and EUR the regulation says a block's prize table adds up to."""

    @property
    def tier_amounts(self) -> np.ndarray:
        """Amount in EUR of each tier index, tier 0 (losing) included."""
        return np.array([0, *(p.amount_eur for p in self.prizes)], dtype=np.int64)

    @property
    def tier_lots(self) -> np.ndarray:
        """Lots per block of each tier index; tier 0 holds the losing tickets."""
        winners = sum(p.lots for p in self.prizes)
        return np.array([self.block.size - winners, *(p.lots for p in self.prizes)], np.int64)

    @property
    def symbol_width(self) -> int:
        return sum(f.width for f in self.fields)

    def symbol_index(self, code: str) -> int:
        try:
            return self.symbol_codes.index(code)
        except ValueError:
            raise PrintpipeError(f"unknown symbol code {code!r} for game {self.id}") from None

    def symbol_row(self, codes: Sequence[str]) -> list[int]:
        """The symbol indices of a ticket written as codes; an unknown code is an invalid layout."""
        index = {code: i for i, code in enumerate(self.symbol_codes)}
        unknown = [code for code in codes if code not in index]
        if unknown:
            raise InvalidLayout(f"invalid layout: unknown symbol {unknown[0]!r}")
        return [index[code] for code in codes]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What the rules say of tickets: the prize of each (or ``INVALID_PRIZE``) and why not."""

    prize_eur: np.ndarray
    violation: np.ndarray
    """0 where the layout is legal, else the index of the first rule it breaks."""


CMYK = tuple[float, float, float, float]
"""A process colour: cyan, magenta, yellow, black, each 0 to 1."""
Drawing = Callable[[Any], None]
"""Draws on a reportlab canvas in a 100 x 100 unit box, origin bottom-left; the caller places
and scales it.  Process CMYK only: it may end up inside a Form XObject."""
BoxDrawing = Callable[[Any, float, float, float], None]
"""Draws a play area's frame on a canvas: ``(canvas, width, height, roof)`` in points, the
scratch zone below its top ``roof`` points."""
Output = Literal["press", "feed"]


@dataclass(frozen=True, slots=True)
class FrontArt:
    """The front of one variant of a paper ticket, in the game's own words and drawings.

    The renderer lays it out in the template's zones; it never knows what it depicts.
    """

    name: str
    """A short ASCII name for the variant's forms, e.g. its code."""
    background: CMYK
    accent: CMYK
    """Title and paytable heading colour."""
    emblem: Drawing
    """The picture of the artwork zone (e.g. the variant's animal)."""
    bonus_box: BoxDrawing
    """The frame of the second play area, around its scratch zone."""
    bonus_label: str
    """Printed on the bonus box's roof, e.g. "BONUS" and the box's name."""
    howto: str
    """How to play, from the ticket texts, filled in with this variant's words."""
    paytable: tuple[tuple[str, str], ...]
    """The front's table of gains: (what is found, what it pays), top to bottom."""
    bonus_label_room: float = 1.0
    """The share of the bonus box's width its roof leaves the label (a pointed roof narrows
    upwards): the label's type shrinks until it fits."""
    motif: Drawing | None = None
    """A small picture scattered over the background (e.g. paw prints), or none."""
    motif_colour: CMYK = (0, 0, 0, 0.1)
    """The motif's colour: a shade of the background."""


@dataclass(frozen=True, slots=True)
class BackArt:
    """The back of a paper ticket (one for every variant), in the game's colours and words."""

    background: CMYK
    motif: Drawing | None
    """A small picture scattered over the background, or none."""
    motif_colour: CMYK
    band: CMYK
    """The colour of the band that carries the game's logo."""
    emblems: tuple[Drawing, ...]
    """The pictures on either side of the title in the band (e.g. each variant's animal)."""
    rules_title: str
    rules: tuple[str, ...]
    """How to play, long form, then the legal lines: paragraphs, from the ticket texts with
    the figures of the rules."""


@dataclass(frozen=True, slots=True)
class SpecimenWords:
    """What a proof prints beside one specimen (French, for the lottery's approver)."""

    label: str
    """The heading: variant, tier and amount."""
    shows: str
    """What the ticket shows and why it wins (or not)."""
    symbols: str
    """The symbols of each play area, in reading order."""


class Game(Protocol):
    """The interface the pipeline uses; one implementation per plug-in in ``printpipe/games``."""

    definition: GameDefinition
    violations: tuple[str, ...]
    """Human explanations of ``Evaluation.violation`` codes, index 0 being "legal"."""

    def evaluate(self, variants: np.ndarray, symbols: np.ndarray) -> Evaluation: ...

    def layout(self, tiers: np.ndarray, variants: np.ndarray, stream: KeyStream) -> np.ndarray: ...

    def teasers(self, variants: np.ndarray, symbols: np.ndarray, prizes: np.ndarray) -> np.ndarray:
        """Which losers show the game's teaser (decision 5 of each game; the audit's rate)."""
        ...


class PaperGame(Game, Protocol):
    """A game printed on scratch tickets (``[output] kind = "press"``).

    The renderer (``render/ticket.py``) and the proofs draw its tickets through this protocol
    only; ``texts`` are the ticket's texts (``templates/<game>/texts.toml``).
    """

    def variant_captions(self) -> tuple[str, ...]:
        """The printed name of each variant, in variant order (e.g. the effigies)."""
        ...

    def symbol_drawings(self) -> Mapping[str, Drawing]:
        """Every symbol code -> its drawing (black on white: variable data prints in K)."""
        ...

    def coating_mark(self) -> Drawing:
        """The picture printed over the scratch-off coating of a play area (e.g. a paw print)."""
        ...

    def fronts(self, texts: Mapping[str, Any]) -> tuple[FrontArt, ...]:
        """The front of each variant, in variant order."""
        ...

    def back(self, texts: Mapping[str, Any]) -> BackArt:
        """The back, shared by every variant."""
        ...

    def symbol_roles(self) -> dict[str, list[str]]:
        """Symbol code -> what it does on each variant's ticket (for the symbol sheet)."""
        ...

    def specimen_words(
        self, variant: int, symbols: Sequence[int], tier: int, teaser: bool
    ) -> SpecimenWords:
        """The words a proof prints beside a specimen ticket."""
        ...


class OnlineGame(Game, Protocol):
    """A game whose units a game server deals (``[output] kind = "feed"``): the proofs draw
    its units as the screen shows them, through this protocol only."""

    rows: int
    columns: int
    cells: int
    offer_price_cents: int
    """What one play costs the player (the offer's price, a linked game's share included)."""
    linked_game: str
    """The game every play includes a participation in (the definition's ``[offer]``)."""
    linked_price_cents: int
    """That participation's share of :attr:`offer_price_cents`."""

    def unit_wins(self, symbols: np.ndarray) -> tuple[np.ndarray, list[list[str]]]:
        """One unit's winning cells (both grids) and its wins per grid, in words."""
        ...

    def draw_pictogram(
        self, canvas: Any, code: str, x: float, y: float, size: float, font: str
    ) -> None:
        """The pictogram of ``code`` in the square (x, y, size) of ``canvas``."""
        ...

    def pictogram_tint(self, code: str) -> CMYK | None:
        """The background tint of a cell showing ``code`` (None: the grid's own)."""
        ...

    def unit_words(self) -> UnitWords:
        """The fixed words of the proof pages of this game's units."""
        ...

    def describe_wins(self, wins: list[list[str]]) -> str:
        """A unit's wins per grid (as ``unit_wins`` gives them) in one line."""
        ...

    def opens_second_grid(self, symbols: Sequence[int]) -> bool:
        """Whether a unit (symbol indices, both grids) shows its second grid."""
        ...


def stake_split(game: OnlineGame) -> tuple[tuple[str, int], ...]:
    """How a play's stake divides between the games it buys, in cents: the game's own price
    (named by its id), then its linked game's participation (named as the definition's
    ``[offer] linked_game``); the shares add up to ``offer_price_cents``."""
    own = game.offer_price_cents - game.linked_price_cents
    return ((game.definition.id, own), (game.linked_game, game.linked_price_cents))


@dataclass(frozen=True, slots=True)
class UnitWords:
    """What the proofs of an online game say, in the game's own words (French)."""

    cover_subtitle: str
    cover_checks: tuple[str, ...]
    cover_params: tuple[tuple[str, str], ...]
    rules: str
    """One paragraph: how a unit wins."""
    paytable: tuple[tuple[str, str], ...]
    """Each shown symbol's code and what it does."""
    loser: str
    teaser_loser: str
    teaser_note: str
    """Added to a teaser unit's composition."""
    second_grid_title: str
    second_grid_opened: str
    """What the player's page says when a unit opens its second grid."""
    no_second_grid: str
    """Written in place of the second grid when the unit has none."""


def output_of(game: Game) -> Output:
    """What an export run and a proof of ``game`` produce: the one place that decides."""
    return "feed" if game.definition.output == "feed" else "press"


def is_paper(game: Game) -> TypeGuard[PaperGame]:
    """Whether ``game`` is printed on tickets (press files), so it is a :class:`PaperGame`."""
    return output_of(game) == "press"


def is_online(game: Game) -> TypeGuard[OnlineGame]:
    """Whether ``game`` is dealt by a game server (unit feed), so it is an :class:`OnlineGame`."""
    return output_of(game) == "feed"


def symbol_code(caption: str) -> str:
    """A caption's code (decision 7): upper case, accents and ligatures removed."""
    expanded = caption.replace("Œ", "OE").replace("œ", "oe").replace("Æ", "AE").replace("æ", "ae")
    decomposed = unicodedata.normalize("NFKD", expanded)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).upper()


class DefinitionReader:
    """Reads a game's TOML and turns every problem into one line naming file and field."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data_bytes = path.read_bytes()
        except OSError as exc:
            raise PrintpipeError(f"cannot read game definition {path}: {exc.strerror}") from None
        try:
            self.data = tomllib.loads(self.data_bytes.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise PrintpipeError(f"game definition {path} is not valid TOML: {exc}") from None

    def error(self, where: str, problem: str) -> PrintpipeError:
        return PrintpipeError(f"game definition {self.path}: field {where}: {problem}")

    def get(self, where: str) -> Any:
        node: Any = self.data
        for part in where.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.error(where, "missing")
            node = node[part]
        return node

    def table(self, where: str) -> dict[str, Any]:
        value = self.get(where)
        if not isinstance(value, dict):
            raise self.error(where, "expected a table")
        return value

    def integer(self, where: str, minimum: int = 0, value: Any = None) -> int:
        value = self.get(where) if value is None else value
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(where, f"expected a whole number, got {value!r}")
        if value < minimum:
            raise self.error(where, f"must be at least {minimum}, got {value}")
        return value

    def text(self, where: str, value: Any = None) -> str:
        value = self.get(where) if value is None else value
        if not isinstance(value, str) or not value.strip():
            raise self.error(where, f"expected a non-empty text, got {value!r}")
        return value

    def fraction(self, where: str) -> float:
        value = self.get(where)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise self.error(where, f"expected a number between 0 and 1, got {value!r}")
        return float(value)

    def money_cents(self, where: str) -> int:
        value = self.get(where)
        try:
            cents = Decimal(str(value)) * 100
        except InvalidOperation:
            raise self.error(where, f"expected an amount in EUR, got {value!r}") from None
        if isinstance(value, bool) or cents <= 0 or cents != cents.to_integral_value():
            raise self.error(where, f"expected a positive amount in whole cents, got {value!r}")
        return int(cents)

    def code_list(self, where: str, known: dict[str, str]) -> tuple[str, ...]:
        value = self.get(where)
        if not isinstance(value, list) or not value:
            raise self.error(where, "expected a non-empty list of symbol codes")
        for code in value:
            if code not in known:
                raise self.error(where, f"{code!r} is not in [symbols]")
        if len(set(value)) != len(value):
            raise self.error(where, "lists a symbol twice")
        return tuple(value)

    def common(
        self,
        variants: tuple[str, ...],
        fields: tuple[SymbolField, ...],
        derived_symbols: dict[str, str] | None = None,
        blank_symbol: str | None = None,
    ) -> GameDefinition:
        """The parts every game has: identity, block rules, prize table (checked), symbols.

        ``derived_symbols`` (code -> caption) are symbols the game names itself, after those
        of ``[symbols]``: e.g. money symbols ``ANIMALS:2``, whose code cannot be a caption's.
        """
        number = self.integer("game.number")
        if number >= 10_000:
            raise self.error("game.number", f"must have at most 4 digits, got {number}")
        block = BlockRules(
            size=self.integer("block.size", 1),
            pools=self.integer("block.pools", 1),
            pack_size=self.integer("block.pack_size", 1),
            max_losing_run=self.integer("block.max_losing_run", 1),
            high_tier_min_eur=self.integer("block.high_tier_min_eur", 1),
            distinct_pools_min_eur=self.integer("block.distinct_pools_min_eur", 1),
            teaser_rate=self.fraction("block.teaser_rate"),
        )
        if block.pack_size > 1000:
            raise self.error("block.pack_size", "a ticket number has 3 digits: at most 1000")
        if block.size % (block.pools * block.pack_size):
            raise self.error("block.size", "must be a whole number of pools of whole packs")
        prizes = self._prizes()
        symbols = self.table("symbols")
        captions: dict[str, str] = {}
        for code, caption in symbols.items():
            caption = self.text(f"symbols.{code}", caption)
            if symbol_code(caption) != code:
                raise self.error(
                    f"symbols.{code}",
                    f"code must be its caption {caption!r} "
                    f"in upper case without accents ({symbol_code(caption)!r})",
                )
            captions[code] = caption
        for code, caption in (derived_symbols or {}).items():
            if code in captions:
                raise self.error(f"symbols.{code}", "is a code the game names itself")
            captions[code] = caption
        return GameDefinition(
            id=self.text("game.id"),
            title=self.text("game.title"),
            number=number,
            price_cents=self.money_cents("game.price_eur"),
            block=block,
            prizes=prizes,
            symbol_codes=tuple(captions),
            captions=captions,
            variants=variants,
            fields=fields,
            source=self.path,
            source_sha256=hashlib.sha256(self.data_bytes).hexdigest(),
            raw=self.data,
            records=self._records(variants, fields, blank_symbol),
            output=self._output(),
            regulation_totals=(
                self.integer("totals.lots", 1),
                self.integer("totals.amount_eur", 1),
            ),
        )

    def _output(self) -> str:
        """``[output] kind``: press PDFs unless the game says it feeds a game server."""
        if "output" not in self.data:
            return "press"
        kind = self.text("output.kind")
        if kind not in OUTPUT_KINDS:
            raise self.error(
                "output.kind", f"expected one of {', '.join(OUTPUT_KINDS)}, got {kind!r}"
            )
        return kind

    def _records(
        self, variants: tuple[str, ...], fields: tuple[SymbolField, ...], blank: str | None
    ) -> RecordLayout:
        """``[records] columns``, checked: known names, each once, every field, the prize."""
        names = [f.name for f in fields]
        if "records" not in self.data:
            return RecordLayout((*DEFAULT_RECORD_COLUMNS, *names, "prize_eur", "virn"), blank)
        columns = self.get("records.columns")
        known = (*PLACE_COLUMNS, VARIANT_COLUMN, *names, "prize_eur", "virn")
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise self.error("records.columns", "expected a list of column names")
        for column in columns:
            if column not in known:
                raise self.error(
                    "records.columns", f"unknown column {column!r} (known: {', '.join(known)})"
                )
        if len(set(columns)) != len(columns):
            raise self.error("records.columns", "names a column twice")
        for needed in ("serial", *names, "prize_eur"):
            if needed not in columns:
                raise self.error("records.columns", f"must hold {needed!r}")
        if len(variants) > 1 and VARIANT_COLUMN not in columns:
            raise self.error(
                "records.columns", f"the game has variants: must hold {VARIANT_COLUMN!r}"
            )
        return RecordLayout(tuple(columns), blank)

    def _prizes(self) -> tuple[PrizeTier, ...]:
        rows = self.get("prizes")
        if not isinstance(rows, list) or not rows:
            raise self.error("prizes", "expected a non-empty list of [[prizes]] tables")
        prizes = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise self.error(f"prizes[{i}]", "expected a table")
            prizes.append(
                PrizeTier(
                    tier=i + 1,
                    amount_eur=self.integer(f"prizes[{i}].amount_eur", 1, row.get("amount_eur")),
                    lots=self.integer(f"prizes[{i}].lots", 1, row.get("lots")),
                )
            )
            if row.get("amount_eur") is None or row.get("lots") is None:
                raise self.error(f"prizes[{i}]", "needs both lots and amount_eur")
        amounts = [p.amount_eur for p in prizes]
        if len(set(amounts)) != len(amounts):
            raise self.error("prizes", "an amount appears twice")
        lots = sum(p.lots for p in prizes)
        total = sum(p.lots * p.amount_eur for p in prizes)
        want_lots = self.integer("totals.lots", 1)
        want_total = self.integer("totals.amount_eur", 1)
        if lots != want_lots:
            raise self.error(
                "prizes", f"lots add up to {lots:,}, the regulation says {want_lots:,}"
            )
        if total != want_total:
            raise self.error(
                "prizes", f"amounts add up to {total:,} EUR, the regulation says {want_total:,} EUR"
            )
        if lots > self.integer("block.size", 1):
            raise self.error("prizes", "more lots than tickets in a block")
        return tuple(prizes)
