"""Numbers and money as the ticket and the proofs write them: French typography.

One owner for a fact every French text repeats: thousands grouped by a space, a decimal comma,
the euro sign after the amount (``1 500 €``, ``0,97 €``), a space before ``%``.  Code, logs
and error messages stay in English (``1,500 EUR``); only what is printed for players and the
lottery goes through here; so does the English amount of code, logs and messages
(:func:`eur`: ``20.00 EUR``), one format for every message that names money.
"""

from __future__ import annotations

THOUSANDS = " "
DECIMAL = ","


def number(value: float, decimals: int = 0) -> str:
    """``1500000`` -> ``1 500 000``; ``3.4299, 2`` -> ``3,43``."""
    text = f"{value:,.{decimals}f}"
    return text.replace(",", THOUSANDS).replace(".", DECIMAL)


def euros(amount: int) -> str:
    """A whole amount in EUR: ``15000`` -> ``15 000 €``."""
    return f"{number(amount)} €"


def cents(value: int) -> str:
    """An amount in cents: ``97`` -> ``0,97 €``; a whole amount has no decimals (``200`` ->
    ``2 €``), as a price is written on a ticket."""
    whole, rest = divmod(value, 100)
    return euros(whole) if rest == 0 else f"{number(value / 100, 2)} €"


def eur(value_cents: int) -> str:
    """An amount in cents as code, logs and messages write it, in English: ``2000`` ->
    ``20.00 EUR``, ``97`` -> ``0.97 EUR`` (never for a player's or the lottery's text)."""
    sign, whole = ("-" if value_cents < 0 else ""), abs(value_cents)
    return f"{sign}{whole // 100}.{whole % 100:02d} EUR"


def percent(ratio: float, decimals: int = 2) -> str:
    """A ratio as a percentage: ``0.71`` -> ``71,00 %``."""
    return f"{number(ratio * 100, decimals)} %"
