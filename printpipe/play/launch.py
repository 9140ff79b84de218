"""Launch tokens: the operator's platform opens a player's game session with a token it signs.

The platform authenticates its player, then sends them to the game server with a short-lived
token in the link's fragment (``URL/#launch=TOKEN``: never in a request line or a log); the
page posts it to ``/v1/launches``, which spends it once and sets the session cookie.

A token is a JWT (RFC 7519) signed with the platform's Ed25519 key (``alg`` ``EdDSA``, RFC
8037), the key registered in the ledger with the ``platform`` role (``printpipe terminals
add ... --role platform``), named by ``kid``, its RFC 7638 thumbprint (as the request
signatures' ``keyid``).  Its claims:

- ``sub``: the player, as the platform names them (``printpipe.ledger.check_player``);
- ``sid``: the platform's own session id (recorded in the audit log beside the game's);
- ``iat``, ``exp``: issued at and expiry (Unix seconds), at most :data:`MAX_TTL_S` apart,
  ``iat`` at most :data:`~printpipe.service.signatures.MAX_SKEW_S` ahead of the server's clock;
- ``jti``: a nonce (16 to 64 characters), spent once: it is admitted in the session's own
  transaction as a signed request's nonce is (``(kid, jti, iat)``), kept past the token's
  expiry, so a token is accepted once and never again;
- ``aud``: ``printpipe-play`` (a token of this platform for another use is refused).

Making and reading them is PyJWT's; the profile (what is required, the bounds) is checked here.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.errors import PrintpipeError
from printpipe.service.signatures import MAX_SKEW_S, NONCE_RULE, key_id_of

AUDIENCE = "printpipe-play"
ALGORITHM = "EdDSA"
DEFAULT_TTL_S = 60
MAX_TTL_S = 60
"""A token lives at most this long after its ``iat``, so it expires well before its nonce is
forgotten (150 s after ``iat``: ``printpipe.ledger`` keeps nonces that long)."""
SESSION_RULE = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
TOKEN_RULE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
MAX_TOKEN_CHARS = 2048
FRAGMENT = "launch"


class LaunchRefused(PrintpipeError):
    """A launch token that is not the profile's, or not valid now (401)."""


@dataclass(frozen=True, slots=True)
class Launch:
    """A launch token's verified claims."""

    key_id: str
    player: str
    session: str
    issued_at: int
    expires_at: int
    nonce: str


def make_launch_token(
    key: Ed25519PrivateKey,
    *,
    player: str,
    session: str | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    now: float | None = None,
) -> str:
    """A launch token for ``player`` (a new platform session id unless given)."""
    from printpipe.ledger import check_player

    check_player(player)
    if not 1 <= ttl_s <= MAX_TTL_S:
        raise PrintpipeError(f"a launch token lives 1 to {MAX_TTL_S} s")
    session = session or secrets.token_urlsafe(12)
    if SESSION_RULE.fullmatch(session) is None:
        raise PrintpipeError("a platform session id is 1 to 128 of A-Z a-z 0-9 . _ : @ -")
    issued = int(time.time() if now is None else now)
    claims = {
        "sub": player,
        "sid": session,
        "iat": issued,
        "exp": issued + ttl_s,
        "jti": secrets.token_urlsafe(18),
        "aud": AUDIENCE,
    }
    kid = key_id_of(key.public_key())
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": kid, "typ": "JWT"})


def launch_link(url: str, token: str) -> str:
    return f"{url.rstrip('/')}/#{FRAGMENT}={token}"


def token_key_id(token: str) -> str:
    """The ``kid`` a token names (unverified), to look its key up."""
    if len(token) > MAX_TOKEN_CHARS or TOKEN_RULE.fullmatch(token) is None:
        raise LaunchRefused("not a launch token (a JWT)")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise LaunchRefused("not a launch token (a JWT)") from None
    kid = header.get("kid")
    if header.get("alg") != ALGORITHM or not isinstance(kid, str) or not 1 <= len(kid) <= 128:
        raise LaunchRefused(f'a launch token is signed with alg "{ALGORITHM}" and names its kid')
    return kid


def read_launch_token(
    token: str,
    *,
    public_key: Callable[[str], Ed25519PublicKey | None],
    now: float | None = None,
) -> Launch:
    """Verify a launch token (``public_key(kid)``: the active platform's key, or None);
    :class:`LaunchRefused` in one line if it is not valid now."""
    from printpipe.errors import InvalidInput
    from printpipe.ledger import check_player

    kid = token_key_id(token)
    key = public_key(kid)
    if key is None:
        raise LaunchRefused("no active platform has this token's key (unknown or revoked)")
    moment = time.time() if now is None else now
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            # the times are checked below, against the clock given
            options={"require": ["sub", "sid", "iat", "exp", "jti", "aud"], "verify_iat": False,
                     "verify_exp": False, "verify_nbf": False},
        )  # fmt: skip
    except jwt.PyJWTError as exc:
        raise LaunchRefused(f"launch token refused: {' '.join(str(exc).split())[:160]}") from None
    issued, expires = claims["iat"], claims["exp"]
    if type(issued) is not int or type(expires) is not int:
        raise LaunchRefused("a launch token's iat and exp are whole seconds")
    if issued > moment + MAX_SKEW_S:
        raise LaunchRefused(f"a launch token's iat is at most {MAX_SKEW_S} s ahead of the clock")
    if expires <= moment:
        raise LaunchRefused("this launch token has expired: launch the game again")
    if not 0 < expires - issued <= MAX_TTL_S:
        raise LaunchRefused(f"a launch token lives at most {MAX_TTL_S} s")
    player, session, nonce = claims["sub"], claims["sid"], claims["jti"]
    if not isinstance(session, str) or SESSION_RULE.fullmatch(session) is None:
        raise LaunchRefused("a launch token's sid is 1 to 128 of A-Z a-z 0-9 . _ : @ -")
    if not isinstance(nonce, str) or NONCE_RULE.fullmatch(nonce) is None:
        raise LaunchRefused("a launch token's jti is 16 to 64 of A-Z a-z 0-9 - _ = + /")
    try:
        check_player(player if isinstance(player, str) else "")
    except InvalidInput as exc:
        raise LaunchRefused(f"a launch token's sub: {exc}") from None
    return Launch(kid, player, session, issued, expires, nonce)
