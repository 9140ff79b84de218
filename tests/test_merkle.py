"""RFC 9162 Merkle trees: printpipe.commitment.merkle against the RFC's own recursive
definitions and against an independent implementation (pymerkle), over random sizes."""

from __future__ import annotations

import hashlib

import numpy as np
import pymerkle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.commitment import merkle

# -- the RFC, transcribed as plainly as it is written (section 2.1.1 and 2.1.3.1) ------------


def reference_mth(leaves: list[bytes]) -> bytes:
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < n:
        k *= 2
    return hashlib.sha256(b"\x01" + reference_mth(leaves[:k]) + reference_mth(leaves[k:])).digest()


def reference_path(m: int, leaves: list[bytes]) -> list[bytes]:
    n = len(leaves)
    if n == 1:
        return []
    k = 1
    while k * 2 < n:
        k *= 2
    if m < k:
        return [*reference_path(m, leaves[:k]), reference_mth(leaves[k:])]
    return [*reference_path(m - k, leaves[k:]), reference_mth(leaves[:k])]


def make_leaves(size: int, seed: int, length: int = 20) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(size, length), dtype=np.uint8)


sizes = st.integers(min_value=1, max_value=300)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(min_value=0, max_value=300), seed=st.integers(0, 2**32 - 1))
def test_root_is_the_rfc_tree_head_for_any_size(size, seed):
    leaves = make_leaves(size, seed)
    hashes = merkle.leaf_hashes(leaves)
    assert merkle.tree_root(hashes) == reference_mth([bytes(row) for row in leaves])


