"""Golden Animals through the shared commands: unit feed export, manifest/auditor CSV, proofs."""

from __future__ import annotations

import csv
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.games import game_template_dir, load_game
from printpipe.games.base import DefinitionReader
from printpipe.games.golden_animals import GoldenAnimals
from printpipe.handover import FeedReader
from printpipe.handover.feed import encode_header, record_dtype
from printpipe.proof.specimens import make_composition_specimens
from printpipe.proof.unit_pages import specimen_label
from tests.conftest import run_cli
from tests.ledger_helpers import generate_store

SPEC_COLUMNS = "serial,game,block,pool,unit,grid,extra_grid,prize_eur"
TEMPLATE = game_template_dir("golden-animals") / "game.toml"


@pytest.fixture(scope="module")
def golden() -> GoldenAnimals:
    game = load_game("golden-animals")
    assert isinstance(game, GoldenAnimals)
    return game


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory, golden, keys_dir) -> Path:
    return generate_store(golden, keys_dir, tmp_path_factory.mktemp("g") / "block", PackRange(1, 2))


@pytest.fixture(scope="module")
def exported(tmp_path_factory, store_dir, keys_dir) -> Path:
    out = tmp_path_factory.mktemp("g") / "feed"
    run_cli("export", str(store_dir), "--out", str(out), "--keys", str(keys_dir), "-q", check=True)
    return out


def _feed(out: Path) -> Path:
    (feed,) = out.glob("*.feed")
    return feed


def test_export_writes_the_feed_job_and_manifest_not_pdfs(exported, keys_dir):
    job = json.loads((exported / "job.json").read_text())
    feed = _feed(exported)
    assert not list(exported.glob("*.pdf"))
    assert job["output"] == "feed" and job["tickets"] == 2000
    (entry,) = job["files"]
    assert entry["path"] == feed.name == "golden-animals-b0001-p000001-000002.feed"
    assert entry["sha256"] == hashlib.sha256(feed.read_bytes()).hexdigest()
    assert entry["first_serial"] == "1805-000001-000-3"
    shown = run_cli("manifest", "verify", str(exported / "manifest.ppm"), "--keys", str(keys_dir))
    assert shown.returncode == 0 and f"{entry['sha256']}  {feed.name}" in shown.stdout


def test_every_record_is_the_store_unit_and_its_lot_by_the_rules(exported, store_dir, golden):
    units = BlockStore.open(store_dir).read(PackRange(1, 2))
    amounts = golden.definition.tier_amounts[np.asarray(units.tier, dtype=np.int64)]
    with FeedReader(_feed(exported)) as reader:
        records = reader.records(0, reader.units)
    assert (records["symbols"] == np.asarray(units.symbols)).all()
    assert (records["prize_eur"] == amounts).all()
    assert records["pack"].tolist() == [1] * 1000 + [2] * 1000
    assert records["unit"].tolist() == list(range(1000)) * 2
    ok = run_cli("feed", "verify", str(_feed(exported)))
    assert ok.returncode == 0 and "2,000 units" in ok.stdout


def test_feed_show_recomputes_a_players_unit(exported, golden):
    with FeedReader(_feed(exported)) as reader:
        records = reader.records(0, reader.units)
    i = int(np.flatnonzero(records["prize_eur"] >= 5)[0])
    serial = f"1805-000001-{i:03d}"
    with FeedReader(_feed(exported)) as reader:
        unit = reader.unit(i)
    assert unit.serial.startswith(serial)
    grid, extra = unit.fields["grid"], unit.fields["extra_grid"]
    assert golden.prize_eur(grid, extra or ()) == unit.prize_eur == int(records["prize_eur"][i])
    shown = run_cli("feed", "show", str(_feed(exported)), "--unit", unit.serial)
    assert shown.returncode == 0
    assert f"lot recorded: {unit.prize_eur} EUR; by the rules: {unit.prize_eur} EUR" in shown.stdout
    bad = run_cli("feed", "show", str(_feed(exported)), "--unit", "1805-000009-000-0")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1


