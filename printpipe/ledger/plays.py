"""The game server's transactions: deal a unit to a player, once, against the stake.

Plays go in batches (group commit, :mod:`printpipe.ledger.batch`), a batch in one durable
transaction (SQLite ``BEGIN IMMEDIATE``; PostgreSQL READ COMMITTED, its statements pipelined:
three round trips a batch whatever its size), so each play happens whole or not at all:

1. the requests' nonces are admitted (signed by the operator's platform; a replay is refused);
2. **the batch's players are locked**, in the order of their names (``SELECT ... ORDER BY id
   FOR UPDATE``): from here on no other transaction plays, debits or counts a stake for them;
3. each ``Idempotency-Key`` is looked up in ``plays`` (after the lock: a play committed under
   it meanwhile is found): a play already made under it is answered again as it was (same
   unit, nothing debited), another request under it is refused (422);
4. the daily stake limit: the player's row counts what it staked on its day
   (``stake_day``, ``staked_cents``), read under the lock and written in the same
   transaction, so no interleaving of batches on any number of workers exceeds the limit;
5. positions are taken from the blocks' **deal ranges** (``deal_ranges``, ranges of
   :data:`printpipe.ledger.units.DEAL_RANGE` positions), in the blocks' **dealing order**
   (``deal_orders.place``, recorded and MACed at each block's import: a block dealt out, the
   next one's ranges follow in the same batch; sold out only when the last block is): the
   first ranges nobody holds (``FOR UPDATE SKIP LOCKED``), so two workers' batches deal from
   two ranges at once and never wait on one shared cursor; a range whose block's place does
   not verify (its MAC, or not the place read at first) is not dealt from, and the server says
   so in its log; the position's leaf (:mod:`printpipe.ledger.deal`) is the unit
   dealt, and **its row must verify** (its MAC, made at import once its lot was checked
   against the committed leaf): a unit that does not is not dealt, its play refused (503,
   nothing debited) and the server says so in its log;
6. in the batch's order, each play: the wallet debits the stake (reference: the play's id),
   the unit's lot is credited, the play is written (``plays``: unique per unit, per position
   and per (player, key)) with its MAC, and its entry in the audit log
   (:mod:`printpipe.ledger.log`).

**The lock order**, the same in every transaction that touches players, deal ranges or units,
so that none waits on another in a circle: nonces (inserted), then players (by name), then deal
ranges (by their block's place in the dealing order, then start: a range another batch holds
is skipped, never waited for, except when every range left is held: then the batch waits only
for ranges after the last it holds),
then the rows it appends (plays, wallet entries, log entries), which no other play waits on.
Units are only read.  (``players add`` inserts a new player; the sealer locks only the log's
head; a deposit would lock its one player.)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from printpipe import french
from printpipe.commitment.inclusion import InclusionProof, TicketOpening
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.games.base import OnlineGame, stake_split
from printpipe.ledger.book import Ledger
from printpipe.ledger.core import Admission
from printpipe.ledger.deal import DealOrder
from printpipe.ledger.log import (
    PLAY_ACTION,
    PLAY_COLUMNS,
    BlockPlace,
    LogKey,
    PlayRecord,
    opening_reference,
    play_answer,
    registered_answer,
)
from printpipe.ledger.proofs import LoadedCommitment, checked_proof
from printpipe.ledger.rules import format_instant
from printpipe.ledger.store import Tx, ticket_of_key
from printpipe.ledger.store.schema import BIGINT, TEXT
from printpipe.ledger.tree import read_leaf_and_path, read_salt
from printpipe.ledger.units import deal_order_of
from printpipe.ledger.wallet import Accounts, DatabaseWallet, NoSuchPlayer, Wallet

log = logging.getLogger("printpipe.play")

PLAYER_SESSION = "session"
"""Who asked for a play in its log entry when no platform signed it: the player's session."""
PLAYER_RULE = "1 to 64 of A-Z a-z 0-9 . _ @ -"
LOGIN_TTL_S = 24 * 3600
SESSION_TTL_S = 12 * 3600
HISTORY_LIMIT = 100
_PLACE = "(SELECT place FROM deal_orders d WHERE d.commitment = deal_ranges.commitment)"
"""A deal range's block's place in the dealing order (in a statement on ``deal_ranges``)."""
RANGES_TAKEN = 3
"""Deal ranges a batch locks at first (skipping those others hold): a batch of up to 128 plays
finds its positions in them (the first may have few left), without a second round trip."""
CACHED_RANGES = 64
"""Deal ranges whose leaves a dealer keeps (a few batches' worth of ranges on each worker)."""
BAD_RANGE_RETRY_S = 60.0
"""How long a worker leaves aside a range whose next unit did not verify before trying again."""


