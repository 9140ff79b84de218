"""The player's money: the interface an operator's wallet implements, and the built-in one.

In production the player's account lives at the operator (the lottery's platform): the game
server asks it to debit the stake and to credit the lot.  Every call names a ``reference``
(the play's id) and is idempotent by it: a call repeated after a lost answer (a timeout, a
crash of the game server) moves no money twice, and answers as the first did.  The order is
fixed: the debit first, the unit dealt only once the debit is accepted, the credit after; a
play whose credit was not confirmed is credited again under the same reference.

:class:`DatabaseWallet` is the built-in wallet: balances in the ledger's own database
(``players.balance_cents``), each movement a row of ``wallet_entries`` keyed by (reference,
kind), written in the play's own transaction, so a play's debit, unit and credit are one
atomic change and the references make retries harmless.
"""

from __future__ import annotations

from typing import Protocol

from printpipe.errors import PrintpipeError
from printpipe.ledger.store import Tx

KINDS = ("deposit", "debit", "credit")


class InsufficientFunds(PrintpipeError):
    """The balance does not cover the stake: nothing is debited."""


class NoSuchPlayer(PrintpipeError):
    """No account of that name."""


class Wallet(Protocol):
    """What the game server asks of a wallet; each call idempotent by ``reference``."""

    def debit(self, tx: Tx, *, player: str, amount_cents: int, reference: str) -> int:
        """Take ``amount_cents`` from the player (raises :class:`InsufficientFunds`,
        :class:`NoSuchPlayer`); returns the balance after."""
        ...

    def credit(self, tx: Tx, *, player: str, amount_cents: int, reference: str) -> int:
        """Give ``amount_cents`` to the player; returns the balance after."""
        ...

    def balance(self, tx: Tx, *, player: str) -> int:
        """The player's balance in cents (raises :class:`NoSuchPlayer`)."""
        ...


class DatabaseWallet:
    """Balances in the ledger's database, moved in the caller's transaction."""

    def _move(self, tx: Tx, kind: str, player: str, amount: int, reference: str, at: str) -> int:
        done = tx.one(
            "SELECT amount_cents FROM wallet_entries WHERE reference = ? AND kind = ?",
            (reference, kind),
        )
        if done is not None:
            return self.balance(tx, player=player)
        sign = -1 if kind == "debit" else 1
        row = tx.one(
            "UPDATE players SET balance_cents = balance_cents + ? "
            "WHERE id = ? AND balance_cents + ? >= 0 RETURNING balance_cents",
            (sign * amount, player, sign * amount),
        )
        if row is None:
            self.balance(tx, player=player)  # NoSuchPlayer first
            raise InsufficientFunds(
                f"the balance of {player} does not cover {amount / 100:.2f} EUR"
            )
        tx.execute(
            "INSERT INTO wallet_entries (reference, kind, player, amount_cents, at) "
            "VALUES (?, ?, ?, ?, ?)",
            (reference, kind, player, amount, at),
        )
        return int(row[0])

    def debit(self, tx: Tx, *, player: str, amount_cents: int, reference: str, at: str = "") -> int:
        return self._move(tx, "debit", player, amount_cents, reference, at)

    def credit(
        self, tx: Tx, *, player: str, amount_cents: int, reference: str, at: str = ""
    ) -> int:
        return self._move(tx, "credit", player, amount_cents, reference, at)

    def deposit(
        self, tx: Tx, *, player: str, amount_cents: int, reference: str, at: str = ""
    ) -> int:
        return self._move(tx, "deposit", player, amount_cents, reference, at)

    def balance(self, tx: Tx, *, player: str) -> int:
        row = tx.one("SELECT balance_cents FROM players WHERE id = ?", (player,))
        if row is None:
            raise NoSuchPlayer(f"no player {player!r}")
        return int(row[0])


MAX_BALANCE_CENTS = 10**11


def parse_euros(text: str) -> int:
    """An amount in EUR as typed (``20``, ``20.5``, ``20,50``) -> cents; refused in one line
    if malformed, negative, with more than 2 decimals, or over a billion."""
    import re

    from printpipe.errors import InvalidInput

    match = re.fullmatch(r"([0-9]{1,12})(?:[.,]([0-9]{1,2}))?", text.strip())
    if match is None:
        raise InvalidInput(f"{text!r} is not an amount in EUR (e.g. 20 or 20.50)")
    cents = int(match[1]) * 100 + int((match[2] or "0").ljust(2, "0"))
    if cents > MAX_BALANCE_CENTS:
        raise InvalidInput(f"{text} EUR: at most {MAX_BALANCE_CENTS // 100:,} EUR")
    return cents
