"""Every input checked before any transaction (issue 11, defects 2 and 4): terminal ids of a
documented alphabet and length, a refusal in one line with exit 2, still audited in a form that
cannot break the log."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from printpipe.block import PackRange
from printpipe.errors import InvalidInput
from printpipe.ids import TicketId, parse_inventory_code
from printpipe.ledger.book import Ledger
from printpipe.ledger.inputs import (
    AUDIT_TEXT_LIMIT,
    TERMINAL_ID_MAX_LENGTH,
    audit_text,
    logged_input,
    parse_pack_ref,
    parse_reason,
    parse_terminal_id,
)
from printpipe.ledger.key import load_ledger_key
from tests.conftest import run_cli
from tests.ledger_helpers import (
    db_arg,
    imported_ledger,
    run_in_process,
    ticket_codes,
)

TERMINAL_CHARACTERS = set(string.ascii_letters + string.digits + "._:-")


def terminal_id_allowed(text: str) -> bool:
    """The documented rule, written out a second way (sets, not the library's regex)."""
    return (
        1 <= len(text) <= TERMINAL_ID_MAX_LENGTH
        and set(text) <= TERMINAL_CHARACTERS
        and text[0] in string.ascii_letters + string.digits
    )


any_text = st.text(st.characters(codec=None), max_size=80) | st.text(
    st.sampled_from([*sorted(TERMINAL_CHARACTERS), "\udcff", "\x1b", "\n", " ", "é", "\u202e"]),
    max_size=70,
)


@given(any_text)
def test_a_terminal_id_is_accepted_exactly_by_its_documented_rule(text):
    if terminal_id_allowed(text):
        assert parse_terminal_id(text).value == text
    else:
        with pytest.raises(InvalidInput) as refused:
            parse_terminal_id(text)
        assert "\n" not in str(refused.value) and str(refused.value).isprintable()


@given(st.text(st.characters(codec=None), max_size=300))
def test_audit_text_is_one_bounded_line_that_keeps_what_was_sent(text):
    logged = audit_text(text)
    assert logged.isascii() and logged.isprintable()  # no newline, no escape, no control
    assert len(logged) <= AUDIT_TEXT_LIMIT * 10 + 40
    if len(text) <= AUDIT_TEXT_LIMIT:  # nothing lost: the escapes read back to the input
        assert logged.encode().decode("unicode_escape") == text
    else:
        assert logged.endswith(f"...(+{len(text) - AUDIT_TEXT_LIMIT} characters)")


@given(any_text)
def test_pack_numbers_and_reasons_are_parsed_or_refused_never_crash(text):
    for parse in (parse_pack_ref, parse_reason):
        try:
            parse(text)
        except InvalidInput as refused:
            assert str(refused.value if hasattr(refused, "value") else refused).isprintable()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory, ledgers, game, keys_dir):
    """A ledger of packs 1:3, pack 1 activated; a winner's code of pack 1 and a wrong one."""
    db = ledgers.new()
    store = imported_ledger(game, keys_dir, tmp_path_factory.mktemp("inputs"), db,
                            PackRange(1, 3), activate=("1",))  # fmt: skip
    tiers = store.read().tier
    row = next(r for r in range(store.pack_size) if tiers[r] > 0)
    ticket, code, _, _ = ticket_codes(store, game, row)
    wrong = ticket.validation_code((int(code[13:23]) + 1) % 10**10)
    return db, code, wrong


def _fresh(ledger, ledgers):
    return ledgers.copy(ledger[0])


def _rows(db, query: str) -> list[tuple]:
    with Ledger(db, read_only=True) as book:
        return book.query(query)


def test_a_terminal_id_that_is_not_utf8_is_refused_and_audited(ledger, ledgers, keys_dir):
    """The issue's reproduction 2: ``claim CODE --terminal $'X\\xff'`` crashed inside the
    transaction, rolling back the wrong-VIRN counter and the audit entry, and the traceback's
    line told a right VIRN from a wrong one."""
    db, code, wrong = _fresh(ledger, ledgers), ledger[1], ledger[2]
    keys = ["--keys", str(keys_dir)]
    bad = "X\udcff"  # what Python makes of the argument bytes X 0xff
    answers: dict[str, set[str]] = {}
    for given_code in (code, wrong):
        for command in ("claim", "validate"):
            result = run_cli(command, given_code, "--db", db_arg(db), "--terminal", bad, *keys)
            assert result.returncode == 2 and result.stdout == ""
            assert "Traceback" not in result.stderr
            assert len(result.stderr.strip().splitlines()) == 1, result.stderr
            answers.setdefault(command, set()).add(result.stderr)
    assert all(len(seen) == 1 for seen in answers.values())  # right or wrong VIRN: same line
    refusals = _rows(db, "SELECT terminal, action, input, answer FROM audit_log "
                         "WHERE action = 'refuse'")  # fmt: skip
    assert len(refusals) == 4
    for terminal, _, sent, answer in refusals:
        assert terminal == "X\\udcff"
        assert all(text.isascii() and text.isprintable() for text in (terminal, sent, answer))
    assert _rows(db, "SELECT COUNT(*) FROM virn_failures") == [(0,)]
    assert _rows(db, "SELECT COUNT(*) FROM payments") == [(0,)]


