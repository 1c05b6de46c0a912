"""The dashboard's query parameters: each is validated and bounded before anything is read, and a
bad one is 400 INVALID_PARAMETER naming it (services.web.access.invalid)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from starlette.requests import HTTPConnection

from ledger.domain.errors import LedgerError
from ledger.domain.limits import ID_LENGTH_MAX, check_text
from services.web.access import invalid

__all__ = [
    "integer",
    "required_integer",
    "text",
    "status",
    "page_token",
    "metric_names",
    "step_range",
    "STATUSES",
    "STEP_MAX",
    "WIDTH_MIN",
    "WIDTH_MAX",
]

T = TypeVar("T")

WIDTH_DEFAULT, WIDTH_MIN, WIDTH_MAX = 800, 16, 4_000
METRICS_MAX = 64
STEP_MAX = 2**63 - 1
STATUSES = ("running", "lost", "done", "failed", "stopped")


def integer(
    request: HTTPConnection, name: str, default: int | None, *, minimum: int = 0, maximum: int = STEP_MAX
) -> int | None:
    """An integer query parameter within [minimum, maximum]; `default` when absent or empty."""
    text = request.query_params.get(name, "")
    if text == "":
        return default
    if not re.fullmatch(r"-?[0-9]{1,19}", text.strip()):
        raise invalid(name, f"{name} must be an integer, not {text[:40]!r}")
    value = int(text)
    if not minimum <= value <= maximum:
        raise invalid(name, f"{name} must be from {minimum} to {maximum}, not {value}")
    return value


def required_integer(request: HTTPConnection, name: str, default: int, *, minimum: int = 0, maximum: int) -> int:
    value = integer(request, name, default, minimum=minimum, maximum=maximum)
    assert value is not None
    return value


def text(request: HTTPConnection, name: str, *, limit: int = ID_LENGTH_MAX) -> str:
    """A free-text query parameter (no control or bidi characters, at most `limit` characters)."""
    value = request.query_params.get(name, "")
    try:
        return check_text(value, name, limit=limit)
    except LedgerError as error:
        raise invalid(name, error.message) from None


def status(request: HTTPConnection) -> str:
    value = request.query_params.get("status", "")
    if value not in ("", *STATUSES):
        raise invalid("status", f"status must be one of {', '.join(STATUSES)} (or empty), not {value[:40]!r}")
    return value


def page_token(request: HTTPConnection, decode: Callable[[str], T]) -> T:
    value = request.query_params.get("page", "")
    try:
        return decode(value)
    except LedgerError:
        raise invalid("page", "page is not a token this server gave") from None


def metric_names(request: HTTPConnection) -> list[str]:
    names = request.query_params.getlist("metric")
    if len(names) > METRICS_MAX:
        raise invalid("metric", f"at most {METRICS_MAX} metrics at once")
    for name in names:
        if not name or len(name) > ID_LENGTH_MAX:
            raise invalid("metric", "a metric name is 1 to 128 characters")
    return list(dict.fromkeys(names))


def step_range(request: HTTPConnection) -> tuple[int | None, int | None, int]:
    """from, to and width of a chart request (from <= to, WIDTH_MIN <= width <= WIDTH_MAX)."""
    from_step = integer(request, "from", None)
    to_step = integer(request, "to", None)
    width = required_integer(request, "width", WIDTH_DEFAULT, minimum=WIDTH_MIN, maximum=WIDTH_MAX)
    if from_step is not None and to_step is not None and from_step > to_step:
        raise invalid("from", f"from ({from_step}) is after to ({to_step})")
    return from_step, to_step, width
