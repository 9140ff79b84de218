"""The audit log that a database writer cannot rewrite: entries chained by a sealer under a
key the database does not hold, the head MACed, payments bound to their entries, the head
signed for outside witnesses.

Every MAC here is HMAC-SHA256 under ``K_log``, a sub-key of the ledger key
(``LedgerKey.derive(LOG_PURPOSE)``), which only the lottery's processes hold (the service, the
commands given ``--keys``), never the database.

- **Writers** append an entry (its row id, from the database's own sequence) and a mark in
  ``audit_pending``, in the transaction that does what it records, and take no shared lock:
  concurrent validations never wait on one another for the log.
- **The sealer** (every :data:`SEAL_DELAY_S` in a running server; at the end of every command
  that holds the key) chains the pending entries, in row-id order within its batch: seal
  ``n`` (``seq`` 1, 2, 3..., no gaps) stores ``h_n = HMAC(K_log, "seal" || h_(n-1) || seq_n ||
  row id || canonical(entry))``, ``h_0`` 32 zero bytes.  Editing a sealed entry, deleting one
  or a seal, or rewriting the chain from any point with recomputed hashes needs the key.
- **The head** (the last ``seq`` and ``h``) carries ``HMAC(K_log, "head" || seq || h)``, a
  value stored nowhere else: setting it back to an earlier seal's ``seq`` and ``h`` after
  deleting the tail (a rewind) needs the key too.
- **A payment** row carries ``HMAC(K_log, "payment" || its fields)``, written with it (a claim
  always holds the key), and every ``PAID`` claim entry must have its payment, with the same
  ticket, amount, time and terminal: an edited, an inserted or a deleted payment is named.
- **A play** of the online game (``printpipe.ledger.plays``) writes, in its transaction, an
  entry whose answer is the play's row (:func:`play_answer`: id, unit, place in the deal order,
  stake, lot, balance after, time), so that the sealed entry binds the row: a play edited,
  deleted or inserted (a unit dealt twice, a lot raised, a balance set) is named.
- **An entry** written by a process that holds the key carries ``HMAC(K_log, "entry" ||
  canonical(entry))``, and **sealing checks what it seals**: an entry whose MAC does not verify
  is never chained (it stays awaiting its seal, and ``verify-log`` names it as inserted).  Only
  the office's commands that run without the key (:data:`KEYLESS_ACTIONS`: settings, packs,
  terminals, unlocks, closures, refusals, none of which moves money) write entries without one.
- **The money rows** of the online game carry their own MACs, made in the transaction that
  writes them: each play (:meth:`LogKey.play_mac`), each entry of the built-in wallet
  (:meth:`LogKey.wallet_mac`), each unit at its import (:meth:`LogKey.unit_mac`, after its lot
  was checked against the committed leaf), each online block's place in the dealing order
  (:meth:`LogKey.block_place_mac`, at its import).  ``verify-log`` checks them, every balance
  against its wallet entries, and every play against its debit and credit.
- **A checkpoint** (``ledger checkpoint``) is the head (``seq``, ``h``) signed with the
  lottery's Ed25519 signing key, kept by an outside witness: even whoever holds the ledger key
  cannot change the log before a checkpoint without ``verify-log --checkpoint`` naming it.
  **A witness** (``printpipe.ledger.witness``) is the same, written by the servers themselves
  every minute outside the database, so that a rewind is named without anyone's action.

**A crash between write and seal** leaves committed entries with their marks in
``audit_pending``, unsealed; the next sealer seals them (a restarted server within
:data:`SEAL_DELAY_S`, or any command given the key).  ``verify-log`` counts them as awaiting
their seal, not as an error.  What the seal cannot protect is an entry before it is sealed
(edited, or deleted with its mark, or one inserted): that window is at most
:data:`SEAL_DELAY_S` while a server runs, longer for entries written by commands run without
the key (``packs``, ``terminals``, ``ledger config``), which the next keyed process seals.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe import french

LOG_PURPOSE = b"printpipe ledger: audit log"
GENESIS = bytes(32)
SEAL_DELAY_S = 0.05
"""How often a running server seals what was written since (so at most this long unsealed;
and a round, which holds SQLite's one writer, stays short: 150 entries at 3,000/s)."""
CHECKPOINT_FORMAT = "printpipe-log-checkpoint/1"
MAX_PROBLEMS = 20


ENTRY_FIELDS = ("at", "terminal", "action", "input", "ticket", "answer", "request", "mac")
"""The columns of an entry as it is appended: its fields in :func:`canonical_entry`'s order,
then its MAC."""
APPEND_ENTRY = f"INSERT INTO audit_log ({', '.join(ENTRY_FIELDS)})"
"""The start of the statement that appends entries (the rows, ``VALUES`` or ``SELECT``,
follow)."""

KEYLESS_ACTIONS = frozenset(
    {"configure", "unlock", "activate", "settle", "ship", "terminal-add", "terminal-revoke",
     "refuse", "close"}
)  # fmt: skip
"""The actions of the office's commands that may run without the ledger key: their entries
carry no MAC and are sealed as written (a database writer could add one; none moves money).
Every other entry is sealed only if its MAC verifies."""

_CANONICAL_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))
"""``json.dumps(fields, ensure_ascii=True, separators=(",", ":"))``, made once."""


