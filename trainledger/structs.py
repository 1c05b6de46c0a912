"""How a number in a google.protobuf.Struct reads back, the same on both sides of the wire.

A Struct holds every number as a double. A whole number within INTEGRAL_MAX comes back as an
int (a step of 30 reads 30, not 30.0); every integer up to 2**53 is exact in a double, and the
ledger's own bound on steps (STEP_MAX) is that same 2**53. Beyond it, or with a fraction, the
number stays a float. The server's codec and the client's both decode with `number`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["INTEGRAL_MAX", "number", "integral"]

INTEGRAL_MAX = 2**53


def number(value: float) -> int | float:
    """A Struct number as the value it was: an int when whole and within INTEGRAL_MAX."""
    return int(value) if value.is_integer() and abs(value) <= INTEGRAL_MAX else value


def integral(value: Any) -> Any:
    """`value` (a JSON-like tree decoded from a Struct) with its whole numbers as ints."""
    if isinstance(value, float):
        return number(value)
    if isinstance(value, dict):
        return {key: integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [integral(item) for item in value]
    return value
