"""A day's sales of the online games, and the wallet calls of a day, as the ledger records them.

``printpipe play report`` signs the first (``printpipe.play.report``); ``printpipe play
reconcile`` compares the second with the operator's statement of the same day.  Both read one
snapshot of the ledger; a day is the plays' UTC day (``plays.day``), and for a wallet call the
day of the wallet's own time on its receipt (what its statement is ordered by).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from printpipe.ledger.book import Ledger


@dataclass
class BlockSales:
    """One block's plays of the day."""

    block: str
    """The block as its commitment names it: ``GAME_NUMBER-BLOCK`` (``1805-001``)."""
    plays: int
    stakes_cents: int


@dataclass
class GameSales:
    """One game's sales of a day: plays, stakes, lots won and credited, and its linked game's
    participations (the Super Jackpot's share of each stake, from the definition's
    ``[offer]``; a play made before layout 9 has none recorded)."""

    game: str
    plays: int = 0
    stakes_cents: int = 0
    lots: int = 0
    lots_cents: int = 0
    credited_cents: int = 0
    """Lots the wallet confirmed (the built-in wallet's, credited with the play)."""
    credits_pending_cents: int = 0
    """Lots whose credit the outbox has not had confirmed yet."""
    jackpot_participations: int = 0
    jackpot_cents: int = 0
    blocks: list[BlockSales] = field(default_factory=list)

    def as_json(self, *, linked_game: str) -> dict[str, Any]:
        return {
            "game": self.game,
            "plays": self.plays,
            "stakes_cents": self.stakes_cents,
            "lots": self.lots,
            "lots_cents": self.lots_cents,
            "lots_credited_cents": self.credited_cents,
            "lots_pending_cents": self.credits_pending_cents,
            "linked_game": linked_game,
            "jackpot_participations": self.jackpot_participations,
            "jackpot_cents": self.jackpot_cents,
            "blocks": [
                {"block": b.block, "plays": b.plays, "stakes_cents": b.stakes_cents}
                for b in self.blocks
            ],
        }


def day_sales(ledger: Ledger, day: str) -> list[GameSales]:
    """Each online game's sales of ``day`` (UTC), games and blocks in order."""
    with ledger.db.snapshot() as tx:
        rows = tx.execute(
            "SELECT c.game, c.game_number, c.block, COUNT(*), COALESCE(SUM(p.stake_cents), 0), "
            "COALESCE(SUM(CASE WHEN p.lot_cents > 0 THEN 1 ELSE 0 END), 0), "
            "COALESCE(SUM(p.lot_cents), 0), "
            "COALESCE(SUM(CASE WHEN p.jackpot_cents IS NULL THEN 0 ELSE 1 END), 0), "
            "COALESCE(SUM(p.jackpot_cents), 0) "
            "FROM plays p JOIN commitments c ON c.id = p.commitment WHERE p.day = ? "
            "GROUP BY c.game, c.game_number, c.block ORDER BY c.game, c.game_number, c.block",
            (day,),
        )
        pending = {
            str(game): int(cents)
            for game, cents in tx.execute(
                "SELECT c.game, COALESCE(SUM(o.amount_cents), 0) FROM wallet_outbox o "
                "JOIN plays p ON p.id = o.reference JOIN commitments c ON c.id = p.commitment "
                "WHERE o.kind = 'credit' AND o.state <> 'confirmed' AND p.day = ? "
                "GROUP BY c.game",
                (day,),
            )
        }
    games: dict[str, GameSales] = {}
    for game, number, block, plays, stakes, lots, lot_cents, shares, jackpot in rows:
        sales = games.setdefault(str(game), GameSales(str(game)))
        sales.plays += int(plays)
        sales.stakes_cents += int(stakes)
        sales.lots += int(lots)
        sales.lots_cents += int(lot_cents)
        sales.jackpot_participations += int(shares)
        sales.jackpot_cents += int(jackpot)
        sales.blocks.append(BlockSales(f"{int(number)}-{int(block):03d}", int(plays), int(stakes)))
    for sales in games.values():
        sales.credits_pending_cents = pending.get(sales.game, 0)
        sales.credited_cents = sales.lots_cents - sales.credits_pending_cents
    return list(games.values())


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A call to the operator's wallet as the outbox holds it."""

    reference: str
    kind: str
    player: str
    amount_cents: int
    state: str
    wallet_at: str | None
    refunded: bool | None
    created_at: str
    played: bool
    """Whether a play was dealt under its reference."""


def recorded_calls(ledger: Ledger, day: str) -> list[RecordedCall]:
    """The outbox's calls the wallet confirmed on ``day`` (by its receipt's time), those made
    on ``day`` not confirmed yet, and every debit in flight or cancelled (its cancel may be of
    another day)."""
    with ledger.db.snapshot() as tx:
        rows = tx.execute(
            "SELECT o.reference, o.kind, o.player, o.amount_cents, o.state, o.wallet_at, "
            "o.refunded, o.created_at, p.id FROM wallet_outbox o LEFT JOIN plays p ON "
            "p.id = o.reference WHERE o.wallet_at LIKE ? OR o.created_at LIKE ? OR "
            "(o.kind = 'debit' AND o.state IN ('sent', 'cancel'))",
            (f"{day}%", f"{day}%"),
        )
    calls = []
    for r, k, p, a, s, w, f, c, played in rows:
        wallet_at, refunded = None if w is None else str(w), None if f is None else bool(f)
        calls.append(RecordedCall(str(r), str(k), str(p), int(a), str(s), wallet_at, refunded,
                                  str(c), played is not None))  # fmt: skip
    return calls