def canonical_entry(
    at: str,
    terminal: str,
    action: str,
    given: str,
    ticket: str | None,
    answer: str,
    request: str | None = None,
) -> bytes:
    """The bytes of an entry that its MAC covers (every field; ``None`` as JSON null)."""
    fields = [at, terminal, action, given, ticket, answer, request]
    return _CANONICAL_JSON.encode(fields).encode("ascii")


def canonical_payment(ticket: int, amount_eur: int, paid_at: str, terminal: str) -> bytes:
    return json.dumps([ticket, amount_eur, paid_at, terminal], separators=(",", ":")).encode()


def _canonical(*fields: object) -> bytes:
    return _CANONICAL_JSON.encode(list(fields)).encode("ascii")


class LogKey:
    """``K_log``: the audit log's MACs (its repr never shows it)."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("a log key is 32 bytes")
        self._key = key

    def __repr__(self) -> str:
        return "LogKey(<hidden>)"

    def _mac(self, *parts: bytes) -> bytes:
        return hmac.digest(self._key, b"".join(parts), hashlib.sha256)

    def seal_hash(self, previous: bytes, seq: int, entry_id: int, entry: bytes) -> bytes:
        return self._mac(
            b"seal\0", previous, seq.to_bytes(8, "big"), entry_id.to_bytes(8, "big"), entry
        )

    def head_mac(self, seq: int, head: bytes) -> bytes:
        return self._mac(b"head\0", seq.to_bytes(8, "big"), head)

    def payment_mac(self, ticket: int, amount_eur: int, paid_at: str, terminal: str) -> bytes:
        return self._mac(b"payment\0", canonical_payment(ticket, amount_eur, paid_at, terminal))

    def entry_mac(self, canonical: bytes) -> bytes:
        """An entry's, over :func:`canonical_entry` (its row id is not known yet)."""
        return self._mac(b"entry\0", canonical)

    def play_mac(self, play: PlayRecord) -> bytes:
        return self._mac(b"play\0", play.canonical())

    def wallet_mac(self, entry: WalletEntry) -> bytes:
        return self._mac(b"wallet\0", entry.canonical())

    def outbox_mac(self, call: OutboxCall) -> bytes:
        return self._mac(b"outbox\0", call.canonical())

    def unit_mac(
        self, unit: int, commitment: int, leaf: int, prize_eur: int, symbols: bytes
    ) -> bytes:
        """An online unit's, made at its import once its lot was checked against the leaf."""
        return self._mac(b"unit\0", _canonical(unit, commitment, leaf, prize_eur), symbols)

    def block_place_mac(self, place: BlockPlace) -> bytes:
        """An online block's place in the dealing order, made at its import."""
        return self._mac(b"block place\0", place.canonical())

    def ledger_id_mac(self, ledger_id: str) -> bytes:
        return self._mac(b"ledger id\0", ledger_id.encode("ascii"))

    def macs_verify(self, mac: bytes | None, expected: bytes) -> bool:
        return mac is not None and hmac.compare_digest(bytes(mac), expected)


