"""``play reconcile``'s comparison (pure): the game server's recorded calls against the
wallet's statement; equal books have no difference, and each way they can differ is named."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from printpipe.ledger import RecordedCall
from printpipe.play.reconcile import reconcile
from printpipe.wallet.api import Share, Statement, StatementEntry

DAY = "2026-12-01"
AT = f"{DAY}T10:00:00.000000Z"


@st.composite
def books(draw) -> tuple[list[RecordedCall], Statement]:
    """Plays (debit, and a credit if it won), lost debits refunded by their cancel, refused
    debits: the game server's calls and the wallet's statement that agrees with them."""
    calls, entries = [], []
    for n in range(draw(st.integers(0, 12))):
        reference, player = f"ref-{n:04d}-0000", draw(st.sampled_from(["alice", "bob"]))
        fate = draw(st.sampled_from(["played", "won", "lost", "refused"]))
        debit = StatementEntry("debit", reference, player, 100, AT,
                               (Share("GA", 97), Share("SJ", 3)))  # fmt: skip
        if fate == "refused":
            calls.append(RecordedCall(reference, "debit", player, 100, "refused", None, None,
                                      AT, False))  # fmt: skip
            continue
        if fate == "lost":  # its answer lost: cancelled, refunded
            calls += [
                RecordedCall(reference, "debit", player, 100, "cancel", None, None, AT, False),
                RecordedCall(reference, "cancel", player, 100, "confirmed", AT, True, AT, False),
            ]
            entries += [debit, StatementEntry("cancel", reference, player, 100, AT, (), True)]
            continue
        calls.append(RecordedCall(reference, "debit", player, 100, "confirmed", AT, None, AT,
                                  True))  # fmt: skip
        entries.append(debit)
        if fate == "won":
            calls.append(RecordedCall(reference, "credit", player, 500, "confirmed", AT, None,
                                      AT, True))  # fmt: skip
            entries.append(StatementEntry("credit", reference, player, 500, AT))
    return calls, Statement(DAY, tuple(draw(st.permutations(entries))))


@given(books())
def test_equal_books_have_no_difference(book):
    calls, statement = book
    found = reconcile(DAY, calls, statement)
    assert found.equal, found.differences
    assert "are equal" in found.summary()


@given(books(), st.data())
def test_each_difference_is_named(book, data):
    calls, statement = book
    entries = list(statement.entries)
    if not entries:
        return
    at = data.draw(st.integers(0, len(entries) - 1))
    entry = entries[at]
    how = data.draw(st.sampled_from(["missing", "doubled", "amount", "unknown"]))
    if how == "missing":
        del entries[at]
    elif how == "doubled":
        entries.insert(at, entry)
    elif how == "amount":
        entries[at] = StatementEntry(entry.kind, entry.reference, entry.player,
                                     entry.amount_cents + 1, entry.at, entry.split,
                                     entry.refunded)  # fmt: skip
    else:  # a debit the game server never asked, never played nor cancelled
        entries.append(StatementEntry("debit", "ref-forged-0000", "alice", 100, AT,
                                      (Share("GA", 97), Share("SJ", 3))))  # fmt: skip
    found = reconcile(DAY, calls, Statement(DAY, tuple(entries)))
    assert not found.equal
    named = [d for d in found.differences if d.startswith(how + ":")]
    assert named, found.differences
    if how != "unknown":
        assert entry.reference in named[0]
    else:
        assert "ref-forged-0000" in named[0] and "no play nor cancel" in named[0]


def test_a_call_not_confirmed_yet_keeps_the_books_apart():
    pending = RecordedCall("ref-0001-0000", "credit", "alice", 500, "pending", None, None, AT,
                           True)  # fmt: skip
    found = reconcile(DAY, [pending], Statement(DAY, ()))
    assert found.differences == [
        "pending: the credit ref-0001-0000 of alice (5.00 EUR) is not confirmed yet"
    ]
