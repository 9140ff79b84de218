"""Property tests of the sealed audit log (``printpipe.ledger.log``), away from any database:
every tampering a database writer can do without the key is named, and nothing else is."""

from __future__ import annotations

import dataclasses

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from printpipe.ledger.log import (
    GENESIS,
    Checkpoint,
    CheckpointRefused,
    Entry,
    LogKey,
    Payment,
    PlayRecord,
    checkpoint_order_problem,
    play_answer,
    read_checkpoint,
    seal_batch,
    verify_log,
    write_checkpoint,
)

KEY = LogKey(bytes(range(32)))
THIEF = LogKey(bytes(32))
"""What someone without the ledger key can compute: MACs under a key of their own."""


def _log(actions: list[tuple[str, int]], sealed: int):
    """Entries (claims paying tickets 1, 2... for ``PAID``; plays dealing units 1, 2...), the
    first ``sealed`` sealed."""
    entries, payments, plays = [], [], []
    for i, (action, amount) in enumerate(actions, start=1):
        at = f"2030-01-01T00:00:{i % 60:02d}Z"
        if action == "play":
            play = PlayRecord(f"{i:032x}", f"player-{i % 3}", i, 1, i - 1, 100, amount * 100,
                              1000 + amount, at.replace("Z", ".000000Z"))  # fmt: skip
            plays.append(play)
            entries.append(_keyed(i * 3, at, "session", "play", play.player, None,
                                  play_answer(play)))  # fmt: skip
            continue
        answer = f"PAID {amount}" if action == "claim" else "NO WIN"
        entries.append(_keyed(i * 3, at, f"T{i % 4}", action, "0412-000001-*", str(i), answer))
        if action == "claim":
            payments.append(
                Payment(i, amount, at, f"T{i % 4}", KEY.payment_mac(i, amount, at, f"T{i % 4}"))
            )
    seals, seq, head = seal_batch(KEY, 0, GENESIS, entries[:sealed])
    return entries, seals, (seq, head, KEY.head_mac(seq, head)), payments, plays


def _keyed(*fields) -> Entry:
    """An entry as a process holding the key writes it: with its MAC."""
    plain = Entry(*fields)
    return dataclasses.replace(plain, mac=KEY.entry_mac(plain.canonical()))


def _fields(entry: Entry) -> list:
    return [getattr(entry, name) for name in Entry.__slots__]


def _check(entries, seals, head, payments, checkpoints=(), plays=()):
    return verify_log(KEY, head=head, seals=seals, entries=entries, payments=payments,
                      ticket_of_serial=int, checkpoints=checkpoints, plays=plays)  # fmt: skip


actions = st.lists(st.tuples(st.sampled_from(["claim", "validate", "play"]), st.integers(1, 500)),
                   min_size=2, max_size=30)  # fmt: skip