@dataclass(frozen=True, slots=True)
class Entry:
    """An audit log row as stored."""

    id: int
    at: str
    terminal: str
    action: str
    given: str
    ticket: str | None
    answer: str
    request: str | None = None
    mac: bytes | None = None

    def canonical(self) -> bytes:
        return canonical_entry(
            self.at, self.terminal, self.action, self.given, self.ticket, self.answer, self.request
        )

    def sealable(self, key: LogKey) -> bool:
        """Written by a process that held the key (its MAC verifies), or a keyless command's."""
        if self.mac is None:
            return self.action in KEYLESS_ACTIONS
        return hmac.compare_digest(bytes(self.mac), key.entry_mac(self.canonical()))


@dataclass(frozen=True, slots=True)
class Payment:
    ticket: int
    amount_eur: int
    paid_at: str
    terminal: str
    mac: bytes


@dataclass(frozen=True, slots=True)
class PlayRecord:
    """A play of the online game, as its row in ``plays`` holds it (what its entry binds)."""

    id: str
    player: str
    unit: int
    commitment: int
    position: int
    stake_cents: int
    lot_cents: int
    balance_cents: int
    played_at: str
    jackpot_cents: int | None = None
    """The linked Super Jackpot's share of the stake (layout 9; None: a play made before)."""

    def canonical(self) -> bytes:
        fields: tuple[object, ...] = (
            self.id, self.player, self.unit, self.commitment, self.position,
            self.stake_cents, self.lot_cents, self.balance_cents, self.played_at,
        )  # fmt: skip
        if self.jackpot_cents is not None:  # a play of layout 8 keeps its MAC
            fields = (*fields, self.jackpot_cents)
        return _canonical(*fields)


@dataclass(frozen=True, slots=True)
class WalletEntry:
    """A movement of the built-in wallet (``wallet_entries``): a deposit, a play's debit or its
    credit, idempotent by (reference, kind); the reference of a play's is the play's id."""

    reference: str
    kind: str
    player: str
    amount_cents: int
    at: str

    def canonical(self) -> bytes:
        return _canonical(self.reference, self.kind, self.player, self.amount_cents, self.at)


@dataclass(frozen=True, slots=True)
class OutboxCall:
    """A call to the operator's wallet as the game server asked it (``wallet_outbox``, issue
    27): a play's debit (its ``split``), its lot's credit, or the cancel of a debit whose play
    was never dealt; what its MAC binds (its state, attempts and the wallet's receipt are the
    outbox's progress, compared with the wallet's own statement by ``play reconcile``)."""

    reference: str
    kind: str
    player: str
    amount_cents: int
    split: str
    created_at: str

    def canonical(self) -> bytes:
        return _canonical(self.reference, self.kind, self.player, self.amount_cents,
                          self.split, self.created_at)  # fmt: skip


@dataclass(frozen=True, slots=True)
class BlockPlace:
    """An online block's row in ``deal_orders`` (layout 10): its commitment's id in the ledger,
    its units, its deal order's keyed digest and its place in the dealing order of the
    ledger's blocks (1 is dealt first; a block imported later is dealt after), what its MAC
    binds: a database writer who moves a block ahead of another is named."""

    commitment: int
    units: int
    order_mac: str
    place: int

    def canonical(self) -> bytes:
        return _canonical(self.commitment, self.units, self.order_mac, self.place)


PLAY_COLUMNS = ", ".join(field.name for field in fields(PlayRecord))
"""The columns of ``plays`` a :class:`PlayRecord` holds, in its fields' order."""
PLAY_ACTION = "play"
PLAY_BOUND = tuple(
    field.name for field in fields(PlayRecord) if field.name not in ("player", "jackpot_cents")
)
"""The fields of a play its entry's answer carries, in this order (the player is the entry's
input): ``PLAY id=... unit=... ...``, then ``jackpot_cents=...`` if it has one.  None of them
holds a space."""


