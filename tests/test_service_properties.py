"""Property tests of the service's invariants: the RFC 9421 signature base in its canonical
form, and idempotent claims (one payment, one stored answer per key); the audit log's are in
``test_ledger_log.py``."""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import TerminalId
from printpipe.ledger.rules import PackScope
from printpipe.ledger.store import ticket_key
from printpipe.service.signatures import RequestSigner, Unauthorized, verify_request
from tests.service_helpers import build_world

KEY = Ed25519PrivateKey.generate()
SIGNER = RequestSigner(KEY)
paths = st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789-._~", min_size=1, max_size=12),
                 min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))  # fmt: skip
nonces = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", min_size=16,
                 max_size=64)  # fmt: skip


queries = st.sampled_from(["", "a=1", "x=%20&y=2", "q"])
idempotency_keys = st.none() | st.text("abcdefXYZ0123456789._:-", min_size=8, max_size=64)


def _base(method: str, path: str, query: str, digest: str, key: str | None, params: str) -> bytes:
    """RFC 9421 section 2.5, written out by hand: one line per covered component, then the
    signature parameters."""
    lines = [f'"@method": {method}', f'"@path": {path}', f'"@query": ?{query}',
             f'"content-digest": {digest}']  # fmt: skip
    if key is not None:
        lines.append(f'"idempotency-key": {key}')
    return "\n".join([*lines, f'"@signature-params": {params}']).encode()


def _url(path: str, query: str) -> str:
    return "http://t" + path + (f"?{query}" if query else "")


@settings(max_examples=150, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["GET", "POST"]), paths, queries, st.binary(max_size=300), nonces,
       idempotency_keys, st.integers(-50, 50))  # fmt: skip
def test_the_signature_covers_the_canonical_base_and_verifies_only_unchanged(
    method, path, query, body, nonce, key, skew
):
    import time

    created = int(time.time()) + skew
    extra = {"Idempotency-Key": key} if key is not None else {}
    headers = SIGNER.headers(
        method, _url(path, query), body, fields=extra, created=created, nonce=nonce
    )
    digest = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
    assert headers["Content-Digest"] == digest  # RFC 9530
    params = headers["Signature-Input"].removeprefix("sig1=")
    covered = '"@method" "@path" "@query" "content-digest"' + (
        ' "idempotency-key"' if key is not None else ""
    )
    assert params == (
        f'({covered});created={created};keyid="{SIGNER.key_id}";alg="ed25519";nonce="{nonce}"'
    )
    match = re.fullmatch(r"sig1=:(.*):", headers["Signature"])
    assert match is not None
    signature = base64.b64decode(match[1])
    base = _base(method, path, query, digest, key, params)
    KEY.public_key().verify(signature, base)  # independent
    fields = list(headers.items())
    verified = verify_request(method=method, path=path, query=query, headers=fields, body=body,
                              public_key=lambda _: KEY.public_key())  # fmt: skip
    assert (verified.key_id, verified.nonce, verified.created) == (SIGNER.key_id, nonce, created)
    for changed in (
        {"method": "PUT" if method != "PUT" else "GET"},
        {"path": path + "x"},
        {"query": query + "&z=1"},
        {"body": body + b"!"},
        {"headers": [*fields, ("Idempotency-Key", "another-key-1")] if key is None else
         [(n, v + "x" if n == "Idempotency-Key" else v) for n, v in fields]},
        {"headers": [(n, "sha-512=:" + base64.b64encode(hashlib.sha512(body).digest()).decode()
                      + ":" if n == "Content-Digest" else v) for n, v in fields]},
    ):  # fmt: skip
        request = {"method": method, "path": path, "query": query, "body": body,
                   "headers": fields, **changed}  # fmt: skip
        with pytest.raises(Unauthorized):
            verify_request(**request, public_key=lambda _: KEY.public_key())
    with pytest.raises(InvalidSignature):
        KEY.public_key().verify(signature, _base(method, path + "x", query, digest, key, params))


odd_paths = paths | st.sampled_from(["", "/", "/a%20b", "/é", "/a b", "/a;b"])
odd_queries = queries | st.sampled_from(["", "?", "a=é", "a=1#f", "a b"])
odd_fields = st.dictionaries(
    st.sampled_from(["Idempotency-Key", "idempotency-key", "X-Other", "Content-Type"]),
    st.text("abcXYZ019._:- ", min_size=0, max_size=12) | idempotency_keys.filter(bool),
    max_size=2,
)


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["GET", "POST", "get"]), odd_paths, odd_queries, st.binary(max_size=64),
       nonces | st.just("short"), odd_fields, st.integers(1, 2**33))  # fmt: skip
def test_the_signer_writes_what_the_library_writes(method, path, query, body, nonce, fields,
                                                   created):  # fmt: skip
    """The signer's own signature base (the canonical form) is the library's, byte for byte:
    the same headers, the same (deterministic) Ed25519 signature; any other request is the
    library's."""
    url = "http://t" + path + (f"?{query}" if query else "")

    def outcome(sign: Any) -> Any:
        try:
            return sign()
        except Exception as exc:  # what the library refuses to sign, the signer refuses too
            return type(exc)

    expected = outcome(lambda: SIGNER._library_headers(method, url, body, fields, created, nonce))
    assert outcome(lambda: SIGNER.headers(method, url, body, fields=fields, created=created,
                                          nonce=nonce)) == expected  # fmt: skip


@pytest.fixture(scope="module")
def idempotency_world(ledgers, game, keys_dir, tmp_path_factory):
    return build_world(game, keys_dir, ledgers.new(), tmp_path_factory.mktemp("idem"),
                       retailer_limit=150)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=1, max_size=12))
