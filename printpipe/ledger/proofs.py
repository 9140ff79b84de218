"""The ledger's side of a block's public commitment: load it, prove each payment, report.

Everything here runs inside a transaction of :class:`printpipe.ledger.book.Ledger` (``tx``):

- **Load** (``ledger import MANIFEST --commitment FILE``): the countersigned commitment in
  ``commitments``; the tree rebuilt from the block manifest's records as they are imported
  (``commitment.lottery.manifest_commitment``, the code of ``commitment sign``), its nodes and
  the sealed salts written as they come (``printpipe.ledger.tree``); a manifest whose tree is
  not the commitment's is refused with the whole import.  Tickets paid before their block's
  commitment was loaded get their proof then: the manifest's records hold their VIRNs.
- **Prove** (in the claim's transaction, once the payment is written): the ticket's serial and
  prize, the VIRN from the scanned code, the unsealed salt and the stored path make its
  ``printpipe-inclusion-proof/1``, checked against the committed root before it is stored
  with the payment (``payment_proofs``, append-only).  A proof reveals its ticket's VIRN and
  prize, so the ledger gives one only for a paid ticket (and a play's unit to its player:
  ``printpipe.ledger.plays``).
- **Report** (``ledger remaining``): per prize tier, committed, paid (each lot with its stored
  proof; an online block's lots are won by plays, never paid at a terminal: each
  winning play's unit is proven there and then, from the tree and the sealed salts, a page of
  plays at a time, since it is no secret once dealt) and remaining, read in one snapshot
  (``printpipe.commitment.remaining``); and each
  block's standing (:func:`read_standings`): an online block's place in the dealing order,
  units dealt and left to deal, a block's lots paid (or credited by plays) and left.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from printpipe import french
from printpipe.commitment.inclusion import InclusionProof, TicketOpening, make_proof
from printpipe.commitment.merkle import leaf_hash, root_from_audit_path
from printpipe.commitment.remaining import Remaining, prize_tiers, proof_line
from printpipe.commitment.statement import Commitment, parse_commitment
from printpipe.errors import PrintpipeError
from printpipe.handover import ParsedRecords
from printpipe.ids import TicketId
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.store import Tx, ticket_key, ticket_of_key
from printpipe.ledger.tree import (
    TreeRows,
    new_salt_nonce,
    read_leaf_and_path,
    read_leaves_and_paths,
    read_salt,
    read_salts_at,
)

_SPOOL_BYTES = 16 << 20
_PAGE_ROWS = 2000


@dataclass(frozen=True)
class LoadedCommitment:
    """A commitment the ledger holds, with what its rows need."""

    id: int
    commitment: Commitment
    salt_nonce: bytes
    closed_on: dt.date | None

    @property
    def name(self) -> str:
        c = self.commitment
        return (
            f"{c.game_id} block {c.block} (packs {c.first_pack_number:06d} to "
            f"{c.last_pack_number:06d})"
        )

    def ticket_keys(self) -> tuple[int, int]:
        """The first and last ticket keys (``printpipe.ledger.store.ticket_key``) of its packs."""
        c = self.commitment
        return (
            ticket_key(TicketId(c.game_number, c.first_pack_number, 0)),
            ticket_key(TicketId(c.game_number, c.last_pack_number, c.pack_size - 1)),
        )


_SELECT = "SELECT id, document, salt_nonce, closed_on FROM commitments "


@dataclass
class Commitments:
    """The commitments of one ledger, read from its ``commitments`` rows; their documents
    are parsed once (they never change: only ``closed_on`` is read every time)."""

    _parsed: dict[int, Commitment] = field(default_factory=dict)

    def _loaded(self, row: tuple) -> LoadedCommitment:
        key, document, nonce, closed_on = row
        commitment = self._parsed.get(key)
        if commitment is None:
            commitment = parse_commitment(document.encode())
            self._parsed[key] = commitment
        closed = dt.date.fromisoformat(closed_on) if closed_on else None
        return LoadedCommitment(int(key), commitment, bytes(nonce), closed)

    def by_id(self, tx: Tx, commitment: int) -> LoadedCommitment:
        """The commitment of that row (one the caller knows exists, e.g. a play's)."""
        row = tx.one(_SELECT + "WHERE id = ?", (commitment,))
        if row is None:
            raise PrintpipeError(f"the ledger holds no commitment {commitment}")
        return self._loaded(row)

    def of_ticket(self, tx: Tx, ticket: TicketId) -> LoadedCommitment | None:
        row = tx.one(
            _SELECT + "WHERE game_number = ? AND first_pack <= ? AND last_pack >= ?",
            (ticket.game, ticket.pack, ticket.pack),
        )
        return self._loaded(row) if row is not None else None

    def find(self, tx: Tx, *, game: str | None, block: int | None, where: str) -> LoadedCommitment:
        """The one commitment of ``game`` (an id) and ``block`` (None: any)."""
        conditions: list[str] = ["1 = 1"]
        params: list[object] = []
        if game is not None:
            conditions.append("game = ?")
            params.append(game)
        if block is not None:
            conditions.append("block = ?")
            params.append(block)
        rows = tx.execute(
            f"{_SELECT} WHERE {' AND '.join(conditions)} ORDER BY game, block, first_pack", params
        )
        if not rows:
            raise no_commitment(where, game=game, block=block)
        if len(rows) > 1:
            names = ", ".join(self._loaded(row).name for row in rows)
            raise PrintpipeError(
                f"the ledger {where} holds several commitments ({names}): name one with "
                "--game and --block"
            )
        return self._loaded(rows[0])


def no_commitment(where: str, *, game: str | None, block: int | None) -> PrintpipeError:
    """The error of a ledger holding no commitment of ``game`` and ``block`` (None: any)."""
    wanted = " ".join(
        part for part in (game or "", f"block {block}" if block is not None else "") if part
    )
    return PrintpipeError(
        f"the ledger {where} holds no commitment{' of ' + wanted if wanted else ''} "
        "(load one: printpipe ledger import BLOCK_MANIFEST --commitment COMMITMENT)"
    )


# -- load --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Unproven:
    ticket: TicketId
    prize_eur: int
    virn: int
    salt: bytes


class CommitmentLoad:
    """Loads a commitment with its tree in an import's transaction: :meth:`on_batch` sees each
    batch of checked records (after the import stored them), ``nodes`` is the tree's sink."""

    def __init__(
        self, tx: Tx, *, commitment: Commitment, manifest_id: int, key: LedgerKey, stamp: str
    ) -> None:
        overlapping = tx.one(
            "SELECT game, block, first_pack, last_pack FROM commitments "
            "WHERE game_number = ? AND first_pack <= ? AND last_pack >= ?",
            (commitment.game_number, commitment.last_pack_number, commitment.first_pack_number),
        )
        if overlapping is not None:
            game, block, first, last = overlapping
            raise PrintpipeError(
                f"commitment {commitment.name} refused: the ledger holds the commitment of "
                f"{game} block {block}, packs {first:06d} to {last:06d}, which covers some of "
                "its packs"
            )
        self.tx = tx
        self.key = key
        nonce = new_salt_nonce()
        created = tx.one(
            "INSERT INTO commitments (game, game_number, block, first_pack, last_pack, tickets, "
            "root, document, salt_nonce, manifest, loaded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                commitment.game_id,
                commitment.game_number,
                commitment.block,
                commitment.first_pack_number,
                commitment.last_pack_number,
                commitment.tickets,
                commitment.root,
                commitment.to_json().decode(),
                nonce,
                manifest_id,
                stamp,
            ),
        )
        assert created is not None
        self.loaded = LoadedCommitment(int(created[0]), commitment, nonce, None)
        self.nodes = TreeRows(tx, commitment=self.loaded.id, key=key, salt_nonce=nonce)
        self._unproven: list[_Unproven] = []

    def on_batch(self, parsed: ParsedRecords) -> None:
        self.nodes.add_salts(parsed.salts)
        keys = parsed.keys
        if not len(keys):
            return
        paid = self.tx.execute(
            "SELECT p.ticket FROM payments p LEFT JOIN payment_proofs q ON q.ticket = p.ticket "
            "WHERE p.ticket BETWEEN ? AND ? AND q.ticket IS NULL",
            (int(keys.min()), int(keys.max())),
        )
        for (key,) in paid:
            i = int(np.searchsorted(keys, key))
            if i < len(keys) and keys[i] == key:
                self._unproven.append(
                    _Unproven(
                        ticket_of_key(int(key)),
                        int(parsed.prize_eur[i]),
                        int(parsed.virn[i]),
                        bytes(parsed.salts[i]),
                    )
                )

    def finish(self) -> int:
        """Write the last rows, and prove the tickets paid before the tree was there; how
        many were."""
        self.nodes.finish()
        for ticket in self._unproven:
            store_proof(
                self.tx,
                self.loaded,
                ticket=ticket.ticket,
                prize_eur=ticket.prize_eur,
                virn=ticket.virn,
                key=self.key,
                salt=ticket.salt,
            )
        return len(self._unproven)


