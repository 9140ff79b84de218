"""The ledger that answers: validate, claim, prove, prizes remaining, block closure.

:class:`Ledger` applies the pure policy (:func:`printpipe.ledger.rules.decide`) in
transactions on either database (:mod:`printpipe.ledger.store`), each with its audit entry;
it is also the office's controls, the terminals and the packs (``office.py``,
``terminals.py``, ``packs.py``), jobs kept in their own modules.  Every input is parsed before
a transaction begins (:mod:`printpipe.ledger.inputs`, :mod:`printpipe.ids`).

A ticket is paid at most once by the database itself: ``payments`` has the ticket as its
primary key and the payment is written by one ``INSERT ... ON CONFLICT DO NOTHING RETURNING``
that checks and writes.  For the service, the same transactions also admit a signed request
(its nonce, once) and keep claims idempotent (:meth:`Ledger.begin_claim`, then
:meth:`Ledger.claim` with the key's token).  The module's functions are one call per command.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.atomic import write_atomic
from printpipe.commitment.remaining import Remaining, write_remaining
from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.ids import SPECIMEN_PACK, TicketId
from printpipe.ledger.core import Admission, RequestRefused, lock_key
from printpipe.ledger.inputs import TerminalId, audit_text, logged_input, require_terminal
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.office import OfficeControls
from printpipe.ledger.packs import PackAdministration
from printpipe.ledger.proofs import (
    BlockStanding,
    describe_standings,
    no_commitment,
    read_remaining,
    read_standings,
    store_proof,
)
from printpipe.ledger.rules import (
    INVALID,
    Answer,
    Decision,
    PackScope,
    ScannedCode,
    Settings,
    TerminalCounter,
    TicketRow,
    decide,
    foreign_pack,
    format_time,
    pack_key,
    parse_time,
    read_code,
)
from printpipe.ledger.store import (
    Location,
    Tx,
    ticket_key,
    values_table,
)
from printpipe.ledger.terminals import TerminalAdministration

IDEMPOTENCY_TTL_S = 24 * 3600
"""How long a claim's Idempotency-Key is remembered (its answer replayed)."""
IDEMPOTENCY_LEASE_S = 10
"""How long a claim in progress holds its key: a retry sooner gets 409; later (the server that
took it died before answering) the retry takes the key over and the claim runs again (a claim
that had committed has its answer stored, so it is replayed, never paid twice)."""
NONCE_TTL_S = 150
"""How long a request's nonce is kept after its signature's ``created`` time: past twice the
allowed clock skew (60 s), a replay is refused by its ``created`` time anyway."""

# Everything decide reads, for each row of q (n, id, pack, terminal), in one statement: one row
# a row of q, in its order (ticket columns NULL when there is no such ticket), the asking
# terminal's counter and the pack's retailer included.
_LOOKUP_COLUMNS = ("n", "id", "pack", "terminal")
_LOOKUP = """
SELECT q.n, t.virn_hmac, t.prize_eur,
       (SELECT COALESCE(SUM(failures), 0) FROM virn_failures WHERE ticket = q.id),
       (SELECT COUNT(*) FROM virn_failures WHERE ticket = q.id),
       p.paid_at, p.terminal, COALESCE(k.state, 'issued'),
       c.failures, c.window_start, k.retailer
FROM q
LEFT JOIN tickets t ON t.id = q.id
LEFT JOIN payments p ON p.ticket = q.id
LEFT JOIN packs k ON k.id = q.pack
LEFT JOIN terminal_failures c ON c.terminal = q.terminal
ORDER BY q.n
"""


Found = tuple[TicketRow | None, TerminalCounter, str | None]
"""What :data:`_LOOKUP` reads for a decision: the ticket's row (None: no such ticket), the
terminal's counter, the retailer its pack was shipped to."""


