"""Golden Animals: the rules against a literal reading of the regulation, layouts, a whole block.

The oracle below reads a unit cell by cell with a plain flood fill, independently of the
group tables ``GoldenAnimals.evaluate`` uses; the two must always agree.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.errors import InvalidLayout, PrintpipeError
from printpipe.games import game_template_dir, load_game
from printpipe.games.golden_animals import EMPTY, GoldenAnimals, cell_masks, unpack_masks
from printpipe.generation import audit_block
from printpipe.keys import BlockSecrets, load_public_key, load_secrets
from printpipe.rng import KeyStream, Purpose
from tests.conftest import assert_same_secrets_give_identical_bytes, generate_store, run_cli

ROWS, COLUMNS = 4, 5
TEMPLATE = game_template_dir("golden-animals") / "game.toml"
PAYTABLE = {
    "HIBOU": 1,
    "SINGE": 2,
    "ZEBRE": 5,
    "PANDA": 10,
    "GIRAFE": 25,
    "ELEPHANT": 50,
    "TIGRE": 500,
    "LION": 5000,
}
ANIMALS = tuple(PAYTABLE)
MONEY = tuple(f"ANIMALS:{a}" for a in (1, 2, 5, 10, 50, 100, 1000))
COLUMN_FILES = ("tier.npy", "variant.npy", "symbols.npy", "virn.npy")


@pytest.fixture(scope="module")
def golden() -> GoldenAnimals:
    game = load_game("golden-animals")
    assert isinstance(game, GoldenAnimals)
    return game


# -- the oracle: the regulation read literally, one unit at a time ---------------------------


def linked_groups(cells: list[str]) -> list[tuple[str, int]]:
    """(animal, size) of every group of identical animals touching by side or corner."""
    seen: set[int] = set()
    groups = []
    for start in range(len(cells)):
        if start in seen or cells[start] not in PAYTABLE:
            continue
        seen.add(start)
        stack, size = [start], 0
        while stack:
            here = stack.pop()
            size += 1
            r, c = divmod(here, COLUMNS)
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    rr, cc = r + dr, c + dc
                    there = rr * COLUMNS + cc
                    if (
                        0 <= rr < ROWS
                        and 0 <= cc < COLUMNS
                        and there not in seen
                        and cells[there] == cells[start]
                    ):
                        seen.add(there)
                        stack.append(there)
        groups.append((cells[start], size))
    return groups


def grid_wins(cells: list[str]) -> Counter:
    """What a grid pays for: its chains of exactly 4 and its ANIMALS symbols."""
    wins = Counter(("chain", a) for a, size in linked_groups(cells) if size == 4)
    wins.update(("money", c) for c in cells if c.startswith("ANIMALS:"))
    return wins


def oracle(grid: list[str], extra_grid: list[str] | None) -> int | None:
    """The lot of a unit, or None where the spec's decisions forbid it."""
    extras = grid.count("EXTRA")
    if EMPTY in grid or extras > 1 or (extras == 1) != (extra_grid is not None):
        return None
    grids = [grid] if extra_grid is None else [grid, extra_grid]
    if extra_grid is not None and ("EXTRA" in extra_grid or EMPTY in extra_grid):
        return None
    lot = 0
    for cells in grids:
        if any(size >= 5 for _, size in linked_groups(cells)):
            return None
        if sum(c.startswith("ANIMALS:") for c in cells) > 3:
            return None
        for (kind, code), count in grid_wins(cells).items():
            lot += count * (PAYTABLE[code] if kind == "chain" else int(code.split(":")[1]))
    return lot


def unit_row(game: GoldenAnimals, grid: list[str], extra_grid: list[str] | None = None):
    codes = game.definition.symbol_codes
    extra_grid = extra_grid or [EMPTY] * 20
    return np.array([[codes.index(c) for c in (*grid, *extra_grid)]])


def evaluate_one(game: GoldenAnimals, grid: list[str], extra_grid: list[str] | None = None):
    result = game.evaluate(np.zeros(1, np.int64), unit_row(game, grid, extra_grid))
    return int(result.prize_eur[0]), int(result.violation[0])


def decoded(game: GoldenAnimals, row: np.ndarray) -> tuple[list[str], list[str] | None]:
    first, second = game.field_texts(row)
    return first.split(" "), (second.split(" ") if second else None)


def from_rows(*rows: str) -> list[str]:
    """A grid written as 4 rows of 5 one-letter animals (H, S, Z, P, G, E, T, L) or X = EXTRA."""
    letters = {a[0]: a for a in ANIMALS} | {"X": "EXTRA"}
    return [letters[ch] for row in rows for ch in row.split()]


