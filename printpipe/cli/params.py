"""The command line's typed values: click parameter types that turn strings into library values.

Every command taking a pack range, a range of blocks, a press sheet, a list of sheets, a
coating, a terminal id, a pack number, a ticket's serial or a reason declares it with one of
these, so a mistyped value is the same one usage line (exit 2) in every command, and the
library receives a ``PackRange``, a ``range``, a ``PressSheet``, a ``list[int]``, a
``Coating``, a ``TerminalId``, a ``PackRef``, a ``TicketId`` or a ``Reason``, never a string to
parse again.  A refused value is also kept in ``ctx.meta[REFUSED]`` (by parameter name), so
that a ledger command can audit what was refused.  The library modules are imported when a
value is converted, not when the command line is read: ``printpipe validate`` starts without
reportlab.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from printpipe.errors import PrintpipeError

if TYPE_CHECKING:
    from printpipe.block import PackRange
    from printpipe.ids import TicketId
    from printpipe.ledger import Location, PackRef, Reason, TerminalId
    from printpipe.render.imposition import Press, PressSheet
    from printpipe.render.template import Coating

MAX_BLOCK = 999
REFUSED = "printpipe.refused"
"""``ctx.meta`` key: the raw text of each refused parameter, by parameter name."""
COATINGS = ("plate", "none")
"""The values of ``render.template.Coating`` (tested equal), listed here for the help text."""
PRESSES = ("digital", "conventional")
"""The values of ``render.imposition.Press`` (tested equal)."""


class _Converted(click.ParamType):
    """A parameter whose value a library function parses (its PrintpipeError becomes the
    usage line)."""

    def parse(self, text: str) -> Any:
        raise NotImplementedError

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value  # a default already typed, or a value passed by another command
        try:
            return self.parse(value)
        except PrintpipeError as exc:
            if ctx is not None and param is not None and param.name:
                ctx.meta.setdefault(REFUSED, {})[param.name] = value
            self.fail(str(exc), param, ctx)


class PackRangeType(_Converted):
    """``FIRST:LAST``, block-relative packs, 1-based and inclusive -> ``PackRange``. Whether the
    range lies within the block is the library's check (it knows the block)."""

    name = "FIRST:LAST"

    def parse(self, text: str) -> PackRange:
        from printpipe.block import PackRange

        return PackRange.parse(text)


class BlockRangeType(_Converted):
    """``FIRST:LAST`` or ``N``: block numbers of an emission -> ``range``."""

    name = "FIRST:LAST"

    def parse(self, text: str) -> range:
        first, sep, last = text.partition(":")
        last = last if sep else first
        if not (first.strip().isdigit() and last.strip().isdigit()):
            raise PrintpipeError(f"block range {text!r} must be FIRST:LAST, e.g. 1:10")
        blocks = range(int(first), int(last) + 1)
        if not blocks or not 1 <= blocks[0] <= blocks[-1] <= MAX_BLOCK:
            raise PrintpipeError(
                f"block range {text!r} must be within 1:{MAX_BLOCK}, FIRST <= LAST"
            )
        return blocks


class PressSheetType(_Converted):
    """``A3``, ``SRA3`` or ``WxH`` in mm -> ``render.imposition.PressSheet``."""

    name = "A3|SRA3|WxH"

    def parse(self, text: str) -> PressSheet:
        from printpipe.render.imposition import PressSheet

        return PressSheet.parse(text)


class SheetListType(_Converted):
    """``1,3,5-7``: press sheets, 1-based -> a sorted ``list[int]``."""

    name = "LIST"

    def parse(self, text: str) -> list[int]:
        from printpipe.proof.press import parse_sheets

        return parse_sheets(text)


class CoatingType(click.Choice):
    """``plate`` or ``none`` -> ``render.template.Coating``."""

    def __init__(self) -> None:
        super().__init__(COATINGS)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Coating:
        from printpipe.render.template import Coating

        if isinstance(value, Coating):
            return value
        return Coating(super().convert(value, param, ctx))


class PressType(click.Choice):
    """``digital`` or ``conventional`` -> ``render.imposition.Press``."""

    def __init__(self) -> None:
        super().__init__(PRESSES)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Press:
        from printpipe.render.imposition import Press

        if isinstance(value, Press):
            return value
        return Press(super().convert(value, param, ctx))


class TerminalIdType(_Converted):
    """A terminal id -> ``inputs.TerminalId`` (its alphabet and length: ``docs/validation.md``)."""

    name = "TERMINAL"

    def parse(self, text: str) -> TerminalId:
        from printpipe.ledger import parse_terminal_id

        return parse_terminal_id(text)


class PackRefType(_Converted):
    """A pack ``PPPPPP`` or ``GGGG-PPPPPP`` -> ``inputs.PackRef``."""

    name = "PACK"

    def parse(self, text: str) -> PackRef:
        from printpipe.ledger import parse_pack_ref

        return parse_pack_ref(text)


class TicketRefType(_Converted):
    """A ticket by its serial ``GGGG-PPPPPP-TTT-C`` or inventory code -> ``ids.TicketId``."""

    name = "SERIAL"

    def parse(self, text: str) -> TicketId:
        from printpipe.ledger import parse_ticket_ref

        return parse_ticket_ref(text)


class ReasonType(_Converted):
    """Why the office acts: 1 to 200 printable characters -> ``inputs.Reason``."""

    name = "TEXT"

    def parse(self, text: str) -> Reason:
        from printpipe.ledger import parse_reason

        return parse_reason(text)


class LedgerLocationType(_Converted):
    """``--db``: an SQLite file, or a PostgreSQL URL ``postgresql://...`` ->
    ``printpipe.ledger.store.Location``."""

    name = "FILE|postgresql://..."

    def parse(self, text: str) -> Location:
        from printpipe.ledger import parse_location

        return parse_location(text)


PACK_RANGE = PackRangeType()
BLOCK_RANGE = BlockRangeType()
PRESS_SHEET = PressSheetType()
SHEET_LIST = SheetListType()
COATING = CoatingType()
PRESS = PressType()
TERMINAL = TerminalIdType()
PACK_REF = PackRefType()
TICKET_REF = TicketRefType()
REASON = ReasonType()
LEDGER_LOCATION = LedgerLocationType()


class EurosType(_Converted):
    """An amount in EUR (``20``, ``20.50``) -> cents (``int``)."""

    name = "EUR"

    def parse(self, text: str) -> int:
        from printpipe.ledger import parse_euros

        return parse_euros(text)


class PlayerType(_Converted):
    """An online player's name (1 to 64 of A-Z a-z 0-9 . _ @ -)."""

    name = "NAME"

    def parse(self, text: str) -> str:
        from printpipe.ledger import check_player

        return check_player(text)


EUROS = EurosType()
PLAYER = PlayerType()
