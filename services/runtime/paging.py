"""Pages: page sizes within the ledger's limit, and opaque page tokens."""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any

from ledger.domain.errors import Invalid
from ledger.domain.limits import PAGE_SIZE_MAX
from ledger.domain.reasons import Reason

# Positions are SQLite and PostgreSQL integers (64-bit signed); tokens this server gives are short.
POSITION_MAX = 2**63 - 1
STEP_MAX = 2**63 - 1
ATTEMPT_MAX = 2**31 - 1
TOKEN_LENGTH_MAX = 1_024

__all__ = [
    "page_size",
    "encode_token",
    "decode_token",
    "runs_token",
    "runs_after",
    "search_token",
    "search_offset",
    "position_token",
    "position_after",
    "versions_token",
    "versions_after",
    "name_token",
    "name_after",
    "checkpoint_token",
    "checkpoint_after",
    "protected_token",
    "protected_after",
]


def page_size(value: int, default: int) -> int:
    """A request's page size: 0 means `default`; above PAGE_SIZE_MAX is refused."""
    if value < 0:
        raise Invalid("page_size must not be negative", reason=Reason.OUT_OF_RANGE, field="page_size")
    if value > PAGE_SIZE_MAX:
        raise Invalid(
            f"page_size is above {PAGE_SIZE_MAX}",
            reason=Reason.PAGE_SIZE_TOO_LARGE,
            field="page_size",
            limit=PAGE_SIZE_MAX,
        )
    return value or default


def encode_token(value: Any) -> str:
    """An opaque page token for a JSON value."""
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()


def _refuse() -> Invalid:
    return Invalid("page_token is not one this server gave", reason=Reason.INVALID_PAGE_TOKEN, field="page_token")


def decode_token(token: str) -> Any:
    if len(token) > TOKEN_LENGTH_MAX:
        raise _refuse()
    try:
        return json.loads(base64.urlsafe_b64decode(token.encode()))
    except (binascii.Error, ValueError, UnicodeError, RecursionError):
        raise _refuse() from None


def runs_token(after: tuple[float, str] | None) -> str:
    """The ListRuns token of a page's `after` (RunPage.after: runs are ordered by (opened_at,
    run_id), newest first); empty when no run is left."""
    return "" if after is None else encode_token(list(after))


def runs_after(token: str) -> tuple[float, str] | None:
    if not token:
        return None
    value = decode_token(token)
    if not (
        isinstance(value, list) and len(value) == 2 and type(value[0]) in (int, float) and isinstance(value[1], str)
    ):
        raise _refuse()
    try:
        opened = float(value[0])
    except OverflowError:  # An integer beyond any float.
        raise _refuse() from None
    if not math.isfinite(opened):
        raise _refuse()
    return opened, value[1]


def search_token(offset: int | None) -> str:
    """The token of a ListRuns search's next page: the offset it starts from (a search orders by
    any field, so no cursor continues it); empty when no run is left."""
    return "" if offset is None else encode_token({"offset": offset})


def search_offset(token: str) -> int:
    """The offset a ListRuns search page starts from (0 for the first): refused for a token that
    is not a search's (a plain listing's among them)."""
    if not token:
        return 0
    value = decode_token(token)
    if not isinstance(value, dict) or list(value) != ["offset"] or type(value["offset"]) is not int:
        raise _refuse()
    if not 0 <= value["offset"] <= POSITION_MAX:
        raise _refuse()
    return int(value["offset"])


def position_token(position: int | None) -> str:
    """The token of a page that the next one follows from `position` (ReservationPage.after_position);
    empty when none follows."""
    return "" if position is None else encode_token(position)


def position_after(token: str) -> int:
    if not token:
        return 0
    value = decode_token(token)
    if type(value) is not int or not 0 <= value <= POSITION_MAX:
        raise _refuse()
    return value


def versions_token(version: int, position: int) -> str:
    """The ListVersions token after a page: its last version and its last promotion's position."""
    return encode_token([version, position])


def versions_after(token: str) -> tuple[int, int]:
    """(version, promotion position) a ListVersions page follows; (0, 0) for the first page."""
    if not token:
        return 0, 0
    value = decode_token(token)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and all(type(item) is int for item in value)
        and 0 <= value[0] < 2**31
        and 0 <= value[1] <= POSITION_MAX
    ):
        raise _refuse()
    return value[0], value[1]


def name_token(name: str) -> str:
    """The token after a page of things listed by name (ListFamilies, GetMetrics): its last name."""
    return encode_token([name])


def name_after(token: str) -> str:
    """The name a page of things listed by name follows; "" for the first page."""
    if not token:
        return ""
    value = decode_token(token)
    if not (isinstance(value, list) and len(value) == 1 and isinstance(value[0], str)):
        raise _refuse()
    return value[0]


def checkpoint_token(point: tuple[int, int] | None) -> str:
    """The token after a page of checkpoints in (step, attempt) order (ListCheckpoints, PlanPrune):
    the (step, attempt) of its last checkpoint; empty when no page follows."""
    return "" if point is None else encode_token(list(point))


def checkpoint_after(token: str) -> tuple[int, int] | None:
    """The (step, attempt) a page of checkpoints follows; None for the first page."""
    if not token:
        return None
    value = decode_token(token)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and all(type(item) is int for item in value)
        and 0 <= value[0] <= STEP_MAX
        and 0 <= value[1] <= ATTEMPT_MAX
    ):
        raise _refuse()
    return value[0], value[1]


def protected_token(after: tuple[str, str, int] | None) -> str:
    """The ListProtectedStates token after a page: ("runs", last run id, 0) or ("versions",
    last family, last version); empty when no page follows."""
    return "" if after is None else encode_token(list(after))


def protected_after(token: str) -> tuple[str, str, int] | None:
    """Where a page of protected states starts; None for the first page."""
    if not token:
        return None
    value = decode_token(token)
    if not (
        isinstance(value, list)
        and len(value) == 3
        and value[0] in ("runs", "versions")
        and isinstance(value[1], str)
        and type(value[2]) is int
        and 0 <= value[2] < 2**31
    ):
        raise _refuse()
    return value[0], value[1], value[2]