def play_answer(play: PlayRecord) -> str:
    """A play's entry's answer: its row's fields, ``name=value`` each."""
    answer = "PLAY " + " ".join(f"{name}={getattr(play, name)}" for name in PLAY_BOUND)
    if play.jackpot_cents is not None:
        answer += f" jackpot_cents={play.jackpot_cents}"
    return answer


def play_answer_sql() -> str:
    """:func:`play_answer` as an SQL expression over a ``plays`` row (SQLite and PostgreSQL
    both concatenate text and integers with ``||``): the upgrade writes it for the plays made
    before plays were logged."""
    parts = " || ' ' || ".join(f"'{name}=' || {name}" for name in PLAY_BOUND)
    return f"'PLAY ' || {parts}"


def _play_of_entry(entry: Entry) -> PlayRecord | None:
    """The play an entry's answer describes, or None if it is not one of :func:`play_answer`."""
    parts = entry.answer.split(" ")
    if parts[0] != "PLAY" or len(parts) not in (len(PLAY_BOUND) + 1, len(PLAY_BOUND) + 2):
        return None
    values = dict(part.partition("=")[::2] for part in parts[1:])
    jackpot = values.pop("jackpot_cents", None) if len(parts) > len(PLAY_BOUND) + 1 else None
    if tuple(values) != PLAY_BOUND:
        return None
    try:
        numbers = {name: int(values[name]) for name in PLAY_BOUND[1:-1]}
        share = None if jackpot is None else int(jackpot)
    except ValueError:
        return None
    return PlayRecord(values["id"], entry.given, played_at=values["played_at"],
                      jackpot_cents=share, **numbers)  # fmt: skip


REGISTERED = "registered with "
"""The start of a ``player`` entry's answer: ``registered with 20.00 EUR`` (the opening deposit)."""


def registered_answer(cents: int) -> str:
    return f"{REGISTERED}{french.eur(cents)}"


def _registered_cents(answer: str) -> int | None:
    if not (answer.startswith(REGISTERED) and answer.endswith(" EUR")):
        return None
    euros, _, cents = answer[len(REGISTERED) : -4].partition(".")
    if not (euros.isdigit() and cents.isdigit() and len(cents) == 2):
        return None
    return int(euros) * 100 + int(cents)


def opening_reference(player: str) -> str:
    """The reference of a player's opening deposit in the built-in wallet."""
    return f"opening:{player}"


@dataclass
class MoneyRows:
    """The online game's money rows as stored, for :func:`verify_log`: each play row's MAC (by
    play id), each wallet entry with its MAC, and each player's balance (the built-in wallet)
    and stake counter (its day and what was staked that day)."""

    play_macs: dict[str, bytes | None] = field(default_factory=dict)
    wallet: list[tuple[WalletEntry, bytes | None]] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    stakes: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    outbox: list[tuple[OutboxCall, bytes | None, str]] = field(default_factory=list)
    """The calls to the operator's wallet: each with its MAC and its state."""


@dataclass(frozen=True)
class Checkpoint:
    """A signed head: ``seq`` and ``head`` at ``at`` (UTC text), for the ledger ``ledger``
    names: a checkpoint (``ledger checkpoint``: the fingerprint of the ledger's key, signed
    with the lottery's key) or, of format ``printpipe-log-witness/1``, a server's witness (the
    ledger's id, signed with the witness key: ``printpipe.ledger.witness``)."""

    ledger: str
    seq: int
    head: bytes
    at: str
    source: str = ""
    format: str = CHECKPOINT_FORMAT

    def payload(self) -> bytes:
        data = {"format": self.format, "ledger": self.ledger, "seq": self.seq,
                "head": self.head.hex(), "at": self.at}  # fmt: skip
        return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def write_checkpoint(checkpoint: Checkpoint, key: Ed25519PrivateKey) -> bytes:
    """The checkpoint file's bytes: its fields and their Ed25519 signature, one JSON object."""
    data = json.loads(checkpoint.payload())
    data["signature"] = base64.b64encode(key.sign(checkpoint.payload())).decode()
    return (json.dumps(data, sort_keys=True, indent=1) + "\n").encode()


class CheckpointRefused(ValueError):
    """Not a checkpoint, or not signed by the lottery's key."""


