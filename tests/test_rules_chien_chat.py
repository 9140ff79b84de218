"""The dog/cat rules: regulation articles 4.2-4.3 and the spec's decisions 1-4."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from printpipe.errors import InvalidLayout
from printpipe.games.base import INVALID_PRIZE
from printpipe.rng import KeyStream, Purpose

# Regulation 4.2.2 and 4.3.2, restated independently of the game definition as the oracle.
REGULATION_PRIZE = {0: 0, 1: 2, 2: 4, 3: 10, 4: 200, 5: 5000}


def effigy_of(game, code):
    return next(e for e in game.effigies if e.code == code)


effigy_codes = st.sampled_from(["CHIEN", "CHAT"])


@st.composite
def legal_tickets(draw, game):
    effigy = effigy_of(game, draw(effigy_codes))
    winning = draw(st.integers(0, 5))
    paws = [effigy.winning_symbol] * winning + draw(
        st.lists(st.sampled_from(effigy.paw_decoys), min_size=9 - winning, max_size=9 - winning)
    )
    paws = draw(st.permutations(paws))
    multiplied = draw(st.booleans())
    decoys = draw(st.lists(st.sampled_from(effigy.bonus_decoys), min_size=2, max_size=2))
    bonus = [effigy.multiplier_symbol, decoys[0]] if multiplied else decoys
    bonus = draw(st.permutations(bonus))
    return effigy.code, list(paws), list(bonus), winning, multiplied


@given(data=st.data())
def test_legal_layouts_pay_what_the_regulation_says(game, data):
    effigy, paws, bonus, winning, multiplied = data.draw(legal_tickets(game))
    expected = REGULATION_PRIZE[winning] * (3 if multiplied else 1)
    assert game.prize_eur(effigy, paws, bonus) == expected


def test_examples_from_the_regulation(game):
    dog_paws = ["OS", "OS", "COLLIER", "ARBRE", "OS", "FLEUR", "SOLEIL", "NUAGE", "CHAPEAU"]
    assert game.prize_eur("CHIEN", dog_paws, ["ETOILE", "COEUR"]) == 10
    assert game.prize_eur("CHIEN", dog_paws, ["GAMELLE", "COEUR"]) == 30
    cat_paws = ["SOURIS"] * 5 + ["POISSON", "OISEAU", "PLUME", "LUNE"]
    assert game.prize_eur("CHAT", cat_paws, ["TREFLE", "PELOTE"]) == 15_000
    # The bonus box wins only when play area 1 won something (4.3.2).
    assert game.prize_eur("CHAT", ["POISSON"] * 9, ["PELOTE", "ETOILE"]) == 0


@given(tier=st.integers(0, 10), stream_index=st.integers(0, 10**6), size=st.integers(1, 40))
def test_every_layout_evaluates_back_to_its_tier(game, tier, stream_index, size):
    stream = KeyStream(b"\x07" * 32, Purpose.PACK, stream_index)
    tiers = np.full(size, tier)
    variants = stream.below(2, size)
    symbols = game.layout(tiers, variants, stream)
    result = game.evaluate(variants, symbols)
    assert (result.violation == 0).all()
    assert (result.prize_eur == game.definition.tier_amounts[tier]).all()


def test_ways_to_win_are_derived_and_unique(game):
    # The regulation's note: 15 000, 600, 30, 12 and 6 EUR come from the x3 multiplier.
    multiplied = {
        game.definition.tier_amounts[t]
        for t, ways in game.ways.items()
        if any(w.multiplied for w in ways)
    }
    assert multiplied == {15_000, 600, 30, 12, 6}
    assert all(len(ways) == 1 for ways in game.ways.values())


@st.composite
def forbidden_tickets(draw, game):
    """A legal ticket with exactly one rule of decisions 1-4 broken."""
    effigy_code, paws, bonus, _, _ = draw(legal_tickets(game))
    effigy = effigy_of(game, effigy_code)
    other = effigy_of(game, "CHAT" if effigy_code == "CHIEN" else "CHIEN")
    kind = draw(
        st.sampled_from(
            [
                "six winning",
                "two multipliers",
                "multiplier in paw",
                "winning in bonus",
                "foreign paw",
                "foreign bonus",
            ]
        )
    )
    if kind == "six winning":
        count = draw(st.integers(6, 9))
        paws = [effigy.winning_symbol] * count + paws[count:]
    elif kind == "two multipliers":
        bonus = [effigy.multiplier_symbol] * 2
    elif kind == "multiplier in paw":
        paws[draw(st.integers(0, 8))] = effigy.multiplier_symbol
    elif kind == "winning in bonus":
        bonus[draw(st.integers(0, 1))] = effigy.winning_symbol
    elif kind == "foreign paw":
        paws[draw(st.integers(0, 8))] = draw(
            st.sampled_from(
                [
                    other.winning_symbol,
                    *effigy.bonus_decoys,
                    *(d for d in other.paw_decoys if d not in effigy.paw_decoys),
                ]
            )
        )
    else:
        bonus[draw(st.integers(0, 1))] = draw(
            st.sampled_from([other.multiplier_symbol, *effigy.paw_decoys])
        )
    return effigy_code, paws, bonus


@given(data=st.data())
def test_forbidden_layouts_are_rejected(game, data):
    effigy, paws, bonus = data.draw(forbidden_tickets(game))
    with pytest.raises(InvalidLayout, match="invalid layout"):
        game.prize_eur(effigy, paws, bonus)


def test_vectorised_evaluate_flags_forbidden_rows(game):
    codes = game.definition.symbol_codes
    legal = [codes.index(c) for c in ["OS"] + ["ARBRE"] * 8 + ["ETOILE", "COEUR"]]
    six = [codes.index(c) for c in ["OS"] * 6 + ["ARBRE"] * 3 + ["ETOILE", "COEUR"]]
    result = game.evaluate(np.array([0, 0, 1, 7]), np.array([legal, six, legal, legal]))
    assert result.prize_eur.tolist() == [2, INVALID_PRIZE, INVALID_PRIZE, INVALID_PRIZE]
    assert result.violation[0] == 0 and (result.violation[1:] > 0).all()


def test_unknown_symbols_and_wrong_counts_are_invalid(game):
    with pytest.raises(InvalidLayout, match="unknown symbol"):
        game.prize_eur("CHIEN", ["OS"] + ["CHOCOLAT"] * 8, ["ETOILE", "COEUR"])
    with pytest.raises(InvalidLayout, match="expected 9 paws"):
        game.prize_eur("CHIEN", ["OS"] * 3, ["ETOILE", "COEUR"])
    with pytest.raises(InvalidLayout, match="effigy"):
        game.prize_eur("LAPIN", ["ARBRE"] * 9, ["ETOILE", "COEUR"])
