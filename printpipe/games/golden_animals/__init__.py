"""Golden Animals, the online instant game: its rules and the pictograms its units show.

- :mod:`.rules`: regulation articles 5.2-5.8 and the decisions they leave open
  (``evaluate``, ``layout``, the group tables), the only place the rules live;
- :mod:`.pictograms`: the vector pictogram of every symbol, for the proofs;
- the unit's words for the proofs are :meth:`GoldenAnimals.unit_words`.
"""

from printpipe.games.golden_animals.rules import (
    EMPTY,
    EXTRA_GRID,
    GRID,
    VIOLATIONS,
    GoldenAnimals,
    cell_masks,
    group_tables,
    unpack_masks,
)

__all__ = [
    "EMPTY",
    "EXTRA_GRID",
    "GRID",
    "VIOLATIONS",
    "GoldenAnimals",
    "cell_masks",
    "group_tables",
    "unpack_masks",
]
