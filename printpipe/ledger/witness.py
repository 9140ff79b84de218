"""Rewinds witnessed: the servers keep a signed checkpoint of the log's head outside the database.

The sealed log stops a database writer without the key from changing what it holds, but not
from putting back a state it was in: save the ``audit_head`` row (its MAC with it), later delete
everything sealed since (entries, seals, payments, plays) and put the row back, and the chain
and the head verify, since the ledger itself was once exactly so.  Only something kept outside
the database can say that the log went further.  So each server (``printpipe serve``,
``printpipe play``) writes, every :data:`WITNESS_INTERVAL_S` and when it stops, a **witness**:
the head (``seq`` and hash) after sealing, the ledger's id and the time, signed with an Ed25519
key derived from the ledger key (so a server needs no other key, and whoever is given its
public key, :func:`witness_public_key`, can check a witness without the ledger key), in
``WITNESS_DIR/<ledger id>.json`` (``--witness DIR``; by default ``KEYS/witness``, beside the
key the database never holds).  ``ledger verify-log`` reads the newest witness of the ledger and
names a log that no longer holds its head: a rewind, or a history rewritten.

A witness is replaced only by one of the same chain further on: a server that finds the ledger
behind its witness, or at the witness's ``seq`` with another hash, keeps the witness and logs
the rewind (one line, every round) rather than bless it.

What remains (docs/validation.md): entries sealed after the last witness (at most a minute
while a server runs, since the last stop otherwise) can be rewound unseen; whoever can also
write the witness folder can rewind further (keep a copy elsewhere: another host's mount, or
``ledger checkpoint`` files an outside party keeps).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from printpipe.atomic import make_private_dir, write_atomic
from printpipe.ledger.key import LedgerKey
from printpipe.ledger.log import Checkpoint, CheckpointRefused, read_checkpoint, write_checkpoint
from printpipe.ledger.rules import format_time

if TYPE_CHECKING:
    from printpipe.ledger.core import LedgerCore

WITNESS_FORMAT = "printpipe-log-witness/1"
WITNESS_PURPOSE = b"printpipe ledger: witness signing key"
WITNESS_INTERVAL_S = 60.0
WITNESS_FOLDER = "witness"
"""The default witness folder's name, inside the keys folder."""


def witness_signing_key(key: LedgerKey) -> Ed25519PrivateKey:
    """The witnesses' Ed25519 key: its 32-byte seed derived from the ledger key."""
    return Ed25519PrivateKey.from_private_bytes(key.derive(WITNESS_PURPOSE))


def witness_public_key(key: LedgerKey) -> str:
    """The witnesses' public key, base64 (raw 32 bytes), for whoever checks them."""
    raw = witness_signing_key(key).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def default_witness_folder(keys_dir: Path) -> Path:
    return keys_dir / WITNESS_FOLDER


def witness_path(folder: Path, ledger_id: str) -> Path:
    return folder / f"{ledger_id}.json"


def read_witness(folder: Path, ledger_id: str, key: LedgerKey) -> Checkpoint | None:
    """The witness of ``ledger_id`` kept in ``folder`` (None: there is none), checked: a
    checkpoint of :data:`WITNESS_FORMAT` (its ``source`` the file)."""
    path = witness_path(folder, ledger_id)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointRefused(f"{path}: cannot be read: {exc.strerror}") from None
    public = witness_signing_key(key).public_key()
    witness = read_checkpoint(data, public, source=f"the witness {path}", format=WITNESS_FORMAT,
                              signer="the ledger's witness key")  # fmt: skip
    if witness.ledger != ledger_id:
        raise CheckpointRefused(f"{path}: the witness of another ledger")
    return witness


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """One writer at a time in the folder (a server's workers, two servers on one ledger)."""
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_witness(book: LedgerCore, folder: Path) -> str | None:
    """Seal what was logged and keep the head in ``folder``: None, or why the witness kept was
    not replaced (the ledger is behind it, or holds another history: a rewind), in one line."""
    key = book._require_key()
    seq, head = book.head()
    ledger_id = book.ledger_id()
    at = format_time(book.clock())
    make_private_dir(folder)
    with _folder_lock(folder):
        try:
            kept = read_witness(folder, ledger_id, key)
        except CheckpointRefused as exc:
            return f"the witness kept is refused, not replaced: {exc}"
        if kept is not None:
            if kept.seq > seq:
                return (
                    f"the ledger's log stops at entry {seq}, but its witness saw entry "
                    f"{kept.seq} at {kept.at}: the ledger was rewound (the witness is kept)"
                )
            if kept.seq and book.sealed_hash(kept.seq) != kept.head:
                return (
                    f"the ledger's log at entry {kept.seq} is not the one its witness saw at "
                    f"{kept.at}: it was rewound or its history rewritten (the witness is kept)"
                )
        if kept is not None and (kept.seq, kept.head) == (seq, head):
            return None  # nothing new: the file stays as it is
        witness = Checkpoint(ledger_id, seq, head, at, format=WITNESS_FORMAT)
        write_atomic(witness_path(folder, ledger_id),
                     write_checkpoint(witness, witness_signing_key(key)))  # fmt: skip
    return None
