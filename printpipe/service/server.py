"""``printpipe serve``: the validation service on uvicorn (uvloop and httptools).

Uvicorn is the reference ASGI server: one process per ``--workers``, graceful shutdown on
SIGTERM (requests in flight are answered), and no access log unless asked (one line per
request costs more than the answer).  The listening socket is bound here, before uvicorn
starts, so that ``--port 0`` picks a free port, ``--url-file`` names it as soon as connections
are accepted (they wait in the backlog), and every worker shares it.  ``--detach`` starts the
same command in the background and returns once it listens (like ``pg_ctl start -w``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from printpipe.atomic import atomic_file
from printpipe.errors import PrintpipeError
from printpipe.ledger import Location, location_argument, parse_location
from printpipe.service.app import RateLimit
from printpipe.service.protocol import ConnectionLimits

CONFIG_ENV = "PRINTPIPE_SERVE_CONFIG"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8250
"""Not 8787, the port of Dask's dashboard, which printpipe's cluster runs beside it."""
POOL_CONNECTIONS = 8
"""Connections (and ledger threads) per worker, where the database takes several
(PostgreSQL; an SQLite ledger is one connection, one thread: ``Database.threads``)."""
READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ServeConfig:
    """What each worker needs to open the ledger and bound its clients (passed to workers as
    JSON): ``limits`` as :class:`~printpipe.service.protocol.ConnectionLimits`, ``rate_limit``
    as :class:`~printpipe.service.app.RateLimit`."""

    db: str
    keys_dir: str
    workers: int = 1
    limits: dict[str, Any] = field(default_factory=dict)
    rate_limit: dict[str, Any] = field(default_factory=dict)
    witness: str | None = None

    @property
    def location(self) -> Location:
        return parse_location(self.db)


def create_app_from_environment() -> Any:
    """Uvicorn's factory: each worker opens its own ledger (and PostgreSQL pool)."""
    from printpipe.ledger import Ledger, load_ledger_key
    from printpipe.service.app import RateLimit, create_app
    from printpipe.service.protocol import BoundedHttpToolsProtocol, ConnectionLimits

    config = ServeConfig(**json.loads(os.environ[CONFIG_ENV]))
    BoundedHttpToolsProtocol.limits = ConnectionLimits(**config.limits)
    key = load_ledger_key(Path(config.keys_dir))
    ledger = Ledger(config.location, key=key, pool_size=POOL_CONNECTIONS, shared=config.workers > 1)
    return create_app(
        ledger,
        threads=ledger.db.threads,
        rate_limit=RateLimit(**config.rate_limit),
        witness=Path(config.witness) if config.witness else None,
    )


def check_ledger(location: Location, keys_dir: Path) -> str:
    """Open the ledger once, so that a wrong --db or --keys is one line before listening."""
    from printpipe.ledger import Ledger, load_ledger_key

    with Ledger(location, key=load_ledger_key(keys_dir)) as book:
        return book.db.dialect


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PrintpipeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    *,
    location: Location,
    keys_dir: Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workers: int = 1,
    url_file: Path | None = None,
    access_log: bool = False,
    limits: ConnectionLimits | None = None,
    rate_limit: RateLimit | None = None,
    witness: Path | None = None,
    log_format: str = "text",
) -> None:
    """Run the service until SIGINT or SIGTERM; its witness kept in ``witness`` (default
    ``KEYS/witness``: :mod:`printpipe.ledger.witness`)."""
    from printpipe.ledger import default_witness_folder

    limits = limits or ConnectionLimits()
    dialect = check_ledger(location, keys_dir)
    sock = bind(host, port)
    url = url_of(sock)
    config_text = ServeConfig(
        db=location_argument(location),
        keys_dir=str(keys_dir),
        workers=workers,
        limits=asdict(limits),
        rate_limit=asdict(rate_limit or RateLimit()),
        witness=str(witness or default_witness_folder(keys_dir)),
    )
    os.environ[CONFIG_ENV] = json.dumps(asdict(config_text))
    if url_file is not None:
        with atomic_file(url_file) as handle:
            handle.write(f"{url}\n".encode())
    print(
        f"printpipe: serving {url} (ledger {location}, {dialect}, {workers} worker"
        f"{'s' if workers > 1 else ''}); stop with Ctrl-C or SIGTERM",
        file=sys.stderr,
        flush=True,
    )
    run_uvicorn(
        "printpipe.service.server:create_app_from_environment",
        sock=sock,
        workers=workers,
        access_log=access_log,
        limits=limits,
        log_format=log_format,
    )


def run_uvicorn(
    factory: str,
    *,
    sock: socket.socket,
    workers: int,
    access_log: bool,
    limits: ConnectionLimits | None = None,
    log_format: str = "text",
) -> None:
    """Serve the ASGI application made by ``factory`` (``module:function``, called in each
    worker) on ``sock`` until SIGINT or SIGTERM: one process, or a supervisor of ``workers``
    (whose metrics are added up: ``metrics.prepare_workers``); connections bounded by
    ``limits`` (the defaults unless given); logs as ``log_format`` (``text`` or ``json``)."""
    import uvicorn

    from printpipe.service.logs import uvicorn_log_config
    from printpipe.service.metrics import forget_workers, prepare_workers
    from printpipe.service.protocol import BoundedHttpToolsProtocol

    limits = limits or ConnectionLimits()
    metrics_folder = prepare_workers(workers)

    config = uvicorn.Config(
        factory,
        factory=True,
        workers=workers,
        loop="uvloop",
        http=BoundedHttpToolsProtocol,
        timeout_keep_alive=int(max(1, limits.keep_alive_timeout_s)),
        lifespan="on",
        access_log=access_log,
        log_config=uvicorn_log_config(log_format),
        log_level=None,  # the levels are in log_config
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=10,
    )
    server = uvicorn.Server(config)
    try:
        if workers > 1:
            from uvicorn.supervisors import Multiprocess

            Multiprocess(config, sockets=[sock]).run()
        else:
            server.run(sockets=[sock])
    finally:
        forget_workers(metrics_folder)
    logging.shutdown()


def _exited_at_once(status: int, log_file: Path) -> PrintpipeError:
    """The error of a server that exited before it listened: its own last line (the error it
    gave, without its ``printpipe: error:`` prefix, which the caller's line adds again) and its
    exit status."""
    lines = log_file.read_text(errors="replace").strip().splitlines()
    last = lines[-1].removeprefix("printpipe: error: ") if lines else ""
    error = PrintpipeError(last or f"the server exited at once (exit {status}): see {log_file}")
    error.exit_code = status if status > 0 else 1
    return error


def detach(argv: list[str], *, url_file: Path, log_file: Path, pid_file: Path) -> str:
    """Start ``printpipe serve`` or ``play`` (``argv``, without --detach) in the background,
    logging to ``log_file``; return its URL once it listens (its pid in ``pid_file``)."""
    url_file.unlink(missing_ok=True)
    with open(log_file, "ab") as log:
        os.fchmod(log.fileno(), 0o600)
        child = subprocess.Popen(
            [sys.executable, "-m", "printpipe", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if url_file.exists():
            with atomic_file(pid_file) as handle:
                handle.write(f"{child.pid}\n".encode())
            return url_file.read_text().strip()
        if child.poll() is not None:
            raise _exited_at_once(child.returncode, log_file)
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGTERM)
    raise PrintpipeError(f"the server did not start within {READY_TIMEOUT_S:.0f} s: see {log_file}")