# -- prove -------------------------------------------------------------------------------------


def store_proof(
    tx: Tx,
    loaded: LoadedCommitment,
    *,
    ticket: TicketId,
    prize_eur: int,
    virn: int,
    key: LedgerKey,
    salt: bytes | None = None,
) -> InclusionProof:
    """Make a paid ticket's proof from the stored tree, check it leads to the committed root,
    and store it with the payment (in the payment's transaction)."""
    commitment = loaded.commitment
    index = commitment.leaf_index(ticket.pack, ticket.ticket)
    if index is None:  # pragma: no cover - the commitment was found by the ticket's pack
        raise PrintpipeError(f"ticket {ticket.serial} is not in {loaded.name}")
    if salt is None:
        salt = read_salt(
            tx, commitment=loaded.id, index=index, key=key, salt_nonce=loaded.salt_nonce
        )
    opening = TicketOpening(
        serial=ticket.serial,
        prize_eur=prize_eur,
        virn=f"{virn:010d}" if commitment.has_virn else None,
        salt=salt,
    )
    own, path = read_leaf_and_path(tx, commitment=loaded.id, index=index, size=commitment.tickets)
    proof = checked_proof(loaded, opening, index=index, stored_leaf=own, path=path,
                          what=f"ticket {ticket.serial}")  # fmt: skip
    tx.execute(
        "INSERT INTO payment_proofs (ticket, commitment, proof) VALUES (?, ?, ?)",
        (ticket_key(ticket), loaded.id, proof.to_json().decode()),
    )
    return proof


