"""A public commitment per block: fixed before sale, provable ticket by ticket.

At ``generate`` the producer builds an RFC 9162 Merkle tree over one salted leaf per ticket
(``leaves``, ``tree``; the RFC's tree itself, which the ledger keeps too: ``merkle``), keeps
its root in the signed block summary and writes ``commitment.json`` (``statement``): game,
block, tickets, per-tier counts, root, scheme, signed by the producer.  The lottery
countersigns it after rebuilding the tree from the block manifest (``lottery``).  Anyone
checks a ticket's inclusion proof offline (``inclusion``); once the block is closed, the
lottery reveals every leaf and anyone recounts (``reveal``).  The audit checks a store against
its commitment (``check``).  Formats: ``docs/commitment.md``.
"""

from printpipe.commitment.check import check_store_commitment
from printpipe.commitment.inclusion import (
    PROOF_FORMAT,
    InclusionProof,
    TicketOpening,
    VerifiedProof,
    load_proof,
    make_proof,
    verify_proof_file,
    write_proof,
)
from printpipe.commitment.lottery import countersign
from printpipe.commitment.reveal import REVEAL_FORMAT, recount, write_reveal
from printpipe.commitment.statement import (
    COMMITMENT_FILE,
    FORMAT,
    LOTTERY,
    PRODUCER,
    Commitment,
    load_commitment,
    verify_commitment,
)

__all__ = [
    "COMMITMENT_FILE",
    "FORMAT",
    "LOTTERY",
    "PRODUCER",
    "PROOF_FORMAT",
    "REVEAL_FORMAT",
    "Commitment",
    "InclusionProof",
    "TicketOpening",
    "VerifiedProof",
    "check_store_commitment",
    "countersign",
    "load_commitment",
    "load_proof",
    "make_proof",
    "recount",
    "verify_commitment",
    "verify_proof_file",
    "write_proof",
    "write_reveal",
]
