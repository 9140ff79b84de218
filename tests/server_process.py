"""A printpipe server started as its user starts it, for the tests that need a real process: its
own process group (a kill reaches every worker it forked), its output appended to a log file,
and ready once it has written the URL file it was given (``--url-file``).  One home for the
validation service's, the game server's and the reference wallet's helpers."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tests.conftest import kill_group

READY_S = 60
"""How long a server may take to write its URL file before the test fails with its log."""


def start_server_process(
    args: Sequence[str],
    *,
    log: Path,
    url_file: Path,
    open_files: int | None = None,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen, str]:
    """``python -m printpipe ARGS --url-file URL_FILE``, once it is listening: the process and
    its URL.  ``open_files`` is its RLIMIT_NOFILE; ``env`` replaces its environment."""
    url_file.unlink(missing_ok=True)

    def limit_files() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    with open(log, "ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "printpipe", *args, "--url-file", str(url_file)],
            stdout=output,
            stderr=output,
            preexec_fn=limit_files if open_files is not None else None,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + READY_S
    while not url_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server_process(process, kill=True)
            raise AssertionError(log.read_text())
        time.sleep(0.05)
    return process, url_file.read_text().strip()


def stop_server_process(process: subprocess.Popen, *, kill: bool = False) -> None:
    """SIGTERM (a clean stop), or with ``kill`` SIGKILL to the whole group, no goodbye; returns
    once the server is gone."""
    if process.poll() is None:
        if kill:
            kill_group(process)
        else:
            process.terminate()
    process.wait(timeout=60)
