"""The terminals allowed to sign requests: registered, listed, revoked (each audited).

A terminal is its public key's id, its role (``retailer``, ``office`` or ``platform``) and, for
a retailer, the retailer whose packs it may validate; the servers read it on every signed
request.  Its role says which routes admit it (``printpipe.service.access``); its pack scope
(:meth:`Terminal.pack_scope`) which packs it acts on: a retailer's, its retailer's; the
office's, every pack; a platform's, none.
"""

from __future__ import annotations

from dataclasses import dataclass

from printpipe.errors import InvalidInput, PrintpipeError
from printpipe.ledger.core import LedgerCore
from printpipe.ledger.inputs import Reason, TerminalId, audit_text, require_terminal
from printpipe.ledger.rules import TERMINAL_ROLES, PackScope, format_time


@dataclass(frozen=True, slots=True)
class Terminal:
    """A registered terminal: who signs a request with ``key_id``, for which retailer."""

    id: str
    key_id: str
    public_key: bytes
    retailer: str | None
    role: str
    added_at: str
    revoked_at: str | None = None

    @property
    def office(self) -> bool:
        return self.role == "office"

    def pack_scope(self) -> PackScope:
        """The packs this terminal acts on: its retailer's, or every pack for the office's;
        a terminal of any other role acts on no pack (``PrintpipeError``)."""
        if self.role == "office":
            return PackScope.office()
        if self.role == "retailer" and self.retailer:
            return PackScope.of_retailer(self.retailer)
        raise PrintpipeError(f"terminal {self.id} (role {self.role}) acts on no pack")

    def describe(self) -> str:
        who = {
            "office": "office (every pack, above the retailer limit)",
            "platform": "platform (acts for players at printpipe play; no pack)",
        }.get(self.role, f"retailer {self.retailer}")
        state = f"revoked {self.revoked_at}" if self.revoked_at else "active"
        return f"{self.id}: {who}, key {self.key_id}, added {self.added_at}, {state}"


class TerminalAdministration(LedgerCore):
    """The terminals of an open ledger (see :class:`printpipe.ledger.book.Ledger`)."""

    # -- terminals -------------------------------------------------------------------------

    def add_terminal(
        self,
        terminal: TerminalId,
        *,
        public_key: bytes,
        key_id: str,
        retailer: TerminalId | None,
        role: str,
        by: TerminalId,
    ) -> Terminal:
        """Register a terminal and its Ed25519 public key (raw 32 bytes), for a retailer
        (role ``retailer``) or the lottery's office (role ``office``); audited."""
        require_terminal(terminal)
        if role not in TERMINAL_ROLES:
            raise InvalidInput(f"role {role!r} refused: {' or '.join(TERMINAL_ROLES)}")
        if role == "retailer" and retailer is None:
            raise InvalidInput("a retailer's terminal needs --retailer")
        stamp = format_time(self.clock())
        with self.db.transaction(durable=True) as tx:
            known = tx.one(
                "SELECT id FROM terminals WHERE id = ? OR key_id = ?", (terminal.value, key_id)
            )
            if known is not None:
                raise PrintpipeError(
                    f"terminal {known[0]} is registered already (with this id or this key): "
                    "ids and keys are never reused"
                )
            owner = retailer.value if retailer is not None else None
            tx.execute(
                "INSERT INTO terminals VALUES (?, ?, ?, ?, ?, ?, NULL)",
                (terminal.value, key_id, public_key, owner, role, stamp),
            )
            record = Terminal(terminal.value, key_id, public_key, owner, role, stamp)
            self._log(tx, by.value, "terminal-add", terminal.value, None, record.describe())
        return record

    def terminals(self) -> list[Terminal]:
        rows = self.query(
            "SELECT id, key_id, public_key, retailer, role, added_at, revoked_at FROM terminals "
            "ORDER BY id"
        )
        return [Terminal(r[0], r[1], bytes(r[2]), *r[3:]) for r in rows]

    def terminal_by_key_id(self, key_id: str) -> Terminal | None:
        rows = self.query(
            "SELECT id, key_id, public_key, retailer, role, added_at, revoked_at FROM terminals "
            "WHERE key_id = ?",
            (key_id,),
        )
        return Terminal(rows[0][0], rows[0][1], bytes(rows[0][2]), *rows[0][3:]) if rows else None

    def revoke_terminal(self, terminal: TerminalId, *, reason: Reason, by: TerminalId) -> str:
        """Revoke a terminal for good: every request it signs is refused from now on."""
        stamp = format_time(self.clock())
        with self.db.transaction(durable=True) as tx:
            row = tx.one("SELECT revoked_at FROM terminals WHERE id = ?", (terminal.value,))
            if row is None:
                raise PrintpipeError(f"terminal {terminal}: no such terminal in {self.location}")
            if row[0] is not None:
                return f"terminal {terminal}: revoked already ({row[0]})"
            tx.execute("UPDATE terminals SET revoked_at = ? WHERE id = ?", (stamp, terminal.value))
            report = f"terminal {terminal}: revoked {stamp}"
            self._log(
                tx, by.value, "terminal-revoke", audit_text(reason.text, limit=200), None, report
            )
        return report
