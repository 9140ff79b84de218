"""Key files: the two block secrets, the producer's signing pair, the lottery's age pair and
the lottery's signing pair.

File names are a contract with other tools and scripts; every file is created mode 0600 in
a 0700 folder, never overwritten, and never printed.  A print shop is given only
``lottery.age.pub``, ``lottery-signing.pub`` and its own ``producer-signing.key``.  The
lottery signs with ``lottery-signing.key`` what it approves or vouches for (a proof pack, a
block's public commitment).
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pyrage import x25519

from printpipe.atomic import make_private_dir
from printpipe.errors import PrintpipeError
from printpipe.rng import SECRET_SIZE

PRODUCER_SECRET = "producer.secret"
LOTTERY_SECRET = "lottery.secret"
PRODUCER_SIGNING_KEY = "producer-signing.key"
PRODUCER_SIGNING_PUB = "producer-signing.pub"
LOTTERY_IDENTITY = "lottery.age"
LOTTERY_RECIPIENT = "lottery.age.pub"
LOTTERY_SIGNING_KEY = "lottery-signing.key"
LOTTERY_SIGNING_PUB = "lottery-signing.pub"
LEDGER_KEY = "ledger.key"
"""The lottery's validation ledger's HMAC key (32 random bytes): the ledger stores every VIRN
only as its HMAC under this key, so a copy of the database alone claims nothing."""
KEY_FILES = (
    PRODUCER_SECRET,
    LOTTERY_SECRET,
    PRODUCER_SIGNING_KEY,
    PRODUCER_SIGNING_PUB,
    LOTTERY_IDENTITY,
    LOTTERY_RECIPIENT,
    LOTTERY_SIGNING_KEY,
    LOTTERY_SIGNING_PUB,
    LEDGER_KEY,
)
ADDED_LATER = frozenset({LOTTERY_SIGNING_KEY, LOTTERY_SIGNING_PUB, LEDGER_KEY})
"""Key files a folder made by an earlier printpipe may lack: made on demand, alone."""
NAME_KEYS_DIR = "name the folder of your key files with --keys DIR"
"""What a missing key file of a keys folder says to do.  Never ``keys init``: new keys do not
open a block, a manifest or a ledger made with other ones (a terminal's key names its own
command, ``create_with``)."""
DEMO_KEYS_DIR = Path("printpipe-demo-keys")
"""Where commands look for keys by default, and where the default run creates demo keys."""


@dataclass(frozen=True, slots=True, repr=False)
class BlockSecrets:
    """The producer's and the lottery's 32-byte secrets; repr never shows them."""

    producer: bytes
    lottery: bytes

    def __repr__(self) -> str:
        return "BlockSecrets(<hidden>)"


@dataclass(frozen=True, slots=True, repr=False)
class BlockKey:
    """One block's derived 32-byte key: what a generate worker receives, never the secrets.

    Its repr hides the key, so that Dask (which logs the arguments of failed tasks) and
    tracebacks never print it.
    """

    key: bytes

    def __repr__(self) -> str:
        return "BlockKey(<hidden>)"


def init_keys(directory: Path) -> list[Path]:
    """Create a complete, fresh set of key files; refuses to touch an existing one."""
    existing = [name for name in KEY_FILES if (directory / name).exists()]
    if existing:
        raise PrintpipeError(
            f"{directory / existing[0]} already exists: keys are never overwritten"
        )
    try:
        make_private_dir(directory)
    except OSError as exc:
        raise PrintpipeError(f"cannot create key folder {directory}: {exc.strerror}") from None
    signing = Ed25519PrivateKey.generate()
    lottery_signing = Ed25519PrivateKey.generate()
    identity = x25519.Identity.generate()
    contents = {
        PRODUCER_SECRET: os.urandom(SECRET_SIZE),
        LOTTERY_SECRET: os.urandom(SECRET_SIZE),
        PRODUCER_SIGNING_KEY: _private_pem(signing),
        PRODUCER_SIGNING_PUB: _public_pem(signing),
        # The standard age identity file, so that `age -d -i lottery.age` reads it.
        LOTTERY_IDENTITY: (
            f"# printpipe lottery identity\n# public key: {identity.to_public()}\n{identity}\n"
        ).encode(),
        LOTTERY_RECIPIENT: f"{identity.to_public()}\n".encode(),
        LOTTERY_SIGNING_KEY: _private_pem(lottery_signing),
        LOTTERY_SIGNING_PUB: _public_pem(lottery_signing),
        LEDGER_KEY: os.urandom(SECRET_SIZE),
    }
    written = []
    for name, data in contents.items():
        path = directory / name
        _write_private(path, data)
        written.append(path)
    return written


def ensure_demo_keys(directory: Path) -> None:
    """Create demo keys where the default run looks for them, saying so on stderr."""
    missing = {name for name in KEY_FILES if not (directory / name).exists()}
    if not missing:
        return
    if missing <= ADDED_LATER:  # demo keys of an earlier version
        if LOTTERY_SIGNING_KEY in missing:
            lottery_signing = Ed25519PrivateKey.generate()
            _write_private(directory / LOTTERY_SIGNING_KEY, _private_pem(lottery_signing))
            _write_private(directory / LOTTERY_SIGNING_PUB, _public_pem(lottery_signing))
        if LEDGER_KEY in missing:
            ensure_ledger_key(directory)
    else:
        init_keys(directory)
    print(
        f"printpipe: created DEMO keys in {directory}/ - for trying printpipe only; "
        "production keys come from `printpipe keys init DIR` on the right machines",
        file=sys.stderr,
    )


def ensure_ledger_key(directory: Path) -> Path | None:
    """Create ``DIR/ledger.key`` if it is absent (a folder made before it existed); the path
    when it was created, else None. Never overwritten."""
    path = directory / LEDGER_KEY
    if path.exists():
        return None
    try:
        make_private_dir(directory)
        _write_private(path, os.urandom(SECRET_SIZE))
    except FileExistsError:
        return None  # another process made it meanwhile
    except OSError as exc:
        raise PrintpipeError(f"cannot create {path}: {exc.strerror}") from None
    return path


def load_ledger_key_bytes(directory: Path) -> bytes:
    """The ledger's 32-byte HMAC key, from ``DIR/ledger.key`` (0600)."""
    return _read_secret(directory / LEDGER_KEY)


