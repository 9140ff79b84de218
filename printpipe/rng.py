"""The two-secret deterministic cryptographic generator.

A block's randomness comes from one 32-byte block key, derived with HKDF-SHA256 from the
producer's secret and the lottery's secret, with the game and block numbers in its info:
without both secrets nothing about the block can be predicted, and with both it is
reproduced bit for bit.

From the block key come independent ChaCha20 keystreams, one per (purpose, index), e.g.
one per pack.  Because a pack reads only its own stream, a pack range generated alone is
byte-identical to the same packs of the whole block.  Validation numbers (VIRN) come from
a keyed permutation of the ticket's place in the block (a Feistel network over AES), so
they are unique within a block by construction and unrelated to the prize.
"""

from __future__ import annotations

import enum
import hashlib
import math
import struct

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET_SIZE = 32
LEAF_SALT_SIZE = 32
_HKDF_SALT = b"printpipe/block-key/v1"
_VIRN_HALF = 10**5  # the Feistel halves of a 10-digit VIRN
_VIRN_ROUNDS = 10


class Purpose(enum.IntEnum):
    """Which part of a block a keystream feeds; each purpose gets its own streams."""

    POOLS = 1
    PACKS_OF_POOL = 2
    VARIANTS = 3
    PACK = 4
    LEAF_SALTS = 5


def commitment(secret: bytes) -> str:
    """The public SHA-256 commitment to a secret, published in the block summary."""
    return hashlib.sha256(secret).hexdigest()


def derive_block_key(
    producer_secret: bytes, lottery_secret: bytes, game_number: int, block: int
) -> bytes:
    """The 32-byte key of one block of one game, bound to both secrets."""
    for name, secret in (("producer", producer_secret), ("lottery", lottery_secret)):
        if len(secret) != SECRET_SIZE:
            raise ValueError(f"{name} secret must be {SECRET_SIZE} bytes, got {len(secret)}")
    info = f"printpipe block key|game={game_number:04d}|block={block}".encode()
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=info)
    return hkdf.derive(producer_secret + lottery_secret)


def derive_subkey(block_key: bytes, label: str) -> bytes:
    """A key for one use inside a block (e.g. the VIRN permutation), independent of the others."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=label.encode())
    return hkdf.derive(block_key)


class KeyStream:
    """A ChaCha20 keystream read in order; the draws below all consume it.

    Integer draws use 64-bit words: where a bound is not a power of two, the modulo bias
    is below bound / 2**64, under 2**-50 for every bound printpipe uses.
    """

    def __init__(self, block_key: bytes, purpose: Purpose, index: int) -> None:
        # RFC 7539 layout in `cryptography`: 4-byte little-endian counter, 12-byte nonce.
        nonce = struct.pack("<IIQ", 0, int(purpose), index)
        self._encryptor = Cipher(algorithms.ChaCha20(block_key, nonce), mode=None).encryptor()

    def read(self, size: int) -> bytes:
        return self._encryptor.update(bytes(size))

    def uint64(self, shape: int | tuple[int, ...]) -> np.ndarray:
        count = shape if isinstance(shape, int) else math.prod(shape)
        return np.frombuffer(self.read(8 * count), dtype="<u8").reshape(shape)

    def words(self, count: int) -> list[int]:
        """The next ``count`` 64-bit words as Python integers: :meth:`uint64`'s, for a caller
        drawing a few at a time in plain Python (numpy's cost per call would dominate)."""
        return list(struct.unpack(f"<{count}Q", self.read(8 * count)))

    def below(self, bounds: int | np.ndarray, shape: int | tuple[int, ...]) -> np.ndarray:
        """Integers uniform in ``[0, bound)``; ``bounds`` broadcasts against ``shape``."""
        return (self.uint64(shape) % np.asarray(bounds, dtype=np.uint64)).astype(np.int64)

    def bernoulli(self, probability: float, shape: int | tuple[int, ...]) -> np.ndarray:
        threshold = np.uint64(min(int(probability * 2.0**64), 2**64 - 1))
        return self.uint64(shape) < threshold

    def permutation(self, size: int) -> np.ndarray:
        """A uniformly random permutation of ``range(size)``."""
        return np.argsort(self.uint64(size), kind="stable")

    def row_ranks(self, shape: tuple[int, int]) -> np.ndarray:
        """For each row, a random permutation of ``range(shape[1])`` (the rank of each cell)."""
        order = np.argsort(self.uint64(shape), axis=1, kind="stable")
        return np.argsort(order, axis=1, kind="stable")


def virns(block_key: bytes, ticket_indices: np.ndarray) -> np.ndarray:
    """The 10-digit VIRN of each ticket, by its 0-based place in the block.

    A 10-round Feistel network over two base-10**5 halves is a permutation of
    ``[0, 10**10)``: distinct tickets of a block can never share a VIRN.
    """
    encryptor = Cipher(algorithms.AES(derive_subkey(block_key, "virn")), modes.ECB()).encryptor()
    x = ticket_indices.astype(np.uint64)
    left, right = x // _VIRN_HALF, x % _VIRN_HALF
    blocks = np.zeros((len(x), 2), dtype="<u8")
    for round_number in range(_VIRN_ROUNDS):
        blocks[:, 0] = round_number
        blocks[:, 1] = right
        words = np.frombuffer(encryptor.update(blocks.tobytes()), dtype="<u8").reshape(-1, 2)
        left, right = right, (left + words[:, 0] % _VIRN_HALF) % _VIRN_HALF
    return left * _VIRN_HALF + right


def leaf_salts(block_key: bytes, first_pack: int, last_pack: int, pack_size: int) -> np.ndarray:
    """The commitment salt of every ticket of packs ``first_pack`` to ``last_pack`` (0-based
    within the block, inclusive): a ``(tickets, 32)`` uint8 array, in block order.

    Each pack's salts are its own ChaCha20 keystream under a subkey of the block key, so a
    pack range has the same salts as the same packs of the whole block, and revealing salts
    (in a proof, or all of them once the block is closed) tells nothing of any other stream.
    """
    key = derive_subkey(block_key, "leaf salts")
    size = LEAF_SALT_SIZE * pack_size
    streams = b"".join(
        KeyStream(key, Purpose.LEAF_SALTS, pack).read(size)
        for pack in range(first_pack, last_pack + 1)
    )
    return np.frombuffer(streams, dtype=np.uint8).reshape(-1, LEAF_SALT_SIZE)
