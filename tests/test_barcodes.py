"""Barcodes composed from python-barcode's patterns: same modules, and they decode."""

import numpy as np
import zxingcpp
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from printpipe.ids import TicketId, printed_codes
from printpipe.render.barcodes import (
    Code128Digits,
    InterleavedTwoOfFive,
    bars_literal,
    code128_modules,
    itf_modules,
)

CODE128 = Code128Digits(25, 0.25, 8)
ITF = InterleavedTwoOfFive(14, 0.3, 12)


def decode(modules: str) -> list[str]:
    scale, quiet = 3, 20
    image = Image.new("L", ((len(modules) + 2 * quiet) * scale, 100), 255)
    draw = ImageDraw.Draw(image)
    for i, module in enumerate(modules):
        if module == "1":
            x = (quiet + i) * scale
            draw.rectangle([x, 10, x + scale - 1, 90], fill=0)
    return [r.text for r in zxingcpp.read_barcodes(image)]


@given(st.text("0123456789", min_size=25, max_size=25).filter(lambda d: not d.startswith("99")))
def test_code128_equals_python_barcode(digits):
    assert CODE128.modules(digits) == code128_modules(digits)
    assert CODE128.literal(digits) == bars_literal(code128_modules(digits), 0.25, 8) + "f\n"


def test_a_leading_99_is_kept():
    # python-barcode 0.16.1 drops a leading "99" pair (its issue #251, fixed upstream after
    # that release); our composition must not, whatever the game number.
    digits = "9941089837457545623295204"
    assert decode(CODE128.modules(digits)) == [digits]


@given(st.text("0123456789", min_size=14, max_size=14))
def test_itf_equals_python_barcode(digits):
    assert ITF.modules(digits) == itf_modules(digits)
    assert ITF.literal(digits) == bars_literal(itf_modules(digits), 0.3, 12) + "f\n"


@given(
    st.text("0123456789", min_size=25, max_size=25), st.text("0123456789", min_size=14, max_size=14)
)
def test_composed_barcodes_decode(code, inventory):
    assert decode(CODE128.modules(code)) == [code]
    assert decode(ITF.modules(inventory)) == [inventory]


@given(
    st.lists(
        st.tuples(st.integers(0, 999_999), st.integers(0, 999), st.integers(0, 10**10 - 1)),
        min_size=1,
        max_size=30,
    )
)
def test_printed_codes_equal_ticket_ids(rows):
    packs, tickets, virns = (np.array(column, dtype=np.int64) for column in zip(*rows, strict=True))
    codes = printed_codes(412, packs, tickets, virns.astype(np.uint64))
    for (pack, ticket, virn), code in zip(rows, codes, strict=True):
        ticket_id = TicketId(412, pack, ticket)
        assert code.serial == ticket_id.serial
        assert code.inventory_code == ticket_id.inventory_code
        assert code.validation_code == ticket_id.validation_code(virn)
        assert code.validation_text == ticket_id.validation_text(virn)