@settings(max_examples=200)
@given(actions, st.data())
def test_an_untouched_log_verifies_and_every_tampering_is_named(items, data):
    sealed = data.draw(st.integers(1, len(items)))
    entries, seals, head, payments, plays = _log(items, sealed)
    intact = _check(entries, seals, head, payments, plays=plays)
    assert intact.ok, intact.problems
    assert (intact.sealed, intact.unsealed, intact.payments, intact.plays) == (
        sealed, len(items) - sealed, len(payments), len(plays))  # fmt: skip
    tamper = data.draw(st.sampled_from(
        ["edit", "insert", "delete sealed", "rewind", "rewrite", "edit payment",
         "delete payment", "insert payment", "edit play", "delete play",
         "insert play", "log play twice", "insert unsealed"]))  # fmt: skip
    i = data.draw(st.integers(0, sealed - 1))
    if tamper == "edit":
        fields = _fields(entries[i])
        fields[6] = fields[6] + "!"
        entries[i] = Entry(*fields)
    elif tamper == "insert":  # an entry slipped into the chain, the seals after it recomputed
        forged = Entry(10_000, "2030-01-01T00:00:00Z", "T9", "validate", "x", None, "NO WIN")
        rows, seq, top = seal_batch(THIEF, i, seals[i - 1][2] if i else GENESIS,
                                    [forged, *entries[i:sealed]])  # fmt: skip
        entries.append(forged)
        seals = seals[:i] + rows
        head = (seq, top, THIEF.head_mac(seq, top))
    elif tamper == "insert unsealed":  # awaiting its seal, its MAC the thief's (or none)
        forged = Entry(10_000, "2030-01-01T00:00:00Z", "T9", "validate", "x", None, "NO WIN")
        mac = data.draw(st.sampled_from([None, THIEF.entry_mac(forged.canonical())]))
        entries.append(dataclasses.replace(forged, mac=mac))
    elif tamper == "delete sealed":
        entries = [e for e in entries if e.id != seals[i][1]]
    elif tamper == "rewind":  # the tail deleted, the head set back to an earlier seal's
        if i == len(seals) - 1:
            i -= 1
        if i < 0:
            return
        gone = {row[1] for row in seals[i + 1 :]}
        entries = [e for e in entries if e.id not in gone]
        payments = [p for p in payments if p.ticket * 3 not in gone]
        plays = [p for p in plays if p.unit * 3 not in gone]
        seals = seals[: i + 1]
        head = (seals[i][0], seals[i][2], THIEF.head_mac(seals[i][0], seals[i][2]))
    elif tamper == "rewrite":  # entry i edited and the chain recomputed from there
        fields = _fields(entries[i])
        fields[2] = "forged"
        entries[i] = Entry(*fields)
        rows, seq, top = seal_batch(THIEF, i, seals[i - 1][2] if i else GENESIS,
                                    entries[i:sealed])  # fmt: skip
        seals = seals[:i] + rows
        head = (seq, top, THIEF.head_mac(seq, top))
    elif tamper.endswith("payment"):
        if not payments:
            return
        j = data.draw(st.integers(0, len(payments) - 1))
        p = payments[j]
        if tamper == "edit payment":
            payments[j] = Payment(p.ticket, p.amount_eur + 1, p.paid_at, p.terminal, p.mac)
        elif tamper == "delete payment":
            del payments[j]
        else:
            payments.append(
                Payment(
                    999, 5, p.paid_at, p.terminal, THIEF.payment_mac(999, 5, p.paid_at, p.terminal)
                )
            )
    elif tamper.endswith(("play", "twice")):
        if not plays:
            return
        j = data.draw(st.integers(0, len(plays) - 1))
        p = plays[j]
        if tamper == "edit play":  # any one field of its row changed
            row = dataclasses.asdict(p)
            field = data.draw(st.sampled_from(sorted(row)))
            value = row[field]
            if value is None:  # a field a play of an older layout has not (its jackpot)
                row[field] = 1
            else:
                row[field] = value + 1 if isinstance(value, int) else value + "0"
            plays[j] = PlayRecord(**row)
        elif tamper == "delete play":
            del plays[j]
        elif tamper == "log play twice":  # its entry again, awaiting its seal
            twin = next(e for e in entries if e.action == "play" and f"id={p.id} " in e.answer)
            entries.append(Entry(99_999, *_fields(twin)[1:]))
        else:  # a unit dealt with no entry
            plays.append(PlayRecord("f" * 32, p.player, 10_000, 1, 9_999, 100, 500_000, 0,
                                    p.played_at))  # fmt: skip
    report = _check(entries, seals, head, payments, plays=plays)
    assert not report.ok, tamper
    assert report.problem


def _checkpoint(seals, n: int, at: str, source: str) -> Checkpoint:
    seq, _, head = seals[n - 1]
    return Checkpoint("fp", seq, head, at, source)


def test_checkpoints_keep_what_even_the_key_holder_cannot_rewrite_and_refuse_forgeries():
    lottery = Ed25519PrivateKey.generate()
    entries, seals, head, payments, _ = _log([("validate", 1)] * 10, 10)
    early = _checkpoint(seals, 4, "2030-01-01T00:00:04+00:00", "early.json")
    late = _checkpoint(seals, 9, "2030-01-01T00:00:09+00:00", "late.json")
    files = {c.source: write_checkpoint(c, lottery) for c in (early, late)}
    kept = [
        read_checkpoint(data, lottery.public_key(), source=name) for name, data in files.items()
    ]
    assert kept == [early, late] and checkpoint_order_problem(kept) is None
    assert _check(entries, seals, head, payments, kept).ok
    # the key holder rewrites entry 3 and re-seals everything: the checkpoints name it
    fields = _fields(entries[2])
    fields[2] = "rewritten"
    entries[2] = Entry(*fields)
    rewritten, seq, top = seal_batch(KEY, 0, GENESIS, entries)
    report = _check(entries, rewritten, (seq, top, KEY.head_mac(seq, top)), payments, kept)
    assert not report.ok and "early.json" in report.problem
    # forged (another key, or an edited field) and out of order: refused
    with pytest.raises(CheckpointRefused, match="signature"):
        read_checkpoint(write_checkpoint(early, Ed25519PrivateKey.generate()), lottery.public_key())
    edited = files["late.json"].replace(b'"seq": 9', b'"seq": 8')
    with pytest.raises(CheckpointRefused, match="signature"):
        read_checkpoint(edited, lottery.public_key())
    backwards = Checkpoint("fp", 3, seals[2][2], "2030-01-01T00:00:10+00:00", "backwards.json")
    assert "backwards.json" in (checkpoint_order_problem([early, late, backwards]) or "")
