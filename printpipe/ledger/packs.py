"""Pack states: issued, activated (shipped to a retailer), settled; asked and changed.

A pack is payable only once activated; a retailer's terminal sees and changes only the packs
shipped to its retailer (:class:`ForeignPack`, which the service answers 403): every call that
asks or changes a pack's state names its caller's :class:`~printpipe.ledger.rules.PackScope`.
"""

from __future__ import annotations

from collections.abc import Sequence

from printpipe.errors import PrintpipeError
from printpipe.ledger.core import Admission, LedgerCore
from printpipe.ledger.inputs import PackRef, TerminalId, require_terminal
from printpipe.ledger.rules import PackScope, format_time, pack_key
from printpipe.ledger.store import Tx


class ForeignPack(PrintpipeError):
    """A pack not shipped to the asking terminal's retailer (the service answers 403)."""


class NoSuchPack(PrintpipeError):
    """No pack of that number in the ledger."""


class PackAdministration(LedgerCore):
    """The packs of an open ledger (see :class:`printpipe.ledger.book.Ledger`)."""

    # -- packs -----------------------------------------------------------------------------

    def set_pack_state(
        self,
        packs: Sequence[PackRef],
        *,
        state: str,
        terminal: TerminalId,
        scope: PackScope,
        admission: Admission | None = None,
    ) -> list[str]:
        """Move packs to ``activated`` or ``settled``, all or none; one line per pack, each in
        ``scope`` (a retailer's terminal activates on receipt the packs shipped to it)."""
        require_terminal(terminal)
        if state not in ("activated", "settled"):
            raise ValueError(state)
        before = "issued" if state == "activated" else "activated"
        action = {"activated": "activate", "settled": "settle"}[state]
        report = []
        with self.db.transaction(durable=True) as tx:
            self._admit(tx, admission)
            for given in packs:
                key, label, current, owner = self._find_pack(tx, given)
                if not scope.covers(owner):
                    raise ForeignPack(f"pack {label} is not shipped to {scope}")
                if current == state:
                    report.append(f"pack {label}: already {state}")
                    continue
                if current != before:
                    raise PrintpipeError(
                        f"pack {label} is {current}: only an {before} pack can be {state}"
                    )
                tx.execute(
                    "UPDATE packs SET state = ?, changed_at = ? WHERE id = ?",
                    (state, format_time(self.clock()), key),
                )
                self._log(tx, terminal.value, action, str(given), label, state)
                report.append(f"pack {label}: {state}")
        return report

    def ship_packs(
        self, packs: Sequence[PackRef], *, retailer: TerminalId, terminal: TerminalId
    ) -> list[str]:
        """The lottery ships issued packs to a retailer, all or none: from then on only that
        retailer's terminals act on them (activate on receipt, validate, claim)."""
        require_terminal(terminal)
        report = []
        with self.db.transaction(durable=True) as tx:
            for given in packs:
                key, label, current, owner = self._find_pack(tx, given)
                if owner == retailer.value:
                    report.append(f"pack {label}: already shipped to {owner}")
                    continue
                if current != "issued":
                    raise PrintpipeError(f"pack {label} is {current}: only an issued pack ships")
                tx.execute(
                    "UPDATE packs SET retailer = ?, changed_at = ? WHERE id = ?",
                    (retailer.value, format_time(self.clock()), key),
                )
                self._log(tx, terminal.value, "ship", str(given), label, retailer.value)
                report.append(f"pack {label}: shipped to {retailer.value}")
        return report

    def pack_state(
        self, given: PackRef, *, scope: PackScope, admission: Admission | None = None
    ) -> tuple[str, str]:
        """(pack label, state) of one pack, in ``scope``."""
        with self.db.transaction() as tx:
            self._admit(tx, admission)
            _, label, state, owner = self._find_pack(tx, given)
            if not scope.covers(owner):  # nothing kept: the caller audits
                raise ForeignPack(f"pack {label} is not shipped to {scope}")
        return label, state

    def _find_pack(self, tx: Tx, given: PackRef) -> tuple[int, str, str, str | None]:
        query = "SELECT id, game_number, pack, state, retailer FROM packs WHERE "
        if given.game is not None:
            rows = tx.execute(query + "id = ?", (pack_key(given.game, given.pack),))
        else:
            rows = tx.execute(query + "pack = ?", (given.pack,))
        if not rows:
            raise NoSuchPack(f"pack {given}: no such pack in {self.location}")
        if len(rows) > 1:
            raise PrintpipeError(f"pack {given} exists in several games: write it GGGG-PPPPPP")
        key, game_number, pack, state, owner = rows[0]
        return key, f"{game_number:04d}-{pack:06d}", state, owner
