"""The secure manifest: format, determinism, the real age CLI, and refusal of any tampering."""

from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.errors import PrintpipeError
from printpipe.games import load_game
from printpipe.handover import BLOCK_MANIFEST, decrypt_manifest, verify_manifest, write_run_manifest
from printpipe.keys import (
    LOTTERY_IDENTITY,
    LOTTERY_RECIPIENT,
    PRODUCER_SIGNING_PUB,
    init_keys,
    load_lottery_identity,
    load_lottery_recipient,
    load_public_key,
    load_signing_key,
)
from tests.conftest import run_cli
from tests.ledger_helpers import generate_store

SPEC_COLUMNS = "serial,game,block,pool,pack,ticket,effigy,paws,bonus,prize_eur,virn"


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory, game, keys_dir) -> Path:
    return generate_store(game, keys_dir, tmp_path_factory.mktemp("m") / "block", PackRange(1, 8))


@pytest.fixture(scope="module")
def manifest_file(store_dir) -> Path:
    return store_dir / BLOCK_MANIFEST


def _plaintext(path: Path, keys: Path) -> bytes:
    manifest = verify_manifest(path, load_public_key(keys / PRODUCER_SIGNING_PUB))
    lines: list[bytes] = []
    decrypt_manifest(manifest, load_lottery_identity(keys / LOTTERY_IDENTITY), lines.extend)
    return b"".join(line + b"\n" for line in lines)


def _run_manifest(store_dir: Path, keys: Path, out: Path, packs: PackRange, files=()) -> Path:
    store = BlockStore.open(store_dir)
    write_run_manifest(
        out,
        store,
        packs,
        load_lottery_recipient(keys / LOTTERY_RECIPIENT),
        load_signing_key(keys),
        list(files),
        game=load_game(store.game_id),
    )
    return out


def _refused(result: subprocess.CompletedProcess) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("printpipe: error:"), result.stderr


def test_generate_writes_a_verifiable_block_manifest(manifest_file, keys_dir):
    result = run_cli("manifest", "verify", str(manifest_file), "--keys", str(keys_dir), check=True)
    assert "signature and body hash OK" in result.stdout
    assert "packs 1 to 8 (pack numbers 000001 to 000008)" in result.stdout
    assert "records 1,000" in result.stdout


def test_csv_export_has_the_spec_columns_and_the_store_contents(
    manifest_file, store_dir, keys_dir, tmp_path, game
):
    out = tmp_path / "audit.csv"
    args = ["manifest", "export", str(manifest_file), "--keys", str(keys_dir), "--csv", str(out)]
    run_cli(*args, check=True)
    text = out.read_text(encoding="utf-8")
    assert text.splitlines()[0] == SPEC_COLUMNS
    rows = list(csv.DictReader(text.splitlines()))
    tickets = BlockStore.open(store_dir).read()
    definition = game.definition
    assert len(rows) == len(tickets) == 1000
    codes = np.array(definition.symbol_codes)
    for i in (0, 1, 124, 125, 517, 999):
        row = rows[i]
        symbols = codes[tickets.symbols[i]]
        assert row["paws"] == " ".join(symbols[:9]) and row["bonus"] == " ".join(symbols[9:])
        assert row["effigy"] == definition.variants[tickets.variant[i]]
        assert int(row["prize_eur"]) == definition.tier_amounts[tickets.tier[i]]
        assert row["virn"] == f"{int(tickets.virn[i]):010d}"
        assert row["pack"] == f"{1 + i // 125:06d}" and row["ticket"] == f"{i % 125:03d}"
        assert row["serial"].startswith(f"0412-{1 + i // 125:06d}-{i % 125:03d}-")
        assert (row["game"], row["block"], row["pool"]) == ("0412", "1", "1")


def test_the_real_age_cli_decrypts_the_body(manifest_file, keys_dir, tmp_path):
    assert shutil.which("age"), "the age CLI is required (apt-get install age)"
    manifest = verify_manifest(manifest_file, load_public_key(keys_dir / PRODUCER_SIGNING_PUB))
    body = tmp_path / "body.age"
    body.write_bytes(manifest_file.read_bytes()[manifest.body_offset :])
    plain = subprocess.run(
        ["age", "-d", "-i", str(keys_dir / LOTTERY_IDENTITY), str(body)],
        capture_output=True,
        check=True,
    ).stdout
    # The plaintext is the auditor's CSV plus each ticket's commitment salt as a last column.
    assert plain.startswith(SPEC_COLUMNS.encode() + b",salt\n")
    rows = plain.splitlines()[1:]
    salts = BlockStore.open(manifest_file.parent).read_salts()
    assert [row.rpartition(b",")[2] for row in rows] == [bytes(s).hex().encode() for s in salts]
    assert hashlib.sha256(plain).hexdigest() == manifest.records_sha256
    assert plain == _plaintext(manifest_file, keys_dir)


