"""Proof = press: `printpipe proof approve` signs a proof pack's inputs with the lottery's key,
and `export` runs only on inputs an approval covers (or says NOT APPROVED)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from printpipe.games import game_template_dir
from printpipe.keys import init_keys
from tests.conftest import generate_store, run_cli


@pytest.fixture(scope="module")
def store(tmp_path_factory, game, keys_dir) -> Path:
    from printpipe.block import PackRange

    return generate_store(game, keys_dir, tmp_path_factory.mktemp("appr") / "blk", PackRange(1, 1))


def test_an_approved_proof_lets_the_export_run(approvals_dir, store, keys_dir, tmp_path):
    (approval,) = approvals_dir.glob("*.approval.json")
    body = json.loads(approval.read_text())
    assert body["statement"]["inputs"]["game"] == "chien-chat"
    assert set(body["statement"]["inputs"]) == {
        "game", "definition_sha256", "template", "template_sha256", "texts_sha256", "artwork",
    }  # fmt: skip
    out = tmp_path / "print"
    run_cli("export", str(store), "--out", str(out), "--keys", str(keys_dir), "--approvals",
            str(approvals_dir), "-q", check=True)  # fmt: skip
    job = json.loads((out / "job.json").read_text())
    assert job["approval"]["file"] == approval.name
    dated = tmp_path / "dated"  # without SOURCE_DATE_EPOCH, the files carry the approval's date
    run_cli("export", str(store), "--out", str(dated), "--keys", str(keys_dir), "--approvals",
            str(approvals_dir), "-q", check=True, env={"SOURCE_DATE_EPOCH": ""})  # fmt: skip
    approved_at = body["statement"]["approved_at"]  # e.g. 2026-11-30T11:23:31Z
    digits = "".join(c for c in approved_at if c.isdigit())
    assert json.loads((dated / "job.json").read_text())["date"] == f"D:{digits}+00'00'"


def test_no_approval_is_one_line_and_writes_nothing(store, keys_dir, tmp_path):
    out = tmp_path / "print"
    result = run_cli("export", str(store), "--out", str(out), "--keys", str(keys_dir),
                     "--approvals", str(tmp_path / "none"))  # fmt: skip
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "no approved proof of chien-chat" in result.stderr and "--unapproved" in result.stderr
    assert not out.exists()


def test_another_template_names_what_differs(approvals_dir, store, keys_dir, tmp_path):
    small = game_template_dir("chien-chat") / "ticket-small.toml"
    result = run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
                     "--approvals", str(approvals_dir), "--template", str(small),
                     "--sheet", "A3")  # fmt: skip
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "no approved proof matches this press run: the template (ticket-small" in result.stderr
    assert "approved: ticket sha256" in result.stderr


def test_a_proof_of_that_template_approved_lets_it_run(store, keys_dir, tmp_path):
    small = game_template_dir("chien-chat") / "ticket-small.toml"
    proof, approvals = tmp_path / "proof", tmp_path / "approvals"
    run_cli("proof", "--out", str(proof), "--template", str(small), check=True)
    done = run_cli("proof", "approve", str(proof), "--keys", str(keys_dir), "--approvals",
                   str(approvals), check=True)  # fmt: skip
    assert "approved the proof pack" in done.stdout
    run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
            "--approvals", str(approvals), "--template", str(small), "--sheet", "A3", "-q",
            check=True)  # fmt: skip


def test_a_forged_or_foreign_approval_is_refused(approvals_dir, store, keys_dir, tmp_path):
    forged = tmp_path / "forged"
    shutil.copytree(approvals_dir, forged)
    (path,) = forged.glob("*.approval.json")
    body = json.loads(path.read_text())
    body["statement"]["inputs"]["template_sha256"] = "0" * 64
    path.write_text(json.dumps(body))
    result = run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
                     "--approvals", str(forged))  # fmt: skip
    assert result.returncode == 1 and "is not signed by the lottery's key" in result.stderr
    other = tmp_path / "other-keys"
    init_keys(other)
    result = run_cli("proof", "approve", str(approvals_dir.parent / "proof"), "--keys", str(other),
                     "--approvals", str(tmp_path / "theirs"))  # fmt: skip
    assert result.returncode == 0
    result = run_cli("export", str(store), "--out", str(tmp_path / "p"), "--keys", str(keys_dir),
                     "--approvals", str(tmp_path / "theirs"))  # fmt: skip
    assert result.returncode == 1 and "not signed by the lottery's key" in result.stderr
    assert "no approved proof of chien-chat" in result.stderr


def test_two_signers_approvals_of_the_same_inputs_live_side_by_side(
    approvals_dir, store, keys_dir, tmp_path
):
    """A demo key's approval never replaces the lottery's (nor the other way round): each
    export finds the one its own lottery key signed."""
    both = tmp_path / "approvals"
    shutil.copytree(approvals_dir, both)
    (lottery,) = both.glob("*.approval.json")
    lottery_bytes = lottery.read_bytes()
    fresh = tmp_path / "fresh-keys"
    init_keys(fresh)
    other = tmp_path / "other-keys"  # the same print shop, another lottery signing key
    shutil.copytree(keys_dir, other)
    for name in ("lottery-signing.key", "lottery-signing.pub"):
        shutil.copy2(fresh / name, other / name)
    run_cli("proof", "approve", str(approvals_dir.parent / "proof"), "--keys", str(other),
            "--approvals", str(both), check=True)  # fmt: skip
    files = sorted(both.glob("*.approval.json"))
    assert len(files) == 2 and lottery.read_bytes() == lottery_bytes
    assert len({json.loads(f.read_text())["statement"]["lottery_key_sha256"] for f in files}) == 2
    assert len({f.name.rsplit("-", 1)[0] for f in files}) == 1  # the same inputs' digest
    (theirs,) = (f for f in files if f != lottery)
    for keys, expected in ((keys_dir, lottery), (other, theirs)):
        out = tmp_path / f"print-{keys.name}"
        run_cli("export", str(store), "--out", str(out), "--keys", str(keys), "--approvals",
                str(both), "-q", check=True)  # fmt: skip
        assert json.loads((out / "job.json").read_text())["approval"]["file"] == expected.name


def test_approving_a_changed_or_missing_pack_is_refused(approvals_dir, keys_dir, tmp_path):
    proof = tmp_path / "proof"
    shutil.copytree(approvals_dir.parent / "proof", proof)
    pdf = next(proof.glob("*.pdf"))
    pdf.write_bytes(pdf.read_bytes() + b"\n")
    result = run_cli("proof", "approve", str(proof), "--keys", str(keys_dir), "--approvals",
                     str(tmp_path / "a"))  # fmt: skip
    assert result.returncode == 1 and "changed since the proof was made" in result.stderr
    result = run_cli("proof", "approve", str(tmp_path), "--keys", str(keys_dir))
    assert result.returncode == 1 and "is not a proof pack" in result.stderr
    assert not (tmp_path / "a").exists()
