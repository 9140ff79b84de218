"""A broken game definition gets one clear error naming the field."""

import pytest

from printpipe.errors import PrintpipeError
from printpipe.games import game_template_dir, load_game
from printpipe.games.base import symbol_code
from printpipe.games.chien_chat import ChienChat

ORIGINAL = (game_template_dir("chien-chat") / "game.toml").read_text(encoding="utf-8")


def load_modified(tmp_path, old, new, *more):
    text = ORIGINAL
    for before, after in ((old, new), *zip(more[::2], more[1::2], strict=True)):
        assert before in text, f"test is stale: {before!r} not in game.toml"
        text = text.replace(before, after, 1)
    path = tmp_path / "game.toml"
    path.write_text(text, encoding="utf-8")
    return ChienChat(path)


def test_the_shipped_definition_matches_the_regulation():
    definition = load_game("chien-chat").definition
    assert sum(p.lots for p in definition.prizes) == 437_316
    assert sum(p.lots * p.amount_eur for p in definition.prizes) == 1_950_000
    assert definition.block.packs == 12_000 and definition.block.packs_per_pool == 2_000
    assert definition.price_cents == 200


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("lots = 60_000\n", "lots = 60_001\n", "field prizes: lots add up to 437,317"),
        ("amount_eur = 1_950_000", "amount_eur = 1_950_001", "field prizes: amounts add up"),
        ("lots = 2\namount_eur = 15_000", "lots = 2\namount_eur = -1", "prizes[0].amount_eur"),
        ('paw_decoys = ["COLLIER"', 'paw_decoys = ["OS"', "decoy 'OS' is too like 'OS'"),
        ('paw_decoys = ["POISSON"', 'paw_decoys = ["PELOTE"', "too like 'PELOTE'"),
        (
            'bonus_decoys = ["ETOILE", "COEUR", "TREFLE"]\n\n[effigies.CHAT]',
            'bonus_decoys = ["ETOILE", "ARBRE"]\n\n[effigies.CHAT]',
            "'ARBRE' is a paw decoy too",
        ),
        ('CLE = "CLÉ"', 'CLE = "CLEF"', "field symbols.CLE: code must be its caption"),
        ('winning_symbol = "OS"', 'winning_symbol = "OSSELET"', "not in [symbols]"),
        ("pack_size = 125", "pack_size = 124", "field block.size"),
        ("teaser_rate = 0.05", "teaser_rate = 1.5", "field block.teaser_rate"),
        ("number = 412", 'number = "0412"', "field game.number"),
        ("max_losing_run = 20", "", "field block.max_losing_run: missing"),
        ("[rules]", "[rules", "is not valid TOML"),
    ],
)
def test_broken_definitions_name_the_field(tmp_path, old, new, message):
    with pytest.raises(PrintpipeError) as caught:
        load_modified(tmp_path, old, new)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text


def test_an_amount_the_rules_cannot_produce_is_refused(tmp_path):
    with pytest.raises(PrintpipeError, match=r"prizes\[7\].amount_eur: 3 EUR cannot be won"):
        load_modified(
            tmp_path,
            "lots = 500\namount_eur = 6\n",
            "lots = 1000\namount_eur = 3\n",
            "lots = 437_316",
            "lots = 437_816",
        )


def test_unknown_game():
    with pytest.raises(PrintpipeError, match="unknown game 'loto'"):
        load_game("loto")


def test_symbol_codes_drop_accents_and_ligatures():
    assert symbol_code("CŒUR") == "COEUR"
    assert symbol_code("ÉTOILE") == "ETOILE"
    assert symbol_code("trèfle") == "TREFLE"
