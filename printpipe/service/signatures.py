"""The service's request signatures: HTTP Message Signatures (RFC 9421) with Ed25519.

One profile, for every authenticated request (``docs/validation-service.md``):

- covered components ``("@method" "@path" "@query" "content-digest")``, in that order, then
  each of the :data:`SIGNED_FIELDS` the request carries (``idempotency-key``: a claim's key is
  signed with it); the body's ``Content-Digest`` is ``sha-256`` alone (RFC 9530), present even
  for an empty body;
- parameters ``created`` (UNIX seconds), ``keyid``, ``alg="ed25519"`` and ``nonce`` (16 to 64
  characters among ``A-Z a-z 0-9 - _ = + /``), all required; label ``sig1``;
- ``keyid`` is the terminal's key id: the RFC 7638 JWK thumbprint of its Ed25519 public key
  (base64url SHA-256 of ``{"crv":"Ed25519","kty":"OKP","x":...}``), so a key file alone says
  which registered terminal signs with it;
- a request whose ``created`` is more than :data:`MAX_SKEW_S` seconds from the server's clock,
  in either direction, is refused; its nonce is remembered long enough that a replay within
  that window is refused too (by the ledger, shared by every worker).

The signature base, parsing and verification are the ``http-message-signatures`` library's
(a maintained RFC 9421 implementation); this module fixes the profile and adapts messages.  One
shortcut: a request whose three signature fields are each one line written exactly as the
profile's own signer writes them has a signature base that is those lines themselves (RFC 9421
section 2.5), so it is checked without the library's generic structured-field parsing (two
thirds of a verification's cost).  The shortcut only accepts: whatever it does not accept goes
through the library, which accepts or refuses it as before.  That canonical form (which
requests are in it, their ``@signature-params`` and their signature base) has one owner,
:func:`_canonical`: the signer writes what it returns, the verifier's shortcut accepts only a
request whose lines are what it returns.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import http_sf
from cryptography.exceptions import InvalidSignature as CryptographyInvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from http_message_signatures import (
    HTTPMessageSigner,
    HTTPMessageVerifier,
    HTTPSignatureKeyResolver,
    InvalidSignature,
    algorithms,
)
from http_message_signatures.exceptions import HTTPMessageSignaturesException

from printpipe.errors import PrintpipeError

COVERED = ("@method", "@path", "@query", "content-digest")
SIGNED_FIELDS = ("idempotency-key",)
"""Header fields a request must sign when it carries them (after :data:`COVERED`, in order)."""
_SIGNATURE_FIELDS = frozenset({"signature", "signature-input", "content-digest"})
"""The header fields the profile always reads (the verifier normalises every field given)."""
LABEL = "sig1"
MAX_SKEW_S = 60
NONCE_RULE = re.compile(r"[A-Za-z0-9_=+/-]{16,64}")
_KEYID = re.compile(r'keyid="([^"\\]{1,128})"')
_CANONICAL_INPUT = re.compile(
    r'sig1=(\([^()]*\);created=([0-9]{1,15});keyid="([A-Za-z0-9_-]{1,128})";alg="ed25519";'
    r'nonce="([A-Za-z0-9_=+/-]{16,64})")'
)
"""A Signature-Input line of the shape :class:`RequestSigner` writes, read into its
``@signature-params`` and their values; the verifier's shortcut then asks :func:`_canonical`
for the parameters those values make and accepts the line only if it is them, byte for byte."""
_CANONICAL_SIGNATURE = re.compile(r"sig1=:([A-Za-z0-9+/]{86}==):")
_CANONICAL_DIGEST = re.compile(r"sha-256=:([A-Za-z0-9+/]{43}=):")
_CANONICAL_PATH = re.compile(r"/[A-Za-z0-9._~/-]*")
_CANONICAL_QUERY = re.compile(r"[A-Za-z0-9._~=&%+-]*")
_CANONICAL_VALUE = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?")
"""A signed field's value the shortcut takes as is: visible ASCII, no outer spaces."""


