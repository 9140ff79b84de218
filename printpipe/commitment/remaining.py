"""Prizes remaining: what the ledger has paid of a block's committed lots, provably.

The lottery publishes, per prize tier of a block, the lots committed before sale (the signed
``commitment.json``), the lots paid, each with its inclusion proof, and so the lots still in
the field.  Anyone checks, offline and with the two public keys alone, that every paid lot is
a ticket of the committed tree with that prize, that no lot is listed twice, and that paid +
remaining = committed in every tier (``printpipe verify-remaining``).  The ledger reads it in
one snapshot (``printpipe ledger remaining``): a claim is in it wholly or not at all, and the
header names the audit log's head at that moment.

File format ``printpipe-remaining/1`` (UTF-8, LF)::

    printpipe-remaining/1
    {"at":"2026-...Z","audit_log":{...},"block":1,...}   header: canonical JSON on one line
    signature <128 hex>                                  the lottery's Ed25519 over
                                                         "printpipe-remaining/1 lottery\\n"
                                                         + the header line
    {"audit_path":[...],"block":1,...}                   then one paid lot's proof a line
                                                         (printpipe-inclusion-proof/1,
                                                         canonical JSON), in ticket order

The header's ``proofs_sha256`` is the SHA-256 of every line after the signature, so the list
of paid lots is signed too.  A losing ticket is no lot: the tiers listed are the prizes.

"Paid" means gone from the field: an online block's lots (a commitment whose leaves hold no
VIRN: ``Commitment.dealt_online``) are won by plays (gone from the field once dealt; their
credit to the players' wallets may still be on its way, through an operator's wallet), and
its report lists each winning play's unit with its proof in the same fields, checked the same
way; only the words a person reads say "won" (:func:`lots_gone`).  So the format is the same
for both, and a verifier of either reads the other's reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.atomic import atomic_file
from printpipe.commitment.inclusion import InclusionProof, parse_proof, proof_problem
from printpipe.commitment.merkle import HASH_SIZE
from printpipe.commitment.signed_file import SignedFileFormat
from printpipe.commitment.statement import Commitment, load_commitment, verify_commitment
from printpipe.commitment.strict import (
    Malformed,
    canonical_json,
    exact_object,
    hex_bytes,
    strict_json,
    text,
    whole_number,
)
from printpipe.errors import PrintpipeError

REMAINING_FORMAT = "printpipe-remaining/1"
_FILE = SignedFileFormat(
    name=REMAINING_FORMAT,
    what="prizes-remaining report",
    header_keys=frozenset(
        {
            "format",
            "game",
            "block",
            "tickets",
            "root",
            "at",
            "closed_on",
            "audit_log",
            "tiers",
            "paid",
            "proofs_sha256",
        }
    ),
    max_header_bytes=1 << 16,
)
_MAX_PROOF_LINE = 8192


@dataclass(frozen=True)
class TierStanding:
    """One prize tier of a block: lots committed before sale, paid so far, still in the field."""

    amount_eur: int
    committed: int
    paid: int

    @property
    def remaining(self) -> int:
        return self.committed - self.paid


@dataclass(frozen=True)
class Remaining:
    """What a prizes-remaining report states (its proofs apart)."""

    commitment: Commitment
    at: str
    audit_entries: int
    audit_head: bytes
    closed_on: str | None
    tiers: tuple[TierStanding, ...]

    @property
    def paid(self) -> int:
        return sum(t.paid for t in self.tiers)

    def header(self, proofs_sha256: bytes) -> dict[str, Any]:
        c = self.commitment
        return {
            "format": REMAINING_FORMAT,
            "game": {"id": c.game_id, "number": f"{c.game_number:04d}"},
            "block": c.block,
            "tickets": c.tickets,
            "root": c.root.hex(),
            "at": self.at,
            "closed_on": self.closed_on,
            "audit_log": {"entries": self.audit_entries, "head": self.audit_head.hex()},
            "tiers": [
                {
                    "amount_eur": t.amount_eur,
                    "committed": t.committed,
                    "paid": t.paid,
                    "remaining": t.remaining,
                }
                for t in self.tiers
            ],
            "paid": self.paid,
            "proofs_sha256": proofs_sha256.hex(),
        }

    def describe(self) -> str:
        c = self.commitment
        closed = f", closed on {self.closed_on}" if self.closed_on else ""
        gone = "won by plays" if c.dealt_online else "paid"
        lines = [
            f"{c.game_id} block {c.block} at {self.at}{closed}: {self.paid:,} lots {gone}, "
            f"{sum(t.remaining for t in self.tiers):,} in the field (root {c.root.hex()}, "
            f"audit log entry {self.audit_entries:,})",
            f"  amount EUR    committed {lots_gone(c):>12}    remaining",
            *(
                f"  {t.amount_eur:>10,} {t.committed:>12,} {t.paid:>12,} {t.remaining:>12,}"
                for t in self.tiers
            ),
        ]
        return "\n".join(lines)


def lots_gone(commitment: Commitment) -> str:
    """What a report's ``paid`` lots are, in the words a person reads: a printed block's
    lots are paid at a terminal or office, an online block's won by plays (the field ``paid``
    counts both: lots no longer in the field; a lot won may not be credited yet, so the words
    never say it is)."""
    return "won" if commitment.dealt_online else "paid"


def prize_tiers(commitment: Commitment, paid: dict[int, int]) -> tuple[TierStanding, ...]:
    """The standing of each prize tier (the losing tier is no lot)."""
    return tuple(
        TierStanding(t.amount_eur, t.tickets, paid.get(t.amount_eur, 0))
        for t in commitment.tiers
        if t.amount_eur > 0
    )


def write_remaining(
    *,
    out: Path,
    remaining: Remaining,
    proof_lines: IO[bytes],
    signing_key: Ed25519PrivateKey,
) -> None:
    """Write a report, complete or absent: ``proof_lines`` holds the paid lots' proofs, one
    canonical JSON line each (read from its start)."""
    digest = hashlib.sha256()
    proof_lines.seek(0)
    while block := proof_lines.read(1 << 20):
        digest.update(block)
    header_line = canonical_json(remaining.header(digest.digest()))
    proof_lines.seek(0)
    with atomic_file(out) as handle:
        _FILE.write_head(handle, header_line, signing_key=signing_key)
        while block := proof_lines.read(1 << 20):
            handle.write(block)


def proof_line(proof: InclusionProof | bytes | str) -> bytes:
    """A proof, made or stored (``InclusionProof.to_json``), as one line of a report."""
    if isinstance(proof, InclusionProof):
        document = proof.document()
    else:
        document = strict_json(proof.encode() if isinstance(proof, str) else proof)
    return canonical_json(document) + b"\n"


# -- the public check ------------------------------------------------------------------------


def _refuse(path: Path, problem: str) -> PrintpipeError:
    return _FILE.refuse(path, problem)


def _stated(header: dict[str, Any], commitment: Commitment, path: Path) -> Remaining:
    """The header's statement, held to the commitment's block and tier counts."""
    try:
        same_block = (
            header["format"] == REMAINING_FORMAT
            and header["game"]
            == {"id": commitment.game_id, "number": f"{commitment.game_number:04d}"}
            and whole_number(header["block"], "block") == commitment.block
            and whole_number(header["tickets"], "tickets") == commitment.tickets
            and hex_bytes(header["root"], HASH_SIZE, "root") == commitment.root
        )
        if not same_block:
            raise _refuse(path, "it is not a report of this commitment's block")
        audit = exact_object(header["audit_log"], {"entries", "head"}, "audit_log")
        closed_on = header["closed_on"]
        if closed_on is not None:
            text(closed_on, "closed_on")
        if not isinstance(header["tiers"], list):
            raise Malformed("tiers must be a list")
        tiers = []
        for i, entry in enumerate(header["tiers"]):
            tier = exact_object(
                entry, {"amount_eur", "committed", "paid", "remaining"}, f"tiers[{i}]"
            )
            standing = TierStanding(
                whole_number(tier["amount_eur"], f"tiers[{i}].amount_eur", 1),
                whole_number(tier["committed"], f"tiers[{i}].committed"),
                whole_number(tier["paid"], f"tiers[{i}].paid"),
            )
            if whole_number(tier["remaining"], f"tiers[{i}].remaining") != standing.remaining:
                raise _refuse(
                    path,
                    f"in the tier of {standing.amount_eur:,} EUR, paid {standing.paid:,} + "
                    f"remaining {tier['remaining']:,} is not the {standing.committed:,} committed",
                )
            tiers.append(standing)
        committed = prize_tiers(commitment, {})
        if [(t.amount_eur, t.committed) for t in tiers] != [
            (t.amount_eur, t.committed) for t in committed
        ]:
            raise _refuse(path, "its tiers or their committed lots are not the commitment's")
        remaining = Remaining(
            commitment=commitment,
            at=text(header["at"], "at"),
            audit_entries=whole_number(audit["entries"], "audit_log.entries"),
            audit_head=hex_bytes(audit["head"], HASH_SIZE, "audit_log.head"),
            closed_on=closed_on,
            tiers=tuple(tiers),
        )
        if whole_number(header["paid"], "paid") != remaining.paid:
            raise _refuse(path, "its count of paid lots is not the sum of its tiers'")
        hex_bytes(header["proofs_sha256"], 32, "proofs_sha256")
    except Malformed as exc:
        raise _refuse(path, str(exc)) from None
    return remaining


@dataclass(frozen=True)
class VerifiedRemaining:
    remaining: Remaining

    def describe(self, path: Path) -> str:
        r = self.remaining
        gone = lots_gone(r.commitment)
        lots = "lots won by plays" if r.commitment.dealt_online else "paid lots"
        return (
            f"prizes remaining OK: {path} is signed by the lottery; each of its {r.paid:,} "
            f"{lots} is proven in the tree committed before sale, none twice, and {gone} + "
            f"remaining = committed in every tier\n{r.describe()}"
        )


def verify_remaining_file(
    *,
    report_path: Path,
    commitment_path: Path,
    producer_key: Ed25519PublicKey,
    lottery_key: Ed25519PublicKey,
) -> VerifiedRemaining:
    """Check a prizes-remaining report against the published commitment, offline: the
    commitment's two signatures, the lottery's signature of the report, its tiers against the
    committed counts, then every paid lot's proof, each ticket once, counted per tier."""
    commitment = load_commitment(commitment_path)
    verify_commitment(commitment, producer_key, lottery_key)
    path = report_path
    with _FILE.open_verified(path, lottery_key=lottery_key) as (header, handle):
        remaining = _stated(header, commitment, path)
        paid = _count_proofs(handle, commitment, path, header["proofs_sha256"])
    stated = {t.amount_eur: t.paid for t in remaining.tiers}
    for amount in sorted(set(stated) | set(paid)):
        if paid.get(amount, 0) != stated.get(amount, 0):
            raise _refuse(
                path,
                f"it lists {paid.get(amount, 0):,} proofs of {amount:,} EUR lots, its header "
                f"{stated.get(amount, 0):,} {lots_gone(commitment)}",
            )
    return VerifiedRemaining(remaining)