def test_the_feed_is_byte_identical_for_the_same_range(exported, store_dir, keys_dir, tmp_path):
    again = tmp_path / "again"
    run_cli(
        "export", str(store_dir), "--out", str(again), "--keys", str(keys_dir), "-q", check=True
    )
    assert _feed(again).read_bytes() == _feed(exported).read_bytes()


def test_a_damaged_feed_is_refused_in_one_line(exported, tmp_path):
    data = bytearray(_feed(exported).read_bytes())
    with FeedReader(_feed(exported)) as reader:
        offset, size = reader.offset, reader.dtype.itemsize
        records = reader.records(0, reader.units)
    loser = int(np.flatnonzero(records["prize_eur"] == 0)[0])
    tampered = bytearray(data)
    tampered[offset + loser * size + 6] = 7  # a loser's lot says 7 EUR
    for name, content in (("lot.feed", tampered), ("short.feed", data[:-3])):
        path = tmp_path / name
        path.write_bytes(bytes(content))
        result = run_cli("feed", "verify", str(path))
        assert result.returncode == 1, name
        assert len(result.stderr.strip().splitlines()) == 1 and "refused" in result.stderr


@settings(max_examples=60, deadline=None)
@given(
    width=st.integers(1, 48),
    data=st.data(),
)
def test_feed_records_round_trip(width, data):
    n = data.draw(st.integers(1, 20))
    codes = [f"S{i}" for i in range(data.draw(st.integers(2, 255)))]
    dtype = record_dtype(width)
    records = np.zeros(n, dtype=dtype)
    records["pack"] = data.draw(st.integers(1, 999_999))
    records["unit"] = np.arange(n)
    records["prize_eur"] = data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=n, max_size=n))
    records["symbols"] = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(0, len(codes) - 1), min_size=width, max_size=width),
                min_size=n,
                max_size=n,
            )
        )
    )
    header = {
        "format": "printpipe-feed/1",
        "game": {"id": "x", "number": 1805, "definition_sha256": "0"},
        "block": 1,
        "packs": {"first": 1, "last": 1, "first_pack_number": 1, "last_pack_number": 1},
        "units": n,
        "record_bytes": dtype.itemsize,
        "fields": [{"name": "f", "width": width}],
        "symbol_codes": codes,
        "blank_symbol": None,
    }
    assert dtype.itemsize == 10 + width  # packed, no padding
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.feed"
        path.write_bytes(encode_header(header) + records.tobytes())
        with FeedReader(path) as reader:
            for i in range(n):
                unit = reader.unit(i)
                assert unit.prize_eur == int(records["prize_eur"][i])
                assert unit.fields["f"] == [codes[s] for s in records["symbols"][i]]
                assert unit.serial.startswith(f"1805-{int(records['pack'][i]):06d}-{i:03d}-")


def test_the_auditor_csv_has_the_spec_columns_and_rechecks(store_dir, keys_dir, tmp_path, golden):
    out = tmp_path / "audit.csv"
    manifest = str(store_dir / "manifest.ppm")
    run_cli("manifest", "export", manifest, "--keys", str(keys_dir), "--csv", str(out), check=True)
    lines = out.read_text().splitlines()
    assert lines[0] == SPEC_COLUMNS and len(lines) == 2001
    rows = list(csv.DictReader(lines))
    assert rows[0]["serial"] == "1805-000001-000-3" and rows[0]["unit"] == "1"
    assert rows[1500]["unit"] == "1501" and rows[1500]["pool"] == "1"
    no_extra = [r for r in rows if "EXTRA" not in r["grid"].split()]
    with_extra = [r for r in rows if "EXTRA" in r["grid"].split()]
    assert no_extra and with_extra
    assert all(r["extra_grid"] == "" for r in no_extra)
    for r in rows[:300]:
        extra = r["extra_grid"].split() if r["extra_grid"] else []
        assert len(r["grid"].split()) == 20 and golden.prize_eur(r["grid"].split(), extra) == int(
            r["prize_eur"]
        )
    refused = run_cli(
        "ledger", "import", manifest, "--keys", str(keys_dir), "--db", str(tmp_path / "l.db")
    )
    assert refused.returncode == 1 and "with its commitment (--commitment" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('kind = "feed"', 'kind = "screen"', "output.kind"),
        ('"unit", "grid"', '"unit", "ticket_colour", "grid"', "records.columns"),
        ('"grid", "extra_grid", "prize_eur"]', '"grid", "prize_eur"]', "records.columns"),
    ],
)
def test_output_and_record_layout_are_checked_on_load(tmp_path, old, new, field):
    text = TEMPLATE.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "game.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(PrintpipeError, match=f"field {field}"):
        GoldenAnimals(path)
    assert DefinitionReader(TEMPLATE).data["output"]["kind"] == "feed"


