"""A ``printpipe`` on the PATH whose every run is a process forked from one that has imported
printpipe already: the tutorial test's shell runs some 70 commands, and a new interpreter
importing printpipe, numpy, reportlab, cryptography and the rest for each of them cost more of
the suite's CPU than the commands' own work.

``python -m tests.cli_forkserver SOCKET`` imports every module of printpipe, then, for each
connection of the client (:data:`CLIENT`, installed as ``printpipe`` by :func:`install`), forks
a process that takes the client's standard streams (the file descriptors themselves, passed
over the socket), working folder, environment and arguments, runs ``printpipe.cli.main`` as
the console script does, and sends its exit status back; the client exits with it.  Each
command is still a process of its own, with real files on its streams, a status, and nothing
left of the command before it; what it does not run is the console script's own lines and a
fresh import, which ``test_usage_errors_are_one_line`` (the installed entry point) and CI's
run of the installed wheel prove.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pkgutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

CLIENT = """\
#!{python} -IS
# printpipe, run by the test suite's fork server (tests/cli_forkserver.py)
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect({socket!r})
request = json.dumps({{"args": sys.argv[1:], "cwd": os.getcwd(), "env": dict(os.environ)}})
socket.send_fds(s, [request.encode()], [0, 1, 2])
s.shutdown(socket.SHUT_WR)
status = s.makefile("rb").read()
sys.exit(int(status) if status else 70)
"""


def install(folder: Path) -> subprocess.Popen:
    """Start the server (it has imported printpipe when this returns) and write the client
    as ``folder/printpipe``; stop it with :func:`stop`."""
    sock = folder / "printpipe.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.cli_forkserver", str(sock)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert server.stdout is not None
    if server.stdout.readline() != b"ready\n":
        server.wait()
        raise AssertionError(f"the fork server did not start (exit {server.returncode})")
    client = folder / "printpipe"
    client.write_text(CLIENT.format(python=sys.executable, socket=str(sock)))
    client.chmod(0o755)
    return server


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=60)


def _serve(path: str) -> None:
    import printpipe

    for module in pkgutil.walk_packages(printpipe.__path__, "printpipe."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    signal.signal(signal.SIGTERM, _stop)
    print("ready", flush=True)
    try:
        _accept(listener)
    except SystemExit:  # stopped: every handler reaped (their commands' CPU is counted)
        with contextlib.suppress(ChildProcessError):
            while True:
                os.wait()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _accept(listener: socket.socket) -> None:
    while True:
        connection, _ = listener.accept()
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0]:  # the handlers that have answered
                pass
        if os.fork() == 0:  # the handler: runs the command in a child, answers its status
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            listener.close()
            status = 70
            try:
                status = _handle(connection)
            finally:
                with contextlib.suppress(OSError):
                    connection.sendall(str(status).encode())
                os._exit(0)
        connection.close()


def _handle(connection: socket.socket) -> int:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    while chunk := connection.recv(1 << 20):
        data += chunk
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:  # the command's process
        status = 1
        try:
            connection.close()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = ["printpipe", *request["args"]]
            from printpipe.cli import main

            try:
                main()
                status = 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(status)
    for fd in fds:
        os.close(fd)
    _, wait_status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    return 128 - code if code < 0 else code  # killed by a signal: as a shell says it


if __name__ == "__main__":
    _serve(sys.argv[1])