class PlayRefused(PrintpipeError):
    """A play not made: nothing was debited or dealt.  ``status`` and ``kind`` for HTTP."""

    status = 409
    kind = "refused"


class SoldOut(PlayRefused):
    kind = "sold_out"


class DailyLimitReached(PlayRefused):
    status = 403
    kind = "daily_limit"


class KeyReused(PlayRefused):
    status = 422
    kind = "idempotency_key_reused"


class LoginRefused(PlayRefused):
    """A one-time login link that opens no session: ``kind`` says why (the page says it to the
    player: a link opened twice is told it was used)."""

    kind = "login_unknown"


class LoginUsed(LoginRefused):
    kind = "login_used"


class LoginExpired(LoginRefused):
    kind = "login_expired"


class PlayUnavailable(PlayRefused):
    """The play could not be dealt now (a unit whose row does not verify, or every range
    left held by other batches): nothing debited, retry."""

    status = 503
    kind = "unavailable"


class NoSuchPlay(PrintpipeError):
    """No play of that id for that player."""


def _login_refusal(tx: Tx, login_token: str, now: int) -> LoginRefused:
    """Why a login token opened no session: used already, expired, or unknown."""
    row = tx.one(
        "SELECT used_at, expires_at FROM player_logins WHERE token_hash = ?",
        (_hash_token(login_token),),
    )
    if row is None:
        return LoginRefused("this login link is unknown")
    if row[0] is not None:
        return LoginUsed("this login link was used already: a link opens one session")
    return LoginExpired("this login link has expired")


def check_player(name: str) -> str:
    """A player's name as given (``players add``, the API's path): refused if malformed."""
    if not (1 <= len(name) <= 64) or not all(
        c.isascii() and (c.isalnum() or c in "._@-") for c in name
    ):
        raise InvalidInput(f"a player's name is {PLAYER_RULE}")
    return name


@dataclass(frozen=True)
class Play:
    """One play, as recorded: who, which unit (its serial, block, place and symbols), the
    money."""

    id: str
    player: str
    serial: str
    commitment: int
    """Its block's commitment, by its id in the ledger."""
    block: int
    """Its block's number in the game (the commitment's, its proof's)."""
    position: int
    leaf: int
    stake_cents: int
    lot_eur: int
    balance_cents: int
    played_at: str
    symbols: bytes


@dataclass(frozen=True)
class PlayRequest:
    """What a play is asked with: the player, the Idempotency-Key and the request's
    fingerprint (an HMAC of its method, path and body), and a signed request's nonce."""

    player: str
    key: str
    fingerprint: bytes
    admission: Admission | None = None
    terminal: str | None = None
    """The platform terminal that signed the request; None: the player's own (demo) session."""


_PLAY_ROW = (*PLAY_COLUMNS.split(", "), "idempotency_key", "fingerprint", "day", "mac")
"""The columns of a play's row as a batch writes it."""
_PLAY_COLUMNS = (
    "p.id, p.player, p.unit, p.commitment, c.block, p.position, u.leaf, p.stake_cents, "
    "p.lot_cents, p.balance_cents, p.played_at, u.symbols"
)
_PLAYS_FROM = "plays p JOIN units u ON u.id = p.unit JOIN commitments c ON c.id = p.commitment"
"""What :data:`_PLAY_COLUMNS` are read from (``p``: the plays)."""


def _play_of(row: tuple[Any, ...]) -> Play:
    (play_id, player, unit, commitment, block, position, leaf, stake, lot, balance, at,
     symbols) = row  # fmt: skip
    return Play(
        str(play_id),
        str(player),
        ticket_of_key(int(unit)).serial,
        int(commitment),
        int(block),
        int(position),
        int(leaf),
        int(stake),
        int(lot) // 100,
        int(balance),
        str(at),
        bytes(symbols),
    )


@dataclass
class _Range:
    """A deal range a batch holds: its block, start, next position and end, and its block's
    place in the dealing order."""

    commitment: int
    start: int
    next: int
    end: int
    place: int | None
    used: int = 0
    stopped: bool = False
    """Its next unit, or its block's place, did not verify: nothing more is dealt from it in
    this batch."""
    checked: bool = False
    """Its block's place was checked (:meth:`Dealer._check_places`)."""

    @property
    def left(self) -> int:
        return 0 if self.stopped else self.end - self.next - self.used


def _range_of(row: tuple[Any, ...]) -> _Range:
    commitment, start, next_position, end, place = row
    return _Range(int(commitment), int(start), int(next_position), int(end),
                  None if place is None else int(place))  # fmt: skip


