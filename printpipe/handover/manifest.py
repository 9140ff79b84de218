"""The secure manifest: serial -> prize, readable only by the lottery, signed by the producer.

Why this shape: the print shop must hand over what it printed (every ticket's prize and VIRN)
in a file that nobody on the way can read, the print shop included once its own copies are
gone (its block store and press PDFs do show every outcome: ``docs/confidentiality.md``), and
the lottery must be sure the file is the producer's and complete.  So the records are
encrypted to the lottery's age
recipient, and the producer's Ed25519 key signs a clear header plus the SHA-256 of the
encrypted body: anyone holding the producer's public key can check a manifest without
decrypting it.

File format ``printpipe-manifest/2`` (every line ends with LF)::

    printpipe-manifest/2
    header-bytes NNNNNNNNNN            10 digits: length of the JSON header that follows
    { ...header JSON... }              UTF-8, sorted keys, ends with LF
    body-sha256 <64 hex>               SHA-256 of the age body (the rest of the file)
    records-sha256 <64 hex>            SHA-256 of the decrypted body (the plaintext records)
    signature <128 hex>                Ed25519 over every byte of the file before this line
    <age body>                         a standard age file (X25519 recipient), up to EOF

The age body is a complete, standard age file, so ``tail -c +OFFSET FILE | age -d -i
lottery.age`` decrypts it (``printpipe manifest verify`` prints OFFSET).  Its plaintext is
UTF-8 CSV with LF line ends: a header row, then one row per ticket in block order, with the
game's record columns (``GameDefinition.records``: for chien-chat
``serial,game,block,pool,pack,ticket,effigy,paws,bonus,prize_eur,virn``, exactly the auditor's
CSV of the spec), then ``salt``: the ticket's leaf salt in the block's public commitment, 64
lowercase hex digits (format 2; ``docs/commitment.md``).  The auditor's CSV is the plaintext
without that last column: ``manifest export --csv`` leaves it out, so its columns stay the
spec's.  The plaintext depends only on the tickets, so the same packs give byte-identical
plaintext, and the same ``records-sha256``, although age encryption is randomized.

Writing streams: records are encoded a batch of packs at a time and fed to pyrage's
streaming ``encrypt_io``; the hashes are patched into fixed-width lines once the body is
written, then the file is fsynced and renamed into place.  A press export seals the body
first, while its chunks render (:func:`seal_run_records`, into a partial file), and writes
the manifest once the press files it lists are final (:func:`write_sealed_run_manifest`).
Reading verifies the signature and the body hash before decrypting, and hashes the body again
while decrypting.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyrage
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pyrage import x25519

from printpipe import __version__
from printpipe.atomic import atomic_file, make_private_dir, open_private, partial_path
from printpipe.block import BlockStore, PackRange, Tickets
from printpipe.errors import PrintpipeError
from printpipe.games.base import VARIANT_COLUMN, Game, GameDefinition
from printpipe.ids import gs1_check_digits_array, printed_pack_number
from printpipe.progress import progress_bar
from printpipe.rng import LEAF_SALT_SIZE

FORMAT = "printpipe-manifest/2"
SALT_COLUMN = "salt"
"""The last plaintext column: each ticket's leaf salt, for the lottery's proofs and reveal."""
BLOCK_MANIFEST = "manifest.ppm"
"""The block-level manifest ``printpipe generate`` writes inside the block store folder."""
BATCH_PACKS = 40
"""Packs encoded per batch: 5,000 records, about 6 MB of Python strings while they are
encoded (a run or a block alike), and as fast as bigger batches."""
MAX_HEADER_BYTES = 16 << 20

_MAGIC = f"{FORMAT}\n".encode()
_LENGTH_PREFIX = b"header-bytes "
_BODY_PREFIX = b"body-sha256 "
_RECORDS_PREFIX = b"records-sha256 "
_SIGNATURE_PREFIX = b"signature "
_HEX_DIGITS = b"0123456789abcdef"


# -- records ---------------------------------------------------------------------------------


def record_columns(definition: GameDefinition) -> list[str]:
    """The CSV columns of a game's records, as its definition lays them out (the auditor's)."""
    return list(definition.records.columns)


def plaintext_columns(definition: GameDefinition) -> list[str]:
    """The columns of the encrypted plaintext: the records', then the salt."""
    return [*record_columns(definition), SALT_COLUMN]


def header_row(definition: GameDefinition) -> bytes:
    """The auditor's CSV header row."""
    return (",".join(record_columns(definition)) + "\n").encode()


