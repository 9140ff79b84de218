"""Inclusion proofs: one ticket's serial, prize, VIRN and salt, and the path to the root.

A proof is what a player, a journalist or an auditor checks offline against the block's
published commitment, with the producer's and the lottery's public keys alone
(``printpipe verify-proof``).  It opens one leaf (its own ticket) and holds, of every other
ticket, only hashes: the siblings on its path are hashes of salted leaves or of nodes above
them, which reveal no serial, prize or VIRN.

File format ``printpipe-inclusion-proof/1`` (UTF-8 JSON)::

    {"format": "printpipe-inclusion-proof/1",
     "game": {"id": "chien-chat", "number": "0412"},
     "block": 1,
     "ticket": {"serial": "0412-000123-045-2", "prize_eur": 10,
                "virn": "0123456789", "salt": HEX64},      virn null for a game without VIRN
     "leaf_index": 15295,          the ticket's place in the block: pack offset * pack size + ticket
     "tree_size": 1500000,
     "audit_path": [HEX64, ...],   sibling hashes, leaf level first (RFC 9162 inclusion path)
     "root": HEX64}                the root it leads to: the commitment's

How it is checked, in order (each failure is one line): the commitment's two signatures; the
proof is of the commitment's game, block, size and root; the serial is well formed, of the
block, and at ``leaf_index``; the prize is one of the block's tiers; the leaf
(``printpipe.commitment.leaves``) and its path lead to the root (RFC 9162, 2.1.3.2).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from printpipe.atomic import write_atomic
from printpipe.commitment.leaves import SERIAL_PATTERN, VIRN_PATTERN, ticket_leaf
from printpipe.commitment.merkle import HASH_SIZE, audit_path_nodes, leaf_hash, root_from_audit_path
from printpipe.commitment.statement import Commitment, load_commitment, verify_commitment
from printpipe.commitment.strict import (
    Malformed,
    exact_object,
    hex_bytes,
    strict_json,
    whole_number,
)
from printpipe.errors import PrintpipeError
from printpipe.ids import gs1_check_digit
from printpipe.rng import LEAF_SALT_SIZE

PROOF_FORMAT = "printpipe-inclusion-proof/1"
MAX_PROOF_BYTES = 64 << 10
_KEYS = {"format", "game", "block", "ticket", "leaf_index", "tree_size", "audit_path", "root"}


@dataclass(frozen=True)
class TicketOpening:
    """What a proof reveals of its own ticket: exactly the leaf's contents."""

    serial: str
    prize_eur: int
    virn: str | None
    salt: bytes

    def leaf(self) -> bytes:
        return ticket_leaf(self.serial, self.prize_eur, self.virn, self.salt)


@dataclass(frozen=True)
class InclusionProof:
    game_id: str
    game_number: int
    block: int
    ticket: TicketOpening
    leaf_index: int
    tree_size: int
    audit_path: tuple[bytes, ...]
    root: bytes

    def document(self) -> dict[str, Any]:
        return {
            "format": PROOF_FORMAT,
            "game": {"id": self.game_id, "number": f"{self.game_number:04d}"},
            "block": self.block,
            "ticket": {
                "serial": self.ticket.serial,
                "prize_eur": self.ticket.prize_eur,
                "virn": self.ticket.virn,
                "salt": self.ticket.salt.hex(),
            },
            "leaf_index": self.leaf_index,
            "tree_size": self.tree_size,
            "audit_path": [h.hex() for h in self.audit_path],
            "root": self.root.hex(),
        }

    def to_json(self) -> bytes:
        return encode_proof(self.document())


def encode_proof(document: dict[str, Any]) -> bytes:
    """A proof's file bytes, from its document."""
    return json.dumps(document, indent=1, ensure_ascii=True).encode() + b"\n"


def serial_place(serial: str) -> tuple[int, int, int] | None:
    """Game, pack and ticket numbers of a well-formed serial with a right check digit."""
    if not SERIAL_PATTERN.fullmatch(serial):
        return None
    game, pack, ticket, check = serial.split("-")
    if gs1_check_digit(game + pack + ticket) != int(check):
        return None
    return int(game), int(pack), int(ticket)


def make_proof(
    commitment: Commitment, ticket: TicketOpening, audit_path: list[bytes]
) -> InclusionProof:
    """The proof of ``ticket`` in ``commitment``'s tree, given its audit path (from the
    tree's levels, wherever they are kept: ``merkle.audit_path`` or a database)."""
    place = serial_place(ticket.serial)
    index = commitment.leaf_index(place[1], place[2]) if place else None
    if place is None or place[0] != commitment.game_number or index is None:
        raise PrintpipeError(f"ticket {ticket.serial} is not in {commitment.name}")
    return InclusionProof(
        game_id=commitment.game_id,
        game_number=commitment.game_number,
        block=commitment.block,
        ticket=ticket,
        leaf_index=index,
        tree_size=commitment.tickets,
        audit_path=tuple(audit_path),
        root=commitment.root,
    )


def write_proof(path: Path, proof: InclusionProof) -> None:
    """A proof file, complete or absent (it tells the ticket's prize: keep it to its owner)."""
    write_atomic(path, proof.to_json())


def write_proof_document(path: Path, document: Any, *, source: str) -> InclusionProof:
    """A proof received as a JSON document (a claim's answer) written to ``path``, once it
    parses as a proof; its check against the commitment is ``verify-proof``'s."""
    proof = parse_proof(encode_proof(document), source)
    write_proof(path, proof)
    return proof


