"""Files that are either complete or absent, and readable by their owner only.

Every output a user or a later stage relies on (press PDFs, manifests, feeds, job.json, CSVs)
is written under ``.NAME.partial-PID`` beside its final place, flushed to disk and renamed in
one step, so a file with its final name is always a finished one; a crash leaves only a
partial file, which reruns remove.  Failures become one-line errors.

Most of these files reveal outcomes (a press PDF images every symbol and validation code, a
CSV or a feed lists every prize), so every file is created mode 0600 from its first byte and
every folder printpipe creates is 0700, whatever the umask: the mode is set explicitly, not
left to ``umask``.  A file meant for others is made readable by the person who publishes it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from printpipe.errors import PrintpipeError

PARTIAL_GLOB = ".*.partial-*"
PRIVATE_FILE_MODE = 0o600
"""Owner read/write: every file printpipe writes (outcomes, ledgers, keys)."""
PRIVATE_DIR_MODE = 0o700
"""Owner only: every folder printpipe creates."""


def partial_path(path: Path) -> Path:
    """Where ``path`` is written before it is complete."""
    return path.parent / f".{path.name}.partial-{os.getpid()}"


def open_private(path: Path, mode: str = "wb") -> BinaryIO:
    """Create (or truncate) ``path`` for writing, mode 0600 from its first byte."""
    flags = os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | (os.O_RDWR if "+" in mode else os.O_WRONLY)
    fd = os.open(path, flags, PRIVATE_FILE_MODE)
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)  # whatever the umask, and if a leftover existed
        return cast(BinaryIO, os.fdopen(fd, mode))
    except BaseException:
        os.close(fd)
        raise


def make_private_dir(path: Path) -> None:
    """Create folder ``path`` and its missing parents, each mode 0700 whatever the umask (so
    ``printpipe-out/`` is as private as the store made in it); an existing one is kept as is."""
    for folder in reversed((path, *path.parents)):
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        os.chmod(folder, PRIVATE_DIR_MODE)


def make_tree_private(folder: Path) -> None:
    """Every file under ``folder`` 0600 and every folder 0700 (a store or a proof pack whose
    files another library wrote, before the folder is renamed into place)."""
    os.chmod(folder, PRIVATE_DIR_MODE)
    for entry in folder.rglob("*"):
        if not entry.is_symlink():
            os.chmod(entry, PRIVATE_DIR_MODE if entry.is_dir() else PRIVATE_FILE_MODE)


@contextmanager
def staged_file(path: Path, mode: str = "wb") -> Iterator[BinaryIO]:
    """A binary file under ``path``'s partial name, flushed to disk when the block exits
    without error, removed otherwise; it is not ``path`` until renamed (:func:`promote`).

    Mode 0600 (see the module's docstring); ``mode`` is ``"wb"`` or ``"w+b"``.
    """
    tmp = partial_path(path)
    try:
        with open_private(tmp, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PrintpipeError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator[BinaryIO]:
    """A binary file that appears at ``path`` only once the block exits without error.

    Mode 0600 (see the module's docstring); ``mode`` is ``"wb"`` or ``"w+b"``.
    """
    with staged_file(path, mode) as handle:
        yield handle
    try:
        promote(partial_path(path), path)
    except BaseException:
        partial_path(path).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes | str) -> None:
    with atomic_file(path) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_staged(path: Path, data: bytes) -> Path:
    """Write ``data`` complete and on disk under ``path``'s partial name, without renaming it:
    the file is finished, but it is not ``path`` until :func:`promote` says so (an export's
    chunk, rendered before its block store is proven intact).  Returns the partial name."""
    with staged_file(path) as handle:
        handle.write(data)
    return partial_path(path)


def promote(staged: Path, path: Path) -> None:
    """Rename a finished file from its partial name to ``path``, durably."""
    try:
        os.replace(staged, path)
        fsync_dir(path.parent)
    except OSError as exc:
        raise PrintpipeError(f"cannot write {path}: {exc.strerror or exc}") from None


def fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_partials(directory: Path) -> None:
    """Remove what interrupted runs left half-written in ``directory``."""
    for leftover in directory.glob(PARTIAL_GLOB):
        leftover.unlink(missing_ok=True)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class FolderLock:
    """One writer at a time for an output folder: an exclusive ``flock`` on ``.NAME.lock``
    beside it (so it can be taken before the folder exists, and leaves nothing in it).

    A second writer is refused at once in one line, never left to find the first one's partial
    files.  The lock goes with its process, however that ends; :meth:`release` also removes
    the lock file."""

    def __init__(self, folder: Path, what: str) -> None:
        import fcntl

        self.path = folder.parent / f".{folder.name}.lock"
        while True:
            try:
                make_private_dir(folder.parent)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
            except OSError as exc:
                raise PrintpipeError(f"cannot write to {folder.parent}: {exc.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise PrintpipeError(
                    f"{folder} is being written by another {what} (process {holder}): wait "
                    "for it to end, or use another folder"
                ) from None
            try:  # the file a releasing holder removed meanwhile is no lock: take the new one
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
