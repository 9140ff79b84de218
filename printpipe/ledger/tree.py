"""A block's commitment tree in the ledger: every node, and every leaf salt sealed.

The ledger answers a paid claim with the ticket's inclusion proof (``docs/commitment.md``),
made in the claim's transaction: the ticket's serial and prize (its row), its VIRN (the scanned
code: the ledger holds VIRNs only as HMACs), its salt, and the hashes of its audit path.  So at
the import of a block manifest with its commitment the ledger keeps:

- **Every node of the tree**, level 0 (the leaf hashes) to the root, as
  ``merkle.TreeBuilder`` hands them over, a level's nodes :data:`NODES_PER_ROW` to a row
  (``merkle_nodes(commitment, level, chunk, hashes)``, 3.8 KB a row): 25,000 rows for a
  block of 1,500,000 tickets instead of 3,000,000, which is what keeps the import fast.  A proof
  reads one row per level (21 for a block), in one statement.  The low levels cannot be
  recomputed (they need the neighbours' VIRNs), nor the high ones cheaply (half a block).
- **Every salt, sealed**: ChaCha20-Poly1305 under ``HKDF(ledger key, "leaf salts")``,
  :data:`SALTS_PER_ROW` salts to a row (``sealed_salts``), the nonce a random 8 bytes drawn
  for the commitment then the row's number.  Never in clear: a salt with its stored leaf hash
  gives the ticket's VIRN in 10^10 hashes, which is what the VIRN's HMAC is there to prevent.

Leaf hashes and nodes are hashes of salted leaves: they tell nothing of any ticket.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from printpipe.commitment.merkle import HASH_SIZE, Digests, audit_path_nodes, level_widths
from printpipe.errors import PrintpipeError
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.store import Tx
from printpipe.ledger.store.schema import BIGINT
from printpipe.rng import LEAF_SALT_SIZE

NODES_PER_ROW = 120
"""Nodes of one level per ``merkle_nodes`` row: 3,840 bytes, so that a row fills one 4 KB
page of SQLite (at 64 a row, 2 KB, two rows did not fit a page: half of it was lost) and two
rows an 8 KB page of PostgreSQL (inline: the column is ``STORAGE PLAIN``)."""
SALTS_PER_ROW = 120
"""Salts per ``sealed_salts`` row: 3,840 bytes sealed as one message, its 16-byte tag after."""
SALT_PURPOSE = b"printpipe ledger: leaf salts"
SALT_NONCE_SIZE = 8
"""Random bytes drawn per commitment; the nonce is them then the row's number (4 bytes)."""
_ROWS_PER_INSERT = 512


def salt_cipher(key: LedgerKey) -> ChaCha20Poly1305:
    return ChaCha20Poly1305(key.derive(SALT_PURPOSE))


def new_salt_nonce() -> bytes:
    return os.urandom(SALT_NONCE_SIZE)


def _nonce(prefix: bytes, chunk: int) -> bytes:
    return prefix + chunk.to_bytes(4, "big")


def _associated(commitment: int, chunk: int) -> bytes:
    return b"leaf salts %d %d" % (commitment, chunk)


