"""``printpipe play reconcile``: the game server's wallet calls of a day against the operator's
statement of the same day (``GET /v1/statements/{day}``).

Pure: given the calls the ledger's outbox recorded (``printpipe.ledger.sales.recorded_calls``)
and the statement, every difference is named, one line each:

- **missing**: a call the wallet confirmed to the game server that day is not on its statement;
- **doubled**: a call on the statement more than once;
- **amount**: a call on both sides whose player, amount or refund differs;
- **unknown**: a call on the statement the game server never confirmed: a debit is accounted
  for only by its play or by its cancel, confirmed and refunded (a debit whose answer was
  lost), so a debit without either is named;
- **pending**: a call of the day the outbox has not had confirmed yet (the books can be equal
  only once it is).

The two books are equal when there is no difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from printpipe import french
from printpipe.ledger import RecordedCall
from printpipe.wallet.api import Statement, StatementEntry


@dataclass
class Reconciliation:
    day: str
    differences: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """Calls on the statement, by kind."""
    amounts: dict[str, int] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        said = ", ".join(
            f"{self.counts.get(kind, 0)} {kind}s ({french.eur(self.amounts.get(kind, 0))})"
            for kind in ("debit", "credit", "cancel")
        )
        if self.equal:
            return (
                f"{self.day}: the game server's calls and the wallet's statement are equal: {said}"
            )
        return f"{self.day}: {len(self.differences)} differences (the wallet's statement: {said})"


def reconcile(day: str, calls: Sequence[RecordedCall], statement: Statement) -> Reconciliation:
    """Every difference between ``calls`` and ``statement`` (the module's kinds)."""
    found = Reconciliation(day)
    wallet: dict[tuple[str, str], list[StatementEntry]] = {}
    for entry in statement.entries:
        wallet.setdefault((entry.reference, entry.kind), []).append(entry)
        found.counts[entry.kind] = found.counts.get(entry.kind, 0) + 1
        if entry.kind != "cancel" or entry.refunded:
            found.amounts[entry.kind] = found.amounts.get(entry.kind, 0) + entry.amount_cents
    ours = {(c.reference, c.kind): c for c in calls}
    said = found.differences
    for (reference, kind), entries in sorted(wallet.items()):
        if len(entries) > 1:
            said.append(f"doubled: the wallet's statement lists the {kind} {reference} of "
                        f"{entries[0].player} {len(entries)} times")  # fmt: skip
    expected: dict[tuple[str, str], RecordedCall] = {}
    for call in calls:
        if call.state == "confirmed" and (call.wallet_at or "")[:10] == day:
            expected[(call.reference, call.kind)] = call
        elif call.state in ("pending", "sent") and call.created_at[:10] == day:
            what = f"the {call.kind} {call.reference} of {call.player}"
            said.append(f"pending: {what} ({french.eur(call.amount_cents)}) is not confirmed yet")
    for call in calls:  # a debit its cancel gave back was taken: that day, if both were
        cancel = ours.get((call.reference, "cancel"))
        refunded = (cancel.wallet_at or "") if cancel is not None and cancel.refunded else ""
        taken = call.kind == "debit" and call.state == "cancel" and call.created_at[:10] == day
        if taken and refunded[:10] == day:
            expected[(call.reference, "debit")] = call
    for (reference, kind), call in sorted(expected.items()):
        listed = wallet.get((reference, kind))
        if not listed:
            said.append(f"missing: the {kind} {reference} of {call.player} "
                        f"({french.eur(call.amount_cents)}), confirmed by the wallet at "
                        f"{call.wallet_at or 'its cancel'}, is not on its statement")  # fmt: skip
            continue
        entry = listed[0]
        if (entry.player, entry.amount_cents) != (call.player, call.amount_cents):
            said.append(f"amount: the {kind} {reference} is {french.eur(call.amount_cents)} of "
                        f"{call.player} at the game server, {french.eur(entry.amount_cents)} of "
                        f"{entry.player} on the wallet's statement")  # fmt: skip
        elif kind == "cancel" and bool(entry.refunded) != bool(call.refunded):
            ours_said = "its debit" if call.refunded else "nothing"
            theirs = "its debit" if entry.refunded else "nothing"
            said.append(f"amount: the cancel {reference} refunded {ours_said} at the game "
                        f"server, {theirs} on the wallet's statement")  # fmt: skip
    for (reference, kind), entries in sorted(wallet.items()):
        if (reference, kind) in expected:
            continue
        entry = entries[0]
        mine = ours.get((reference, kind))
        cancel = ours.get((reference, "cancel"))
        if kind == "debit" and cancel is not None and not (mine and mine.played):
            if cancel.state == "confirmed" and cancel.refunded:
                continue  # its answer was lost, its cancel gave it back (on an earlier day)
            said.append(f"unknown: the wallet's debit {reference} of {entry.player} "
                        f"({french.eur(entry.amount_cents)}) has no play, and its cancel is not "
                        "confirmed yet")  # fmt: skip
        elif mine is not None and mine.state == "confirmed":
            said.append(f"unknown: the {kind} {reference} is on the wallet's statement of {day} "
                        f"but was confirmed at {mine.wallet_at}")  # fmt: skip
        else:
            said.append(f"unknown: the wallet's {kind} {reference} of {entry.player} "
                        f"({french.eur(entry.amount_cents)}) was never confirmed to the game server"
                        + (" (it has no play nor cancel)" if kind == "debit" else ""))  # fmt: skip
    return found
