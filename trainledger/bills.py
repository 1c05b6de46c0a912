"""The one rule for a provider's figures: a decimal amount in dollars, as the provider gave it, to
integer micro-dollars, rounded half-even (banker's rounding, as invoices do).

Only ASCII decimal text is money: digits 0-9 with an optional sign, point and exponent of at most
three digits ("0.0734", "-12", "1E-7", "1.5e-05"), after an optional "$". A comma is read only as a
thousands separator between whole groups of three digits ("1,250.00", "$12,345"): "1,5", "1,00" or
",100" is refused, never read with its comma deleted (which would make "1,5" fifteen dollars).
Python's Decimal also reads other scripts' digits ("\u0661\u0662" is 12), underscores ("1_0") and
"Infinity", and raises Overflow or InvalidOperation (ArithmeticErrors, not ValueErrors) on an
exponent beyond its context: each of these is refused here as "not an amount" before any
arithmetic, and the arithmetic runs in a context of its own, exact at any length the text allows.

Both sides of the wire import it: the bill pullers (clients.billing) turn each line's figure into
micro-dollars with it, and the ledger (ledger.domain.bills) checks that a line's micro-dollars are
what its text says. Standard library only.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_EVEN, Context, Decimal, DivisionByZero, InvalidOperation, Overflow, localcontext

from trainledger.pricing import USD_MICRO_MAX
from trainledger.text import usd_text  # Dollars for people; imported from here before.

__all__ = ["AMOUNT_TEXT_MAX", "usd_micro_from_text", "usd_text"]

#: The longest provider figure kept as text.
AMOUNT_TEXT_MAX = 64
_MICRO = Decimal(1_000_000)
# Digits in thousands groups: "1,250" or "12,345,678"; the commas are then dropped.
_GROUPED_TEXT = re.compile(r"[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]{1,3})?")
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
# Text that needs no rounding and is within range whatever its digits: read without Decimal.
_PLAIN_TEXT = re.compile(r"(-?)([0-9]{1,7})(?:\.([0-9]{0,6}))?")
# Dollars past this power of ten are past USD_MICRO_MAX whatever their digits.
_DOLLARS_EXPONENT_MAX = 7
# The text is at most AMOUNT_TEXT_MAX digits and its exponent at most 999: with this precision
# the product below is exact, and no exponent reaches the context's limits.
_CONTEXT = Context(
    prec=2 * AMOUNT_TEXT_MAX, Emax=9_999, Emin=-9_999, traps=[InvalidOperation, Overflow, DivisionByZero]
)


def usd_micro_from_text(text: str) -> int:
    """`"0.0734"` -> 73_400; `"0.0000005"` -> 0 and `"0.0000015"` -> 2 (half to even).
    Raises ValueError for anything that is not ASCII decimal text (see above) within
    +-USD_MICRO_MAX."""
    plain = _PLAIN_TEXT.fullmatch(text)
    if plain is not None:
        sign, dollars, fraction = plain.groups()
        micro = int(dollars) * 1_000_000 + int((fraction or "").ljust(6, "0"))
        return -micro if sign else micro
    cleaned = text.strip().removeprefix("$")
    if "," in cleaned and len(cleaned) <= AMOUNT_TEXT_MAX and _GROUPED_TEXT.fullmatch(cleaned):
        cleaned = cleaned.replace(",", "")
    if not cleaned or len(cleaned) > AMOUNT_TEXT_MAX or not _DECIMAL_TEXT.fullmatch(cleaned):
        raise ValueError(f"not an amount: {text[: 2 * AMOUNT_TEXT_MAX]!r}")
    value = Decimal(cleaned)
    if value and value.adjusted() > _DOLLARS_EXPONENT_MAX:
        raise ValueError(f"amount out of range: {text!r}")
    try:
        with localcontext(_CONTEXT):
            micro = int((value * _MICRO).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    except ArithmeticError:  # Not reachable with the checks above; a refusal all the same.
        raise ValueError(f"not an amount: {text!r}") from None
    if abs(micro) > USD_MICRO_MAX:
        raise ValueError(f"amount out of range: {text!r}")
    return micro
