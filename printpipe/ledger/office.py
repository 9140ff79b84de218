"""The office's controls: settings, the locks it reviews, unlocking a ticket.

Each change is one durable transaction with its audit entry; the lock-out it reviews is the
one :func:`printpipe.ledger.rules.decide` applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.ids import TicketId
from printpipe.ledger.core import LedgerCore
from printpipe.ledger.inputs import Reason, TerminalId, audit_text, require_terminal
from printpipe.ledger.rules import (
    LOCK_MIN_TERMINALS,
    SETTING_NAMES,
    Settings,
    TerminalCounter,
    format_time,
    parse_time,
)
from printpipe.ledger.store import ticket_key, ticket_of_key

# -- what the office reviews ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LockedTicket:
    serial: str
    failures: int
    terminals: int
    last_at: str


@dataclass(frozen=True, slots=True)
class ThrottledTerminal:
    terminal: str
    failures: int
    since: str
    until: str


@dataclass(frozen=True, slots=True)
class Locks:
    tickets: list[LockedTicket]
    terminals: list[ThrottledTerminal]


class OfficeControls(LedgerCore):
    """The office's side of an open ledger (see :class:`printpipe.ledger.book.Ledger`)."""

    # -- settings --------------------------------------------------------------------------

    def configure(self, *, terminal: TerminalId, **changes: int | None) -> Settings:
        """Change settings (:data:`SETTING_NAMES`; None leaves one as it is), audited."""
        unknown = set(changes) - set(SETTING_NAMES)
        if unknown:
            raise TypeError(f"unknown settings: {sorted(unknown)}")
        wanted = {key: value for key, value in changes.items() if value is not None}
        for key, value in wanted.items():
            if value < 1:
                raise InvalidInput(f"{key} must be at least 1, got {value}")
        if not wanted:
            return self.settings
        with self.db.transaction(durable=True) as tx:
            for key, value in wanted.items():
                tx.execute(
                    "INSERT INTO settings VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, str(value)),
                )
                self._log(tx, terminal.value, "configure", key, None, str(value))
        return self.reload_settings()

    # -- the office: locks -----------------------------------------------------------------

    def locks(self) -> Locks:
        """Locked tickets and throttled terminals, for the lottery's office to review."""
        at = self.clock()
        settings = self.settings
        with self.db.snapshot() as tx:
            locked = tx.execute(
                "SELECT ticket, SUM(failures), COUNT(*), MAX(last_at) FROM virn_failures "
                "GROUP BY ticket HAVING SUM(failures) >= ? AND COUNT(*) >= ? ORDER BY ticket",
                (settings.max_virn_failures, LOCK_MIN_TERMINALS),
            )
            counters = tx.execute(
                "SELECT terminal, failures, window_start FROM terminal_failures "
                "WHERE failures >= ? ORDER BY terminal",
                (settings.max_terminal_virn_failures,),
            )
        tickets = [
            LockedTicket(ticket_of_key(key).serial, int(failures), int(terminals), last_at)
            for key, failures, terminals, last_at in locked
        ]
        terminals = []
        for name, failures, start in counters:
            until = TerminalCounter(failures, parse_time(start)).throttled_until(at, settings)
            if until is not None:
                terminals.append(ThrottledTerminal(name, failures, start, format_time(until)))
        return Locks(tickets, terminals)

    def unlock(self, ticket: TicketId, *, reason: Reason, terminal: TerminalId) -> str:
        """Release a ticket's wrong-VIRN count after the office has inspected the ticket.

        The counts are removed (the audit log keeps them, with the reason); the holder can then
        be paid, at the office (``printpipe claim``, or an office terminal of the service).
        """
        require_terminal(terminal)
        if not isinstance(reason, Reason):
            raise TypeError("reason must be a printpipe.ledger.inputs.Reason")
        key = ticket_key(ticket)
        with self.db.transaction(durable=True) as tx:
            if tx.one("SELECT 1 FROM tickets WHERE id = ?", (key,)) is None:
                raise PrintpipeError(f"ticket {ticket.serial}: no such ticket in {self.location}")
            counted = tx.one(
                "SELECT COALESCE(SUM(failures), 0), COUNT(*) FROM virn_failures WHERE ticket = ?",
                (key,),
            )
            assert counted is not None
            failures, terminals = counted
            if not failures:
                raise PrintpipeError(
                    f"ticket {ticket.serial} has no wrong validation numbers: nothing to unlock"
                )
            tx.execute("DELETE FROM virn_failures WHERE ticket = ?", (key,))
            report = (
                f"ticket {ticket.serial}: unlocked ({failures} wrong validation numbers "
                f"from {terminals} terminal{'s' if terminals > 1 else ''} released)"
            )
            given = audit_text(reason.text, limit=200)
            self._log(tx, terminal.value, "unlock", given, ticket.serial, report)
        return report
