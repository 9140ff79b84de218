"""Lock-out (issue 11, defect 3): wrong VIRNs count only against payable tickets, a terminal
that sends too many is throttled and reported, one terminal cannot lock a ticket, and the
lottery's office unlocks a ticket after inspecting it, then pays its holder.  The ledger's
tests run on both databases (the ``backend`` fixture)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from printpipe.block import PackRange
from printpipe.ids import TicketId
from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import LOTTERY, TerminalId, parse_pack_ref, parse_reason
from printpipe.ledger.key import LedgerKey, load_ledger_key
from printpipe.ledger.rules import (
    PACK_STATES,
    ScannedCode,
    Settings,
    TerminalCounter,
    TicketRow,
    decide,
)
from tests.ledger_helpers import (
    OFFICE_SCOPE,
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)

START = datetime(2030, 1, 1, 8, 0, tzinfo=UTC)
SETTINGS = Settings()
TEST_KEY = LedgerKey(bytes(range(32)))

# -- the policy, pure -----------------------------------------------------------------------

ticket_ids = st.builds(TicketId, st.just(412), st.integers(1, 999_999), st.integers(0, 999))
rows = st.builds(
    TicketRow,
    virn_hmac=st.binary(min_size=32, max_size=32),
    prize_eur=st.sampled_from([0, 2, 150, 15_000]),
    failures=st.integers(0, 10),
    failing_terminals=st.integers(0, 4),
    pack_state=st.sampled_from(PACK_STATES),
)
counters = st.builds(
    TerminalCounter,
    failures=st.integers(0, 6),
    window_start=st.just(START) | st.none(),
)
moments = st.integers(0, 72 * 60).map(lambda minutes: START + timedelta(minutes=minutes))


@given(ticket_ids, rows, counters, moments, st.booleans())
def test_an_unsold_ticket_answers_the_same_whatever_its_virn_and_counts_nothing(
    ticket, row, counter, at, right
):
    virn = 1234567890
    row = replace(
        row,
        pack_state="issued",
        failures=0,
        failing_terminals=0,
        virn_hmac=TEST_KEY.virn_hmac(ticket, virn if right else virn + 1),
    )
    scanned = ScannedCode(ticket, virn).keyed(TEST_KEY)
    decision = decide(scanned, row, counter, SETTINGS, at=at)
    assert not decision.counts_failure
    assert decision.answer.text in ("PACK NOT ACTIVATED", f"TERMINAL THROTTLED {_until(counter)}")


def _until(counter: TerminalCounter) -> str:
    if counter.window_start is None:
        return "-"
    return (counter.window_start + SETTINGS.terminal_window).strftime("%Y-%m-%dT%H:%M:%SZ")


@given(ticket_ids, rows | st.none(), moments, st.booleans())
def test_a_throttled_terminal_is_told_nothing_about_any_ticket(ticket, row, at, right):
    counter = TerminalCounter(SETTINGS.max_terminal_virn_failures, at - timedelta(minutes=1))
    virn = 5
    if row is not None:
        row = replace(row, virn_hmac=TEST_KEY.virn_hmac(ticket, virn if right else virn + 1))
    decision = decide(ScannedCode(ticket, virn).keyed(TEST_KEY), row, counter, SETTINGS, at=at)
    assert decision.answer.text == f"TERMINAL THROTTLED {_until(counter)}"
    assert decision.answer.serial is None and not decision.counts_failure


@given(ticket_ids, rows, counters, moments)
def test_the_inventory_code_never_counts_and_never_tells_a_prize(ticket, row, counter, at):
    decision = decide(ScannedCode(ticket, None), row, counter, SETTINGS, at=at)
    assert decision.answer.text == f"PACK {row.pack_state.upper()}"
    assert decision.answer.amount_eur is None and not decision.counts_failure


# -- the policy, on a real ledger: lock-out counts --------------------------------------------


@pytest.fixture(scope="module")
def key(keys_dir) -> LedgerKey:
    return load_ledger_key(keys_dir)


@pytest.fixture(scope="module")
def base(tmp_path_factory, ledgers, game, keys_dir):
    """A ledger of packs 1:3 with packs 1 and 2 activated; the tickets of packs 1 and 3."""
    db = ledgers.new()
    store = imported_ledger(game, keys_dir, tmp_path_factory.mktemp("lockout"), db,
                            PackRange(1, 3), activate=("1", "2"))  # fmt: skip
    tickets = []
    for row in [*range(store.pack_size), *range(2 * store.pack_size, 3 * store.pack_size)]:
        ticket, code, _, prize = ticket_codes(store, game, row)
        tickets.append((ticket, code, prize))
    return db, tickets


def _copy(base, ledgers):
    return ledgers.copy(base[0])


def _wrong(ticket: TicketId, code: str, k: int = 1) -> str:
    return ticket.validation_code((int(code[13:23]) + k) % 10**10)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


requests = st.lists(
    st.tuples(st.sampled_from("ABC"), st.booleans(), st.integers(0, 600)),  # who, right, +min
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(requests)
def test_lockout_counts_follow_the_documented_policy(base, ledgers, key, sequence):
    """A model of the policy (docs/validation.md), written out a second way, against the
    ledger: per-ticket and per-terminal counts, the lock, the throttle and its window."""
    db = _copy(base, ledgers)
    ticket, code, prize = next(t for t in base[1] if t[2] > 0)
    clock = Clock()
    windows: dict[str, list] = {}  # terminal -> [window start, failures]
    per_terminal: dict[str, int] = {}  # wrong VIRNs counted against the ticket, by terminal
    wrong_answers = 0
    limit, window = SETTINGS.max_terminal_virn_failures, SETTINGS.terminal_window
    with Ledger(db, key=key, clock=clock) as book:
        for who, right, minutes in sequence:
            clock.now += timedelta(minutes=minutes)
            state = windows.get(who)
            if state and clock.now >= state[0] + window:
                state = windows.pop(who)
                state = None
            throttled = state is not None and state[1] >= limit
            locked = sum(per_terminal.values()) >= SETTINGS.max_virn_failures and (
                len(per_terminal) >= 2
            )
            answer = book.validate(
                code if right else _wrong(ticket, code),
                terminal=TerminalId(who),
                scope=OFFICE_SCOPE,
            )
            if throttled:
                assert answer.outcome == "TERMINAL_THROTTLED"
            elif locked:
                assert answer.outcome == "LOCKED"
            elif right:
                assert answer.outcome == ("WIN" if prize <= 150 else "WIN_AT_LOTTERY")
            else:
                assert answer.outcome == "WRONG_VALIDATION_NUMBER"
                wrong_answers += 1
                per_terminal[who] = per_terminal.get(who, 0) + 1
                windows.setdefault(who, [clock.now, 0])[1] += 1
        stored = dict(book.query("SELECT terminal, failures FROM virn_failures"))
        assert stored == per_terminal and sum(stored.values()) == wrong_answers
        assert (len(book.locks().tickets) == 1) == (
            wrong_answers >= SETTINGS.max_virn_failures and len(per_terminal) >= 2
        )
        if len(per_terminal) <= 1:
            assert book.locks().tickets == []  # one terminal never locks a ticket


def test_one_terminal_cannot_lock_a_pack(base, ledgers, key, keys_dir):
    """The issue: one terminal locked a whole pack (36 winners) with 625 requests."""
    db = _copy(base, ledgers)
    pack_one = [t for t in base[1] if t[0].pack == 1]
    rogue = TerminalId("ROGUE")
    with Ledger(db, key=key) as book:
        answers = [
            book.validate(_wrong(ticket, code, k), terminal=rogue, scope=OFFICE_SCOPE).outcome
            for ticket, code, _ in pack_one
            for k in range(1, 6)
        ]
        assert len(answers) == 625
        assert answers.count("WRONG_VALIDATION_NUMBER") == SETTINGS.max_terminal_virn_failures
        assert answers.count("TERMINAL_THROTTLED") == 625 - SETTINGS.max_terminal_virn_failures
        locks = book.locks()
        assert locks.tickets == []
        assert [t.terminal for t in locks.terminals] == ["ROGUE"]  # reported
        throttles = book.query("SELECT terminal FROM audit_log WHERE action = 'throttle'")
        assert throttles == [("ROGUE",)]
        for ticket, code, _ in pack_one:  # every holder is still answered
            assert book.validate(code, terminal=TerminalId("SHOP"), scope=OFFICE_SCOPE).outcome in (
                "WIN",
                "WIN_AT_LOTTERY",
                "NO_WIN",
            ), ticket


def test_a_throttle_ends_with_its_window(base, ledgers, key, keys_dir):
    db = _copy(base, ledgers)
    ticket, code, _ = base[1][0]
    clock = Clock()
    terminal = TerminalId("T1")
    with Ledger(db, key=key, clock=clock) as book:
        for k in range(1, 4):
            assert book.validate(
                _wrong(ticket, code, k), terminal=terminal, scope=OFFICE_SCOPE
            ).outcome == ("WRONG_VALIDATION_NUMBER")
        clock.now += timedelta(hours=SETTINGS.terminal_window_hours) - timedelta(seconds=1)
        until = (START + SETTINGS.terminal_window).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert (
            book.validate(code, terminal=terminal, scope=OFFICE_SCOPE).text
            == f"TERMINAL THROTTLED {until}"
        )
        clock.now += timedelta(seconds=1)
        assert (
            book.validate(code, terminal=terminal, scope=OFFICE_SCOPE).outcome
            != "TERMINAL_THROTTLED"
        )
        assert book.locks().terminals == []


def _serial_digits_code(ticket: TicketId, virn: int) -> str:
    """What anyone who reads the serial on the back can type: its digits, any VIRN, and the
    check digits that make it valid."""
    return ticket.validation_code(virn)


def test_the_issues_reproduction_the_holder_is_paid_at_the_office(base, ledgers, key, keys_dir):
    """Five ``validate <serial digits + any VIRN + valid check>``, then ``claim W --terminal O``
    (the office, at the database): before the fix, LOCKED for good."""
    db = _copy(base, ledgers)
    ticket, code, prize = next(t for t in base[1] if t[0].pack == 1 and t[2] > 0)
    answers = [
        run_in_process(
            "validate",
            _serial_digits_code(ticket, virn),
            "--db",
            db_arg(db),
            "--keys",
            str(keys_dir),
        ).stdout
        for virn in range(1, 6)
    ]
    assert [a.strip() for a in answers[:3]] == ["WRONG VALIDATION NUMBER"] * 3
    assert all(a.startswith("TERMINAL THROTTLED ") for a in answers[3:])
    result = run_in_process(
        "claim", code, "--db", db_arg(db), "--keys", str(keys_dir), "--terminal", "O"
    )
    assert (result.returncode, result.stdout.strip()) == (0, f"PAID {prize}")


def test_unsold_tickets_cannot_be_locked(base, ledgers, key, keys_dir):
    db = _copy(base, ledgers)
    ticket, code, prize = next(t for t in base[1] if t[0].pack == 3 and t[2] > 0)  # issued
    with Ledger(db, key=key) as book:
        for k, who in enumerate(("T1", "T2", "T3", "T1", "T2", "T3", "T4"), start=1):
            answer = book.validate(
                _wrong(ticket, code, k), terminal=TerminalId(who), scope=OFFICE_SCOPE
            )
            assert answer.text == "PACK NOT ACTIVATED"
        assert book.query("SELECT COUNT(*) FROM virn_failures") == [(0,)]
        book.set_pack_state(
            [parse_pack_ref("3")], state="activated", terminal=LOTTERY, scope=OFFICE_SCOPE
        )
        assert (
            book.validate(code, terminal=TerminalId("SHOP"), scope=OFFICE_SCOPE).amount_eur == prize
        )


def test_the_office_reviews_unlocks_and_pays_a_ticket_two_terminals_locked(
    base, ledgers, key, keys_dir
):
    db = _copy(base, ledgers)
    ticket, code, prize = next(t for t in base[1] if t[0].pack == 1 and t[2] > 0)
    for k, who in enumerate(("X", "X", "X", "Y", "Y"), start=1):
        out = run_in_process("validate", _wrong(ticket, code, k), "--db", db_arg(db),
                             "--keys", str(keys_dir), "--terminal", who).stdout  # fmt: skip
        assert out.strip() == "WRONG VALIDATION NUMBER"
    for command in ("validate", "claim"):
        result = run_in_process(
            command, code, "--db", db_arg(db), "--keys", str(keys_dir), "--terminal", "SHOP"
        )
        assert result.stdout.strip() == "LOCKED"
    result = run_in_process(
        "claim",
        code,
        "--db",
        db_arg(db),
        "--keys",
        str(keys_dir),
        "--terminal",
        "OFFICE",
    )
    assert result.stdout.strip() == "LOCKED"  # the office unlocks first, on purpose
    report = run_in_process("ledger", "locks", "--db", db_arg(db)).stdout.splitlines()
    assert report[0].startswith(f"locked ticket {ticket.serial}: 5 wrong validation numbers")
    assert report[1].startswith("throttled terminal X: 3 wrong validation numbers")
    reason = "ticket inspected: genuine, unscratched"
    result = run_in_process("ledger", "unlock", ticket.serial, "--db", db_arg(db), "--terminal",
                            "OFFICE", "--reason", reason)  # fmt: skip
    assert result.returncode == 0 and result.stdout.startswith(f"ticket {ticket.serial}: unlocked")
    result = run_in_process(
        "claim",
        code,
        "--db",
        db_arg(db),
        "--keys",
        str(keys_dir),
        "--terminal",
        "OFFICE",
    )
    assert (result.returncode, result.stdout.strip()) == (0, f"PAID {prize}")
    with Ledger(db, read_only=True, key=load_ledger_key(keys_dir)) as book:
        unlock = book.query("SELECT terminal, input, ticket FROM audit_log WHERE action = 'unlock'")
        assert unlock == [("OFFICE", reason, ticket.serial)]
        assert book.verify_log().ok
    again = run_in_process("ledger", "unlock", ticket.serial, "--db", db_arg(db), "--reason", "x")
    assert again.returncode == 1 and "nothing to unlock" in again.stderr
    with pytest.raises(TypeError), Ledger(db) as book:
        book.unlock(ticket, reason="a plain string", terminal=LOTTERY)  # type: ignore[arg-type]
    assert parse_reason("ok").text == "ok"
