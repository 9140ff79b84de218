"""Merkle trees of RFC 9162 (Certificate Transparency 2.0), section 2.1, over numpy arrays.

Why this shape: it is the standard tree a third party can check with any implementation of
the RFC.  The leaf hash is SHA-256(0x00 || leaf) and the node hash SHA-256(0x01 || left ||
right): the two prefixes keep a node from being passed off as a leaf (second-preimage
forgeries).  For ``n`` leaves the tree splits at the largest power of two below ``n``; built
bottom-up, that is "pair neighbours, carry an unpaired last node up unchanged", which is what
:func:`tree_levels` does, one level at a time.

Levels are ``(width, 32)`` uint8 arrays: level 0 holds the leaf hashes in leaf order, the
last level holds the root alone.  Node ``p`` of level ``k`` is the hash of the leaves
``p * 2**k`` up to ``(p + 1) * 2**k`` (fewer at the right edge).  An inclusion proof ("audit
path") of leaf ``i`` is the list of its siblings' hashes bottom-up, one per level where it
has one: at most ``ceil(log2(n))`` hashes, 21 for 1,500,000 leaves.  :func:`audit_path_nodes`
says which stored nodes a path needs, so a database holding the levels answers with point
reads; :func:`root_from_audit_path` is the RFC's own verification algorithm (2.1.3.2).

A block's leaf hashes arrive a batch at a time (from ``generate``, the store, a decrypted
manifest): :class:`TreeBuilder` builds the same tree from them as they come, holding only the
batch being hashed and at most one node per level, and hands every finished node to whoever
stores the levels.  Only :func:`tree_levels` holds a whole tree, because it returns one.

Hashing uses ``hashlib`` one message at a time (about 0.4 us each): numpy lays the messages
out, Python only loops over the hash calls.  No library does batched RFC 9162 well; the tests
check this module against a plain recursive transcription of the RFC and against pymerkle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np

HASH_SIZE = 32
HASH_CHUNK_ROWS = 1 << 16
"""Messages laid out and hashed per chunk: 4 MB of leaves, the same speed as all at once."""
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"

Digests = np.ndarray
"""A ``(count, 32)`` uint8 array of SHA-256 digests, one per row."""


def leaf_hash(leaf: bytes) -> bytes:
    """SHA-256(0x00 || leaf): the hash of one leaf."""
    return hashlib.sha256(LEAF_PREFIX + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right): the hash of an inner node."""
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def empty_root() -> bytes:
    """The root of a tree of no leaves: SHA-256 of the empty string (RFC 9162, 2.1.1)."""
    return hashlib.sha256(b"").digest()


def _hash_prefixed(prefix: bytes, rows: np.ndarray) -> Digests:
    """SHA-256(prefix || row) of each row of a ``(count, width)`` uint8 array, a chunk of rows
    at a time: memory stays a few MB above the output, whatever the count."""
    count, width = rows.shape
    digests = np.empty((count, HASH_SIZE), dtype=np.uint8)
    length = 1 + width
    sha256 = hashlib.sha256
    for start in range(0, count, HASH_CHUNK_ROWS):
        part = rows[start : start + HASH_CHUNK_ROWS]
        messages = np.empty((len(part), length), dtype=np.uint8)
        messages[:, 0] = prefix[0]
        messages[:, 1:] = part
        view = messages.data.cast("B")
        chunk = b"".join(
            [sha256(view[i : i + length]).digest() for i in range(0, len(part) * length, length)]
        )
        digests[start : start + len(part)] = np.frombuffer(chunk, dtype=np.uint8).reshape(
            -1, HASH_SIZE
        )
    return digests


def leaf_hashes(leaves: np.ndarray) -> Digests:
    """The leaf hash of each row of a ``(count, length)`` uint8 array of leaves."""
    leaves = np.asarray(leaves, dtype=np.uint8)
    if leaves.ndim != 2:
        raise ValueError("leaves must be a (count, length) array")
    return _hash_prefixed(LEAF_PREFIX, leaves)


