"""Memory is bounded by the chunk, never by the block: structural checks of the stages that
go through a whole block (generate and its tree, the block manifest's writer, the tree rebuilt
from a store, the lottery's rebuild from a manifest).

No test here measures memory (the machine is shared; ``bench/`` prints peak RSS): each checks
the shape of the work instead, on a small block cut in many batches, so that a stage that
starts holding something per ticket of the block again fails here.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from printpipe.block import BlockStore, PackRange
from printpipe.commitment import lottery, tree
from printpipe.commitment.merkle import TreeBuilder, levels_root
from printpipe.games.base import Game
from printpipe.generation import generate
from printpipe.handover import manifest
from printpipe.keys import (
    LOTTERY_IDENTITY,
    LOTTERY_RECIPIENT,
    PRODUCER_SIGNING_PUB,
    load_lottery_identity,
    load_lottery_recipient,
    load_public_key,
    load_secrets,
    load_signing_key,
)
from tests.ledger_helpers import generate_store

PACKS = PackRange(1, 24)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory, game, keys_dir) -> Path:
    return generate_store(game, keys_dir, tmp_path_factory.mktemp("bounded") / "block", PACKS)


@pytest.fixture(scope="module")
def levels(store_dir, game) -> list[np.ndarray]:
    return tree.store_levels(BlockStore.open(store_dir), game.definition)


def held_arrays(obj: Any, game: Game, seen: set[int] | None = None) -> list[np.ndarray]:
    """Every numpy array reachable from ``obj`` through attributes, lists, tuples and dicts
    (memory maps included), but not through ``game``: its tables are the game's, whatever
    the block."""
    seen = set() if seen is None else seen
    if obj is game or id(obj) in seen or isinstance(obj, (str, bytes, int, float, type)):
        return []
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return [obj]
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, (list, tuple, set)):
        children = list(obj)
    else:
        children = list(getattr(obj, "__dict__", {}).values())
    return [array for child in children for array in held_arrays(child, game, seen)]


def test_generate_holds_no_array_the_size_of_the_block(game, keys_dir, store_dir, tmp_path):
    """Between two chunks, generate holds no array of more rows than a chunk (the block's
    leaf hashes, or writable memory maps of its columns, would be), and every leaf of the
    chunks written so far is already in the tree."""
    chunk_packs = 2
    chunk_rows = chunk_packs * game.definition.block.pack_size
    observed = []
    append = generate._BlockWriter.append

    def watched(self, batch, first_pack):
        append(self, batch, first_pack)
        rows = [len(array) if array.ndim else 1 for array in held_arrays(self, game)]
        observed.append((self.store.rows, self.tree.size, max(rows)))

    keys = keys_dir
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generate._BlockWriter, "append", watched)
        generate.generate_blocks(
            game,
            secrets=load_secrets(keys),
            signing_key=load_signing_key(keys),
            outs={1: tmp_path / "block"},
            packs=PACKS,
            show_progress=False,
            manifest_recipient=load_lottery_recipient(keys / LOTTERY_RECIPIENT),
            chunk_packs=chunk_packs,
        )
    assert len(observed) == PACKS.count // chunk_packs
    for rows, leaves, largest in observed:
        assert leaves == rows
        assert largest <= chunk_rows
    # Chunked, the same store: its summary (columns' SHA-256, tree root) byte for byte.
    assert (tmp_path / "block" / "summary.json").read_bytes() == (
        store_dir / "summary.json"
    ).read_bytes()


def test_the_manifest_writer_encrypts_each_batch_before_it_reads_the_next(
    game, keys_dir, store_dir, tmp_path, monkeypatch
):
    """The plaintext is encoded a batch of packs at a time, and each batch is encrypted and
    written before the next is read: what the writer holds is a batch and age's 64 KiB chunk."""
    monkeypatch.setattr(manifest, "BATCH_PACKS", 2)
    pack_size = game.definition.block.pack_size
    written = [0]
    write = manifest._HashingWriter.write

    def counted_write(self, data):
        written[0] += len(data)
        return write(self, data)

    plaintext = manifest.iter_plaintext
    asked: list[tuple[int, int]] = []

    def watched_plaintext(*args):
        given = 0
        for chunk in plaintext(*args):
            assert chunk.count(b"\n") <= 2 * pack_size + (given == 0)
            asked.append((given, written[0]))
            yield chunk
            given += len(chunk)
        asked.append((given, written[0]))

    monkeypatch.setattr(manifest._HashingWriter, "write", counted_write)
    monkeypatch.setattr(manifest, "iter_plaintext", watched_plaintext)
    store = BlockStore.open(store_dir)
    manifest.write_run_manifest(
        tmp_path / "run.ppm",
        store,
        store.pack_range,
        load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT),
        load_signing_key(keys_dir),
        [],
        game=game,
    )
    assert len(asked) == 1 + PACKS.count // 2 + 1
    total = asked[-1][0]
    batch = total // (PACKS.count // 2)
    assert total > 4 * (batch + (64 << 10))  # the check below can tell streaming from not
    for given, written_then in asked:
        assert written_then >= given - batch - (64 << 10) - 4096, (given, written_then)


def test_the_tree_of_a_store_is_rebuilt_a_batch_of_packs_at_a_time(
    game, store_dir, levels, monkeypatch
):
    """The audit's (and the bench's) rebuild of the tree from a store: one batch of leaf
    hashes at a time into the tree, never the block's."""
    monkeypatch.setattr(tree, "BATCH_PACKS", 3)
    added = []

    class Recording(TreeBuilder):
        def add(self, hashes):
            added.append(len(hashes))
            super().add(hashes)

    monkeypatch.setattr(tree, "TreeBuilder", Recording)
    root = tree.store_root(BlockStore.open(store_dir), game.definition)
    assert added == [3 * game.definition.block.pack_size] * (PACKS.count // 3)
    assert root == levels_root(levels)


def test_the_lottery_builds_the_tree_as_it_decrypts(game, keys_dir, store_dir, levels, monkeypatch):
    """``commitment sign`` (and the reveal, and the ledger's import to come): each decrypted
    batch's leaves go into the tree before the next batch is decrypted, and every node comes
    out once final, level by level, for a store of the levels to write."""
    monkeypatch.setattr(
        lottery,
        "decrypt_manifest",
        functools.partial(manifest.decrypt_manifest, batch_bytes=32 << 10),
    )
    builders: list[TreeBuilder] = []

    class Recording(TreeBuilder):
        def __init__(self, **options):
            super().__init__(**options)
            builders.append(self)

    monkeypatch.setattr(lottery, "TreeBuilder", Recording)
    batches: list[tuple[int, int]] = []
    nodes: dict[int, list[np.ndarray]] = {}
    commitment = lottery.manifest_commitment(
        manifest.verify_manifest(
            store_dir / manifest.BLOCK_MANIFEST, load_public_key(keys_dir / PRODUCER_SIGNING_PUB)
        ),
        game,
        load_lottery_identity(keys_dir / LOTTERY_IDENTITY),
        on_batch=lambda parsed: batches.append((builders[0].size, len(parsed.keys))),
        on_nodes=lambda level, position, hashes: nodes.setdefault(level, []).append(hashes.copy()),
    )
    assert len(batches) > 10
    decrypted = 0
    for in_tree, count in batches:
        decrypted += count
        assert in_tree == decrypted
    assert commitment.root == levels_root(levels)
    assert sorted(nodes) == list(range(len(levels)))
    for level, hashes in enumerate(levels):
        assert np.array_equal(np.concatenate(nodes[level]), hashes), level