class TreeRows:
    """Writes a tree's nodes to ``merkle_nodes`` as ``merkle.TreeBuilder`` finishes them (an
    ``on_nodes`` sink), and the block's salts to ``sealed_salts`` as the records come: holds
    at most one unfinished row per level and one of salts."""

    def __init__(self, tx: Tx, *, commitment: int, key: LedgerKey, salt_nonce: bytes) -> None:
        self.tx = tx
        self.commitment = commitment
        self._cipher = salt_cipher(key)
        self._salt_nonce = salt_nonce
        self._levels: list[bytearray] = []  # per level: the hashes of its unwritten row
        self._next_chunk: list[int] = []
        self._salts = bytearray()
        self._salt_chunk = 0
        self._node_rows: list[tuple[int, int, int, bytes]] = []
        self._salt_rows: list[tuple[int, int, bytes]] = []
        self.rows = 0

    def __call__(self, level: int, first: int, hashes: Digests) -> None:
        while level >= len(self._levels):
            self._levels.append(bytearray())
            self._next_chunk.append(0)
        pending = self._levels[level]
        expected = self._next_chunk[level] * NODES_PER_ROW + len(pending) // HASH_SIZE
        if first != expected:  # pragma: no cover - TreeBuilder gives each level in order
            raise AssertionError(f"level {level}: node {first} came where {expected} was due")
        pending += np.ascontiguousarray(hashes, dtype=np.uint8).tobytes()
        row_bytes = NODES_PER_ROW * HASH_SIZE
        whole = len(pending) // row_bytes
        for k in range(whole):
            chunk = self._next_chunk[level] + k
            self._node_rows.append(
                (self.commitment, level, chunk, bytes(pending[k * row_bytes : (k + 1) * row_bytes]))
            )
        if whole:
            del pending[: whole * row_bytes]
            self._next_chunk[level] += whole
        self._flush(final=False)

    def add_salts(self, salts: np.ndarray) -> None:
        """The next salts of the block, in leaf order (a ``(count, 32)`` uint8 array)."""
        self._salts += np.ascontiguousarray(salts, dtype=np.uint8).tobytes()
        row_bytes = SALTS_PER_ROW * LEAF_SALT_SIZE
        while len(self._salts) >= row_bytes:
            self._seal(bytes(self._salts[:row_bytes]))
            del self._salts[:row_bytes]
        self._flush(final=False)

    def finish(self) -> None:
        """Write the last, partial rows (call once the root is taken)."""
        for level, pending in enumerate(self._levels):
            if pending:
                self._node_rows.append(
                    (self.commitment, level, self._next_chunk[level], bytes(pending))
                )
                pending.clear()
        if self._salts:
            self._seal(bytes(self._salts))
            self._salts.clear()
        self._flush(final=True)

    def _seal(self, plain: bytes) -> None:
        chunk = self._salt_chunk
        sealed = self._cipher.encrypt(
            _nonce(self._salt_nonce, chunk), plain, _associated(self.commitment, chunk)
        )
        self._salt_rows.append((self.commitment, chunk, sealed))
        self._salt_chunk += 1

    def _flush(self, *, final: bool) -> None:
        if self._node_rows and (final or len(self._node_rows) >= _ROWS_PER_INSERT):
            self.tx.insert_rows(
                "merkle_nodes", ("commitment", "level", "chunk", "hashes"), self._node_rows
            )
            self.rows += len(self._node_rows)
            self._node_rows = []
        if self._salt_rows and (final or len(self._salt_rows) >= _ROWS_PER_INSERT):
            self.tx.insert_rows("sealed_salts", ("commitment", "chunk", "sealed"), self._salt_rows)
            self.rows += len(self._salt_rows)
            self._salt_rows = []


def _path_query(wanted: int) -> str:
    """One primary-key search per wanted row: the few constant rows drive the join (a row
    value ``IN (VALUES ...)`` made SQLite scan every row of the commitment instead)."""
    pairs = ", ".join(["(?, ?)"] * wanted)
    return (
        f"WITH wanted (level, chunk) AS (VALUES {pairs}) "
        "SELECT n.level, n.chunk, n.hashes FROM wanted w JOIN merkle_nodes n "
        "ON n.commitment = ? AND n.level = w.level AND n.chunk = w.chunk"
    )


_PAIRS_PER_STATEMENT = 400
"""Rows a statement of :func:`read_leaves_and_paths` asks for (two parameters each)."""
_CHUNKS_PER_STATEMENT = 500
"""Salt rows a statement of :func:`read_salts_at` asks for."""