# -- the definition ----------------------------------------------------------------------------


def test_the_definition_holds_article_4_and_the_stake_split(golden):
    definition = golden.definition
    assert [(p.lots, p.amount_eur) for p in definition.prizes] == [
        (1, 10_000),
        (3, 1_000),
        (100, 100),
        (1_000, 50),
        (34_500, 10),
        (1_500, 5),
        (198_500, 2),
        (210_550, 1),
    ]
    assert definition.tier_lots[0] == 1_053_846
    assert (definition.tier_lots * definition.tier_amounts).sum() == 1_033_050
    assert (definition.price_cents, golden.linked_price_cents) == (97, 3)
    assert golden.offer_price_cents == 100 and golden.linked_game == "SUPER JACKPOT"
    assert definition.block.pack_size * definition.block.packs == 1_500_000
    assert definition.block.packs_per_pool == 250
    assert golden.paytable == PAYTABLE
    assert set(MONEY) | set(ANIMALS) | {"EXTRA", EMPTY} == set(definition.symbol_codes)


def test_money_captions_are_written_the_french_way(golden):
    captions = golden.definition.captions
    for amount, code in golden.money_codes.items():
        assert captions[code].endswith(f"{amount:,} €".replace(",", " "))
    assert any(caption.endswith("1 000 €") for caption in captions.values())


def test_every_lot_has_several_compositions_with_weights_adding_to_one(golden):
    for prize in golden.definition.prizes:
        compositions = golden.compositions[prize.tier]
        assert len(compositions) >= 3, prize
        assert {c.amount_eur for c in compositions} == {prize.amount_eur}
        assert sum(c.weight for c in compositions) == 1
    losing = golden.compositions[0]
    assert [(c.extra, c.weight) for c in losing] == [
        (False, Fraction(23, 25)),
        (True, Fraction(2, 25)),
    ]


def edited(tmp_path: Path, old: str, new: str) -> Path:
    text = TEMPLATE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "game.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("linked_price_eur = 0.03", "linked_price_eur = 0.05", "offer.price_eur"),
        ("min_compositions = 3", "min_compositions = 5", "10000 EUR has 4 compositions"),
        ("LION = 5000", "LION = 4000", "10000 EUR has 0 compositions"),
        ('ZEBRE = "Zèbre"', 'ZEBRE = "Zèbre"\nCHAT = "Chat"', "symbols.CHAT"),
        ("amounts_eur = [1,", "amounts_eur = [2,", "animals_symbol.amounts_eur"),
    ],
)
def test_a_broken_definition_is_refused_in_one_line(tmp_path, old, new, message):
    with pytest.raises(PrintpipeError, match=message) as caught:
        GoldenAnimals(edited(tmp_path, old, new))
    assert "\n" not in str(caught.value)


# -- the rules, by hand ------------------------------------------------------------------------

LOSING = from_rows("H S Z P G", "E T L H S", "Z P G E T", "L H S Z P")


def test_a_grid_without_a_group_of_four_loses(golden):
    assert evaluate_one(golden, LOSING) == (0, 0)


def test_a_chain_of_four_pays_its_animal(golden):
    grid = from_rows("P P S Z G", "P P T L H", "Z H G E T", "L H S Z E")
    assert evaluate_one(golden, grid) == (10, 0)


def test_cells_touching_only_by_a_corner_are_linked(golden):
    diagonal = from_rows("L S Z P G", "E L T H S", "Z P L E T", "H H S L P")
    assert evaluate_one(golden, diagonal) == (5000, 0)
    two_pairs = from_rows("Z Z S P G", "E T Z Z S", "S P G E T", "L H S G P")
    assert evaluate_one(golden, two_pairs) == (5, 0)


def test_two_separate_chains_of_one_animal_both_pay(golden):
    grid = from_rows("L L S L L", "L L Z L L", "Z P G E T", "S H S Z P")
    assert evaluate_one(golden, grid) == (10_000, 0)


@pytest.mark.parametrize(
    "grid",
    [
        from_rows("H H H H H", "E T L S S", "Z P G E T", "L Z S G P"),
        from_rows("L L S L L", "L L L L L", "Z P G E T", "S H S Z P"),
        from_rows("S Z P G E", "T S L H P", "Z P S E T", "L H G S S"),
    ],
)
def test_a_group_of_five_or_more_is_invalid(golden, grid):
    assert oracle(grid, None) is None
    assert evaluate_one(golden, grid) == (-1, golden.violations.index(VIOLATION_OVERSIZED))