def read_checkpoint(
    data: bytes,
    public_key: Ed25519PublicKey,
    *,
    source: str = "",
    format: str = CHECKPOINT_FORMAT,
    signer: str = "the lottery's",
) -> Checkpoint:
    """A checkpoint of ``format`` whose signature verifies under ``public_key`` (``signer``'s),
    or CheckpointRefused."""
    what = "a log checkpoint" if format == CHECKPOINT_FORMAT else "a witness of the log"
    try:
        fields = json.loads(data)
        signature = base64.b64decode(fields.pop("signature"), validate=True)
        if fields.pop("format") != format or set(fields) != {
            "ledger",
            "seq",
            "head",
            "at",
        }:
            raise ValueError
        checkpoint = Checkpoint(
            str(fields["ledger"]), int(fields["seq"]), bytes.fromhex(fields["head"]),
            str(fields["at"]), source, format,
        )  # fmt: skip
    except (ValueError, KeyError, TypeError, AttributeError):
        raise CheckpointRefused(f"{source or 'checkpoint'}: not {what}") from None
    try:
        public_key.verify(signature, checkpoint.payload())
    except InvalidSignature:
        raise CheckpointRefused(
            f"{source or 'checkpoint'}: its signature is not {signer} (forged or edited)"
        ) from None
    return checkpoint


def checkpoint_order_problem(checkpoints: Sequence[Checkpoint]) -> str | None:
    """Checkpoints made later must be at the same or a later point of the log."""
    ordered = sorted(checkpoints, key=lambda c: (datetime.fromisoformat(c.at), c.seq))
    for before, after in itertools.pairwise(ordered):
        if after.seq < before.seq or (after.seq == before.seq and after.head != before.head):
            return (
                f"{after.source or 'a checkpoint'} (made {after.at}, entry {after.seq}) is out "
                f"of order: {before.source or 'another'} was made before it at entry {before.seq}"
            )
    return None


@dataclass
class LogReport:
    """What verifying the log found: ``sealed`` entries checked, ``unsealed`` awaiting their
    seal (MACs checked), ``payments`` checked, the head, and every problem (the first few)."""

    sealed: int = 0
    unsealed: int = 0
    payments: int = 0
    plays: int = 0
    wallet: int = 0
    balances: int = 0
    units: int = 0
    head: bytes = GENESIS
    checkpoints: int = 0
    problems: list[str] = field(default_factory=list)
    more: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def entries(self) -> int:
        return self.sealed + self.unsealed

    @property
    def problem(self) -> str | None:
        return self.problems[0] if self.problems else None

    def add(self, problem: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)
        else:
            self.more += 1