@dataclass(frozen=True, slots=True)
class Validation:
    """One scanned code to answer, from ``terminal`` (:meth:`Ledger.validate_many`):
    ``scope``, the packs it may ask about; ``admission``, the signed request's nonce."""

    code: str
    terminal: TerminalId
    scope: PackScope
    admission: Admission | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of the service (:meth:`Ledger.claim_many`): the code, from ``terminal``
    acting on the packs of ``scope`` (the office's pays above the retailer limit), under its
    Idempotency-Key ``key`` bound to the request's ``fingerprint``; ``render`` turns its answer
    into what a replay returns."""

    code: str
    terminal: TerminalId
    key: str
    fingerprint: bytes
    render: Callable[[Answer], tuple[int, str]]
    scope: PackScope
    admission: Admission | None = None


@dataclass(frozen=True, slots=True)
class ClaimStart:
    """What :meth:`Ledger.begin_claim` found for an Idempotency-Key.

    ``outcome``: ``proceed`` (the caller owns the key: ``token``), ``replay`` (the stored
    ``status`` and ``response``), ``mismatch`` (same key, another request: 422) or
    ``in_progress`` (409, retry after ``retry_after`` seconds).
    """

    outcome: str
    token: str | None = None
    status: int | None = None
    response: str | None = None
    retry_after: int = 0


@dataclass(frozen=True, slots=True)
class IdempotentClaim:
    """A claim that stores its answer under its key: ``render`` turns the answer into the
    (status, body) a replay returns."""

    terminal: str
    key: str
    token: str
    render: Callable[[Answer], tuple[int, str]]


class KeyTakenOver(RequestRefused):
    """The claim's key lease expired and a retry took it over: this attempt does nothing."""


class Ledger(OfficeControls, TerminalAdministration, PackAdministration):
    """An open validation ledger (an SQLite file or a PostgreSQL database).

    ``Ledger(location)`` opens an existing ledger (refusing anything else untouched);
    ``read_only=True`` never writes a byte of it.  ``key`` (the ledger key) is needed to answer
    codes and to import; the ledger checks it is its own.  ``pool_size``: connections shared
    by threads (the service), where the database takes several (PostgreSQL); ``shared``:
    several processes of the service write to one SQLite file.  ``clock`` gives the time
    (tests move it).
    A ledger is created only by :func:`printpipe.ledger.importer.import_manifest`.
    """

    @staticmethod
    def _read(tx: Tx, asked: Sequence[tuple[TicketId, TerminalId]]) -> list[Found]:
        """What :func:`decide` reads for each (ticket, terminal) asked, in one statement."""
        return Ledger._read_later(tx, asked)()

    @staticmethod
    def _read_later(
        tx: Tx, asked: Sequence[tuple[TicketId, TerminalId]]
    ) -> Callable[[], list[Found]]:
        """:meth:`_read`, its statement sent now and its rows read by the function returned."""
        rows = [
            (n, ticket_key(ticket), pack_key(ticket.game, ticket.pack), terminal.value)
            for n, (ticket, terminal) in enumerate(asked)
        ]
        if not rows:
            return list
        table, params = values_table("q", _LOOKUP_COLUMNS, rows)
        sent = tx.send(table + _LOOKUP, params)
        return lambda: [Ledger._found(row[1:]) for row in sent()]

    @staticmethod
    def _found(found: tuple[Any, ...]) -> Found:
        """What :data:`_LOOKUP` read of one ticket, as :func:`decide` takes it."""
        *columns, failures, window_start, retailer = found
        row = None
        if columns[0] is not None:
            columns[0] = bytes(columns[0])
            row = TicketRow(*columns)
        if window_start is None:
            return row, TerminalCounter(), retailer
        return row, TerminalCounter(failures, parse_time(window_start)), retailer

    def _lookup(self, tx: Tx, ticket: TicketId, terminal: TerminalId) -> Found:
        """The ticket's and the terminal's rows, under their locks (what a decision that
        counts a failure writes back)."""
        tx.lock(*self._lock_keys(ticket, terminal))
        return self._read(tx, [(ticket, terminal)])[0]

    @staticmethod
    def _lock_keys(ticket: TicketId, terminal: TerminalId) -> tuple[int, int]:
        return lock_key("terminal", terminal.value), lock_key("ticket", ticket_key(ticket))

    def _decide(
        self, scanned: ScannedCode, found: Found, at: datetime, scope: PackScope
    ) -> tuple[Decision, TicketRow | None]:
        """Decide on what was read; ``scope``: the packs the caller acts on."""
        row, counter, pack_retailer = found
        ticket = scanned.ticket
        if ticket.pack != SPECIMEN_PACK and not scope.covers(pack_retailer):
            return Decision(foreign_pack(ticket.serial)), None
        keyed = scanned.keyed(self._require_key())
        return decide(keyed, row, counter, self.settings, at=at), row

    def _count_failure(
        self, tx: Tx, decision: Decision, ticket: TicketId, terminal: TerminalId, at: datetime
    ) -> None:
        """Write what a decision counts: a wrong VIRN against the ticket and the terminal
        (whose locks the transaction holds), and the terminal's throttling."""
        after = decision.terminal_after
        if after is None or after.window_start is None:
            return
        stamp = format_time(at)
        tx.execute(
            "INSERT INTO virn_failures VALUES (?, ?, 1, ?) ON CONFLICT (ticket, terminal) "
            "DO UPDATE SET failures = virn_failures.failures + 1, "
            "last_at = excluded.last_at",
            (ticket_key(ticket), terminal.value, stamp),
        )
        tx.execute(
            "INSERT INTO terminal_failures VALUES (?, ?, ?) ON CONFLICT (terminal) "
            "DO UPDATE SET window_start = excluded.window_start, failures = excluded.failures",
            (terminal.value, format_time(after.window_start), after.failures),
        )
        if decision.throttles_terminal:
            until = format_time(after.window_start + self.settings.terminal_window)
            self._log(
                tx,
                terminal.value,
                "throttle",
                "",
                None,
                f"TERMINAL THROTTLED {until}: {after.failures} wrong validation numbers "
                f"since {format_time(after.window_start)}",
                at=at,
            )

    def _answer(
        self,
        tx: Tx,
        scanned: ScannedCode,
        terminal: TerminalId,
        at: datetime,
        scope: PackScope,
    ) -> tuple[Answer, TicketRow | None]:
        """Read under locks, decide, and apply what the decision counts (a claim, or a
        validation whose decision counts a failure)."""
        found: Found = (None, TerminalCounter(), None)
        if scanned.ticket.pack != SPECIMEN_PACK:
            found = self._lookup(tx, scanned.ticket, terminal)
        decision, row = self._decide(scanned, found, at, scope)
        self._count_failure(tx, decision, scanned.ticket, terminal, at)
        return decision.answer, row

    def validate(
        self,
        code: str,
        *,
        terminal: TerminalId,
        scope: PackScope,
        admission: Admission | None = None,
    ) -> Answer:
        """Answer a scanned code (validation or inventory), logging it; never pays.

        ``scope``: the packs the caller acts on; ``admission``: a signed request's nonce,
        admitted in the same transaction.
        """
        (outcome,) = self.validate_many([Validation(code, terminal, scope, admission)])
        if isinstance(outcome, RequestRefused):
            raise outcome
        return outcome

    def validate_many(self, requests: Sequence[Validation]) -> list[Answer | RequestRefused]:
        """Answer several validations in one transaction, each logged: what the service's
        terminals sent while the ledger was busy with the last ones (one commit, and on
        PostgreSQL one round trip a step, for them all).

        Each request's outcome is its own, in order: its answer, or the refusal of its
        admission (a replayed nonce, a revoked terminal), which writes nothing of it.  The
        rows are read without locks: a validation whose decision writes nothing is answered
        as of the last commit.  Only when a decision counts a wrong VIRN are the locks of the
        terminals and tickets involved taken (all at once, in order), and every request of the
        batch that shares one decided again, in order, on what they hold then.
        """
        for request in requests:
            require_terminal(request.terminal)
        scanned = [read_code(request.code) for request in requests]
        outcomes: list[Answer | RequestRefused | None]
        with self.db.transaction(pipelined=True) as tx:
            # the nonces and the rows travel together (the rows of a request refused after
            # all are read for nothing): one round trip, BEGIN included
            admitted = self._admit_later(tx, [r.admission for r in requests])
            asks = [
                (i, code)
                for i, code in enumerate(scanned)
                if code is not None and code.ticket.pack != SPECIMEN_PACK
            ]
            read = self._read_later(tx, [(code.ticket, requests[i].terminal) for i, code in asks])
            outcomes = list(admitted())
            found = {i: row for (i, _), row in zip(asks, read(), strict=True)}
            asks = [(i, code) for i, code in asks if outcomes[i] is None]
            at = self.clock()
            failing: list[int] = []
            for i, (request, code) in enumerate(zip(requests, scanned, strict=True)):
                if outcomes[i] is not None:
                    continue
                if code is None:
                    outcomes[i] = INVALID
                    continue
                nothing: Found = (None, TerminalCounter(), None)  # a specimen: nothing to read
                decision, _ = self._decide(code, found.get(i, nothing), at, request.scope)
                outcomes[i] = decision.answer
                if decision.counts_failure:
                    failing.append(i)
            if failing:
                terminals = {requests[i].terminal for i in failing}
                tickets = {code.ticket for i, code in asks if i in failing}
                again = [
                    (i, code) for i, code in asks
                    if requests[i].terminal in terminals or code.ticket in tickets
                ]  # fmt: skip
                keys = [self._lock_keys(code.ticket, requests[i].terminal) for i, code in again]
                tx.lock(*(key for pair in keys for key in pair))
                for i, code in again:
                    request = requests[i]
                    outcomes[i], _ = self._answer(tx, code, request.terminal, at, request.scope)
            entries = [
                _entry(request.terminal, "validate", request.code, outcome, request.admission)
                for request, outcome in zip(requests, outcomes, strict=True)
                if isinstance(outcome, Answer)
            ]
            self._log_many(tx, entries, at=at)
        return [outcome for outcome in outcomes if outcome is not None]

    def claim(
        self,
        code: str,
        *,
        terminal: TerminalId,
        scope: PackScope,
        admission: Admission | None = None,
        idempotent: IdempotentClaim | None = None,
    ) -> Answer:
        """Pay a winning ticket at most once, of a pack in ``scope`` (the office's pays above
        the retailer limit).

        The payment is one statement that checks and writes (``INSERT ... ON CONFLICT DO
        NOTHING RETURNING``): of concurrent claims exactly one writes it, the others answer
        ``ALREADY PAID``.  ``idempotent``: the claim's answer is stored under its key in the
        same transaction as the payment (see :meth:`begin_claim`).
        """
        require_terminal(terminal)
        scanned = read_code(code)
        with self.db.transaction(durable=True) as tx:
            self._admit(tx, admission)
            if idempotent is not None:
                held = tx.one(
                    "UPDATE idempotency SET token = token WHERE terminal = ? AND key = ? "
                    "AND token = ? AND status IS NULL RETURNING 1",
                    (idempotent.terminal, idempotent.key, idempotent.token),
                )
                if held is None:
                    raise KeyTakenOver("this claim's key was taken over by a retry")
            at = self.clock()
            if scanned is None or scanned.virn is None:  # the inventory code never pays
                answer = INVALID
            else:
                answer, row = self._answer(tx, scanned, terminal, at, scope)
                if _pays(answer, scope):
                    answer = self._pay(tx, scanned, answer, terminal, at, row)
            self._log_many(tx, [_entry(terminal, "claim", code, answer, admission)], at=at)
            if idempotent is not None:
                status, body = idempotent.render(answer)
                tx.execute(
                    "UPDATE idempotency SET status = ?, response = ? "
                    "WHERE terminal = ? AND key = ? AND token = ?",
                    (status, body, idempotent.terminal, idempotent.key, idempotent.token),
                )
            return answer

    def claim_many(self, claims: Sequence[Claim]) -> list[Answer | ClaimStart | RequestRefused]:
        """Claims with their Idempotency-Keys, in one durable transaction (one flush to disk
        for them all): what the service's terminals sent while the ledger wrote the last ones.

        For each, in order: its answer (stored under its key with the payment, so that a retry
        replays it), or the :class:`ClaimStart` that says why it did not run (a replay with the
        stored answer, the key reused for another request, the key held by a claim in progress
        elsewhere or earlier in the batch), or the refusal of its admission.  A key is taken and
        its claim paid in the same transaction: a crash leaves neither, and a retry runs the
        claim again.  Every lock the batch may need is taken first, at once and in order; the
        keys, the rows read, the log entries and the stored answers are one statement each for
        the batch, a payment two.
        """
        for claim in claims:
            require_terminal(claim.terminal)
        scanned = [read_code(claim.code) for claim in claims]
        outcomes: list[Answer | ClaimStart | RequestRefused | None]
        with self.db.transaction(durable=True) as tx:
            # a claim takes its terminal's lock and its ticket's: all of them at once, in order,
            # so that two batches never wait on each other in a circle
            locks = [lock_key("terminal", claim.terminal.value) for claim in claims]
            locks += [lock_key("ticket", ticket_key(code.ticket)) for code in scanned if code]
            tx.lock(*locks)
            outcomes = list(self._admit_many(tx, [claim.admission for claim in claims]))
            at = self.clock()
            starts = self._take_keys(tx, claims, outcomes, now=int(at.timestamp()))
            running = [i for i, start in starts.items() if start.outcome == "proceed"]
            for i, start in starts.items():
                if start.outcome != "proceed":
                    outcomes[i] = start
            asks = [
                (i, code)
                for i in running
                if (code := scanned[i]) is not None and code.virn is not None
            ]
            read = self._read(tx, [(code.ticket, claims[i].terminal) for i, code in asks])
            found = {i: row for (i, _), row in zip(asks, read, strict=True)}
            # what a claim earlier in the batch changed (a failure counted, a ticket paid): a
            # claim touching it is decided again on what the transaction now holds
            changed: set[TerminalId | TicketId] = set()
            entries, stored = [], []
            for i in running:
                claim, code = claims[i], scanned[i]
                answer = INVALID  # the inventory code never pays
                if code is not None and code.virn is not None:
                    decision, row = self._decide(code, found[i], at, claim.scope)
                    answer = decision.answer
                    if decision.counts_failure or {claim.terminal, code.ticket} & changed:
                        tx.request = claim.admission and claim.admission.request  # type: ignore[attr-defined]
                        answer, row = self._answer(tx, code, claim.terminal, at, claim.scope)
                        changed.update((claim.terminal, code.ticket))
                    if _pays(answer, claim.scope):
                        answer = self._pay(tx, code, answer, claim.terminal, at, row)
                        changed.add(code.ticket)
                outcomes[i] = answer
                entries.append(_entry(claim.terminal, "claim", claim.code, answer, claim.admission))
                start = starts[i]
                assert start.token is not None
                stored.append((claim.terminal.value, claim.key, start.token, *claim.render(answer)))
            self._log_many(tx, entries, at=at)
            if stored:
                table, params = values_table(
                    "v", ("terminal", "key", "token", "status", "response"), stored
                )
                tx.execute(
                    table + "UPDATE idempotency SET status = v.status, response = v.response "
                    "FROM v WHERE idempotency.terminal = v.terminal AND idempotency.key = v.key "
                    "AND idempotency.token = v.token",
                    params,
                )
        return [outcome for outcome in outcomes if outcome is not None]

    def _take_keys(
        self,
        tx: Tx,
        claims: Sequence[Claim],
        refused: Sequence[object],
        *,
        now: int,
    ) -> dict[int, ClaimStart]:
        """Take the keys of the claims not ``refused`` (one statement for the new ones; a key
        already known is decided by :meth:`_take_key`; the same key twice in the batch: the
        second is in progress)."""
        starts: dict[int, ClaimStart] = {}
        first: dict[tuple[str, str], int] = {}
        for i, claim in enumerate(claims):
            if refused[i] is not None:
                continue
            pair = (claim.terminal.value, claim.key)
            if pair in first:
                starts[i] = ClaimStart("in_progress", retry_after=1)
            else:
                first[pair] = i
        if not first:
            return starts
        tokens = {i: secrets.token_hex(16) for i in first.values()}
        rows = [
            (claims[i].terminal.value, claims[i].key, claims[i].fingerprint, tokens[i], now)
            for i in first.values()
        ]
        marks = ", ".join(["(?, ?, ?, ?, ?)"] * len(rows))
        taken = tx.execute(
            "INSERT INTO idempotency (terminal, key, fingerprint, token, started_at) "
            f"VALUES {marks} ON CONFLICT (terminal, key) DO NOTHING RETURNING terminal, key",
            [value for row in rows for value in row],
        )
        new = {(str(terminal), str(key)) for terminal, key in taken}
        for pair, i in first.items():
            claim = claims[i]
            if pair in new:
                starts[i] = ClaimStart("proceed", tokens[i])
            else:
                starts[i] = self._take_key(
                    tx, claim.terminal, claim.key, claim.fingerprint, now=now
                )
        return dict(sorted(starts.items()))

    def _pay(
        self,
        tx: Tx,
        scanned: ScannedCode,
        answer: Answer,
        terminal: TerminalId,
        at: datetime,
        row: TicketRow | None,
    ) -> Answer:
        paid_at = format_time(at)
        key = ticket_key(scanned.ticket)
        loaded = self.commitments.of_ticket(tx, scanned.ticket)
        if loaded is not None and loaded.closed_on is not None and at.date() > loaded.closed_on:
            closed = loaded.closed_on.isoformat()
            return Answer("BLOCK_CLOSED", f"BLOCK CLOSED {closed}", answer.serial)
        assert answer.amount_eur is not None
        mac = self._log_key().payment_mac(key, answer.amount_eur, paid_at, terminal.value)
        written = tx.one(
            "INSERT INTO payments VALUES (?, ?, ?, ?, ?) ON CONFLICT (ticket) DO NOTHING "
            "RETURNING paid_at",
            (key, answer.amount_eur, paid_at, terminal.value, mac),
        )
        if written is None:  # paid by a concurrent claim that committed first
            other = tx.one("SELECT paid_at, terminal FROM payments WHERE ticket = ?", (key,))
            assert other is not None and row is not None
            return Answer(
                "ALREADY_PAID",
                f"ALREADY PAID {other[0]} {other[1]}",
                answer.serial,
                paid_at=other[0],
                terminal=other[1],
            )
        extra: dict[str, Any] = {}
        if loaded is not None:
            assert row is not None and scanned.virn is not None
            proof = store_proof(
                tx,
                loaded,
                ticket=scanned.ticket,
                prize_eur=row.prize_eur,
                virn=scanned.virn,
                key=self._require_key(),
            )
            extra["proof"] = proof.document()
        return Answer(
            "PAID",
            f"PAID {answer.amount_eur}",
            answer.serial,
            amount_eur=answer.amount_eur,
            paid_at=paid_at,
            terminal=terminal.value,
            extra=extra,
        )

    def request_fingerprint(self, method: str, path: str, body: bytes) -> bytes:
        """What an Idempotency-Key is bound to: the request's method, path and body, as an
        HMAC under the ledger key (the body holds a VIRN)."""
        return self._require_key().request_hmac(f"{method} {path}\n".encode() + body)

    # -- the block's public commitment: proofs, prizes remaining, closure ------------------

    def prove(self, code: str, *, terminal: TerminalId) -> tuple[str, bytes]:
        """The stored inclusion proof of a paid ticket: (its serial, the proof's bytes).

        Only for a paid ticket, and only with its validation code (the VIRN checked against
        its HMAC): a proof reveals the ticket's VIRN and prize.  Every request is logged,
        refused or not.
        """
        require_terminal(terminal)
        scanned = read_code(code)
        if scanned is None or scanned.virn is None:
            raise InvalidInput(
                f"code {logged_input(code)!r} refused: a proof is asked with the ticket's "
                "validation code (25 digits, or GGGG-PPPPPP-TTT VVVVVVVVVV KK)"
            )
        keyed = scanned.keyed(self._require_key())
        ticket = scanned.ticket
        serial = ticket.serial
        with self.db.transaction() as tx:
            found = tx.one(
                "SELECT t.virn_hmac, p.paid_at, q.proof FROM tickets t "
                "LEFT JOIN payments p ON p.ticket = t.id "
                "LEFT JOIN payment_proofs q ON q.ticket = t.id WHERE t.id = ?",
                (ticket_key(ticket),),
            )
            proof: bytes | None = None
            if found is None:
                problem = f"ticket {serial}: no such ticket in {self.location}"
            elif keyed.virn_hmac is None or not hmac.compare_digest(
                keyed.virn_hmac, bytes(found[0])
            ):
                problem = f"ticket {serial}: wrong validation number, no proof given"
            elif found[1] is None:
                problem = (
                    f"ticket {serial} is not paid: the ledger gives a proof only for a paid "
                    "ticket (a proof tells its prize)"
                )
            elif found[2] is None:
                problem = (
                    f"ticket {serial} was paid, but the ledger holds no commitment of its block "
                    "(load it: printpipe ledger import BLOCK_MANIFEST --commitment COMMITMENT)"
                )
            else:
                problem, proof = "", str(found[2]).encode()
            answer = "PROOF GIVEN" if proof is not None else f"REFUSED {problem}"
            self._log(tx, terminal.value, "prove", logged_input(code), serial, answer[:200])
        if proof is None:
            raise PrintpipeError(problem)
        return serial, proof

    def remaining(
        self, *, game: str | None = None, block: int | None = None
    ) -> tuple[Remaining, IO[bytes]]:
        """The prizes remaining of a block's commitment, in one snapshot: per prize tier the
        lots committed, paid (an online block's: won by plays) and remaining,
        and the paid lots' proofs (one canonical JSON line each, in a temporary file the
        caller closes; an online block's made from the tree, with the ledger key).  The log is
        sealed first: the report names the sealed head it follows (claims made meanwhile may
        be in it, sealed after)."""
        if self.log_key is not None and not self.read_only:
            self.seal_all()
        with self.db.snapshot() as tx:
            loaded = self.commitments.find(tx, game=game, block=block, where=str(self.location))
            return read_remaining(tx, loaded, at=format_time(self.clock()), key=self.key)

    def standings(
        self, *, game: str | None = None, block: int | None = None
    ) -> list[BlockStanding]:
        """Each committed block's standing (:func:`printpipe.ledger.proofs.read_standings`),
        in one snapshot; refused if none is of ``game`` and ``block``."""
        with self.db.snapshot() as tx:
            found = read_standings(tx, self.commitments, game=game, block=block)
        if not found:
            raise no_commitment(str(self.location), game=game, block=block)
        return found

    def close_block(
        self,
        *,
        game: str | None = None,
        block: int | None = None,
        closed_on: dt.date,
        terminal: TerminalId,
    ) -> str:
        """Record that a committed block closed on ``closed_on`` (its sale ended and its claim
        period ran out): from the day after, no ticket of it is paid (``BLOCK CLOSED``).  Once
        recorded, the day is final."""
        require_terminal(terminal)
        today = self.clock().date()
        if closed_on > today:
            raise InvalidInput(
                f"a block is closed on a day already come: {closed_on.isoformat()} is after "
                f"today ({today.isoformat()})"
            )
        with self.db.transaction(durable=True) as tx:
            loaded = self.commitments.find(tx, game=game, block=block, where=str(self.location))
            if loaded.closed_on is not None:
                if loaded.closed_on == closed_on:
                    return f"{loaded.name}: closed on {closed_on.isoformat()} already"
                raise PrintpipeError(
                    f"{loaded.name} was closed on {loaded.closed_on.isoformat()}: a closure "
                    "is final"
                )
            tx.execute(
                "UPDATE commitments SET closed_on = ? WHERE id = ?",
                (closed_on.isoformat(), loaded.id),
            )
            report = (
                f"{loaded.name}: closed on {closed_on.isoformat()}; no ticket of it is paid "
                "after that day"
            )
            self._log(tx, terminal.value, "close", closed_on.isoformat(), None, report)
        return report

    def begin_claim(
        self,
        *,
        terminal: TerminalId,
        key: str,
        fingerprint: bytes,
        admission: Admission | None = None,
        now_s: int | None = None,
    ) -> ClaimStart:
        """Take an Idempotency-Key for a claim, or say why not (one short transaction).

        A new key (or one older than :data:`IDEMPOTENCY_TTL_S`) is taken: ``proceed`` with a
        fresh token, which :meth:`claim` needs.  The same key with another request
        (``fingerprint``) is a ``mismatch``; with its answer stored, a ``replay``; still
        running, ``in_progress``, unless its lease (:data:`IDEMPOTENCY_LEASE_S`) has expired:
        then this retry takes it over (the attempt that held it had not committed, or its
        answer would be stored).
        """
        now = int(self.clock().timestamp()) if now_s is None else now_s
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            return self._take_key(tx, terminal, key, fingerprint, now=now)

    def _take_key(
        self, tx: Tx, terminal: TerminalId, key: str, fingerprint: bytes, *, now: int
    ) -> ClaimStart:
        """:meth:`begin_claim` in a transaction."""
        token = secrets.token_hex(16)
        tx.lock(lock_key("terminal", terminal.value))
        taken = tx.one(
            "INSERT INTO idempotency (terminal, key, fingerprint, token, started_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (terminal, key) DO NOTHING RETURNING 1",
            (terminal.value, key, fingerprint, token, now),
        )
        if taken is not None:
            return ClaimStart("proceed", token)
        row = tx.one(
            "SELECT fingerprint, token, started_at, status, response FROM idempotency "
            "WHERE terminal = ? AND key = ?",
            (terminal.value, key),
        )
        assert row is not None
        stored, held_by, started_at, status, response = row
        if started_at <= now - IDEMPOTENCY_TTL_S:  # expired: a new request
            tx.execute(
                "UPDATE idempotency SET fingerprint = ?, token = ?, started_at = ?, "
                "status = NULL, response = NULL WHERE terminal = ? AND key = ?",
                (fingerprint, token, now, terminal.value, key),
            )
            return ClaimStart("proceed", token)
        if not hmac.compare_digest(bytes(stored), fingerprint):
            return ClaimStart("mismatch")
        if status is not None:
            return ClaimStart("replay", status=int(status), response=response)
        if started_at > now - IDEMPOTENCY_LEASE_S:
            return ClaimStart("in_progress", retry_after=started_at + IDEMPOTENCY_LEASE_S - now)
        tx.execute(
            "UPDATE idempotency SET token = ?, started_at = ? "
            "WHERE terminal = ? AND key = ? AND token = ?",
            (token, now, terminal.value, key, held_by),
        )
        return ClaimStart("proceed", token)

    def purge_expired(self, *, now_s: int | None = None) -> tuple[int, int]:
        """Forget nonces past :data:`NONCE_TTL_S` and claim keys past
        :data:`IDEMPOTENCY_TTL_S`; (nonces, keys) removed."""
        now = int(self.clock().timestamp()) if now_s is None else now_s
        with self.db.transaction() as tx:
            nonces = tx.execute(
                "DELETE FROM nonces WHERE created < ? RETURNING 1", (now - NONCE_TTL_S,)
            )
            keys = tx.execute(
                "DELETE FROM idempotency WHERE started_at < ? RETURNING 1",
                (now - IDEMPOTENCY_TTL_S,),
            )
        return len(nonces), len(keys)

    def record_refusal(
        self,
        *,
        action: str,
        terminal_text: str,
        given: str,
        reason: str,
        admission: Admission | None = None,
    ) -> None:
        """Append to the audit log that an input was refused before anything was looked up.

        Every field is passed through :func:`audit_text`: what was sent may be anything.
        ``admission``: the signed request's nonce, recorded with it.
        """
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            self._log(
                tx,
                audit_text(terminal_text),
                "refuse",
                logged_input(f"{action}: {given}", limit=160),
                None,
                audit_text(f"REFUSED {reason}", limit=200),
            )


# -- one call per command -------------------------------------------------------------------


def configure(location: Location, *, terminal: TerminalId, **changes: int | None) -> Settings:
    """The ledger's settings, after the given changes (audited); with no change, the ledger is
    opened read-only and not written."""
    changing = any(value is not None for value in changes.values())
    with Ledger(location, read_only=not changing) as book:
        return book.configure(terminal=terminal, **changes)


def _pays(answer: Answer, scope: PackScope) -> bool:
    """Whether a claim answered so is paid: a win within the retailer limit, or any win at the
    lottery's office."""
    return answer.outcome == "WIN" or (
        scope.pays_above_limit and answer.outcome == "WIN_AT_LOTTERY"
    )


def _entry(
    terminal: TerminalId, action: str, code: str, answer: Answer, admission: Admission | None
) -> tuple[str, str, str, str | None, str, str | None]:
    """The log entry of a code answered (``action``: validate or claim; a pack not the
    terminal's is logged as refused), as :meth:`Ledger._log_many` takes it."""
    kind = "refuse" if answer.outcome == "NOT_YOUR_PACK" else action
    request = admission.request if admission else None
    return (terminal.value, kind, logged_input(code), answer.serial, answer.text, request)


def record_refusal(
    location: Location, *, action: str, terminal_text: str, given: str, reason: str
) -> None:
    """Record in the ledger at ``location`` an input refused before anything was looked up."""
    with Ledger(location) as book:
        book.record_refusal(action=action, terminal_text=terminal_text, given=given, reason=reason)


def write_ticket_proof(
    location: Location, *, code: str, key: LedgerKey, terminal: TerminalId, out: Path | None = None
) -> tuple[str, Path]:
    """Write a paid ticket's inclusion proof (:meth:`Ledger.prove`) to ``out`` (default
    ``proof-SERIAL.json``), 0600, complete or absent: (the serial, where it went)."""
    with Ledger(location, key=key) as book:
        serial, proof = book.prove(code, terminal=terminal)
    path = out or Path(f"proof-{serial}.json")
    write_atomic(path, proof)
    return serial, path


def publish_remaining(
    location: Location,
    *,
    out: Path,
    signing_key: Ed25519PrivateKey,
    key: LedgerKey | None = None,
    game: str | None = None,
    block: int | None = None,
) -> Remaining:
    """Write the prizes-remaining report of a block's commitment (``printpipe-remaining/1``),
    read in one snapshot and signed with the lottery's key; the ledger is opened read-only
    (``key``, the ledger key: needed for an online block, whose lots' proofs it makes)."""
    with Ledger(location, read_only=True, key=key) as book:
        remaining, proofs = book.remaining(game=game, block=block)
    with proofs:
        write_remaining(out=out, remaining=remaining, proof_lines=proofs, signing_key=signing_key)
    return remaining


def blocks_remaining(
    location: Location, *, game: str | None = None, block: int | None = None
) -> str:
    """Each committed block's standing as ``ledger remaining`` prints it without ``--out``
    (the ledger opened read-only)."""
    with Ledger(location, read_only=True) as book:
        return describe_standings(book.standings(game=game, block=block))


def close_block(
    location: Location,
    *,
    closed_on: dt.date,
    terminal: TerminalId,
    game: str | None = None,
    block: int | None = None,
) -> str:
    """Record a block's closure in the ledger (:meth:`Ledger.close_block`)."""
    with Ledger(location) as book:
        return book.close_block(game=game, block=block, closed_on=closed_on, terminal=terminal)