def read_leaves_and_paths(
    tx: Tx, *, commitment: int, indices: Sequence[int], size: int
) -> list[tuple[bytes, list[bytes]]]:
    """Each leaf's own stored hash and its audit path (bottom-up), in ``indices``' order: the
    rows they need read once each (a row serves every leaf of a page near it), in a few
    statements (one for a few leaves)."""
    wanted = [[(0, index), *audit_path_nodes(index, size)] for index in indices]
    chunks = sorted(
        {(level, position // NODES_PER_ROW) for nodes in wanted for level, position in nodes}
    )
    rows: dict[tuple[int, int], bytes] = {}
    for start in range(0, len(chunks), _PAIRS_PER_STATEMENT):
        some = chunks[start : start + _PAIRS_PER_STATEMENT]
        params: list[int] = []
        for level, chunk in some:
            params += [level, chunk]
        params.append(commitment)
        for level, chunk, hashes in tx.execute(_path_query(len(some)), params):
            rows[int(level), int(chunk)] = bytes(hashes)
    found = []
    for nodes in wanted:
        hashes = []
        for level, position in nodes:
            row = rows.get((level, position // NODES_PER_ROW))
            at = (position % NODES_PER_ROW) * HASH_SIZE
            if row is None or len(row) < at + HASH_SIZE:
                raise PrintpipeError(
                    f"the ledger's tree of commitment {commitment} lacks node {position} of "
                    f"level {level}: the ledger is damaged"
                )
            hashes.append(row[at : at + HASH_SIZE])
        found.append((hashes[0], hashes[1:]))
    return found


def read_leaf_and_path(
    tx: Tx, *, commitment: int, index: int, size: int
) -> tuple[bytes, list[bytes]]:
    """Leaf ``index``'s own stored hash and its audit path (bottom-up), in one statement."""
    return read_leaves_and_paths(tx, commitment=commitment, indices=[index], size=size)[0]


def read_salts_at(
    tx: Tx, *, commitment: int, indices: Sequence[int], key: LedgerKey, salt_nonce: bytes
) -> list[bytes]:
    """Each leaf's salt, unsealed, in ``indices``' order: each sealed row they need read and
    opened once."""
    chunks = sorted({index // SALTS_PER_ROW for index in indices})
    sealed: dict[int, bytes] = {}
    for start in range(0, len(chunks), _CHUNKS_PER_STATEMENT):
        among, params = tx.any_of("chunk", BIGINT, chunks[start : start + _CHUNKS_PER_STATEMENT])
        for chunk, row in tx.execute(
            f"SELECT chunk, sealed FROM sealed_salts WHERE commitment = ? AND {among}",
            [commitment, *params],
        ):
            sealed[int(chunk)] = bytes(row)
    cipher = salt_cipher(key)
    plain: dict[int, bytes] = {}
    for chunk in chunks:
        if chunk not in sealed:
            index = next(i for i in indices if i // SALTS_PER_ROW == chunk)
            raise PrintpipeError(
                f"the ledger holds no salt of leaf {index} of commitment {commitment}: it is "
                "damaged"
            )
        try:
            plain[chunk] = cipher.decrypt(
                _nonce(salt_nonce, chunk), sealed[chunk], _associated(commitment, chunk)
            )
        except InvalidTag:
            raise PrintpipeError(
                f"the sealed salts of commitment {commitment} do not open with this ledger key: "
                "the ledger is damaged"
            ) from None
    return [
        plain[index // SALTS_PER_ROW][
            (index % SALTS_PER_ROW) * LEAF_SALT_SIZE : (index % SALTS_PER_ROW + 1) * LEAF_SALT_SIZE
        ]
        for index in indices
    ]


def read_salt(tx: Tx, *, commitment: int, index: int, key: LedgerKey, salt_nonce: bytes) -> bytes:
    """Leaf ``index``'s salt, unsealed."""
    return read_salts_at(
        tx, commitment=commitment, indices=[index], key=key, salt_nonce=salt_nonce
    )[0]


def read_salts(
    tx: Tx, *, commitment: int, size: int, key: LedgerKey, salt_nonce: bytes
) -> np.ndarray:
    """Every leaf salt of a commitment, unsealed: a ``(size, 32)`` uint8 array in leaf order."""
    cipher = salt_cipher(key)
    out = bytearray()
    rows = tx.execute(
        "SELECT chunk, sealed FROM sealed_salts WHERE commitment = ? ORDER BY chunk", (commitment,)
    )
    for expected, (chunk, sealed) in enumerate(rows):
        try:
            if int(chunk) != expected:
                raise InvalidTag
            out += cipher.decrypt(
                _nonce(salt_nonce, expected), bytes(sealed), _associated(commitment, expected)
            )
        except InvalidTag:
            raise PrintpipeError(
                f"the sealed salts of commitment {commitment} do not open with this ledger key "
                f"(row {expected}): the ledger is damaged"
            ) from None
    if len(out) != size * LEAF_SALT_SIZE:
        raise PrintpipeError(
            f"the ledger holds {len(out) // LEAF_SALT_SIZE} salts of commitment {commitment}, "
            f"not {size}: it is damaged"
        )
    return np.frombuffer(bytes(out), dtype=np.uint8).reshape(size, LEAF_SALT_SIZE)


def read_leaf_level(tx: Tx, *, commitment: int, size: int) -> np.ndarray | None:
    """The stored leaf hashes of a commitment (level 0), or None if rows are missing."""
    rows = tx.execute(
        "SELECT hashes FROM merkle_nodes WHERE commitment = ? AND level = 0 ORDER BY chunk",
        (commitment,),
    )
    data = b"".join(bytes(row[0]) for row in rows)
    if len(data) != size * HASH_SIZE:
        return None
    return np.frombuffer(data, dtype=np.uint8).reshape(size, HASH_SIZE)


def node_rows(tickets: int) -> int:
    """How many ``merkle_nodes`` rows a tree of ``tickets`` leaves takes."""
    return sum(-(-width // NODES_PER_ROW) for width in level_widths(tickets))