def verify_log(
    key: LogKey,
    *,
    head: tuple[int, bytes, bytes | None] | None,
    seals: Iterable[tuple[int, int, bytes]],
    entries: Iterable[Entry],
    payments: Iterable[Payment],
    ticket_of_serial: Callable[[str], int | None],
    plays: Iterable[PlayRecord] = (),
    checkpoints: Sequence[Checkpoint] = (),
    money: MoneyRows | None = None,
) -> LogReport:
    """Check everything the module docstring promises.  ``head``: (seq, hash, mac), mac None
    for a ledger never sealed; ``seals``: (seq, entry id, hash) in seq order; ``entries``: every
    row of the log; ``payments``: every payment row; ``plays``: every play row; ``money``: the
    MACs of the plays and the wallet's rows (None: not checked)."""
    report = LogReport()
    by_id = {entry.id: entry for entry in entries}
    previous, expected, sealed_ids = GENESIS, 1, set()
    at_seq: dict[int, bytes] = {}
    chain_broken = False
    for seq, entry_id, stored in seals:
        stored = bytes(stored)
        if chain_broken:
            continue
        if seq != expected:
            missing = f"{expected}" if seq == expected + 1 else f"{expected} to {seq - 1}"
            report.add(f"sealed entries {missing} deleted (the seals jump to {seq})")
            chain_broken = True
            continue
        sealed = by_id.get(entry_id)
        if sealed is None:
            report.add(f"sealed entry {seq} (row {entry_id}) deleted")
            chain_broken = True
            continue
        if entry_id in sealed_ids:
            report.add(f"seal {seq} repeats entry {entry_id} (inserted)")
        sealed_ids.add(entry_id)
        computed = key.seal_hash(previous, seq, entry_id, sealed.canonical())
        if not hmac.compare_digest(computed, stored):
            report.add(
                f"sealed entry {seq} (row {entry_id}: {sealed.at} {sealed.action} "
                f"{sealed.terminal}) was edited, or the chain rewritten from there"
            )
            chain_broken = True
            continue
        at_seq[seq] = stored
        previous, expected = stored, seq + 1
        report.sealed += 1
    report.head = previous
    last = expected - 1
    if head is None:
        report.add("the log's head is missing (deleted)")
    elif head[2] is None:  # never sealed: a new ledger, before its first keyed command
        if last or head[0]:
            report.add("the head has no MAC though the log was sealed (reset)")
    elif not chain_broken:
        head_seq, head_hash, head_mac = int(head[0]), bytes(head[1]), bytes(head[2])
        if not hmac.compare_digest(key.head_mac(head_seq, head_hash), head_mac):
            report.add(
                f"the head (entry {head_seq}) was rewound or rewritten: its MAC does not verify"
            )
        elif head_seq > last:
            report.add(
                f"sealed entries {last + 1} to {head_seq} deleted from the end "
                f"(the head says {head_seq})"
            )
        elif head_seq < last:
            report.add(f"seals {head_seq + 1} to {last} are past the head (inserted)")
        elif not hmac.compare_digest(head_hash, previous):
            report.add(f"the head is not seal {last}'s hash (rewritten)")
    unsealed = sorted(set(by_id) - sealed_ids)
    report.unsealed = len(unsealed)
    for entry_id in unsealed:
        entry = by_id[entry_id]
        if not entry.sealable(key):
            report.add(
                f"entry {entry_id} ({entry.at} {entry.action} {entry.terminal}) was inserted "
                "without the ledger key: its MAC does not verify, and it is never sealed"
            )
    plays = list(plays)
    _check_payments(key, report, by_id.values(), payments, ticket_of_serial)
    _check_plays(report, by_id.values(), plays)
    if money is not None:
        _check_money(key, report, by_id.values(), plays, money)
    for checkpoint in checkpoints:
        report.checkpoints += checkpoint.format == CHECKPOINT_FORMAT  # a witness is said apart
        name = checkpoint.source or f"the checkpoint of entry {checkpoint.seq}"
        kept = at_seq.get(checkpoint.seq)
        if kept is None:
            report.add(
                f"{name}: entry {checkpoint.seq} is no longer in the sealed log (it was "
                f"truncated, or rewritten, before {checkpoint.at})"
            )
        elif not hmac.compare_digest(kept, checkpoint.head):
            report.add(f"{name}: the log up to entry {checkpoint.seq} was rewritten after it")
    return report


def paid_amount(answer: str) -> int | None:
    """The amount of a ``PAID <amount>`` answer, else None."""
    if answer.startswith("PAID ") and answer[5:].isdigit():
        return int(answer[5:])
    return None


def _check_payments(
    key: LogKey,
    report: LogReport,
    entries: Iterable[Entry],
    payments: Iterable[Payment],
    ticket_of_serial: Callable[[str], int | None],
) -> None:
    paid: dict[int, Entry] = {}
    for entry in entries:
        amount = paid_amount(entry.answer)
        if entry.action == "claim" and amount is not None and entry.ticket is not None:
            ticket = ticket_of_serial(entry.ticket)
            if ticket is not None:
                paid[ticket] = entry
    seen = set()
    for payment in payments:
        report.payments += 1
        seen.add(payment.ticket)
        owner = paid.get(payment.ticket)
        mac = key.payment_mac(payment.ticket, payment.amount_eur, payment.paid_at, payment.terminal)
        if not hmac.compare_digest(mac, bytes(payment.mac)):
            report.add(
                f"the payment of ticket {payment.ticket} was edited or inserted: its MAC does "
                "not verify"
            )
        elif owner is None:
            report.add(f"the payment of ticket {payment.ticket} has no PAID entry in the log")
        elif (paid_amount(owner.answer), owner.at, owner.terminal) != (
            payment.amount_eur,
            payment.paid_at,
            payment.terminal,
        ):
            report.add(
                f"the payment of ticket {payment.ticket} does not match its entry {owner.id}"
            )
    for ticket, entry in paid.items():
        if ticket not in seen:
            report.add(
                f"the payment of ticket {entry.ticket} (entry {entry.id}, {entry.answer} to "
                f"{entry.terminal} at {entry.at}) was deleted"
            )


