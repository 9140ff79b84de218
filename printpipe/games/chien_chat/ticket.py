"""What the dog/cat ticket shows: each effigy's front, the words of its specimens, the roles of
its symbols (the :class:`~printpipe.games.base.PaperGame` side of :class:`.ChienChat`).

The renderer lays these out in the template's zones without knowing what they depict; the
French words come from the ticket texts (``templates/chien-chat/texts.toml``) and the figures
from the rules, never written twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from printpipe import french
from printpipe.games.base import LOSING_TIER, BackArt, FrontArt, SpecimenWords
from printpipe.games.chien_chat import artwork

if TYPE_CHECKING:
    from printpipe.games.chien_chat.rules import ChienChat

EMBLEMS = {"CHIEN": artwork.draw_dog, "CHAT": artwork.draw_cat}
"""Each effigy's picture (by effigy code)."""
BONUS_BOXES = {"NICHE": artwork.draw_kennel, "PANIER": artwork.draw_basket}
"""Each bonus box's frame (by the effigy's ``bonus_box``)."""
BONUS_LABEL_ROOM = {"NICHE": 0.5, "PANIER": 0.8}
"""The share of each bonus box's width its roof leaves the label: the kennel's pointed roof
half of it, the basket's rounded hood more."""
BACKGROUNDS = {"CHIEN": (0, 0.12, 0.35, 0), "CHAT": (0.22, 0.08, 0, 0)}
ACCENTS = {"CHIEN": (0, 0.6, 1, 0.1), "CHAT": (0.75, 0.45, 0, 0.1)}
MOTIFS = {"CHIEN": (0, 0.2, 0.5, 0.02), "CHAT": (0.32, 0.13, 0, 0.02)}
"""The paw prints scattered over each background, a shade darker."""
BACK_BACKGROUND = (0, 0.05, 0.16, 0)
"""The back: a light cream of the game's colours, its paws a shade darker, its logo on a band
of the dog's orange."""
BACK_MOTIF = (0, 0.1, 0.28, 0.02)
BACK_BAND = ACCENTS["CHIEN"]
PLAIN_BACKGROUND = (0, 0, 0, 0.08)
PLAIN_ACCENT = (0, 0, 0, 1)


def fronts(game: ChienChat, texts: Mapping[str, Any]) -> tuple[FrontArt, ...]:
    """The front of each effigy, in variant order."""
    front = texts["front"]
    out = []
    for effigy in game.effigies:
        words = texts["effigies"][effigy.code]
        howto = front["howto"].format(
            winning_plural=words["winning_plural"],
            winning_word=words["winning_word"],
            multiplier=words["multiplier"],
            multiplier_word=words["multiplier_word"],
            box=words["box"],
            multiplier_factor=game.multiplier,
        )
        rows = [
            (f"{count} {words['winning_word']}", french.euros(int(game.prize_by_count[count])))
            for count in range(1, game.max_winning_symbols + 1)
        ]
        rows.append((f"{words['multiplier_word']} au bonus", f"x{game.multiplier}"))
        out.append(
            FrontArt(
                name=effigy.code,
                background=BACKGROUNDS.get(effigy.code, PLAIN_BACKGROUND),
                accent=ACCENTS.get(effigy.code, PLAIN_ACCENT),
                emblem=EMBLEMS.get(effigy.code, artwork.draw_paw),
                bonus_box=BONUS_BOXES.get(effigy.bonus_box, artwork.draw_kennel),
                bonus_label=f"{front['bonus_label']} {effigy.bonus_box}",
                bonus_label_room=BONUS_LABEL_ROOM.get(effigy.bonus_box, 0.5),
                howto=howto,
                paytable=tuple(rows),
                motif=artwork.draw_paw,
                motif_colour=MOTIFS.get(effigy.code, PLAIN_BACKGROUND),
            )
        )
    return tuple(out)


def back(game: ChienChat, texts: Mapping[str, Any]) -> BackArt:
    """The back: the game's logo (its title between its effigies), the rules in full (from the
    ticket texts, with every figure from the rules), the legal lines."""
    words = texts["back"]
    effigies = [(e, texts["effigies"][e.code]) for e in game.effigies]
    counts = ", ".join(str(n) for n in range(1, game.max_winning_symbols))
    amounts = ", ".join(
        french.euros(int(game.prize_by_count[n])) for n in range(1, game.max_winning_symbols)
    )
    top = game.max_winning_symbols
    play = words["how_to_play"]
    rules = [
        play["surfaces"],
        play["paws"].format(
            winning=" ou ".join(f"{w['winning_plural']} (ticket {e.caption})" for e, w in effigies),
            counts=f"{counts} ou {top}",
            amounts=f"{amounts} ou {french.euros(int(game.prize_by_count[top]))}",
        ),
        play["bonus"].format(
            boxes=" ou ".join(w["box"] for _, w in effigies),
            multipliers=" ou ".join(f"{w['multiplier']} ({e.caption})" for e, w in effigies),
            multiplier_factor=game.multiplier,
        ),
        play["otherwise"],
        " ".join(words["legal"]),
    ]
    return BackArt(
        background=BACK_BACKGROUND,
        motif=artwork.draw_paw,
        motif_colour=BACK_MOTIF,
        band=BACK_BAND,
        emblems=tuple(EMBLEMS.get(e.code, artwork.draw_paw) for e in game.effigies),
        rules_title=play["title"],
        rules=tuple(rules),
    )


def symbol_roles(game: ChienChat) -> dict[str, list[str]]:
    """Code -> what the symbol does on each effigy's ticket."""
    roles: dict[str, list[str]] = {code: [] for code in game.definition.symbol_codes}
    for e in game.effigies:
        roles[e.winning_symbol].append(f"{e.code} : gagnant (traces)")
        roles[e.multiplier_symbol].append(f"{e.code} : multiplicateur ({e.bonus_box.lower()})")
        for code in e.paw_decoys:
            roles[code].append(f"{e.code} : leurre (traces)")
        for code in e.bonus_decoys:
            roles[code].append(f"{e.code} : leurre (bonus)")
    return roles


def specimen_words(
    game: ChienChat, variant: int, symbols: Sequence[int], tier: int, teaser: bool
) -> SpecimenWords:
    """The heading, the "shows" line and the symbols line of a specimen ticket."""
    d = game.definition
    effigy = game.effigies[variant]
    codes = [d.symbol_codes[s] for s in symbols]
    paw_count = d.fields[0].width
    paws, bonus = codes[:paw_count], codes[paw_count:]
    amount = int(d.tier_amounts[tier])
    if tier == LOSING_TIER:
        kind = f"Perdant avec {effigy.multiplier_symbol} au bonus (teaser)" if teaser else "Perdant"
        label = f"{effigy.caption} - {kind} : 0 €"
    else:
        label = f"{effigy.caption} - Rang {tier} / {len(d.prizes)} : {french.euros(amount)}"
    multiplier = effigy.multiplier_symbol
    bonus_shows = multiplier if multiplier in bonus else f"pas de {multiplier}"
    shows = (
        f"Montre {paws.count(effigy.winning_symbol)} x {effigy.winning_symbol} dans les traces "
        f"de pattes, {bonus_shows} dans la case bonus ({effigy.bonus_box})."
    )
    rows = " / ".join(" ".join(paws[r * 3 : r * 3 + 3]) for r in range(-(-len(paws) // 3)))
    return SpecimenWords(
        label=label,
        shows=shows,
        symbols=f"Traces (ligne par ligne) : {rows}    Bonus : {' '.join(bonus)}",
    )
