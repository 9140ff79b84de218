"""``printpipe play``: the game server on uvicorn, started and stopped like ``printpipe serve``
(the same socket binding, ``--url-file``, ``--detach``, ``--workers``)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from printpipe.atomic import atomic_file
from printpipe.errors import PrintpipeError
from printpipe.ledger import Location, location_argument, parse_location
from printpipe.service.server import POOL_CONNECTIONS, bind, run_uvicorn, url_of

CONFIG_ENV = "PRINTPIPE_PLAY_CONFIG"
DEFAULT_PORT = 8788


@dataclass(frozen=True)
class PlayConfig:
    db: str
    keys_dir: str
    demo: bool = False
    workers: int = 1
    witness: str | None = None
    wallet: str | None = None
    """The operator's wallet's URL (None: the built-in wallet)."""
    wallet_key: str | None = None

    @property
    def location(self) -> Location:
        return parse_location(self.db)


def open_dealer(
    location: Location, keys_dir: Path, *, pool: int = 0, shared: bool = False,
    wallet: str | None = None, wallet_key: Path | None = None,
    wallet_backoff_s: float | None = None,
) -> Any:  # fmt: skip
    """The ledger at ``location`` and its dealer, for the online game whose blocks it holds;
    its wallet the operator's at ``wallet``, its calls signed with ``wallet_key`` (default:
    the built-in wallet), its first pause after an unanswered attempt ``wallet_backoff_s``
    (default: the client's, 0.2 s; the tests of lost answers: less)."""
    from printpipe.games import load_game
    from printpipe.games.base import is_online
    from printpipe.ledger import Dealer, Ledger, load_ledger_key, with_outbox

    ledger = Ledger(location, key=load_ledger_key(keys_dir), pool_size=pool, shared=shared)
    try:
        rows = ledger.query(
            "SELECT DISTINCT c.game FROM commitments c JOIN deal_orders d ON d.commitment = c.id"
        )
        if not rows:
            raise PrintpipeError(
                f"the ledger {location} holds no online block to deal (load one: printpipe "
                "ledger import MANIFEST --commitment COMMITMENT)"
            )
        if len(rows) > 1:
            raise PrintpipeError(f"the ledger {location} holds blocks of several online games")
        game = load_game(rows[0][0])
        if not is_online(game):  # pragma: no cover - deal orders exist for online games only
            raise PrintpipeError(f"{rows[0][0]} is not an online game")
        client = None
        if wallet is not None:
            client = wallet_client(wallet, wallet_key, game=game.definition.id,
                                   backoff_s=wallet_backoff_s)  # fmt: skip
        return ledger, with_outbox(Dealer(ledger, game, wallet=client))
    except BaseException:
        ledger.close()
        raise


def wallet_client(
    url: str, key_file: Path | None, *, game: str = "", backoff_s: float | None = None
) -> Any:
    """The operator's wallet at ``url``, its calls signed with the key in ``key_file``, each
    call counted in the metrics (``game``: the game of its debits, credits and cancels;
    ``backoff_s``: its first pause after an unanswered attempt, default the client's)."""
    from printpipe.play.operator_wallet import DEFAULT_BACKOFF_S, WalletClient
    from printpipe.service import metrics
    from printpipe.service.signatures import load_terminal_key

    if key_file is None:
        raise PrintpipeError("--wallet needs --wallet-key (printpipe terminal keygen game.key)")
    return WalletClient(url, key=load_terminal_key(key_file), game=game,
                        backoff_s=DEFAULT_BACKOFF_S if backoff_s is None else backoff_s,
                        observe=metrics.observe_wallet_call)  # fmt: skip


def create_app_from_environment() -> Any:
    """Uvicorn's factory: each worker opens its own ledger (and PostgreSQL pool)."""
    from printpipe.play.app import create_app

    config = PlayConfig(**json.loads(os.environ[CONFIG_ENV]))
    ledger, dealer = open_dealer(
        config.location, Path(config.keys_dir), pool=POOL_CONNECTIONS, shared=config.workers > 1,
        wallet=config.wallet, wallet_key=Path(config.wallet_key) if config.wallet_key else None,
    )  # fmt: skip
    witness = Path(config.witness) if config.witness else None
    return create_app(ledger, dealer, threads=ledger.db.threads, demo=config.demo, witness=witness)


def play(
    *,
    location: Location,
    keys_dir: Path,
    host: str,
    port: int,
    workers: int = 1,
    demo: bool = False,
    url_file: Path | None = None,
    access_log: bool = False,
    witness: Path | None = None,
    log_format: str = "text",
    wallet: str | None = None,
    wallet_key: Path | None = None,
) -> None:
    """Run the game server until SIGINT or SIGTERM; its witness kept in ``witness`` (default
    ``KEYS/witness``: :mod:`printpipe.ledger.witness`); its wallet the operator's at
    ``wallet`` (default: the built-in one)."""
    from printpipe.ledger import default_witness_folder

    ledger, dealer = open_dealer(location, keys_dir, wallet=wallet, wallet_key=wallet_key)
    with ledger:
        dialect, game = ledger.db.dialect, dealer.game.definition.id
    sock = bind(host, port)
    url = url_of(sock)
    db = location_argument(location)
    config = PlayConfig(
        db=db,
        keys_dir=str(keys_dir),
        demo=demo,
        workers=workers,
        witness=str(witness or default_witness_folder(keys_dir)),
        wallet=wallet,
        wallet_key=str(wallet_key.resolve()) if wallet_key else None,
    )
    os.environ[CONFIG_ENV] = json.dumps(asdict(config))
    if url_file is not None:
        with atomic_file(url_file) as handle:
            handle.write(f"{url}\n".encode())
    print(
        f"printpipe: dealing {game} at {url} (ledger {location}, {dialect}, {workers} worker"
        f"{'s' if workers > 1 else ''}{', demo logins' if demo else ''}, wallet "
        f"{wallet or 'built-in'}); stop with Ctrl-C or SIGTERM",
        file=sys.stderr,
        flush=True,
    )
    run_uvicorn(
        "printpipe.play.server:create_app_from_environment",
        sock=sock,
        workers=workers,
        access_log=access_log,
        log_format=log_format,
    )