def test_every_specimen_unit_wins_the_lot_labelled_beside_it(golden):
    specimens = make_composition_specimens(golden)
    codes = golden.definition.symbol_codes
    tiers = [s.tier for s in specimens]
    for prize in golden.definition.prizes:
        assert tiers.count(prize.tier) == 3
        shapes = {
            tuple(map(tuple, golden.unit_wins(np.array(s.symbols))[1]))
            for s in specimens
            if s.tier == prize.tier
        }
        assert len(shapes) == 3  # three different compositions
    assert [(s.tier, s.teaser) for s in specimens[-2:]] == [(0, False), (0, True)]
    for s in specimens:
        grid = [codes[i] for i in s.symbols[:20]]
        extra = [codes[i] for i in s.symbols[20:]] if "EXTRA" in grid else []
        lot = golden.prize_eur(grid, extra)
        label = specimen_label(golden, s)
        assert lot == s.amount_eur and label.endswith(f"{lot:,} €".replace(",", " "))


def test_proof_of_golden_animals(tmp_path, golden):
    out = tmp_path / "proof"
    result = run_cli("proof", "--game", "golden-animals", "--out", str(out))
    assert result.returncode == 0, result.stderr
    record = json.loads((out / "proof.json").read_text())
    assert (out / record["pdf"]).stat().st_size > 0
    assert len(record["previews"]) == record["pages"] == 15
    assert all((out / name).exists() for name in record["previews"])
    assert len(record["specimens"]) == 26
    for spec in record["specimens"]:
        assert spec["serial"].startswith("1805-000000-")
        lot = golden.prize_eur(spec["grid"], spec["extra_grid"] or ())
        assert lot == spec["amount_eur"] and spec["label"].endswith(f"{lot:,} €".replace(",", " "))
    document = pdfium.PdfDocument(str(out / record["pdf"]))
    cover = document[0].get_textpage().get_text_range()
    document.close()
    assert "0,97 € GOLDEN ANIMALS + 0,03 € SUPER JACKPOT" in cover
    assert "= 71,00 %" in cover


def test_the_screen_names_each_animal_as_its_grid_and_paytable_do(golden):
    """A unit's wins in words (under its grid, in the history, on the proof) name each animal
    by the caption its cell and the paytable show ("Éléphant", "Zèbre"), never by its code
    ("ELEPHANT", "ZEBRE"): a chain of each animal, alone on a blank grid."""
    from printpipe.play.screen import game_screen, unit_screen

    screen = game_screen(golden)
    codes = golden.definition.symbol_codes
    blank = codes.index(golden.definition.records.blank_symbol)
    animals = [row["symbol"] for row in screen["paytable"] if row["text"].startswith("chaîne")]
    assert len(animals) == 8
    for code in animals:
        caption = screen["symbols"][code]["caption"]
        symbols = [codes.index(code)] * golden.chain_length
        symbols += [blank] * (2 * golden.cells - len(symbols))
        (grid,) = unit_screen(golden, bytes(symbols), 0)["grids"]
        assert len(grid["wins"]) == 1 and grid["wins"][0].startswith(f"chaîne {caption} "), (
            code, grid["wins"])  # fmt: skip