@dataclass
class _Batch:
    """One batch's state while it is decided: outcomes by request, the players' stake counters
    (day, cents) as locked, the rows to append."""

    outcomes: list[Any]
    stakes: dict[str, list[Any]]
    ranges: list[_Range] = field(default_factory=list)
    plays: list[tuple[Any, ...]] = field(default_factory=list)
    entries: list[tuple[str, str, str, str | None, str, str | None]] = field(default_factory=list)
    play_ids: dict[int, str] = field(default_factory=dict)
    """Requests whose play id was drawn before the deal (its debit settled under it first)."""


def _hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def send_player_locks(tx: Tx, names: Sequence[str]) -> Callable[[], list[tuple[Any, ...]]]:
    """Lock the batch's players in the order of their names, the first lock of every
    transaction on players, deal ranges and units (the one lock order: no two batches
    deadlock); their ``(id, stake_day, staked_cents)`` read later (:meth:`Tx.send`)."""
    among, params = tx.any_of("id", TEXT, names)
    return tx.send(
        f"SELECT id, stake_day, staked_cents FROM players WHERE {among} ORDER BY id" + tx.lock_rows,
        params,
    )


class Dealer:
    """The game server over an open ledger (its database and key): plays, history, proofs,
    players and their demo sessions."""

    def __init__(
        self,
        ledger: Ledger,
        game: OnlineGame,
        *,
        wallet: Wallet | None = None,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        self.ledger = ledger
        self.db = ledger.db
        self.game = game
        self.key: LogKey = ledger._log_key()
        self.clock = clock or ledger.clock
        self.wallet: Wallet | DatabaseWallet = wallet or DatabaseWallet(self.key)
        self.stake = game.offer_price_cents
        self.split = stake_split(game)
        self.jackpot: int | None = dict(self.split).get(game.linked_game, 0)
        """The linked game's share of each stake, recorded with each play."""
        self.outbox: Any = None
        """The calls to a wallet outside the ledger: ``printpipe.ledger.outbox.Outbox``, which
        attaches itself (``with_outbox``: it reads this module's steps)."""
        self._orders: dict[int, tuple[DealOrder, LoadedCommitment]] = {}
        self._places: dict[int, int] = {}
        """Each block's place in the dealing order, once its MAC verified, by commitment."""
        self._bad_ranges: dict[tuple[int, int], float] = {}
        """Ranges whose next unit did not verify, and until when (monotonic) they are left."""
        self._bad_blocks: dict[int, float] = {}
        """Blocks whose place in the dealing order did not verify, and until when they are
        left."""
        self._leaves: dict[tuple[int, int], list[int]] = {}
        """The leaves of the ranges dealt lately, by (block, start): :meth:`_range_leaves`."""

    # -- the deal order of each block ----------------------------------------------------------

    def _order(self, tx: Tx, commitment: int) -> tuple[DealOrder, LoadedCommitment]:
        known = self._orders.get(commitment)
        if known is None:
            loaded = self.ledger.commitments.by_id(tx, commitment)
            known = (deal_order_of(loaded, self.ledger._require_key()), loaded)
            self._orders[commitment] = known
        return known

    def _place(self, tx: Tx, commitment: int) -> int | None:
        """A block's place in the dealing order, read once and checked against its MAC (None:
        it does not verify: the block is not dealt)."""
        known = self._places.get(commitment)
        if known is None:
            row = tx.one(
                "SELECT units, order_mac, place, mac FROM deal_orders WHERE commitment = ?",
                (commitment,),
            )
            if row is None or row[2] is None:
                return None
            place = BlockPlace(commitment, int(row[0]), str(row[1]), int(row[2]))
            if not self.key.macs_verify(row[3], self.key.block_place_mac(place)):
                return None
            known = self._places[commitment] = place.place
        return known

    def _check_places(self, tx: Tx, batch: _Batch) -> None:
        """The ranges newly held whose block's place does not verify (or is not the place
        read at first): stopped, their block left aside a while, and said in the log."""
        for held in batch.ranges:
            if held.checked:
                continue
            held.checked = True
            if held.place is not None and held.place == self._place(tx, held.commitment):
                continue
            held.stopped = True
            if held.commitment in self._bad_blocks:
                continue
            self._bad_blocks[held.commitment] = time.monotonic() + BAD_RANGE_RETRY_S
            _, loaded = self._order(tx, held.commitment)
            log.error(
                "refused to deal from %s: its place in the dealing order (%s) does not verify: "
                "a database writer changed it; restore it from a backup",
                loaded.name, held.place,
            )  # fmt: skip

    # -- a play --------------------------------------------------------------------------------

    def play(
        self, *, player: str, key: str, fingerprint: bytes, admission: Admission | None = None
    ) -> tuple[Play, bool]:
        """Deal one unit to ``player`` against the stake; (the play, whether it is a replay
        of the one made earlier under ``key``)."""
        (outcome,) = self.play_batch([PlayRequest(player, key, fingerprint, admission)])
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def play_batch(
        self, requests: Sequence[PlayRequest]
    ) -> list[tuple[Play, bool] | BaseException]:
        """Several plays in one durable transaction (group commit: one disk flush for all),
        decided in their order (the module's steps); each outcome is a play (and whether it
        is an earlier one answered again) or the exception that refused it alone, having
        changed nothing; a failure of the database itself raises (then none of them
        happened).  With a wallet outside the ledger, the three steps of
        :mod:`printpipe.ledger.outbox` (the debits settled first)."""
        if self.outbox is not None:
            return self.outbox.play_batch(requests)
        if not isinstance(self.wallet, DatabaseWallet):
            raise PrintpipeError("a wallet outside the ledger plays through its outbox")
        now = self.clock()
        stamp = format_instant(now)
        with self.db.transaction(durable=True, pipelined=True) as tx:
            tx.by_keys_only()
            admitted = self.ledger._admit_later(tx, [r.admission for r in requests])
            names = sorted({r.player for r in requests})
            locked = send_player_locks(tx, names)
            earlier = self._send_earlier(tx, requests)
            accounts = self.wallet.accounts(tx, names)
            ranges = self._send_claim(tx, after=None, most=RANGES_TAKEN, wait=False)
            batch = _Batch(
                outcomes=list(admitted()),
                stakes={str(n): [d, int(c)] for n, d, c in locked()},
            )
            found = {(row[1], row[-2]): row for row in earlier()}
            candidates = self._admit_plays(requests, batch, found, now)
            batch.ranges = [_range_of(row) for row in ranges()]
            self._deal(tx, requests, candidates, batch, accounts, stamp)
            accounts.finish()
            self._write(tx, batch, now)
        return batch.outcomes

    def _send_earlier(
        self, tx: Tx, requests: Sequence[PlayRequest]
    ) -> Callable[[], list[tuple[Any, ...]]]:
        """Step 3's statement: the plays made under the requests' keys (sent now)."""
        pairs = sorted({(r.player, r.key) for r in requests})
        table, params = tx.rows_table("q", [("player", TEXT), ("key", TEXT)], pairs)
        return tx.send(  # each pair one search of the (player, key) index
            f"{table}SELECT {_PLAY_COLUMNS}, p.idempotency_key, p.fingerprint FROM q "
            "JOIN plays p ON p.player = q.player AND p.idempotency_key = q.key "
            "JOIN units u ON u.id = p.unit JOIN commitments c ON c.id = p.commitment",
            params,
        )

    def _admit_plays(
        self, requests: Sequence[PlayRequest], batch: _Batch, found: dict[Any, Any],
        now: dt.datetime,
    ) -> list[int]:  # fmt: skip
        """Steps 3 and 4: the requests that go on to be dealt (their indexes), the others'
        outcomes set: refused, or answered with the play made earlier under their key.  A
        request repeating one of the same batch is answered with that one's outcome."""
        day = now.date().isoformat()
        limit = self.ledger.settings.daily_stake_limit_eur * 100
        staked = {
            name: (int(cents) if stake_day == day else 0)
            for name, (stake_day, cents) in batch.stakes.items()
        }
        first: dict[tuple[str, str], int] = {}
        candidates = []
        for index, request in enumerate(requests):
            if batch.outcomes[index] is not None:  # a refused nonce
                continue
            pair = (request.player, request.key)
            prior = found.get(pair)
            if prior is not None:
                if bytes(prior[-1]) != request.fingerprint:
                    batch.outcomes[index] = KeyReused(
                        "this Idempotency-Key was used for another request"
                    )
                else:
                    batch.outcomes[index] = (_play_of(prior[:-2]), True)
                continue
            if pair in first:
                batch.outcomes[index] = ("same", first[pair])  # settled once it is dealt
                continue
            if request.player not in staked:
                batch.outcomes[index] = NoSuchPlayer(f"no player {request.player!r}")
                continue
            if staked[request.player] + self.stake > limit:
                batch.outcomes[index] = DailyLimitReached(
                    f"daily stake limit reached: {french.eur(staked[request.player])} staked "
                    f"today, the limit is {french.eur(limit)}"
                )
                continue
            staked[request.player] += self.stake  # counted as if it were dealt: never over
            first[pair] = index
            candidates.append(index)
        return candidates

    def _send_claim(
        self, tx: Tx, *, after: tuple[int, int] | None, most: int, wait: bool
    ) -> Callable[[], list[tuple[Any, ...]]]:
        """Lock deal ranges after ``after`` (their block's place in the dealing order, start),
        in that order: the first ``most`` no other batch holds, or (``wait``) the first,
        waiting for it.  One block at a time, through the ranges' key (commitment, start): the
        block at ``after``'s place (none: the first place holding ranges), then, while short,
        the next places'.  (Places are read by subqueries: a join would lock the blocks' rows
        too; ordering every range by its block's place scanned and sorted them all a batch.)"""
        excluded, excluded_params = self._claim_exclusions()
        lock = tx.lock_rows if wait else tx.skip_locked

        def claim_in(block: str, block_params: list[Any], start_after: int, wanted: int) -> Any:
            return tx.send(
                f"SELECT commitment, start, next_position, end_position, {_PLACE} FROM "
                f"deal_ranges WHERE commitment = {block} AND start > ?{excluded} "
                f"ORDER BY start LIMIT {int(wanted)}" + lock,
                [*block_params, start_after, *excluded_params],
            )

        if after is None:
            first_place = (
                "(SELECT MIN(o.place) FROM deal_orders o WHERE EXISTS "
                "(SELECT 1 FROM deal_ranges r WHERE r.commitment = o.commitment))"
            )
            sent = claim_in(
                f"(SELECT commitment FROM deal_orders WHERE place = {first_place})", [], -1, most
            )
        else:
            sent = claim_in(
                "(SELECT commitment FROM deal_orders WHERE place = ?)", [after[0]], after[1], most
            )

        def rows() -> list[tuple[Any, ...]]:
            found = list(sent())
            if len(found) >= most:
                return found
            place = found[-1][4] if found else (after[0] if after is not None else 0)
            later = tx.execute(
                "SELECT commitment FROM deal_orders WHERE place > ? ORDER BY place", (place,)
            )
            for (commitment,) in later:
                found += claim_in("?", [commitment], -1, most - len(found))()
                if len(found) >= most:
                    break
            return found

        return rows

    def _claim_exclusions(self) -> tuple[str, list[Any]]:
        """The conditions (each after ``AND``) leaving out the ranges and blocks set aside a
        while (a unit or a place that did not verify), and their parameters."""
        now = time.monotonic()
        conditions, params = "", []
        for (commitment, start), until in list(self._bad_ranges.items()):
            if until < now:
                del self._bad_ranges[(commitment, start)]
                continue
            conditions += " AND NOT (commitment = ? AND start = ?)"
            params += [commitment, start]
        for commitment, until in list(self._bad_blocks.items()):
            if until < now:
                del self._bad_blocks[commitment]
                continue
            conditions += " AND commitment <> ?"
            params.append(commitment)
        return conditions, params

    def _more_ranges(self, tx: Tx, batch: _Batch) -> bool:
        """Lock more ranges, after those held (the lock order); whether any was found."""
        held = max(((r.place or 0, r.start) for r in batch.ranges), default=None)
        rows = self._send_claim(tx, after=held, most=RANGES_TAKEN, wait=False)()
        if not rows:
            rows = self._send_claim(tx, after=held, most=1, wait=True)()
        batch.ranges += [_range_of(row) for row in rows]
        return bool(rows)

    def _positions(self, tx: Tx, batch: _Batch, wanted: int) -> list[tuple[_Range, int]]:
        """Up to ``wanted`` positions from the ranges held, in order (more ranges locked if
        those held fall short): (range, position)."""
        taken: list[tuple[_Range, int]] = []
        while True:
            self._check_places(tx, batch)
            for held in batch.ranges:
                reserved = sum(1 for r, _ in taken if r is held)
                while held.left - reserved > 0 and len(taken) < wanted:
                    taken.append((held, held.next + held.used + reserved))
                    reserved += 1
            if len(taken) >= wanted or not self._more_ranges(tx, batch):
                return taken

    def _units(
        self, tx: Tx, positions: list[tuple[_Range, int]]
    ) -> list[tuple[int, int, int, bytes, bool]]:
        """The unit at each position: (id, leaf, lot in EUR, symbols, whether its row
        verifies), read in one statement."""
        leaves: list[tuple[int, int]] = []
        by_block: dict[int, list[int]] = {}
        for held, position in positions:
            by_block.setdefault(held.commitment, []).append(position)
        leaves = [(held.commitment, self._range_leaves(tx, held)[p - held.start])
                  for held, p in positions]  # fmt: skip
        conditions, params = [], []
        for commitment in sorted(by_block):
            among, values = tx.any_of(
                "leaf", BIGINT, sorted({f for c, f in leaves if c == commitment})
            )
            conditions.append(f"(commitment = ? AND {among})")
            params += [commitment, *values]
        rows = {
            (int(c), int(leaf)): (int(unit), int(prize), bytes(symbols), mac)
            for c, leaf, unit, prize, symbols, mac in tx.execute(
                "SELECT commitment, leaf, id, prize_eur, symbols, mac FROM units WHERE "
                + " OR ".join(conditions),
                params,
            )
        }
        units = []
        for commitment, leaf in leaves:
            row = rows.get((commitment, leaf))
            if row is None:
                units.append((0, leaf, 0, b"", False))
                continue
            unit, prize, symbols, mac = row
            expected = self.key.unit_mac(unit, commitment, leaf, prize, symbols)
            good = mac is not None and hmac.compare_digest(bytes(mac), expected)
            units.append((unit, leaf, prize, symbols, good))
        return units

    def _range_leaves(self, tx: Tx, held: _Range) -> list[int]:
        """The leaf dealt at each position of a deal range, from its start: the deal order
        computed once a range (its cost is numpy's per call, whatever the positions asked,
        and a range is dealt over many batches)."""
        leaves = self._leaves.get((held.commitment, held.start))
        if leaves is None:
            order, _ = self._order(tx, held.commitment)
            leaves = order.leaves(np.arange(held.start, held.end)).tolist()
            if len(self._leaves) >= CACHED_RANGES:
                self._leaves.clear()
            self._leaves[(held.commitment, held.start)] = leaves
        return leaves

    def _deal(
        self, tx: Tx, requests: Sequence[PlayRequest], candidates: list[int], batch: _Batch,
        accounts: Accounts, stamp: str,
    ) -> None:  # fmt: skip
        """Steps 5 and 6, in the batch's order: each candidate dealt the next position's
        unit, debited and credited, or refused (nothing debited, its position left to the
        next play)."""
        day = stamp[:10]
        pending = list(candidates)
        while pending:
            positions = self._positions(tx, batch, len(pending))
            if not positions:
                self._refuse_unplaced(tx, batch, pending)
                return
            units = self._units(tx, positions)
            at = 0  # the next position of ``positions`` to deal
            while pending and at < len(positions):
                index = pending[0]
                held, position = positions[at]
                if held.stopped:
                    at += 1
                    continue
                request = requests[index]
                unit, leaf, prize, symbols, good = units[at]
                if not good:
                    self._refuse_unit(batch, held, position, unit, leaf, prize, index)
                    pending.pop(0)
                    at += 1
                    continue
                play_id = batch.play_ids.get(index) or secrets.token_hex(16)
                try:
                    balance = accounts.debit(player=request.player, amount_cents=self.stake,
                                             reference=play_id, at=stamp)  # fmt: skip
                except PrintpipeError as exc:  # InsufficientFunds: the position stays free
                    batch.outcomes[index] = exc
                    pending.pop(0)
                    continue
                if prize:
                    balance = accounts.credit(player=request.player, amount_cents=prize * 100,
                                              reference=play_id, at=stamp)  # fmt: skip
                held.used += 1
                at += 1
                stake_state = batch.stakes[request.player]
                if stake_state[0] != day:
                    stake_state[:] = [day, 0]
                stake_state[1] += self.stake
                self._record(request, batch, held.commitment, position, unit, leaf, prize,
                             symbols, balance, play_id, stamp, index)  # fmt: skip
                pending.pop(0)

    def _refuse_unit(
        self, batch: _Batch, held: _Range, position: int, unit: int, leaf: int, prize: int,
        index: int,
    ) -> None:  # fmt: skip
        """A unit whose row does not verify: not dealt, nor anything after it in its range
        (its position stays next), its play refused; the range left aside for a while."""
        held.stopped = True
        self._bad_ranges[(held.commitment, held.start)] = time.monotonic() + BAD_RANGE_RETRY_S
        _, loaded = self._orders[held.commitment]
        what = ticket_of_key(unit).serial if unit else f"leaf {leaf}"
        log.error(
            "refused to deal %s of %s at position %d: its row does not verify (lot %d EUR): "
            "a database writer changed it; restore it from the manifest",
            what, loaded.name, position, prize,
        )  # fmt: skip
        batch.outcomes[index] = PlayUnavailable(
            "the next unit to deal does not verify against its commitment: not dealt, nothing "
            "debited; retry"
        )

    def _refuse_unplaced(self, tx: Tx, batch: _Batch, pending: list[int]) -> None:
        """Plays left with no position: sold out, unless ranges are still held by others (or
        left aside): then retry."""
        left = tx.one("SELECT COUNT(*) FROM deal_ranges")
        held = sum(1 for r in batch.ranges if not r.stopped)
        for index in pending:
            if left is not None and int(left[0]) > held:
                batch.outcomes[index] = PlayUnavailable(
                    "every unit left is being dealt or held back: retry"
                )
            else:
                batch.outcomes[index] = SoldOut(
                    f"sold out: every unit of {self.game.definition.id} has been dealt"
                )

    def _record(
        self, request: PlayRequest, batch: _Batch, commitment: int, position: int, unit: int,
        leaf: int, prize: int, symbols: bytes, balance: int, play_id: str, stamp: str,
        index: int,
    ) -> None:  # fmt: skip
        record = PlayRecord(play_id, request.player, unit, commitment, position, self.stake,
                            prize * 100, balance, stamp, self.jackpot)  # fmt: skip
        batch.plays.append((play_id, request.player, unit, commitment, position, self.stake,
                            prize * 100, balance, stamp, self.jackpot, request.key,
                            request.fingerprint, stamp[:10],
                            self.key.play_mac(record)))  # fmt: skip
        asked = request.admission.request if request.admission else None
        batch.entries.append((request.terminal or PLAYER_SESSION, PLAY_ACTION, request.player,
                              ticket_of_key(unit).serial, play_answer(record), asked))  # fmt: skip
        batch.outcomes[index] = (
            Play(play_id, request.player, ticket_of_key(unit).serial, commitment,
                 self._orders[commitment][1].commitment.block, position, leaf, self.stake, prize,
                 balance, stamp, symbols),
            False,
        )  # fmt: skip

    def _write(self, tx: Tx, batch: _Batch, now: dt.datetime) -> None:
        """The batch's rows, appended (plays, log entries), and the ranges and counters moved
        (pipelined: sent with the commit)."""
        for index, outcome in enumerate(batch.outcomes):  # the repeats of a play of the batch
            if isinstance(outcome, tuple) and outcome[0] == "same":
                made = batch.outcomes[outcome[1]]
                batch.outcomes[index] = (made[0], True) if isinstance(made, tuple) else made
        for held in batch.ranges:
            if not held.used:
                continue
            if held.next + held.used == held.end:
                tx.write("DELETE FROM deal_ranges WHERE commitment = ? AND start = ?",
                         (held.commitment, held.start))  # fmt: skip
            else:
                tx.write(
                    "UPDATE deal_ranges SET next_position = ? WHERE commitment = ? AND start = ?",
                    (held.next + held.used, held.commitment, held.start),
                )
        if not batch.plays:
            return
        players = sorted({row[1] for row in batch.plays})
        table, params = tx.rows_table(
            "q", [("id", TEXT), ("day", TEXT), ("staked", BIGINT)],
            [(p, *batch.stakes[p]) for p in players],
        )  # fmt: skip
        among, more = tx.any_of("players.id", TEXT, players)
        tx.write(
            table + "UPDATE players SET stake_day = q.day, staked_cents = q.staked FROM q "
            f"WHERE players.id = q.id AND {among}",
            params + more,
        )
        tx.write(*tx.append_sql("plays", _PLAY_ROW, batch.plays))
        self.ledger._log_many(tx, batch.entries, at=now)

    # -- what a player sees again --------------------------------------------------------------

    def history(self, *, player: str, limit: int = HISTORY_LIMIT) -> list[Play]:
        with self.db.snapshot() as tx:
            rows = tx.execute(
                f"SELECT {_PLAY_COLUMNS} FROM {_PLAYS_FROM} "
                "WHERE p.player = ? ORDER BY p.commitment DESC, p.position DESC LIMIT ?",
                (player, limit),
            )
        return [_play_of(row) for row in rows]

    def one_play(self, *, player: str, play_id: str) -> Play:
        with self.db.snapshot() as tx:
            row = tx.one(
                f"SELECT {_PLAY_COLUMNS} FROM {_PLAYS_FROM} WHERE p.player = ? AND p.id = ?",
                (player, play_id),
            )
        if row is None:
            raise NoSuchPlay(f"no play {play_id} of {player}")
        return _play_of(row)

    def account(self, *, player: str) -> dict[str, Any]:
        day = self.clock().date().isoformat()
        if isinstance(self.wallet, DatabaseWallet):
            balance = None
        else:  # the operator's: asked outside any transaction
            try:
                balance = self.wallet.balance(player=player)
            except PrintpipeError as exc:
                raise PlayUnavailable(f"the operator's wallet: {exc}") from None
        with self.db.snapshot() as tx:
            if balance is None:
                balance = DatabaseWallet(self.key).balance_in(tx, player=player)
            staked = tx.one(
                "SELECT staked_cents FROM players WHERE id = ? AND stake_day = ?", (player, day)
            )
            left = tx.one("SELECT COALESCE(SUM(end_position - next_position), 0) FROM deal_ranges")
        return {
            "player": player,
            "balance_cents": balance,
            "stake_cents": self.stake,
            "daily_stake_limit_cents": self.ledger.settings.daily_stake_limit_eur * 100,
            "staked_today_cents": int(staked[0]) if staked else 0,
            "units_left": int(left[0]) if left else 0,
        }

    def proof(self, *, player: str, play_id: str) -> InclusionProof:
        """The inclusion proof of a play's unit against its block's commitment, made from the
        ledger's tree and checked against the committed root before it is given."""
        play = self.one_play(player=player, play_id=play_id)
        with self.db.snapshot() as tx:
            _, loaded = self._order(tx, play.commitment)
            commitment = loaded.commitment
            salt = read_salt(
                tx,
                commitment=loaded.id,
                index=play.leaf,
                key=self.ledger._require_key(),
                salt_nonce=loaded.salt_nonce,
            )
            own, path = read_leaf_and_path(
                tx, commitment=loaded.id, index=play.leaf, size=commitment.tickets
            )
        opening = TicketOpening(serial=play.serial, prize_eur=play.lot_eur, virn=None, salt=salt)
        return checked_proof(loaded, opening, index=play.leaf, stored_leaf=own, path=path,
                             what=f"unit {play.serial}")  # fmt: skip

    def published_commitments(self) -> list[dict[str, Any]]:
        with self.db.snapshot() as tx:
            rows = tx.execute(
                "SELECT c.document FROM commitments c JOIN deal_orders d ON d.commitment = c.id "
                "ORDER BY c.id"
            )
        return [json.loads(document) for (document,) in rows]

    # -- players and their demo logins ---------------------------------------------------------

    def add_player(self, *, player: str, balance_cents: int, by: str) -> str:
        """Register a player with an opening balance; returns a one-time login token."""
        check_player(player)
        if balance_cents < 0:
            raise InvalidInput("a balance is at least 0")
        now = self.clock()
        stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        token = secrets.token_urlsafe(32)
        with self.db.transaction(durable=True) as tx:
            created = tx.one(
                "INSERT INTO players (id, balance_cents, added_at) VALUES (?, 0, ?) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                (player, stamp),
            )
            if created is None:
                raise PrintpipeError(f"player {player} exists already")
            if balance_cents:
                DatabaseWallet(self.key).deposit(
                    tx,
                    player=player,
                    amount_cents=balance_cents,
                    reference=opening_reference(player),
                    at=stamp,
                )
            tx.execute(
                "INSERT INTO player_logins (token_hash, player, expires_at) VALUES (?, ?, ?)",
                (_hash_token(token), player, int(now.timestamp()) + LOGIN_TTL_S),
            )
            self.ledger._log(tx, by, "player", player, None, registered_answer(balance_cents))
        return token

    def start_session(self, *, login_token: str) -> tuple[str, str]:
        """Spend a one-time login token: (a new session token, the player)."""
        now = int(self.clock().timestamp())
        session = secrets.token_urlsafe(32)
        with self.db.transaction() as tx:
            row = tx.one(
                "UPDATE player_logins SET used_at = ? "
                "WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING player",
                (now, _hash_token(login_token), now),
            )
            if row is None:
                raise _login_refusal(tx, login_token, now)
            tx.execute(
                "INSERT INTO player_sessions (token_hash, player, expires_at) VALUES (?, ?, ?)",
                (_hash_token(session), row[0], now + SESSION_TTL_S),
            )
        return session, str(row[0])

    def session_player(self, session: str) -> str | None:
        now = int(self.clock().timestamp())
        with self.db.snapshot() as tx:
            row = tx.one(
                "SELECT player FROM player_sessions WHERE token_hash = ? AND expires_at > ?",
                (_hash_token(session), now),
            )
        return str(row[0]) if row else None

    def end_session(self, session: str) -> None:
        with self.db.transaction() as tx:
            tx.execute("DELETE FROM player_sessions WHERE token_hash = ?", (_hash_token(session),))