def checked_proof(
    loaded: LoadedCommitment,
    opening: TicketOpening,
    *,
    index: int,
    stored_leaf: bytes,
    path: list[bytes],
    what: str,
) -> InclusionProof:
    """The inclusion proof of ``opening`` (leaf ``index`` of ``loaded``'s tree), once its leaf
    hash is the one the ledger stored and its audit path leads to the committed root; else the
    ledger is damaged (``what``: the ticket or unit, as the refusal names it).  Every proof
    the ledger gives is checked so: a paid ticket's, a play's, the prizes remaining's."""
    commitment = loaded.commitment
    hashed = leaf_hash(opening.leaf())
    if (
        stored_leaf != hashed
        or root_from_audit_path(hashed, index, commitment.tickets, path) != commitment.root
    ):
        raise PrintpipeError(
            f"the ledger's tree of {loaded.name} does not prove {what}: the ledger is damaged"
        )
    return make_proof(commitment, opening, path)


# -- report ------------------------------------------------------------------------------------


def read_remaining(
    tx: Tx, loaded: LoadedCommitment, *, at: str, key: LedgerKey | None = None
) -> tuple[Remaining, IO[bytes]]:
    """The prizes remaining of a commitment and its paid lots' proofs (one line each, in a
    temporary file, in ticket order), read in the snapshot ``tx``.  A printed block's lots are
    its payments, each with its stored proof; an online block's are its winning plays' units,
    each proven here from the stored tree and salts (``key``: the ledger key, to unseal
    them)."""
    head = tx.one("SELECT seq, hash FROM audit_head WHERE id = 1")
    assert head is not None
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 - returned
    try:
        if loaded.commitment.dealt_online:
            if key is None:
                raise PrintpipeError(
                    f"the ledger key is needed to prove the lots won in {loaded.name} (--keys DIR)"
                )
            paid = _write_play_proofs(tx, loaded, key, spool)
        else:
            paid = _write_payment_proofs(tx, loaded, spool)
    except BaseException:
        spool.close()
        raise
    remaining = Remaining(
        commitment=loaded.commitment,
        at=at,
        audit_entries=int(head[0]),
        audit_head=bytes(head[1]),
        closed_on=loaded.closed_on.isoformat() if loaded.closed_on else None,
        tiers=prize_tiers(loaded.commitment, paid),
    )
    return remaining, spool


