"""Plays against a wallet outside the ledger (the operator's, over HTTP), and the durable outbox
of its calls.

The wallet is called outside every database transaction, in three steps a batch
(``docs/play.md``, "The wallet over HTTP"):

1. **reserve** (one durable transaction): the requests' nonces admitted, their players locked,
   an earlier play under each Idempotency-Key answered again, the daily limit counted with the
   debits still in flight, and each play's id drawn and written as a *sent* debit
   (``wallet_outbox``, with its key and fingerprint: a retry under the same key while it is in
   flight is told to retry);
2. **the debits**, sent at once (``Wallet.debit_many``: one request if the wallet takes
   batches), each settled: Confirmed, Refused, Cancelled or Unknown (a batch not answered
   leaves each of its debits Unknown);
3. **the deal** (one durable transaction, the dealer's own steps): each confirmed debit still
   *sent* marked confirmed and its play dealt, the lot's credit written *pending* in the
   outbox; a debit refused marked so (402 or 404, nothing dealt); one cancelled (its cancel
   confirmed) or unknown (its cancel written *pending*) marked *cancel* (503, retry); a debit
   confirmed whose play could not be dealt (sold out meanwhile) cancelled the same way.

Then :meth:`Outbox.send_due` (``PlayService``'s outbox task, and at once after a deal) sends
every *pending* credit and cancel (in one request if the wallet takes batches), same
reference, until the wallet confirms it, with
backoff, across restarts and kill -9 (a row is claimed for a while by moving its ``next_at``,
so several workers never send it at once, and a process killed while sending leaves it due
again).  The outbox's own transactions (claims, confirmations, abandoned debits turned into
cancels) need no flush to disk: one lost in a crash is done again, and a call sent again is
made once by the wallet.  Steps 1 and 3 are durable: a debit is sent only once its row is on
disk, a player answered only once the deal is.  A debit left *sent* past
:data:`ABANDONED_S` (its process died between steps 1 and 3) is turned into a cancel: the
wallet gives the stake back, or refuses the debit if it arrives later, so no debit stands
without its play or its cancel.

Each row is MACed under the ledger's log key over the call as asked (``log.OutboxCall``) and
checked by ``verify-log``; its progress (state, attempts, the wallet's time) is the
outbox's, compared with the wallet's statement by ``printpipe play reconcile``.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from printpipe.errors import seconds_from_environment
from printpipe.ledger.log import OutboxCall
from printpipe.ledger.plays import (
    RANGES_TAKEN,
    Dealer,
    PlayRequest,
    PlayUnavailable,
    SoldOut,
    _Batch,
    _range_of,
    send_player_locks,
)
from printpipe.ledger.rules import format_instant
from printpipe.ledger.store import Tx
from printpipe.ledger.store.schema import BIGINT, INT, TEXT
from printpipe.ledger.wallet import DatabaseWallet, InsufficientFunds, NoSuchPlayer, Wallet
from printpipe.wallet.api import Cancelled, Confirmed, Outcome, Refused, Settled, Unknown

log = logging.getLogger("printpipe.play")

SENT, PENDING, CONFIRMED, REFUSED, CANCEL = "sent", "pending", "confirmed", "refused", "cancel"
ABANDONED_ENV = "PRINTPIPE_WALLET_ABANDONED_S"
ABANDONED_S = math.ceil(seconds_from_environment(ABANDONED_ENV, 60))
"""A debit still *sent* this long after it was reserved was left by a process that died: it is
cancelled.  A live one settles within its client's attempts (4 x 5 s at most, and waits);
were it slower, its deal finds it cancelled (the row is locked by whichever commits first) and
answers 503: never money lost, only a play to retry.  ``PRINTPIPE_WALLET_ABANDONED_S``
changes it (the reliability tests: a few seconds)."""
CLAIM_ENV = "PRINTPIPE_WALLET_CLAIM_S"
CLAIM_S = math.ceil(seconds_from_environment(CLAIM_ENV, 60))
"""How long a worker holds the rows it is sending (then they are due again: a killed worker's
rows wait this long).  ``PRINTPIPE_WALLET_CLAIM_S`` changes it (the reliability tests)."""
BACKOFF_S = 1.0
MAX_BACKOFF_ENV = "PRINTPIPE_WALLET_MAX_BACKOFF_S"
MAX_BACKOFF_S = seconds_from_environment(MAX_BACKOFF_ENV, 60)
"""The longest pause between two sends of a call (1 s, doubling up to it).
``PRINTPIPE_WALLET_MAX_BACKOFF_S`` changes it (the reliability tests: a wallet killed a while
must not leave the calls it failed waiting a minute)."""
SEND_MOST = 256
"""Rows sent again in one pass."""
ROW = ("reference", "kind", "player", "amount_cents", "split", "created_at", "mac",
       "idempotency_key", "fingerprint", "state", "next_at")  # fmt: skip


Claimed = tuple[str, str, str, int, int]
"""A call claimed to be sent: reference, kind, player, amount in cents, attempts so far."""


def _split_text(split: Sequence[tuple[str, int]]) -> str:
    return json.dumps([[game, cents] for game, cents in split], separators=(",", ":"))


def backoff_s(attempts: int) -> float:
    """The pause before a call's next attempt, after ``attempts`` of them."""
    return min(MAX_BACKOFF_S, BACKOFF_S * 2 ** max(0, attempts - 1))


