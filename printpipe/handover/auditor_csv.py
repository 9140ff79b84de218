"""Reading the auditor's CSV back: the codes printed on its tickets.

The CSV that ``printpipe manifest export`` writes (``docs/manifest.md``) holds every ticket's
serial, prize and VIRN, but not the 25-digit validation code a retailer scans: that code is
derived (``ids.TicketId.validation_code``).  The lottery, which alone can decrypt a manifest,
uses this to pick real tickets of its own block, e.g. a winner to try the validation with.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from printpipe.errors import PrintpipeError
from printpipe.ids import TicketId

NEEDED = ("serial", "game", "pack", "ticket", "prize_eur", "virn")


@dataclass(frozen=True)
class TicketCodes:
    serial: str
    validation_code: str
    prize_eur: int


def ticket_codes(
    csv_path: Path,
    *,
    pack: int | None = None,
    prize_eur: int | None = None,
    count: int | None = None,
) -> list[TicketCodes]:
    """The codes of the CSV's tickets, in its order: those of ``pack`` (the printed pack
    number) with prize ``prize_eur`` (0: losers), at most ``count``; none is an error."""
    found = []
    for row in _rows(csv_path):
        if (pack is None or row.pack == pack) and (prize_eur is None or row.prize == prize_eur):
            found.append(row.codes)
            if count is not None and len(found) == count:
                break
    if not found:
        wanted = [f"pack {pack:06d}" if pack is not None else "", _prize_words(prize_eur)]
        raise PrintpipeError(
            f"no ticket of {csv_path} matches ({', '.join(w for w in wanted if w) or 'any'})"
        )
    return found


@dataclass(frozen=True)
class _Row:
    pack: int
    prize: int
    codes: TicketCodes


def _rows(csv_path: Path) -> Iterator[_Row]:
    try:
        handle = open(csv_path, newline="", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise PrintpipeError(f"cannot read {csv_path}: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if "virn" in missing and "serial" not in missing:
            raise PrintpipeError(
                f"{csv_path} has no virn column: its game is not validated at retail, "
                "so its tickets have no validation code"
            )
        if missing:
            raise PrintpipeError(
                f"{csv_path} is not an auditor's CSV (no {', '.join(missing)} column)"
            )
        for line, record in enumerate(reader, start=2):
            try:
                ticket = TicketId(int(record["game"]), int(record["pack"]), int(record["ticket"]))
                prize = int(record["prize_eur"])
                code = ticket.validation_code(int(record["virn"]))
            except (TypeError, ValueError):
                raise PrintpipeError(f"{csv_path}, line {line}: not an auditor's record") from None
            if ticket.serial != record["serial"]:
                raise PrintpipeError(
                    f"{csv_path}, line {line}: serial {record['serial']} does not match its "
                    "game, pack and ticket"
                )
            yield _Row(ticket.pack, prize, TicketCodes(ticket.serial, code, prize))


def _prize_words(prize_eur: int | None) -> str:
    if prize_eur is None:
        return ""
    return "losing" if prize_eur == 0 else f"prize {prize_eur} EUR"
