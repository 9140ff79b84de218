"""The block store: a folder of columns, readable by pack range without loading the block.

Layout of ``BLOCK_DIR`` (format ``printpipe-block/2``)::

    summary.json    human-readable: game, block, pack range, counts, parameters, commitments
                    (of both secrets, and the root of the block's tree), and the SHA-256,
                    dtype and shape of every column file
    summary.sig     Ed25519 signature of summary.json's exact bytes by the producer
    tier.npy        uint8 (n,)         prize tier, 0 = losing (amounts in summary.json)
    variant.npy     uint8 (n,)         variant index (names in summary.json)
    symbols.npy     uint8 (n, width)   symbol indices (codes in summary.json), fields in order
    virn.npy        uint64 (n,)        validation number, 10 digits
    salt.npy        uint8 (n, 32)      the ticket's leaf salt (printpipe.commitment.leaves)

Row ``i`` is ticket ``i % pack_size`` of pack ``first_pack + i // pack_size``.  Columns are
standard ``.npy`` files, memory-mapped on read, written front to back with plain writes: a
writable memory map would keep every row written in this process's memory (its dirty pages)
until the end, 80 MB for a block.  A store is written in a temporary folder and renamed into
place when complete: a folder with a ``summary.json`` is a finished one.
The columns are every ticket's outcome: the folder is 0700 from its creation and every file
in it 0600 (``atomic.make_private_dir``, ``atomic.make_tree_private``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.atomic import make_private_dir, make_tree_private, partial_path, sha256_file
from printpipe.block.summary import FORMAT, BlockSummary, ColumnFile
from printpipe.block.tickets import PackRange, Tickets
from printpipe.errors import PrintpipeError
from printpipe.ids import printed_pack_number
from printpipe.rng import LEAF_SALT_SIZE

__all__ = ["FORMAT", "BlockStore", "StoreWriter"]

SUMMARY = "summary.json"
SIGNATURE = "summary.sig"
COLUMN_DTYPES = {
    "tier": "uint8",
    "variant": "uint8",
    "symbols": "uint8",
    "virn": "uint64",
    "salt": "uint8",
}
SALT = "salt"
"""The column of leaf salts: written with the tickets, read apart (no stage but the
commitment's needs them)."""


def column_file(column: str) -> str:
    return f"{column}.npy"


class _ColumnWriter:
    """One column file being written: the ``.npy`` header of its final shape, then its rows in
    order, appended as they come."""

    def __init__(self, path: Path, dtype: str, shape: tuple[int, ...]) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.rows = 0
        self.file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        np.lib.format.write_array_header_1_0(
            self.file,
            {
                "descr": np.lib.format.dtype_to_descr(self.dtype),
                "fortran_order": False,
                "shape": shape,
            },
        )

    def append(self, values: np.ndarray) -> None:
        values = np.asarray(values)
        if values.shape[1:] != self.shape[1:] or self.rows + len(values) > self.shape[0]:
            raise ValueError(f"rows of shape {values.shape} do not fit a column {self.shape}")
        self.file.write(np.ascontiguousarray(values.astype(self.dtype, copy=False)).data)
        self.rows += len(values)

    def close(self) -> None:
        self.file.close()


class StoreWriter:
    """Writes a store into a temporary sibling folder; ``commit`` renames it into place."""

    def __init__(self, path: Path, tickets: int, symbol_width: int, overwrite: bool) -> None:
        self.path = path
        if path.exists() and not overwrite:
            raise PrintpipeError(f"{path} already exists (use --force to replace it)")
        shapes = {
            "tier": (tickets,),
            "variant": (tickets,),
            "symbols": (tickets, symbol_width),
            "virn": (tickets,),
            SALT: (tickets, LEAF_SALT_SIZE),
        }
        try:
            make_private_dir(path.parent)
            self.tmp = partial_path(path)
            shutil.rmtree(self.tmp, ignore_errors=True)
        except OSError as exc:
            raise PrintpipeError(f"cannot write to {path.parent}: {exc.strerror}") from None
        self.tickets = tickets
        self.columns: dict[str, _ColumnWriter] = {}
        try:  # from the folder's creation on, anything (Ctrl-C too) removes it
            make_private_dir(self.tmp)
            for name, shape in shapes.items():
                self.columns[name] = _ColumnWriter(
                    self.tmp / column_file(name), COLUMN_DTYPES[name], shape
                )
        except OSError as exc:
            self.abort()
            raise PrintpipeError(f"cannot write to {path.parent}: {exc.strerror}") from None
        except BaseException:  # e.g. Ctrl-C while opening: leave no partial folder
            self.abort()
            raise
        self.rows = 0

    def append(self, tickets: Tickets, salts: np.ndarray) -> None:
        for name in Tickets.COLUMNS:
            self.columns[name].append(getattr(tickets, name))
        self.columns[SALT].append(salts)
        self.rows += len(tickets)

    def commit(
        self,
        summary: BlockSummary,
        signing_key: Ed25519PrivateKey,
        before_rename: Callable[[Path], None] | None = None,
    ) -> None:
        """Flush the columns, write the signed summary, and rename the folder into place.

        ``before_rename`` gets the finished temporary folder, to add files that are not part
        of the summary (the block manifest), so that they too appear only with the store.
        """
        if any(column.rows != self.tickets for column in self.columns.values()):
            raise RuntimeError(f"store has {self.rows} rows of {self.tickets}")
        files = {}
        for name, column in self.columns.items():
            column.close()
            files[column_file(name)] = ColumnFile(
                sha256=sha256_file(self.tmp / column_file(name)), dtype=COLUMN_DTYPES[name]
            )
        self.columns = {}
        data = summary.with_files(files).to_json()
        (self.tmp / SUMMARY).write_bytes(data)
        (self.tmp / SIGNATURE).write_bytes(signing_key.sign(data).hex().encode() + b"\n")
        if before_rename is not None:
            before_rename(self.tmp)
        make_tree_private(self.tmp)
        for entry in self.tmp.iterdir():
            with open(entry, "rb") as handle:
                os.fsync(handle.fileno())
        if self.path.exists():
            shutil.rmtree(self.path)
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        for column in self.columns.values():
            column.close()
        self.columns = {}
        shutil.rmtree(self.tmp, ignore_errors=True)


@dataclass(frozen=True)
class BlockStore:
    """A finished store, opened for reading; columns are memory-mapped, not loaded."""

    path: Path
    summary: BlockSummary
    summary_bytes: bytes

    @staticmethod
    def open(path: Path) -> BlockStore:
        summary_path = path / SUMMARY
        if not path.is_dir():
            raise PrintpipeError(f"{path} is not a block store folder")
        try:
            data = summary_path.read_bytes()
        except FileNotFoundError:
            raise PrintpipeError(f"{path} is not a finished block store (no {SUMMARY})") from None
        except OSError as exc:
            raise PrintpipeError(f"{summary_path} is unreadable: {exc}") from None
        return BlockStore(path, BlockSummary.from_json(data, str(summary_path)), data)

    @property
    def game_id(self) -> str:
        return self.summary.game.id

    @property
    def block(self) -> int:
        return self.summary.block

    @property
    def pack_range(self) -> PackRange:
        return self.summary.packs.range

    @property
    def pack_size(self) -> int:
        return self.summary.parameters.pack_size

    def printed_pack(self, block_pack: int) -> int:
        """The pack number printed on tickets (unique across the game's blocks) of a
        block-relative pack."""
        return printed_pack_number(
            block=self.block,
            block_pack=block_pack,
            packs_per_block=self.summary.parameters.packs_per_block,
        )

    def packs_header(self, packs: PackRange) -> dict[str, int]:
        """How a manifest's and a unit feed's header name ``packs``: block-relative, as
        printed, and the pack size."""
        first_number = self.printed_pack(packs.first)
        return {
            "first": packs.first,
            "last": packs.last,
            "first_pack_number": first_number,
            "last_pack_number": first_number + packs.count - 1,
            "pack_size": self.pack_size,
        }

    def missing_files(self) -> list[str]:
        """The store's files that are not there: column files the summary lists, and the
        summary's signature."""
        names = [*self.summary.files, SIGNATURE]
        return [name for name in names if not (self.path / name).is_file()]

    def changed_files(self) -> list[str]:
        """Column files that are there but whose bytes differ from the SHA-256 the summary
        records (a missing one is :meth:`missing_files`')."""
        changed = []
        for name, meta in self.summary.files.items():
            file = self.path / name
            if file.is_file() and sha256_file(file) != meta.sha256:
                changed.append(name)
        return changed

    def _missing(self, name: str) -> PrintpipeError:
        return PrintpipeError(
            f"block store {self.path} is incomplete: {name} is missing (a store is used whole, "
            "as generate wrote it)"
        )

    def verify_signature(self, public_key: Ed25519PublicKey) -> bool:
        try:
            signature = bytes.fromhex((self.path / SIGNATURE).read_text().strip())
            public_key.verify(signature, self.summary_bytes)
        except (OSError, ValueError, InvalidSignature):
            return False
        return True

    def check_intact(self, public_key: Ed25519PublicKey | None = None) -> None:
        """Refuse a store whose files or signature do not match, naming what changed."""
        self.check_columns()
        if public_key is not None:
            self.check_signature(public_key)

    def check_columns(self) -> None:
        """Refuse a store whose column files differ from the SHA-256 its summary records (each
        file read once, hashed a megabyte at a time: hashlib releases the GIL meanwhile)."""
        missing = [name for name in self.missing_files() if name != SIGNATURE]
        if missing:
            raise self._missing(missing[0])
        changed = self.changed_files()
        if changed:
            raise PrintpipeError(
                f"block store {self.path} is tampered or damaged: {changed[0]} "
                "does not match the SHA-256 in its summary"
            )

    def check_signature(self, public_key: Ed25519PublicKey) -> None:
        """Refuse a store whose summary the producer did not sign."""
        if not (self.path / SIGNATURE).is_file():
            raise self._missing(SIGNATURE)
        if not self.verify_signature(public_key):
            raise PrintpipeError(
                f"block store {self.path}: the summary signature does not verify "
                "with the producer's key"
            )

    def read(self, packs: PackRange | None = None) -> Tickets:
        """Tickets of the given packs (block-relative, within the store), memory-mapped."""
        rows = self._rows(packs)
        return Tickets(**{name: self._column(name)[rows] for name in Tickets.COLUMNS})

    def read_salts(self, packs: PackRange | None = None) -> np.ndarray:
        """The leaf salts of the given packs' tickets, ``(tickets, 32)`` uint8, memory-mapped."""
        return self._column(SALT)[self._rows(packs)]

    def _rows(self, packs: PackRange | None) -> slice:
        stored = self.pack_range
        packs = packs or stored
        if not stored.first <= packs.first <= packs.last <= stored.last:
            raise PrintpipeError(f"packs {packs} are not in the block store (it holds {stored})")
        start = (packs.first - stored.first) * self.pack_size
        return slice(start, (packs.last - stored.first + 1) * self.pack_size)

    def _column(self, name: str) -> np.ndarray:
        path = self.path / column_file(name)
        try:
            array = np.load(path, mmap_mode="r")
        except FileNotFoundError:
            raise self._missing(path.name) from None
        except (OSError, ValueError) as exc:
            raise PrintpipeError(f"{path} is unreadable: {exc}") from None
        rows = self.pack_range.count * self.pack_size
        if len(array) != rows or array.dtype != COLUMN_DTYPES[name]:
            raise PrintpipeError(f"{path} has the wrong shape or type")
        return array
