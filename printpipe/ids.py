"""Ticket identifiers: serials, check digits and barcode payloads.

The formats are a contract with print shops, auditors and retailer terminals
(see ``docs/ticket-ids-and-security.md``): game ``GGGG``, pack ``PPPPPP``, ticket ``TTT``,
GS1 mod-10 check ``C``, VIRN ``VVVVVVVVVV`` and its ISO/IEC 7064 MOD 97-10 check ``KK``.
Scalar functions serve validation and tests; the ``*_array`` variants serve a whole block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

GAME_DIGITS = 4
PACK_DIGITS = 6
TICKET_DIGITS = 3
VIRN_DIGITS = 10
INVENTORY_CODE_LENGTH = GAME_DIGITS + PACK_DIGITS + TICKET_DIGITS + 1  # 14
VALIDATION_CODE_LENGTH = GAME_DIGITS + PACK_DIGITS + TICKET_DIGITS + VIRN_DIGITS + 2  # 25
SPECIMEN_PACK = 0
"""Pack ``000000`` is never issued: proofs use it, and validation answers it as a specimen."""


def gs1_check_digit(digits: str) -> int:
    """GS1 mod-10 check digit: weights 3, 1, 3, ... starting from the rightmost digit."""
    if not digits.isdigit():
        raise ValueError(f"not all digits: {digits!r}")
    total = sum(int(d) * (3 if i % 2 == 0 else 1) for i, d in enumerate(reversed(digits)))
    return (10 - total % 10) % 10


def mod97_check(digits: str) -> int:
    """ISO/IEC 7064 MOD 97-10 check value (two digits, 02..98) over ``digits``."""
    if not digits.isdigit():
        raise ValueError(f"not all digits: {digits!r}")
    return 98 - (int(digits) * 100) % 97


def mod97_is_valid(digits_with_check: str) -> bool:
    """True when the last two digits are the MOD 97-10 check of the others."""
    return digits_with_check.isdigit() and int(digits_with_check) % 97 == 1


@dataclass(frozen=True, slots=True)
class TicketId:
    """Where a ticket sits: its game, its pack (unique across blocks) and its place in the pack."""

    game: int
    pack: int
    ticket: int

    def __post_init__(self) -> None:
        if not 0 <= self.game < 10**GAME_DIGITS:
            raise ValueError(f"game number out of range: {self.game}")
        if not 0 <= self.pack < 10**PACK_DIGITS:
            raise ValueError(f"pack number out of range: {self.pack}")
        if not 0 <= self.ticket < 10**TICKET_DIGITS:
            raise ValueError(f"ticket number out of range: {self.ticket}")

    @property
    def digits(self) -> str:
        """The 13 digits ``GGGGPPPPPPTTT``."""
        return f"{self.game:04d}{self.pack:06d}{self.ticket:03d}"

    @property
    def check_digit(self) -> int:
        return gs1_check_digit(self.digits)

    @property
    def serial(self) -> str:
        """The serial printed in clear on the back: ``GGGG-PPPPPP-TTT-C``."""
        return format_serial(self.game, self.pack, self.ticket, self.check_digit)

    @property
    def inventory_code(self) -> str:
        """The 14 digits of the back's ITF barcode: identifies the ticket, never its prize."""
        return format_inventory_code(self.game, self.pack, self.ticket, self.check_digit)

    def validation_code(self, virn: int) -> str:
        """The 25 digits of the front's Code 128 barcode, hidden under the scratch-off coating."""
        key = mod97_check(f"{self.digits}{virn:010d}")
        return format_validation_code(self.game, self.pack, self.ticket, virn, key)

    def validation_text(self, virn: int) -> str:
        """The validation code in clear, grouped ``GGGG-PPPPPP-TTT VVVVVVVVVV KK``."""
        key = mod97_check(f"{self.digits}{virn:010d}")
        return format_validation_text(self.game, self.pack, self.ticket, virn, key)


def format_serial(game: int, pack: int, ticket: int, check: int) -> str:
    return f"{game:04d}-{pack:06d}-{ticket:03d}-{check}"