def load_secrets(directory: Path) -> BlockSecrets:
    return BlockSecrets(
        producer=_read_secret(directory / PRODUCER_SECRET),
        lottery=_read_secret(directory / LOTTERY_SECRET),
    )


def load_signing_key(
    directory: Path, name: str = PRODUCER_SIGNING_KEY, *, create_with: str | None = None
) -> Ed25519PrivateKey:
    """The producer's signing key in ``directory`` (or the lottery's: ``LOTTERY_SIGNING_KEY``;
    or a terminal's, whose missing file names ``create_with``, the command that makes it)."""
    path = directory / name
    data = _read_private(path, create_with)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise PrintpipeError(f"{path} is not a PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise PrintpipeError(f"{path} is not an Ed25519 private key")
    return key


def load_public_key(path: Path, *, create_with: str | None = None) -> Ed25519PublicKey:
    """An Ed25519 public key in PEM: the producer's, the lottery's or a terminal's."""
    data = _read(path, create_with)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise PrintpipeError(f"{path} is not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise PrintpipeError(f"{path} is not an Ed25519 public key")
    return key


def load_lottery_recipient(path: Path) -> x25519.Recipient:
    text = _read(path).decode("utf-8", "replace").strip()
    try:
        return x25519.Recipient.from_str(text)
    except Exception:  # pyrage raises its own RecipientError types
        raise PrintpipeError(f"{path} is not an age recipient (age1...)") from None


def load_lottery_identity(path: Path) -> x25519.Identity:
    lines = _read_private(path).decode("utf-8", "replace").splitlines()
    secret = [line.strip() for line in lines if line.strip().startswith("AGE-SECRET-KEY-")]
    if len(secret) != 1:
        raise PrintpipeError(f"{path} holds no age identity (AGE-SECRET-KEY-...)")
    try:
        return x25519.Identity.from_str(secret[0])
    except Exception:  # pyrage raises its own IdentityError types
        raise PrintpipeError(f"{path} holds a malformed age identity") from None


def _private_pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _public_pem(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _read_secret(path: Path) -> bytes:
    data = _read_private(path)
    if len(data) != SECRET_SIZE:
        raise PrintpipeError(f"{path} must hold exactly {SECRET_SIZE} bytes, it holds {len(data)}")
    return data


def _read_private(path: Path, create_with: str | None = None) -> bytes:
    data = _read(path, create_with)
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise PrintpipeError(
            f"{path} is readable by others (mode {stat.S_IMODE(mode):04o}): chmod 600 it"
        )
    return data


def _read(path: Path, create_with: str | None = None) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise PrintpipeError(missing_key_file(path, create_with)) from None
    except OSError as exc:
        raise PrintpipeError(f"cannot read key file {path}: {exc.strerror}") from None


def missing_key_file(path: Path, create_with: str | None = None) -> str:
    """The one line for a key file that is not there: ``create_with``, the command that makes
    it (a terminal's key); else, for a file of a keys folder, the folder looked in, whether it
    exists, and how to name the right one (``--keys DIR``)."""
    if create_with is not None or path.name not in KEY_FILES:
        return f"key file {path} not found" + (f" ({create_with})" if create_with else "")
    folder = path.parent
    default = ", the default" if folder == DEMO_KEYS_DIR else ""
    looked = f"looked in {folder}/{default}" if folder.is_dir() else f"no folder {folder}/{default}"
    return f"key file {path.name} not found ({looked}): {NAME_KEYS_DIR}"


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