def _write_payment_proofs(tx: Tx, loaded: LoadedCommitment, spool: IO[bytes]) -> dict[int, int]:
    """A printed block's payments' stored proofs, page by page; its lots paid per tier."""
    first, last = loaded.ticket_keys()
    paid = {
        int(amount): int(count)
        for amount, count in tx.execute(
            "SELECT amount_eur, COUNT(*) FROM payments WHERE ticket BETWEEN ? AND ? "
            "GROUP BY amount_eur",
            (first, last),
        )
    }
    proofs, after = 0, -1
    while page := tx.execute(
        "SELECT ticket, proof FROM payment_proofs WHERE commitment = ? AND ticket > ? "
        "ORDER BY ticket LIMIT ?",
        (loaded.id, after, _PAGE_ROWS),
    ):
        for _, proof in page:
            spool.write(proof_line(proof))
        proofs += len(page)
        after = int(page[-1][0])
    if proofs != sum(paid.values()):
        raise PrintpipeError(
            f"the ledger holds {proofs:,} proofs of the {sum(paid.values()):,} payments of "
            f"{loaded.name}: it is damaged"
        )
    return paid


def _write_play_proofs(
    tx: Tx, loaded: LoadedCommitment, key: LedgerKey, spool: IO[bytes]
) -> dict[int, int]:
    """An online block's winning plays' units proven, page by page (each page's tree rows
    and salts read once); its lots won per tier.  Each proof is checked against the committed
    root before it is written, as a play's proof is (``Dealer.proof``)."""
    commitment = loaded.commitment
    first, last = loaded.ticket_keys()
    (winning,) = tx.one(
        "SELECT COUNT(*) FROM plays WHERE commitment = ? AND lot_cents > 0", (loaded.id,)
    ) or (0,)
    won: dict[int, int] = {}
    proofs, after = 0, first - 1
    while page := tx.execute(
        "SELECT unit, lot_cents FROM plays WHERE unit > ? AND unit <= ? AND commitment = ? "
        "AND lot_cents > 0 ORDER BY unit LIMIT ?",
        (after, last, loaded.id, _PAGE_ROWS),
    ):
        tickets = [ticket_of_key(int(unit)) for unit, _ in page]
        indices = []
        for ticket in tickets:
            index = commitment.leaf_index(ticket.pack, ticket.ticket)
            if index is None:
                raise PrintpipeError(
                    f"the ledger's play of unit {ticket.serial} is not of {loaded.name}: the "
                    "ledger is damaged"
                )
            indices.append(index)
        salts = read_salts_at(
            tx, commitment=loaded.id, indices=indices, key=key, salt_nonce=loaded.salt_nonce
        )
        paths = read_leaves_and_paths(
            tx, commitment=loaded.id, indices=indices, size=commitment.tickets
        )
        for (_, cents), ticket, index, salt, (own, path) in zip(
            page, tickets, indices, salts, paths, strict=True
        ):
            lot_eur, odd = divmod(int(cents), 100)
            if odd:  # a lot is its unit's prize, whole euros: a euro's part is an edit
                raise PrintpipeError(
                    f"the ledger's play of unit {ticket.serial} has a lot of "
                    f"{french.eur(int(cents))}, not whole euros: the ledger is damaged"
                )
            won[lot_eur] = won.get(lot_eur, 0) + 1
            opening = TicketOpening(serial=ticket.serial, prize_eur=lot_eur, virn=None, salt=salt)
            what = f"unit {ticket.serial} with the lot of its play ({lot_eur:,} EUR)"
            proof = checked_proof(loaded, opening, index=index, stored_leaf=own, path=path,
                                  what=what)  # fmt: skip
            spool.write(proof_line(proof))
        proofs += len(page)
        after = int(page[-1][0])
    if proofs != int(winning):  # pragma: no cover - one snapshot: the same plays
        raise PrintpipeError(
            f"the ledger holds {proofs:,} winning plays of {loaded.name} in its units' range, "
            f"{int(winning):,} in all: it is damaged"
        )
    return won


# -- each block's standing ---------------------------------------------------------------------


@dataclass(frozen=True)
class BlockStanding:
    """Where one committed block of the ledger stands: its units (tickets), and for an online
    block its place in the dealing order and its units dealt and left to deal (None for a
    printed block: the ledger knows its lots paid, not its sales), its lots committed and
    paid (an online block's: credited by its plays), in number and in EUR."""

    game: str
    block: int
    first_pack: int
    last_pack: int
    units: int
    place: int | None
    dealt: int | None
    left: int | None
    lots: int
    lots_eur: int
    paid: int
    paid_eur: int

    @property
    def lots_left(self) -> int:
        return self.lots - self.paid

    @property
    def eur_left(self) -> int:
        return self.lots_eur - self.paid_eur


