import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from printpipe.ids import (
    TicketId,
    gs1_check_digit,
    gs1_check_digits_array,
    mod97_check,
    mod97_checks_array,
    mod97_is_valid,
    parse_inventory_code,
    parse_validation_code,
)

ticket_ids = st.builds(
    TicketId,
    game=st.integers(0, 9999),
    pack=st.integers(0, 999_999),
    ticket=st.integers(0, 999),
)


def test_serial_format_of_the_spec_example():
    # docs/ticket-ids-and-security.md shows "0412-000123-045-7" as an example, but its check
    # digit does not follow the rule the same page fixes: GS1 weights 3,1,3... from the right
    # give 5*3 + 4 + 0 + 3 + 2*3 + 1 + 0 + 0 + 0 + 2 + 1*3 + 4 + 0 = 38, so the check is 2.
    assert TicketId(412, 123, 45).serial == "0412-000123-045-2"


def test_gs1_known_values():
    # GTIN-13 4006381333931 (check digit 1) is the usual GS1 example.
    assert gs1_check_digit("400638133393") == 1
    assert gs1_check_digit("629104150021") == 3


def test_mod97_matches_iban_rule():
    # ISO 7064 MOD 97-10 is the IBAN rule: GB82 WEST 1234 5698 7654 32
    digits = "3214282912345698765432161182"
    assert int(digits) % 97 == 1
    assert mod97_check("32142829123456987654321611") == 82


@given(ticket_ids, st.integers(0, 10**10 - 1))
def test_codes_round_trip(ticket_id, virn):
    code = ticket_id.validation_code(virn)
    assert len(code) == 25 and mod97_is_valid(code)
    parsed = parse_validation_code(code)
    assert parsed is not None and parsed.ticket_id == ticket_id and parsed.virn == virn
    assert parse_inventory_code(ticket_id.inventory_code) == ticket_id
    assert ticket_id.validation_text(virn).replace("-", "").replace(" ", "") == code


@given(ticket_ids, st.integers(0, 10**10 - 1), st.integers(0, 24), st.integers(1, 9))
def test_one_changed_digit_is_refused(ticket_id, virn, position, delta):
    code = ticket_id.validation_code(virn)
    changed = code[:position] + str((int(code[position]) + delta) % 10) + code[position + 1 :]
    assert parse_validation_code(changed) is None


@given(
    st.lists(
        st.tuples(st.integers(0, 999_999), st.integers(0, 999), st.integers(0, 10**10 - 1)),
        min_size=1,
        max_size=20,
    )
)
def test_vectorised_checks_equal_scalar(rows):
    packs = np.array([r[0] for r in rows])
    tickets = np.array([r[1] for r in rows])
    virns = np.array([r[2] for r in rows], dtype=np.uint64)
    gs1 = gs1_check_digits_array(412, packs, tickets)
    mod97 = mod97_checks_array(412, packs, tickets, virns)
    for i, (pack, ticket, virn) in enumerate(rows):
        ticket_id = TicketId(412, pack, ticket)
        assert gs1[i] == ticket_id.check_digit
        assert f"{mod97[i]:02d}" == ticket_id.validation_code(virn)[-2:]


@given(st.text(max_size=30))
def test_parsers_never_raise(text):
    parse_validation_code(text)
    parse_inventory_code(text)
