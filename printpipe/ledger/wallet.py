"""The player's money: the interface an operator's wallet implements, and the built-in one.

In production the player's account lives at the operator (the lottery's platform): the game
server asks it to debit the stake and to credit the lot.  Every movement names a
``reference`` (the play's id) and a kind, and is idempotent by them: a call repeated after a
lost answer (a timeout, a crash of the game server) moves no money twice.  The order is fixed:
the debit first, the unit dealt only once the debit is accepted, the credit after.

:class:`Wallet` is what every wallet answers, outside any database transaction: ``debit``,
``credit``, ``cancel``, ``balance`` (``printpipe.play.operator_wallet.WalletClient`` over HTTP;
the dealer's three steps around it: ``printpipe.ledger.outbox``), and ``debit_many`` and
``credit_or_cancel_many``, several calls at once (the client: one request for them all). The
built-in wallet, :class:`DatabaseWallet`, is not one: it is the fast path, its balances in the
ledger's own database, moved in the play's own transaction: the game server asks a batch of
plays at a time (one transaction): :meth:`DatabaseWallet.accounts` opens the accounts of the
batch's players, whose rows the dealer holds locked; the batch's debits and credits are decided
in order, in memory (a play's credit counts for the same player's next play), and written
together by :meth:`Accounts.finish`.

:class:`DatabaseWallet`'s balances are in the ledger's own database
(``players.balance_cents``), each movement a row of ``wallet_entries`` keyed by (reference,
kind) and carrying a MAC under the ledger key (:meth:`LogKey.wallet_mac`), written in the play's
own transaction.  ``verify-log`` checks every entry's MAC and every balance against the sum of
its entries (its opening deposit, credits, less debits), so a balance set, an entry edited,
inserted or deleted by a database writer is named.  With an operator's wallet over HTTP the
balances are the operator's; the ledger keeps its calls in its outbox (``wallet_outbox``),
each MACed the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from printpipe import french
from printpipe.errors import PrintpipeError
from printpipe.ledger.log import LogKey, WalletEntry
from printpipe.ledger.store import Tx
from printpipe.ledger.store.schema import BIGINT, TEXT
from printpipe.wallet.api import Outcome, Settled

KINDS = ("deposit", "debit", "credit")
WALLET_COLUMNS = ("reference", "kind", "player", "amount_cents", "at", "mac")


class InsufficientFunds(PrintpipeError):
    """The balance does not cover the stake: nothing is debited."""


class NoSuchPlayer(PrintpipeError):
    """No account of that name."""


class Accounts(Protocol):
    """The accounts of a batch's players, in one transaction."""

    def debit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        """Take ``amount_cents`` from the player (raises :class:`InsufficientFunds`,
        :class:`NoSuchPlayer`); returns the balance after."""
        ...

    def credit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        """Give ``amount_cents`` to the player; returns the balance after."""
        ...

    def finish(self) -> None:
        """Write the batch's movements (in the transaction)."""
        ...


@runtime_checkable
class Wallet(Protocol):
    """The player's money, wherever it lives; no database transaction is handed to it.  Each
    call is idempotent by its ``reference`` (the play's id) and kind, and its outcome is
    classified, never guessed (``printpipe.wallet.api``: Confirmed, Refused, Unknown)."""

    def debit(self, *, reference: str, player: str, split: Sequence[tuple[str, int]]) -> Settled:
        """Take the stake (``split`` between the games it buys): Confirmed (taken), Refused
        (not taken, why), Cancelled (its outcome was lost, so it was cancelled: not taken),
        or Unknown (neither the debit nor its cancel confirmed: the cancel is sent again)."""
        ...

    def credit(self, *, reference: str, player: str, amount_cents: int) -> Outcome:
        """Give the lot of the play ``reference`` (its debit confirmed)."""
        ...

    def cancel(self, *, reference: str, player: str, amount_cents: int) -> Outcome:
        """Cancel the debit ``reference`` (its play never dealt): refunded if it was taken."""
        ...

    def balance(self, *, player: str) -> int:
        """The player's balance in cents (raises :class:`PrintpipeError` if not known)."""
        ...

    def debit_many(
        self, debits: Sequence[tuple[str, str, Sequence[tuple[str, int]]]]
    ) -> list[Outcome]:
        """``debit`` of each (reference, player, split), at once: each one's outcome, in order
        (made and classified as alone)."""
        ...

    def credit_or_cancel_many(self, calls: Sequence[tuple[str, str, str, int]]) -> list[Outcome]:
        """``credit`` or ``cancel`` of each (kind, reference, player, amount in cents), at
        once: each one's outcome, in order."""
        ...