def _check_plays(report: LogReport, entries: Iterable[Entry], plays: Iterable[PlayRecord]) -> None:
    logged: dict[str, tuple[Entry, PlayRecord | None]] = {}
    for entry in entries:
        if entry.action == PLAY_ACTION:
            described = _play_of_entry(entry)
            name = described.id if described else f"entry {entry.id}"
            if name in logged:
                report.add(f"entries {logged[name][0].id} and {entry.id} both record the play "
                           f"{name} (one inserted)")  # fmt: skip
            logged[name] = (entry, described)
    for play in plays:
        report.plays += 1
        found = logged.pop(play.id, None)
        if found is None:
            report.add(f"the play {play.id} of {play.player} has no entry in the log (inserted)")
        elif found[1] != play:
            report.add(f"the play {play.id} of {play.player} does not match its entry "
                       f"{found[0].id} (edited)")  # fmt: skip
    for entry, described in logged.values():
        if described is None:
            report.add(f"entry {entry.id} (play) does not describe a play (edited)")
        else:
            report.add(
                f"the play {described.id} of {described.player} (entry {entry.id}, unit "
                f"{described.unit}, lot {described.lot_cents} cents) was deleted"
            )


def _check_money(
    key: LogKey,
    report: LogReport,
    entries: Iterable[Entry],
    plays: Sequence[PlayRecord],
    money: MoneyRows,
) -> None:
    """Each play row's MAC; each wallet entry's; each balance against its entries; each play
    against its debit and credit and each of those against its play; each opening deposit
    against its registration's entry; each stake counter against the day's plays."""
    for play in plays:
        if not key.macs_verify(money.play_macs.get(play.id), key.play_mac(play)):
            report.add(f"the play {play.id} of {play.player} was edited or inserted: its MAC "
                       "does not verify")  # fmt: skip
    sums: dict[str, int] = {}
    moves: dict[tuple[str, str], WalletEntry] = {}
    for entry, mac in money.wallet:
        report.wallet += 1
        if not key.macs_verify(mac, key.wallet_mac(entry)):
            report.add(
                f"the wallet entry {entry.kind} {entry.reference} of {entry.player} was edited "
                "or inserted: its MAC does not verify"
            )
        sign = -1 if entry.kind == "debit" else 1
        sums[entry.player] = sums.get(entry.player, 0) + sign * entry.amount_cents
        moves[(entry.reference, entry.kind)] = entry
    for player, balance in sorted(money.balances.items()):
        report.balances += 1
        if balance != sums.get(player, 0):
            report.add(
                f"the balance of {player} is {balance} cents, its wallet entries give "
                f"{sums.get(player, 0)} (set by a database writer)"
            )
    by_play = {play.id: play for play in plays}
    calls = _check_outbox(key, report, by_play, money)
    for play in plays:
        for kind, amount in (("debit", play.stake_cents), ("credit", play.lot_cents)):
            move = moves.get((play.id, kind)) or calls.get((play.id, kind))
            if move is None and amount:
                report.add(f"the play {play.id} of {play.player} has no {kind} of {amount} "
                           "cents in the wallet (deleted)")  # fmt: skip
            elif move is not None and (move.player, move.amount_cents) != (play.player, amount):
                report.add(f"the {kind} of the play {play.id} does not match the play")
    registered: dict[str, int] = {}
    for logged in entries:
        if logged.action == "player":
            cents = _registered_cents(logged.answer)
            if cents is not None:
                registered[logged.given] = cents
    for (reference, kind), move in moves.items():
        if kind in ("debit", "credit") and reference not in by_play:
            report.add(f"the wallet's {kind} {reference} of {move.player} has no play (inserted)")
        elif (
            kind == "deposit"
            and reference == opening_reference(move.player)
            and registered.get(move.player) != move.amount_cents
        ):
            report.add(f"the opening deposit of {move.player} does not match its "
                       "registration in the log")  # fmt: skip
    for player, cents in registered.items():
        if cents and (opening_reference(player), "deposit") not in moves:
            report.add(f"the opening deposit of {player} ({cents} cents) was deleted")
    staked: dict[tuple[str, str], int] = {}
    for play in plays:
        day = play.played_at[:10]
        staked[(play.player, day)] = staked.get((play.player, day), 0) + play.stake_cents
    for player, (stake_day, cents) in sorted(money.stakes.items()):
        if stake_day is not None and staked.get((player, stake_day), 0) != cents:
            report.add(
                f"the stake counter of {player} says {cents} cents on {stake_day}, its plays "
                f"{staked.get((player, stake_day), 0)} (set by a database writer)"
            )


