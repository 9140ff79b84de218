"""The order in which a block's units are dealt: fixed before sale, recorded, unpredictable.

An online block is dealt one unit a play, in an order nobody can aim at: not the players, not
the operator's staff who read the database (it holds every unit's lot in clear, by its place in
the block).  The order is a keyed permutation of the block's places: the unit dealt at position
``p`` (0, 1, 2, ... in the order plays come) is the leaf ``deal_order(p)`` of the block's
commitment tree.  Its key is ``HMAC-SHA256(HKDF(ledger key, "deal order"), commitment root)``:
a lottery secret held outside the database (``KEYS/ledger.key``), one order per committed block.

- **Fixed before sale**: it follows from the key and the commitment alone, both fixed when the
  block is loaded (``ledger import --commitment``), before the first play.
- **Recorded**: the import writes a keyed digest of the whole order (:func:`order_mac`: an
  HMAC-SHA256, under another sub-key of the ledger key, of the commitment root then each leaf
  index as 4 bytes big-endian, in deal order) to the ledger and its audit log; an auditor
  holding the ledger key recomputes it, and every play records its position and its leaf
  (``ledger verify-log`` checks each play's unit against the order at its position).
- **Unpredictable**: without the key, the next position's leaf is any undealt leaf.  Nothing
  stored narrows it: a plain hash of the order would (with the positions dealt and every
  unit's place in clear, the last units' order is found by trying each arrangement against
  it: 10! tries for the last 10); the keyed digest tells nothing to whoever lacks the key.

The permutation: a 10-round Feistel network over AES-256 on ``2k`` bits (the smallest even
width holding the block), cycle-walked into ``[0, n)``: a bijection by construction (the
tests check it for every size they draw), computed for one position in microseconds or for a
whole block at once, vectorised.
"""

from __future__ import annotations

import hashlib
import hmac
import struct

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

DEAL_PURPOSE = b"printpipe ledger: deal order"
DIGEST_PURPOSE = b"printpipe ledger: deal order digest"
ROUNDS = 10
MAX_UNITS = 1 << 32


def deal_key(ledger_subkey: bytes, root: bytes) -> bytes:
    """The key of one block's order: the ledger's deal sub-key bound to the commitment root."""
    return hmac.digest(ledger_subkey, b"deal order of root " + root, hashlib.sha256)


class DealOrder:
    """The keyed permutation of ``[0, units)``: position -> leaf index (and back)."""

    def __init__(self, key: bytes, units: int) -> None:
        if len(key) != 32:
            raise ValueError("a deal key is 32 bytes")
        if not 1 <= units <= MAX_UNITS:
            raise ValueError(f"a deal order is of 1 to {MAX_UNITS} units, not {units}")
        self.units = units
        self.half_bits = max(1, ((units - 1).bit_length() + 1) // 2)
        self._mask = np.uint64((1 << self.half_bits) - 1)
        self._cipher = Cipher(algorithms.AES(key), modes.ECB())

    def _rounds(self, values: np.ndarray, *, inverse: bool = False) -> np.ndarray:
        bits = np.uint64(self.half_bits)
        left, right = values >> bits, values & self._mask
        blocks = np.zeros((len(values), 2), dtype="<u8")
        encryptor = self._cipher.encryptor()
        order = range(ROUNDS - 1, -1, -1) if inverse else range(ROUNDS)
        for round_number in order:
            blocks[:, 0] = round_number
            if inverse:
                blocks[:, 1] = left
                words = np.frombuffer(encryptor.update(blocks.tobytes()), dtype="<u8")
                left, right = right ^ (words[0::2] & self._mask), left
            else:
                blocks[:, 1] = right
                words = np.frombuffer(encryptor.update(blocks.tobytes()), dtype="<u8")
                left, right = right, left ^ (words[0::2] & self._mask)
        return (left << bits) | right

    def _walk(self, positions: np.ndarray, *, inverse: bool) -> np.ndarray:
        values = np.asarray(positions, dtype=np.uint64)
        if len(values) and (values.max() >= self.units):
            raise ValueError(f"a position of this order is below {self.units}")
        out = self._rounds(values, inverse=inverse)
        outside = np.flatnonzero(out >= self.units)
        while len(outside):  # cycle walking: each cycle of the permutation of 2^2k meets [0, n)
            out[outside] = self._rounds(out[outside], inverse=inverse)
            outside = outside[out[outside] >= self.units]
        return out.astype(np.int64)

    def leaves(self, positions: np.ndarray) -> np.ndarray:
        """The leaf index dealt at each position."""
        return self._walk(positions, inverse=False)

    def leaf(self, position: int) -> int:
        """The leaf dealt at ``position``: the same permutation as :meth:`leaves`, one value
        in plain Python (a play's cost: numpy's per-call overhead would be most of it)."""
        if not 0 <= position < self.units:
            raise ValueError(f"a position of this order is below {self.units}")
        encryptor = self._cipher.encryptor()
        bits, mask = self.half_bits, int(self._mask)
        value = position
        while True:
            left, right = value >> bits, value & mask
            for round_number in range(ROUNDS):
                word = encryptor.update(struct.pack("<QQ", round_number, right))
                left, right = right, left ^ (int.from_bytes(word[:8], "little") & mask)
            value = left << bits | right
            if value < self.units:
                return value

    def positions(self, leaves: np.ndarray) -> np.ndarray:
        """The position at which each leaf is dealt (the inverse permutation)."""
        return self._walk(leaves, inverse=True)


def order_mac(order: DealOrder, digest_key: bytes, root: bytes, *, batch: int = 1 << 18) -> str:
    """HMAC-SHA256 under ``digest_key`` (the ledger key's :data:`DIGEST_PURPOSE` sub-key) of
    ``root`` then the whole order (each leaf index, 4 bytes big-endian, in deal order): what
    the ledger records at import, and an auditor recomputes with the ledger key.  Keyed, so
    that it cannot be used to test a guess of the order."""
    digest = hmac.new(digest_key, b"deal order of root " + root, hashlib.sha256)
    for start in range(0, order.units, batch):
        stop = min(order.units, start + batch)
        digest.update(order.leaves(np.arange(start, stop)).astype(">u4").tobytes())
    return digest.hexdigest()
