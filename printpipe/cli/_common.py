"""What the commands share: the options every group takes, and the manifest helpers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from printpipe.errors import PrintpipeError
from printpipe.keys import DEMO_KEYS_DIR, PRODUCER_SIGNING_PUB

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from pyrage import x25519

    from printpipe.games.base import Game
    from printpipe.handover import Manifest

DEFAULT_GAME = "chien-chat"
DEFAULT_OUT = Path("printpipe-out")

keys_option = click.option(
    "--keys",
    "keys_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEMO_KEYS_DIR,
    show_default=True,
    help="Folder of key files (printpipe keys init).",
)
definition_option = click.option(
    "--definition",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Game definition to use instead of the game's own game.toml.",
)
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bar.")

F = TypeVar("F", bound=Callable[..., object])


def server_options(*, default_port: int, witness: bool = True) -> Callable[[F], F]:
    """The options a server command (``serve``, ``play``, ``wallet serve``) takes to listen,
    to log, to keep the witness of its ledger's log (``witness``: a ledger's servers, not the
    reference wallet) and to run in the background: ``--host``, ``--port``, ``--workers``,
    ``--url-file``, ``--access-log``, ``--log-format``, ``--witness``, ``--detach``,
    ``--pid-file``, ``--log``."""
    witness_option = click.option(
        "--witness", type=click.Path(path_type=Path, file_okay=False), default=None,
        help="Keep a signed checkpoint of the log's head there every minute and at shutdown, "
        "outside the database (default: KEYS/witness; ledger verify-log checks it).",
    )  # fmt: skip
    options = (
        click.option(
            "--host", default="127.0.0.1", show_default=True, help="Address to listen on."
        ),
        click.option(
            "--port", type=click.IntRange(0, 65535), default=default_port, show_default=True,
            help="Port to listen on (0: a free one; see --url-file).",
        ),
        click.option(
            "--workers", type=click.IntRange(1, 64), default=1, show_default=True,
            help="Server processes: one per core.",
        ),
        click.option(
            "--url-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
            help="Write the server's URL there once it accepts connections.",
        ),
        click.option("--access-log", is_flag=True, help="Log one line per request."),
        click.option(
            "--log-format", type=click.Choice(["text", "json"]), default="text",
            show_default=True, help="json: one JSON object a line, for a log shipper.",
        ),
        *([witness_option] if witness else []),
        click.option(
            "--detach", is_flag=True,
            help="Run in the background; return once it listens (needs --url-file, --pid-file, "
            "--log).",
        ),
        click.option("--pid-file", type=click.Path(path_type=Path, dir_okay=False), default=None),
        click.option(
            "--log", "log_file", type=click.Path(path_type=Path, dir_okay=False), default=None
        ),
    )  # fmt: skip

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def start_in_background(
    doing: str, *, url_file: Path | None, pid_file: Path | None, log_file: Path | None
) -> None:
    """``--detach``: the same command line without it, started in the background; says
    ``doing`` (``serving``, ``dealing at``) the URL once the server listens."""
    import sys

    from printpipe.errors import InvalidInput
    from printpipe.service.server import detach

    if url_file is None or pid_file is None or log_file is None:
        raise InvalidInput("--detach needs --url-file, --pid-file and --log")
    argv = [a for a in sys.argv[1:] if a != "--detach"]
    url = detach(argv, url_file=url_file, log_file=log_file, pid_file=pid_file)
    click.echo(f"{doing} {url} in the background (pid in {pid_file}, log {log_file})")


scheduler_option = click.option(
    "--scheduler",
    default=None,
    metavar="tcp://HOST:PORT",
    help="Run the chunks on this Dask scheduler's workers (pip install printpipe[dask]).",
)


producer_key_option = click.option(
    "--producer-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Producer's public key [default: KEYS/producer-signing.pub].",
)
lottery_key_option = click.option(
    "--lottery-key",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The lottery's public signing key [default: KEYS/lottery-signing.pub].",
)
identity_option = click.option(
    "--identity",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The lottery's age identity [default: KEYS/lottery.age].",
)


def public_key(path: Path | None, keys_dir: Path, default: str) -> Ed25519PublicKey:
    """A public key file: ``path``, else ``keys_dir/default``."""
    from printpipe.keys import load_public_key

    return load_public_key(path or keys_dir / default)


def verified_manifest(path: Path, keys_dir: Path, producer_key: Path | None) -> Manifest:
    from printpipe.handover import verify_manifest
    from printpipe.keys import load_public_key

    key_file = producer_key or keys_dir / PRODUCER_SIGNING_PUB
    return verify_manifest(path, load_public_key(key_file), key_file=key_file)


def lottery_identity(keys_dir: Path, identity: Path | None) -> x25519.Identity:
    from printpipe.keys import LOTTERY_IDENTITY, load_lottery_identity

    return load_lottery_identity(identity or keys_dir / LOTTERY_IDENTITY)


def manifest_game(manifest: Manifest) -> Game:
    from printpipe.games import load_game

    game_id = manifest.header.get("game", {}).get("id")
    if not isinstance(game_id, str):
        raise PrintpipeError(f"manifest {manifest.path} names no game")
    return load_game(game_id)