def test_plaintext_is_deterministic_and_run_manifests_match_the_block(
    store_dir, manifest_file, keys_dir, tmp_path, game, tmp_path_factory
):
    a = _run_manifest(store_dir, keys_dir, tmp_path / "a.ppm", PackRange(3, 5))
    b = _run_manifest(store_dir, keys_dir, tmp_path / "b.ppm", PackRange(3, 5))
    assert a.read_bytes() != b.read_bytes()  # age is randomized...
    plain_a, plain_b = _plaintext(a, keys_dir), _plaintext(b, keys_dir)
    assert plain_a == plain_b  # ...the plaintext is not
    block_lines = _plaintext(manifest_file, keys_dir).splitlines(keepends=True)
    assert plain_a.splitlines(keepends=True)[1:] == block_lines[1 + 2 * 125 : 1 + 5 * 125]
    # An independent generation of packs 3:5 gives the same plaintext byte for byte.
    other = generate_store(game, keys_dir, tmp_path / "other", PackRange(3, 5))
    assert _plaintext(other / BLOCK_MANIFEST, keys_dir) == plain_a


def test_print_files_are_in_the_signed_header(store_dir, keys_dir, tmp_path):
    files = [{"path": "sheets/run-0001.pdf", "sha256": "ab" * 32, "pages": 3}]
    path = _run_manifest(store_dir, keys_dir, tmp_path / "run.ppm", PackRange(1, 2), files)
    result = run_cli("manifest", "verify", str(path), "--keys", str(keys_dir), check=True)
    assert f"{'ab' * 32}  sheets/run-0001.pdf" in result.stdout
    assert "run manifest" in result.stdout


def test_a_flipped_byte_anywhere_is_refused_and_nothing_is_written(
    manifest_file, keys_dir, tmp_path
):
    data = manifest_file.read_bytes()
    manifest = verify_manifest(manifest_file, load_public_key(keys_dir / PRODUCER_SIGNING_PUB))
    header_at = data.index(b'"records"')
    signature_at = data.index(b"signature ") + 20
    hash_at = data.index(b"body-sha256 ") + 15
    places = {
        "header": header_at + 12,
        "body hash": hash_at,
        "signature": signature_at,
        "body start": manifest.body_offset + 3,
        "body middle": (manifest.body_offset + len(data)) // 2,
        "body end": len(data) - 1,
    }
    for where, at in places.items():
        bad = bytearray(data)
        bad[at] ^= 0x01
        path = tmp_path / f"bad-{where.replace(' ', '-')}.ppm"
        path.write_bytes(bytes(bad))
        out = tmp_path / f"{path.stem}.csv"
        result = run_cli(
            "manifest", "export", str(path), "--keys", str(keys_dir), "--csv", str(out)
        )
        _refused(result)
        assert not out.exists(), where
        assert not list(tmp_path.glob(".*partial*"))


def test_truncation_wrong_keys_and_a_body_from_another_run_are_refused(
    store_dir, manifest_file, keys_dir, tmp_path
):
    data = manifest_file.read_bytes()
    verify = ["manifest", "verify"]
    (tmp_path / "short.ppm").write_bytes(data[:-100])
    _refused(run_cli(*verify, str(tmp_path / "short.ppm"), "--keys", str(keys_dir)))
    (tmp_path / "empty.ppm").write_bytes(b"")
    _refused(run_cli(*verify, str(tmp_path / "empty.ppm"), "--keys", str(keys_dir)))
    # Same packs, another run: its body under this run's signed header.
    other = _run_manifest(store_dir, keys_dir, tmp_path / "other.ppm", PackRange(1, 8))
    key = load_public_key(keys_dir / PRODUCER_SIGNING_PUB)
    mine, theirs = verify_manifest(manifest_file, key), verify_manifest(other, key)
    spliced = tmp_path / "spliced.ppm"
    spliced.write_bytes(data[: mine.body_offset] + other.read_bytes()[theirs.body_offset :])
    result = run_cli(*verify, str(spliced), "--keys", str(keys_dir))
    _refused(result)
    assert "body from another run" in result.stderr
    # Another producer's key; another lottery's identity.
    strangers = tmp_path / "strangers"
    init_keys(strangers)
    result = run_cli(
        *verify, str(manifest_file), "--producer-key", str(strangers / PRODUCER_SIGNING_PUB)
    )
    _refused(result)
    out = tmp_path / "x.csv"
    result = run_cli(
        "manifest", "export", str(manifest_file), "--keys", str(keys_dir),
        "--identity", str(strangers / LOTTERY_IDENTITY), "--csv", str(out),
    )  # fmt: skip
    _refused(result)
    assert "identity" in result.stderr and not out.exists()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_manifest_bytes_never_pass_and_never_crash(manifest_file, keys_dir, data):
    original = manifest_file.read_bytes()
    key = load_public_key(keys_dir / PRODUCER_SIGNING_PUB)
    kind = data.draw(st.sampled_from(["flip", "truncate", "insert"]))
    bad = bytearray(original)
    if kind == "flip":
        at = data.draw(st.integers(0, len(bad) - 1))
        bad[at] ^= data.draw(st.integers(1, 255))
    elif kind == "truncate":
        bad = bad[: data.draw(st.integers(0, len(bad) - 1))]
    else:
        at = data.draw(st.integers(0, len(bad)))
        bad[at:at] = data.draw(st.binary(min_size=1, max_size=8))
    path = manifest_file.parent.parent / f"fuzz-{hashlib.sha256(bad).hexdigest()[:12]}.ppm"
    path.write_bytes(bytes(bad))
    try:
        with pytest.raises(PrintpipeError):
            verify_manifest(path, key)
    finally:
        path.unlink()