def _count_proofs(
    lines: Iterable[bytes], commitment: Commitment, path: Path, proofs_sha256: str
) -> dict[int, int]:
    digest = hashlib.sha256()
    seen: set[int] = set()
    paid: dict[int, int] = {}
    gone = lots_gone(commitment)
    for number, line in enumerate(lines, start=1):
        digest.update(line)
        if len(line) > _MAX_PROOF_LINE or not line.endswith(b"\n"):
            raise _refuse(path, f"{gone} lot {number} is not one line of a proof")
        proof = parse_proof(line, f"of {gone} lot {number} in {path}")
        problem = proof_problem(proof, commitment)
        if problem:
            raise _refuse(path, f"the proof of {gone} lot {number} fails: {problem}")
        if proof.ticket.prize_eur == 0:
            raise _refuse(path, f"{gone} lot {number}, ticket {proof.ticket.serial}, wins nothing")
        if proof.leaf_index in seen:
            raise _refuse(path, f"ticket {proof.ticket.serial} is listed twice")
        seen.add(proof.leaf_index)
        paid[proof.ticket.prize_eur] = paid.get(proof.ticket.prize_eur, 0) + 1
    if digest.hexdigest() != proofs_sha256:
        raise _refuse(path, f"its list of {gone} lots is not the one the lottery signed")
    return paid