def _check_outbox(
    key: LogKey, report: LogReport, by_play: dict[str, PlayRecord], money: MoneyRows
) -> dict[tuple[str, str], WalletEntry]:
    """Each call of the outbox: its MAC; a confirmed debit or a credit has its play (of that
    player, stake and lot), a cancel its debit and no play.  The calls as wallet movements,
    by (reference, kind), for the plays' own check."""
    calls: dict[tuple[str, str], WalletEntry] = {}
    states: dict[tuple[str, str], str] = {}
    for call, mac, state in money.outbox:
        report.wallet += 1
        if not key.macs_verify(mac, key.outbox_mac(call)):
            report.add(f"the wallet call {call.kind} {call.reference} of {call.player} was "
                       "edited or inserted: its MAC does not verify")  # fmt: skip
        states[(call.reference, call.kind)] = state
        if call.kind != "cancel":
            calls[(call.reference, call.kind)] = WalletEntry(
                call.reference, call.kind, call.player, call.amount_cents, call.created_at
            )
    for (reference, kind), state in states.items():
        play = by_play.get(reference)
        if kind == "cancel":
            if (reference, "debit") not in states:
                report.add(f"the wallet cancel {reference} has no debit (inserted)")
            elif play is not None:
                report.add(f"the play {reference} was dealt, yet its debit is cancelled")
        elif play is None and (kind == "credit" or state == "confirmed"):
            report.add(f"the wallet's {kind} {reference} has no play (its play deleted)")
    return calls


def describe(report: LogReport) -> str:
    """One line: what was checked, or the first problem (and how many more)."""
    if report.ok:
        unsealed = f", {report.unsealed} awaiting their seal" if report.unsealed else ""
        witnessed = f", {report.checkpoints} checkpoint(s) kept" if report.checkpoints else ""
        money = (
            f", {report.wallet} wallet entries and {report.balances} balances to the plays "
            "and deposits"
            if report.wallet or report.balances
            else ""
        )
        if report.units:
            money += f", {report.units} units to their committed leaves"
        return (
            f"{report.sealed} entries, every one chained to the one before under the ledger "
            f"key{unsealed}; {report.payments} payments bound to their entries, "
            f"{report.plays} plays to theirs{money}{witnessed}; "
            f"head {report.head.hex()}"
        )
    more = len(report.problems) - 1 + report.more
    return report.problems[0] + (f" (and {more} more problems)" if more else "")


def seal_batch(
    key: LogKey, head_seq: int, head_hash: bytes, pending: Iterable[Entry]
) -> tuple[list[tuple[int, int, bytes]], int, bytes]:
    """Chain ``pending`` entries (in the order given) after the head: the seal rows (seq, row
    id, hash) and the new head's seq and hash."""
    rows = []
    seq, previous = head_seq, head_hash
    for entry in pending:
        seq += 1
        previous = key.seal_hash(previous, seq, entry.id, entry.canonical())
        rows.append((seq, entry.id, previous))
    return rows, seq, previous