def format_inventory_code(game: int, pack: int, ticket: int, check: int) -> str:
    return f"{game:04d}{pack:06d}{ticket:03d}{check}"


def format_validation_code(game: int, pack: int, ticket: int, virn: int, key: int) -> str:
    return f"{game:04d}{pack:06d}{ticket:03d}{virn:010d}{key:02d}"


def format_validation_text(game: int, pack: int, ticket: int, virn: int, key: int) -> str:
    return f"{game:04d}-{pack:06d}-{ticket:03d} {virn:010d} {key:02d}"


@dataclass(frozen=True, slots=True)
class PrintedCodes:
    """What is printed to identify one ticket: the same strings ``TicketId`` gives."""

    serial: str
    inventory_code: str
    validation_code: str
    validation_text: str


def printed_codes(
    game: int, packs: np.ndarray, tickets: np.ndarray, virns: np.ndarray
) -> list[PrintedCodes]:
    """The printed codes of many tickets at once, check digits computed over arrays.

    The press prints millions of these: the checks are vectorised, the formats are
    :class:`TicketId`'s own.
    """
    checks = gs1_check_digits_array(game, packs, tickets).tolist()
    keys = mod97_checks_array(game, packs, tickets, virns).tolist()
    return [
        PrintedCodes(
            format_serial(game, pack, ticket, check),
            format_inventory_code(game, pack, ticket, check),
            format_validation_code(game, pack, ticket, virn, key),
            format_validation_text(game, pack, ticket, virn, key),
        )
        for pack, ticket, virn, check, key in zip(
            packs.tolist(), tickets.tolist(), virns.tolist(), checks, keys, strict=True
        )
    ]


@dataclass(frozen=True, slots=True)
class ValidationCode:
    """A parsed and check-verified 25-digit validation code."""

    ticket_id: TicketId
    virn: int


def parse_validation_code(code: str) -> ValidationCode | None:
    """The ticket and VIRN of a scanned validation code, or None if it is malformed."""
    if len(code) != VALIDATION_CODE_LENGTH or not code.isascii() or not code.isdigit():
        return None
    if not mod97_is_valid(code):
        return None
    ticket_id = TicketId(int(code[0:4]), int(code[4:10]), int(code[10:13]))
    return ValidationCode(ticket_id, int(code[13:23]))


def parse_inventory_code(code: str) -> TicketId | None:
    """The ticket of a scanned 14-digit inventory code, or None if it is malformed."""
    if len(code) != INVENTORY_CODE_LENGTH or not code.isascii() or not code.isdigit():
        return None
    if gs1_check_digit(code[:13]) != int(code[13]):
        return None
    return TicketId(int(code[0:4]), int(code[4:10]), int(code[10:13]))


def gs1_check_digits_array(game: int, packs: np.ndarray, tickets: np.ndarray) -> np.ndarray:
    """GS1 check digits of many tickets at once (same result as :func:`gs1_check_digit`)."""
    digits = _digit_columns(game, packs, tickets)
    weights = np.array([3 if (12 - i) % 2 == 0 else 1 for i in range(13)], dtype=np.int64)
    return ((10 - (digits * weights).sum(axis=1) % 10) % 10).astype(np.uint8)


def mod97_checks_array(
    game: int, packs: np.ndarray, tickets: np.ndarray, virns: np.ndarray
) -> np.ndarray:
    """MOD 97-10 checks of many validation codes at once (same as :func:`mod97_check`)."""
    # The 23-digit number does not fit 64 bits: reduce mod 97 piece by piece.
    head = (game * 10**9 + packs.astype(np.int64) * 10**3 + tickets.astype(np.int64)) % 97
    rem = (head * (10**10 % 97) + virns.astype(np.int64) % 97) % 97
    return (98 - (rem * 100) % 97).astype(np.uint8)


def _digit_columns(game: int, packs: np.ndarray, tickets: np.ndarray) -> np.ndarray:
    number = game * 10**9 + packs.astype(np.int64) * 10**3 + tickets.astype(np.int64)
    powers = 10 ** np.arange(12, -1, -1, dtype=np.int64)
    return (number[:, None] // powers) % 10