def level_widths(size: int) -> list[int]:
    """How many nodes each level of a tree of ``size`` leaves holds, leaves first, root last."""
    if size < 0:
        raise ValueError(f"a tree cannot have {size} leaves")
    widths = [size]
    while widths[-1] > 1:
        widths.append((widths[-1] + 1) // 2)
    return widths


def tree_height(size: int) -> int:
    """The longest audit path in a tree of ``size`` leaves: ceil(log2(size))."""
    return max(len(level_widths(size)) - 1, 0)


def _next_level(level: Digests) -> Digests:
    pairs = len(level) // 2
    parents = _hash_prefixed(NODE_PREFIX, level[: 2 * pairs].reshape(pairs, 2 * HASH_SIZE))
    if len(level) % 2:
        parents = np.concatenate([parents, level[-1:]])  # the unpaired last node goes up as is
    return parents


def tree_levels(hashes: Digests) -> list[Digests]:
    """Every level of the tree over these leaf hashes: leaves first, the root's level last."""
    level = np.ascontiguousarray(hashes, dtype=np.uint8)
    if level.ndim != 2 or level.shape[1] != HASH_SIZE:
        raise ValueError("leaf hashes must be a (count, 32) array")
    levels = [level]
    while len(level) > 1:
        level = _next_level(level)
        levels.append(level)
    return levels


def levels_root(levels: Sequence[Digests]) -> bytes:
    """The root of a tree given by its levels."""
    top = levels[-1]
    return empty_root() if len(top) == 0 else bytes(top[0])


def tree_root(hashes: Digests) -> bytes:
    """The root of the tree over these leaf hashes (RFC 9162 MTH), keeping no level but the
    one being built."""
    builder = TreeBuilder()
    builder.add(hashes)
    return builder.root()


NodesSink = Callable[[int, int, Digests], None]
"""Receives finished nodes: their level, the position of the first, their hashes in order."""

_NO_NODE = np.empty((0, HASH_SIZE), dtype=np.uint8)


class TreeBuilder:
    """The tree over leaf hashes given in order, a batch at a time, in bounded memory.

    The same tree as :func:`tree_levels` builds bottom-up ("pair neighbours, carry an unpaired
    last node up unchanged"), with batches of any sizes: each level pairs what it can and keeps
    its last node while it waits for a right-hand neighbour, so memory is the batch being
    hashed and at most one node per level (21 for a block), however many leaves there are.

    ``on_nodes`` is given every node of every level once it is final (the leaf hashes as
    level 0, the root last), in order within each level: node ``p`` of level ``k`` is then
    exactly ``tree_levels(...)[k][p]``.  A store of the levels (the ledger's) writes them as
    they come instead of holding the tree.
    """

    def __init__(self, *, on_nodes: NodesSink | None = None) -> None:
        self.size = 0
        self._on_nodes = on_nodes
        self._waiting: list[Digests] = []  # per level: no node, or its last one, unpaired yet
        self._finished: list[int] = []  # per level: how many of its nodes are final
        self._root: bytes | None = None

    def add(self, hashes: Digests) -> None:
        """The next leaf hashes, a ``(count, 32)`` array, in leaf order."""
        if self._root is not None:
            raise ValueError("the tree is finished: its root was taken")
        nodes = np.ascontiguousarray(hashes, dtype=np.uint8)
        if nodes.ndim != 2 or nodes.shape[1] != HASH_SIZE:
            raise ValueError("leaf hashes must be a (count, 32) array")
        self.size += len(nodes)
        level = 0
        while len(nodes):
            self._finish(level, nodes)
            waiting = self._waiting[level]
            if len(waiting):
                nodes = np.concatenate([waiting, nodes])
            pairs = len(nodes) // 2
            self._waiting[level] = nodes[2 * pairs :].copy()
            nodes = _hash_prefixed(NODE_PREFIX, nodes[: 2 * pairs].reshape(pairs, 2 * HASH_SIZE))
            level += 1

    @property
    def held_nodes(self) -> int:
        """How many nodes it holds between batches, waiting for a neighbour: at most one per
        level of the tree."""
        return sum(len(waiting) for waiting in self._waiting)

    def root(self) -> bytes:
        """The root of the tree over every leaf hash added; no leaf can be added after."""
        if self._root is not None:
            return self._root
        if self.size == 0:
            self._root = empty_root()
            return self._root
        height = tree_height(self.size)
        carried = _NO_NODE  # the last node of the level below, paired or carried up unchanged
        for level in range(height):
            if len(carried):
                self._finish(level, carried)
            last = np.concatenate([self._waiting[level], carried])
            self._waiting[level] = _NO_NODE
            if len(last) == 2:
                carried = _hash_prefixed(NODE_PREFIX, last.reshape(1, 2 * HASH_SIZE))
            else:
                carried = last
        if len(carried):
            self._finish(height, carried)
        top = np.concatenate([self._waiting[height], carried])
        if len(top) != 1:  # pragma: no cover - each level keeps at most one node waiting
            raise AssertionError(f"a tree of {self.size} leaves ended with {len(top)} roots")
        self._root = bytes(top[0])
        return self._root

    def _finish(self, level: int, nodes: Digests) -> None:
        """``nodes`` are final at ``level``: count them, and hand them on."""
        if level == len(self._finished):
            self._finished.append(0)
            self._waiting.append(_NO_NODE)
        if self._on_nodes is not None:
            self._on_nodes(level, self._finished[level], nodes)
        self._finished[level] += len(nodes)


def _check_index(index: int, size: int) -> None:
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")


def audit_path_nodes(index: int, size: int) -> list[tuple[int, int]]:
    """The (level, position) of each node of leaf ``index``'s audit path, bottom-up.

    What a store of the levels must read to prove one leaf: one node per level at most.
    """
    _check_index(index, size)
    nodes = []
    position = index
    for level, width in enumerate(level_widths(size)[:-1]):
        sibling = position ^ 1
        if sibling < width:
            nodes.append((level, sibling))
        position >>= 1
    return nodes


def audit_path(levels: Sequence[Digests], index: int) -> list[bytes]:
    """The inclusion proof of leaf ``index``: its siblings' hashes, bottom-up."""
    return [bytes(levels[k][p]) for k, p in audit_path_nodes(index, len(levels[0]))]


def root_from_audit_path(
    hash_of_leaf: bytes, index: int, size: int, path: Sequence[bytes]
) -> bytes | None:
    """The root that ``path`` leads to from leaf ``index``, or None if the path cannot be a
    path of that leaf in a tree of ``size`` leaves (RFC 9162, 2.1.3.2, step for step)."""
    if not 0 <= index < size:
        return None
    fn, sn = index, size - 1
    r = hash_of_leaf
    for p in path:
        if len(p) != HASH_SIZE or sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_inclusion(
    hash_of_leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> bool:
    """Whether ``path`` proves that leaf ``index`` of a tree of ``size`` leaves with this
    root has this hash."""
    return root_from_audit_path(hash_of_leaf, index, size, path) == root


# -- many leaves at once ---------------------------------------------------------------------


def audit_paths(levels: Sequence[Digests], indices: np.ndarray) -> np.ndarray:
    """The audit paths of many leaves, level-aligned: a ``(count, height, 32)`` array whose
    slot ``k`` holds the sibling at level ``k`` (zeros where the leaf has none at that level).

    :func:`compact_path` turns a row into the list :func:`audit_path` gives.
    """
    size = len(levels[0])
    indices = np.asarray(indices, dtype=np.int64)
    if len(indices) and (indices.min() < 0 or indices.max() >= size):
        raise ValueError(f"leaf indices must be within a tree of {size} leaves")
    widths = level_widths(size)[:-1]
    paths = np.zeros((len(indices), len(widths), HASH_SIZE), dtype=np.uint8)
    for level, width in enumerate(widths):
        sibling = (indices >> level) ^ 1
        paired = sibling < width
        if paired.all():  # most levels: a slice, not a gather of rows
            paths[:, level] = levels[level][sibling]
        else:
            rows = np.flatnonzero(paired)
            paths[rows, level] = levels[level][sibling[rows]]
    return paths


def compact_path(level_path: np.ndarray, index: int, size: int) -> list[bytes]:
    """A level-aligned path (one row of :func:`audit_paths`) as an audit path."""
    return [bytes(level_path[level]) for level, _ in audit_path_nodes(index, size)]


def verify_inclusions(
    hashes: Digests, indices: np.ndarray, size: int, level_paths: np.ndarray, root: bytes
) -> np.ndarray:
    """For each leaf, whether its level-aligned path leads from its hash to ``root``.

    The same answer as :func:`verify_inclusion` on each leaf, for a fraction of the hashing:
    leaves under one parent whose inputs to it are byte-identical share that hash; a leaf
    whose input differs (a wrong path) is hashed on its own.
    """
    indices = np.asarray(indices, dtype=np.int64)
    count = len(indices)
    if hashes.shape != (count, HASH_SIZE):
        raise ValueError("one leaf hash per index")
    if count and (indices.min() < 0 or indices.max() >= size):
        return np.zeros(count, dtype=bool)
    widths = level_widths(size)[:-1]
    if level_paths.shape != (count, len(widths), HASH_SIZE):
        raise ValueError(f"level-aligned paths of a tree of {size} leaves have {len(widths)} slots")
    ordered = bool((indices[1:] >= indices[:-1]).all())
    order = np.arange(count) if ordered else np.argsort(indices, kind="stable")
    leaf = indices[order]
    # Digests as 4 uint64 words: the same bytes, an eighth of the elements to move and compare.
    leaf_bytes = np.ascontiguousarray(hashes if ordered else hashes[order], dtype=np.uint8)
    current = leaf_bytes.view(np.uint64).copy()
    paths = level_paths if ordered else level_paths[order]
    paths = np.ascontiguousarray(paths, dtype=np.uint8).view(np.uint64)
    words = HASH_SIZE // 8
    for level, width in enumerate(widths):
        position = leaf >> level
        paired = (position ^ 1) < width
        rows = slice(None) if paired.all() else np.flatnonzero(paired)
        sibling, mine = paths[rows, level], current[rows]
        if not len(mine):
            continue
        pairs = np.empty((len(mine), 2 * words), dtype=np.uint64)
        pairs[:, :words], pairs[:, words:] = mine, sibling
        is_right = (position[rows] & 1).astype(bool)
        pairs[is_right, :words], pairs[is_right, words:] = sibling[is_right], mine[is_right]
        parent = position[rows] >> 1
        starts_group = np.ones(len(pairs), dtype=bool)
        starts_group[1:] = parent[1:] != parent[:-1]
        first = np.flatnonzero(starts_group)[np.cumsum(starts_group) - 1]
        own = starts_group | (pairs != pairs[first]).any(axis=1)  # group heads, and misfits
        parents = np.empty((len(pairs), words), dtype=np.uint64)
        parents[own] = _hash_prefixed(NODE_PREFIX, pairs[own].view(np.uint8)).view(np.uint64)
        parents[~own] = parents[first[~own]]
        current[rows] = parents
    if len(root) != HASH_SIZE:
        return np.zeros(count, dtype=bool)
    ok = (current == np.frombuffer(root, dtype=np.uint64)).all(axis=1)
    result = np.empty(count, dtype=bool)
    result[order] = ok
    return result
