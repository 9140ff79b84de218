"""The French number and money format (printpipe/french.py): one owner for every printed amount."""

from hypothesis import given
from hypothesis import strategies as st

from printpipe import french


@given(st.integers(0, 10**12))
def test_whole_numbers_group_thousands_by_spaces_and_read_back(value):
    text = french.number(value)
    groups = text.split(" ")
    assert int("".join(groups)) == value
    assert len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:])


@given(st.integers(0, 10**9))
def test_cents_read_back_and_whole_euros_have_no_decimals(value):
    text = french.cents(value)
    assert text.endswith(" €")
    digits = text[:-2].replace(" ", "")
    if value % 100:
        assert round(float(digits.replace(",", ".")) * 100) == value
    else:
        assert "," not in digits and int(digits) == value // 100


def test_the_examples_of_the_ticket_and_the_proofs():
    assert french.euros(15_000) == "15 000 €"
    assert french.cents(97) == "0,97 €"
    assert french.cents(200) == "2 €"
    assert french.number(1_500_000 / 437_316, 2) == "3,43"
    assert french.percent(1_033_050 / 1_455_000) == "71,00 %"


@given(st.integers(min_value=-(10**12), max_value=10**12))
def test_an_amount_in_messages_reads_back_to_its_cents(value):
    """``french.eur``, the English amount of code and messages: two decimals, ``EUR`` after,
    the sign before; it reads back to the very cents (the one format every message uses)."""
    from printpipe.ledger import parse_euros

    text = french.eur(value)
    assert text.endswith(" EUR") and text.count(".") == 1 and len(text.split(".")[1]) == 6
    number = text.removesuffix(" EUR")
    assert (-1 if number.startswith("-") else 1) * round(float(number.lstrip("-")) * 100) == value
    if 0 <= value <= 10**11:
        assert parse_euros(number) == value
