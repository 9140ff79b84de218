"""A whole block: the exact prize table, determinism, pack ranges, and tampering caught."""

import json
import shutil

import numpy as np
import pytest

from printpipe.block import BlockStore, BlockSummary, PackRange
from printpipe.errors import PrintpipeError
from printpipe.generation import audit_block
from printpipe.keys import BlockSecrets, load_public_key, load_secrets
from tests.conftest import assert_same_secrets_give_identical_bytes, generate_store

pytestmark = [pytest.mark.fullblock, pytest.mark.xdist_group("fullblock")]

COLUMNS = ("tier.npy", "variant.npy", "symbols.npy", "virn.npy", "salt.npy")


@pytest.fixture(scope="module")
def producer_key(keys_dir):
    return load_public_key(keys_dir / "producer-signing.pub")


def audit(path, game, producer_key):
    return audit_block(BlockStore.open(path), game, producer_key, show_progress=False)


def test_full_block_has_the_exact_prize_table(full_block, game, producer_key):
    store = BlockStore.open(full_block)
    tiers = np.asarray(store.read().tier)
    assert len(tiers) == 1_500_000
    counts = np.bincount(tiers, minlength=11)
    amounts = game.definition.tier_amounts
    assert counts[1:].sum() == 437_316
    assert (counts * amounts).sum() == 1_950_000
    table = {p.amount_eur: p.lots for p in game.definition.prizes}
    assert {int(amounts[t]): int(counts[t]) for t in range(1, 11)} == table
    report = audit(full_block, game, producer_key)
    assert report.passed, report.render()
    assert [c.name for c in report.checks if c.name in {"prize table", "pool spread", "top lots"}]


def test_same_secrets_give_identical_bytes(full_block, game, keys_dir, tmp_path):
    files = (*COLUMNS, "summary.json", "summary.sig", "commitment.json")
    assert_same_secrets_give_identical_bytes(game, keys_dir, full_block, tmp_path, files)


def test_one_bit_of_one_secret_changes_the_block(full_block, game, keys_dir, tmp_path):
    secrets = load_secrets(keys_dir)
    flipped = BlockSecrets(secrets.producer, bytes([secrets.lottery[0] ^ 1]) + secrets.lottery[1:])
    other = tmp_path / "other"
    generate_store(game, keys_dir, other, PackRange(1, 4), flipped)
    mine = BlockStore.open(full_block).read(PackRange(1, 4))
    theirs = BlockStore.open(other).read()
    assert not np.array_equal(mine.virn, theirs.virn)
    assert not np.array_equal(mine.symbols, theirs.symbols)
    # Unrelated, not shifted: almost no VIRN agrees at the same place.
    assert (np.asarray(mine.virn) == np.asarray(theirs.virn)).mean() < 0.01


@pytest.mark.parametrize("packs", [(1, 1), (1999, 2003), (11_990, 12_000)])
def test_a_pack_range_is_a_slice_of_the_full_block(full_block, game, keys_dir, tmp_path, packs):
    part = tmp_path / "part"
    summary = BlockStore.open(generate_store(game, keys_dir, part, PackRange(*packs))).summary
    assert summary.packs.first == packs[0]
    full = BlockStore.open(full_block).read(PackRange(*packs))
    alone = BlockStore.open(part).read()
    for column in ("tier", "variant", "symbols", "virn"):
        assert np.array_equal(getattr(full, column), getattr(alone, column)), column


