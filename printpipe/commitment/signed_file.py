"""The lottery's signed files (a closed block's reveal, the prizes-remaining report): one layout.

Such a file opens with its format's name on a line, then its header as one line of canonical
JSON, then ``signature `` and the lottery's Ed25519 signature (hex) of ``FORMAT lottery\\n``
followed by the header line, then its body.  The signed bytes name the format, so that a
signature of one kind of file never passes for another.  Both kinds are read by anyone, from
an untrusted copy: the head is read with bounded lines and checked before any of the body.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.commitment.strict import Malformed, exact_object, hex_bytes, strict_json
from printpipe.errors import PrintpipeError

_SIGNATURE_PREFIX = b"signature "
_SIGNATURE_HEX = 128


@dataclass(frozen=True)
class SignedFileFormat:
    """One kind of lottery-signed file: its format's name, what its errors call it, and the
    keys its header holds, exactly."""

    name: str
    """The format's name and version, the file's first line (``printpipe-reveal/1``)."""
    what: str
    """How a message names such a file (``reveal``, ``prizes-remaining report``)."""
    header_keys: frozenset[str]
    max_header_bytes: int

    def refuse(self, path: Path, problem: str) -> PrintpipeError:
        """The one line that refuses the file at ``path``."""
        return PrintpipeError(f"{self.what} {path} refused: {problem}")

    def signed_bytes(self, header_line: bytes) -> bytes:
        """What the lottery signs: the format's name and the header line."""
        return f"{self.name} lottery\n".encode() + header_line

    def write_head(
        self, handle: BinaryIO, header_line: bytes, *, signing_key: Ed25519PrivateKey
    ) -> None:
        """Write the format line, the header line and the lottery's signature of them."""
        signature = signing_key.sign(self.signed_bytes(header_line))
        handle.write(f"{self.name}\n".encode() + header_line + b"\n")
        handle.write(_SIGNATURE_PREFIX + signature.hex().encode() + b"\n")

    @contextmanager
    def open_verified(
        self, path: Path, *, lottery_key: Ed25519PublicKey
    ) -> Iterator[tuple[dict[str, Any], BinaryIO]]:
        """Open ``path``, check its head and the lottery's signature of it, and give its
        header and the file, positioned at the body's first byte."""
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as exc:
            raise PrintpipeError(f"cannot read {self.what} {path}: {exc.strerror}") from None
        with handle:
            header, header_line, signature = self._read_head(handle, path)
            try:
                lottery_key.verify(signature, self.signed_bytes(header_line))
            except InvalidSignature:
                raise self.refuse(
                    path, "the lottery's signature of its header does not verify"
                ) from None
            yield header, handle

    def _read_head(self, handle: BinaryIO, path: Path) -> tuple[dict[str, Any], bytes, bytes]:
        magic = f"{self.name}\n".encode()
        if handle.read(len(magic)) != magic:
            raise self.refuse(path, f"it is not a {self.name} file")
        header_line = handle.readline(self.max_header_bytes)
        signature_line = handle.readline(len(_SIGNATURE_PREFIX) + _SIGNATURE_HEX + 2)
        if not header_line.endswith(b"\n") or not signature_line.startswith(_SIGNATURE_PREFIX):
            raise self.refuse(path, "its header or signature line is damaged")
        try:
            header = exact_object(strict_json(header_line), self.header_keys, "its header")
            signature = hex_bytes(
                signature_line[len(_SIGNATURE_PREFIX) :].rstrip(b"\n").decode(),
                _SIGNATURE_HEX // 2,
                "its signature",
            )
        except Malformed as exc:
            raise self.refuse(path, str(exc)) from None
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise self.refuse(path, "its header is not JSON") from None
        return header, header_line.rstrip(b"\n"), signature
