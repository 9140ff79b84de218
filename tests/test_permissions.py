"""Every file that reveals an outcome is 0600, in folders that are not world-readable, whatever
the umask (issue 11, defect 7): block store columns, the auditor's CSV, press PDFs, proofs of
real sheets, the unit feed, and the validation database with its -wal and -shm files."""

from __future__ import annotations

import os
import stat
from collections.abc import Set
from pathlib import Path

import pytest

from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import TerminalId
from printpipe.ledger.key import load_ledger_key
from tests.conftest import MAIN_JOB, run_cli
from tests.ledger_helpers import OFFICE_SCOPE


@pytest.fixture
def open_umask():
    """The most permissive umask a user can have: nothing is masked."""
    before = os.umask(0)
    yield
    os.umask(before)


def modes(root: Path) -> dict[str, int]:
    """Mode of ``root`` and of everything under it, by path relative to ``root``."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for entry in root.rglob("*"):
        found[str(entry.relative_to(root))] = stat.S_IMODE(entry.lstat().st_mode)
    return found


def assert_private(root: Path, *, expect: Set[str] = frozenset()) -> None:
    found = modes(root)
    assert set(expect) <= set(found), (expect, sorted(found))
    for name, mode in found.items():
        want = 0o700 if (root / name).is_dir() else 0o600
        assert mode == want, f"{root / name}: {mode:04o}, not {want:04o}"


def test_outputs_that_reveal_outcomes_are_private_whatever_the_umask(
    open_umask, keys_dir, approvals_dir, tmp_path
):
    block = tmp_path / "out" / "blk"
    run_cli(
        "generate", "--keys", str(keys_dir), "--packs", "1:2", "--out", str(block), "-q", check=True
    )
    assert_private(
        block,
        expect={"tier.npy", "virn.npy", "symbols.npy", "salt.npy", "manifest.ppm"}
        | {"commitment.json"},
    )
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o700  # made for it: private too

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)  # a folder the user made: kept as it is, the file is private
    csv = shared / "audit.csv"
    run_cli(
        "manifest",
        "export",
        str(block / "manifest.ppm"),
        "--keys",
        str(keys_dir),
        "--csv",
        str(csv),
        check=True,
    )
    assert stat.S_IMODE(csv.stat().st_mode) == 0o600
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755

    press = tmp_path / "print" / "run1"
    run_cli(
        "export",
        str(block),
        "--out",
        str(press),
        "--packs",
        "1:1",
        "--keys",
        str(keys_dir),
        "--approvals",
        str(approvals_dir),
        "-q",
        check=True,
    )
    assert_private(press, expect={"chien-chat-b0001-p000001-000001.pdf", "job.json"})
    assert stat.S_IMODE((tmp_path / "print").stat().st_mode) == 0o700

    proof = tmp_path / "proof"
    run_cli(
        "proof",
        "--out",
        str(proof),
        "--from-block",
        str(block),
        "--keys",
        str(keys_dir),
        check=True,
    )
    assert_private(proof, expect={"press-proof-b0001-packs-1-2.pdf"})


@pytest.mark.fullblock
@MAIN_JOB
def test_the_main_jobs_folders_are_private_whatever_the_umask(
    main_job, open_umask, approvals_dir, keys_dir, tmp_path
):
    """``printpipe-out/``, ``printpipe-approvals/`` and ``printpipe-demo-keys/``, and every folder
    and file in them, are 0700 and 0600 after ``printpipe run`` under umask 0 (``main_job``);
    so is any folder printpipe makes on the way to its output."""
    approvals = tmp_path / "printpipe-approvals" / "lottery"
    run_cli("proof", "approve", str(approvals_dir.parent / "proof"), "--keys", str(keys_dir),
            "--approvals", str(approvals), check=True)  # fmt: skip
    assert_private(tmp_path / "printpipe-approvals", expect={"lottery"})

    assert main_job.result.returncode == 0, main_job.result.stderr
    folders = sorted(p.name for p in main_job.folder.iterdir())
    assert folders == ["printpipe-approvals", "printpipe-demo-keys", "printpipe-out"]
    out = "printpipe-out/chien-chat-block-0001"
    expect = {f"{out}/{name}" for name in ("tier.npy", "symbols.npy", "salt.npy", "manifest.ppm")}
    expect |= {
        f"{out}-print/job.json",
        f"{out}-print/manifest.ppm",
        "printpipe-out/chien-chat-proof",
    }
    assert_private(main_job.folder, expect=expect | set(folders))


def test_an_online_games_feed_is_private_whatever_the_umask(open_umask, keys_dir, tmp_path):
    block = tmp_path / "ga"
    run_cli(
        "generate",
        "--game",
        "golden-animals",
        "--keys",
        str(keys_dir),
        "--packs",
        "1:1",
        "--out",
        str(block),
        "-q",
        check=True,
    )
    assert_private(block)
    feed = tmp_path / "feed"
    run_cli("export", str(block), "--out", str(feed), "--keys", str(keys_dir), "-q", check=True)
    assert_private(feed, expect={"job.json", "manifest.ppm"})
    assert any(name.endswith(".feed") for name in modes(feed))


def test_the_ledger_and_its_wal_files_are_private_whatever_the_umask(
    open_umask, keys_dir, tmp_path
):
    block = tmp_path / "blk"
    run_cli("generate", "--keys", str(keys_dir), "--packs", "1:1", "--out", str(block), "-q",
            check=True)  # fmt: skip
    db = tmp_path / "ledger.sqlite"
    run_cli("ledger", "import", str(block / "manifest.ppm"), "--keys", str(keys_dir), "--db",
            str(db), check=True)  # fmt: skip
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    with Ledger(
        db, key=load_ledger_key(keys_dir)
    ) as book:  # a terminal at work: the WAL and its index exist
        book.validate("0" * 25, terminal=TerminalId("T1"), scope=OFFICE_SCOPE)
        for side in ("-wal", "-shm"):
            assert stat.S_IMODE(db.with_name(db.name + side).stat().st_mode) == 0o600, side
