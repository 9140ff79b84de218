"""``commitment.json``: a block's public commitment, signed by the producer and the lottery.

What it states (and nothing else: no ticket, no prize position, so it is published as is
before the first ticket is sold): the game and its definition's SHA-256, the block, its
packs, the number of tickets, the per-tier counts of its prize table, the root of the tree
of its tickets and how that tree and its leaves are built.

File format ``printpipe-commitment/1`` (UTF-8 JSON)::

    {"format": "printpipe-commitment/1",
     "statement": {...},
     "signatures": {"producer": {"key_sha256": HEX, "ed25519": HEX},
                    "lottery":  {"key_sha256": HEX, "ed25519": HEX}}}

Each signature is Ed25519 over ``printpipe-commitment/1 ROLE\\n`` followed by the statement in
canonical JSON (keys sorted, no spaces, ASCII; it holds only strings, whole numbers and
lists): the role in the signed bytes keeps a producer's signature from passing for the
lottery's, and the lottery's key, which signs other things too (proof packs), from being
replayed here.  ``key_sha256`` (SHA-256 of the raw public key) only names the key, for a
clear error; trust comes from the public key the verifier holds.  The producer signs at
``generate``; the lottery adds its signature (``printpipe commitment sign``) after its own
audit of the block manifest against the statement.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.block import BlockSummary
from printpipe.commitment.leaves import LEAF_LAYOUT, LEAF_SCHEME, leaf_fields
from printpipe.commitment.merkle import HASH_SIZE
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

FORMAT = "printpipe-commitment/1"
COMMITMENT_FILE = "commitment.json"
"""Where ``generate`` writes a block's commitment: in the block store folder."""
TREE_SCHEME = (
    "RFC 9162 section 2.1 with SHA-256: leaf hash SHA-256(0x00 || leaf), "
    "node hash SHA-256(0x01 || left || right); one leaf per ticket, in block order"
)
PRODUCER = "producer"
LOTTERY = "lottery"
ROLES = (PRODUCER, LOTTERY)
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Tier:
    amount_eur: int
    tickets: int


@dataclass(frozen=True)
class Signature:
    key_sha256: str
    ed25519: bytes


@dataclass(frozen=True)
class Commitment:
    """A parsed, well-formed commitment (its signatures not yet checked: see :func:`verify`)."""

    game_id: str
    game_number: int
    definition_sha256: str
    block: int
    first_pack_number: int
    last_pack_number: int
    pack_size: int
    tickets: int
    tiers: tuple[Tier, ...]
    root: bytes
    leaf_fields: tuple[str, ...]
    signatures: dict[str, Signature] = field(default_factory=dict)
    path: Path | None = field(default=None, compare=False)

    @property
    def has_virn(self) -> bool:
        return "virn" in self.leaf_fields

    @property
    def dealt_online(self) -> bool:
        """Its units are dealt online (``printpipe play``), their lots won by plays and
        credited to the players' wallets: a unit without a VIRN is never claimed at a retailer
        (the ledger imports such a block only with its commitment, for the game server)."""
        return not self.has_virn

    @property
    def name(self) -> str:
        return str(self.path) if self.path else f"{self.game_id} block {self.block}"

    def statement(self) -> dict[str, Any]:
        return {
            "game": {
                "id": self.game_id,
                "number": f"{self.game_number:04d}",
                "definition_sha256": self.definition_sha256,
            },
            "block": self.block,
            "packs": {
                "first_pack_number": self.first_pack_number,
                "last_pack_number": self.last_pack_number,
                "pack_size": self.pack_size,
            },
            "tickets": self.tickets,
            "tiers": [{"amount_eur": t.amount_eur, "tickets": t.tickets} for t in self.tiers],
            "tree": {"scheme": TREE_SCHEME, "root": self.root.hex()},
            "leaf": {
                "scheme": LEAF_SCHEME,
                "fields": list(self.leaf_fields),
                "layout": LEAF_LAYOUT,
            },
        }

    def signed_message(self, role: str) -> bytes:
        """The bytes ``role`` signs: the format and role, then the canonical statement."""
        return f"{FORMAT} {role}\n".encode() + canonical_json(self.statement())

    def sign(self, role: str, key: Ed25519PrivateKey) -> Commitment:
        signature = Signature(
            key_fingerprint(key.public_key()), key.sign(self.signed_message(role))
        )
        return replace(self, signatures={**self.signatures, role: signature})

    def to_json(self) -> bytes:
        document = {
            "format": FORMAT,
            "statement": self.statement(),
            "signatures": {
                role: {"key_sha256": s.key_sha256, "ed25519": s.ed25519.hex()}
                for role, s in sorted(self.signatures.items(), key=lambda i: ROLES.index(i[0]))
            },
        }
        return json.dumps(document, indent=2, ensure_ascii=True).encode() + b"\n"

    def leaf_index(self, pack_number: int, ticket: int) -> int | None:
        """Where a ticket's leaf is in the tree, or None if the ticket is not in this block."""
        if not self.first_pack_number <= pack_number <= self.last_pack_number:
            return None
        if not 0 <= ticket < self.pack_size:
            return None
        return (pack_number - self.first_pack_number) * self.pack_size + ticket

    def tier_amounts(self) -> set[int]:
        return {t.amount_eur for t in self.tiers if t.tickets > 0}


