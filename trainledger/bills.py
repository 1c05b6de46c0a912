"""The one rule for a provider's figures: a decimal amount in dollars, as the provider gave it, to
integer micro-dollars, rounded half-even (banker's rounding, as invoices do).

Both sides of the wire import it: the bill pullers (clients.billing) turn each line's figure into
micro-dollars with it, and the ledger (ledger.domain.bills) checks that a line's micro-dollars are
what its text says. Standard library only.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation

from trainledger.pricing import USD_MICRO_MAX

__all__ = ["AMOUNT_TEXT_MAX", "usd_micro_from_text", "usd_text"]

#: The longest provider figure kept as text.
AMOUNT_TEXT_MAX = 64
_MICRO = Decimal(1_000_000)


def usd_micro_from_text(text: str) -> int:
    """`"0.0734"` -> 73_400; `"0.0000005"` -> 0 and `"0.0000015"` -> 2 (half to even).
    Raises ValueError for anything that is not a finite decimal within +-USD_MICRO_MAX."""
    cleaned = text.strip().replace(",", "").removeprefix("$")
    if not cleaned or len(cleaned) > AMOUNT_TEXT_MAX:
        raise ValueError(f"not an amount: {text!r}")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"not a finite amount: {text!r}")
    micro = int((value * _MICRO).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    if abs(micro) > USD_MICRO_MAX:
        raise ValueError(f"amount out of range: {text!r}")
    return micro


def usd_text(usd_micro: int) -> str:
    """Micro-dollars as dollars for people: 73_400 -> "$0.073400", -1_500_000 -> "-$1.500000"."""
    sign = "-" if usd_micro < 0 else ""
    whole, micro = divmod(abs(usd_micro), 1_000_000)
    return f"{sign}${whole:,}.{micro:06d}"