def plaintext_header_row(definition: GameDefinition) -> bytes:
    return (",".join(plaintext_columns(definition)) + "\n").encode()


@dataclass(frozen=True)
class RecordColumns:
    """Tickets as the manifest states them: where each sits, what it shows, what it wins."""

    block: int
    block_pack: np.ndarray  # 1-based pack within the block
    ticket: np.ndarray
    variant: np.ndarray
    symbols: np.ndarray
    prize_eur: np.ndarray
    virn: np.ndarray
    salts: np.ndarray | None = None
    """(n, 32) uint8 leaf salts: given, each row ends with its salt column (the plaintext's
    form); None, the auditor's row."""


def _field_texts(definition: GameDefinition, symbols: np.ndarray) -> dict[str, list[str]]:
    """Each symbol field as text: codes separated by spaces; a field of blanks is empty."""
    codes = np.array(definition.symbol_codes, dtype=object)
    blank = definition.records.blank_symbol
    blank_id = definition.symbol_codes.index(blank) if blank is not None else -1
    texts: dict[str, list[str]] = {}
    start = 0
    for f in definition.fields:
        part = symbols[:, start : start + f.width].astype(np.int64)
        start += f.width
        rows = [" ".join(row) for row in codes[part].tolist()]
        for i in np.flatnonzero((part == blank_id).all(axis=1)).tolist():
            rows[i] = ""
        texts[f.name] = rows
    return texts


