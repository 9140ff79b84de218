"""Ticket identifiers: serials, check digits and barcode payloads.

The formats are a contract with print shops, auditors and retailer terminals
(see ``docs/ticket-ids-and-security.md``): game ``GGGG``, pack ``PPPPPP``, ticket ``TTT``,
GS1 mod-10 check ``C``, VIRN ``VVVVVVVVVV`` and its ISO/IEC 7064 MOD 97-10 check ``KK``.
Scalar functions serve validation and tests; the ``*_array`` variants serve a whole block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

GAME_DIGITS = 4
PACK_DIGITS = 6
TICKET_DIGITS = 3
VIRN_DIGITS = 10
INVENTORY_CODE_LENGTH = GAME_DIGITS + PACK_DIGITS + TICKET_DIGITS + 1  # 14
VALIDATION_CODE_LENGTH = GAME_DIGITS + PACK_DIGITS + TICKET_DIGITS + VIRN_DIGITS + 2  # 25
SERIAL_LENGTH = GAME_DIGITS + PACK_DIGITS + TICKET_DIGITS + 1 + 3  # 17: GGGG-PPPPPP-TTT-C
_PackT = TypeVar("_PackT", int, np.ndarray)
SPECIMEN_PACK = 0
"""Pack ``000000`` is never issued: proofs use it, and validation answers it as a specimen."""


def printed_pack_number(*, block: int, block_pack: _PackT, packs_per_block: int) -> _PackT:
    """The pack number printed on a ticket (``PPPPPP``) of pack ``block_pack`` (1-based, within
    its block) of block ``block``: unique across a game's blocks, block ``b`` holding packs
    ``(b-1)*P+1 .. b*P``.  ``block_pack`` may be an array of block packs."""
    return (block - 1) * packs_per_block + block_pack


def gs1_check_digit(digits: str) -> int:
    """GS1 mod-10 check digit: weights 3, 1, 3, ... starting from the rightmost digit."""
    if not digits.isdigit():
        raise ValueError(f"not all digits: {digits!r}")
    total = 3 * sum(map(int, digits[::-2])) + sum(map(int, digits[-2::-2]))
    return (10 - total % 10) % 10


def mod97_check(digits: str) -> int:
    """ISO/IEC 7064 MOD 97-10 check value (two digits, 02..98) over ``digits``."""
    if not digits.isdigit():
        raise ValueError(f"not all digits: {digits!r}")
    return 98 - (int(digits) * 100) % 97


def mod97_is_valid(digits_with_check: str) -> bool:
    """True when the last two digits are exactly the MOD 97-10 check of the others.

    Only the canonical check (02..98) is valid: ``00`` and ``01`` have the value of ``97`` and
    ``98`` modulo 97, but they are never printed, so a code carrying them is not a real one.
    """
    if len(digits_with_check) < 3 or not digits_with_check.isascii():
        return False
    if not digits_with_check.isdigit():
        return False
    return int(digits_with_check[-2:]) == mod97_check(digits_with_check[:-2])


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


# What a scanner or a person sends: the barcode's digits, or the digits in clear as printed
# (``GGGG-PPPPPP-TTT VVVVVVVVVV KK`` under the validation barcode, ``GGGG-PPPPPP-TTT-C`` for the
# serial). Between two printed groups, one space or one hyphen or nothing; spaces around the
# whole. ASCII digits only: no other white space, no full-width digits or spaces, no control
# characters (a scanner's group separator \x1c included).
_SEP = "[ -]?"
_VALIDATION_FORM = re.compile(
    rf" *([0-9]{{4}}){_SEP}([0-9]{{6}}){_SEP}([0-9]{{3}}){_SEP}([0-9]{{10}}){_SEP}([0-9]{{2}}) *"
)
_INVENTORY_FORM = re.compile(rf" *([0-9]{{4}}){_SEP}([0-9]{{6}}){_SEP}([0-9]{{3}}){_SEP}([0-9]) *")
MAX_CODE_TEXT = 64
"""No accepted form of a code is longer (the longest, padded, is well under it)."""


def validation_code_digits(text: str) -> str | None:
    """The 25 digits of a validation code in one of its accepted forms, or None.

    No check digit is verified here: see :func:`parse_validation_code`.
    """
    match = _VALIDATION_FORM.fullmatch(text) if len(text) <= MAX_CODE_TEXT else None
    return "".join(match.groups()) if match else None


def inventory_code_digits(text: str) -> str | None:
    """The 14 digits of an inventory code (or of the serial in clear), or None."""
    match = _INVENTORY_FORM.fullmatch(text) if len(text) <= MAX_CODE_TEXT else None
    return "".join(match.groups()) if match else None


def parse_validation_code(code: str) -> ValidationCode | None:
    """The ticket and VIRN of a scanned or typed validation code, or None if it is not one.

    Accepted: the barcode's 25 digits, or the printed text ``GGGG-PPPPPP-TTT VVVVVVVVVV KK``
    (a space or a hyphen, or nothing, between groups; spaces around), with exactly the
    canonical MOD 97-10 check.
    """
    digits = validation_code_digits(code)
    if digits is None or not mod97_is_valid(digits):
        return None
    ticket_id = TicketId(int(digits[0:4]), int(digits[4:10]), int(digits[10:13]))
    return ValidationCode(ticket_id, int(digits[13:23]))


def parse_inventory_code(code: str) -> TicketId | None:
    """The ticket of a scanned 14-digit inventory code (or its serial ``GGGG-PPPPPP-TTT-C``)."""
    digits = inventory_code_digits(code)
    if digits is None or gs1_check_digit(digits[:13]) != int(digits[13]):
        return None
    return TicketId(int(digits[0:4]), int(digits[4:10]), int(digits[10:13]))


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


def serials_array(game: int, packs: np.ndarray, tickets: np.ndarray) -> np.ndarray:
    """The serials ``GGGG-PPPPPP-TTT-C`` of many tickets as ASCII bytes: a ``(count, 17)``
    uint8 array, row ``i`` equal to :attr:`TicketId.serial` of ticket ``i`` encoded."""
    digits = _digit_columns(game, packs, tickets)
    checks = gs1_check_digits_array(game, packs, tickets)
    serials = np.full((len(digits), SERIAL_LENGTH), ord("-"), dtype=np.uint8)
    serials[:, 0:4] = digits[:, 0:4] + ord("0")
    serials[:, 5:11] = digits[:, 4:10] + ord("0")
    serials[:, 12:15] = digits[:, 10:13] + ord("0")
    serials[:, 16] = checks + ord("0")
    return serials


def virns_array(virns: np.ndarray) -> np.ndarray:
    """VIRNs as their 10 ASCII digits: a ``(count, 10)`` uint8 array."""
    powers = 10 ** np.arange(VIRN_DIGITS - 1, -1, -1, dtype=np.uint64)
    return ((virns.astype(np.uint64)[:, None] // powers) % 10 + ord("0")).astype(np.uint8)


def _digit_columns(game: int, packs: np.ndarray, tickets: np.ndarray) -> np.ndarray:
    number = game * 10**9 + packs.astype(np.int64) * 10**3 + tickets.astype(np.int64)
    powers = 10 ** np.arange(12, -1, -1, dtype=np.int64)
    return (number[:, None] // powers) % 10