@dataclass
class _Reserved:
    index: int
    reference: str
    player: str


class _ConfirmedAccounts:
    """The dealer's ``Accounts`` over debits the wallet confirmed: a debit's balance is its
    receipt's, a lot's credit is written to the outbox (sent after the commit)."""

    def __init__(self, outbox: Outbox, receipts: dict[str, int], stamp: str) -> None:
        self.outbox = outbox
        self.receipts = receipts
        self.stamp = stamp
        self.credits: list[tuple[Any, ...]] = []
        self.after: dict[str, int] = {}

    def debit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        self.after[reference] = self.receipts[reference]
        return self.after[reference]

    def credit(self, *, player: str, amount_cents: int, reference: str, at: str) -> int:
        self.credits.append(self.outbox.row(reference, "credit", player, amount_cents, "",
                                            self.stamp, state=PENDING))  # fmt: skip
        self.after[reference] += amount_cents
        return self.after[reference]

    def finish(self) -> None:
        pass


def with_outbox(dealer: Dealer) -> Dealer:
    """``dealer``, its plays through an :class:`Outbox` if its wallet is outside the ledger."""
    if not isinstance(dealer.wallet, DatabaseWallet):
        dealer.outbox = Outbox(dealer, dealer.wallet)
    return dealer


class Outbox:
    """The dealer's plays against its wallet outside the ledger, and their calls' outbox."""

    def __init__(self, dealer: Dealer, wallet: Wallet) -> None:
        self.dealer = dealer
        self.db = dealer.db
        self.key = dealer.key
        self.wallet = wallet
        self.notify: Callable[[], None] = lambda: None
        """Called after a deal wrote calls to send (the service wakes its outbox task)."""
        self._lock = threading.Lock()

    def row(self, reference: str, kind: str, player: str, amount: int, split: str, at: str,
            *, state: str, key: str = "", fingerprint: bytes = b"") -> tuple[Any, ...]:  # fmt: skip
        """An outbox row as :data:`ROW` lists its columns, MACed."""
        mac = self.key.outbox_mac(OutboxCall(reference, kind, player, amount, split, at))
        return (reference, kind, player, amount, split, at, mac, key, fingerprint, state, 0)

    # -- a batch of plays ---------------------------------------------------------------------

    def play_batch(self, requests: Sequence[PlayRequest]) -> list[tuple[Any, bool] | BaseException]:
        """The module's three steps for ``requests``; each outcome as ``Dealer.play_batch``'s."""
        outcomes, reserved = self._reserve(requests)
        self._deal(requests, outcomes, reserved, self._debits(reserved))
        return outcomes

    def _debits(self, reserved: list[_Reserved]) -> list[Settled]:
        """Step 2: each reserved play's debit settled, all at once."""
        if not reserved:
            return []
        try:
            return [*self.wallet.debit_many(
                [(r.reference, r.player, self.dealer.split) for r in reserved]
            )]  # fmt: skip
        except Exception as exc:  # a wallet that raised: no debit's outcome is known
            return [*_unknown(exc, len(reserved))]

    def _reserve(self, requests: Sequence[PlayRequest]) -> tuple[list[Any], list[_Reserved]]:
        """Step 1: the outcomes so far, and the plays reserved (their debits written *sent*)."""
        dealer = self.dealer
        now = dealer.clock()
        stamp, day = format_instant(now), now.date().isoformat()
        with self.db.transaction(durable=True, pipelined=True) as tx:
            admitted = dealer.ledger._admit_later(tx, [r.admission for r in requests])
            names = sorted({r.player for r in requests})
            locked = send_player_locks(tx, names)
            earlier = dealer._send_earlier(tx, requests)
            among, params = tx.any_of("player", TEXT, names)
            flying = tx.send(
                "SELECT player, idempotency_key, amount_cents, created_at FROM wallet_outbox "
                f"WHERE {among} AND kind = 'debit' AND state = 'sent'",
                params,
            )
            left = tx.send("SELECT COUNT(*) FROM deal_ranges")
            outcomes: list[Any] = list(admitted())
            stakes = {str(n): [d, int(c)] for n, d, c in locked()}
            found = {(row[1], row[-2]): row for row in earlier()}
            busy: set[tuple[str, str]] = set()
            for player, key, amount, created in flying():
                busy.add((str(player), str(key)))
                counted = stakes.setdefault(str(player), [day, 0])
                if str(created)[:10] == day:
                    if counted[0] != day:
                        counted[:] = [day, 0]
                    counted[1] += int(amount)  # a debit in flight counts against the limit
            units_left = int(left()[0][0])
            for index, request in enumerate(requests):
                pair = (request.player, request.key)
                if outcomes[index] is None and pair in busy and pair not in found:
                    outcomes[index] = PlayUnavailable(
                        "a play under this Idempotency-Key is being settled with the wallet: retry"
                    )
            batch = _Batch(outcomes=outcomes, stakes=stakes)
            candidates = dealer._admit_plays(requests, batch, found, now)
            reserved, rows = [], []
            for index in candidates:
                request = requests[index]
                if not units_left:
                    outcomes[index] = SoldOut(
                        f"sold out: every unit of {dealer.game.definition.id} has been dealt"
                    )
                    continue
                reference = secrets.token_hex(16)
                reserved.append(_Reserved(index, reference, request.player))
                rows.append(self.row(reference, "debit", request.player, dealer.stake,
                                     _split_text(dealer.split), stamp, state=SENT,
                                     key=request.key, fingerprint=request.fingerprint))  # fmt: skip
            if rows:
                tx.write(*tx.append_sql("wallet_outbox", ROW, rows))
        return outcomes, reserved

    def _deal(
        self, requests: Sequence[PlayRequest], outcomes: list[Any], reserved: list[_Reserved],
        settled: list[Settled],
    ) -> None:  # fmt: skip
        """Step 3: the plays whose debits were confirmed dealt, every debit's state written."""
        dealer = self.dealer
        now = dealer.clock()
        stamp = format_instant(now)
        confirmed = {r.reference: (r, s) for r, s in zip(reserved, settled, strict=True)
                     if isinstance(s, Confirmed)}  # fmt: skip
        by_reference = {r.reference: s for r, s in zip(reserved, settled, strict=True)}
        with self.db.transaction(durable=True, pipelined=True) as tx:
            names = sorted({r.player for r, _ in confirmed.values()})
            stakes: dict[str, list[Any]] = {}
            if names:
                stakes = {str(n): [d, int(c)] for n, d, c in send_player_locks(tx, names)()}
            still = self._confirm(tx, confirmed)
            batch = _Batch(outcomes=outcomes, stakes=stakes)
            receipts = {}
            candidates = []
            for reserved_play, taken in confirmed.values():
                if reserved_play.reference in still:
                    receipts[reserved_play.reference] = taken.receipt.balance_cents
                    batch.play_ids[reserved_play.index] = reserved_play.reference
                    candidates.append(reserved_play.index)
                else:  # the outbox took it for abandoned and cancelled it meanwhile
                    outcomes[reserved_play.index] = PlayUnavailable(
                        "the wallet answered too late: the debit was cancelled; retry"
                    )
            candidates.sort()
            accounts = _ConfirmedAccounts(self, receipts, stamp)
            if candidates:
                claim = dealer._send_claim(tx, after=None, most=RANGES_TAKEN, wait=False)
                batch.ranges = [_range_of(row) for row in claim()]
                dealer._deal(tx, requests, candidates, batch, accounts, stamp)
            cancels: list[tuple[str, str]] = []
            for reserved_play, debit in zip(reserved, settled, strict=True):
                index = reserved_play.index
                if isinstance(debit, Confirmed):
                    if reserved_play.reference in still and isinstance(
                        outcomes[index], BaseException
                    ):
                        cancels.append((reserved_play.reference, reserved_play.player))
                    continue
                outcomes[index] = self._refusal(debit)
                if isinstance(debit, Refused):
                    tx.write("UPDATE wallet_outbox SET state = ?, last_error = ? WHERE "
                             "reference = ? AND kind = 'debit' AND state = ?",
                             (REFUSED, debit.kind, reserved_play.reference, SENT))  # fmt: skip
                else:
                    cancels.append((reserved_play.reference, reserved_play.player))
            rows = list(accounts.credits)
            for reference, player in cancels:
                settled_debit = by_reference[reference]
                tx.write("UPDATE wallet_outbox SET state = ? WHERE reference = ? AND "
                         "kind = 'debit'", (CANCEL, reference))  # fmt: skip
                row = self.row(reference, "cancel", player, dealer.stake, "", stamp,
                               state=PENDING)  # fmt: skip
                if isinstance(settled_debit, Cancelled):  # its cancel confirmed already
                    row = (*row[:9], CONFIRMED, 0)
                rows.append(row)
            if rows:
                tx.write(*tx.append_sql("wallet_outbox", ROW, rows))
            for reference, _ in cancels:
                settled_debit = by_reference[reference]
                if isinstance(settled_debit, Cancelled):
                    tx.write("UPDATE wallet_outbox SET wallet_at = ?, refunded = ?, attempts = 1 "
                             "WHERE reference = ? AND kind = 'cancel'",
                             (settled_debit.receipt.at, int(bool(settled_debit.receipt.refunded)),
                              reference))  # fmt: skip
            dealer._write(tx, batch, now)
        if any(row[9] == PENDING for row in rows):
            self.notify()

    def _confirm(self, tx: Tx, confirmed: dict[str, tuple[_Reserved, Confirmed]]) -> set[str]:
        """The confirmed debits marked so, those still *sent* (not cancelled as abandoned)."""
        if not confirmed:
            return set()
        values = []
        for reference, (_, outcome) in confirmed.items():
            values.append((reference, outcome.receipt.at, outcome.attempts))
        table, params = tx.rows_table(
            "q", [("reference", TEXT), ("at", TEXT), ("attempts", INT)], values
        )
        rows = tx.execute(
            f"{table}UPDATE wallet_outbox SET state = '{CONFIRMED}', wallet_at = q.at, "
            "attempts = q.attempts FROM q WHERE wallet_outbox.reference = q.reference AND "
            f"wallet_outbox.kind = 'debit' AND wallet_outbox.state = '{SENT}' "
            "RETURNING wallet_outbox.reference",
            params,
        )
        return {str(reference) for (reference,) in rows}

    @staticmethod
    def _refusal(outcome: Settled) -> BaseException:
        if isinstance(outcome, Refused):
            if outcome.kind == "insufficient_funds":
                return InsufficientFunds(outcome.message)
            if outcome.kind == "no_such_player":
                return NoSuchPlayer(outcome.message)
            return PlayUnavailable(f"the wallet refused the debit ({outcome.kind}): "
                                   f"{outcome.message}")  # fmt: skip
        if isinstance(outcome, Cancelled):
            return PlayUnavailable(
                "the wallet's answer to the debit was lost: it was cancelled, nothing taken; retry"
            )
        return PlayUnavailable(
            "the wallet did not answer the debit: its cancel is being sent, nothing dealt; retry"
        )

    # -- the outbox ---------------------------------------------------------------------------

    def send_due(self) -> int:
        """Send every call due (credits and cancels, and the cancels of abandoned debits):
        how many the wallet confirmed.  Its three steps, :meth:`claim_due`,
        :meth:`send_claimed` and :meth:`record`, each on its own: the service runs the
        second off the ledger's thread, which deals plays meanwhile."""
        with self._lock:  # one pass at a time in this process
            claimed = self.claim_due()
            if not claimed:
                return 0
            results = self.send_claimed(claimed)
            self.record(claimed, results)
            return sum(isinstance(r, Confirmed) for r in results)

    def claim_due(self) -> list[Claimed]:
        """The calls due, claimed for :data:`CLAIM_S` (the abandoned debits' cancels first
        written): the database only."""
        self._cancel_abandoned()
        return self._claim()

    def send_claimed(self, claimed: list[Claimed]) -> list[Outcome]:
        """The claimed calls sent at once (in batches if the wallet takes them), each until
        its outcome is known: the wallet only."""
        if not claimed:
            return []
        try:
            calls = [
                (kind, reference, player, amount) for reference, kind, player, amount, _ in claimed
            ]
            return list(self.wallet.credit_or_cancel_many(calls))
        except Exception as exc:  # a wallet that raised: no call's outcome is known
            return [*_unknown(exc, len(claimed))]

    def _cancel_abandoned(self) -> None:
        now = self.dealer.clock()
        cutoff = format_instant(now - dt.timedelta(seconds=ABANDONED_S))
        with self.db.transaction() as tx:  # lost in a crash: done again
            left = tx.execute(
                f"UPDATE wallet_outbox SET state = '{CANCEL}' WHERE kind = 'debit' AND "
                f"state = '{SENT}' AND created_at < ? RETURNING reference, player, amount_cents",
                (cutoff,),
            )
            at = format_instant(now)
            rows = [self.row(str(r), "cancel", str(p), int(a), "", at, state=PENDING)
                    for r, p, a in left]  # fmt: skip
            if rows:
                tx.write(*tx.append_sql("wallet_outbox", ROW, rows))
                log.warning("%d debits left unsettled by a stopped process: cancelling them",
                            len(rows))  # fmt: skip

    def _claim(self) -> list[Claimed]:
        """The calls due, held for :data:`CLAIM_S` (reference, kind, player, amount, attempts)."""
        now = int(time.time())
        with self.db.transaction() as tx:  # lost in a crash: done again
            due = tx.execute(
                f"SELECT reference, kind FROM wallet_outbox WHERE state = '{PENDING}' AND "
                f"next_at <= ? ORDER BY next_at LIMIT {SEND_MOST}" + tx.skip_locked,
                (now,),
            )
            if not due:
                return []
            table, params = tx.rows_table(
                "q", [("reference", TEXT), ("kind", TEXT)], [(str(r), str(k)) for r, k in due]
            )
            rows = tx.execute(
                f"{table}UPDATE wallet_outbox SET next_at = ? FROM q WHERE "
                "wallet_outbox.reference = q.reference AND wallet_outbox.kind = q.kind AND "
                f"wallet_outbox.state = '{PENDING}' RETURNING wallet_outbox.reference, "
                "wallet_outbox.kind, wallet_outbox.player, wallet_outbox.amount_cents, "
                "wallet_outbox.attempts",
                [*params, now + CLAIM_S],  # the rows table's first (PostgreSQL), as written
            )
        return [(str(r), str(k), str(p), int(a), int(n)) for r, k, p, a, n in rows]

    def record(self, claimed: list[Claimed], results: list[Outcome]) -> None:
        """Each claimed call's outcome written: confirmed, or due again after its backoff; in
        two statements whatever the count (a batch's rows as a table, as :meth:`_confirm`)."""
        now = int(time.time())
        confirmed, again = [], []
        for (reference, kind, player, _, attempts), outcome in zip(claimed, results, strict=True):
            tried = attempts + 1
            if isinstance(outcome, Confirmed):
                refunded = int(bool(outcome.receipt.refunded)) if kind == "cancel" else None
                confirmed.append((reference, kind, tried, outcome.receipt.at, refunded))
                continue
            why = outcome.reason if isinstance(outcome, Unknown) else outcome.kind
            if isinstance(outcome, Refused):  # cannot be for a call of ours: say it loudly
                log.error("the wallet refused the %s %s of %s (%s): %s; sent again later",
                          kind, reference, player, outcome.kind, outcome.message)  # fmt: skip
            again.append((reference, kind, tried, now + int(backoff_s(tried)), why[:200]))
        with self.db.transaction() as tx:  # lost in a crash: done again
            if confirmed:
                table, params = tx.rows_table("q", [("reference", TEXT), ("kind", TEXT),
                    ("attempts", INT), ("at", TEXT), ("refunded", INT)], confirmed)  # fmt: skip
                tx.write(
                    f"{table}UPDATE wallet_outbox SET state = '{CONFIRMED}', "
                    "attempts = q.attempts, wallet_at = q.at, refunded = q.refunded, "
                    "last_error = NULL FROM q WHERE wallet_outbox.reference = q.reference AND "
                    "wallet_outbox.kind = q.kind",
                    params,
                )
            if again:
                table, params = tx.rows_table("q", [("reference", TEXT), ("kind", TEXT),
                    ("attempts", INT), ("next_at", BIGINT), ("why", TEXT)], again)  # fmt: skip
                tx.write(
                    f"{table}UPDATE wallet_outbox SET attempts = q.attempts, "
                    "next_at = q.next_at, last_error = q.why FROM q WHERE "
                    "wallet_outbox.reference = q.reference AND wallet_outbox.kind = q.kind",
                    params,
                )

    def pending(self) -> int:
        """Calls not confirmed yet (credits and cancels pending, debits in flight)."""
        with self.db.snapshot() as tx:
            row = tx.one(
                f"SELECT COUNT(*) FROM wallet_outbox WHERE state IN ('{PENDING}', '{SENT}')"
            )
        return int(row[0]) if row else 0


def _unknown(exc: Exception, count: int) -> list[Unknown]:
    """``count`` calls whose outcome a wallet that raised ``exc`` left unknown."""
    return [Unknown(f"{type(exc).__name__}: {exc}", 1)] * count
