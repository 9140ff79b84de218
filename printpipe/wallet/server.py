"""``printpipe wallet serve``: the reference wallet on uvicorn, started and stopped like
``printpipe serve`` (the same socket binding, ``--url-file``, ``--detach``, ``--workers``)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from printpipe.atomic import atomic_file
from printpipe.ledger import Location, location_argument, parse_location
from printpipe.service.server import POOL_CONNECTIONS, bind, run_uvicorn, url_of
from printpipe.wallet.app import Faults

CONFIG_ENV = "PRINTPIPE_WALLET_CONFIG"
DEFAULT_PORT = 8790


@dataclass(frozen=True)
class WalletConfig:
    db: str
    trusted: list[str]
    """The trusted game servers' public keys, PEM."""
    faults: dict[str, Any] = field(default_factory=dict)

    @property
    def location(self) -> Location:
        return parse_location(self.db)


def load_trusted(paths: list[Path]) -> list[str]:
    """The public key files given with ``--trust``, read and checked (PEM)."""
    from cryptography.hazmat.primitives import serialization

    from printpipe.keys import load_public_key

    pems = []
    for path in paths:
        key = load_public_key(path, create_with="printpipe terminal keygen FILE writes FILE.pub")
        pems.append(
            key.public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ).decode()
        )
    return pems


def create_app_from_environment() -> Any:
    """Uvicorn's factory: each worker opens its own store (and PostgreSQL pool)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    from printpipe.wallet.app import create_app
    from printpipe.wallet.store import WalletStore

    config = WalletConfig(**json.loads(os.environ[CONFIG_ENV]))
    keys = [load_pem_public_key(pem.encode()) for pem in config.trusted]
    trusted = [key for key in keys if isinstance(key, Ed25519PublicKey)]
    store = WalletStore(config.location, pool_size=POOL_CONNECTIONS)
    threads = POOL_CONNECTIONS if store.dialect == "postgresql" else 1
    return create_app(store, trusted=trusted, threads=threads, faults=Faults(**config.faults))


def serve(
    *,
    location: Location,
    trust: list[Path],
    host: str,
    port: int,
    workers: int = 1,
    url_file: Path | None = None,
    access_log: bool = False,
    faults: Faults | None = None,
    log_format: str = "text",
) -> None:
    """Run the reference wallet until SIGINT or SIGTERM."""
    from printpipe.wallet.store import WalletStore

    trusted = load_trusted(trust)
    with WalletStore(location) as store:  # created if absent; a wrong --db is one line now
        dialect = store.dialect
    sock = bind(host, port)
    url = url_of(sock)
    config = WalletConfig(
        db=location_argument(location), trusted=trusted, faults=asdict(faults or Faults())
    )
    os.environ[CONFIG_ENV] = json.dumps(asdict(config))
    if url_file is not None:
        with atomic_file(url_file) as handle:
            handle.write(f"{url}\n".encode())
    injected = [f"{k} {v:g}" for k, v in asdict(faults or Faults()).items()
                if k in ("lose", "error", "delay") and v]  # fmt: skip
    print(
        f"printpipe: wallet at {url} (database {location}, {dialect}, {len(trusted)} trusted "
        f"game server key{'s' if len(trusted) > 1 else ''}"
        f"{', faults: ' + ', '.join(injected) if injected else ''}); stop with Ctrl-C or SIGTERM",
        file=sys.stderr,
        flush=True,
    )
    run_uvicorn(
        "printpipe.wallet.server:create_app_from_environment",
        sock=sock,
        workers=workers,
        access_log=access_log,
        log_format=log_format,
    )
