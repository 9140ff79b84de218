"""The game server's transactions: deal a unit to a player, once, against the stake.

A play is one transaction of the ledger's database (SQLite ``BEGIN IMMEDIATE``; PostgreSQL
READ COMMITTED), so it happens whole or not at all, whatever crashes:

1. the request's nonce is admitted (a signed request from the operator's platform; a replay
   rolls everything back);
2. the ``Idempotency-Key`` is looked up in ``plays``: a play already made under it is answered
   again as it was (same unit, nothing debited), another request under it is refused (422);
3. the daily stake limit is checked (``daily_stake_limit_eur``, ``ledger config``);
4. the wallet debits the stake (reference: the play's id);
5. the deal cursor of the first block not sold out moves one position on
   (``UPDATE deal_orders SET next_position = next_position + 1 WHERE ... AND next_position <
   units RETURNING``: one statement that checks and moves, so two plays never get one
   position), and the position's leaf (:mod:`printpipe.ledger.deal`) is the unit dealt;
6. the wallet credits the unit's lot; the play is written (``plays``: unique per unit, per
   position and per (player, key): the database itself refuses a second deal of a unit), and
   its entry in the audit log, which binds the row once sealed (``printpipe.ledger.log``).

Two requests with one key at once: the second waits on the player's row, then its insert
meets the first's key and is rolled back whole; it is run again and answers the first's play.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from printpipe.commitment.inclusion import InclusionProof, TicketOpening, make_proof
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.games.base import OnlineGame
from printpipe.ledger.book import Ledger
from printpipe.ledger.core import Admission, RequestRefused
from printpipe.ledger.deal import DEAL_PURPOSE, DealOrder, deal_key
from printpipe.ledger.log import PLAY_ACTION, PLAY_COLUMNS, PlayRecord, play_answer
from printpipe.ledger.proofs import LoadedCommitment
from printpipe.ledger.store import Tx, ticket_of_key
from printpipe.ledger.tree import read_leaf_and_path, read_salt
from printpipe.ledger.wallet import DatabaseWallet, Wallet
from printpipe.merkle import leaf_hash, root_from_audit_path

PLAYER_SESSION = "session"
"""Who asked for a play in its log entry when no platform signed it: the player's session."""
PLAYER_RULE = "1 to 64 of A-Z a-z 0-9 . _ @ -"
LOGIN_TTL_S = 24 * 3600
SESSION_TTL_S = 12 * 3600
HISTORY_LIMIT = 100


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
    """One play, as recorded: who, which unit (its serial, place and symbols), the money."""

    id: str
    player: str
    serial: str
    commitment: int
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


_PLAY_COLUMNS = (
    "p.id, p.player, p.unit, p.commitment, p.position, u.leaf, p.stake_cents, u.prize_eur, "
    "p.balance_cents, p.played_at, u.symbols"
)


def _play_of(row: tuple[Any, ...]) -> Play:
    (play_id, player, unit, commitment, position, leaf, stake, prize, balance, at, symbols) = row
    return Play(
        str(play_id),
        str(player),
        ticket_of_key(int(unit)).serial,
        int(commitment),
        int(position),
        int(leaf),
        int(stake),
        int(prize),
        int(balance),
        str(at),
        bytes(symbols),
    )


def _unique_violations() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
    try:
        from psycopg.errors import UniqueViolation

        errors += (UniqueViolation,)
    except ImportError:  # pragma: no cover - installed without PostgreSQL support
        pass
    return errors