def read_standings(
    tx: Tx, commitments: Commitments, *, game: str | None = None, block: int | None = None
) -> list[BlockStanding]:
    """Each committed block's standing (of ``game``, of ``block``: None, every one), read in
    the snapshot ``tx``: the online blocks in their dealing order, then the printed ones by
    game, block and packs."""
    rows = tx.execute(_SELECT + "ORDER BY id")
    places = {int(c): (None if p is None else int(p))
              for c, p in tx.execute("SELECT commitment, place FROM deal_orders")}  # fmt: skip
    standings = []
    for row in rows:
        loaded = commitments._loaded(row)
        c = loaded.commitment
        if (game is not None and c.game_id != game) or (block is not None and c.block != block):
            continue
        lots = sum(t.tickets for t in c.tiers if t.amount_eur > 0)
        lots_eur = sum(t.tickets * t.amount_eur for t in c.tiers)
        online = loaded.id in places
        if online:
            ((played,),) = tx.execute("SELECT COUNT(*) FROM plays WHERE commitment = ?",
                                      (loaded.id,))  # fmt: skip
            ((paid, cents),) = tx.execute(
                "SELECT COUNT(*), COALESCE(SUM(lot_cents), 0) FROM plays "
                "WHERE commitment = ? AND lot_cents > 0",
                (loaded.id,),
            )
            ((left,),) = tx.execute(
                "SELECT COALESCE(SUM(end_position - next_position), 0) FROM deal_ranges "
                "WHERE commitment = ?",
                (loaded.id,),
            )
            paid_eur, dealt_units, left_units = int(cents) // 100, int(played), int(left)
        else:
            first, last = loaded.ticket_keys()
            ((paid, paid_eur),) = tx.execute(
                "SELECT COUNT(*), COALESCE(SUM(amount_eur), 0) FROM payments "
                "WHERE ticket BETWEEN ? AND ?",
                (first, last),
            )
            paid_eur, dealt_units, left_units = int(paid_eur), None, None
        standings.append(BlockStanding(
            c.game_id, c.block, c.first_pack_number, c.last_pack_number, c.tickets,
            places.get(loaded.id), dealt_units, left_units, lots, lots_eur, int(paid), paid_eur,
        ))  # fmt: skip
    standings.sort(key=lambda b: (b.game, b.place is None, b.place or 0, b.block, b.first_pack))
    return standings


def describe_standings(standings: list[BlockStanding]) -> str:
    """The standings as the command line prints them: per game, a line a block (an online
    game's in its dealing order) and its total."""
    lines: list[str] = []
    for game in sorted({b.game for b in standings}):
        blocks = [b for b in standings if b.game == game]
        online = all(b.place is not None for b in blocks)
        units = sum(b.units for b in blocks)
        head = f"{game}: {len(blocks)} block{'s' if len(blocks) > 1 else ''}"
        if online:
            dealt = sum(b.dealt or 0 for b in blocks)
            left = sum(b.left or 0 for b in blocks)
            head += (f" dealt in this order, {units:,} units: {dealt:,} dealt, {left:,} left to "
                     "deal" + (" (sold out)" if not left else ""))  # fmt: skip
        else:
            head += f", {units:,} tickets (the ledger knows the lots paid, not the tickets sold)"
        lines += [head, "  place  block  packs                 units      dealt       left"
                        "   lots left    EUR left"]  # fmt: skip

        def number(value: int | None) -> str:
            return "-" if value is None else f"{value:,}"

        for b in blocks:
            packs = f"{b.first_pack:06d} to {b.last_pack:06d}"
            lines.append(
                f"  {number(b.place):>5}  {b.block:>5}  {packs:<16} {b.units:>10,} "
                f"{number(b.dealt):>10} {number(b.left):>10} {b.lots_left:>11,} "
                f"{b.eur_left:>11,}"
            )
        lines.append(
            f"  {'total':<30} {units:>10,} "
            f"{number(sum(b.dealt or 0 for b in blocks) if online else None):>10} "
            f"{number(sum(b.left or 0 for b in blocks) if online else None):>10} "
            f"{sum(b.lots_left for b in blocks):>11,} {sum(b.eur_left for b in blocks):>11,}"
        )
    return "\n".join(lines)
