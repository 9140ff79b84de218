"""Exports and generation on a Dask cluster (a LocalCluster on loopback, 2 worker processes):
the same bytes as the local pool, a worker killed mid-run, a coordinator killed mid-run, what
travels to a worker, and one-line errors.  All on one cluster, kept on one xdist worker."""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from printpipe.block import PackRange
from printpipe.games import load_game
from printpipe.generation import generate_blocks
from printpipe.generation.cluster import output_versions, version_mismatch
from printpipe.generation.generate import GENERATE_CHUNK_PACKS
from printpipe.keys import (
    LOTTERY_RECIPIENT,
    load_lottery_recipient,
    load_secrets,
    load_signing_key,
)
from tests.conftest import kill_group, run_cli

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.xdist_group("dask")

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = (1, 2)
PACKS = "1:12"
CHUNK = ["--chunk-packs", "3"]  # 4 chunks of 375 tickets per block: a fraction of a second each


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two single-threaded worker processes; workers restarted by their nanny when killed.
    Their scratch space in the test's temporary folder (Dask's default, /tmp/dask-scratch-space,
    would stay behind the test run)."""
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            local_directory=str(tmp_path_factory.mktemp("dask-scratch")),
        ) as local,
        distributed.Client(local, set_as_default=False) as client,
    ):
        yield local, client


@pytest.fixture(scope="module")
def stores(tmp_path_factory, game, keys_dir) -> dict[int, Path]:
    """Packs 1 to 12 of blocks 1 and 2 (one generate call, in process)."""
    parent = tmp_path_factory.mktemp("dask-blocks")
    outs = {block: parent / f"block-{block}" for block in BLOCKS}
    generate_blocks(
        game,
        secrets=load_secrets(keys_dir),
        signing_key=load_signing_key(keys_dir),
        outs=outs,
        packs=PackRange.parse(PACKS, 12000),
        show_progress=False,
        manifest_recipient=load_lottery_recipient(keys_dir / LOTTERY_RECIPIENT),
    )
    return outs


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory, stores, keys_dir) -> dict[int, Path]:
    """The reference: each block exported by the local process pool."""
    parent = tmp_path_factory.mktemp("dask-local")
    runs = {}
    for block, store in stores.items():
        runs[block] = parent / f"print-{block}"
        run_cli(*_export_args(store, runs[block], keys_dir), "--workers", "2", check=True)
    return runs


def _export_args(store: Path, out: Path, keys_dir: Path) -> list[str]:
    return [
        "export", str(store), "--out", str(out), "--keys", str(keys_dir), *CHUNK, "--unapproved",
        "-q",
    ]  # fmt: skip


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records_sha256(manifest: Path) -> bytes:
    """The signed SHA-256 of the manifest's plaintext (its age body is randomized)."""
    with open(manifest, "rb") as handle:
        return next(line for line in handle if line.startswith(b"records-sha256 "))


def _assert_same_run(reference: Path, run: Path) -> None:
    pdfs = sorted(p.name for p in reference.glob("*.pdf"))
    assert pdfs and pdfs == sorted(p.name for p in run.glob("*.pdf"))
    for name in pdfs:
        assert _sha(reference / name) == _sha(run / name), name
    assert (reference / "job.json").read_bytes() == (run / "job.json").read_bytes()
    assert _records_sha256(reference / "manifest.ppm") == _records_sha256(run / "manifest.ppm")
    assert not list(run.glob(".*.partial-*"))


def test_workers_import_this_printpipe(cluster):
    _, client = cluster
    files = client.run(lambda: __import__("printpipe").__file__)
    assert all(Path(f).resolve().is_relative_to(ROOT) for f in files.values()), files


def test_workers_report_the_versions_that_decide_the_bytes(cluster):
    _, client = cluster
    ours = output_versions()
    assert set(ours) == {
        "printpipe", "numpy", "cryptography", "reportlab", "python-barcode", "svglib",
    }  # fmt: skip
    for theirs in client.run(output_versions).values():
        assert version_mismatch(ours, theirs) is None


def test_another_version_of_any_output_library_is_named():
    ours = {"printpipe": "0.1.0", "reportlab": "5.1.0", "numpy": "2.4.6"}
    assert version_mismatch(ours, {**ours, "reportlab": "5.2.0"}) == (
        "reportlab 5.2.0, this is 5.1.0"
    )
    assert version_mismatch(ours, {"printpipe": "0.1.0", "reportlab": "5.1.0"}) == (
        "numpy not installed, this is 2.4.6"
    )


