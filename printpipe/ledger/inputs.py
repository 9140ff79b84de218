"""What terminals and the lottery's operators send the ledger, turned into typed values.

Every function here is pure and runs before any transaction begins: a terminal id, a pack
number, a ticket's serial, an office's reason.  What does not parse is refused with
:class:`~printpipe.errors.InvalidInput` (exit status 2 on the command line); the ledger still
records the refusal, holding :func:`audit_text` of what was sent, never the raw bytes, so no
input (a megabyte, a newline, an ANSI escape, bytes that are not UTF-8) can break its log.
The command line reaches these functions through click parameter types; a network service
calls the same ones.  A scanned code is not refused here: any text gets an answer
(``INVALID CODE`` when it is not a printed code, see :func:`printpipe.ids.parse_validation_code`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from printpipe.errors import InvalidInput
from printpipe.ids import TicketId, parse_inventory_code

TERMINAL_ID_MAX_LENGTH = 64
TERMINAL_ID_RULE = "1 to 64 characters among A-Z a-z 0-9 . _ : -, the first a letter or a digit"
_TERMINAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
REASON_MAX_LENGTH = 200
AUDIT_TEXT_LIMIT = 96
"""Characters of an input kept in the audit log; the rest is counted, not kept."""
_PACK_REF = re.compile(r"(?:([0-9]{4})-)?([0-9]{1,6})")


def audit_text(raw: str, *, limit: int = AUDIT_TEXT_LIMIT) -> str:
    """``raw`` as one line of printable ASCII of bounded length: what a log may hold of it.

    Printable ASCII is kept (a backslash doubled); anything else (control characters, ANSI
    escapes, newlines, non-ASCII, the lone surrogates of bytes that were not UTF-8) becomes
    ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``; past ``limit`` characters the rest is counted.
    """
    if len(raw) <= limit and raw.isascii() and raw.isprintable() and "\\" not in raw:
        return raw
    out = []
    for char in raw[:limit]:
        code = ord(char)
        if char == "\\":
            out.append("\\\\")
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    if len(raw) > limit:
        out.append(f"...(+{len(raw) - limit} characters)")
    return "".join(out)


@dataclass(frozen=True, slots=True)
class TerminalId:
    """Who asks: a retailer's terminal or the lottery's office, as recorded with every answer.

    Constructing one checks it (:data:`TERMINAL_ID_RULE`), so a ``TerminalId`` is always safe
    to store, print and compare.
    """

    value: str

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or _TERMINAL_ID.fullmatch(self.value) is None:
            shown = audit_text(self.value) if isinstance(self.value, str) else type(self.value)
            raise InvalidInput(f"terminal id '{shown}' refused: {TERMINAL_ID_RULE}")

    def __str__(self) -> str:
        return self.value


def parse_terminal_id(text: str) -> TerminalId:
    """A terminal id, or :class:`InvalidInput`."""
    return TerminalId(text)


@dataclass(frozen=True, slots=True)
class PackRef:
    """A pack as an operator writes it: ``PPPPPP`` (in whichever game has it) or
    ``GGGG-PPPPPP``."""

    pack: int
    game: int | None = None

    def __str__(self) -> str:
        return f"{self.pack:06d}" if self.game is None else f"{self.game:04d}-{self.pack:06d}"


def parse_pack_ref(text: str) -> PackRef:
    """A pack number ``PPPPPP`` (leading zeros optional) or ``GGGG-PPPPPP``, or InvalidInput."""
    match = _PACK_REF.fullmatch(text)
    if match is None:
        raise InvalidInput(
            f"pack '{audit_text(text)}' refused: expected a pack number PPPPPP or GGGG-PPPPPP"
        )
    game, pack = match.groups()
    return PackRef(int(pack), None if game is None else int(game))


def parse_ticket_ref(text: str) -> TicketId:
    """A ticket by its serial ``GGGG-PPPPPP-TTT-C`` or its 14-digit inventory code."""
    ticket = parse_inventory_code(text)
    if ticket is None:
        raise InvalidInput(
            f"ticket '{audit_text(text)}' refused: expected its serial GGGG-PPPPPP-TTT-C "
            "(check digit included) or its 14-digit inventory code"
        )
    return ticket


@dataclass(frozen=True, slots=True)
class Reason:
    """Why the lottery's office did something exceptional (an unlock), for the audit log."""

    text: str

    def __post_init__(self) -> None:
        text = self.text
        if not (isinstance(text, str) and text.strip() and len(text) <= REASON_MAX_LENGTH):
            raise InvalidInput(f"reason refused: 1 to {REASON_MAX_LENGTH} characters, not blank")
        if not text.isprintable():
            raise InvalidInput(
                f"reason '{audit_text(text)}' refused: printable characters only, on one line"
            )

    def __str__(self) -> str:
        return self.text


def parse_reason(text: str) -> Reason:
    return Reason(text)


def require_terminal(terminal: object) -> None:
    if not isinstance(terminal, TerminalId):
        raise TypeError("terminal must be a printpipe.ledger.inputs.TerminalId (parse_terminal_id)")


TICKET_DIGITS = 13  # GGGG PPPPPP TTT: the first digits of both codes
_TICKET_DIGITS = re.compile(f"(?:[^0-9]*[0-9]){{{TICKET_DIGITS}}}")
_ASCII_DIGIT = re.compile("[0-9]")


def logged_input(text: str, *, limit: int = AUDIT_TEXT_LIMIT) -> str:
    """``text`` (a scanned code, a refused command line or request) as the audit log may hold
    it: never a VIRN, then escaped and bounded (:func:`audit_text`).

    The inventory code or serial (the back of the ticket, public) is kept whole.  In anything
    else every digit after the first 13 (``GGGG PPPPPP TTT``, the ticket, printed on its back)
    is masked ``*``: a validation code's VIRN and check digits, whether the code was valid,
    mistyped or malformed, are the ticket's secret, and a log is read by more people than the
    ledger key.
    """
    if parse_inventory_code(text) is not None:
        return audit_text(text, limit=limit)
    if text.isascii():  # a scanner's or a typist's code: the same, by one pattern
        ticket = _TICKET_DIGITS.match(text)
        if ticket is None:
            return audit_text(text, limit=limit)
        end = ticket.end()
        return audit_text(text[:end] + _ASCII_DIGIT.sub("*", text[end:]), limit=limit)
    seen = 0
    masked = []
    for char in text:
        if char.isdigit():
            seen += 1
            if seen > TICKET_DIGITS:
                char = "*"
        masked.append(char)
    return audit_text("".join(masked), limit=limit)


LOTTERY = TerminalId("lottery")