def _hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


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
        self.wallet: Wallet = wallet or DatabaseWallet()
        self.clock = clock or ledger.clock
        self.stake = game.offer_price_cents
        self._orders: dict[int, tuple[DealOrder, LoadedCommitment]] = {}
        self._unique = _unique_violations()

    # -- the deal order of each block ----------------------------------------------------------

    def _order(self, tx: Tx, commitment: int) -> tuple[DealOrder, LoadedCommitment]:
        known = self._orders.get(commitment)
        if known is None:
            loaded = self.ledger.commitments.by_id(tx, commitment)
            key = deal_key(self.ledger._require_key().derive(DEAL_PURPOSE), loaded.commitment.root)
            known = (DealOrder(key, loaded.commitment.tickets), loaded)
            self._orders[commitment] = known
        return known

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

    def play_batch(self, requests: list[PlayRequest]) -> list[tuple[Play, bool] | BaseException]:
        """Several plays in one durable transaction (group commit: one disk flush for all),
        each in its own savepoint, so that a refused play changes nothing and the others stand.
        Each outcome is a play or the exception that refused it; a failure of the database
        itself raises (then none of them happened)."""
        now = self.clock()
        outcomes: list[tuple[Play, bool] | BaseException] = []
        with self.db.transaction(durable=True) as tx:
            for request in requests:
                for attempt in range(2):
                    tx.execute("SAVEPOINT play")
                    try:
                        outcome: tuple[Play, bool] | BaseException = self._play(
                            tx, request, now, admit=attempt == 0
                        )
                    except self._unique:
                        # PostgreSQL: another worker's play under this key committed first;
                        # run again, it is found and answered (never on the second attempt)
                        tx.execute("ROLLBACK TO SAVEPOINT play")
                        if attempt:
                            raise
                        continue
                    except (PrintpipeError, RequestRefused) as exc:
                        tx.execute("ROLLBACK TO SAVEPOINT play")
                        outcome = exc
                    else:
                        tx.execute("RELEASE SAVEPOINT play")
                    outcomes.append(outcome)
                    break
        return outcomes

    def _play(
        self, tx: Tx, request: PlayRequest, now: dt.datetime, *, admit: bool
    ) -> tuple[Play, bool]:
        player, key, fingerprint = request.player, request.key, request.fingerprint
        stamp, day = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), now.date().isoformat()
        if admit:
            self.ledger._admit(tx, request.admission)
        earlier = tx.one(
            f"SELECT {_PLAY_COLUMNS}, p.fingerprint FROM plays p "
            "JOIN units u ON u.id = p.unit WHERE p.player = ? AND p.idempotency_key = ?",
            (player, key),
        )
        if earlier is not None:
            if bytes(earlier[-1]) != fingerprint:
                raise KeyReused("this Idempotency-Key was used for another request")
            return _play_of(earlier[:-1]), True
        self.wallet.balance(tx, player=player)  # NoSuchPlayer
        staked = tx.one(
            "SELECT COALESCE(SUM(stake_cents), 0) FROM plays WHERE player = ? AND day = ?",
            (player, day),
        )
        limit = self.ledger.settings.daily_stake_limit_eur * 100
        if staked is not None and int(staked[0]) + self.stake > limit:
            raise DailyLimitReached(
                f"daily stake limit reached: {int(staked[0]) / 100:.2f} EUR staked today, "
                f"the limit is {limit / 100:.2f} EUR"
            )
        play_id = secrets.token_hex(16)
        self.wallet.debit(tx, player=player, amount_cents=self.stake, reference=play_id)
        commitment, position = self._next_position(tx)
        order, loaded = self._order(tx, commitment)
        leaf = order.leaf(position)
        unit = tx.one(
            "SELECT id, prize_eur, symbols FROM units WHERE commitment = ? AND leaf = ?",
            (commitment, leaf),
        )
        if unit is None:
            raise PrintpipeError(f"the ledger holds no unit at leaf {leaf} of {loaded.name}")
        unit_id, prize, symbols = int(unit[0]), int(unit[1]), bytes(unit[2])
        balance = self.wallet.balance(tx, player=player)
        if prize:
            balance = self.wallet.credit(
                tx, player=player, amount_cents=prize * 100, reference=play_id
            )
        record = PlayRecord(play_id, player, unit_id, commitment, position, self.stake,
                            prize * 100, balance, stamp)  # fmt: skip
        row = (*dataclasses.astuple(record), key, fingerprint, day)
        tx.execute(
            f"INSERT INTO plays ({PLAY_COLUMNS}, idempotency_key, fingerprint, day) "
            f"VALUES ({', '.join('?' * len(row))})",
            row,
        )
        serial = ticket_of_key(unit_id).serial
        asked = request.admission.request if request.admission else None
        entry = (request.terminal or PLAYER_SESSION, PLAY_ACTION, player, serial,
                 play_answer(record), asked)  # fmt: skip
        self.ledger._log_many(tx, [entry], at=now)
        return (
            Play(play_id, player, serial, commitment, position, leaf, self.stake, prize,
                 balance, stamp, symbols),
            False,
        )  # fmt: skip

    def _next_position(self, tx: Tx) -> tuple[int, int]:
        rows = tx.execute(
            "SELECT commitment FROM deal_orders WHERE next_position < units ORDER BY commitment"
        )
        for (commitment,) in rows:
            moved = tx.one(
                "UPDATE deal_orders SET next_position = next_position + 1 "
                "WHERE commitment = ? AND next_position < units RETURNING next_position - 1",
                (commitment,),
            )
            if moved is not None:
                return int(commitment), int(moved[0])
        raise SoldOut(f"sold out: every unit of {self.game.definition.id} has been dealt")

    # -- what a player sees again --------------------------------------------------------------

    def history(self, *, player: str, limit: int = HISTORY_LIMIT) -> list[Play]:
        with self.db.snapshot() as tx:
            rows = tx.execute(
                f"SELECT {_PLAY_COLUMNS} FROM plays p JOIN units u ON u.id = p.unit "
                "WHERE p.player = ? ORDER BY p.commitment DESC, p.position DESC LIMIT ?",
                (player, limit),
            )
        return [_play_of(row) for row in rows]

    def one_play(self, *, player: str, play_id: str) -> Play:
        with self.db.snapshot() as tx:
            row = tx.one(
                f"SELECT {_PLAY_COLUMNS} FROM plays p JOIN units u ON u.id = p.unit "
                "WHERE p.player = ? AND p.id = ?",
                (player, play_id),
            )
        if row is None:
            raise NoSuchPlay(f"no play {play_id} of {player}")
        return _play_of(row)

    def account(self, *, player: str) -> dict[str, Any]:
        day = self.clock().date().isoformat()
        with self.db.snapshot() as tx:
            balance = self.wallet.balance(tx, player=player)
            staked = tx.one(
                "SELECT COALESCE(SUM(stake_cents), 0) FROM plays WHERE player = ? AND day = ?",
                (player, day),
            )
            left = tx.one("SELECT COALESCE(SUM(units - next_position), 0) FROM deal_orders")
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
        hashed = leaf_hash(opening.leaf())
        if (
            own != hashed
            or root_from_audit_path(hashed, play.leaf, commitment.tickets, path) != commitment.root
        ):
            raise PrintpipeError(
                f"the ledger's tree of {loaded.name} does not prove unit {play.serial}: "
                "the ledger is damaged"
            )
        return make_proof(commitment, opening, path)

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
                DatabaseWallet().deposit(
                    tx,
                    player=player,
                    amount_cents=balance_cents,
                    reference=f"opening:{player}",
                )
            tx.execute(
                "INSERT INTO player_logins (token_hash, player, expires_at) VALUES (?, ?, ?)",
                (_hash_token(token), player, int(now.timestamp()) + LOGIN_TTL_S),
            )
            self.ledger._log(
                tx, by, "player", player, None, f"registered with {balance_cents / 100:.2f} EUR"
            )
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
