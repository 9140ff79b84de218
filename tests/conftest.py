"""Shared fixtures: key folders, and one full block per test session (it takes seconds)."""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click
import pytest
from hypothesis import settings

from printpipe.block import PackRange
from printpipe.games import load_game
from printpipe.generation import generate_block
from printpipe.keys import (
    LOTTERY_RECIPIENT,
    BlockSecrets,
    init_keys,
    load_lottery_recipient,
    load_secrets,
    load_signing_key,
)
from tests.storm import process_stats

T = TypeVar("T")

# Press files carry their job's date (SOURCE_DATE_EPOCH, else the day the job began): the
# tests that compare the bytes of two runs made at different seconds need one fixed date.
os.environ.setdefault("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01T00:00:00Z


# No property test is timed: the machine is shared, and speed is the benchmarks' business
# (bench/). Hypothesis's default 200 ms deadline failed a barcode decode under load.
settings.register_profile("printpipe", deadline=None)
settings.load_profile("printpipe")


CMYK_PROFILE = Path("/usr/share/color/icc/ghostscript/default_cmyk.icc")
"""A CMYK output profile, Debian's Ghostscript's: the print shop's profile in the tests (a
conventional run's PDF/X-4 imaging files embed one)."""


SUBPROCESS_ONLY = {"serve", "--scheduler", "--detach"}
"""Arguments that need a process of their own: a server, a Dask client (its event loop and
threads), a daemon.  Set PRINTPIPE_TEST_SUBPROCESS=1 to run every command in one."""


def run_cli(
    *args: str,
    cwd: Path | None = None,
    check: bool = False,
    env: dict[str, str] | None = None,
    subprocess_: bool = False,
) -> subprocess.CompletedProcess:
    """Run `printpipe` as a user would, with ``printpipe.cli.main`` (``env``: extra environment
    variables): in this process, with click's CliRunner streams, when nothing needs a process
    of its own (a subprocess costs a second interpreter and every import again); in a
    subprocess of this interpreter with ``subprocess_`` (what only a process shows: the entry
    point, signals) or for :data:`SUBPROCESS_ONLY` arguments.  Either way: the exit status
    ``main`` gives, stdout and stderr apart, and an escaping exception's traceback in stderr."""
    if subprocess_ or SUBPROCESS_ONLY & set(args) or os.environ.get("PRINTPIPE_TEST_SUBPROCESS"):
        result = subprocess.run(
            [sys.executable, "-m", "printpipe", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, **env} if env else None,
        )
    else:
        result = _run_in_process(list(args), cwd, env)
    if check and result.returncode != 0:
        raise AssertionError(f"printpipe {' '.join(args)} failed:\n{result.stderr}")
    return result


def _run_in_process(
    args: list[str], cwd: Path | None, env: dict[str, str] | None
) -> subprocess.CompletedProcess:
    import traceback

    from click.testing import CliRunner

    from printpipe.cli import main

    before = os.getcwd()
    with CliRunner().isolation(env=env) as (stdout, stderr, _):
        if cwd is not None:
            os.chdir(cwd)
        try:
            main(args)
            status = 0
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except Exception:  # a bug, as a subprocess would show it
            sys.stderr.write(traceback.format_exc())
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.chdir(before)
        out, err = stdout.getvalue(), stderr.getvalue()
    return subprocess.CompletedProcess(
        ["printpipe", *args], status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )


def cli_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command of ``printpipe`` that runs (not a group): its path (``("ledger",
    "import")``) and the command."""
    from printpipe.cli import cli

    def walk(command: click.Command, path: tuple[str, ...]) -> Iterator[Any]:
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                sub = command.get_command(context, name)
                assert sub is not None
                yield from walk(sub, (*path, name))
        else:
            yield path, command

    return list(walk(cli, ()))


def forked_together(*calls: Callable[[], T], timeout: float = 300) -> list[T]:
    """Run each call in a process of its own, forked from this one, all released at the same
    instant; their results (pickled back), in order.

    A process apart is what a race between commands needs (SQLite's locks are a process's, a
    PostgreSQL session is a connection's); a new interpreter is not: a forked child has every
    module this process loaded, where ``python -c`` would start Python and import printpipe,
    numpy and the rest again (0.3 to 1 s of CPU a process).  A child never returns into the
    test session: it ends with ``os._exit``.  An exception in a call is raised here."""
    go_read, go_write = os.pipe()
    children: list[tuple[int, int]] = []
    try:
        for call in calls:
            read, write = os.pipe()
            with warnings.catch_warnings():  # Python 3.12 warns of fork beside threads: the
                warnings.simplefilter("ignore", DeprecationWarning)  # child only runs `call`
                pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's coverage is not collected
                status = 0
                try:
                    os.close(read)
                    os.read(go_read, 1)  # wait for the others
                    try:
                        answer: tuple[bool, Any] = (True, call())
                    except BaseException as exc:  # handed to the parent
                        answer = (False, exc)
                    with os.fdopen(write, "wb") as out:
                        pickle.dump(answer, out)
                except BaseException:
                    status = 1
                finally:
                    os._exit(status)
            os.close(write)
            children.append((pid, read))
        os.write(go_write, b"g" * len(calls))  # release them all
        results = []
        deadline = time.monotonic() + timeout
        for _, read in children:
            data = bytearray()
            while True:
                ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    raise AssertionError(f"a forked call did not end within {timeout:.0f} s")
                chunk = os.read(read, 1 << 16)
                if not chunk:
                    break
                data += chunk
            assert data, "a forked call ended without an answer"
            ok, value = pickle.loads(bytes(data))
            if not ok:
                raise value
            results.append(value)
        return results
    finally:
        for pid, read in children:
            with contextlib.suppress(OSError):
                os.close(read)
            if _running(pid):  # a call that overran its time, or a failure here
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        os.close(go_read)
        os.close(go_write)


def _running(pid: int) -> bool:
    """Whether the forked child ``pid`` has not exited yet (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


def as_from_a_shell() -> None:
    """``preexec_fn`` of a process a test will Ctrl-C: SIGINT at its default and unblocked, as
    a user's shell starts a command.  A signal disposition or mask the test session's worker
    picked up on the way (both are inherited across exec) must not make the child deaf to it:
    that made the two Ctrl-C tests exit 0 after finishing their whole run."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` and every process of its group (started with ``start_new_session``),
    and return once none of them is left alive.  Waiting for the leader is not enough: a worker
    it forked can still be exiting, holding the folder's lock or the ledger's file, when the
    test's next command starts (CI saw an export's rerun refused so)."""
    with contextlib.suppress(ProcessLookupError):  # already killed, and all of it reaped
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    while _group_members(process.pid):
        time.sleep(0.01)


def _group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    return [pid for pid, fields in process_stats() if fields[0] != "Z" and int(fields[2]) == pgid]


def wait_for_files(
    process: subprocess.Popen, folder: Path, pattern: str, count: int = 1
) -> list[Path]:
    """Wait until ``count`` files matching ``pattern`` are in ``folder`` (the process's own
    output); the process ending first fails the test.  No deadline: a process that hangs is the
    test run's timeout's business."""
    while True:
        found = sorted(folder.glob(pattern)) if folder.is_dir() else []
        if len(found) >= count:
            return found
        assert process.poll() is None, f"exit {process.returncode} before {folder / pattern}"
        time.sleep(0.01)


def assert_preflight_passes(folder: Path, cwd: Path | None = None) -> None:
    """``printpipe preflight FOLDER`` passes: no rule broken, exit 0."""
    result = run_cli("preflight", str(folder), cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr


def generate_store(
    game,
    keys: Path,
    out: Path,
    packs: PackRange | None = None,
    secrets: BlockSecrets | None = None,
    block: int = 1,
    manifest: bool = False,
) -> Path:
    """A block store as ``printpipe generate`` writes it (with its manifest if asked)."""
    generate_block(
        game,
        secrets=secrets or load_secrets(keys),
        signing_key=load_signing_key(keys),
        block=block,
        out=out,
        packs=packs,
        show_progress=False,
        manifest_recipient=load_lottery_recipient(keys / LOTTERY_RECIPIENT) if manifest else None,
    )
    return out


def assert_same_secrets_give_identical_bytes(
    game, keys: Path, full: Path, work: Path, files: tuple[str, ...]
) -> None:
    """Same secrets, same bytes: the whole block ``full`` (generated from ``keys``) against a
    second generation of part of it, not of all of it (that took as long as the block: 25 s a
    game).  Part of the block proves as much because the generator is chunked
    deterministically: the block's plan is a function of its key alone, each pack is drawn
    from a key stream of its own (``KeyStream(block_key, Purpose.PACK, pack)``) and each VIRN
    and salt from its place, so a pack's rows do not depend on which packs are generated with
    it, nor in which chunk.  The packs regenerated straddle a chunk boundary of the whole
    generation (packs 1000 and 1001) and end at the block's last pack, on chunks that start
    elsewhere; each regenerated row must equal the block's, every column file byte for byte.
    What is derived from the rows (the signed summary, the commitment) is compared byte for
    byte between two generations of the same part."""
    import numpy as np

    from printpipe.generation.generate import GENERATE_CHUNK_PACKS

    rules = game.definition.block
    parts = [
        PackRange(GENERATE_CHUNK_PACKS - 1, GENERATE_CHUNK_PACKS + 2),
        PackRange(rules.packs - 2, rules.packs),
    ]
    for n, packs in enumerate(parts):
        again = generate_store(game, keys, work / f"again-{n}", packs)
        rows = slice((packs.first - 1) * rules.pack_size, packs.last * rules.pack_size)
        for name in files:
            if not name.endswith(".npy"):
                continue
            whole, part = np.load(full / name, mmap_mode="r"), np.load(again / name)
            assert part.dtype == whole.dtype and part.shape[1:] == whole.shape[1:], name
            assert len(part) == packs.count * rules.pack_size, name
            assert np.array_equal(part, whole[rows]), (name, packs)
        twice = generate_store(game, keys, work / f"twice-{n}", packs)
        for name in files:
            assert (twice / name).read_bytes() == (again / name).read_bytes(), name


@pytest.fixture(scope="session")
def game():
    return load_game("chien-chat")


@pytest.fixture(scope="session")
def keys_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("keys") / "keys"
    init_keys(directory)
    return directory


@pytest.fixture(scope="session")
def full_block(tmp_path_factory, game, keys_dir) -> Path:
    """A whole 1,500,000-ticket block, generated once per test session."""
    return generate_store(game, keys_dir, tmp_path_factory.mktemp("blocks") / "block-0001")


@pytest.fixture(scope="session")
def default_proof(tmp_path_factory) -> Path:
    """``printpipe proof --game chien-chat --out PROOF``: the proof pack of chien-chat's default
    inputs (26 pages and their previews, 6 s), made once per test session; read only (a test
    that changes one works on a copy)."""
    out = tmp_path_factory.mktemp("approved") / "proof"
    run_cli("proof", "--game", "chien-chat", "--out", str(out), check=True)
    return out


@pytest.fixture(scope="session")
def approvals_dir(default_proof, keys_dir) -> Path:
    """The lottery's approval (signed with ``keys_dir``'s lottery key) of a proof of
    chien-chat's default inputs (:func:`default_proof`, beside it: ``approvals_dir.parent /
    "proof"``): what a press export of the default template needs."""
    from printpipe.handover import approve_proof
    from printpipe.keys import LOTTERY_SIGNING_KEY

    work = default_proof.parent
    key = load_signing_key(keys_dir, LOTTERY_SIGNING_KEY)
    approve_proof(work / "proof", signing_key=key, approvals_dir=work / "approvals")
    return work / "approvals"


MAIN_JOB = pytest.mark.xdist_group("main-job")
"""The tests that read the main job's outputs (:func:`main_job`), on one test worker: the main
job runs once a session (a whole block, its audit, proof pack and export), not once a worker."""


class AuditOfUnchangedBytes:
    """``audit_store`` that audits a block once and, asked again about the same block folder
    with the same keys, answers the same report if no file of them changed (name, size,
    modification time): the main job's rerun audits the block the first run generated, and an
    audit is a function of those bytes alone; auditing 1,500,000 tickets again (8 s) would
    show what the first audit showed."""

    def __init__(self) -> None:
        from printpipe.generation.audit import audit_store

        self.audit_store = audit_store
        self.reports: dict[object, object] = {}
        self.real = self.remembered = 0

    def __call__(self, block_dir: Path, **options):
        files = [block_dir, *block_dir.rglob("*")]
        files += [
            options[k] for k in ("producer_key", "lottery_key", "commitment") if options.get(k)
        ]
        state = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(files))
        key = (state, tuple(sorted((k, str(v)) for k, v in options.items())))
        if key in self.reports:
            self.remembered += 1
            return self.reports[key]
        self.real += 1
        report = self.reports[key] = self.audit_store(block_dir, **options)
        return report


@dataclass(frozen=True)
class MainJob:
    """What ``printpipe run --quiet`` left in ``folder`` and said (``result``); ``audits``
    remembers its audit, for a rerun to reuse."""

    folder: Path
    result: subprocess.CompletedProcess
    audits: AuditOfUnchangedBytes


@pytest.fixture(scope="session")
def main_job(tmp_path_factory) -> MainJob:
    """The main job on defaults, ``printpipe run --quiet`` in a fresh folder, in process, once a
    session (a whole block generated and audited, the proof pack made and approved, 200 packs
    exported: the costliest command there is).  It runs under umask 0, the most permissive a
    user can have, so that what it leaves shows that its files are private whatever the umask.
    The tests read it; the one that reruns it (tests/test_cli.py) leaves the same files."""
    folder = tmp_path_factory.mktemp("main-job")
    audits = AuditOfUnchangedBytes()
    before = os.umask(0)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("printpipe.generation.audit_store", audits)
            result = run_cli("run", "--quiet", cwd=folder)
    finally:
        os.umask(before)
    return MainJob(folder, result, audits)


# -- the ledger on both databases ---------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server for the session: ``.ci/run``'s (``PRINTPIPE_TEST_POSTGRES``), else a
    throwaway one started here the same way (``tests/pgserver.py``) and stopped at the end."""
    import tempfile

    from tests import pgserver

    given = os.environ.get(pgserver.ENV_VAR)
    if given:
        yield given
        return
    folder = Path(tempfile.mkdtemp(prefix="printpipe-pg-"))
    os.chmod(folder, 0o711)  # the server's user passes through it to its data folder
    try:
        yield pgserver.start(folder / "server")
    finally:
        pgserver.stop(folder / "server")
        folder.rmdir()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def backend(request) -> str:
    """Which database a ledger test runs on: every ledger and service test runs on both."""
    return request.param


@pytest.fixture(scope="module")
def ledgers(request, backend, tmp_path_factory):
    """Makes ledger locations on this module's backend: ``ledgers.new()``, ``ledgers.copy(x)``."""
    from tests.ledger_helpers import LedgerFactory

    url = request.getfixturevalue("postgres_url") if backend == "postgresql" else None
    factory = LedgerFactory(backend, tmp_path_factory.mktemp("ledgers"), url)
    yield factory
    factory.cleanup()