def key_fingerprint(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def commitment_from_summary(summary: BlockSummary) -> Commitment:
    """The (unsigned) commitment a block store's signed summary makes."""
    return Commitment(
        game_id=summary.game.id,
        game_number=int(summary.game.number),
        definition_sha256=summary.game.definition_sha256,
        block=summary.block,
        first_pack_number=summary.packs.first_pack_number,
        last_pack_number=summary.packs.last_pack_number,
        pack_size=summary.parameters.pack_size,
        tickets=summary.tickets,
        tiers=tuple(Tier(t.amount_eur, t.tickets) for t in summary.tiers),
        root=bytes.fromhex(summary.tree.root),
        leaf_fields=tuple(summary.tree.leaf_fields),
    )


# -- reading ---------------------------------------------------------------------------------


def parse_commitment(data: bytes, path: Path | None = None) -> Commitment:
    """A commitment from its file's bytes; one-line error if anything is out of its format."""
    name = str(path) if path else "commitment"
    try:
        document = exact_object(
            strict_json(data), {"format", "statement", "signatures"}, "the file"
        )
        if document["format"] != FORMAT:
            raise Malformed(f"it is not a {FORMAT} file")
        s = exact_object(
            document["statement"],
            {"game", "block", "packs", "tickets", "tiers", "tree", "leaf"},
            "statement",
        )
        game = exact_object(s["game"], {"id", "number", "definition_sha256"}, "statement.game")
        number = text(game["number"], "statement.game.number")
        if not (len(number) == 4 and number.isascii() and number.isdigit()):
            raise Malformed("statement.game.number must be 4 digits")
        packs = exact_object(
            s["packs"], {"first_pack_number", "last_pack_number", "pack_size"}, "statement.packs"
        )
        tree = exact_object(s["tree"], {"scheme", "root"}, "statement.tree")
        leaf = exact_object(s["leaf"], {"scheme", "fields", "layout"}, "statement.leaf")
        if tree["scheme"] != TREE_SCHEME:
            raise Malformed("statement.tree.scheme is not one this version knows")
        if leaf["scheme"] != LEAF_SCHEME or leaf["layout"] != LEAF_LAYOUT:
            raise Malformed("statement.leaf is not a leaf scheme this version knows")
        if leaf["fields"] not in (leaf_fields(True), leaf_fields(False)):
            raise Malformed("statement.leaf.fields are not this scheme's")
        if not isinstance(s["tiers"], list) or not s["tiers"]:
            raise Malformed("statement.tiers must be a list of tiers")
        tiers = tuple(
            Tier(
                whole_number(t["amount_eur"], f"statement.tiers[{i}].amount_eur"),
                whole_number(t["tickets"], f"statement.tiers[{i}].tickets"),
            )
            for i, t in enumerate(
                exact_object(t, {"amount_eur", "tickets"}, f"statement.tiers[{i}]")
                for i, t in enumerate(s["tiers"])
            )
        )
        commitment = Commitment(
            game_id=text(game["id"], "statement.game.id"),
            game_number=int(number),
            definition_sha256=hex_bytes(
                game["definition_sha256"], 32, "statement.game.definition_sha256"
            ).hex(),
            block=whole_number(s["block"], "statement.block", 1),
            first_pack_number=whole_number(
                packs["first_pack_number"], "statement.packs.first_pack_number", 1
            ),
            last_pack_number=whole_number(
                packs["last_pack_number"], "statement.packs.last_pack_number", 1
            ),
            pack_size=whole_number(packs["pack_size"], "statement.packs.pack_size", 1),
            tickets=whole_number(s["tickets"], "statement.tickets", 1),
            tiers=tiers,
            root=hex_bytes(tree["root"], HASH_SIZE, "statement.tree.root"),
            leaf_fields=tuple(leaf["fields"]),
            path=path,
        )
        packs_count = commitment.last_pack_number - commitment.first_pack_number + 1
        if packs_count < 1 or packs_count * commitment.pack_size != commitment.tickets:
            raise Malformed("statement.tickets is not its packs times their size")
        if sum(t.tickets for t in tiers) != commitment.tickets:
            raise Malformed("the tiers' tickets do not add up to statement.tickets")
        if len({t.amount_eur for t in tiers}) != len(tiers):
            raise Malformed("statement.tiers lists an amount twice")
        signatures = document["signatures"]
        if not isinstance(signatures, dict) or not set(signatures) <= set(ROLES):
            raise Malformed(f"signatures may only be by {' and '.join(ROLES)}")
        parsed = {
            role: Signature(
                hex_bytes(entry["key_sha256"], 32, f"signatures.{role}.key_sha256").hex(),
                hex_bytes(entry["ed25519"], 64, f"signatures.{role}.ed25519"),
            )
            for role, entry in (
                (role, exact_object(value, {"key_sha256", "ed25519"}, f"signatures.{role}"))
                for role, value in signatures.items()
            )
        }
    except Malformed as exc:
        raise PrintpipeError(f"commitment {name} refused: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise PrintpipeError(f"commitment {name} refused: it is not UTF-8 JSON") from None
    return replace(commitment, signatures=parsed)


def load_commitment(path: Path) -> Commitment:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise PrintpipeError(f"commitment {path} not found") from None
    except OSError as exc:
        raise PrintpipeError(f"cannot read commitment {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise PrintpipeError(f"commitment {path} refused: larger than any commitment")
    return parse_commitment(data, path)


# -- checking --------------------------------------------------------------------------------


def signature_problem(commitment: Commitment, role: str, key: Ed25519PublicKey) -> str | None:
    """Why ``role``'s signature does not hold with ``key`` (None when it does)."""
    signature = commitment.signatures.get(role)
    if signature is None:
        return f"it is not signed by the {role}" + (
            " (the lottery countersigns with `printpipe commitment sign`)"
            if role == LOTTERY
            else ""
        )
    if signature.key_sha256 != key_fingerprint(key):
        return f"the {role}'s signature is by another key than the one given"
    try:
        key.verify(signature.ed25519, commitment.signed_message(role))
    except InvalidSignature:
        return (
            f"the {role}'s signature does not verify (the statement or the signature was changed)"
        )
    return None


def verify_commitment(
    commitment: Commitment,
    producer_key: Ed25519PublicKey,
    lottery_key: Ed25519PublicKey | None,
) -> None:
    """Refuse, in one line, a commitment whose producer signature (and, with ``lottery_key``,
    the lottery's countersignature) does not hold."""
    checks = [(PRODUCER, producer_key)] + ([(LOTTERY, lottery_key)] if lottery_key else [])
    for role, key in checks:
        problem = signature_problem(commitment, role, key)
        if problem:
            raise PrintpipeError(f"commitment {commitment.name} refused: {problem}")


def statement_difference(expected: Commitment, got: Commitment) -> str | None:
    """What ``expected`` (rebuilt from the tickets) holds where ``got`` states otherwise, as
    the end of a sentence; None when the statements are the same."""
    a, b = expected.statement(), got.statement()
    for key in a:
        if a[key] == b[key]:
            continue
        if key == "tiers":
            for x, y in zip(a[key], b[key], strict=False):
                if x["amount_eur"] != y["amount_eur"]:
                    return f"a tier of {x['amount_eur']:,} EUR where it states {y['amount_eur']:,}"
                if x != y:
                    return (
                        f"{x['tickets']:,} tickets of {x['amount_eur']:,} EUR where it states "
                        f"{y['tickets']:,}"
                    )
            return f"{len(a[key])} tiers where it states {len(b[key])}"
        if key == "tree":
            return f"the root {a[key]['root']} where it states {b[key]['root']}"
        return f"another {key} than it states"
    return None


def verified_commitment(
    *, path: Path, producer_key: Ed25519PublicKey, lottery_key: Ed25519PublicKey
) -> Commitment:
    """A published commitment, both signatures checked."""
    commitment = load_commitment(path)
    verify_commitment(commitment, producer_key, lottery_key)
    return commitment


def describe(commitment: Commitment) -> str:
    """What a commitment states, for a person."""
    c = commitment
    lines = [
        f"commitment {c.name}: signed by the producer and countersigned by the lottery ({FORMAT})",
        f"game {c.game_id} ({c.game_number:04d}), block {c.block}, pack numbers "
        f"{c.first_pack_number:06d} to {c.last_pack_number:06d}, {c.tickets:,} tickets",
        f"root {c.root.hex()} (leaf {LEAF_SCHEME}: {', '.join(c.leaf_fields)})",
        "  amount EUR      tickets",
        *(f"  {t.amount_eur:>10,} {t.tickets:>12,}" for t in c.tiers),
    ]
    return "\n".join(lines)
