"""A block's public commitment: commitment.json and its two signatures, inclusion proofs
checked offline, the lottery's own audit before it countersigns, the reveal of a closed block
and its public recount, and the audit's check of a store against its commitment."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.block import BlockStore, PackRange
from printpipe.commitment import (
    COMMITMENT_FILE,
    PRODUCER,
    load_commitment,
    make_proof,
    verify_commitment,
    write_proof,
)
from printpipe.commitment.inclusion import parse_proof, proof_problem
from printpipe.commitment.leaves import ticket_leaf, ticket_leaves
from printpipe.commitment.merkle import (
    audit_path,
    audit_path_nodes,
    audit_paths,
    leaf_hash,
    leaf_hashes,
    levels_root,
    tree_root,
    verify_inclusions,
)
from printpipe.commitment.statement import Tier, commitment_from_summary
from printpipe.commitment.tree import store_levels, store_opening
from printpipe.errors import PrintpipeError
from printpipe.games import load_game
from printpipe.generation import audit_block
from printpipe.ids import TicketId
from printpipe.keys import (
    LOTTERY_SIGNING_PUB,
    PRODUCER_SIGNING_PUB,
    init_keys,
    load_public_key,
    load_signing_key,
)
from printpipe.rng import LEAF_SALT_SIZE
from tests.conftest import run_cli
from tests.ledger_helpers import generate_store

FULL_BLOCK = 1_500_000


def refused(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("printpipe: error:"), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope="module")
def block(tmp_path_factory, game, keys_dir) -> Path:
    """Packs 1 to 8 with their manifest; the commitment countersigned by the lottery."""
    out = generate_store(game, keys_dir, tmp_path_factory.mktemp("c") / "block", PackRange(1, 8))
    run_cli(
        "commitment", "sign", str(out / COMMITMENT_FILE), "--manifest", str(out / "manifest.ppm"),
        "--keys", str(keys_dir), "--quiet", check=True,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def levels(block, game):
    return store_levels(BlockStore.open(block), game.definition)


@pytest.fixture(scope="module")
def keys(keys_dir):
    return load_public_key(keys_dir / PRODUCER_SIGNING_PUB), load_public_key(
        keys_dir / LOTTERY_SIGNING_PUB
    )


def proof_of(block: Path, game, levels, index: int):
    store = BlockStore.open(block)
    commitment = load_commitment(block / COMMITMENT_FILE)
    opening = store_opening(store, game.definition, index)
    return make_proof(commitment, opening, audit_path(levels, index))


def a_winner(block: Path) -> int:
    return int(np.flatnonzero(BlockStore.open(block).read().tier)[5])


# -- commitment.json ---------------------------------------------------------------------------


def test_generate_keeps_the_root_in_the_signed_summary_and_writes_a_signed_commitment(
    game, keys_dir, keys, tmp_path
):
    out = generate_store(game, keys_dir, tmp_path / "b", PackRange(3, 4))
    store = BlockStore.open(out)
    assert store.verify_signature(keys[0])
    root = levels_root(store_levels(store, game.definition))
    assert store.summary.tree.root == root.hex()
    commitment = load_commitment(out / COMMITMENT_FILE)
    assert commitment.root == root and commitment.tickets == 250
    assert commitment.first_pack_number == 3 and commitment.block == 1
    verify_commitment(commitment, keys[0], None)
    with pytest.raises(PrintpipeError, match="not signed by the lottery"):
        verify_commitment(commitment, keys[0], keys[1])
    counts = np.bincount(store.read().tier, minlength=len(game.definition.tier_amounts))
    assert [t.tickets for t in commitment.tiers] == counts.tolist()


def test_a_pack_range_has_the_salts_of_the_same_packs_of_the_block(block, game, keys_dir, tmp_path):
    part = generate_store(game, keys_dir, tmp_path / "part", PackRange(3, 5))
    whole = BlockStore.open(block).read_salts(PackRange(3, 5))
    assert np.array_equal(BlockStore.open(part).read_salts(), whole)
    salts = BlockStore.open(block).read_salts()
    assert len({bytes(s) for s in salts}) == len(salts)  # 256 random bits each


def test_the_countersigned_commitment_verifies(block, keys_dir):
    result = run_cli("commitment", "verify", str(block / COMMITMENT_FILE), "--keys", str(keys_dir))
    assert result.returncode == 0, result.stderr
    assert "signed by the producer and countersigned by the lottery" in result.stdout
    assert "1,000 tickets" in result.stdout


def _changed(document: dict, change: str) -> dict:
    document = json.loads(json.dumps(document))
    statement, signatures = document["statement"], document["signatures"]
    if change == "tier count":  # one lot moved between tiers: the totals still add up
        statement["tiers"][0]["tickets"] -= 1
        statement["tiers"][-1]["tickets"] += 1
    elif change == "root":
        statement["tree"]["root"] = "%064x" % (int(statement["tree"]["root"], 16) ^ 1)
    elif change == "block":
        statement["block"] += 1
    elif change in ("producer signature", "lottery signature"):
        entry = signatures[change.split()[0]]
        entry["ed25519"] = "%0128x" % (int(entry["ed25519"], 16) ^ (1 << 100))
    elif change == "lottery signature removed":
        del signatures["lottery"]
    elif change == "lottery signature by the producer":
        signatures["lottery"] = signatures["producer"]
    return document


COMMITMENT_CHANGES = [
    ("tier count", "producer's signature does not verify"),
    ("root", "producer's signature does not verify"),
    ("block", "producer's signature does not verify"),
    ("producer signature", "producer's signature does not verify"),
    ("lottery signature", "lottery's signature does not verify"),
    ("lottery signature removed", "not signed by the lottery"),
    ("lottery signature by the producer", "lottery's signature is by another key"),
]


@pytest.mark.parametrize(("change", "message"), COMMITMENT_CHANGES)
def test_any_change_to_the_commitment_fails_with_one_line(
    block, keys_dir, tmp_path, change, message
):
    document = json.loads((block / COMMITMENT_FILE).read_bytes())
    bad = tmp_path / "commitment.json"
    bad.write_text(json.dumps(_changed(document, change), indent=2))
    refused(run_cli("commitment", "verify", str(bad), "--keys", str(keys_dir)), message)


def test_the_audit_checks_the_store_against_its_commitment(block, game, keys, tmp_path):
    store = BlockStore.open(block)
    report = audit_block(store, game, keys[0], False, lottery_key=keys[1])
    check = next(c for c in report.checks if c.name == "commitment")
    assert check.ok and "countersigned by the lottery" in check.detail, check.detail
    document = json.loads((block / COMMITMENT_FILE).read_bytes())
    for change, message in [
        ("tier count", "tickets of 0 EUR where it states"),
        ("root", "the root"),
        ("lottery signature", "lottery's signature does not verify"),
    ]:
        bad = tmp_path / f"{change}.json"
        bad.write_text(json.dumps(_changed(document, change)))
        report = audit_block(store, game, keys[0], False, commitment=bad, lottery_key=keys[1])
        check = next(c for c in report.checks if c.name == "commitment")
        assert not check.ok and message in check.detail, (change, check.detail)
        assert not report.passed
    # A salt changed in the store: its file no longer matches, nor does the tree.
    copy = tmp_path / "copy"
    shutil.copytree(block, copy)
    salts = np.load(copy / "salt.npy", mmap_mode="r+")
    salts[517, 3] ^= 1
    salts.flush()
    del salts
    report = audit_block(BlockStore.open(copy), game, keys[0], False, lottery_key=keys[1])
    failed = {c.name: c.detail for c in report.checks if not c.ok}
    assert "store files" in failed and "do not give the root" in failed["commitment"]


def test_the_lottery_refuses_to_countersign_what_the_manifest_does_not_give(
    block, game, keys_dir, tmp_path
):
    """A producer that signs a commitment its own manifest contradicts is caught."""
    commitment = load_commitment(block / COMMITMENT_FILE)
    tiers = list(commitment.tiers)
    tiers[0] = Tier(tiers[0].amount_eur, tiers[0].tickets - 1)
    tiers[-1] = Tier(tiers[-1].amount_eur, tiers[-1].tickets + 1)
    lie = commitment_from_summary(BlockStore.open(block).summary)
    lie = lie.__class__(**{**lie.__dict__, "tiers": tuple(tiers)})
    path = tmp_path / "lie.json"
    path.write_bytes(lie.sign(PRODUCER, load_signing_key(keys_dir)).to_json())
    before = path.read_bytes()
    result = run_cli(
        "commitment", "sign", str(path), "--manifest", str(block / "manifest.ppm"),
        "--keys", str(keys_dir), "--quiet",
    )  # fmt: skip
    refused(result, "the manifest's records give", "EUR where it states")
    assert path.read_bytes() == before
    # The commitment of another block's store, against this manifest.
    other = generate_store(game, keys_dir, tmp_path / "other", PackRange(1, 8), block=2)
    result = run_cli(
        "commitment", "sign", str(other / COMMITMENT_FILE), "--manifest",
        str(block / "manifest.ppm"), "--keys", str(keys_dir), "--quiet",
    )  # fmt: skip
    refused(result, "not of its game, definition, block and packs")


# -- inclusion proofs ------------------------------------------------------------------------


def test_every_proof_of_a_block_verifies(block, game, levels, keys):
    commitment = load_commitment(block / COMMITMENT_FILE)
    verify_commitment(commitment, *keys)
    for index in range(commitment.tickets):
        proof = proof_of(block, game, levels, index)
        assert proof_problem(proof, commitment) is None, index


def _flipped(hex_text: str) -> str:
    """The same hex digest with its last bit flipped."""
    return f"{int(hex_text, 16) ^ 1:0{len(hex_text)}x}"


def _proof_changes(proof: dict) -> dict[str, dict]:
    """The proof with one field changed, for each field."""
    ticket, index = proof["ticket"], proof["leaf_index"]
    neighbour = index ^ 1  # same pack: its serial differs in the ticket number
    neighbour_serial = TicketId(412, 1 + neighbour // 125, neighbour % 125).serial
    other_virn = ticket["virn"][:-1] + str((int(ticket["virn"][-1]) + 1) % 10)
    path = proof["audit_path"]
    changes = {
        "prize": {"ticket": {**ticket, "prize_eur": 4 if ticket["prize_eur"] != 4 else 2}},
        "serial": {"ticket": {**ticket, "serial": neighbour_serial}},
        "serial and index": {
            "ticket": {**ticket, "serial": neighbour_serial},
            "leaf_index": neighbour,
        },
        "virn": {"ticket": {**ticket, "virn": other_virn}},
        "salt": {"ticket": {**ticket, "salt": _flipped(ticket["salt"])}},
        "one sibling": {"audit_path": [*path[:3], _flipped(path[3]), *path[4:]]},
        "a sibling dropped": {"audit_path": path[:-1]},
        "root": {"root": _flipped(proof["root"])},
        "leaf index": {"leaf_index": index ^ 2},
        "block": {"block": 2},
        "tree size": {"tree_size": proof["tree_size"] + 1},
    }
    return {name: {**proof, **change} for name, change in changes.items()}


def test_a_proof_with_any_single_field_changed_fails(block, game, levels, keys_dir, tmp_path):
    proof = proof_of(block, game, levels, a_winner(block))
    good = tmp_path / "proof.json"
    write_proof(good, proof)
    args = ["--commitment", str(block / COMMITMENT_FILE), "--keys", str(keys_dir)]
    assert stat.S_IMODE(good.stat().st_mode) == 0o600  # it tells the ticket's prize
    result = run_cli("verify-proof", str(good), *args)
    assert result.returncode == 0, result.stderr
    assert f"proof OK: ticket {proof.ticket.serial} wins {proof.ticket.prize_eur} EUR" in (
        result.stdout
    )
    commitment = load_commitment(block / COMMITMENT_FILE)
    changes = _proof_changes(proof.document())
    for name, document in changes.items():
        data = json.dumps(document).encode()
        try:
            problem = proof_problem(parse_proof(data), commitment)
        except PrintpipeError as exc:
            problem = str(exc)
        assert problem, name
    for name in ("prize", "serial and index", "virn", "salt", "one sibling", "root"):
        bad = tmp_path / f"{name.replace(' ', '-')}.json"
        bad.write_text(json.dumps(changes[name]))
        refused(run_cli("verify-proof", str(bad), *args), f"proof {bad} refused")


def test_a_proof_holds_nothing_of_another_ticket_but_hashes_of_salted_leaves(block, game, levels):
    store = BlockStore.open(block)
    definition = game.definition
    index = a_winner(block)
    proof = proof_of(block, game, levels, index)
    document = proof.document()
    assert set(document) == {
        "format", "game", "block", "ticket", "leaf_index", "tree_size", "audit_path", "root",
    }  # fmt: skip
    assert set(document["ticket"]) == {"serial", "prize_eur", "virn", "salt"}
    assert document["ticket"]["serial"] == TicketId(412, 1 + index // 125, index % 125).serial
    # Every other ticket's leaf, rebuilt: the path's hashes are exactly the nodes over them.
    tickets, salts = store.read(), store.read_salts()
    rows = np.arange(len(tickets))
    leaves = ticket_leaves(
        412, 1 + rows // 125, rows % 125, definition.tier_amounts[tickets.tier], tickets.virn, salts
    )
    size = len(leaves)
    for (level, position), sibling in zip(
        audit_path_nodes(index, size), proof.audit_path, strict=True
    ):
        first, last = position << level, min((position + 1) << level, size)
        assert not first <= index < last  # a subtree of other tickets only
        assert sibling == tree_root(leaf_hashes(leaves[first:last]))  # their salted leaves
    # And no serial, VIRN, salt or leaf of another ticket appears anywhere in it.
    text = proof.to_json().decode()
    for other in range(size):
        if other == index:
            continue
        opening = store_opening(store, definition, other)
        assert opening.serial not in text and opening.salt.hex() not in text
        assert f'"{opening.virn}"' not in text
        assert leaf_hash(opening.leaf()).hex() not in text or other == index ^ 1


def test_the_published_files_of_an_open_block_hold_no_per_ticket_data(block, game):
    """commitment.json is the one file published before the block closes."""
    data = (block / COMMITMENT_FILE).read_text()
    document = json.loads(data)
    assert set(document) == {"format", "statement", "signatures"}
    assert set(document["statement"]) == {
        "game", "block", "packs", "tickets", "tiers", "tree", "leaf",
    }  # fmt: skip
    assert all(set(t) == {"amount_eur", "tickets"} for t in document["statement"]["tiers"])
    hexes = set(re.findall(r"[0-9a-f]{64,}", data))
    words = re.sub(r"[0-9a-f]{64,}", "", data)
    assert not re.search(r"\d{4}-\d{6}-\d{3}-\d", words)  # no serial
    assert not re.search(r"\d{10}", words)  # no VIRN
    statement, signatures = document["statement"], document["signatures"]
    assert hexes == {
        statement["tree"]["root"],
        statement["game"]["definition_sha256"],
        *(s["key_sha256"] for s in signatures.values()),
        *(s["ed25519"] for s in signatures.values()),
    }
    store = BlockStore.open(block)
    salts = {bytes(s).hex() for s in store.read_salts()}
    assert not salts & hexes


@settings(max_examples=200, deadline=None)
@given(
    game_number=st.integers(0, 9999),
    pack=st.integers(0, 999_999),
    ticket=st.integers(0, 999),
    prize=st.integers(0, 10**9),
    virn=st.one_of(st.none(), st.integers(0, 10**10 - 1)),
    salt=st.binary(min_size=LEAF_SALT_SIZE, max_size=LEAF_SALT_SIZE),
)
def test_leaves_of_many_tickets_are_the_leaves_of_each(
    game_number, pack, ticket, prize, virn, salt
):
    many = ticket_leaves(
        game_number,
        np.array([pack]),
        np.array([ticket]),
        np.array([prize]),
        None if virn is None else np.array([virn], dtype=np.uint64),
        np.frombuffer(salt, dtype=np.uint8).reshape(1, -1),
    )
    serial = TicketId(game_number, pack, ticket).serial
    one = ticket_leaf(serial, prize, None if virn is None else f"{virn:010d}", salt)
    assert bytes(many[0]) == one
    assert len(one) == 32 + 17 + 8 + (10 if virn is not None else 0)


# -- reveal ----------------------------------------------------------------------------------


def test_a_closed_block_is_revealed_and_anyone_recounts_it(block, keys_dir, tmp_path):
    commitment = str(block / COMMITMENT_FILE)
    reveal = tmp_path / "reveal.txt"
    keys = ["--keys", str(keys_dir), "--quiet"]
    reveal_args = ["commitment", "reveal", commitment, "--manifest", str(block / "manifest.ppm")]
    tomorrow = (dt.date.today() + dt.timedelta(days=1)).isoformat()
    refused(run_cli(*reveal_args, "--closed-on", tomorrow, "--out", str(reveal), *keys), "after")
    assert not reveal.exists()
    result = run_cli(*reveal_args, "--closed-on", "2026-01-31", "--out", str(reveal), *keys)
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(reveal.stat().st_mode) == 0o600  # published only once it is checked
    lines = reveal.read_text().splitlines()
    assert lines[0] == "printpipe-reveal/1" and lines[3] == "index,serial,prize_eur,virn,salt"
    assert len(lines) == 4 + 1000
    result = run_cli("commitment", "recount", str(reveal), "--commitment", commitment, *keys)
    assert result.returncode == 0, result.stderr
    assert "closed on 2026-01-31: 1,000 leaves" in result.stdout
    # A winner and a loser swap prizes: the counts hold, the root does not.
    rows = lines[4:]
    winner = next(i for i, r in enumerate(rows) if r.split(",")[2] != "0")
    loser = next(i for i, r in enumerate(rows) if r.split(",")[2] == "0")
    a, b = rows[winner].split(","), rows[loser].split(",")
    a[2], b[2] = b[2], a[2]
    rows[winner], rows[loser] = ",".join(a), ",".join(b)
    swapped = tmp_path / "swapped.txt"
    swapped.write_text("\n".join(lines[:4] + rows) + "\n")
    result = run_cli("commitment", "recount", str(swapped), "--commitment", commitment, *keys)
    refused(result, "do not rebuild the committed root")
    # The closure is the lottery's signed word: a changed day does not pass.
    moved = tmp_path / "moved.txt"
    moved.write_text(
        "\n".join([lines[0], lines[1].replace("2026-01-31", "2026-01-01"), *lines[2:]])
    )
    result = run_cli("commitment", "recount", str(moved), "--commitment", commitment, *keys)
    refused(result, "signature")


def test_a_block_not_countersigned_is_not_revealed(game, keys_dir, tmp_path):
    out = generate_store(game, keys_dir, tmp_path / "b", PackRange(1, 2))
    result = run_cli(
        "commitment", "reveal", str(out / COMMITMENT_FILE), "--manifest", str(out / "manifest.ppm"),
        "--closed-on", "2026-01-31", "--out", str(tmp_path / "r.txt"), "--keys", str(keys_dir),
    )  # fmt: skip
    refused(result, "not signed by the lottery")
    assert not (tmp_path / "r.txt").exists()


def test_an_online_game_commits_its_units_without_a_virn(keys_dir, tmp_path):
    game = load_game("golden-animals")
    out = generate_store(game, keys_dir, tmp_path / "ga", PackRange(1, 2))
    commitment_path = out / COMMITMENT_FILE
    keys = ["--keys", str(keys_dir), "--quiet"]
    run_cli(
        "commitment", "sign", str(commitment_path), "--manifest", str(out / "manifest.ppm"), *keys,
        check=True,
    )  # fmt: skip
    commitment = load_commitment(commitment_path)
    assert commitment.leaf_fields == ("salt", "serial", "prize_eur")
    store = BlockStore.open(out)
    levels = store_levels(store, game.definition)
    index = int(np.flatnonzero(store.read().tier)[0])
    proof = make_proof(
        commitment, store_opening(store, game.definition, index), audit_path(levels, index)
    )
    assert proof.ticket.virn is None
    write_proof(tmp_path / "proof.json", proof)
    result = run_cli("verify-proof", str(tmp_path / "proof.json"), "--commitment",
                     str(commitment_path), "--keys", str(keys_dir))  # fmt: skip
    assert result.returncode == 0, result.stderr
    reveal = tmp_path / "reveal.txt"
    run_cli(
        "commitment", "reveal", str(commitment_path), "--manifest", str(out / "manifest.ppm"),
        "--closed-on", "2026-01-31", "--out", str(reveal), *keys, check=True,
    )  # fmt: skip
    assert reveal.read_text().splitlines()[4].split(",")[3] == ""
    run_cli("commitment", "recount", str(reveal), "--commitment", str(commitment_path), *keys,
            check=True)  # fmt: skip


def test_other_keys_do_not_verify(block, tmp_path, keys_dir):
    strangers = tmp_path / "strangers"
    init_keys(strangers)
    result = run_cli(
        "commitment", "verify", str(block / COMMITMENT_FILE),
        "--keys", str(keys_dir), "--lottery-key", str(strangers / LOTTERY_SIGNING_PUB),
    )  # fmt: skip
    refused(result, "lottery's signature is by another key")


# -- a full block ----------------------------------------------------------------------------


@pytest.mark.fullblock
@pytest.mark.xdist_group("fullblock")
def test_every_ticket_of_a_full_block_has_a_proof_that_verifies(full_block, game, keys):
    store = BlockStore.open(full_block)
    commitment = load_commitment(full_block / COMMITMENT_FILE)
    verify_commitment(commitment, keys[0], None)
    assert commitment.tickets == FULL_BLOCK
    levels = store_levels(store, game.definition)  # every leaf from its ticket's own values
    assert levels_root(levels) == commitment.root
    hashes = levels[0]
    chunk = 1 << 16
    for start in range(0, FULL_BLOCK, chunk):
        indices = np.arange(start, min(start + chunk, FULL_BLOCK))
        paths = audit_paths(levels, indices)  # each ticket's proof, as the ledger will give it
        ok = verify_inclusions(hashes[indices], indices, FULL_BLOCK, paths, commitment.root)
        assert ok.all(), f"ticket {start + int(np.flatnonzero(~ok)[0])}'s proof fails"
    assert len(audit_path_nodes(0, FULL_BLOCK)) == 21
    assert max(len(audit_path_nodes(i, FULL_BLOCK)) for i in (2**20, FULL_BLOCK - 1)) <= 21
    # A few as proof files, through the public check: the edges of the tree and its middle.
    for index in (0, 2**20 - 1, 2**20, 1_234_567, FULL_BLOCK - 1):
        proof = make_proof(
            commitment, store_opening(store, game.definition, index), audit_path(levels, index)
        )
        assert proof_problem(proof, commitment) is None, index
