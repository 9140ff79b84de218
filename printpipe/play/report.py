"""``printpipe play report``: a day's sales of the online games, signed by the lottery.

The document (``printpipe-sales/1``) lists, per game, the day's plays, stakes, lots won,
credited and still pending, and the linked game's participations (the Super Jackpot's share of
each stake), with each block's plays; it is signed with the lottery's Ed25519 signing key
(``KEYS/lottery-signing.key``) over its canonical JSON (keys sorted, no spaces), so that the
operator or a regulator can check it with ``lottery-signing.pub`` (:func:`read_sales_report`).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from printpipe.commitment.strict import canonical_json, strict_json
from printpipe.errors import PrintpipeError
from printpipe.ledger import GameSales

FORMAT = "printpipe-sales/1"


def sales_report(
    day: str, games: list[GameSales], *, linked: dict[str, str], at: str
) -> dict[str, Any]:
    """The unsigned document of ``day``'s sales (``linked``: each game's linked game)."""
    return {
        "format": FORMAT,
        "day": day,
        "currency": "EUR",
        "made_at": at,
        "games": [sales.as_json(linked_game=linked.get(sales.game, "")) for sales in games],
    }


def sign_sales_report(report: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """The report with its ``signature``, as printed: indented JSON, keys sorted."""
    signed = {**report, "signature": base64.b64encode(key.sign(canonical_json(report))).decode()}
    return (json.dumps(signed, sort_keys=True, indent=2) + "\n").encode()


def read_sales_report(data: bytes, key: Ed25519PublicKey) -> dict[str, Any]:
    """A signed report, its signature checked (:class:`PrintpipeError` if it does not verify)."""
    try:
        signed = strict_json(data)  # no key twice, no float: what the signature covers
        signature = base64.b64decode(signed.pop("signature"), validate=True)
        if signed.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        key.verify(signature, canonical_json(signed))
    except (ValueError, KeyError, TypeError, AttributeError, InvalidSignature) as exc:
        raise PrintpipeError(
            f"the sales report does not verify: {exc or 'bad signature'}"
        ) from None
    return dict(signed)