@settings(max_examples=200, deadline=None)
@given(size=sizes, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_audit_paths_are_the_rfc_paths_and_verify(size, seed, data):
    leaves = make_leaves(size, seed)
    levels = merkle.tree_levels(merkle.leaf_hashes(leaves))
    root = merkle.levels_root(levels)
    index = data.draw(st.integers(0, size - 1))
    path = merkle.audit_path(levels, index)
    assert path == reference_path(index, [bytes(row) for row in leaves])
    assert len(path) <= merkle.tree_height(size)
    leaf = merkle.leaf_hash(bytes(leaves[index]))
    assert merkle.verify_inclusion(leaf, index, size, path, root)
    assert len(merkle.audit_path_nodes(index, size)) == len(path)


@settings(max_examples=100, deadline=None)
@given(size=st.integers(1, 200), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_agrees_with_pymerkle(size, seed, data):
    """An independent RFC 9162 implementation gives the same root and the same paths."""
    leaves = [bytes(row) for row in make_leaves(size, seed)]
    tree = pymerkle.InmemoryTree(algorithm="sha256")
    for leaf in leaves:
        tree.append_entry(leaf)
    levels = merkle.tree_levels(merkle.leaf_hashes(np.array([list(x) for x in leaves], np.uint8)))
    assert merkle.levels_root(levels) == tree.get_root()
    index = data.draw(st.integers(0, size - 1))
    theirs = tree.prove_inclusion(index + 1)  # pymerkle counts leaves from one
    assert theirs.path[1:] == merkle.audit_path(levels, index)  # path[0] is the leaf's own hash
    theirs.verify(merkle.leaf_hash(leaves[index]), merkle.levels_root(levels))


@settings(max_examples=200, deadline=None)
@given(size=sizes, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_any_single_change_breaks_a_proof(size, seed, data):
    leaves = make_leaves(size, seed)
    levels = merkle.tree_levels(merkle.leaf_hashes(leaves))
    root = merkle.levels_root(levels)
    index = data.draw(st.integers(0, size - 1))
    path = merkle.audit_path(levels, index)
    leaf = merkle.leaf_hash(bytes(leaves[index]))
    bit = data.draw(st.integers(0, 255))
    flip = bytes([1 << (bit % 8)]) + bytes(31)

    def flipped(digest: bytes) -> bytes:
        return bytes(a ^ b for a, b in zip(digest, flip[::-1] if bit >= 128 else flip, strict=True))

    assert not merkle.verify_inclusion(flipped(leaf), index, size, path, root)
    assert not merkle.verify_inclusion(leaf, index, size, path, flipped(root))
    if path:
        at = data.draw(st.integers(0, len(path) - 1))
        changed = [*path[:at], flipped(path[at]), *path[at + 1 :]]
        assert not merkle.verify_inclusion(leaf, index, size, changed, root)
        assert not merkle.verify_inclusion(leaf, index, size, path[:-1], root)
        assert not merkle.verify_inclusion(leaf, index, size, [*path, path[-1]], root)
    other = data.draw(st.integers(0, size - 1))
    if other != index and bytes(leaves[other]) != bytes(leaves[index]):
        assert not merkle.verify_inclusion(leaf, other, size, path, root)


@settings(max_examples=100, deadline=None)
@given(size=sizes, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_batched_paths_and_verification_match_one_by_one(size, seed, data):
    leaves = make_leaves(size, seed)
    hashes = merkle.leaf_hashes(leaves)
    levels = merkle.tree_levels(hashes)
    root = merkle.levels_root(levels)
    indices = np.array(
        data.draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=40)), dtype=np.int64
    )
    paths = merkle.audit_paths(levels, indices)
    for row, index in enumerate(indices.tolist()):
        assert merkle.compact_path(paths[row], index, size) == merkle.audit_path(levels, index)
    # Corrupt some paths and some leaf hashes: the batch says exactly what one-by-one says.
    rng = np.random.default_rng(seed)
    bad_paths, bad_hashes = paths.copy(), hashes[indices].copy()
    for row in rng.choice(len(indices), size=len(indices) // 3, replace=False):
        if rng.integers(2):
            bad_hashes[row, rng.integers(32)] ^= 1
        elif paths.shape[1]:
            bad_paths[row, rng.integers(paths.shape[1]), rng.integers(32)] ^= 4
    batched = merkle.verify_inclusions(bad_hashes, indices, size, bad_paths, root)
    single = [
        merkle.verify_inclusion(
            bytes(bad_hashes[row]),
            index,
            size,
            merkle.compact_path(bad_paths[row], index, size),
            root,
        )
        for row, index in enumerate(indices.tolist())
    ]
    assert batched.tolist() == single
    assert merkle.verify_inclusions(hashes[indices], indices, size, paths, root).all()


def test_sizes_and_heights():
    assert merkle.tree_height(1_500_000) == 21
    assert merkle.tree_height(1) == 0 and merkle.tree_height(2) == 1 and merkle.tree_height(5) == 3
    assert merkle.tree_root(np.empty((0, 32), np.uint8)) == hashlib.sha256(b"").digest()
    levels = merkle.tree_levels(merkle.leaf_hashes(make_leaves(1_500_000 % 1000 + 5, 1)))
    assert [len(level) for level in levels] == merkle.level_widths(len(levels[0]))
    with pytest.raises(ValueError):
        merkle.audit_path_nodes(5, 5)
    assert merkle.root_from_audit_path(b"\x00" * 32, 5, 5, []) is None


def test_trees_larger_than_a_hashing_chunk():
    """Hashing works a chunk of rows at a time: across chunks, the same tree as the RFC's."""
    size = 2 * merkle.HASH_CHUNK_ROWS + 3
    leaves = make_leaves(size, 7, length=8)
    hashes = merkle.leaf_hashes(leaves)
    for i in (0, merkle.HASH_CHUNK_ROWS - 1, merkle.HASH_CHUNK_ROWS, size - 1):
        assert bytes(hashes[i]) == merkle.leaf_hash(bytes(leaves[i]))
    root = reference_mth([bytes(row) for row in leaves])
    assert merkle.tree_root(hashes) == root == merkle.levels_root(merkle.tree_levels(hashes))


@settings(max_examples=200, deadline=None)
@given(size=st.integers(min_value=0, max_value=600), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_a_tree_built_batch_by_batch_is_the_same_tree_holding_one_node_a_level(size, seed, data):
    """TreeBuilder: any batching gives the RFC's root and, node by node, every level of
    tree_levels, while it holds no more than one node per level between batches."""
    leaves = make_leaves(size, seed)
    hashes = merkle.leaf_hashes(leaves)
    got: dict[int, list[np.ndarray]] = {}

    def on_nodes(level: int, position: int, nodes: np.ndarray) -> None:
        assert position == sum(len(part) for part in got.get(level, []))  # in order, no gap
        got.setdefault(level, []).append(nodes.copy())

    builder = merkle.TreeBuilder(on_nodes=on_nodes)
    at = 0
    while at < size:
        count = data.draw(st.integers(0, size - at))
        builder.add(hashes[at : at + count])
        at += count
        assert builder.size == at
        assert builder.held_nodes <= merkle.tree_height(at) + 1
    root = builder.root()
    assert root == reference_mth([bytes(row) for row in leaves]) == merkle.tree_root(hashes)
    if size:
        levels = merkle.tree_levels(hashes)
        assert sorted(got) == list(range(len(levels)))
        for level, nodes in enumerate(levels):
            assert np.array_equal(np.concatenate(got[level]), nodes), level
    assert builder.root() == root
    with pytest.raises(ValueError):
        builder.add(hashes[:1])
