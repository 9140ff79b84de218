"""The audit log's hash chain: every entry carries the hash of all the entries before it.

Entry ``n`` (``seq`` 1, 2, 3...) stores ``h_n = SHA-256(h_{n-1} || seq_n || canonical(entry_n))``
with ``h_0`` 32 zero bytes, ``seq_n`` 8 bytes big-endian and ``canonical`` the entry's fields
as one JSON array of ASCII strings (:func:`canonical_entry`).  The database computes ``h_n`` in
the statement that appends the entry (SQLite: a function registered on the connection;
PostgreSQL: ``sha256()`` in SQL), under the lock of the one ``audit_head`` row that holds the
last ``seq`` and hash, so the chain is a total order even with many writers.  Verifying
recomputes it from the start: an edited entry breaks its own hash, an inserted or deleted one
breaks its successor's (and the ``seq`` numbers, which have no gaps), and a deleted tail no
longer reaches the head.  Publishing or signing the head hash makes even a rewrite of the
head row detectable by whoever holds a copy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

GENESIS = bytes(32)
ENTRY_FIELDS = ("at", "terminal", "action", "input", "ticket", "answer")


def canonical_entry(
    at: str, terminal: str, action: str, given: str, ticket: str | None, answer: str
) -> bytes:
    """The bytes of an entry that its hash covers (every field; ``None`` as JSON null)."""
    return json.dumps(
        [at, terminal, action, given, ticket, answer], ensure_ascii=True, separators=(",", ":")
    ).encode("ascii")


def chain_hash(previous: bytes, seq: int, entry: bytes) -> bytes:
    return hashlib.sha256(previous + seq.to_bytes(8, "big") + entry).digest()


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What verifying a log found: ``entries`` checked, and the first break, if any."""

    entries: int
    head: bytes
    first_bad: int | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.first_bad is None and self.problem is None


def verify_chain(
    rows: Iterable[tuple[int, str, str, str, str, str | None, str, bytes]],
    *,
    head_seq: int,
    head_hash: bytes,
) -> ChainReport:
    """Recompute the chain over ``rows`` (seq, at, terminal, action, input, ticket, answer,
    hash), in ``seq`` order, and name the first entry that does not follow."""
    previous, expected_seq, count = GENESIS, 1, 0
    for seq, at, terminal, action, given, ticket, answer, stored in rows:
        stored = bytes(stored)
        if seq > expected_seq:
            missing = (
                f"{expected_seq}" if seq == expected_seq + 1 else f"{expected_seq} to {seq - 1}"
            )
            return ChainReport(count, previous, expected_seq, f"entry {missing} missing (deleted)")
        if seq < expected_seq:
            return ChainReport(count, previous, seq, f"entry {seq} appears twice (inserted)")
        entry = canonical_entry(at, terminal, action, given, ticket, answer)
        computed = chain_hash(previous, seq, entry)
        if computed != stored:
            return ChainReport(
                count,
                previous,
                seq,
                f"entry {seq} does not follow the entries before it "
                "(it was edited, or an entry before it was inserted or deleted)",
            )
        previous, expected_seq, count = stored, seq + 1, count + 1
    if count < head_seq:
        gap = f"{count + 1}" if head_seq == count + 1 else f"{count + 1} to {head_seq}"
        problem = f"entry {gap} missing (deleted from the end: the head says {head_seq})"
        return ChainReport(count, previous, count + 1, problem)
    if count > head_seq:
        problem = f"entry {head_seq + 1} is past the head (inserted at the end)"
        return ChainReport(count, previous, head_seq + 1, problem)
    if previous != head_hash:
        return ChainReport(count, previous, count, f"entry {count} is not the head's")
    return ChainReport(count, previous)