VIOLATION_OVERSIZED = "a linked group of 5 or more identical animals (decision 1)"


def with_cells(grid: list[str], **cells: str) -> list[str]:
    """The grid with cells replaced, given as c<index>=CODE."""
    grid = list(grid)
    for name, code in cells.items():
        grid[int(name[1:])] = code
    return grid


def test_extra_opens_a_grid_whose_wins_add_up(golden):
    first = with_cells(LOSING, c7="EXTRA", c12="ANIMALS:2")
    second = from_rows("P P S Z G", "P P T L H", "Z H G E T", "L H S Z E")
    second = with_cells(second, c19="ANIMALS:5")
    assert evaluate_one(golden, first, second) == (2 + 10 + 5, 0)
    assert golden.prize_eur(first, second) == 17
    teaser = with_cells(LOSING, c0="EXTRA")
    assert evaluate_one(golden, teaser, LOSING) == (0, 0)
    rows = unit_row(golden, teaser, LOSING)
    assert golden.teasers(np.zeros(1), rows, np.zeros(1)).tolist() == [True]


@pytest.mark.parametrize(
    ("grid", "extra_grid", "violation"),
    [
        (with_cells(LOSING, c3=EMPTY), None, "the EMPTY mark in the first grid"),
        (
            with_cells(LOSING, c0="EXTRA", c19="EXTRA"),
            LOSING,
            "more than one EXTRA in the first grid (decision 2)",
        ),
        (
            with_cells(LOSING, c0="EXTRA"),
            with_cells(LOSING, c5="EXTRA"),
            "EXTRA in the extra grid (decision 2)",
        ),
        (LOSING, LOSING, "an extra grid without EXTRA in the first grid"),
        (LOSING, [EMPTY] * 19 + ["HIBOU"], "an extra grid without EXTRA in the first grid"),
        (
            with_cells(LOSING, c0="EXTRA"),
            None,
            "EXTRA in the first grid but the extra grid is not full",
        ),
        (
            with_cells(LOSING, c0="EXTRA"),
            with_cells(LOSING, c4=EMPTY),
            "EXTRA in the first grid but the extra grid is not full",
        ),
        (
            with_cells(LOSING, c0="ANIMALS:1", c5="ANIMALS:1", c10="ANIMALS:2", c15="ANIMALS:5"),
            None,
            "more ANIMALS symbols in a grid than allowed (decision 6)",
        ),
    ],
)
def test_extra_and_animals_rules(golden, grid, extra_grid, violation):
    row = unit_row(golden, grid, extra_grid)
    result = golden.evaluate(np.zeros(1, np.int64), row)
    assert result.prize_eur[0] == -1
    assert golden.violations[result.violation[0]] == violation
    with pytest.raises(InvalidLayout, match="invalid layout"):
        golden.prize_eur(grid, extra_grid or ())


def test_symbol_indices_outside_the_game_are_invalid(golden):
    row = unit_row(golden, LOSING)
    row[0, 3] = 200
    result = golden.evaluate(np.zeros(1, np.int64), row)
    assert result.prize_eur[0] == -1 and result.violation[0] == 2


# -- the rules against the oracle, on random units ---------------------------------------------

few_animals = st.lists(st.sampled_from(ANIMALS), min_size=1, max_size=3, unique=True)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_random_animal_grids_agree_with_the_oracle(golden, data):
    """Few animals, so groups of 4 and more are common; losing ones have no group of 4."""
    animals = data.draw(few_animals)
    grid = data.draw(st.lists(st.sampled_from(animals), min_size=20, max_size=20))
    prize, violation = evaluate_one(golden, grid)
    expected = oracle(grid, None)
    assert (None if violation else prize) == expected
    if prize == 0 and violation == 0:
        assert all(size < 4 for _, size in linked_groups(grid))


any_symbol = st.sampled_from((*ANIMALS[:3], *MONEY[:3], "EXTRA", EMPTY))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(any_symbol, min_size=20, max_size=20),
    st.one_of(st.none(), st.lists(any_symbol, min_size=20, max_size=20)),
)
def test_random_units_agree_with_the_oracle(golden, grid, extra_grid):
    prize, violation = evaluate_one(golden, grid, extra_grid)
    assert (None if violation else prize) == oracle(grid, extra_grid)


