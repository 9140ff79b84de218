"""One page for the audit report: winners and prize money per pack across a generated block.

The figures are the audit's own (:func:`printpipe.generation.audit.pack_tallies`).  Winners are
plotted pack by pack (they differ by at most one within a pool, by design, so their positions tell
nothing); prize money only as a distribution: a plot of prize money by pack number would point
at the packs holding the big lots, which is what pick-out protection exists to hide.

matplotlib is an optional extra (``pip install printpipe[plot]``); without it the plot is
skipped with a message and the rest of the proof pack is unaffected.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from printpipe import french
from printpipe.block import BlockStore
from printpipe.games.base import Game
from printpipe.generation import pack_tallies


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_pack_plot(path: Path, store: BlockStore, game: Game) -> dict[str, object]:
    """Write the plot (PNG, 150 dpi, A4 landscape); returns the figures it shows."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

    definition = game.definition
    packs = store.pack_range
    counts, prize = pack_tallies(store.read(packs).tier, definition.tier_amounts, store.pack_size)
    winners = counts[:, 1:].sum(axis=1)
    numbers = np.arange(packs.first, packs.last + 1)
    fig, (top, left, right) = _axes(plt)
    fig.suptitle(
        f"{definition.title} - bloc {store.block}, carnets {packs.first} à {packs.last} "
        f"({french.number(packs.count * store.pack_size)} tickets) - chiffres de l'audit",
        fontsize=13,
    )
    top.plot(numbers, winners, ".", markersize=2 if len(numbers) > 500 else 6, color="#1f5fa8")
    top.margins(y=0.15)
    top.axhline(np.median(winners), color="#c0392b", linewidth=0.8, label="médiane")
    per_pool = definition.block.packs_per_pool
    for edge in range(per_pool, definition.block.packs, per_pool):
        if packs.first < edge < packs.last:
            top.axvline(edge + 0.5, color="grey", linewidth=0.5, linestyle=":")
    top.set_xlabel("carnet (pointillés : limites de pool)")
    top.set_ylabel("gagnants par carnet")
    top.set_title(
        f"Gagnants par carnet de {store.pack_size} : min {winners.min()}, "
        f"médiane {np.median(winners):g}, max {winners.max()}",
        fontsize=10,
    )
    top.legend(loc="upper right", fontsize=8)
    values, frequency = np.unique(winners, return_counts=True)
    left.bar(values, frequency, color="#1f5fa8", width=0.6)
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    top.yaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("gagnants par carnet")
    left.set_ylabel("carnets")
    left.set_title("Répartition des gagnants", fontsize=10)
    wide = prize.max() > 20 * max(prize.min(), 1)  # the big lots: a log scale shows them
    if wide:
        bins = np.unique(np.geomspace(max(prize.min(), 1), prize.max() + 1, 40).round())
        right.hist(prize, bins=bins, color="#d68910")
        right.set_xscale("log")
        right.xaxis.set_major_formatter(ScalarFormatter())
        right.xaxis.set_minor_formatter(NullFormatter())
    else:
        right.hist(prize, bins=min(40, max(len(np.unique(prize)), 1)), color="#d68910")
    right.set_yscale("log")
    right.set_xlabel("gains par carnet (EUR" + (", échelle log)" if wide else ")"))
    right.set_ylabel("carnets (échelle log)")
    right.set_title(
        f"Gains par carnet : min {french.number(prize.min())}, "
        f"médiane {french.number(np.median(prize))}, max {french.number(prize.max())} EUR",
        fontsize=10,
    )
    fig.text(
        0.01,
        0.01,
        "Confidentiel. Les gains sont montrés en répartition, jamais par numéro de carnet : "
        "la position des gros lots ne se lit pas ici.",
        fontsize=8,
        color="grey",
    )
    tmp = path.with_name(f".{path.name}.partial")
    fig.savefig(tmp, dpi=150, format="png")
    plt.close(fig)
    tmp.replace(path)
    return {
        "file": path.name,
        "packs": {"first": packs.first, "last": packs.last},
        "winners_per_pack": {
            "min": int(winners.min()),
            "median": float(np.median(winners)),
            "max": int(winners.max()),
        },
        "prize_eur_per_pack": {
            "min": int(prize.min()),
            "median": float(np.median(prize)),
            "max": int(prize.max()),
            "total": int(prize.sum()),
        },
    }


def _axes(plt):
    fig = plt.figure(figsize=(11.69, 8.27))
    grid = fig.add_gridspec(2, 2, height_ratios=(1, 1), hspace=0.35, wspace=0.25)
    top = fig.add_subplot(grid[0, :])
    return fig, (top, fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1]))