@pytest.fixture
def copy_of_block(full_block, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(full_block, copy)
    return copy


def rewrite(path, column, change):
    array = np.load(path / column)
    change(array)
    np.save(path / column, array)


def test_a_changed_symbol_is_caught_and_named(copy_of_block, game, producer_key):
    tiers, variants = np.load(copy_of_block / "tier.npy"), np.load(copy_of_block / "variant.npy")
    symbols = np.load(copy_of_block / "symbols.npy")
    teasers = game.teasers(variants, symbols, np.zeros(len(tiers), dtype=np.int64))
    row = int(np.flatnonzero((tiers == 0) & (variants == 0) & ~teasers)[0])
    bone = game.definition.symbol_index("OS")

    def add_a_bone(symbols):
        symbols[row, 4] = bone  # a losing dog ticket, no bowl in its bonus box: now 2 EUR

    rewrite(copy_of_block, "symbols.npy", add_a_bone)
    report = audit(copy_of_block, game, producer_key)
    assert not report.passed
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert "symbols.npy" in failed["store files"]
    serial = f"0412-{row // 125 + 1:06d}-{row % 125:03d}-"
    assert serial in failed["rules"] and "records 0 EUR, symbols give 2 EUR" in failed["rules"]


def test_a_legal_looking_change_is_still_caught_by_its_hash(copy_of_block, game, producer_key):
    tiers, variants = np.load(copy_of_block / "tier.npy"), np.load(copy_of_block / "variant.npy")
    row = int(np.flatnonzero((tiers == 0) & (variants == 0))[0])
    other_decoy = game.definition.symbol_index("ARBRE")
    symbols = np.load(copy_of_block / "symbols.npy")
    symbols[row, :9] = other_decoy
    np.save(copy_of_block / "symbols.npy", symbols)
    failed = {c.name for c in audit(copy_of_block, game, producer_key).checks if not c.ok}
    assert failed == {"store files"}


def test_swapped_prizes_are_caught(copy_of_block, game, producer_key):
    tiers = np.load(copy_of_block / "tier.npy")
    winner, loser = int(np.flatnonzero(tiers == 10)[0]), int(np.flatnonzero(tiers == 0)[0])

    def swap(column):
        column[[winner, loser]] = column[[loser, winner]]

    rewrite(copy_of_block, "tier.npy", swap)
    report = audit(copy_of_block, game, producer_key)
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert "2 wrong prizes" in failed["rules"]
    assert "tier.npy" in failed["store files"]


def test_any_changed_byte_is_caught(copy_of_block, game, producer_key):
    data = bytearray((copy_of_block / "virn.npy").read_bytes())
    data[-5] ^= 0x01
    (copy_of_block / "virn.npy").write_bytes(bytes(data))
    report = audit(copy_of_block, game, producer_key)
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert list(failed) == ["store files", "commitment"] and "virn.npy" in failed["store files"]
    assert "do not give the root" in failed["commitment"]  # a VIRN is part of its leaf
    with pytest.raises(PrintpipeError, match=r"virn\.npy does not match"):
        BlockStore.open(copy_of_block).check_intact(producer_key)


def test_a_repeated_virn_is_caught_and_counted(copy_of_block, game, producer_key):
    def repeat(virns):
        virns[-1] = virns[0]

    rewrite(copy_of_block, "virn.npy", repeat)
    failed = {c.name: c.detail for c in audit(copy_of_block, game, producer_key).checks if not c.ok}
    assert "1,499,999 distinct 10-digit VIRNs" in failed["unique identifiers"], failed


def test_an_edited_summary_breaks_the_signature(copy_of_block, game, producer_key):
    summary = json.loads((copy_of_block / "summary.json").read_text())
    summary["commitments"]["lottery_secret_sha256"] = "0" * 64
    (copy_of_block / "summary.json").write_text(json.dumps(summary, indent=2))
    report = audit(copy_of_block, game, producer_key)
    failed = {c.name for c in report.checks if not c.ok}
    assert failed == {"signature"}


def test_the_summary_publishes_commitments_never_secrets(full_block, keys_dir):
    text = (full_block / "summary.json").read_text()
    secrets = load_secrets(keys_dir)
    for secret in (secrets.producer, secrets.lottery):
        assert secret.hex() not in text
    summary = json.loads(text)
    assert summary["parameters"]["teaser_rate"] == 0.05
    assert summary["totals"] == {
        "winning_tickets": 437_316,
        "losing_tickets": 1_062_684,
        "prize_eur": 1_950_000,
    }


def test_the_summary_reads_back_to_the_same_bytes(full_block):
    data = (full_block / "summary.json").read_bytes()
    summary = BlockSummary.from_json(data, "summary.json")
    assert summary.to_json() == data
    assert summary.packs.range == PackRange(1, 12_000)
    assert summary.parameters.packs_per_block == 12_000


@pytest.mark.parametrize("missing", ["tiers", "commitments", "files"])
def test_a_summary_without_a_field_is_one_line(full_block, missing):
    summary = json.loads((full_block / "summary.json").read_bytes())
    del summary[missing]
    with pytest.raises(PrintpipeError, match=f"lacks the field '{missing}'"):
        BlockSummary.from_json(json.dumps(summary).encode(), "summary.json")
