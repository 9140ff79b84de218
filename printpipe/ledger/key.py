"""The ledger key: what lets the ledger check a VIRN without holding it.

A VIRN has 10^10 values: an unkeyed hash of one is reversed by brute force in minutes, so the
ledger stores each ticket's VIRN only as ``HMAC-SHA256(K_virn, GGGGPPPPPPTTT + VIRN)`` (the
ticket's own digits in the message, so two tickets with one VIRN store unrelated values), and
the manifest's record of each ticket (which holds the VIRN too) only as
``HMAC-SHA256(K_record, row)``, enough to tell whether a second manifest agrees.  The key is 32
random bytes in ``KEYS/ledger.key`` (0600), never in the database: a copy of the database
alone claims nothing.  Sub-keys come from HKDF-SHA256 with one ``info`` per purpose
(:meth:`LedgerKey.derive`; issue 14 seals the commitment's leaf salts under another).  The
ledger records the key's fingerprint (an HMAC of a fixed text), so the wrong key file is
refused in one line instead of answering WRONG VALIDATION NUMBER to every code.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from printpipe.ids import TicketId

VIRN_PURPOSE = b"printpipe ledger: virn"
RECORD_PURPOSE = b"printpipe ledger: manifest record"
FINGERPRINT_PURPOSE = b"printpipe ledger: key fingerprint"
REQUEST_PURPOSE = b"printpipe ledger: claim request"


class LedgerKey:
    """The ledger's HMAC key; its repr never shows it."""

    __slots__ = ("_record", "_request", "_secret", "_virn", "fingerprint", "source")

    def __init__(self, secret: bytes, *, source: Path | None = None) -> None:
        if len(secret) != 32:
            raise ValueError("a ledger key is 32 bytes")
        self._secret = secret
        self._virn = self.derive_from(secret, VIRN_PURPOSE)
        self._record = self.derive_from(secret, RECORD_PURPOSE)
        self._request = self.derive_from(secret, REQUEST_PURPOSE)
        self.fingerprint = self.derive_from(secret, FINGERPRINT_PURPOSE)[:16].hex()
        self.source = source

    @staticmethod
    def derive_from(secret: bytes, purpose: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(secret)

    def derive(self, purpose: bytes) -> bytes:
        """A 32-byte sub-key for one purpose (HKDF-SHA256, ``info`` = ``purpose``)."""
        return self.derive_from(self._secret, purpose)

    def __repr__(self) -> str:
        return f"LedgerKey(<hidden>, fingerprint={self.fingerprint})"

    def virn_hmac(self, ticket: TicketId, virn: int) -> bytes:
        message = f"{ticket.game:04d}{ticket.pack:06d}{ticket.ticket:03d}{virn:010d}".encode()
        return hmac.digest(self._virn, message, hashlib.sha256)

    def virn_hmacs(self, digits: list[bytes]) -> list[bytes]:
        """The HMACs of many ``GGGGPPPPPPTTT`` + VIRN messages (an import's batch)."""
        key = self._virn
        return [hmac.digest(key, message, hashlib.sha256) for message in digits]

    def record_hmacs(self, lines: list[bytes]) -> list[bytes]:
        key = self._record
        return [hmac.digest(key, line, hashlib.sha256) for line in lines]

    def request_hmac(self, request: bytes) -> bytes:
        """What an Idempotency-Key is bound to: a claim's body holds a VIRN, so the ledger
        keeps only an HMAC of it (an unkeyed hash of it gives the VIRN back by brute force)."""
        return hmac.digest(self._request, request, hashlib.sha256)

    @staticmethod
    def same(a: bytes, b: bytes) -> bool:
        """Constant-time comparison of two HMACs."""
        return hmac.compare_digest(a, b)


def load_ledger_key(keys_dir: Path) -> LedgerKey:
    """The ledger key in ``KEYS/ledger.key`` (0600), or a one-line PrintpipeError."""
    from printpipe.keys import LEDGER_KEY, load_ledger_key_bytes

    return LedgerKey(load_ledger_key_bytes(keys_dir), source=keys_dir / LEDGER_KEY)