# -- layouts -----------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.binary(min_size=32, max_size=32),
    st.lists(st.integers(0, 8), min_size=1, max_size=200),
)
def test_every_layout_evaluates_back_to_its_lot(golden, key, tiers):
    tiers = np.array(tiers)
    symbols = golden.layout(tiers, np.zeros(len(tiers), np.int64), KeyStream(key, Purpose.PACK, 0))
    result = golden.evaluate(np.zeros(len(tiers), np.int64), symbols)
    assert result.violation.tolist() == [0] * len(tiers)
    assert result.prize_eur.tolist() == golden.definition.tier_amounts[tiers].tolist()
    for row, tier in zip(symbols, tiers, strict=True):
        grid, extra_grid = decoded(golden, row)
        assert oracle(grid, extra_grid) == golden.definition.tier_amounts[tier]
        if tier == 0:
            for cells in (grid, extra_grid or []):
                assert all(size < 4 for _, size in linked_groups(cells))


def composition_wins(wins) -> Counter:
    return Counter(("chain" if w.is_chain else "money", w.symbol) for w in wins)


def test_layouts_draw_every_composition_of_a_lot_and_no_other(golden):
    """Units of each lot show the wins of one of its compositions, and all of them appear."""
    per_tier = 3000
    tiers = np.repeat(np.arange(len(golden.compositions)), per_tier)
    stream = KeyStream(bytes(range(32)), Purpose.PACK, 7)
    symbols = golden.layout(tiers, np.zeros(len(tiers), np.int64), stream)
    for tier, compositions in golden.compositions.items():
        shown: Counter[tuple[frozenset, bool, frozenset]] = Counter()
        for row in symbols[tiers == tier]:
            grid, extra_grid = decoded(golden, row)
            wins = grid_wins(grid)
            key = (
                frozenset(wins.items()),
                extra_grid is not None,
                frozenset(grid_wins(extra_grid or []).items()),
            )
            shown[key] += 1
        wanted = {
            (
                frozenset(composition_wins(c.grid).items()),
                c.extra,
                frozenset(composition_wins(c.extra_grid).items()),
            ): c.weight
            for c in compositions
        }
        assert set(shown) == set(wanted), tier
        for key, weight in wanted.items():  # 5 standard deviations at most
            expected = float(per_tier * weight)
            assert abs(shown[key] - expected) <= 5 * np.sqrt(expected) + 1, (tier, key)


def test_a_layout_is_a_function_of_its_stream(golden):
    tiers = np.arange(9).repeat(50)
    variants = np.zeros(len(tiers), np.int64)
    one = golden.layout(tiers, variants, KeyStream(bytes(32), Purpose.PACK, 3))
    again = golden.layout(tiers, variants, KeyStream(bytes(32), Purpose.PACK, 3))
    other = golden.layout(tiers, variants, KeyStream(bytes(32), Purpose.PACK, 4))
    assert one.dtype == np.uint8 and one.shape == (len(tiers), 40)
    assert np.array_equal(one, again)
    assert not np.array_equal(one, other)


@given(st.lists(st.integers(0, 2**24 - 1), min_size=1, max_size=12), st.integers(1, 24))
def test_cell_masks_are_the_bits_of_their_cells_on_any_leading_axes(values, cells):
    masks = np.array(values, dtype=np.uint32) & np.uint32((1 << cells) - 1)
    rows = unpack_masks(masks, cells)
    assert rows.shape == (len(masks), cells)
    assert [sum(1 << i for i in np.flatnonzero(row)) for row in rows] == masks.tolist()
    assert cell_masks(rows).dtype == np.uint32
    assert np.array_equal(cell_masks(rows), masks)
    stacked = np.stack([rows, ~rows])
    assert np.array_equal(cell_masks(stacked), [masks, ~masks & np.uint32((1 << cells) - 1)])


LAYOUT_SHA256 = "7bb35259989c9bc579fad2c87f3eff9d10644ebfa8570af3460d262b066347ab"
"""The layouts below as drawn at 560daf4, before the draw was made faster: a block made again
from its secrets by a later version must be the same block, byte for byte."""


def test_layouts_are_drawn_as_earlier_versions_drew_them(golden):
    tiers = np.arange(9).repeat(300)
    stream = KeyStream(bytes(range(32)), Purpose.PACK, 7)
    symbols = golden.layout(tiers, np.zeros(len(tiers), np.int64), stream)
    assert hashlib.sha256(symbols.tobytes()).hexdigest() == LAYOUT_SHA256


