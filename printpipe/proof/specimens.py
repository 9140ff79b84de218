"""The specimen tickets of a proof pack: drawn by the game's own layout, checked by its rules.

A specimen is not hand-made: its symbols come from ``game.layout`` fed by a fixed *specimen
stream* (a ChaCha20 :class:`~printpipe.rng.KeyStream` keyed by SHA-256 of a public constant,
purpose ``PACK``, index 0 for the never-issued pack ``000000``), so every proof pack of a game
shows the same tickets and no secret is involved.  Each specimen is then evaluated by
``game.evaluate``; one that does not give its tier's amount stops the proof.

Per variant: one ticket of every prize tier (highest first), a plain loser, and a *teaser*
loser (the multiplier in the bonus box, decision 5), found by drawing losers from the same
stream until ``game.teasers`` says one shows the multiplier: the game's machinery, not a copy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from printpipe.errors import PrintpipeError
from printpipe.games.base import LOSING_TIER, Game
from printpipe.ids import SPECIMEN_PACK, TicketId
from printpipe.rng import KeyStream, Purpose, virns

SPECIMEN_KEY = hashlib.sha256(b"printpipe specimen stream v1").digest()
"""Public on purpose: specimens must be reproducible by anyone and reveal nothing."""
LOSER_BATCH = 64
MAX_DRAWS = 100


@dataclass(frozen=True, slots=True)
class Specimen:
    """One specimen ticket: what it is meant to show, its symbols, and its (specimen) ids."""

    number: int  # ticket number in pack 000000, also its order in the pack
    variant: int
    tier: int
    amount_eur: int
    teaser: bool
    symbols: tuple[int, ...]
    virn: int

    def ticket_id(self, game_number: int) -> TicketId:
        return TicketId(game_number, SPECIMEN_PACK, self.number)


def specimen_stream() -> KeyStream:
    """The fixed, documented stream every specimen is drawn from."""
    return KeyStream(SPECIMEN_KEY, Purpose.PACK, SPECIMEN_PACK)


def _pick_losers(game: Game, variant: int, stream: KeyStream) -> tuple[np.ndarray, np.ndarray]:
    """A plain loser and a teaser loser of ``variant``, the first of each the stream gives."""
    plain = teaser = None
    for _ in range(MAX_DRAWS):
        tiers = np.zeros(LOSER_BATCH, dtype=np.int64)
        variants = np.full(LOSER_BATCH, variant, dtype=np.int64)
        symbols = game.layout(tiers, variants, stream)
        shows = game.teasers(variants, symbols, np.zeros(LOSER_BATCH, dtype=np.int64))
        if teaser is None and shows.any():
            teaser = symbols[int(np.argmax(shows))]
        if plain is None and (~shows).any():
            plain = symbols[int(np.argmax(~shows))]
        if plain is not None and teaser is not None:
            return plain, teaser
    raise PrintpipeError(
        f"no teaser loser in {MAX_DRAWS * LOSER_BATCH} draws: is the game's teaser rate 0?"
    )


def make_specimens(game: Game) -> list[Specimen]:
    """Every specimen of the proof pack, in page order, each checked by the rules."""
    definition = game.definition
    stream = specimen_stream()
    prize_tiers = [p.tier for p in definition.prizes]
    rows: list[tuple[int, int, bool, np.ndarray]] = []
    for variant in range(len(definition.variants)):
        tiers = np.array(prize_tiers, dtype=np.int64)
        symbols = game.layout(tiers, np.full(len(tiers), variant, dtype=np.int64), stream)
        rows += [(variant, int(t), False, s) for t, s in zip(tiers, symbols, strict=True)]
        plain, teaser = _pick_losers(game, variant, stream)
        rows += [(variant, LOSING_TIER, False, plain), (variant, LOSING_TIER, True, teaser)]
    return _checked(game, rows)


def make_composition_specimens(game: Game, per_tier: int = 3, draws: int = 32) -> list[Specimen]:
    """Per prize tier, ``per_tier`` units of different compositions, then two losers.

    For a game whose lots come in several compositions (an online game's 10 EUR lot may be
    one chain, or two money symbols, ...): ``draws`` units of each tier are laid out by the
    game from the specimen stream and the first ones whose wins (``game.unit_wins``, read
    off the rules' own tables) differ are kept.  Every one is then checked by ``evaluate``.
    """
    definition = game.definition
    stream = specimen_stream()
    rows: list[tuple[int, bool, np.ndarray]] = []
    for prize in definition.prizes:
        tiers = np.full(draws, prize.tier, dtype=np.int64)
        drawn = game.layout(tiers, np.zeros(draws, dtype=np.int64), stream)
        seen: set[tuple[tuple[str, ...], ...]] = set()
        for row in drawn:
            _, words = game.unit_wins(row)  # type: ignore[attr-defined]
            key = tuple(tuple(sorted(w)) for w in words)
            if key not in seen:
                seen.add(key)
                rows.append((prize.tier, False, row))
            if len(seen) == per_tier:
                break
    plain, teaser = _pick_losers(game, 0, stream)
    rows += [(LOSING_TIER, False, plain), (LOSING_TIER, True, teaser)]
    return _checked(game, [(0, tier, shows_teaser, row) for tier, shows_teaser, row in rows])


def _checked(game: Game, rows: list[tuple[int, int, bool, np.ndarray]]) -> list[Specimen]:
    """Specimens of (variant, tier, teaser, symbols) rows, once the rules confirm each tier."""
    variants = np.array([r[0] for r in rows], dtype=np.int64)
    symbols = np.array([r[3] for r in rows], dtype=np.int64)
    prizes = game.evaluate(variants, symbols).prize_eur
    amounts = game.definition.tier_amounts
    specimen_virns = virns(SPECIMEN_KEY, np.arange(len(rows), dtype=np.uint64))
    specimens = []
    for number, ((variant, tier, teaser, row), prize) in enumerate(zip(rows, prizes, strict=True)):
        if int(prize) != int(amounts[tier]):
            raise PrintpipeError(
                f"specimen {number}: the rules give {int(prize)} EUR, its tier is "
                f"{int(amounts[tier])} EUR (layout and rules disagree)"
            )
        specimens.append(
            Specimen(
                number,
                variant,
                tier,
                int(amounts[tier]),
                teaser,
                tuple(int(s) for s in row),
                int(specimen_virns[number]),
            )
        )
    return specimens
