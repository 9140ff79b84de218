"""Barcodes as vector bars, one literal of ``re`` operators and one ``f`` per symbol.

python-barcode is the source of every bar pattern: Code 128's symbol table and ITF's digit
patterns come from it.  What we add is speed for the press: a ticket's barcode is made of
characters of fixed width (11 modules in Code 128, a digit pair of 18 modules in ITF 3:1), so
the PDF operators of each character at each position are formatted once and a ticket's
barcode is a join of table lookups.  ``tests/test_barcodes.py`` checks the modules equal
python-barcode's own ``build()`` for any payload, and zxing-cpp decodes what we print.
"""

from __future__ import annotations

import re
from functools import cache

from barcode import get_barcode_class
from barcode.charsets import code128 as code128_charset
from barcode.charsets import itf as itf_charset

from printpipe.render.template import MM

_BARS = re.compile("1+")
_CODE128 = get_barcode_class("code128")
_ITF = get_barcode_class("itf")
_START_C = code128_charset.START_CODES["C"]
_TO_B = code128_charset.C["TO_B"]
_CODE128_SYMBOL = 11  # modules in every Code 128 character but the stop
_CODE128_STOP = code128_charset.STOP + "11"  # with its final 2-module bar, as build() adds
_ITF_NARROW, _ITF_WIDE = 1, 3


def code128_modules(data: str) -> str:
    """Modules of any Code 128 payload, straight from python-barcode (no quiet zones)."""
    return _CODE128(data).build()[0]


def itf_modules(digits: str) -> str:
    """Modules of an ITF payload (even length, check digit included), from python-barcode."""
    return _ITF(digits, narrow=_ITF_NARROW, wide=_ITF_WIDE).build()[0]


def code128_digit_values(digits: str) -> list[int]:
    """Code 128 character values of an all-digit payload: code set C by pairs, a trailing
    odd digit in code set B, then the check character (python-barcode's own choice)."""
    values = [_START_C] + [int(digits[i : i + 2]) for i in range(0, len(digits) - 1, 2)]
    if len(digits) % 2:
        values += [_TO_B, code128_charset.B[digits[-1]]]
    check = (values[0] + sum(i * v for i, v in enumerate(values[1:], start=1))) % 103
    return [*values, check]


def bars_literal(modules: str, module_mm: float, height_mm: float, offset: int = 0) -> str:
    """PDF operators filling every bar of ``modules``, from module ``offset``, then no fill."""
    module, height = module_mm * MM, height_mm * MM
    return "".join(
        f"{(offset + m.start()) * module:.2f} 0 {(m.end() - m.start()) * module:.2f} "
        f"{height:.2f} re\n"
        for m in _BARS.finditer(modules)
    )


class Code128Digits:
    """Code 128 of fixed-length digit payloads (the 25-digit validation code)."""

    def __init__(self, length: int, module_mm: float, height_mm: float) -> None:
        self.length = length
        self.module_mm, self.height_mm = module_mm, height_mm
        self.width_modules = len(code128_modules("0" * length))

    def modules(self, digits: str) -> str:
        codes = code128_charset.CODES
        return "".join(codes[v] for v in code128_digit_values(digits)) + _CODE128_STOP

    def literal(self, digits: str) -> str:
        """The bars of ``digits`` as PDF operators (one ``f``), from (0, 0)."""
        if len(digits) != self.length or not digits.isdigit():
            raise ValueError(f"expected {self.length} digits, got {digits!r}")
        values = code128_digit_values(digits)
        ops = [self._character(i, v) for i, v in enumerate(values)]
        ops.append(self._stop(len(values)))
        ops.append("f\n")
        return "".join(ops)

    @cache  # noqa: B019 - a few hundred entries per instance, instances live per renderer
    def _character(self, position: int, value: int) -> str:
        pattern = code128_charset.CODES[value]
        return bars_literal(pattern, self.module_mm, self.height_mm, position * _CODE128_SYMBOL)

    @cache  # noqa: B019
    def _stop(self, position: int) -> str:
        return bars_literal(
            _CODE128_STOP, self.module_mm, self.height_mm, position * _CODE128_SYMBOL
        )


class InterleavedTwoOfFive:
    """ITF (narrow 1, wide 3) of fixed-length digit payloads (the 14-digit inventory code)."""

    def __init__(self, length: int, narrow_mm: float, height_mm: float) -> None:
        if length % 2:
            raise ValueError("ITF encodes digit pairs: the length must be even")
        self.length = length
        self.module_mm, self.height_mm = narrow_mm, height_mm
        self.start, self.stop = _expand(itf_charset.START), _expand(itf_charset.STOP)
        pair = len(_pair_modules("00"))
        self.pair_modules = pair
        self.width_modules = len(self.start) + pair * length // 2 + len(self.stop)

    def modules(self, digits: str) -> str:
        pairs = (digits[i : i + 2] for i in range(0, len(digits), 2))
        return self.start + "".join(_pair_modules(p) for p in pairs) + self.stop

    def literal(self, digits: str) -> str:
        """The bars of ``digits`` as PDF operators (one ``f``), from (0, 0)."""
        if len(digits) != self.length or not digits.isdigit():
            raise ValueError(f"expected {self.length} digits, got {digits!r}")
        ops = [self._start()]
        ops += [self._pair(i, digits[2 * i : 2 * i + 2]) for i in range(self.length // 2)]
        ops.append(self._stop())
        ops.append("f\n")
        return "".join(ops)

    @cache  # noqa: B019
    def _start(self) -> str:
        return bars_literal(self.start, self.module_mm, self.height_mm)

    @cache  # noqa: B019
    def _pair(self, position: int, pair: str) -> str:
        offset = len(self.start) + position * self.pair_modules
        return bars_literal(_pair_modules(pair), self.module_mm, self.height_mm, offset)

    @cache  # noqa: B019
    def _stop(self) -> str:
        offset = len(self.start) + self.length // 2 * self.pair_modules
        return bars_literal(self.stop, self.module_mm, self.height_mm, offset)


@cache
def _pair_modules(pair: str) -> str:
    """The 18 modules of one digit pair, cut out of python-barcode's build of that pair."""
    whole = itf_modules(pair)
    start, stop = _expand(itf_charset.START), _expand(itf_charset.STOP)
    return whole[len(start) : len(whole) - len(stop)]


def _expand(elements: str) -> str:
    """python-barcode's ITF element letters (N/W bar, n/w space) as modules."""
    widths = {
        "N": "1" * _ITF_NARROW,
        "W": "1" * _ITF_WIDE,
        "n": "0" * _ITF_NARROW,
        "w": "0" * _ITF_WIDE,
    }
    return "".join(widths[e] for e in elements)