def parse_proof(data: bytes, name: str = "proof") -> InclusionProof:
    try:
        document = exact_object(strict_json(data), _KEYS, "the file")
        if document["format"] != PROOF_FORMAT:
            raise Malformed(f"it is not a {PROOF_FORMAT} file")
        game = exact_object(document["game"], {"id", "number"}, "game")
        ticket = exact_object(document["ticket"], {"serial", "prize_eur", "virn", "salt"}, "ticket")
        number = game["number"]
        if not (isinstance(number, str) and len(number) == 4 and number.isdigit()):
            raise Malformed("game.number must be 4 digits")
        if not isinstance(game["id"], str):
            raise Malformed("game.id must be a text")
        serial, virn = ticket["serial"], ticket["virn"]
        if not isinstance(serial, str) or not SERIAL_PATTERN.fullmatch(serial):
            raise Malformed("ticket.serial must be GGGG-PPPPPP-TTT-C")
        if virn is not None and not (isinstance(virn, str) and VIRN_PATTERN.fullmatch(virn)):
            raise Malformed("ticket.virn must be 10 digits (or null)")
        path = document["audit_path"]
        if not isinstance(path, list) or len(path) > 64:
            raise Malformed("audit_path must be a list of hashes")
        return InclusionProof(
            game_id=game["id"],
            game_number=int(number),
            block=whole_number(document["block"], "block", 1),
            ticket=TicketOpening(
                serial=serial,
                prize_eur=whole_number(ticket["prize_eur"], "ticket.prize_eur"),
                virn=virn,
                salt=hex_bytes(ticket["salt"], LEAF_SALT_SIZE, "ticket.salt"),
            ),
            leaf_index=whole_number(document["leaf_index"], "leaf_index"),
            tree_size=whole_number(document["tree_size"], "tree_size", 1),
            audit_path=tuple(
                hex_bytes(h, HASH_SIZE, f"audit_path[{i}]") for i, h in enumerate(path)
            ),
            root=hex_bytes(document["root"], HASH_SIZE, "root"),
        )
    except Malformed as exc:
        raise PrintpipeError(f"proof {name} refused: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise PrintpipeError(f"proof {name} refused: it is not UTF-8 JSON") from None


def load_proof(path: Path) -> InclusionProof:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PROOF_BYTES + 1)
    except FileNotFoundError:
        raise PrintpipeError(f"proof {path} not found") from None
    except OSError as exc:
        raise PrintpipeError(f"cannot read proof {path}: {exc.strerror}") from None
    if len(data) > MAX_PROOF_BYTES:
        raise PrintpipeError(f"proof {path} refused: larger than any proof")
    return parse_proof(data, str(path))


def proof_problem(proof: InclusionProof, commitment: Commitment) -> str | None:
    """Why ``proof`` does not prove its ticket in ``commitment`` (None when it does).

    The commitment's signatures are not checked here: :func:`verify_proof_file` does it first.
    """
    if (proof.game_id, proof.game_number, proof.block) != (
        commitment.game_id,
        commitment.game_number,
        commitment.block,
    ):
        return (
            f"it is a proof of {proof.game_id} block {proof.block}, the commitment is of "
            f"{commitment.game_id} block {commitment.block}"
        )
    if proof.tree_size != commitment.tickets:
        return f"its tree has {proof.tree_size:,} leaves, the commitment's {commitment.tickets:,}"
    if proof.root != commitment.root:
        return "it leads to another root than the commitment's"
    ticket = proof.ticket
    place = serial_place(ticket.serial)
    if place is None:
        return f"the serial {ticket.serial} has a wrong check digit"
    index = commitment.leaf_index(place[1], place[2])
    if place[0] != commitment.game_number or index is None:
        return f"ticket {ticket.serial} is not of this block"
    if index != proof.leaf_index:
        return (
            f"ticket {ticket.serial} is leaf {index:,} of the block, "
            f"the proof says {proof.leaf_index:,}"
        )
    if (ticket.virn is not None) != commitment.has_virn:
        return "its VIRN does not match the commitment's leaf scheme"
    if ticket.prize_eur not in commitment.tier_amounts():
        return f"{ticket.prize_eur} EUR is not a prize of this block"
    expected = len(audit_path_nodes(index, commitment.tickets))
    if len(proof.audit_path) != expected:
        return f"its audit path has {len(proof.audit_path)} hashes, leaf {index:,} needs {expected}"
    root = root_from_audit_path(
        leaf_hash(ticket.leaf()), index, commitment.tickets, proof.audit_path
    )
    if root != commitment.root:
        return (
            "the ticket's leaf and the audit path do not lead to the committed root "
            "(the serial, prize, VIRN, salt or a hash of the path was changed)"
        )
    return None


@dataclass(frozen=True)
class VerifiedProof:
    proof: InclusionProof
    commitment: Commitment

    def describe(self) -> str:
        ticket, c = self.proof.ticket, self.commitment
        outcome = f"wins {ticket.prize_eur:,} EUR" if ticket.prize_eur else "wins nothing"
        return (
            f"proof OK: ticket {ticket.serial} {outcome}; it is leaf {self.proof.leaf_index:,} "
            f"of the {c.tickets:,} of {c.game_id} block {c.block}, committed before sale "
            f"(root {c.root.hex()}), signed by the producer and countersigned by the lottery"
        )


def verify_proof_file(
    *,
    proof_path: Path,
    commitment_path: Path,
    producer_key: Ed25519PublicKey,
    lottery_key: Ed25519PublicKey,
) -> VerifiedProof:
    """Check a proof file against a commitment file and the two public keys, offline."""
    commitment = load_commitment(commitment_path)
    verify_commitment(commitment, producer_key, lottery_key)
    proof = load_proof(proof_path)
    problem = proof_problem(proof, commitment)
    if problem:
        raise PrintpipeError(f"proof {proof_path} refused: {problem}")
    return VerifiedProof(proof, commitment)
