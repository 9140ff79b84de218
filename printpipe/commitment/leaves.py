"""What one leaf of a block's tree is: a ticket's serial, prize and VIRN, salted.

The leaf is a fixed layout, so that anyone can rebuild it from a proof with a few lines of
any language (``docs/commitment.md``)::

    salt       32 bytes   the ticket's own salt (ChaCha20 of the block key, rng.leaf_salts)
    serial     17 bytes   ASCII GGGG-PPPPPP-TTT-C
    prize_eur   8 bytes   unsigned big-endian
    virn       10 bytes   ASCII digits; absent for a game whose records have no VIRN

The salt is 256 secret bits per leaf: a leaf hash alone tells nothing of its ticket, not even
whether it wins, though serials, prizes and VIRNs are few.  The tree hashes SHA-256(0x00 ||
leaf) (``printpipe.commitment.merkle``).
"""

from __future__ import annotations

import re

import numpy as np

from printpipe.ids import SERIAL_LENGTH, VIRN_DIGITS, serials_array, virns_array
from printpipe.rng import LEAF_SALT_SIZE

LEAF_SCHEME = "printpipe-leaf/1"
PRIZE_BYTES = 8
SERIAL_PATTERN = re.compile(r"\d{4}-\d{6}-\d{3}-\d")
VIRN_PATTERN = re.compile(r"\d{10}")


def leaf_fields(has_virn: bool) -> list[str]:
    """The leaf's fields in order (what a commitment states)."""
    return ["salt", "serial", "prize_eur", *(["virn"] if has_virn else [])]


LEAF_LAYOUT = (
    "salt (32 bytes) || serial (17 ASCII bytes, GGGG-PPPPPP-TTT-C) || prize_eur (8 bytes, "
    "unsigned big-endian) || virn (10 ASCII digits, only when the fields list it)"
)


def ticket_leaves(
    game_number: int,
    pack_numbers: np.ndarray,
    tickets: np.ndarray,
    prize_eur: np.ndarray,
    virns: np.ndarray | None,
    salts: np.ndarray,
) -> np.ndarray:
    """The leaves of many tickets, a ``(count, length)`` uint8 array (row = one leaf).

    ``pack_numbers`` are printed pack numbers, ``virns`` None for a game without VIRNs.
    """
    count = len(tickets)
    width = LEAF_SALT_SIZE + SERIAL_LENGTH + PRIZE_BYTES + (VIRN_DIGITS if virns is not None else 0)
    leaves = np.empty((count, width), dtype=np.uint8)
    at = 0
    leaves[:, at : at + LEAF_SALT_SIZE] = salts
    at += LEAF_SALT_SIZE
    leaves[:, at : at + SERIAL_LENGTH] = serials_array(game_number, pack_numbers, tickets)
    at += SERIAL_LENGTH
    prizes = np.asarray(prize_eur, dtype=np.int64)
    if count and prizes.min() < 0:
        raise ValueError("a prize cannot be negative")
    leaves[:, at : at + PRIZE_BYTES] = (
        prizes.astype(">u8").view(np.uint8).reshape(count, PRIZE_BYTES)
    )
    at += PRIZE_BYTES
    if virns is not None:
        leaves[:, at:] = virns_array(np.asarray(virns))
    return leaves


def ticket_leaf(serial: str, prize_eur: int, virn: str | None, salt: bytes) -> bytes:
    """One ticket's leaf, from the values a proof states (the same bytes as
    :func:`ticket_leaves`); raises ValueError on a value that has no place in a leaf."""
    if len(salt) != LEAF_SALT_SIZE:
        raise ValueError(f"a salt is {LEAF_SALT_SIZE} bytes")
    if not SERIAL_PATTERN.fullmatch(serial):
        raise ValueError("a serial is GGGG-PPPPPP-TTT-C")
    if not 0 <= prize_eur < 2 ** (8 * PRIZE_BYTES):
        raise ValueError("a prize is a non-negative whole number of EUR")
    if virn is not None and not VIRN_PATTERN.fullmatch(virn):
        raise ValueError("a VIRN is 10 digits")
    return (
        salt
        + serial.encode("ascii")
        + prize_eur.to_bytes(PRIZE_BYTES, "big")
        + (virn.encode("ascii") if virn is not None else b"")
    )