def accept_signature(*, idempotency_key: bool = False) -> str:
    """The ``Accept-Signature`` field of a 401 (RFC 9421 section 5.1): the signature the
    profile asks for."""
    covered = _inner_list((*COVERED, *(SIGNED_FIELDS if idempotency_key else ())))
    return f'{LABEL}=({covered});alg="ed25519";created;nonce'


def _inner_list(components: Iterable[str]) -> str:
    """Component ids as an Inner List's items (RFC 8941): quoted, one space apart."""
    return " ".join(f'"{c}"' for c in components)


def _covered_for(fields: Iterable[str]) -> list[str]:
    """The components a request carrying header fields ``fields`` must sign, in order."""
    present = {name.lower() for name in fields}
    return [*COVERED, *(f for f in SIGNED_FIELDS if f in present)]


def key_id_of(public_key: Ed25519PublicKey) -> str:
    """The RFC 7638 JWK thumbprint of an Ed25519 public key: a terminal's ``keyid``."""
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    jwk = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"))
    digest = hashlib.sha256(jwk.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def raw_public_key(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


@dataclass
class Message:
    """A request as the library reads it: method, absolute URL, header fields."""

    method: str
    url: str
    headers: Any


class _FieldLines:
    """Header fields of an incoming request, read-only, in wire order."""

    def __init__(self, fields: Iterable[tuple[str, str]]) -> None:
        self._fields = list(fields)

    def items(self) -> list[tuple[str, str]]:
        return self._fields

    def __iter__(self) -> Any:
        return iter(dict.fromkeys(name for name, _ in self._fields))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n.lower() == name.lower() for n, _ in self._fields)


class _OneKey(HTTPSignatureKeyResolver):
    def __init__(self, private: Ed25519PrivateKey | None = None) -> None:
        self.private = private
        self.public: dict[str, Ed25519PublicKey] = {}

    def resolve_private_key(self, key_id: str) -> Ed25519PrivateKey:
        assert self.private is not None
        return self.private

    def resolve_public_key(self, key_id: str) -> Ed25519PublicKey | None:
        return self.public.get(key_id)


# -- the terminal's side ------------------------------------------------------------------------


class RequestSigner:
    """Signs a terminal's requests with its Ed25519 key (``keyid``: :func:`key_id_of`)."""

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self.key_id = key_id_of(private_key.public_key())
        self._private = private_key
        self._signer = HTTPMessageSigner(
            signature_algorithm=algorithms.ED25519, key_resolver=_OneKey(private_key)
        )

    def headers(
        self,
        method: str,
        url: str,
        body: bytes,
        *,
        fields: dict[str, str] | None = None,
        created: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        """The Content-Digest, Signature-Input and Signature headers for one request, with the
        header ``fields`` given (e.g. ``Idempotency-Key``), signed when the profile says so.

        A request in the profile's canonical form (:func:`_canonical`'s: a plain path, query
        and signed values) has its signature base written here, as the verifier's shortcut
        reads it (a tenth of the library's cost); any other goes through the library.  Both
        write the same bytes (Ed25519 signatures are deterministic)."""
        fields = dict(fields or {})
        created = int(created if created is not None else time.time())
        nonce = nonce or secrets.token_urlsafe(18)
        canonical = self._canonical_headers(method, url, body, fields, created, nonce)
        if canonical is not None:
            return canonical
        return self._library_headers(method, url, body, fields, created, nonce)

    def _library_headers(
        self, method: str, url: str, body: bytes, fields: dict[str, str], created: int, nonce: str
    ) -> dict[str, str]:
        message = Message(method, url, dict(fields))
        self._signer.sign(
            message,
            key_id=self.key_id,
            created=datetime.fromtimestamp(created, UTC),
            nonce=nonce,
            label=LABEL,
            covered_component_ids=_covered_for(fields),
            body=body,
        )
        return dict(message.headers)

    def _canonical_headers(
        self, method: str, url: str, body: bytes, fields: dict[str, str], created: int, nonce: str
    ) -> dict[str, str] | None:
        """:meth:`headers` without the library, or None (not in the canonical form)."""
        target = urlsplit(url)
        if target.fragment or ("?" in url and not target.query):
            return None  # an empty query or a fragment: the library's business
        names = {name.lower(): name for name in fields}
        if len(names) != len(fields) or names.keys() & _SIGNATURE_FIELDS:
            return None
        extra = [(f, fields[names[f]]) for f in SIGNED_FIELDS if f in names]
        digest = f"sha-256=:{base64.b64encode(hashlib.sha256(body).digest()).decode()}:"
        canonical = _canonical(method, target.path, target.query, digest, extra,
                               created=created, key_id=self.key_id, nonce=nonce)  # fmt: skip
        if canonical is None:
            return None
        params, base = canonical
        signature = base64.b64encode(self._private.sign(base)).decode()
        return {**fields, "Content-Digest": digest, "Signature-Input": f"{LABEL}={params}",
                "Signature": f"{LABEL}=:{signature}:"}  # fmt: skip


def generate_terminal_key(path: Path) -> str:
    """A new Ed25519 key pair for a terminal: ``PATH`` (private, PEM, 0600, never overwritten)
    and ``PATH.pub`` (public, PEM); its key id."""
    from printpipe.keys import _public_pem, _write_private

    key = Ed25519PrivateKey.generate()
    public = Path(f"{path}.pub")
    for target in (path, public):
        if target.exists():
            raise PrintpipeError(f"{target} already exists: keys are never overwritten")
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    try:
        _write_private(path, pem)
        _write_private(public, _public_pem(key))
    except OSError as exc:
        raise PrintpipeError(f"cannot write {path}: {exc.strerror}") from None
    return key_id_of(key.public_key())


def load_terminal_key(path: Path) -> Ed25519PrivateKey:
    from printpipe.keys import load_signing_key

    return load_signing_key(
        path.parent, path.name, create_with=f"create it: printpipe terminal keygen {path}"
    )


# -- the server's side --------------------------------------------------------------------------


class Unauthorized(PrintpipeError):
    """A request that is not signed as the profile says, or by no active terminal (401)."""


class _Verifier(HTTPMessageVerifier):
    max_clock_skew = timedelta(seconds=MAX_SKEW_S)

    def validate_created_and_expires(self, sig_input: Any, max_age: Any = None) -> None:
        """The library's checks, the profile's age first in its own words: the library's
        (``max_age`` 0 plus the skew) would say "exceeds maximum allowable age 0:00:00"."""
        created = sig_input.params.get("created")
        if isinstance(created, int) and created < time.time() - MAX_SKEW_S:
            raise InvalidSignature(
                f'Signature "created" is more than {MAX_SKEW_S} s in the past (the terminal\'s '
                f"clock and the server's must agree within {MAX_SKEW_S} s)"
            )
        super().validate_created_and_expires(sig_input, max_age=max_age)


@dataclass
class Verified:
    """A request whose signature verifies: who signed it, and its nonce."""

    key_id: str
    nonce: str
    created: int
    extra: dict[str, Any] = field(default_factory=dict)


def key_id_claimed(headers: Iterable[tuple[str, str]]) -> str | None:
    """The ``keyid`` a request's Signature-Input names (unverified), to look its key up."""
    for name, value in headers:
        if name.lower() == "signature-input":
            match = _KEYID.search(value)
            return match.group(1) if match else None
    return None


def verify_request(
    *,
    method: str,
    path: str,
    query: str = "",
    headers: list[tuple[str, str]],
    body: bytes,
    public_key: Callable[[str], Ed25519PublicKey | None],
) -> Verified:
    """Check a request against the profile; raises :class:`Unauthorized` with a one-line
    reason.  ``query``: the request's query string, without ``?``; ``public_key(key_id)``:
    the active terminal's key, or None."""
    if not any(name.lower() == "signature" for name, _ in headers):
        raise Unauthorized("unsigned request: Signature and Signature-Input required (RFC 9421)")
    shortcut = _verify_canonical(
        method=method, path=path, query=query, headers=headers, body=body, public_key=public_key
    )
    if shortcut is not None:
        return shortcut
    return _verify_by_library(
        method=method, path=path, query=query, headers=headers, body=body, public_key=public_key
    )


def _digest_algorithms(headers: list[tuple[str, str]]) -> set[str]:
    value = ", ".join(v for n, v in headers if n.lower() == "content-digest")
    try:
        parsed = http_sf.parse(value.encode("latin-1"), tltype="dictionary")
    except Exception:  # not a Dictionary: the library says why
        return set()
    return set(parsed) if isinstance(parsed, dict) else set()


def _verify_by_library(
    *,
    method: str,
    path: str,
    query: str = "",
    headers: list[tuple[str, str]],
    body: bytes,
    public_key: Callable[[str], Ed25519PublicKey | None],
) -> Verified:
    """:func:`verify_request` through the library alone (the reference)."""
    if _digest_algorithms(headers) - {"sha-256"}:
        raise Unauthorized("signature refused: Content-Digest must be sha-256 alone (RFC 9530)")
    resolver = _OneKey()
    key_id = key_id_claimed(headers)
    if key_id is None:
        raise Unauthorized("the signature names no keyid")
    key = public_key(key_id)
    if key is None:
        raise Unauthorized("no active terminal has this signature's key (unknown or revoked)")
    resolver.public[key_id] = key
    verifier = _Verifier(signature_algorithm=algorithms.ED25519, key_resolver=resolver)
    read = _SIGNATURE_FIELDS.union(SIGNED_FIELDS)
    signed = [(n, v) for n, v in headers if n.lower() in read]
    url = "http://printpipe" + path + (f"?{query}" if query else "")
    message = Message(method, url, _FieldLines(signed))
    try:
        # coverage is checked below, once (the library's require_components re-parses the
        # component list several times a request: half the cost of a verification)
        results = verifier.verify(message, max_age=timedelta(0), body=body)
    except (InvalidSignature, HTTPMessageSignaturesException) as exc:
        reason = " ".join(str(exc).split())[:200] or "invalid signature"
        raise Unauthorized(f"signature refused: {reason}") from None
    except Exception:  # a header the library's parser chokes on: still a bad signature
        raise Unauthorized("signature refused: malformed signature headers") from None
    if len(results) != 1:
        raise Unauthorized("exactly one signature expected")
    params = results[0].parameters
    nonce, created = params.get("nonce"), params.get("created")
    if params.get("keyid") != key_id:
        raise Unauthorized("the signature names no keyid")
    if params.get("alg") != "ed25519":
        raise Unauthorized('signature refused: alg="ed25519" required')
    if not isinstance(nonce, str) or NONCE_RULE.fullmatch(nonce) is None:
        raise Unauthorized("signature refused: a nonce of 16 to 64 characters is required")
    covered = _covered_for(n for n, _ in headers)
    if list(results[0].covered_components) != [*(f'"{c}"' for c in covered), '"@signature-params"']:
        raise Unauthorized(f"signature refused: it must cover ({_inner_list(covered)})")
    assert isinstance(created, int)
    return Verified(key_id, nonce, created)


def _verify_canonical(
    *,
    method: str,
    path: str,
    query: str = "",
    headers: list[tuple[str, str]],
    body: bytes,
    public_key: Callable[[str], Ed25519PublicKey | None],
    now: float | None = None,
) -> Verified | None:
    """The request verified without the generic parser, or None: not in the profile's
    canonical form, or not valid (the library then decides, and says why).

    Canonical: one line each of Signature-Input, Signature and Content-Digest (``sha-256``
    only), and a request :func:`_canonical` takes, whose Signature-Input is the parameters it
    writes.  Then its signature base is :func:`_canonical`'s, and every check the library makes
    on a request of the profile is made here: the digest is the body's, ``created`` is within
    :data:`MAX_SKEW_S` of the clock, the key is an active terminal's, the Ed25519 signature
    verifies.
    """
    found: dict[str, str] = {}
    for name, value in headers:
        name = name.lower()
        if name in _SIGNATURE_FIELDS or name in SIGNED_FIELDS:
            if name in found:
                return None  # several lines of one field: the library combines them
            found[name] = value.strip()
    extra = [f for f in SIGNED_FIELDS if f in found]
    if len(found) != len(_SIGNATURE_FIELDS) + len(extra):
        return None
    signature_input = _CANONICAL_INPUT.fullmatch(found["signature-input"])
    signature = _CANONICAL_SIGNATURE.fullmatch(found["signature"])
    digest = _CANONICAL_DIGEST.fullmatch(found["content-digest"])
    if signature_input is None or signature is None or digest is None:
        return None
    params, created_text, key_id, nonce = signature_input.groups()
    created = int(created_text)
    canonical = _canonical(method, path, query, found["content-digest"],
                           [(f, found[f]) for f in extra], created=created, key_id=key_id,
                           nonce=nonce)  # fmt: skip
    if canonical is None or canonical[0] != params:
        return None
    now = time.time() if now is None else now
    if not now - MAX_SKEW_S <= created <= now + MAX_SKEW_S:
        return None
    if not hmac.compare_digest(base64.b64decode(digest[1]), hashlib.sha256(body).digest()):
        return None
    key = public_key(key_id)
    if key is None:
        return None
    try:
        key.verify(base64.b64decode(signature[1]), canonical[1])
    except CryptographyInvalidSignature:
        return None
    return Verified(key_id, nonce, created)


def _canonical(
    method: str,
    path: str,
    query: str,
    digest: str,
    extra: list[tuple[str, str]],
    *,
    created: int,
    key_id: str,
    nonce: str,
) -> tuple[str, bytes] | None:
    """A request in the profile's canonical form: its ``@signature-params`` (the
    Signature-Input line after ``sig1=``) and its signature base; or None, a request not in
    that form (the library's, to sign or to verify).

    The one owner of the canonical form: the signer writes these bytes, the verifier's shortcut
    accepts only a request whose lines are these.  Canonical: an upper-case method, a plain path
    and query, signed values (``extra``, the :data:`SIGNED_FIELDS` the request carries, in that
    order) of visible ASCII without outer spaces, a nonce of :data:`NONCE_RULE`, ``created``
    positive.  The parameters are the inner list's own serialisation (no escapes, no leading
    zeros); the base is RFC 9421 section 2.5's: one line a covered component, in the profile's
    order, then the signature parameters.
    """
    if not (method.isascii() and method.isalpha() and method.isupper()) or created < 1:
        return None
    if _CANONICAL_PATH.fullmatch(path) is None or _CANONICAL_QUERY.fullmatch(query) is None:
        return None
    if NONCE_RULE.fullmatch(nonce) is None:
        return None
    if any(_CANONICAL_VALUE.fullmatch(value) is None for _, value in extra):
        return None
    covered = _inner_list([*COVERED, *(name for name, _ in extra)])
    params = f'({covered});created={created};keyid="{key_id}";alg="ed25519";nonce="{nonce}"'
    lines = [f'"@method": {method}', f'"@path": {path}', f'"@query": ?{query}',
             f'"content-digest": {digest}', *(f'"{name}": {value}' for name, value in extra),
             f'"@signature-params": {params}']  # fmt: skip
    return params, "\n".join(lines).encode("ascii")


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    """A terminal's key as the ledger stores it (the 32 raw bytes)."""
    return Ed25519PublicKey.from_public_bytes(raw)


__all__ = [
    "COVERED",
    "MAX_SKEW_S",
    "SIGNED_FIELDS",
    "RequestSigner",
    "Unauthorized",
    "accept_signature",
    "generate_terminal_key",
    "key_id_of",
    "load_terminal_key",
    "verify_request",
]
