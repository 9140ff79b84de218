"""Files that are either complete or absent: temporary name, fsync, rename.

Every output a user or a later stage relies on (press PDFs, manifests, feeds, job.json, CSVs)
is written under ``.NAME.partial-PID`` beside its final place, flushed to disk and renamed in
one step, so a file with its final name is always a finished one; a crash leaves only a
partial file, which reruns remove.  Failures become one-line errors.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from printpipe.errors import PrintpipeError

PARTIAL_GLOB = ".*.partial-*"


def partial_path(path: Path) -> Path:
    """Where ``path`` is written before it is complete."""
    return path.parent / f".{path.name}.partial-{os.getpid()}"


@contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator[BinaryIO]:
    """A binary file that appears at ``path`` only once the block exits without error."""
    tmp = partial_path(path)
    try:
        with open(tmp, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise PrintpipeError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes | str) -> None:
    with atomic_file(path) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


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