class DatabaseWallet:
    """Balances in the ledger's database, each movement MACed under ``key`` (the ledger's log
    key), moved in the dealer's transaction (:meth:`accounts`): the built-in wallet, the
    dealer's when it is given no wallet outside the ledger (:class:`Wallet`).  Its money and
    the play commit together or not at all: no outbox."""

    def __init__(self, key: LogKey) -> None:
        self.key = key

    def accounts(self, tx: Tx, players: Sequence[str]) -> DatabaseAccounts:
        return DatabaseAccounts(self.key, tx, players)

    def deposit(self, tx: Tx, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        """Credit a deposit (an opening balance) to ``player``: the balance after."""
        accounts = self.accounts(tx, [player])
        balance = accounts.move("deposit", player, amount_cents, reference, at)
        accounts.finish()
        return balance

    def balance_in(self, tx: Tx, *, player: str) -> int:
        """The player's balance, read in ``tx``."""
        row = tx.one("SELECT balance_cents FROM players WHERE id = ?", (player,))
        if row is None:
            raise NoSuchPlayer(f"no player {player!r}")
        return int(row[0])


class DatabaseAccounts:
    """A batch's accounts of the built-in wallet: balances read once (sent with the batch's
    first statements), moved in memory, written by :meth:`finish` in two statements."""

    def __init__(self, key: LogKey, tx: Tx, players: Sequence[str]) -> None:
        self.key = key
        self.tx = tx
        self._sent: Callable[[], list[tuple[Any, ...]]] | None = None
        if players:
            among, params = tx.any_of("id", TEXT, players)
            self._sent = tx.send(f"SELECT id, balance_cents FROM players WHERE {among}", params)
        self._balances: dict[str, int] | None = None
        self._moved: set[str] = set()
        self._entries: list[tuple[Any, ...]] = []

    def balances(self) -> dict[str, int]:
        if self._balances is None:
            rows = self._sent() if self._sent is not None else []
            self._balances = {str(player): int(balance) for player, balance in rows}
        return self._balances

    def move(self, kind: str, player: str, amount: int, reference: str, at: str) -> int:
        balances = self.balances()
        if player not in balances:
            raise NoSuchPlayer(f"no player {player!r}")
        after = balances[player] + (-amount if kind == "debit" else amount)
        if after < 0:
            raise InsufficientFunds(f"the balance of {player} does not cover {french.eur(amount)}")
        balances[player] = after
        self._moved.add(player)
        entry = WalletEntry(reference, kind, player, amount, at)
        self._entries.append((reference, kind, player, amount, at, self.key.wallet_mac(entry)))
        return after

    def debit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        return self.move("debit", player, amount_cents, reference, at)

    def credit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        return self.move("credit", player, amount_cents, reference, at)

    def finish(self) -> None:
        if not self._entries:
            return
        balances = self.balances()
        moved = [(player, balances[player]) for player in sorted(self._moved)]
        table, params = self.tx.rows_table("q", [("id", TEXT), ("balance", BIGINT)], moved)
        among, more = self.tx.any_of("players.id", TEXT, [player for player, _ in moved])
        self.tx.write(
            f"{table}UPDATE players SET balance_cents = q.balance FROM q WHERE players.id = q.id "
            f"AND {among}",
            params + more,
        )
        self.tx.write(*self.tx.append_sql("wallet_entries", WALLET_COLUMNS, self._entries))
        self._entries = []


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