@pytest.mark.parametrize(
    "terminal",
    ["A\x1b[31mRED", "T1\nforged 2024-01-01 PAID 15000", "x" * 100_000, "", "-T", "caisse n°1"],
    ids=["ansi", "newline", "100-KB", "empty", "dash-first", "non-ascii"],
)
def test_a_terminal_id_out_of_its_alphabet_or_length_is_refused_and_logged_bounded(
    ledger, ledgers, keys_dir, terminal
):
    """The issue's reproduction 4: 1 MB ids, ANSI escapes and newlines went into the log."""
    db = _fresh(ledger, ledgers)
    keys = ["--keys", str(keys_dir)]
    result = run_in_process(
        "validate", ledger[1], "--db", db_arg(db), "--terminal", terminal, *keys
    )
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "terminal id" in result.stderr and "\x1b" not in result.stderr
    rows = _rows(db, "SELECT terminal, input, answer FROM audit_log ORDER BY id DESC LIMIT 1")
    for text in rows[0]:
        assert text.isascii() and text.isprintable() and len(text) <= AUDIT_TEXT_LIMIT * 10 + 40
    assert rows[0][0] == audit_text(terminal)
    assert _rows(db, "SELECT MAX(LENGTH(terminal)) FROM audit_log")[0][0] < 1000


def test_every_other_refused_input_exits_2_and_is_audited(ledger, ledgers, keys_dir):
    db = _fresh(ledger, ledgers)
    keys = ["--keys", str(keys_dir)]
    serial = TicketId(412, 1, 0).serial
    wrong_check = f"{serial[:-1]}{(int(serial[-1]) + 1) % 10}"
    cases = [
        ("packs", "activate", "12x", "--db", db_arg(db)),
        ("packs", "settle", "0412-0000001", "--db", db_arg(db)),
        ("ledger", "unlock", wrong_check, "--db", db_arg(db), "--reason", "seen"),
        ("ledger", "unlock", serial, "--db", db_arg(db), "--reason", "two\nlines"),
        ("ledger", "config", "--db", db_arg(db), "--retailer-limit", "0"),
        ("ledger", "config", "--db", db_arg(db), "--terminal", "bad id"),
        ("claim", ledger[1], "--db", db_arg(db), *keys),  # the terminal is required to pay
    ]
    before = _rows(db, "SELECT COUNT(*) FROM audit_log")[0][0]
    for args in cases:
        result = run_in_process(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    actions = _rows(db, f"SELECT action FROM audit_log WHERE id > {before}")
    assert actions == [("refuse",)] * len(cases)
    assert _rows(db, "SELECT state FROM packs WHERE pack = 1") == [("activated",)]


# -- the audit log never holds a VIRN ------------------------------------------------------------

tickets = st.builds(
    TicketId,
    st.integers(0, 9999),
    st.integers(0, 999_999),
    st.integers(0, 999),
)


@given(tickets, st.integers(0, 10**10 - 1), st.sampled_from(["digits", "printed", "mistyped"]))
def test_the_log_keeps_a_codes_ticket_and_masks_its_virn_whatever_its_form(ticket, virn, form):
    code = ticket.validation_code(virn)
    text = {
        "digits": code,
        "printed": ticket.validation_text(virn),
        "mistyped": code[:-1] + str((int(code[-1]) + 1) % 10),  # check digit wrong: INVALID
    }[form]
    logged = logged_input(text)
    assert "".join(c for c in logged if c.isdigit()) == code[:13]  # the ticket, nothing more
    assert logged.count("*") == 12  # the VIRN and the check digits


@given(st.text(st.characters(codec=None), max_size=200))
def test_no_logged_text_holds_more_than_13_digits_of_anything_but_an_inventory_code(text):
    logged = logged_input(text)
    assert logged.isascii() and logged.isprintable()
    if parse_inventory_code(text) is None and len(text) <= AUDIT_TEXT_LIMIT:
        read_back = logged.encode().decode("unicode_escape")  # the escapes hold hex digits
        assert sum(c.isdigit() for c in read_back) <= 13


def test_validations_claims_and_refusals_leave_no_virn_in_the_log(ledger, ledgers, keys_dir):
    """The issue: the audit log held every code as scanned, VIRN in clear; a log read by an
    auditor (or leaked) gave the VIRN of every winner validated and not yet paid."""
    db, code, wrong = _fresh(ledger, ledgers), ledger[1], ledger[2]
    keys = ["--keys", str(keys_dir)]
    spaced = f"{code[:4]}-{code[4:10]}-{code[10:13]} {code[13:23]} {code[23:]}"
    for args in (
        ("validate", code, "--terminal", "T1"),
        ("validate", spaced, "--terminal", "T1"),
        ("validate", wrong, "--terminal", "T1"),
        ("validate", code[:-1] + str((int(code[-1]) + 1) % 10), "--terminal", "T1"),
        ("validate", code, "--terminal", "bad id"),  # refused: the whole command line logged
        ("claim", code, "--terminal", "T1"),
    ):
        run_in_process(*args, "--db", db_arg(db), *keys)
    logged = _rows(db, "SELECT terminal, action, input, ticket, answer FROM audit_log")
    assert {row[1] for row in logged} >= {"validate", "claim", "refuse"}
    for virn in (code[13:23], wrong[13:23]):
        assert not [row for row in logged if any(virn in str(field) for field in row)]
    with Ledger(db, read_only=True, key=load_ledger_key(keys_dir)) as book:
        stored = book.query("SELECT fingerprint FROM idempotency")
        assert book.verify_log().ok
    assert stored == []  # the command line keeps no Idempotency-Key (the service's are HMACs)
