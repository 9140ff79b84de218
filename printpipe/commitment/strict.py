"""Strict JSON for the public files (commitment, proof, reveal header): one reading for every
parser (no duplicate key, no float, no NaN), exact key sets, typed values."""

from __future__ import annotations

import json
from collections.abc import Set as AbstractSet
from typing import Any


class Malformed(ValueError):
    """A public file that is not of its format; the message says where."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Malformed("a key appears twice")
    return dict(pairs)


def _refuse_float(text: str) -> Any:
    raise Malformed(f"{text} is not a whole number")


def strict_json(data: bytes) -> Any:
    """Parsed JSON; raises Malformed (or UnicodeDecodeError, json.JSONDecodeError)."""
    return json.loads(
        data.decode("utf-8"),
        object_pairs_hook=_no_duplicates,
        parse_float=_refuse_float,
        parse_constant=_refuse_float,
    )


def canonical_json(value: Any) -> bytes:
    """The bytes a signature covers: keys sorted, no spaces, ASCII."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def exact_object(value: Any, keys: AbstractSet[str], where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != keys:
        raise Malformed(f"{where} must hold exactly {', '.join(sorted(keys))}")
    return value


def whole_number(value: Any, where: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise Malformed(f"{where} must be a whole number >= {minimum}")
    return value


def hex_bytes(value: Any, size: int, where: str) -> bytes:
    """``size`` bytes written as lowercase hex (the one form: a changed case is a change)."""
    if not isinstance(value, str) or len(value) != 2 * size or value != value.lower():
        raise Malformed(f"{where} must be {2 * size} lowercase hex digits")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise Malformed(f"{where} must be {2 * size} lowercase hex digits") from None


def text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise Malformed(f"{where} must be a text")
    return value
