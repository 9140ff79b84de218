"""What the proofs of Golden Animals say about its units (the words of
:class:`~printpipe.games.base.OnlineGame`), in French, from the game's own definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from printpipe.french import cents, euros, number, percent
from printpipe.games.base import UnitWords

if TYPE_CHECKING:
    from printpipe.games.golden_animals.rules import GoldenAnimals


def unit_words(game: GoldenAnimals) -> UnitWords:
    d = game.definition
    b = d.block
    lots, total = d.regulation_totals
    stake = b.size * d.price_cents / 100
    extra = game.extra_symbol
    roles = [(a, f"chaîne de {game.chain_length} : {euros(v)}") for a, v in game.paytable.items()]
    roles += [(code, f"paie {euros(a)}") for a, code in game.money_codes.items()]
    roles.append((extra, f"ouvre la grille {extra}"))
    return UnitWords(
        cover_subtitle=f"Jeu n° {d.number:04d} ({d.id}) - jeu instantané en ligne - offre à "
        f"{cents(game.offer_price_cents)} = {cents(d.price_cents)} {d.title} + "
        f"{cents(game.linked_price_cents)} {game.linked_game}",
        cover_checks=(
            f"Contrôle : {number(lots)} lots et {euros(total)}, égaux aux totaux du règlement "
            "(article 4).",
            f"Mise : {cents(game.offer_price_cents)} par unité = {cents(d.price_cents)} pour "
            f"{d.title} + {cents(game.linked_price_cents)} pour {game.linked_game} (article 2) ; "
            f"seule la part de {cents(d.price_cents)} finance ces lots.",
            f"Taux de retour aux joueurs : {euros(total)} / ({number(b.size)} x "
            f"{cents(d.price_cents)} = {euros(round(stake))}) = "
            f"{percent(total / stake)} (part des ventes ci-dessus : même base).",
        ),
        cover_params=(
            ("Taille d'un bloc", f"{number(b.size)} unités"),
            ("Pools", f"{b.pools} de {number(b.pool_size)} unités"),
            (
                "Groupes",
                f"{number(b.packs)} de {number(b.pack_size)} unités "
                f"({number(b.packs_per_pool)} par pool)",
            ),
            ("Perdants consécutifs", f"au plus {b.max_losing_run} dans un groupe"),
            ("Teasers", f"{b.teaser_rate * 100:g} % des perdants montrent {extra}"),
            ("Gros lots", f">= {number(b.high_tier_min_eur)} € : au plus un par groupe"),
            (
                "Lots majeurs",
                f">= {number(b.distinct_pools_min_eur)} € : chacun dans un pool différent",
            ),
            ("Grille", f"{game.rows} x {game.columns}, chaîne de {game.chain_length} liés"),
        ),
        rules=(
            f"Chaîne de {game.chain_length} symboles identiques liés (côté ou coin) : le gain de "
            f"l'animal. {game.money_symbol} : la somme inscrite. {extra} : une 2e grille, gains "
            "comptés de même. Tous les gains s'additionnent (un lot)."
        ),
        paytable=tuple(roles),
        loser="Perdant : 0 €",
        teaser_loser=f"Perdant avec {extra} (teaser) : 0 €",
        teaser_note=f" ({extra} ouvre une grille qui ne gagne rien)",
        second_grid_title=f"GRILLE {extra} (ouverte par {extra})",
        second_grid_opened=f"{extra} ! Une nouvelle grille : cliquez sur GO.",
        no_second_grid=f"pas d'{extra} : pas de 2e grille",
    )


def describe_wins(game: GoldenAnimals, wins: list[list[str]]) -> str:
    """A unit's wins per grid in one line."""
    first = " + ".join(wins[0]) or "rien"
    if not wins[1] and not wins[0]:
        return "aucun gain"
    if not wins[1]:
        return first
    return f"grille : {first} ; grille {game.extra_symbol} : {' + '.join(wins[1])}"