def test_a_key_replays_its_first_answer_and_a_ticket_is_paid_once(idempotency_world, operations):
    """Claims (key, body) in any order: a key's first request decides; the same body again
    replays its answer, another body is refused; no ticket is paid twice."""
    world = idempotency_world
    winners = [t for t in world.of_pack(2) if 0 < t.prize <= 150][:3]
    terminal = TerminalId("till-1")
    run = uuid.uuid4()  # keys of their own for every example
    first: dict[int, tuple[int, str]] = {}
    with Ledger(world.location, key=world.key) as book:
        from printpipe.ledger.book import IdempotentClaim
        from printpipe.service.app import render_answer

        for key_index, body_index in operations:
            key = f"{run.hex}-{key_index}"
            code = winners[body_index].code
            fingerprint = book.request_fingerprint("POST", "/v1/claims", code.encode())
            start = book.begin_claim(terminal=terminal, key=key, fingerprint=fingerprint)
            if key_index not in first:
                assert start.outcome == "proceed" and start.token is not None
                answer = book.claim(
                    code,
                    terminal=terminal,
                    scope=PackScope.of_retailer("shop-1"),
                    idempotent=IdempotentClaim("till-1", key, start.token, render_answer),
                )
                first[key_index] = (body_index, render_answer(answer)[1])
            elif first[key_index][0] == body_index:
                assert start.outcome == "replay" and start.response == first[key_index][1]
            else:
                assert start.outcome == "mismatch"
        for ticket in winners:
            paid = book.query("SELECT COUNT(*) FROM payments WHERE ticket = ?",
                              (ticket_key(ticket.ticket),))  # fmt: skip
            assert paid[0][0] <= 1


def _edit(fields: list[tuple[str, str]], data: st.DataObject) -> list[tuple[str, str]]:
    """One of the ways a request's signature fields can differ from the signer's own lines."""
    i = data.draw(st.integers(0, len(fields) - 1))
    name, value = fields[i]
    edit = data.draw(st.sampled_from(["char", "space", "duplicate", "drop", "case", "zero"]))
    if edit == "char":
        at = data.draw(st.integers(0, len(value) - 1))
        value = value[:at] + data.draw(st.sampled_from('a=;:"( )0,/')) + value[at + 1 :]
    elif edit == "space":
        at = data.draw(st.integers(0, len(value)))
        value = value[:at] + " " + value[at:]
    elif edit == "duplicate":
        return [*fields, (name, value)]
    elif edit == "drop":
        return fields[:i] + fields[i + 1 :]
    elif edit == "case":
        name = name.upper()
    else:
        value = value.replace("created=", "created=0")
    return [*fields[:i], (name, value), *fields[i + 1 :]]


@settings(max_examples=300, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["GET", "POST"]), paths, queries, st.binary(max_size=64), nonces,
       idempotency_keys, st.integers(-70, 70), st.booleans(), st.data())  # fmt: skip
def test_the_canonical_shortcut_accepts_only_what_the_library_accepts(
    method, path, query, body, nonce, key, skew, edited, data
):
    import time

    from printpipe.service.signatures import _verify_by_library, _verify_canonical

    created = int(time.time()) + skew
    extra = {"Idempotency-Key": key} if key is not None else {}
    fields = list(
        SIGNER.headers(
            method, _url(path, query), body, fields=extra, created=created, nonce=nonce
        ).items()
    )
    if edited:
        fields = _edit(fields, data)
    request = {"method": method, "path": path, "query": query, "headers": fields, "body": body,
               "public_key": lambda _: KEY.public_key()}  # fmt: skip
    shortcut = _verify_canonical(**request)
    try:
        library = _verify_by_library(**request)
    except Unauthorized:
        library = None
    if shortcut is not None:  # never accepts what the library refuses, and reads the same
        assert library == shortcut
    if not edited and abs(skew) <= 59:
        assert shortcut is not None  # the signer's own requests take the shortcut
    try:
        outcome = verify_request(**request)
    except Unauthorized:
        outcome = None
    assert outcome == library  # whichever way it went, the outcome is the library's


@given(st.sampled_from(["É", "Ü", "ПОСТ", "POST\u0130"]), st.binary(max_size=16))
def test_a_method_not_in_ascii_is_refused_without_an_error(method, body):
    """A method of letters outside ASCII (upper-case to ``str.isupper``) is not the canonical
    form: the shortcut declines it, and the verifier answers Unauthorized, never an encoding
    error (HTTP parsers refuse such a method before; the verifier does not rely on it)."""
    import time

    from printpipe.service.signatures import _verify_canonical

    fields = list(SIGNER.headers("POST", _url("/v1/claims", ""), body,
                                 created=int(time.time())).items())  # fmt: skip
    request = {"method": method, "path": "/v1/claims", "query": "", "headers": fields,
               "body": body, "public_key": lambda _: KEY.public_key()}  # fmt: skip
    assert _verify_canonical(**request) is None
    with pytest.raises(Unauthorized):
        verify_request(**request)


@given(st.integers(61, 10**6))
def test_a_signature_too_old_is_refused_saying_how_old_it_may_be(age):
    """A request signed more than MAX_SKEW_S seconds ago: 401, and the reason names the
    profile's 60 s (not the library's "maximum allowable age 0:00:00")."""
    import time

    fields = list(SIGNER.headers("POST", _url("/v1/claims", ""), b"{}",
                                 created=int(time.time()) - age).items())  # fmt: skip
    with pytest.raises(Unauthorized, match=r"more than 60 s in the past") as refused:
        verify_request(method="POST", path="/v1/claims", query="", headers=fields, body=b"{}",
                       public_key=lambda _: KEY.public_key())  # fmt: skip
    assert "0:00:00" not in str(refused.value)