def encode_records(definition: GameDefinition, rows: RecordColumns) -> bytes:
    """The canonical CSV rows of tickets: the one encoding, used to write and to re-check."""
    rules = definition.block
    block_pack = rows.block_pack.astype(np.int64)
    pack_number = printed_pack_number(
        block=rows.block, block_pack=block_pack, packs_per_block=rules.packs
    )
    ticket = rows.ticket.astype(np.int64)
    checks = gs1_check_digits_array(definition.number, pack_number, ticket)
    game = f"{definition.number:04d}"
    n = len(ticket)
    packs_text = [f"{p:06d}" for p in pack_number.tolist()]
    tickets_text = [f"{t:03d}" for t in ticket.tolist()]
    columns: dict[str, Callable[[], list[str]]] = {
        "serial": lambda: [
            f"{game}-{p}-{t}-{c}"
            for p, t, c in zip(packs_text, tickets_text, checks.tolist(), strict=True)
        ],
        "game": lambda: [game] * n,
        "block": lambda: [str(rows.block)] * n,
        "pool": lambda: [str(p) for p in ((block_pack - 1) // rules.packs_per_pool + 1).tolist()],
        "pack": lambda: packs_text,
        "ticket": lambda: tickets_text,
        "unit": lambda: [
            str(u) for u in ((block_pack - 1) * rules.pack_size + ticket + 1).tolist()
        ],
        VARIANT_COLUMN: lambda: np.array(definition.variants, dtype=object)[
            rows.variant.astype(np.int64)
        ].tolist(),
        "prize_eur": lambda: [str(p) for p in rows.prize_eur.tolist()],
        "virn": lambda: [f"{v:010d}" for v in rows.virn.tolist()],
    }
    fields = _field_texts(definition, rows.symbols)
    texts = [fields[c] if c in fields else columns[c]() for c in definition.records.columns]
    if rows.salts is not None:
        hexes = np.ascontiguousarray(rows.salts, dtype=np.uint8).tobytes().hex()
        width = 2 * rows.salts.shape[1]
        texts.append([hexes[i : i + width] for i in range(0, len(hexes), width)])
    return "".join(",".join(parts) + "\n" for parts in zip(*texts, strict=True)).encode()


def _store_records(
    store: BlockStore, definition: GameDefinition, packs: PackRange
) -> RecordColumns:
    tickets: Tickets = store.read(packs)
    size = definition.block.pack_size
    n = len(tickets)
    return RecordColumns(
        block=store.block,
        block_pack=packs.first + np.arange(n, dtype=np.int64) // size,
        ticket=np.arange(n, dtype=np.int64) % size,
        variant=np.asarray(tickets.variant),
        symbols=np.asarray(tickets.symbols),
        prize_eur=definition.tier_amounts[np.asarray(tickets.tier, dtype=np.int64)],
        virn=np.asarray(tickets.virn),
        salts=np.asarray(store.read_salts(packs)),
    )


def iter_plaintext(
    store: BlockStore, definition: GameDefinition, packs: PackRange
) -> Iterator[bytes]:
    """The plaintext body of ``packs``, a batch of packs at a time (bounded memory)."""
    yield plaintext_header_row(definition)
    for start in range(packs.first, packs.last + 1, BATCH_PACKS):
        batch = PackRange(start, min(start + BATCH_PACKS - 1, packs.last))
        yield encode_records(definition, _store_records(store, definition, batch))


# -- writing ---------------------------------------------------------------------------------


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks, hashing what it hands out."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks = chunks
        self.pending = memoryview(b"")
        self.digest = hashlib.sha256()
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            while not self.pending:
                chunk = next(self.chunks, None)
                if chunk is None:
                    return 0
                self.digest.update(chunk)
                self.pending = memoryview(chunk)
        except BaseException as exc:  # kept, re-raised after pyrage returns
            self.error = exc
            raise
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


class _HashingWriter(io.RawIOBase):
    """Writes through to a file, hashing the bytes (the age body's SHA-256)."""

    def __init__(self, target: BinaryIO) -> None:
        self.target = target
        self.digest = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digest.update(data)
        self.target.write(data)
        return len(data)


def _tier_table(store: BlockStore, definition: GameDefinition, packs: PackRange) -> dict[str, Any]:
    """Prize table with this manifest's counts, from the tier column (cheap: one byte a row)."""
    counts = np.zeros(len(definition.tier_amounts), dtype=np.int64)
    for start in range(packs.first, packs.last + 1, BATCH_PACKS * 50):
        batch = PackRange(start, min(start + BATCH_PACKS * 50 - 1, packs.last))
        tiers = np.asarray(store.read(batch).tier, dtype=np.int64)
        counts += np.bincount(tiers, minlength=len(counts))
    return prize_table(definition, counts)


def prize_table(definition: GameDefinition, counts: np.ndarray) -> dict[str, Any]:
    amounts = definition.tier_amounts
    return {
        "tiers": [
            {
                "amount_eur": int(amounts[t]),
                "lots_per_block": int(definition.tier_lots[t]),
                "tickets": int(counts[t]),
                "total_eur": int(counts[t] * amounts[t]),
            }
            for t in range(len(amounts))
        ],
        "totals": {
            "tickets": int(counts.sum()),
            "winning_tickets": int(counts[1:].sum()),
            "prize_eur": int((counts * amounts).sum()),
        },
    }


def build_header(
    store: BlockStore,
    definition: GameDefinition,
    packs: PackRange,
    kind: str,
    recipient: x25519.Recipient,
    print_files: list[dict[str, Any]],
) -> dict[str, Any]:
    for entry in print_files:
        if not isinstance(entry, dict) or "path" not in entry or "sha256" not in entry:
            raise PrintpipeError("every print file of a manifest needs a path and a sha256")
    return {
        "format": FORMAT,
        "kind": kind,
        "printpipe_version": __version__,
        "game": {
            "id": definition.id,
            "number": f"{definition.number:04d}",
            "definition_sha256": definition.source_sha256,
            "variants": list(definition.variants),
            "fields": [{"name": f.name, "width": f.width} for f in definition.fields],
        },
        "block": store.block,
        "packs": store.packs_header(packs),
        "records": packs.count * store.pack_size,
        "columns": plaintext_columns(definition),
        "block_tree_root": store.summary.tree.root,
        **_tier_table(store, definition, packs),
        "commitments": asdict(store.summary.commitments),
        "block_summary_sha256": hashlib.sha256(store.summary_bytes).hexdigest(),
        "recipient": str(recipient),
        "body": "age v1 (X25519), plaintext UTF-8 CSV, LF line ends, header row first",
        "print_files": print_files,
    }


def _check_game(store: BlockStore, definition: GameDefinition) -> None:
    if store.game_id != definition.id:
        raise PrintpipeError(
            f"block store {store.path} is of game {store.game_id}, not {definition.id}"
        )


def _prefix(header: dict[str, Any]) -> bytes:
    """The file's first lines: the format, the header's length and the header."""
    header_bytes = json.dumps(header, indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"
    return _MAGIC + _LENGTH_PREFIX + f"{len(header_bytes):010d}\n".encode() + header_bytes


def _hash_lines(body_sha256: str, records_sha256: str) -> bytes:
    return (
        _BODY_PREFIX
        + body_sha256.encode()
        + b"\n"
        + _RECORDS_PREFIX
        + records_sha256.encode()
        + b"\n"
    )


def _signature_line(signature: bytes) -> bytes:
    return _SIGNATURE_PREFIX + signature.hex().encode() + b"\n"


def _private_parent(path: Path) -> None:
    try:
        make_private_dir(path.parent)
    except OSError as exc:
        raise PrintpipeError(f"cannot write to {path.parent}: {exc.strerror}") from None


def _encrypt(
    chunks: Iterator[bytes], out: BinaryIO, recipient: x25519.Recipient, path: Path
) -> tuple[str, str]:
    """Stream the plaintext ``chunks`` through age into ``out``; the SHA-256 of the age body
    and of the plaintext."""
    reader = _ChunkReader(chunks)
    writer = _HashingWriter(out)
    try:
        pyrage.encrypt_io(reader, writer, [recipient])
    except Exception as exc:
        if reader.error is not None:
            raise reader.error from None
        raise PrintpipeError(f"cannot encrypt manifest {path}: {exc}") from None
    return writer.digest.hexdigest(), reader.digest.hexdigest()


def write_manifest(
    path: Path,
    store: BlockStore,
    game: Game,
    packs: PackRange,
    recipient: x25519.Recipient,
    signing_key: Ed25519PrivateKey,
    print_files: list[dict[str, Any]],
    kind: str,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Write a manifest of ``packs`` of ``store`` to ``path`` (temp name, fsync, rename).

    A block manifest is written while ``generate``'s bar is still open: its bar nests below.
    """
    definition = game.definition
    _check_game(store, definition)
    header = build_header(store, definition, packs, kind, recipient, print_files)
    prefix = _prefix(header)
    placeholder = _hash_lines("0" * 64, "0" * 64) + _signature_line(bytes(64))
    _private_parent(path)
    records = packs.count * store.pack_size
    with (
        atomic_file(path, "w+b") as out,
        progress_bar(records, "manifest", "records", show_progress, kind == "block") as bar,
    ):
        out.write(prefix + placeholder)
        plaintext = _counted(iter_plaintext(store, definition, packs), bar.update)
        hashes = _hash_lines(*_encrypt(plaintext, out, recipient, path))
        out.seek(len(prefix))
        out.write(hashes + _signature_line(signing_key.sign(prefix + hashes)))
    return header


@dataclass(frozen=True)
class SealedRecords:
    """A run manifest's age body, encrypted before its header can be written (the header names
    the run's press files, known once they are rendered; the body depends on the tickets
    alone): a partial file beside the manifest, and its digests."""

    path: Path
    packs: PackRange
    body_sha256: str
    records_sha256: str


def seal_run_records(
    path: Path,
    store: BlockStore,
    packs: PackRange,
    recipient: x25519.Recipient,
    *,
    game: Game,
    stop: Callable[[], bool] | None = None,
) -> SealedRecords:
    """Encrypt the records of ``packs`` for the run manifest that will be ``path``, into
    ``.NAME.body.partial-PID`` beside it (removed with any partial file if the run fails);
    :func:`write_sealed_run_manifest` then writes the manifest.  ``stop`` is asked between
    batches of packs: true, the sealing ends with :class:`SealingStopped`."""
    definition = game.definition
    _check_game(store, definition)
    _private_parent(path)
    body = partial_path(path.with_name(f"{path.name}.body"))

    def batches() -> Iterator[bytes]:
        for chunk in iter_plaintext(store, definition, packs):
            if stop is not None and stop():
                raise SealingStopped(f"sealing {path} stopped")
            yield chunk

    try:
        with open_private(body) as out:
            body_sha256, records_sha256 = _encrypt(batches(), out, recipient, path)
    except BaseException:
        body.unlink(missing_ok=True)
        raise
    return SealedRecords(body, packs, body_sha256, records_sha256)


class SealingStopped(Exception):
    """The run stopped while its manifest's records were being sealed."""


def write_sealed_run_manifest(
    path: Path,
    store: BlockStore,
    sealed: SealedRecords,
    recipient: x25519.Recipient,
    signing_key: Ed25519PrivateKey,
    print_files: list[dict[str, Any]],
    *,
    game: Game,
) -> dict[str, Any]:
    """Write the run manifest whose records :func:`seal_run_records` sealed: the header (with
    the press files), the digests and the signature, then the body, copied and hashed again
    on the way (temp name, fsync, rename); the sealed body file is removed.

    A manifest already at ``path`` that says the same (signed by this key, intact, the same
    header and the same records: a run with nothing left to render) is kept byte for byte:
    age encrypts to a fresh key each time, so a new one would differ in every body byte."""
    header = build_header(store, game.definition, sealed.packs, "run", recipient, print_files)
    if _says_already(path, header, sealed.records_sha256, signing_key.public_key()):
        sealed.path.unlink(missing_ok=True)
        return header
    prefix = _prefix(header)
    hashes = _hash_lines(sealed.body_sha256, sealed.records_sha256)
    with atomic_file(path) as out, open(sealed.path, "rb") as body:
        out.write(prefix + hashes + _signature_line(signing_key.sign(prefix + hashes)))
        digest = hashlib.sha256()
        while block := body.read(1 << 20):
            digest.update(block)
            out.write(block)
        if digest.hexdigest() != sealed.body_sha256:
            raise PrintpipeError(f"the sealed records of {path} changed on disk: run it again")
    sealed.path.unlink(missing_ok=True)
    return header


def _says_already(
    path: Path, header: dict[str, Any], records_sha256: str, producer_key: Ed25519PublicKey
) -> bool:
    """Whether the manifest at ``path`` is intact, signed by ``producer_key``, and has this
    header and these records."""
    if not path.exists():
        return False
    try:
        existing = verify_manifest(path, producer_key)
    except PrintpipeError:
        return False
    return _prefix(existing.header) == _prefix(header) and existing.records_sha256 == records_sha256


def write_run_manifest(
    path: Path,
    store: BlockStore,
    packs: PackRange,
    recipient: x25519.Recipient,
    signing_key: Ed25519PrivateKey,
    print_files: list[dict[str, Any]],
    show_progress: bool = False,
    *,
    game: Game,
) -> None:
    """The manifest of one export run: ``packs`` (block-relative, 1-based) of ``store``."""
    write_manifest(
        path, store, game, packs, recipient, signing_key, print_files, "run", show_progress
    )


def write_block_manifest(
    store_dir: Path,
    game: Game,
    recipient: x25519.Recipient,
    signing_key: Ed25519PrivateKey,
    show_progress: bool = False,
) -> Path:
    """The block-level manifest, inside the (not yet renamed) block store folder."""
    store = BlockStore.open(store_dir)
    path = store_dir / BLOCK_MANIFEST
    write_manifest(
        path, store, game, store.pack_range, recipient, signing_key, [], "block", show_progress
    )
    return path


def _counted(chunks: Iterator[bytes], update: Callable[[int], object]) -> Iterator[bytes]:
    """The plaintext chunks, reporting the records (lines after the header row) they hold."""
    header = True
    for chunk in chunks:
        update(chunk.count(b"\n") - header)
        header = False
        yield chunk


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """A manifest whose signature and body hash have been verified."""

    path: Path
    header: dict[str, Any]
    body_offset: int
    body_bytes: int
    body_sha256: str
    records_sha256: str


def _refuse(path: Path, problem: str) -> PrintpipeError:
    return PrintpipeError(f"manifest {path} refused: {problem}")


def _read_line(handle: BinaryIO, prefix: bytes, width: int, path: Path, what: str) -> str:
    line = handle.read(len(prefix) + width + 1)
    value = line[len(prefix) : -1]
    if (
        len(line) != len(prefix) + width + 1
        or not line.startswith(prefix)
        or not line.endswith(b"\n")
        or not all(c in b"0123456789abcdef" for c in value)
    ):
        raise _refuse(path, f"malformed {what} line (not a {FORMAT} file, or damaged)")
    return value.decode()


def verify_manifest(
    path: Path, producer_key: Ed25519PublicKey, *, key_file: Path | None = None
) -> Manifest:
    """Check the signature over the clear part and the SHA-256 of the body, without decrypting.

    ``key_file``, where ``producer_key`` was read from, is named when the signature fails.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise PrintpipeError(f"cannot read manifest {path}: {exc.strerror}") from None
    with handle:
        if handle.read(len(_MAGIC)) != _MAGIC:
            raise _refuse(path, f"not a {FORMAT} file")
        length_line = handle.read(len(_LENGTH_PREFIX) + 11)
        digits = length_line[len(_LENGTH_PREFIX) : -1]
        if (
            not length_line.startswith(_LENGTH_PREFIX)
            or not length_line.endswith(b"\n")
            or not digits.isdigit()
            or int(digits) > MAX_HEADER_BYTES
        ):
            raise _refuse(path, "malformed header length (damaged)")
        header_bytes = handle.read(int(digits))
        if len(header_bytes) != int(digits):
            raise _refuse(path, "truncated in its header")
        start_hashes = handle.tell()
        body_sha = _read_line(handle, _BODY_PREFIX, 64, path, "body-sha256")
        records_sha = _read_line(handle, _RECORDS_PREFIX, 64, path, "records-sha256")
        signed_end = handle.tell()
        signature = _read_line(handle, _SIGNATURE_PREFIX, 128, path, "signature")
        body_offset = handle.tell()
        handle.seek(0)
        signed = handle.read(signed_end)
        try:
            producer_key.verify(bytes.fromhex(signature), signed)
        except InvalidSignature:
            raise _refuse(
                path,
                "the signature does not verify with the producer's key"
                + (f" {key_file}" if key_file else "")
                + " (header tampered, or another producer's manifest)",
            ) from None
        del start_hashes
        handle.seek(body_offset)
        digest = hashlib.sha256()
        size = 0
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    if digest.hexdigest() != body_sha:
        raise _refuse(
            path,
            "the encrypted body does not match its signed SHA-256 "
            "(tampered, truncated, or a body from another run)",
        )
    try:
        header = json.loads(header_bytes)
    except ValueError:  # signed, so only a producer bug gets here
        raise _refuse(path, "the header is not JSON") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _refuse(path, f"the header is not a {FORMAT} header")
    return Manifest(path, header, body_offset, size, body_sha, records_sha)


class _LineSink(io.RawIOBase):
    """pyrage writes the plaintext here; complete lines go to a callback in batches."""

    def __init__(self, on_lines: Callable[[list[bytes]], None], batch_bytes: int) -> None:
        self.on_lines = on_lines
        self.batch_bytes = batch_bytes
        self.buffer = bytearray()
        self.digest = hashlib.sha256()
        self.error: BaseException | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        try:
            self.digest.update(data)
            self.buffer += data
            if len(self.buffer) >= self.batch_bytes:
                self._flush_lines()
        except BaseException as exc:  # kept, re-raised after pyrage returns
            self.error = exc
            raise
        return len(data)

    def _flush_lines(self) -> None:
        cut = self.buffer.rfind(b"\n") + 1
        if cut:
            lines = bytes(self.buffer[:cut]).split(b"\n")[:-1]
            del self.buffer[:cut]
            self.on_lines(lines)

    def finish(self) -> None:
        self._flush_lines()
        if self.buffer:
            raise PrintpipeError("the decrypted body does not end with a line end")


class _HashingReader(io.RawIOBase):
    """Reads the age body from the file, hashing it again as it is decrypted."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.handle.read(len(buffer))
        self.digest.update(data)
        buffer[: len(data)] = data
        return len(data)


def decrypt_manifest(
    manifest: Manifest,
    identity: x25519.Identity,
    on_lines: Callable[[list[bytes]], None],
    batch_bytes: int = 4 << 20,
) -> None:
    """Stream the plaintext lines (the CSV header row included) of a verified manifest.

    Raises PrintpipeError if the body cannot be decrypted with ``identity`` or if what was
    decrypted is not what the producer signed; the caller must discard what it received.
    """
    sink = _LineSink(on_lines, batch_bytes)
    path = manifest.path
    try:
        with open(path, "rb") as handle:
            handle.seek(manifest.body_offset)
            reader = _HashingReader(handle)
            try:
                pyrage.decrypt_io(reader, sink, [identity])
            except Exception as exc:
                if sink.error is not None:
                    raise sink.error from None
                raise _refuse(
                    path,
                    "the body does not decrypt with this identity "
                    f"(wrong lottery key, or not for this lottery): {exc}",
                ) from None
    except OSError as exc:
        raise PrintpipeError(f"cannot read manifest {path}: {exc.strerror}") from None
    sink.finish()
    if reader.digest.hexdigest() != manifest.body_sha256:
        raise _refuse(path, "the file changed while it was read")
    if sink.digest.hexdigest() != manifest.records_sha256:
        raise _refuse(path, "the decrypted records do not match their signed SHA-256")


# -- checking records ------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedRecords:
    """A batch of checked records: ticket keys, prizes, VIRNs, salts and the exact lines."""

    keys: np.ndarray  # int64: game * 10**9 + pack * 10**3 + ticket
    pack_number: np.ndarray
    ticket: np.ndarray
    prize_eur: np.ndarray
    virn: np.ndarray
    tier_counts: np.ndarray
    lines: list[bytes]
    """The auditor's CSV rows: the plaintext rows without their salt."""
    salts: np.ndarray
    """(n, 32) uint8: each ticket's leaf salt."""
    symbols: np.ndarray | None = None
    """(n, symbol width) int64: each ticket's symbol indices (an online game's units)."""


class RecordChecker:
    """Parses the plaintext of a manifest and proves every row is what the header says.

    A row is accepted only if re-encoding its parsed values gives back its exact bytes (so
    serial, check digit, pool and formatting are all canonical), it lies in the header's
    pack range in block order, and the game's rules give its recorded prize.
    """

    def __init__(self, game: Game, manifest: Manifest) -> None:
        self.game = game
        self.definition = game.definition
        self.manifest = manifest
        header = manifest.header
        definition = self.definition
        game_header = header.get("game", {})
        if game_header.get("id") != definition.id:
            raise _refuse(
                manifest.path, f"it is of game {game_header.get('id')!r}, not {definition.id}"
            )
        if game_header.get("definition_sha256") != definition.source_sha256:
            raise _refuse(
                manifest.path,
                f"it was made with another definition of {definition.id} than this one",
            )
        if header.get("columns") != plaintext_columns(definition):
            raise _refuse(manifest.path, "its columns are not this game's")
        self.block = int(header["block"])
        packs = header["packs"]
        self.first, self.last = int(packs["first"]), int(packs["last"])
        self.expected = int(header["records"])
        self.seen = 0
        self.header_seen = False
        self.tier_counts = np.zeros(len(definition.tier_amounts), dtype=np.int64)
        self.symbol_index = {code: i for i, code in enumerate(definition.symbol_codes)}
        self.variant_index = {v: i for i, v in enumerate(definition.variants)}
        blank = definition.records.blank_symbol
        # no blank mark: an empty field cannot be filled, so it fails as malformed
        self.blank_row = [self.symbol_index[blank]] * definition.symbol_width if blank else []
        self.amount_tier = {int(a): t for t, a in enumerate(definition.tier_amounts)}

    def error(self, problem: str) -> PrintpipeError:
        return _refuse(self.manifest.path, problem)

    def parse(self, lines: list[bytes]) -> ParsedRecords:
        definition = self.definition
        if not self.header_seen:
            if not lines or lines[0] + b"\n" != plaintext_header_row(definition):
                raise self.error("the decrypted body does not start with the column row")
            lines = lines[1:]
            self.header_seen = True
        n = len(lines)
        size = definition.block.pack_size
        width = definition.symbol_width
        index = self.seen + np.arange(n, dtype=np.int64)
        block_pack = self.first + index // size
        ticket = index % size
        if n and block_pack[-1] > self.last:
            raise self.error("it holds more records than its header says")
        variant = np.empty(n, dtype=np.int64)
        symbols = np.empty((n, width), dtype=np.int64)
        prize = np.empty(n, dtype=np.int64)
        virn = np.empty(n, dtype=np.int64)
        salt_texts: list[str] = []
        records: list[bytes] = []
        sym = self.symbol_index
        columns = definition.records.columns
        at = {name: i for i, name in enumerate(columns)}
        spans = []
        start = 0
        for f in definition.fields:
            spans.append((at[f.name], start, start + f.width))
            start += f.width
        blank = self.blank_row
        variant_at = at.get(VARIANT_COLUMN)
        virn_at = at.get("virn")
        virn[:] = 0
        variant[:] = 0
        i = 0
        try:
            for i, line in enumerate(lines):
                record, _, salt = line.rpartition(b",")
                if len(salt) != 2 * LEAF_SALT_SIZE or salt.translate(None, _HEX_DIGITS):
                    raise ValueError
                salt_texts.append(salt.decode())
                records.append(record)
                parts = record.decode().split(",")
                if len(parts) != len(columns):
                    raise ValueError
                if variant_at is not None:
                    variant[i] = self.variant_index[parts[variant_at]]
                for column, a, b in spans:
                    text = parts[column]
                    symbols[i, a:b] = (
                        blank[: b - a] if text == "" else [sym[c] for c in text.split(" ")]
                    )
                prize[i] = int(parts[at["prize_eur"]])
                if virn_at is not None:
                    virn[i] = int(parts[virn_at])
            salts = np.frombuffer(bytes.fromhex("".join(salt_texts)), dtype=np.uint8)
        except (KeyError, ValueError, IndexError, UnicodeDecodeError):
            raise self.error(f"record {self.seen + i + 1} is malformed") from None
        salts = salts.reshape(n, LEAF_SALT_SIZE)
        if n and (virn.min() < 0 or virn.max() >= 10**10 or prize.min() < 0):
            raise self.error("a record has an out-of-range VIRN or prize")
        rows = RecordColumns(self.block, block_pack, ticket, variant, symbols, prize, virn, salts)
        canonical = encode_records(definition, rows).split(b"\n")[:-1]
        for i, (got, want) in enumerate(zip(lines, canonical, strict=True)):
            if got != want:
                raise self.error(
                    f"record {self.seen + i + 1} is not the record of ticket "
                    f"{want.split(b',')[0].decode()} in canonical form"
                )
        evaluation = self.game.evaluate(variant, symbols)
        wrong = np.flatnonzero(evaluation.prize_eur != prize)
        if len(wrong):
            i = int(wrong[0])
            raise self.error(
                f"ticket {canonical[i].split(b',')[0].decode()}: its symbols win "
                f"{int(evaluation.prize_eur[i])} EUR by the rules, "
                f"the manifest says {int(prize[i])}"
            )
        tiers = np.array([self.amount_tier.get(int(p), -1) for p in np.unique(prize)])
        if (tiers < 0).any():
            raise self.error("a record's prize is not in the prize table")
        lookup = np.zeros(int(prize.max(initial=0)) + 1, dtype=np.int64)
        for amount, tier in self.amount_tier.items():
            if amount < len(lookup):
                lookup[amount] = tier
        counts = np.bincount(lookup[prize], minlength=len(self.tier_counts))
        self.tier_counts += counts
        self.seen += n
        pack_number = printed_pack_number(
            block=self.block, block_pack=block_pack, packs_per_block=definition.block.packs
        )
        keys = definition.number * 10**9 + pack_number * 10**3 + ticket
        return ParsedRecords(
            keys, pack_number, ticket, prize, virn, counts, records, salts, symbols
        )

    def finish(self) -> None:
        """After the last batch: the counts and totals must be those of the signed header."""
        if not self.header_seen:
            raise self.error("the decrypted body is empty")
        if self.seen != self.expected:
            raise self.error(f"it holds {self.seen} records, its header says {self.expected}")
        table = prize_table(self.definition, self.tier_counts)
        header = self.manifest.header
        if table["tiers"] != header.get("tiers") or table["totals"] != header.get("totals"):
            raise self.error("the records' prize counts differ from the signed prize table")


# -- auditor's CSV ---------------------------------------------------------------------------


def export_csv(manifest: Manifest, game: Game, identity: x25519.Identity, out: Path) -> int:
    """Write the auditor's CSV (the checked plaintext); nothing is left at ``out`` on error."""
    checker = RecordChecker(game, manifest)
    with atomic_file(out) as handle:
        handle.write(header_row(game.definition))

        def on_lines(lines: list[bytes]) -> None:
            parsed = checker.parse(lines)
            handle.write(b"".join(line + b"\n" for line in parsed.lines))

        decrypt_manifest(manifest, identity, on_lines)
        checker.finish()
    return checker.seen


def describe(manifest: Manifest) -> str:
    """The verified header, for a person."""
    h = manifest.header
    packs = h["packs"]
    totals = h["totals"]
    lines = [
        f"manifest {manifest.path}: signature and body hash OK ({h['kind']} manifest, {FORMAT})",
        f"game {h['game']['id']} ({h['game']['number']}), block {h['block']}, "
        f"packs {packs['first']} to {packs['last']} "
        f"(pack numbers {packs['first_pack_number']:06d} to {packs['last_pack_number']:06d})",
        f"records {h['records']:,}: {totals['winning_tickets']:,} winning, "
        f"{totals['prize_eur']:,} EUR",
    ]
    for tier in h["tiers"]:
        if tier["amount_eur"]:
            amount, count, total = tier["amount_eur"], tier["tickets"], tier["total_eur"]
            lines.append(f"  {amount:>7,} EUR x {count:>7,} = {total:>10,} EUR")
    lines.append(f"print files: {len(h['print_files'])}")
    for entry in h["print_files"]:
        lines.append(f"  {entry['sha256']}  {entry['path']}")
    lines.append(f"records sha256 {manifest.records_sha256}")
    lines.append(
        f"age body: {manifest.body_bytes:,} bytes from byte {manifest.body_offset} "
        f"(tail -c +{manifest.body_offset + 1} FILE | age -d -i lottery.age)"
    )
    return "\n".join(lines)