def test_worker_killed_mid_run_gives_the_local_run(cluster, stores, local_runs, keys_dir, tmp_path):
    """Both blocks exported at once through the cluster; one worker is SIGKILLed while it
    holds a chunk; the scheduler reruns that chunk elsewhere; every byte equals the local run."""
    local, client = cluster
    address = local.scheduler_address
    outs = {block: tmp_path / f"print-{block}" for block in BLOCKS}
    runs = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "printpipe"),
                *_export_args(store, outs[block], keys_dir),
                *("--scheduler", address),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for block, store in stores.items()
    ]
    pids = client.run(os.getpid)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:
        if any(out.glob("*.pdf") for out in outs.values()):  # the run is under way
            busy = [w for w, keys in client.processing().items() if keys and w in pids]
            victim = busy[0] if busy else None
        time.sleep(0.005)
    assert victim is not None, "no worker was busy after the first chunk: nothing killed"
    os.kill(pids[victim], signal.SIGKILL)
    for process in runs:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    for block in BLOCKS:
        _assert_same_run(local_runs[block], outs[block])
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker


def test_collect_mode_gives_the_local_run(cluster, stores, local_runs, keys_dir, tmp_path):
    local, _ = cluster
    out = tmp_path / "collected"
    args = _export_args(stores[1], out, keys_dir)
    run_cli(*args, "--scheduler", local.scheduler_address, "--collect", check=True)
    _assert_same_run(local_runs[1], out)


def test_coordinator_killed_then_rerun_redoes_only_the_missing_chunks(
    cluster, stores, local_runs, keys_dir, tmp_path
):
    local, _ = cluster
    out = tmp_path / "crashed"
    args = [*_export_args(stores[2], out, keys_dir), "--scheduler", local.scheduler_address]
    args[args.index("3")] = "1"  # 12 one-pack chunks: the kill lands midway
    process = subprocess.Popen(
        [sys.executable, "-m", "printpipe", *args],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(out.glob("*.pdf"))) < 2:
        time.sleep(0.005)
    kill_group(process)
    time.sleep(0.5)  # tasks already on the workers may still land: they are complete files
    survivors = {p.name: p.stat().st_mtime_ns for p in out.glob("*.pdf")}
    assert 2 <= len(survivors) < 12, "the kill must land midway"
    assert not (out / "job.json").exists()
    run_cli(*args, check=True)
    for name, mtime in survivors.items():
        assert (out / name).stat().st_mtime_ns == mtime, f"{name} was rendered again"
    reference = tmp_path / "reference"
    run_cli(*[a if a != str(out) else str(reference) for a in args], check=True)
    _assert_same_run(reference, out)


def test_generate_several_blocks_on_the_cluster(cluster, stores, keys_dir, tmp_path):
    local, _ = cluster
    args = ["generate", "--blocks", "1:2", "--packs", PACKS, "--keys", str(keys_dir), "-q"]
    run_cli(*args, "--out", str(tmp_path), "--scheduler", local.scheduler_address, check=True)
    for block, store in stores.items():
        produced = tmp_path / f"chien-chat-block-{block:04d}"
        for name in ("summary.json", "summary.sig", "tier.npy", "symbols.npy", "virn.npy"):
            assert (produced / name).read_bytes() == (store / name).read_bytes(), name
        assert _records_sha256(produced / "manifest.ppm") == _records_sha256(store / "manifest.ppm")


def test_a_generate_work_unit_carries_the_block_key_only(keys_dir):
    """What travels to a worker: the block's derived key, in an object whose repr hides it;
    never the secrets, never the signing key."""
    from printpipe.generation.generate import _jobs

    secrets = load_secrets(keys_dir)
    game = load_game("chien-chat")
    job = next(_jobs(game, secrets, [3], PackRange(1, GENERATE_CHUNK_PACKS), 10))
    wire = pickle.dumps(job)
    assert secrets.producer not in wire and secrets.lottery not in wire
    assert job.key.key in wire
    assert b"PRIVATE KEY" not in wire
    for text in (repr(job), str(job), repr(job.key)):
        assert job.key.key.hex() not in text and repr(job.key.key) not in text
        assert "hidden" in repr(job.key)


def test_unreachable_scheduler_is_one_line(stores, keys_dir, tmp_path):
    """Within the wait the environment sets (here 1 s instead of 10); a wait that is not a
    number of seconds is one line too."""
    args = (
        *_export_args(stores[1], tmp_path / "out", keys_dir),
        "--scheduler",
        "tcp://127.0.0.1:9",
    )
    result = run_cli(*args, env={"PRINTPIPE_DASK_CONNECT_S": "1"})
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.stderr
    wrong = run_cli(*args, env={"PRINTPIPE_DASK_CONNECT_S": "soon"})
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1, wrong.stderr
    assert "PRINTPIPE_DASK_CONNECT_S='soon' is not a number of seconds" in wrong.stderr


def test_without_dask_installed_says_how_to_install(stores, keys_dir, tmp_path):
    hide = tmp_path / "no-dask"
    hide.mkdir()
    (hide / "distributed.py").write_text("raise ImportError('No module named distributed')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), str(ROOT)])}
    result = subprocess.run(
        [
            *(sys.executable, "-m", "printpipe"),
            *_export_args(stores[1], tmp_path / "out", keys_dir),
            *("--scheduler", "tcp://127.0.0.1:8786"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "pip install printpipe[dask]" in result.stderr