def test_a_unit_record_is_checked_from_its_text_alone(golden):
    tiers = np.arange(9).repeat(20)
    symbols = golden.layout(tiers, np.zeros(len(tiers)), KeyStream(bytes(32), Purpose.PACK, 9))
    for row, tier in zip(symbols, tiers, strict=True):
        grid_text, extra_text = golden.field_texts(row)
        assert len(grid_text.split(" ")) == 20
        assert (extra_text == "") == bool((row[20:] == golden.empty_id).all())
        assert EMPTY not in f"{grid_text} {extra_text}"
        lot = golden.prize_eur(grid_text.split(" "), extra_text.split(" ") if extra_text else ())
        assert lot == golden.definition.tier_amounts[tier]


# -- the command line and a whole block ---------------------------------------------------------


def test_generate_and_audit_a_pack_range_from_the_command_line(keys_dir, tmp_path):
    out = tmp_path / "block"
    run_cli(
        "generate", "--game", "golden-animals", "--keys", str(keys_dir),
        "--out", str(out), "--packs", "1:3", "-q", check=True,
    )  # fmt: skip
    result = run_cli("audit", str(out), "--keys", str(keys_dir), "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3,000 tickets" in result.stdout and "AUDIT PASSED" in result.stdout


GOLDEN_BLOCK = pytest.mark.xdist_group("golden-block")
"""The tests of the whole block, on one test worker: it is generated once (25 s), not once on
each worker that runs one of them."""


@pytest.fixture(scope="session")
def golden_block(tmp_path_factory, keys_dir) -> Path:
    """A whole 1,500,000-unit Golden Animals block, generated once per test session."""
    out = tmp_path_factory.mktemp("golden") / "golden-animals-block-0001"
    generate_store(load_game("golden-animals"), keys_dir, out)
    return out


@pytest.mark.fullblock
@GOLDEN_BLOCK
def test_a_full_block_has_the_exact_prize_table_and_passes_the_audit(
    golden_block, golden, keys_dir
):
    store = BlockStore.open(golden_block)
    tiers = np.asarray(store.read().tier)
    counts = np.bincount(tiers, minlength=9)
    amounts = golden.definition.tier_amounts
    assert counts.tolist() == golden.definition.tier_lots.tolist()
    assert counts[1:].sum() == 446_154 and (counts * amounts).sum() == 1_033_050
    producer_key = load_public_key(keys_dir / "producer-signing.pub")
    report = audit_block(store, golden, producer_key, show_progress=False)
    assert report.passed, report.render()
    assert "prize table" in [c.name for c in report.checks]


@pytest.mark.fullblock
@GOLDEN_BLOCK
def test_same_secrets_give_identical_bytes(golden_block, golden, keys_dir, tmp_path):
    files = (*COLUMN_FILES, "summary.json", "summary.sig")
    assert_same_secrets_give_identical_bytes(golden, keys_dir, golden_block, tmp_path, files)


@pytest.mark.fullblock
@GOLDEN_BLOCK
def test_one_bit_of_one_secret_changes_the_block(golden_block, golden, keys_dir, tmp_path):
    secrets = load_secrets(keys_dir)
    lottery = bytes([secrets.lottery[0] ^ 1]) + secrets.lottery[1:]
    other = tmp_path / "other"
    generate_store(
        golden, keys_dir, other, PackRange(1, 2), BlockSecrets(secrets.producer, lottery)
    )
    mine = BlockStore.open(golden_block).read(PackRange(1, 2))
    theirs = BlockStore.open(other).read()
    assert not np.array_equal(mine.symbols, theirs.symbols)
    assert not np.array_equal(mine.tier, theirs.tier)
    assert (np.asarray(mine.symbols) == np.asarray(theirs.symbols)).mean() < 0.5


@pytest.mark.fullblock
@GOLDEN_BLOCK
def test_a_changed_symbol_is_named_by_the_audit(golden_block, golden, keys_dir, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(golden_block, copy)
    symbols = np.load(copy / "symbols.npy", mmap_mode="r+")
    tiers = np.load(copy / "tier.npy", mmap_mode="r")
    row = int(np.flatnonzero(np.asarray(tiers) == 1)[0])  # the 10,000 EUR unit
    lion = golden.definition.symbol_codes.index("LION")
    hibou = golden.definition.symbol_codes.index("HIBOU")
    symbols[row] = np.where(symbols[row] == lion, hibou, symbols[row])
    symbols.flush()
    del symbols
    producer_key = load_public_key(keys_dir / "producer-signing.pub")
    report = audit_block(BlockStore.open(copy), golden, producer_key, show_progress=False)
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert set(failed) == {"store files", "rules"}
    assert "records 10000 EUR" in failed["rules"] or "forbidden" in failed["rules"]
