"""The reference wallet run as an operator runs it: ``printpipe wallet serve`` in a subprocess,
on a port of its own (kept across a kill -9 and a restart), with the game server's key."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from printpipe.ledger import Location, location_argument
from printpipe.service.signatures import generate_terminal_key, load_terminal_key
from tests.server_process import start_server_process, stop_server_process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class WalletProcess:
    """``printpipe wallet serve --db location --trust folder/game.key.pub`` and its faults."""

    location: Location
    folder: Path
    faults: list[str] = field(default_factory=list)
    fault_delay: float = 2.0
    """How long a ``delay`` fault holds an answer (``--fault-delay``)."""
    port: int = 0
    process: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.key_file.exists():
            generate_terminal_key(self.key_file)
        self.port = self.port or free_port()

    @property
    def key_file(self) -> Path:
        return self.folder / "game.key"

    @property
    def key(self) -> Ed25519PrivateKey:
        return load_terminal_key(self.key_file)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.folder / "wallet.log"

    def start(self) -> str:
        args = ["wallet", "serve", "--db", location_argument(self.location),
                "--trust", f"{self.key_file}.pub", "--port", str(self.port)]  # fmt: skip
        for fault in self.faults:
            args += ["--fault", fault]
        if self.faults:
            args += ["--fault-delay", str(self.fault_delay), "--fault-seed", "7"]
        self.process, _ = start_server_process(
            args, log=self.log, url_file=self.folder / "wallet.url"
        )
        return self.url

    def kill(self) -> None:
        """SIGKILL, no goodbye."""
        if self.process is not None:
            stop_server_process(self.process, kill=True)

    def stop(self) -> None:
        if self.process is not None:
            stop_server_process(self.process)
        self.process = None
