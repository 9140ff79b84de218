"""A throwaway PostgreSQL server for the tests and the benchmarks: a temporary data folder, a
free port on 127.0.0.1, and nothing left behind.

``.ci/run`` starts one for the whole test run and passes its URL in ``PRINTPIPE_TEST_POSTGRES``;
without that variable the test session starts its own the same way (``conftest.py``), so a plain
``pytest`` works.  initdb and postgres refuse to run as root: as root they run as the ``postgres``
user (``runuser``), the data folder given to it.

Command line (for ``.ci/run``)::

    python -m tests.pgserver start DIR   # prints the server's URL once it accepts connections
    python -m tests.pgserver stop DIR
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "PRINTPIPE_TEST_POSTGRES"
USER = "postgres"


def bindir() -> Path:
    """The newest installed PostgreSQL server's binaries (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError(
        "no PostgreSQL server installed (Debian: apt-get install postgresql); .ci/run installs it"
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user(args: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return args
    return ["runuser", "-u", USER, "--", *args]


def start(folder: Path, *, durable: bool = False) -> str:
    """Initialise and start a server in ``folder`` (created); its URL.  ``durable=False`` (the
    tests) turns fsync off: the tests prove semantics, not power-cut survival."""
    folder.mkdir(parents=True, exist_ok=True)
    data, sockets = folder / "data", folder / "sockets"
    data.mkdir()
    sockets.mkdir()
    if os.geteuid() == 0:
        entry = pwd.getpwnam(USER)
        os.chmod(folder, 0o711)
        for path in (data, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    binaries = bindir()
    subprocess.run(
        _as_server_user(
            [str(binaries / "initdb"), "-D", str(data), "-U", USER, "--auth=trust",
             "-E", "UTF8", "--locale=C", "--no-sync"]
        ),
        check=True,
        capture_output=True,
    )  # fmt: skip
    port = _free_port()
    options = [
        "-c listen_addresses=127.0.0.1",
        f"-p {port}",
        f"-k {sockets}",
        "-c max_connections=300",
        "-c shared_buffers=128MB",
    ]
    if not durable:
        options += ["-c fsync=off", "-c full_page_writes=off"]
    log = folder / "server.log"
    if os.geteuid() == 0:
        log.touch()
        entry = pwd.getpwnam(USER)
        os.chown(log, entry.pw_uid, entry.pw_gid)
    subprocess.run(
        _as_server_user(
            [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
             "-o", " ".join(options), "start"]
        ),
        check=True,
        capture_output=True,
    )  # fmt: skip
    (folder / "url").write_text(url := f"postgresql://{USER}@127.0.0.1:{port}/postgres")
    return url


def stop(folder: Path) -> None:
    """Stop the server of ``folder`` (if it runs) and remove the folder."""
    data = folder / "data"
    if (data / "postmaster.pid").exists():
        subprocess.run(
            _as_server_user([str(bindir() / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]),
            capture_output=True,
        )
    shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Throwaway:
    url: str
    """A database of its own on the server."""
    pid: int
    """The postmaster's (the benchmarks count its CPU)."""


@contextlib.contextmanager
def throwaway(*, durable: bool = False) -> Iterator[Throwaway]:
    """A server in a temporary folder with a database of its own, stopped and removed on
    exit (the benchmarks' PostgreSQL)."""
    folder = Path(tempfile.mkdtemp(prefix="printpipe-pg-"))
    os.chmod(folder, 0o711)  # initdb and postgres run as the postgres user: they pass through
    try:
        url = start(folder / "server", durable=durable)
        postmaster = folder / "server" / "data" / "postmaster.pid"
        yield Throwaway(create_database(url), int(postmaster.read_text().split()[0]))
    finally:
        stop(folder / "server")
        shutil.rmtree(folder, ignore_errors=True)


def with_database(url: str, name: str) -> str:
    return url.rsplit("/", 1)[0] + "/" + name


def create_database(url: str, *, template: str | None = None) -> str:
    """A new, empty database on the server of ``url`` (or a copy of ``template``); its URL."""
    import psycopg

    name = f"ledger_{secrets.token_hex(6)}"
    with psycopg.connect(url, autocommit=True) as conn:
        if template is None:
            conn.execute(f'CREATE DATABASE "{name}"')
        else:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return with_database(url, name)


def drop_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    with (
        contextlib.suppress(psycopg.Error),
        psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn,
    ):
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python -m tests.pgserver start|stop DIR", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if argv[0] == "start":
        print(start(folder))
    else:
        stop(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
